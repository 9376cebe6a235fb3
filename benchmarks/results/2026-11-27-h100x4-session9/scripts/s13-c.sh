#!/usr/bin/env bash
# call 3: GPU 0 probes the pool rows form (benchmarks/probes/2026-11-27-pool) then benches level-1 pools;
# GPUs 1-3 bench level 2's ten 2-D convs 8 -> 64 with the FMA port. Usage: s13-c.sh DEADLINE_S
set -u
D=${1:-500}
source .gpu/common.sh
S=/tmp/s13c; mkdir -p $S $OUT
(CUDA_VISIBLE_DEVICES=0 timeout -k 5 240 python3 benchmarks/probes/2026-11-27-pool/run.py --tasks-dir .kb/l1 \
  --tasks 41_ 42_ 43_ 44_ 45_ 46_ --out $S/pool.json --time-limit 190 > $S/pool.log 2>&1;
 bash benchmarks/bench_queue.sh $S $(left 35) \
  "l1pool|suite=.kb/l1 tasks=[42_Max_Pooling_2D,46_Average_Pooling_3D,43_Max_Pooling_3D,41_Max_Pooling_1D] max_steps=1 time_limit_s=200 gpus=[0]" > $S/queue-0.log 2>&1) &
bash benchmarks/bench_queue.sh $S $(left 35) "l2g1|suite=.kb/l2 tasks=[87_Conv2d_Subtract_Subtract_Mish,67_Conv2d_GELU_GlobalAvgPool,73_Conv2d_BatchNorm_Scaling,92_Conv2d_GroupNorm_Tanh_HardSwish_ResidualAdd_LogSumExp] max_steps=4 time_limit_s=200 gpus=[1]" > $S/queue-1.log 2>&1 &
bash benchmarks/bench_queue.sh $S $(left 35) "l2g2|suite=.kb/l2 tasks=[82_Conv2d_Tanh_Scaling_BiasAdd_Max,57_Conv2d_ReLU_HardSwish,85_Conv2d_GroupNorm_Scale_MaxPool_Clamp] max_steps=4 time_limit_s=200 gpus=[2]" > $S/queue-2.log 2>&1 &
bash benchmarks/bench_queue.sh $S $(left 35) "l2g3|suite=.kb/l2 tasks=[65_Conv2d_AvgPool_Sigmoid_Sum,69_Conv2d_HardSwish_ReLU,71_Conv2d_Divide_LeakyReLU] max_steps=4 time_limit_s=200 gpus=[3]" > $S/queue-3.log 2>&1 &
while [ $(jobs -r | wc -l) -gt 0 ] && [ $(left 20) -gt 0 ]; do sleep 5; done
sleep 8
tail -n 30 $S/pool.log
grep -h "^\[[0-9]*/" $S/l1pool.log $S/l2g1.log $S/l2g2.log $S/l2g3.log
tar -czf $OUT/s13c.tgz --exclude='checkpoints.sqlite*' -C /tmp s13c
ls -la $OUT
