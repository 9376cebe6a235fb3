#!/usr/bin/env bash
# tenth session, call 2 (x4): GPU 0 small-channel conv loops (runs tiles vs FMA); GPUs 1-2 the transposed
# conv's live-tap loop and tiles (level 2, level 1); GPUs 2-3 the level-2 tasks the runs port changed.
set -u
D=${1:-540}
source .gpu/common.sh
S=/tmp/s14b; mkdir -p $S $OUT
PROBE=benchmarks/probes/2026-11-26-conv/run.py
V_SMALL="port:;fma:k_loop=fma,precision=ieee,tf32_round=0,BLOCK_M=128,BLOCK_N=64,BLOCK_K=16,num_warps=4,num_stages=2"
V_SMALL="$V_SMALL;flat:k_loop=flat,precision=tf32,tf32_round=0,BLOCK_M=64,BLOCK_N=64,BLOCK_K=32,num_warps=4,num_stages=2"
R="k_loop=runs,precision=tf32,tf32_round=1,BLOCK_K=16"
V_SMALL="$V_SMALL;runs64:$R,BLOCK_M=128,BLOCK_N=64,num_warps=4,num_stages=3;runs32:$R,BLOCK_M=128,BLOCK_N=32,num_warps=4,num_stages=3"
V_SMALL="$V_SMALL;runs32m256:$R,BLOCK_M=256,BLOCK_N=32,num_warps=8,num_stages=3;runs16m256:$R,BLOCK_M=256,BLOCK_N=16,num_warps=4,num_stages=3"
V_CT="port:;old:live_taps=0;m128:BLOCK_M=128,BLOCK_N=64,BLOCK_K=32,num_warps=4,num_stages=3"
V_CT="$V_CT;m128n128:BLOCK_M=128,BLOCK_N=128,BLOCK_K=32,num_warps=8,num_stages=3;m256:BLOCK_M=256,BLOCK_N=64,BLOCK_K=32,num_warps=8,num_stages=3"
V_CT="$V_CT;m128k16:BLOCK_M=128,BLOCK_N=64,BLOCK_K=16,num_warps=4,num_stages=4;m64s3:BLOCK_M=64,BLOCK_N=64,BLOCK_K=32,num_warps=4,num_stages=3"
(export CUDA_VISIBLE_DEVICES=0
 timeout -k 5 $(left 40) python3 $PROBE --tasks-dir .kb/l1 --tasks 50_ 54_ 60_ --no-compile \
   --variants "$V_SMALL" --out $S/small-l1.json --time-limit 150 > $S/small-l1.log 2>&1
 timeout -k 5 $(left 40) python3 $PROBE --tasks-dir .kb/l2 --tasks 7_ 8_ 21_ 27_ 48_ 23_ --no-compile \
   --variants "$V_SMALL" --out $S/small-l2.json --time-limit $(left 70) > $S/small-l2.log 2>&1) &
(export CUDA_VISIBLE_DEVICES=1
 timeout -k 5 $(left 40) python3 $PROBE --tasks-dir .kb/l2 --tasks 34_ 3_ 44_ 100_ 10_ 20_ 61_ 26_ 5_ 49_ \
   --no-compile --variants "$V_CT" --out $S/ct-l2.json --time-limit $(left 70) > $S/ct-l2.log 2>&1) &
(export CUDA_VISIBLE_DEVICES=2
 timeout -k 5 240 python3 $PROBE --tasks-dir .kb/l1 --tasks 57_ 61_ 64_ 68_ 71_ 77_ 81_ \
   --no-compile --variants "$V_CT" --out $S/ct-l1.json --time-limit 200 > $S/ct-l1.log 2>&1
 bash benchmarks/bench_queue.sh $S $(left 35) "runs2|suite=.kb/l2 tasks=[69_Conv2d_HardSwish_ReLU,71_Conv2d_Divide_LeakyReLU,82_Conv2d_Tanh_Scaling_BiasAdd_Max,85_Conv2d_GroupNorm_Scale_MaxPool_Clamp,92_Conv2d_GroupNorm_Tanh_HardSwish_ResidualAdd_LogSumExp] max_steps=4 time_limit_s=200 gpus=[2]" > $S/queue-2.log 2>&1) &
bash benchmarks/bench_queue.sh $S $(left 35) "runs1|suite=.kb/l2 tasks=[67_Conv2d_GELU_GlobalAvgPool,73_Conv2d_BatchNorm_Scaling,87_Conv2d_Subtract_Subtract_Mish,57_Conv2d_ReLU_HardSwish,90_Conv3d_LeakyReLU_Sum_Clamp_GELU,65_Conv2d_AvgPool_Sigmoid_Sum] max_steps=4 time_limit_s=200 gpus=[3]" > $S/queue-3.log 2>&1 &
while [ $(jobs -r | wc -l) -gt 0 ] && [ $(left 20) -gt 0 ]; do sleep 5; done
sleep 8
grep -E "^port|^fma|^flat|^runs|^old|^m[0-9]" $S/small-l1.log $S/small-l2.log $S/ct-l2.log $S/ct-l1.log
cat $S/queue-2.log $S/queue-3.log
grep -h "^\[[0-9]*/" $S/runs1.log $S/runs2.log | tail -20
tar -czf $OUT/s14b.tgz --exclude='checkpoints.sqlite*' -C /tmp s14b
ls -la $OUT
