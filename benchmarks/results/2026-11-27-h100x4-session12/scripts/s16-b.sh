#!/usr/bin/env bash
# call B (x4). GPUs 0-1: the fp32-exact conv forms timed against the port's TF32 runs loop now that it is
# static (runs_static), on the tasks where eager's cuDNN is fp32 (level-2 8-channel convs; level-1 3-D
# convs and the grouped transposed convs 72, 75); GPU 2: level 2's last 4 transposed convs benched with
# grouped_programs, then the TF32-eager runs-loop tasks 7, 8 with runs_static; GPU 3: level 3's
# 45_UNetSoftmax, then level 1's 50 and 59 with runs_static.
set -u
D=${1:-400}
source .gpu/common.sh
S=/tmp/s16b; mkdir -p $S $OUT
PROBE=benchmarks/probes/2026-11-26-conv/run.py
FMA="k_loop=fma,precision=ieee,channels_last=0,tf32_round=0,runs_static=0,BLOCK_M=128,BLOCK_N=64,BLOCK_K=16,num_warps=4,num_stages=2"
VP="port:;x3:precision=tf32x3,tf32_round=0;ieee:precision=ieee,tf32_round=0;x3s4:precision=tf32x3,tf32_round=0,num_stages=4;fma:$FMA"
(CUDA_VISIBLE_DEVICES=0 timeout -k 5 $(left 20) python3 $PROBE --tasks-dir .kb/l2 --tasks 57_ 67_ 73_ 87_ 90_ 21_ 82_ 85_ \
   --no-compile --out $S/prec-l2.json --time-limit $(left 35) --variants "$VP" > $S/prec-l2.log 2>&1) &
(CUDA_VISIBLE_DEVICES=1 timeout -k 5 200 python3 $PROBE --tasks-dir .kb/l1 --tasks 54_ 59_ 60_ 66_ \
   --no-compile --out $S/prec-l1.json --time-limit 185 --variants "$VP" > $S/prec-l1.log 2>&1
 CUDA_VISIBLE_DEVICES=1 timeout -k 5 $(left 20) python3 $PROBE --tasks-dir .kb/l1 --tasks 72_ 75_ \
   --no-compile --out $S/prec-l1t.json --time-limit $(left 35) \
   --variants "port:;x3:precision=tf32x3,tf32_round=0;ieee:precision=ieee,tf32_round=0" > $S/prec-l1t.log 2>&1) &
bash benchmarks/bench_queue.sh $S $(left 25) "l2tc|suite=.kb/l2 tasks=[89_ConvTranspose3d_MaxPool_Softmax_Subtract_Swish_Max,91_ConvTranspose2d_Softmax_BiasAdd_Scaling_Sigmoid,93_ConvTranspose2d_Add_Min_GELU_Multiply,96_ConvTranspose3d_Multiply_Max_GlobalAvgPool_Clamp] max_steps=4 time_limit_s=100 gpus=[2]" \
  "l2runs|suite=.kb/l2 tasks=[7_Conv3d_ReLU_LeakyReLU_GELU_Sigmoid_BiasAdd,8_Conv3d_Divide_Max_GlobalAvgPool_BiasAdd_Sum] max_steps=3 time_limit_s=60 gpus=[2]" > $S/queue-2.log 2>&1 &
bash benchmarks/bench_queue.sh $S $(left 25) "l3unet|suite=.kb/l3 tasks=[45_UNetSoftmax] max_steps=1 time_limit_s=200 gpus=[3]" \
  "l1runs|suite=.kb/l1 tasks=[50_conv_standard_2D__square_input__square_kernel,59_conv_standard_3D__asymmetric_input__square_kernel] max_steps=3 time_limit_s=60 gpus=[3]" > $S/queue-3.log 2>&1 &
while [ $(jobs -r | wc -l) -gt 0 ] && [ $(left 15) -gt 0 ]; do sleep 5; done
sleep 5
grep -E "^(port|x3|ieee|fma)" $S/prec-l2.log $S/prec-l1.log $S/prec-l1t.log
grep -h "^\[ *[0-9]*/" $S/l2tc.log $S/l2runs.log $S/l3unet.log $S/l1runs.log 2>/dev/null | tail -20
tar -czf $OUT/s16b.tgz --exclude='checkpoints.sqlite*' --exclude='*.png' -C /tmp s16b
ls -la $OUT
