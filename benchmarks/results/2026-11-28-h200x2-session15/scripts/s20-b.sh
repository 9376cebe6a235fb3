#!/usr/bin/env bash
# fifteenth session, call B (x2). GPU 0: verifier 2.13's GPU smoke first (2.12's scrub, the S23 corpus entry,
# whose first run was refused for the wrong reason; 2.9-2.11's). Then KernelBench's own eval (issue 25
# Show 6), correctness only (--no-timing: 5 trials at 1e-4), over the latest level-1/2 programs
# (.kb/export-l{1,2}-s20) it has never judged byte for byte: 59 of level 1, 77 of level 2. Two level-1 and
# two level-2 shards on each GPU (KernelBench makes its inputs on the CPU, so shards share a GPU).
set -u
D=${1:-540}
source .gpu/common.sh
S=/tmp/s20b; mkdir -p $S $OUT
export OMP_NUM_THREADS=4
L1T="33_ 41_ 42_ 43_ 44_ 45_ 46_ 49_ 4_ 50_ 51_ 52_ 53_ 54_ 57_ 58_ 59_ 5_ 60_ 61_ 64_ 65_ 66_ 68_ 69_ 6_ 70_ 71_ 72_ 73_ 74_ 75_ 76_ 77_ 78_ 79_ 7_ 80_ 81_ 82_ 83_ 84_ 85_ 86_ 87_ 88_ 89_ 8_ 90_ 91_ 92_ 93_ 94_ 95_ 96_ 97_ 98_ 99_ 9_"
L2T="100_ 10_ 11_ 12_ 13_ 14_ 15_ 16_ 18_ 19_ 20_ 22_ 26_ 28_ 29_ 2_ 30_ 33_ 34_ 36_ 37_ 38_ 39_ 3_ 40_ 41_ 42_ 44_ 45_ 49_ 50_ 51_ 52_ 53_ 56_ 58_ 59_ 5_ 60_ 61_ 62_ 63_ 64_ 65_ 66_ 67_ 68_ 69_ 70_ 71_ 72_ 73_ 74_ 75_ 76_ 77_ 78_ 7_ 80_ 81_ 84_ 85_ 86_ 87_ 88_ 89_ 8_ 90_ 91_ 92_ 93_ 94_ 95_ 96_ 97_ 99_ 9_"
nvidia-smi --query-gpu=name,memory.total --format=csv > $S/gpus.txt
kb() {  # kb GPU LEVEL SHARD TASKS
  CUDA_VISIBLE_DEVICES=$1 PYTHONPATH=.kb/src:$PYTHONPATH timeout -k 10 $(left 15) python3 benchmarks/kb_eval.py \
    --stub-llm-clients --no-timing --control compile eager-ieee --time-limit $(left 45) --tasks-dir .kb/$2 \
    --bench .kb/export-$2-s20 --tasks $4 --shard $3/4 --out $S/kb-$2-$3.json > $S/kb-$2-$3.log 2>&1
}
(CUDA_VISIBLE_DEVICES=0 timeout -k 5 150 python3 -m pytest -m gpu tests/verify/test_scrub.py tests/verify/test_timing.py \
   tests/verify/test_output_seals.py tests/verify/test_gpu.py -q -p no:cacheprovider -rf \
   -k "scrub or loaded or held_check or (corpus and (s23 or s22 or s21 or s11))" > $S/gpu-smoke.log 2>&1
 kb 0 l1 0 "$L1T" & kb 0 l1 1 "$L1T" & kb 0 l2 0 "$L2T" & kb 0 l2 1 "$L2T" & wait) &
kb 1 l1 2 "$L1T" & kb 1 l1 3 "$L1T" & kb 1 l2 2 "$L2T" & kb 1 l2 3 "$L2T" &
(while true; do nvidia-smi --query-gpu=index,memory.used,utilization.gpu --format=csv,noheader >> $S/smi.log; sleep 15; done) &
SMI=$!
while [ $(jobs -r | wc -l) -gt 1 ] && [ $(left 12) -gt 0 ]; do sleep 5; done
kill $SMI 2>/dev/null; sleep 3
cat $S/gpus.txt; tail -n 4 $S/gpu-smoke.log
grep -h " ours " $S/kb-*.log | cut -c1-150
sort -t, -k2 -n $S/smi.log | tail -2
tar -czf $OUT/s20b.tgz -C /tmp s20b
ls -la $OUT
