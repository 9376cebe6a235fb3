#!/usr/bin/env bash
# fourteenth session, call B (x4). GPU 0: the level-1/2 tasks never benched (l1 9 97 98 99, l2 97 99; issue 25
# Show 2); GPU 1: level-2 90 (verifier 2.10), 68 and 70 (last benched at the ieee port), then KernelBench's eval;
# GPUs 1-3: KernelBench's own eval over level 1's latest programs (.kb/export-l1-s18, 96), three shards (Show 6).
set -u
D=${1:-540}
source .gpu/common.sh
S=/tmp/s18b; mkdir -p $S $OUT
L1LEFT=9_Tall_skinny_matrix_multiplication_,97_ScaledDotProductAttention,98_KLDivLoss,99_TripletMarginLoss
L2LEFT=97_Matmul_BatchNorm_BiasAdd_Divide_Swish,99_Matmul_GELU_Softmax
L2AGAIN=90_Conv3d_LeakyReLU_Sum_Clamp_GELU,68_Matmul_Min_Subtract,70_Gemm_Sigmoid_Scaling_ResidualAdd
B="max_steps=2 time_limit_s=120"
kb() {  # kb <gpu> <shard> <time limit s>
  CUDA_VISIBLE_DEVICES=$1 PYTHONPATH=.kb/src:$PYTHONPATH timeout -k 10 $(( $3 + 15 )) python3 benchmarks/kb_eval.py \
    --stub-llm-clients --control compile eager-ieee --time-limit $3 --tasks-dir .kb/l1 --bench .kb/export-l1-s18 \
    --shard $2/3 --out $S/kb-l1-$2.json > $S/kb-l1-$2.log 2>&1
}
bash benchmarks/bench_queue.sh $S $(left 20) "l1left|suite=.kb/l1 tasks=[$L1LEFT] $B gpus=[0]" \
   "l2left|suite=.kb/l2 tasks=[$L2LEFT] $B gpus=[0]" > $S/queue-0.log 2>&1 &
(bash benchmarks/bench_queue.sh $S 300 "l2again|suite=.kb/l2 tasks=[$L2AGAIN] max_steps=2 time_limit_s=110 gpus=[1]" > $S/queue-1.log 2>&1
 kb 1 0 $(left 45)) &
kb 2 1 $(left 45) &
kb 3 2 $(left 45) &
while [ $(jobs -r | wc -l) -gt 0 ] && [ $(left 12) -gt 0 ]; do sleep 5; done
sleep 3
grep -h "^\[ *[0-9]*/" $S/*.log 2>/dev/null | sort -u
grep -ch " ours " $S/kb-l1-*.log; grep -h "DISAGREE" $S/kb-l1-*.log | cut -c1-120
tar -czf $OUT/s18b.tgz --exclude='checkpoints.sqlite*' --exclude='*.png' -C /tmp s18b
ls -la $OUT
