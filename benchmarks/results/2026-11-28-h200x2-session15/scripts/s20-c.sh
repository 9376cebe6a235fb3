#!/usr/bin/env bash
# fifteenth session, call C (x4, or x2). GPU 0: the tree recorder in one-GPU mode (issue 26 Show 1: programs a
# minute on ONE GPU; verifier.gpu_lock, the compile pass outside the lock), depth 2 of the 41 built-ins, from
# an empty tree. GPU 1: the 2026-11-30 pool probe (43: the separated taps; 46: the promoted port against the
# old), then `mtmc bench` of 45 and 46 at today's ports, then level-2 77 (cut in call A). GPU 2: KernelBench's
# eval on the three level-1 programs call B did not reach (correctness), then its timing on a sample of
# level 1 (every 7th of those it accepted in call B); GPU 3: its timing on every 8th level-2 one.
set -u
D=${1:-480}
source .gpu/common.sh
S=/tmp/s20c; mkdir -p $S $OUT
NG=$(nvidia-smi -L | wc -l)
nvidia-smi --query-gpu=name,memory.total --format=csv > $S/gpus.txt
kbrun() {  # GPU LEVEL OUTNAME EXTRA... (tasks in EXTRA)
  local g=$1 lvl=$2 name=$3; shift 3
  CUDA_VISIBLE_DEVICES=$g PYTHONPATH=.kb/src:$PYTHONPATH timeout -k 10 $(left 15) python3 benchmarks/kb_eval.py \
    --stub-llm-clients --control compile eager-ieee --time-limit $(left 45) --tasks-dir .kb/$lvl \
    --bench .kb/export-$lvl-s20 --out $S/$name.json "$@" > $S/$name.log 2>&1
}
(CUDA_VISIBLE_DEVICES=0 timeout -k 10 $(left 12) bash benchmarks/tree_one_gpu.sh $S/tree1 $(left 110)) &
(CUDA_VISIBLE_DEVICES=1 timeout -k 5 150 python3 benchmarks/probes/2026-11-30-pool/run.py --tasks-dir .kb/l1 \
   --tasks 43_ 46_ --out $S/pool30.json --time-limit 150 --no-compile > $S/pool30.log 2>&1
 bash benchmarks/bench_queue.sh $S $(left 20) "l1pool|suite=.kb/l1 tasks=[46_Average_Pooling_3D,45_Average_Pooling_2D] max_steps=2 time_limit_s=150 gpus=[1]" \
   "l2bn77|suite=.kb/l2 tasks=[77_ConvTranspose3d_Scale_BatchNorm_GlobalAvgPool] max_steps=4 time_limit_s=150 gpus=[1]" > $S/queue-1.log 2>&1) &
if [ $NG -ge 4 ]; then
  (kbrun 2 l1 kb-l1-rest --no-timing --tasks 90_ 94_ 98_
   kbrun 2 l1 kb-l1-timed --tasks 33_ 49_ 57_ 65_ 72_ 79_ 85_ 96_) &
  kbrun 3 l2 kb-l2-timed --tasks 100_ 26_ 38_ 50_ 62_ 71_ 80_ 8_ 97_ &
else
  (sleep 200; kbrun 1 l1 kb-l1-rest --no-timing --tasks 90_ 94_ 98_) &
fi
while [ $(jobs -r | wc -l) -gt 0 ] && [ $(left 10) -gt 0 ]; do sleep 5; done
sleep 2
cat $S/gpus.txt
python3 benchmarks/tree_rate.py $S/tree1/tree/builtin.jsonl $S/tree1/progress.txt > $S/tree-rate.txt 2>&1; cat $S/tree-rate.txt | head -40
grep -E "^best|floor" $S/pool30.log | tail -14
grep -h "^\[ *[0-9]*/" $S/*.log 2>/dev/null | sort -u
grep -h " ours " $S/kb-*.log | cut -c1-150
tar -czf $OUT/s20c.tgz --exclude='checkpoints.sqlite*' --exclude='*.png' -C /tmp s20c
ls -la $OUT
