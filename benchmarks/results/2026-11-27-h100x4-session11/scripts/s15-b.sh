#!/usr/bin/env bash
# call 2 (x4): GPU 0 transposed-conv store/grid probe, then the verdict latency (large-case plan, pinned
# host copies); GPU 1 forward-conv store probe, then the ROWS port benched on level 2; GPUs 2-3
# KernelBench's eval finishing level 2 (resumed) with the compile / TF32-off controls.
set -u
D=${1:-530}
source .gpu/common.sh
S=/tmp/s15b; mkdir -p $S $OUT
PROBE=benchmarks/probes/2026-11-26-conv/run.py
VT="port:;est:epilogue_t=1;grouped:grouped_programs=1;est-grouped:epilogue_t=1,grouped_programs=1;est-grouped-256x64-w8:epilogue_t=1,grouped_programs=1,BLOCK_M=256,BLOCK_N=64,BLOCK_K=32,num_warps=8,num_stages=3;est-grouped-64x64-s4:epilogue_t=1,grouped_programs=1,BLOCK_M=64,BLOCK_N=64,BLOCK_K=32,num_warps=4,num_stages=4;est-grouped-128x128-w8:epilogue_t=1,grouped_programs=1,BLOCK_M=128,BLOCK_N=128,BLOCK_K=32,num_warps=8,num_stages=3"
(CUDA_VISIBLE_DEVICES=0 timeout -k 5 230 python3 $PROBE --tasks-dir .kb/l2 --tasks 44_ 93_ 5_ 11_ 3_ 34_ 38_ --no-compile \
   --out $S/tconv.json --time-limit 215 --variants "$VT" > $S/tconv.log 2>&1
 CUDA_VISIBLE_DEVICES=0 timeout -k 5 60 python3 benchmarks/probes/2026-11-27-transfer/formats.py 2 > $S/formats-h100.txt 2>&1
 bash benchmarks/bench_queue.sh $S $(left 25) "big|suite=.kb/l1 tasks=[27_SELU_,36_RMSNorm_] max_steps=1 time_limit_s=200 gpus=[0]" > $S/queue-0.log 2>&1) &
(CUDA_VISIBLE_DEVICES=1 timeout -k 5 170 python3 $PROBE --tasks-dir .kb/l2 --tasks 7_ 8_ 90_ 67_ 21_ 4_ 54_ --no-compile \
   --out $S/convst.json --time-limit 155 --variants "port:;est:epilogue_t=1" > $S/convst.log 2>&1
 bash benchmarks/bench_queue.sh $S $(left 25) "l2rows|suite=.kb/l2 tasks=[34_ConvTranspose3d_LayerNorm_GELU_Scaling,3_ConvTranspose3d_Sum_LayerNorm_AvgPool_GELU,44_ConvTranspose2d_Multiply_GlobalAvgPool_GlobalAvgPool_Mean,42_ConvTranspose2d_GlobalAvgPool_BiasAdd_LogSumExp_Sum_Multiply,80_Gemm_Max_Subtract_GELU,18_Matmul_Sum_Max_AvgPool_LogSumExp_LogSumExp,51_Gemm_Subtract_GlobalAvgPool_LogSumExp_GELU_ResidualAdd] max_steps=4 time_limit_s=150 gpus=[1]" > $S/queue-1.log 2>&1) &
export PYTHONPATH=.kb/src:$PYTHONPATH
KB="python3 benchmarks/kb_eval.py --stub-llm-clients --control compile eager-ieee"
for i in 0 1; do
  CUDA_VISIBLE_DEVICES=$((i+2)) timeout -k 10 $(left 25) $KB --time-limit $(left 60) --tasks-dir .kb/l2 --bench .kb/export-l2 \
    --resume .kb/kb-eval-l2-a.json --shard $i/2 --out $S/kb-l2-$i.json > $S/kb-l2-$i.log 2>&1 &
done
while [ $(jobs -r | wc -l) -gt 0 ] && [ $(left 15) -gt 0 ]; do sleep 5; done
sleep 5
python3 benchmarks/kb_eval.py --merge .kb/kb-eval-l2-a.json $S/kb-l2-0.json $S/kb-l2-1.json --out $S/kb-eval-l2-b.json > $S/kb-merge.log 2>&1
grep -E "^(port|est|grouped)" $S/tconv.log $S/convst.log 2>/dev/null
tail -n 22 $S/kb-merge.log
grep -h "^\[ *[0-9]*/" $S/l2rows.log $S/big.log 2>/dev/null | tail -12
tar -czf $OUT/s15b.tgz --exclude='checkpoints.sqlite*' --exclude='*.png' -C /tmp s15b
ls -la $OUT
