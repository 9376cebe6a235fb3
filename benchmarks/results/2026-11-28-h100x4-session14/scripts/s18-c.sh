#!/usr/bin/env bash
# fourteenth session, call C (x4). GPU 0: 97_ScaledDotProductAttention with the large-head-dim port (issue 25 Show 2),
# the pool probe (issue 22 Show 2, 150 s), then KernelBench's eval; GPUs 1-2: level 2's transposed convs with
# transpose_static in the port (worst first, max_steps=4 as their last runs); GPU 3: KernelBench's eval over the
# level-1 programs it never judged (Show 6).
set -u
D=${1:-540}
source .gpu/common.sh
S=/tmp/s18c; mkdir -p $S $OUT
KBT="31_ 34_ 37_ 38_ 39_ 3_ 40_ 47_ 48_ 49_ 4_ 51_ 52_ 53_ 5_ 6_ 7_ 88_ 89_ 8_ 90_ 91_ 92_ 93_ 94_ 95_ 96_ 9_ 98_ 99_"
CTA=11_ConvTranspose2d_BatchNorm_Tanh_MaxPool_GroupNorm,42_ConvTranspose2d_GlobalAvgPool_BiasAdd_LogSumExp_Sum_Multiply,38_ConvTranspose3d_AvgPool_Clamp_Softmax_Multiply,16_ConvTranspose2d_Mish_Add_Hardtanh_Scaling,19_ConvTranspose2d_GELU_GroupNorm,10_ConvTranspose2d_MaxPool_Hardtanh_Mean_Tanh,77_ConvTranspose3d_Scale_BatchNorm_GlobalAvgPool,74_ConvTranspose3d_LeakyReLU_Multiply_LeakyReLU_Max,49_ConvTranspose3d_Softmax_Sigmoid,13_ConvTranspose3d_Mean_Add_Softmax_Tanh_Scaling,60_ConvTranspose3d_Swish_GroupNorm_HardSwish
CTB=44_ConvTranspose2d_Multiply_GlobalAvgPool_GlobalAvgPool_Mean,3_ConvTranspose3d_Sum_LayerNorm_AvgPool_GELU,93_ConvTranspose2d_Add_Min_GELU_Multiply,34_ConvTranspose3d_LayerNorm_GELU_Scaling,91_ConvTranspose2d_Softmax_BiasAdd_Scaling_Sigmoid,5_ConvTranspose2d_Subtract_Tanh,2_ConvTranspose2d_BiasAdd_Clamp_Scaling_Clamp_Divide,61_ConvTranspose3d_ReLU_GroupNorm,100_ConvTranspose3d_Clamp_Min_Divide,26_ConvTranspose3d_Add_HardSwish,36_ConvTranspose2d_Min_Sum_GELU_Add
kb() {  # kb <gpu> <shard> <time limit s>
  CUDA_VISIBLE_DEVICES=$1 PYTHONPATH=.kb/src:$PYTHONPATH timeout -k 10 $(( $3 + 60 )) python3 benchmarks/kb_eval.py \
    --stub-llm-clients --control compile eager-ieee --time-limit $3 --tasks-dir .kb/l1 --bench .kb/export-l1-s18c \
    --tasks $KBT --shard $2/2 --out $S/kb-l1-$2.json > $S/kb-l1-$2.log 2>&1
}
(bash benchmarks/bench_queue.sh $S 200 "l1sdpa|suite=.kb/l1 tasks=[97_ScaledDotProductAttention] max_steps=2 time_limit_s=150 gpus=[0]" > $S/queue-0.log 2>&1
 CUDA_VISIBLE_DEVICES=0 timeout -k 5 170 python3 benchmarks/probes/2026-11-28-pool/run.py --tasks-dir .kb/l1 \
   --tasks 41_ 44_ 42_ 43_ --out $S/pool-shift.json --time-limit 150 --no-compile > $S/pool.log 2>&1
 kb 0 1 $(left 60)) &
bash benchmarks/bench_queue.sh $S $(left 20) "l2cta|suite=.kb/l2 tasks=[$CTA] max_steps=4 time_limit_s=150 gpus=[1]" > $S/queue-1.log 2>&1 &
bash benchmarks/bench_queue.sh $S $(left 20) "l2ctb|suite=.kb/l2 tasks=[$CTB] max_steps=4 time_limit_s=150 gpus=[2]" > $S/queue-2.log 2>&1 &
kb 3 0 $(left 60) &
while [ $(jobs -r | wc -l) -gt 0 ] && [ $(left 12) -gt 0 ]; do sleep 5; done
sleep 3
grep -h "^\[ *[0-9]*/" $S/*.log 2>/dev/null | sort -u
grep -h " ours " $S/kb-l1-*.log | cut -c1-140; tail -n 12 $S/pool.log 2>/dev/null
tar -czf $OUT/s18c.tgz --exclude='checkpoints.sqlite*' --exclude='*.png' -C /tmp s18c
ls -la $OUT
