#!/usr/bin/env bash
# call C on two GPUs (x2; the x4 did not start): verifier 2.6 with tf32_follows_eager and the static runs
# loop. GPU 0: level 2's runs-loop convs where eager's cuDNN is fp32 (57 67 73 87 90 21 82); GPU 1: level 1's
# 3-D runs convs 54 60 66 59, then the pools 42 46 45 (the slide port; 45's large-case plan counting inputs).
set -u
D=${1:-470}
source .gpu/common.sh
S=/tmp/s16c; mkdir -p $S $OUT
B="max_steps=2 time_limit_s=80"
bash benchmarks/bench_queue.sh $S $(left 20) "l2ra|suite=.kb/l2 tasks=[57_Conv2d_ReLU_HardSwish,67_Conv2d_GELU_GlobalAvgPool,73_Conv2d_BatchNorm_Scaling,87_Conv2d_Subtract_Subtract_Mish,90_Conv3d_LeakyReLU_Sum_Clamp_GELU,21_Conv2d_Add_Scale_Sigmoid_GroupNorm,82_Conv2d_Tanh_Scaling_BiasAdd_Max] $B gpus=[0]" > $S/queue-0.log 2>&1 &
bash benchmarks/bench_queue.sh $S $(left 20) "l1runs|suite=.kb/l1 tasks=[54_conv_standard_3D__square_input__square_kernel,60_conv_standard_3D__square_input__asymmetric_kernel,66_conv_standard_3D__asymmetric_input__asymmetric_kernel,59_conv_standard_3D__asymmetric_input__square_kernel] $B gpus=[1]" \
  "l1pool|suite=.kb/l1 tasks=[42_Max_Pooling_2D,46_Average_Pooling_3D,45_Average_Pooling_2D] max_steps=2 time_limit_s=150 gpus=[1]" > $S/queue-1.log 2>&1 &
while [ $(jobs -r | wc -l) -gt 0 ] && [ $(left 12) -gt 0 ]; do sleep 5; done
sleep 3
grep -h "^\[ *[0-9]*/" $S/l2ra.log $S/l1pool.log $S/l1runs.log 2>/dev/null | tail -20
tar -czf $OUT/s16c.tgz --exclude='checkpoints.sqlite*' --exclude='*.png' -C /tmp s16c
ls -la $OUT
