#!/usr/bin/env bash
# next session, call A (x4). GPU 0: the FMA loop's fma_static (and split_rows) probe on the fp32-exact
# tasks; GPU 1: level 1's pools under verifier 2.6+ (45: inputs count for the large-case plan; 46 and 42 with
# the slide; 41 43 44); GPU 2: level 2's runs-loop tasks not benched under tf32_follows_eager (65 69 71 85
# 92) after the transposed conv's transpose_static probe; GPU 3: KernelBench's eval on the twelfth session's fp32-exact programs (.kb/s16-l2ra, .kb/s16-l1runs),
# first the GPU corpus (verifier 2.7-2.8 entries). After the probes and kb_evals: level-1 non-conv benches (l1ew, l1mm, l1red).
set -u
D=${1:-540}
source .gpu/common.sh
L1EW=19_ReLU,20_LeakyReLU,21_Sigmoid,22_Tanh,25_Swish,26_GELU_,28_HardSigmoid,29_Softplus,30_Softsign,31_ELU,32_HardTanh,88_MinGPTNewGelu
L1MM=1_Square_matrix_multiplication_,2_Standard_matrix_multiplication_,3_Batched_matrix_multiplication,4_Matrix_vector_multiplication_,5_Matrix_scalar_multiplication,6_Matmul_with_large_K_dimension_,7_Matmul_with_small_K_dimension_,8_Matmul_with_irregular_shapes_,9_Tall_skinny_matrix_multiplication_
L1RED=47_Sum_reduction_over_a_dimension,48_Mean_reduction_over_a_dimension,49_Max_reduction_over_a_dimension,51_Argmax_over_a_dimension,52_Argmin_over_a_dimension,53_Min_reduction_over_a_dimension
S=/tmp/s17; mkdir -p $S $OUT
PROBE=benchmarks/probes/2026-11-26-conv/run.py
FMA="k_loop=fma,precision=ieee,channels_last=0,tf32_round=0,BLOCK_M=128,BLOCK_N=64,BLOCK_K=16,num_warps=4,num_stages=2"
V="port:;fma:$FMA;fma-static:$FMA,fma_static=1;fma-split:$FMA,split_rows=1;fma-static-split:$FMA,fma_static=1,split_rows=1"
(CUDA_VISIBLE_DEVICES=0 timeout -k 5 250 python3 $PROBE --tasks-dir .kb/l1 --tasks 54_ 59_ 60_ 66_ --no-compile \
   --out $S/fma-static-l1.json --time-limit 235 --variants "$V" > $S/fma-static-l1.log 2>&1
 bash benchmarks/bench_queue.sh $S $(left 20) "l1ew|suite=.kb/l1 tasks=[$L1EW] max_steps=2 time_limit_s=90 gpus=[0]" > $S/queue-0.log 2>&1) &
bash benchmarks/bench_queue.sh $S $(left 25) "l1pool|suite=.kb/l1 tasks=[45_Average_Pooling_2D,46_Average_Pooling_3D,42_Max_Pooling_2D,41_Max_Pooling_1D,43_Max_Pooling_3D,44_Average_Pooling_1D] max_steps=2 time_limit_s=150 gpus=[1]" \
   "l1mm|suite=.kb/l1 tasks=[$L1MM] max_steps=2 time_limit_s=90 gpus=[1]" > $S/queue-1.log 2>&1 &
VT="port:;static:transpose_static=1;static-s4:transpose_static=1,num_stages=4;static-k64:transpose_static=1,BLOCK_K=64,num_stages=2"
(CUDA_VISIBLE_DEVICES=2 timeout -k 5 300 python3 $PROBE --tasks-dir .kb/l2 --tasks 44_ 11_ 42_ 93_ 3_ 38_ 5_ --no-compile \
   --out $S/transpose-static.json --time-limit 285 --variants "$VT" > $S/transpose-static.log 2>&1
 bash benchmarks/bench_queue.sh $S $(left 25) "l2runs|suite=.kb/l2 tasks=[69_Conv2d_HardSwish_ReLU,71_Conv2d_Divide_LeakyReLU,85_Conv2d_GroupNorm_Scale_MaxPool_Clamp,65_Conv2d_AvgPool_Sigmoid_Sum,92_Conv2d_GroupNorm_Tanh_HardSwish_ResidualAdd_LogSumExp] max_steps=2 time_limit_s=80 gpus=[2]" > $S/queue-2.log 2>&1) &
(CUDA_VISIBLE_DEVICES=3 timeout -k 5 150 python3 -m pytest -m gpu tests/verify/test_gpu.py -q -p no:cacheprovider \
   -k "corpus" > $S/gpu-corpus.log 2>&1
 export PYTHONPATH=.kb/src:$PYTHONPATH
 CUDA_VISIBLE_DEVICES=3 timeout -k 10 200 python3 benchmarks/kb_eval.py --stub-llm-clients --control eager-ieee \
   --time-limit 185 --tasks-dir .kb/l2 --bench .kb/s16-l2ra --out $S/kb-l2ra.json > $S/kb-l2ra.log 2>&1
 CUDA_VISIBLE_DEVICES=3 timeout -k 10 $(left 110) python3 benchmarks/kb_eval.py --stub-llm-clients --control eager-ieee \
   --time-limit $(left 125) --tasks-dir .kb/l1 --bench .kb/s16-l1runs --out $S/kb-l1runs.json > $S/kb-l1runs.log 2>&1
 bash benchmarks/bench_queue.sh $S $(left 20) "l1red|suite=.kb/l1 tasks=[$L1RED] max_steps=2 time_limit_s=90 gpus=[3]" > $S/queue-3.log 2>&1) &
while [ $(jobs -r | wc -l) -gt 0 ] && [ $(left 15) -gt 0 ]; do sleep 5; done
sleep 5
grep -E "^(port|fma|x3|static)" $S/fma-static-l1.log $S/transpose-static.log
tail -n 4 $S/gpu-corpus.log
grep -E "ours|DISAGREE" $S/kb-l2ra.log $S/kb-l1runs.log | tail -24
grep -h "^\[ *[0-9]*/" $S/l1pool.log $S/l2runs.log $S/l1ew.log $S/l1mm.log $S/l1red.log 2>/dev/null | tail -40
tar -czf $OUT/s17a.tgz --exclude='checkpoints.sqlite*' --exclude='*.png' -C /tmp s17
ls -la $OUT
