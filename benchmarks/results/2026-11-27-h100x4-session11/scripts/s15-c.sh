#!/usr/bin/env bash
# call 3 (x4): GPUs 0-1 level 2's transposed convs benched with grouped_programs at the port; GPUs 2-3
# KernelBench's eval over level 1's latest programs (two shards), then level 3's 45_UNetSoftmax.
set -u
D=${1:-560}
source .gpu/common.sh
S=/tmp/s15c; mkdir -p $S $OUT
bash benchmarks/bench_queue.sh $S $(left 25) "l2ta|suite=.kb/l2 tasks=[44_ConvTranspose2d_Multiply_GlobalAvgPool_GlobalAvgPool_Mean,5_ConvTranspose2d_Subtract_Tanh,38_ConvTranspose3d_AvgPool_Clamp_Softmax_Multiply,34_ConvTranspose3d_LayerNorm_GELU_Scaling,10_ConvTranspose2d_MaxPool_Hardtanh_Mean_Tanh,15_ConvTranspose3d_BatchNorm_Subtract,19_ConvTranspose2d_GELU_GroupNorm,26_ConvTranspose3d_Add_HardSwish,42_ConvTranspose2d_GlobalAvgPool_BiasAdd_LogSumExp_Sum_Multiply,50_ConvTranspose3d_Scaling_AvgPool_BiasAdd_Scaling,60_ConvTranspose3d_Swish_GroupNorm_HardSwish,72_ConvTranspose3d_BatchNorm_AvgPool_AvgPool,77_ConvTranspose3d_Scale_BatchNorm_GlobalAvgPool,89_ConvTranspose3d_MaxPool_Softmax_Subtract_Swish_Max,96_ConvTranspose3d_Multiply_Max_GlobalAvgPool_Clamp] max_steps=4 time_limit_s=120 gpus=[0]" > $S/queue-0.log 2>&1 &
bash benchmarks/bench_queue.sh $S $(left 25) "l2tb|suite=.kb/l2 tasks=[93_ConvTranspose2d_Add_Min_GELU_Multiply,3_ConvTranspose3d_Sum_LayerNorm_AvgPool_GELU,11_ConvTranspose2d_BatchNorm_Tanh_MaxPool_GroupNorm,2_ConvTranspose2d_BiasAdd_Clamp_Scaling_Clamp_Divide,13_ConvTranspose3d_Mean_Add_Softmax_Tanh_Scaling,16_ConvTranspose2d_Mish_Add_Hardtanh_Scaling,20_ConvTranspose3d_Sum_ResidualAdd_Multiply_ResidualAdd,36_ConvTranspose2d_Min_Sum_GELU_Add,49_ConvTranspose3d_Softmax_Sigmoid,58_ConvTranspose3d_LogSumExp_HardSwish_Subtract_Clamp,61_ConvTranspose3d_ReLU_GroupNorm,74_ConvTranspose3d_LeakyReLU_Multiply_LeakyReLU_Max,78_ConvTranspose3d_Max_Max_Sum,91_ConvTranspose2d_Softmax_BiasAdd_Scaling_Sigmoid,100_ConvTranspose3d_Clamp_Min_Divide] max_steps=4 time_limit_s=120 gpus=[1]" > $S/queue-1.log 2>&1 &
(export PYTHONPATH=.kb/src:$PYTHONPATH
 KB="python3 benchmarks/kb_eval.py --stub-llm-clients --control compile eager-ieee"
 for i in 0 1; do
   CUDA_VISIBLE_DEVICES=$((i+2)) timeout -k 10 $(left 30) $KB --time-limit $(left 120) --tasks-dir .kb/l1 --bench .kb/export-l1 \
     --shard $i/2 --out $S/kb-l1-$i.json > $S/kb-l1-$i.log 2>&1 &
 done; wait) &
while [ $(jobs -r | wc -l) -gt 0 ] && [ $(left 15) -gt 0 ]; do sleep 5; done
sleep 5
python3 benchmarks/kb_eval.py --merge $S/kb-l1-0.json $S/kb-l1-1.json --out $S/kb-eval-l1.json > $S/kb-merge.log 2>&1
tail -n 30 $S/kb-merge.log
grep -h "^\[ *[0-9]*/" $S/l2ta.log $S/l2tb.log 2>/dev/null | tail -30
tar -czf $OUT/s15c.tgz --exclude='checkpoints.sqlite*' --exclude='*.png' -C /tmp s15c
ls -la $OUT
