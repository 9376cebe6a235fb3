#!/usr/bin/env bash
# call C (x4): verifier 2.6 with tf32_follows_eager (a TF32 program refused where eager's cuDNN computed in
# fp32; the port retries fp32-exact) and the static runs loop, benched on level 2's 12 runs-loop tasks not
# benched since (GPUs 0-2) and level 1's 3-D runs convs (GPU 3), then KernelBench's eval on those programs;
# level 1's pools 42, 45, 46 (the slide port; 45's large-case plan counting inputs) on GPU 2.
set -u
D=${1:-530}
source .gpu/common.sh
S=/tmp/s16c; mkdir -p $S $OUT
B="max_steps=2 time_limit_s=80"
bash benchmarks/bench_queue.sh $S $(left 25) "l2ra|suite=.kb/l2 tasks=[57_Conv2d_ReLU_HardSwish,67_Conv2d_GELU_GlobalAvgPool,73_Conv2d_BatchNorm_Scaling,87_Conv2d_Subtract_Subtract_Mish,65_Conv2d_AvgPool_Sigmoid_Sum] $B gpus=[0]" > $S/queue-0.log 2>&1 &
bash benchmarks/bench_queue.sh $S $(left 25) "l2rb|suite=.kb/l2 tasks=[90_Conv3d_LeakyReLU_Sum_Clamp_GELU,21_Conv2d_Add_Scale_Sigmoid_GroupNorm,82_Conv2d_Tanh_Scaling_BiasAdd_Max,85_Conv2d_GroupNorm_Scale_MaxPool_Clamp,69_Conv2d_HardSwish_ReLU] $B gpus=[1]" > $S/queue-1.log 2>&1 &
bash benchmarks/bench_queue.sh $S $(left 25) "l2rc|suite=.kb/l2 tasks=[71_Conv2d_Divide_LeakyReLU,92_Conv2d_GroupNorm_Tanh_HardSwish_ResidualAdd_LogSumExp] $B gpus=[2]" \
  "l1pool|suite=.kb/l1 tasks=[42_Max_Pooling_2D,46_Average_Pooling_3D,45_Average_Pooling_2D] max_steps=2 time_limit_s=150 gpus=[2]" > $S/queue-2.log 2>&1 &
(bash benchmarks/bench_queue.sh $S 330 "l1runs|suite=.kb/l1 tasks=[54_conv_standard_3D__square_input__square_kernel,60_conv_standard_3D__square_input__asymmetric_kernel,66_conv_standard_3D__asymmetric_input__asymmetric_kernel,59_conv_standard_3D__asymmetric_input__square_kernel] $B gpus=[3]" > $S/queue-3.log 2>&1
 export PYTHONPATH=.kb/src:$PYTHONPATH
 CUDA_VISIBLE_DEVICES=3 timeout -k 10 $(left 25) python3 benchmarks/kb_eval.py --stub-llm-clients --control eager-ieee \
   --time-limit $(left 40) --tasks-dir .kb/l1 --bench $S/l1runs --out $S/kb-l1runs.json > $S/kb-l1runs.log 2>&1) &
while [ $(jobs -r | wc -l) -gt 0 ] && [ $(left 15) -gt 0 ]; do sleep 5; done
sleep 3
grep -h "^\[ *[0-9]*/" $S/l2ra.log $S/l2rb.log $S/l2rc.log $S/l1pool.log $S/l1runs.log 2>/dev/null | tail -20
grep -E "ours|DISAGREE|agree" $S/kb-l1runs.log | tail -8
tar -czf $OUT/s16c.tgz --exclude='checkpoints.sqlite*' --exclude='*.png' -C /tmp s16c
ls -la $OUT
