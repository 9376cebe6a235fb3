#!/usr/bin/env bash
# call 1: the conv FMA loop probed (GPU 0: level-2 convs; GPU 1: level-2 transposed convs, then level-1
# convs) and the 16 small-channel level-2 tasks benched (GPUs 2, 3). Usage: s13-a.sh DEADLINE_S
set -u
D=${1:-540}
source .gpu/common.sh
S=/tmp/s13; mkdir -p $S $OUT
nvidia-smi --query-gpu=index,name,memory.total --format=csv > $S/gpus.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $S/gpus.txt
PROBE=benchmarks/probes/2026-11-26-conv/run.py
V_CONV="port:;fma-m64:BLOCK_M=64;fma-m256:BLOCK_M=256;fma-m256w8:BLOCK_M=256,num_warps=8;fma-w8:num_warps=8;fma-s3:num_stages=3;flat-old:k_loop=flat,precision=tf32,tf32_round=0,BLOCK_M=64,BLOCK_K=32"
V_CT="port:;fma-m64:BLOCK_M=64;fma-m256:BLOCK_M=256;fma-m256w8:BLOCK_M=256,num_warps=8;fma-w8:num_warps=8;dot-old:k_loop=dot,precision=tf32,channels_last=1,tf32_round=1,BLOCK_M=256,BLOCK_K=16"
(CUDA_VISIBLE_DEVICES=0 timeout -k 5 $(left 40) python3 $PROBE --tasks-dir .kb/l2 --tasks 6_ 7_ 8_ 23_ 24_ 27_ 48_ 79_ 83_ 90_ \
  --variants "$V_CONV" --no-compile --out $S/fma-l2.json --time-limit $(left 60) > $S/fma-l2.log 2>&1) &
(CUDA_VISIBLE_DEVICES=1 timeout -k 5 $(left 40) python3 $PROBE --tasks-dir .kb/l2 --tasks 50_ 58_ 60_ 72_ 89_ 96_ \
  --variants "$V_CT" --no-compile --out $S/fma-l2t.json --time-limit 220 > $S/fma-l2t.log 2>&1;
 CUDA_VISIBLE_DEVICES=1 timeout -k 5 $(left 40) python3 $PROBE --tasks-dir .kb/l1 --tasks 50_ 54_ 59_ 60_ 66_ \
  --variants "$V_CONV" --no-compile --out $S/fma-l1.json --time-limit $(left 60) > $S/fma-l1.log 2>&1) &
A="27_Conv3d_HardSwish_GroupNorm_Mean,48_Conv3d_Scaling_Tanh_Multiply_Sigmoid,8_Conv3d_Divide_Max_GlobalAvgPool_BiasAdd_Sum,7_Conv3d_ReLU_LeakyReLU_GELU_Sigmoid_BiasAdd,23_Conv3d_GroupNorm_Mean,90_Conv3d_LeakyReLU_Sum_Clamp_GELU,83_Conv3d_GroupNorm_Min_Clamp_Dropout,24_Conv3d_Min_Softmax"
B="72_ConvTranspose3d_BatchNorm_AvgPool_AvgPool,89_ConvTranspose3d_MaxPool_Softmax_Subtract_Swish_Max,96_ConvTranspose3d_Multiply_Max_GlobalAvgPool_Clamp,50_ConvTranspose3d_Scaling_AvgPool_BiasAdd_Scaling,58_ConvTranspose3d_LogSumExp_HardSwish_Subtract_Clamp,60_ConvTranspose3d_Swish_GroupNorm_HardSwish,6_Conv3d_Softmax_MaxPool_MaxPool,79_Conv3d_Multiply_InstanceNorm_Clamp_Multiply_Max"
bash benchmarks/bench_queue.sh $S $(left 35) "l2fa|suite=.kb/l2 tasks=[$A] max_steps=4 time_limit_s=200 gpus=[2]" > $S/queue-a.log 2>&1 &
bash benchmarks/bench_queue.sh $S $(left 35) "l2fb|suite=.kb/l2 tasks=[$B] max_steps=4 time_limit_s=200 gpus=[3]" > $S/queue-b.log 2>&1 &
while [ $(jobs -r | wc -l) -gt 0 ] && [ $(left 20) -gt 0 ]; do sleep 5; done
sleep 8
tail -n 30 $S/fma-l2.log $S/fma-l2t.log $S/fma-l1.log $S/queue-a.log $S/queue-b.log
grep -h "^\[[0-9]*/" $S/l2fa.log $S/l2fb.log | tail -20
tar -czf $OUT/s13a.tgz --exclude='checkpoints.sqlite*' -C /tmp s13
tar -czf $OUT/s13a-state.tgz -C /tmp s13
ls -la $OUT
