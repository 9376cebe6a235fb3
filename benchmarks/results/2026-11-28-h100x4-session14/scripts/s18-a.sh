#!/usr/bin/env bash
# next session, call A (x4). GPU 0: verifier 2.9-2.11's GPU smoke (seals, s11/s21/s22/c9 corpus: 2.11 never ran
# on a GPU), then the nine KernelBench level-1/2 tasks never benched (issue 25 Show 2) and
# 90 (verifier 2.10), 68 and 70 (call B rows at the ieee port); GPUs 1-2: level 1's 17 transposed convs with
# the port's transpose_static at 4 stages (73 78 81 ... last benched 2026-11-26); GPU 3: level 1's fp32-exact
# convs with fma_static, then 100_HingeLoss and 36_RMSNorm_ with room for their fuse steps.
set -u
D=${1:-540}
source .gpu/common.sh
S=/tmp/s18; mkdir -p $S $OUT
L1LEFT=9_Tall_skinny_matrix_multiplication_,91_cumsum_reverse,92_cumsum_exclusive,93_masked_cumsum,97_ScaledDotProductAttention,98_KLDivLoss,99_TripletMarginLoss
L2LEFT=97_Matmul_BatchNorm_BiasAdd_Divide_Swish,99_Matmul_GELU_Softmax,68_Matmul_Min_Subtract,70_Gemm_Sigmoid_Scaling_ResidualAdd,90_Conv3d_LeakyReLU_Sum_Clamp_GELU
CT1=57_conv_transposed_2D__square_input__square_kernel,58_conv_transposed_3D__asymmetric_input__asymmetric_kernel,61_conv_transposed_3D__square_input__square_kernel,64_conv_transposed_1D,65_conv_transposed_2D__square_input__asymmetric_kernel,68_conv_transposed_3D__square_input__asymmetric_kernel,69_conv_transposed_2D__asymmetric_input__asymmetric_kernel,70_conv_transposed_3D__asymmetric_input__square_kernel,71_conv_transposed_2D__asymmetric_input__square_kernel
CT2=78_conv_transposed_2D_asymmetric_input_asymmetric_kernel___padded__,73_conv_transposed_3D_asymmetric_input_square_kernel__strided_padded__grouped,81_conv_transposed_2D_asymmetric_input_square_kernel___dilated____padded____strided__,72_conv_transposed_3D_asymmetric_input_asymmetric_kernel___strided_padded_grouped_,74_conv_transposed_1D_dilated,75_conv_transposed_2D_asymmetric_input_asymmetric_kernel_strided__grouped____padded____dilated__,77_conv_transposed_3D_square_input_square_kernel___padded____dilated____strided__,79_conv_transposed_1D_asymmetric_input_square_kernel___padded____strided____dilated__
L1RUNS=54_conv_standard_3D__square_input__square_kernel,60_conv_standard_3D__square_input__asymmetric_kernel,66_conv_standard_3D__asymmetric_input__asymmetric_kernel,59_conv_standard_3D__asymmetric_input__square_kernel
B="max_steps=2 time_limit_s=120"
(CUDA_VISIBLE_DEVICES=0 timeout -k 5 110 python3 -m pytest -m gpu tests/verify/test_output_seals.py tests/verify/test_gpu.py -q \
   -p no:cacheprovider -rf -k "held_check or (corpus and (s22 or s21 or s11 or c9))" > $S/gpu-smoke.log 2>&1
 bash benchmarks/bench_queue.sh $S $(left 20) "l1left|suite=.kb/l1 tasks=[$L1LEFT] $B gpus=[0]" \
   "l2left|suite=.kb/l2 tasks=[$L2LEFT] $B gpus=[0]" > $S/queue-0.log 2>&1) &
bash benchmarks/bench_queue.sh $S $(left 20) "l1ct1|suite=.kb/l1 tasks=[$CT1] $B gpus=[1]" > $S/queue-1.log 2>&1 &
bash benchmarks/bench_queue.sh $S $(left 20) "l1ct2|suite=.kb/l1 tasks=[$CT2] $B gpus=[2]" > $S/queue-2.log 2>&1 &
bash benchmarks/bench_queue.sh $S $(left 20) "l1runs|suite=.kb/l1 tasks=[$L1RUNS] max_steps=2 time_limit_s=80 gpus=[3]" \
   "l1fuse|suite=.kb/l1 tasks=[100_HingeLoss,36_RMSNorm_] max_steps=3 time_limit_s=150 gpus=[3]" > $S/queue-3.log 2>&1 &
while [ $(jobs -r | wc -l) -gt 0 ] && [ $(left 12) -gt 0 ]; do sleep 5; done
sleep 4
tail -n 6 $S/gpu-smoke.log
grep -h "^\[ *[0-9]*/" $S/*.log 2>/dev/null | sort -u | tail -60
tar -czf $OUT/s18a.tgz --exclude='checkpoints.sqlite*' --exclude='*.png' -C /tmp s18
ls -la $OUT
