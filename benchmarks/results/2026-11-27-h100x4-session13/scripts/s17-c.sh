#!/usr/bin/env bash
# session 17, call C (x4): verifier 2.9's first GPU run (output seals: its GPU test and the s22 corpus), then
# the KernelBench level-1/2 tasks calls A-B did not reach, the level-1 tasks fixed this session (5_ scalar
# input, 100_ broadcast at batch 1, split reductions 37 94 96 and LayerNorm 40, split-K 6, padded K 8), level 2's
# GEMMs at the port's new tf32x3 precision, and level-2 87 and 90 under verifier 2.10's TF32 evidence. max_steps=2.
set -u
D=${1:-550}
source .gpu/common.sh
S=/tmp/s17c; mkdir -p $S $OUT
L1LEFT=5_Matrix_scalar_multiplication,100_HingeLoss,9_Tall_skinny_matrix_multiplication_,97_ScaledDotProductAttention,98_KLDivLoss,99_TripletMarginLoss,89_cumsum,90_cumprod,91_cumsum_reverse,92_cumsum_exclusive,93_masked_cumsum
L1FIX=37_FrobeniusNorm_,94_MSELoss,96_HuberLoss,40_LayerNorm,6_Matmul_with_large_K_dimension_,8_Matmul_with_irregular_shapes_
L2A=9_Matmul_Subtract_Multiply_ReLU,12_Gemm_Multiply_LeakyReLU,14_Gemm_Divide_Sum_Scaling,22_Matmul_Scale_ResidualAdd_Clamp_LogSumExp_Mish,28_BMM_InstanceNorm_Sum_ResidualAdd_Multiply,29_Matmul_Mish_Mish,30_Gemm_GroupNorm_Hardtanh,33_Gemm_Scale_BatchNorm,37_Matmul_Swish_Sum_GroupNorm,39_Gemm_Scale_BatchNorm
L2B=40_Matmul_Scaling_ResidualAdd,41_Gemm_BatchNorm_GELU_ReLU,45_Gemm_Sigmoid_LogSumExp,53_Gemm_Scaling_Hardtanh_GELU,56_Matmul_Sigmoid_Sum,59_Matmul_Swish_Scaling,97_Matmul_BatchNorm_BiasAdd_Divide_Swish,99_Matmul_GELU_Softmax,62_Matmul_GroupNorm_LeakyReLU_Sum,63_Gemm_ReLU_Divide,64_Gemm_LogSumExp_LeakyReLU_LeakyReLU_GELU_GELU,68_Matmul_Min_Subtract,70_Gemm_Sigmoid_Scaling_ResidualAdd
L2C=76_Gemm_Add_ReLU,81_Gemm_Swish_Divide_Clamp_Tanh_Clamp,84_Gemm_BatchNorm_Scaling_Softmax,86_Matmul_Divide_GELU,88_Gemm_GroupNorm_Swish_Multiply_Swish,94_Gemm_BiasAdd_Hardtanh_Mish_GroupNorm,95_Matmul_Add_Swish_Tanh_GELU_Hardtanh
B="max_steps=2 time_limit_s=90"
(CUDA_VISIBLE_DEVICES=0 timeout -k 5 100 python3 -m pytest -m gpu tests/verify/test_output_seals.py tests/verify/test_gpu.py -q \
   -p no:cacheprovider -rf -k "held_check or (corpus and (s22 or s21 or s11_stash or s14_tf32))" > $S/gpu-seals.log 2>&1
 bash benchmarks/bench_queue.sh $S $(left 20) "l1left|suite=.kb/l1 tasks=[$L1LEFT] $B gpus=[0]" > $S/queue-0.log 2>&1) &
bash benchmarks/bench_queue.sh $S $(left 20) "l2a|suite=.kb/l2 tasks=[$L2A] $B gpus=[1]" \
   "l2tf|suite=.kb/l2 tasks=[87_Conv2d_Subtract_Subtract_Mish,90_Conv3d_LeakyReLU_Sum_Clamp_GELU] $B gpus=[1]" > $S/queue-1.log 2>&1 &
bash benchmarks/bench_queue.sh $S $(left 20) "l2b|suite=.kb/l2 tasks=[$L2B] $B gpus=[2]" > $S/queue-2.log 2>&1 &
bash benchmarks/bench_queue.sh $S $(left 20) "l1fix|suite=.kb/l1 tasks=[$L1FIX] $B gpus=[3]" \
   "l2c|suite=.kb/l2 tasks=[$L2C] $B gpus=[3]" > $S/queue-3.log 2>&1 &
while [ $(jobs -r | wc -l) -gt 0 ] && [ $(left 12) -gt 0 ]; do sleep 5; done
sleep 4
tail -n 8 $S/gpu-seals.log
grep -h "^\[ *[0-9]*/" $S/*.log 2>/dev/null | sort -u | tail -70
tar -czf $OUT/s17c.tgz --exclude='checkpoints.sqlite*' --exclude='*.png' -C /tmp s17c
ls -la $OUT
