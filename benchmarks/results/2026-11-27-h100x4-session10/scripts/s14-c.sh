#!/usr/bin/env bash
# tenth session, call 3 (x4): level-2 transposed-conv tasks on the live-tap loop and 128x64 tiles, and the
# three 8-channel convs that now take the runs loop, benched on four GPUs (worst-first per GPU).
set -u
D=${1:-500}
source .gpu/common.sh
S=/tmp/s14c; mkdir -p $S $OUT
G0="11_ConvTranspose2d_BatchNorm_Tanh_MaxPool_GroupNorm,44_ConvTranspose2d_Multiply_GlobalAvgPool_GlobalAvgPool_Mean,36_ConvTranspose2d_Min_Sum_GELU_Add,38_ConvTranspose3d_AvgPool_Clamp_Softmax_Multiply,42_ConvTranspose2d_GlobalAvgPool_BiasAdd_LogSumExp_Sum_Multiply,61_ConvTranspose3d_ReLU_GroupNorm,7_Conv3d_ReLU_LeakyReLU_GELU_Sigmoid_BiasAdd"
G1="77_ConvTranspose3d_Scale_BatchNorm_GlobalAvgPool,10_ConvTranspose2d_MaxPool_Hardtanh_Mean_Tanh,100_ConvTranspose3d_Clamp_Min_Divide,93_ConvTranspose2d_Add_Min_GELU_Multiply,5_ConvTranspose2d_Subtract_Tanh,74_ConvTranspose3d_LeakyReLU_Multiply_LeakyReLU_Max,8_Conv3d_Divide_Max_GlobalAvgPool_BiasAdd_Sum"
G2="34_ConvTranspose3d_LayerNorm_GELU_Scaling,3_ConvTranspose3d_Sum_LayerNorm_AvgPool_GELU,13_ConvTranspose3d_Mean_Add_Softmax_Tanh_Scaling,2_ConvTranspose2d_BiasAdd_Clamp_Scaling_Clamp_Divide,26_ConvTranspose3d_Add_HardSwish,15_ConvTranspose3d_BatchNorm_Subtract,21_Conv2d_Add_Scale_Sigmoid_GroupNorm"
G3="91_ConvTranspose2d_Softmax_BiasAdd_Scaling_Sigmoid,19_ConvTranspose2d_GELU_GroupNorm,16_ConvTranspose2d_Mish_Add_Hardtanh_Scaling,49_ConvTranspose3d_Softmax_Sigmoid,20_ConvTranspose3d_Sum_ResidualAdd_Multiply_ResidualAdd,78_ConvTranspose3d_Max_Max_Sum"
for g in 0 1 2 3; do
  eval "L=\$G$g"
  bash benchmarks/bench_queue.sh $S $(left 30) "c$g|suite=.kb/l2 tasks=[$L] max_steps=4 time_limit_s=150 gpus=[$g]" > $S/queue-$g.log 2>&1 &
done
while [ $(jobs -r | wc -l) -gt 0 ] && [ $(left 15) -gt 0 ]; do sleep 5; done
sleep 8
grep -h "^\[[0-9]*/" $S/c0.log $S/c1.log $S/c2.log $S/c3.log
tar -czf $OUT/s14c.tgz --exclude='checkpoints.sqlite*' -C /tmp s14c
ls -la $OUT
