#!/usr/bin/env bash
# fifteenth session, call A (x2). GPU 0: verifier 2.12's GPU tests first (the scrub of free allocator memory:
# its fill test, the timing order, corpus s23; with 2.9-2.11's smoke), then the level-1 ports merged after the
# fourteenth session's calls: pools 41-44 with the shift, 98_KLDivLoss (fuse prologue), 33_BatchNorm (merged
# statistics). GPU 1: the 2026-11-29 pool probe (43 stack, 45/46 shift), then level 2's global-mean
# epilogues (67, 44, 42) and the training-mode BatchNorm2d tasks at the merged-statistics port.
set -u
D=${1:-540}
source .gpu/common.sh
S=/tmp/s20; mkdir -p $S $OUT
L1NEW=41_Max_Pooling_1D,44_Average_Pooling_1D,42_Max_Pooling_2D,43_Max_Pooling_3D,98_KLDivLoss,33_BatchNorm
L2BN=67_Conv2d_GELU_GlobalAvgPool,44_ConvTranspose2d_Multiply_GlobalAvgPool_GlobalAvgPool_Mean,42_ConvTranspose2d_GlobalAvgPool_BiasAdd_LogSumExp_Sum_Multiply,11_ConvTranspose2d_BatchNorm_Tanh_MaxPool_GroupNorm,52_Conv2d_Activation_BatchNorm,15_ConvTranspose3d_BatchNorm_Subtract,72_ConvTranspose3d_BatchNorm_AvgPool_AvgPool,73_Conv2d_BatchNorm_Scaling,77_ConvTranspose3d_Scale_BatchNorm_GlobalAvgPool
nvidia-smi --query-gpu=name,memory.total --format=csv > $S/gpus.txt
(CUDA_VISIBLE_DEVICES=0 timeout -k 5 150 python3 -m pytest -m gpu tests/verify/test_scrub.py tests/verify/test_timing.py \
   tests/verify/test_output_seals.py tests/verify/test_gpu.py -q -p no:cacheprovider -rf \
   -k "scrub or loaded or held_check or (corpus and (s23 or s22 or s21 or s11))" > $S/gpu-smoke.log 2>&1
 bash benchmarks/bench_queue.sh $S $(left 20) "l1new|suite=.kb/l1 tasks=[$L1NEW] max_steps=2 time_limit_s=150 gpus=[0]" > $S/queue-0.log 2>&1) &
(CUDA_VISIBLE_DEVICES=1 timeout -k 5 170 python3 benchmarks/probes/2026-11-29-pool/run.py --tasks-dir .kb/l1 \
   --tasks 43_ 45_ 46_ --out $S/pool.json --time-limit 150 --no-compile > $S/pool.log 2>&1
 bash benchmarks/bench_queue.sh $S $(left 20) "l2bn|suite=.kb/l2 tasks=[$L2BN] max_steps=4 time_limit_s=150 gpus=[1]" > $S/queue-1.log 2>&1) &
while [ $(jobs -r | wc -l) -gt 0 ] && [ $(left 12) -gt 0 ]; do sleep 5; done
sleep 3
cat $S/gpus.txt; tail -n 8 $S/gpu-smoke.log
grep -h "^\[ *[0-9]*/" $S/*.log 2>/dev/null | sort -u
grep -E "^best|floor|%" $S/pool.log 2>/dev/null | tail -30
tar -czf $OUT/s20a.tgz --exclude='checkpoints.sqlite*' --exclude='*.png' -C /tmp s20
ls -la $OUT
