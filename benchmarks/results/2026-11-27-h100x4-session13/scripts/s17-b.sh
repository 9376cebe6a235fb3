#!/usr/bin/env bash
# session 17, call B (x4): the rest of KernelBench levels 1 and 2 never benched (issue 25 Show 2; the non-conv
# tasks), max_steps=2; GPU 0 first runs the GPU corpus entries call A's 150 s did not reach (dynamic ones).
set -u
D=${1:-470}
source .gpu/common.sh
S=/tmp/s17b; mkdir -p $S $OUT
L1LOSS=23_Softmax,24_LogSoftmax,94_MSELoss,95_CrossEntropyLoss,96_HuberLoss,97_ScaledDotProductAttention,98_KLDivLoss,99_TripletMarginLoss,100_HingeLoss
L1MM=5_Matrix_scalar_multiplication,6_Matmul_with_large_K_dimension_,7_Matmul_with_small_K_dimension_,8_Matmul_with_irregular_shapes_,9_Tall_skinny_matrix_multiplication_,10_3D_tensor_matrix_multiplication,11_4D_tensor_matrix_multiplication,12_Matmul_with_diagonal_matrices_,13_Matmul_for_symmetric_matrices,14_Matmul_for_upper_triangular_matrices,15_Matmul_for_lower_triangular_matrices,16_Matmul_with_transposed_A,17_Matmul_with_transposed_B,18_Matmul_with_transposed_both
L1NORM=33_BatchNorm,34_InstanceNorm,35_GroupNorm_,37_FrobeniusNorm_,38_L1Norm_,39_L2Norm_,40_LayerNorm,89_cumsum,90_cumprod,91_cumsum_reverse,92_cumsum_exclusive,93_masked_cumsum
L2A=9_Matmul_Subtract_Multiply_ReLU,12_Gemm_Multiply_LeakyReLU,14_Gemm_Divide_Sum_Scaling,22_Matmul_Scale_ResidualAdd_Clamp_LogSumExp_Mish,28_BMM_InstanceNorm_Sum_ResidualAdd_Multiply,29_Matmul_Mish_Mish,30_Gemm_GroupNorm_Hardtanh,33_Gemm_Scale_BatchNorm,37_Matmul_Swish_Sum_GroupNorm,39_Gemm_Scale_BatchNorm
L2B=40_Matmul_Scaling_ResidualAdd,41_Gemm_BatchNorm_GELU_ReLU,45_Gemm_Sigmoid_LogSumExp,53_Gemm_Scaling_Hardtanh_GELU,56_Matmul_Sigmoid_Sum,59_Matmul_Swish_Scaling
L2C=62_Matmul_GroupNorm_LeakyReLU_Sum,63_Gemm_ReLU_Divide,64_Gemm_LogSumExp_LeakyReLU_LeakyReLU_GELU_GELU,66_Matmul_Dropout_Softmax,68_Matmul_Min_Subtract,70_Gemm_Sigmoid_Scaling_ResidualAdd,75_Gemm_GroupNorm_Min_BiasAdd,76_Gemm_Add_ReLU,81_Gemm_Swish_Divide_Clamp_Tanh_Clamp,84_Gemm_BatchNorm_Scaling_Softmax,86_Matmul_Divide_GELU,88_Gemm_GroupNorm_Swish_Multiply_Swish,94_Gemm_BiasAdd_Hardtanh_Mish_GroupNorm,95_Matmul_Add_Swish_Tanh_GELU_Hardtanh,97_Matmul_BatchNorm_BiasAdd_Divide_Swish,99_Matmul_GELU_Softmax
B="max_steps=2 time_limit_s=90"
(CUDA_VISIBLE_DEVICES=0 timeout -k 5 230 python3 -m pytest -m gpu tests/verify/test_gpu.py -q -p no:cacheprovider -rf \
   -k "corpus and (iso_ or s07 or s10 or s11 or s12 or s14 or s15 or s16 or s21 or t0)" > $S/gpu-corpus.log 2>&1
 bash benchmarks/bench_queue.sh $S $(left 20) "l1loss|suite=.kb/l1 tasks=[$L1LOSS] $B gpus=[0]" > $S/queue-0.log 2>&1) &
bash benchmarks/bench_queue.sh $S $(left 20) "l1mm2|suite=.kb/l1 tasks=[$L1MM] $B gpus=[1]" \
   "l2a|suite=.kb/l2 tasks=[$L2A] $B gpus=[1]" > $S/queue-1.log 2>&1 &
bash benchmarks/bench_queue.sh $S $(left 20) "l1norm|suite=.kb/l1 tasks=[$L1NORM] $B gpus=[2]" \
   "l2b|suite=.kb/l2 tasks=[$L2B] $B gpus=[2]" > $S/queue-2.log 2>&1 &
bash benchmarks/bench_queue.sh $S $(left 20) "l2c|suite=.kb/l2 tasks=[$L2C] $B gpus=[3]" > $S/queue-3.log 2>&1 &
while [ $(jobs -r | wc -l) -gt 0 ] && [ $(left 12) -gt 0 ]; do sleep 5; done
sleep 4
tail -n 6 $S/gpu-corpus.log
grep -h "^\[ *[0-9]*/" $S/*.log 2>/dev/null | sort -u | tail -80
tar -czf $OUT/s17b.tgz --exclude='checkpoints.sqlite*' --exclude='*.png' -C /tmp s17b
ls -la $OUT
