#!/usr/bin/env bash
# tenth session, call 1 (x4): GPU 0 conv-loop GPU tests then the fma_unroll / runs probe; GPU 1 kernel-split
# probe; GPU 2 BN tasks benched; GPU 3 large level-1 verdict latency, pools 45/46, more BN tasks.
set -u
D=${1:-540}
source .gpu/common.sh
S=/tmp/s14; mkdir -p $S $OUT
nvidia-smi --query-gpu=index,name,memory.total --format=csv > $S/gpus.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $S/gpus.txt
PROBE=benchmarks/probes/2026-11-26-conv/run.py
SPLIT=benchmarks/probes/2026-11-27-kernel-split/run.py
V_RUNS="port:;unroll:fma_unroll=1;runs16:k_loop=runs,precision=tf32,tf32_round=1,BLOCK_M=128,BLOCK_N=64,BLOCK_K=16,num_warps=4,num_stages=3;runs32:k_loop=runs,precision=tf32,tf32_round=1,BLOCK_M=128,BLOCK_N=64,BLOCK_K=32,num_warps=8,num_stages=3"
(export CUDA_VISIBLE_DEVICES=0
 timeout -k 5 150 python3 -m pytest -m gpu tests/coders/test_gpu_conv_loops.py -q -p no:cacheprovider > $S/gputest.log 2>&1
 timeout -k 5 $(left 40) python3 $PROBE --tasks-dir .kb/l2 --tasks 67_ 73_ 87_ 57_ 7_ 90_ 27_ 48_ 21_ --no-compile \
   --variants "$V_RUNS" --out $S/runs.json --time-limit $(left 60) > $S/runs.log 2>&1) &
(export CUDA_VISIBLE_DEVICES=1
 timeout -k 5 280 python3 $SPLIT --tasks-dir .kb/l2 --tasks 34_ 67_ 7_ 73_ 3_ 8_ 23_ 32_ 44_ 52_ 60_ 72_ 90_ 21_ 87_ \
   --no-compile --time-limit 240 --out $S/split-nocompile.json > $S/split-nocompile.log 2>&1
 timeout -k 5 $(left 40) python3 $SPLIT --tasks-dir .kb/l2 --tasks 34_ 67_ 73_ 3_ 32_ 7_ 44_ \
   --time-limit $(left 90) --out $S/split-a.json > $S/split-a.log 2>&1) &
BN1="52_Conv2d_Activation_BatchNorm,73_Conv2d_BatchNorm_Scaling,77_ConvTranspose3d_Scale_BatchNorm_GlobalAvgPool,15_ConvTranspose3d_BatchNorm_Subtract"
BN2="72_ConvTranspose3d_BatchNorm_AvgPool_AvgPool,11_ConvTranspose2d_BatchNorm_Tanh_MaxPool_GroupNorm"
bash benchmarks/bench_queue.sh $S $(left 35) "bn1|suite=.kb/l2 tasks=[$BN1] max_steps=4 time_limit_s=200 gpus=[2]" > $S/queue-2.log 2>&1 &
bash benchmarks/bench_queue.sh $S $(left 35) \
  "big|suite=.kb/l1 tasks=[27_SELU_,36_RMSNorm_] max_steps=1 time_limit_s=150 gpus=[3]" \
  "pool|suite=.kb/l1 tasks=[45_Average_Pooling_2D,46_Average_Pooling_3D] max_steps=1 time_limit_s=120 gpus=[3]" \
  "bn2|suite=.kb/l2 tasks=[$BN2] max_steps=4 time_limit_s=200 gpus=[3]" > $S/queue-3.log 2>&1 &
while [ $(jobs -r | wc -l) -gt 0 ] && [ $(left 20) -gt 0 ]; do sleep 5; done
sleep 8
tail -n 15 $S/gputest.log; tail -n 40 $S/runs.log; tail -n 30 $S/split-nocompile.log $S/split-a.log
cat $S/queue-2.log $S/queue-3.log
grep -h "^\[[0-9]*/" $S/bn1.log $S/big.log $S/pool.log $S/bn2.log | tail -20
tar -czf $OUT/s14a.tgz --exclude='checkpoints.sqlite*' -C /tmp s14
ls -la $OUT
