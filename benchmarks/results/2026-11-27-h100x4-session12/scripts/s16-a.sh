#!/usr/bin/env bash
# next session, call A (x4). GPU 0: the small-channel convs' precision (runs loop at TF32 / tf32x3 / ieee,
# the FMA loop) where eager's cuDNN is fp32, and the runs loop's runs_static / split_rows keys; GPU 1: the pool probe (the rows form's `slide`) then
# pools 45, 46 benched; GPU 2: transposed-conv tiles on 11, 93, 5 (probe), then level 2's 14 transposed convs not yet
# benched with grouped_programs;
# GPU 3: the verdict latency with verifier.overlap_baselines off and on, then KernelBench's eval on
# level 1's 25 unjudged programs (resumed from .kb/kb-eval-l1-a.json).
set -u
D=${1:-540}
source .gpu/common.sh
S=/tmp/s16; mkdir -p $S $OUT
PROBE=benchmarks/probes/2026-11-26-conv/run.py
R="k_loop=runs,BLOCK_M=128,BLOCK_N=64,BLOCK_K=16,num_warps=4,num_stages=3"
VP="port:;runsx3:$R,precision=tf32x3,tf32_round=0;runsieee:$R,precision=ieee,tf32_round=0;fma:k_loop=fma,precision=ieee,channels_last=0,tf32_round=0,BLOCK_M=128,BLOCK_N=64,BLOCK_K=16,num_warps=4,num_stages=2"
(CUDA_VISIBLE_DEVICES=0 timeout -k 5 250 python3 $PROBE --tasks-dir .kb/l2 --tasks 57_ 67_ 73_ 87_ 90_ 21_ 82_ 85_ \
   --no-compile --out $S/prec-l2.json --time-limit 235 --variants "$VP" > $S/prec-l2.log 2>&1
 CUDA_VISIBLE_DEVICES=0 timeout -k 5 165 python3 $PROBE --tasks-dir .kb/l2 --tasks 7_ 8_ 21_ 90_ --no-compile --out $S/runs2.json \
   --time-limit 150 --variants "port:;static:runs_static=1;static-split:runs_static=1,split_rows=1;static-split-t:runs_static=1,split_rows=1,epilogue_t=1;static-split-s4:runs_static=1,split_rows=1,num_stages=4;static-split-n16:runs_static=1,split_rows=1,BLOCK_N=16" > $S/runs2.log 2>&1
 CUDA_VISIBLE_DEVICES=0 timeout -k 5 $(left 30) python3 $PROBE --tasks-dir .kb/l1 --tasks 50_ 54_ 60_ 66_ \
   --no-compile --out $S/prec-l1.json --time-limit $(left 45) --variants "$VP" > $S/prec-l1.log 2>&1) &
VS="port:;slide8-128-w4:form=rows,slide=8,BLOCK_N=128,num_warps=4;slide4-128-w4:form=rows,slide=4,BLOCK_N=128,num_warps=4;slide2-128-w4:form=rows,slide=2,BLOCK_N=128,num_warps=4;slide4-64-w2:form=rows,slide=4,BLOCK_N=64,num_warps=2;slide8-256-w8:form=rows,slide=8,BLOCK_N=256,num_warps=8;rows-128-w4:form=rows,BLOCK_N=128,num_warps=4;flat-128-w4:form=flat,BLOCK=128,num_warps=4"
(CUDA_VISIBLE_DEVICES=1 timeout -k 5 210 python3 benchmarks/probes/2026-11-27-pool/run.py --tasks-dir .kb/l1 --tasks 41_ 42_ 43_ 46_ \
   --out $S/pool-slide.json --time-limit 190 --no-compile --variants "$VS" > $S/pool.log 2>&1
 bash benchmarks/bench_queue.sh $S $(left 25) "l1pool|suite=.kb/l1 tasks=[45_Average_Pooling_2D,46_Average_Pooling_3D] max_steps=2 time_limit_s=150 gpus=[1]" > $S/queue-1.log 2>&1) &
(CUDA_VISIBLE_DEVICES=2 timeout -k 5 130 python3 $PROBE --tasks-dir .kb/l2 --tasks 11_ 93_ 5_ --no-compile --out $S/tconv-tiles.json \
   --time-limit 115 --variants "port:;t128x128w8:BLOCK_M=128,BLOCK_N=128,BLOCK_K=32,num_warps=8,num_stages=3;t256x64w8:BLOCK_M=256,BLOCK_N=64,BLOCK_K=32,num_warps=8,num_stages=3;k64s2:BLOCK_K=64,num_stages=2" > $S/tconv-tiles.log 2>&1
 bash benchmarks/bench_queue.sh $S $(left 25) "l2tc|suite=.kb/l2 tasks=[5_ConvTranspose2d_Subtract_Tanh,49_ConvTranspose3d_Softmax_Sigmoid,50_ConvTranspose3d_Scaling_AvgPool_BiasAdd_Scaling,58_ConvTranspose3d_LogSumExp_HardSwish_Subtract_Clamp,60_ConvTranspose3d_Swish_GroupNorm_HardSwish,61_ConvTranspose3d_ReLU_GroupNorm,72_ConvTranspose3d_BatchNorm_AvgPool_AvgPool,74_ConvTranspose3d_LeakyReLU_Multiply_LeakyReLU_Max,77_ConvTranspose3d_Scale_BatchNorm_GlobalAvgPool,78_ConvTranspose3d_Max_Max_Sum,89_ConvTranspose3d_MaxPool_Softmax_Subtract_Swish_Max,91_ConvTranspose2d_Softmax_BiasAdd_Scaling_Sigmoid,93_ConvTranspose2d_Add_Min_GELU_Multiply,96_ConvTranspose3d_Multiply_Max_GlobalAvgPool_Clamp] max_steps=4 time_limit_s=120 gpus=[2]" > $S/queue-2.log 2>&1) &
(bash benchmarks/bench_queue.sh $S 200 "big_off|suite=.kb/l1 tasks=[27_SELU_,36_RMSNorm_] max_steps=1 time_limit_s=100 gpus=[3]" \
   "big_on|suite=.kb/l1 tasks=[27_SELU_,36_RMSNorm_] max_steps=1 time_limit_s=100 gpus=[3] +verifier.overlap_baselines=true" > $S/queue-3.log 2>&1
 export PYTHONPATH=.kb/src:$PYTHONPATH
 CUDA_VISIBLE_DEVICES=3 timeout -k 10 $(left 25) python3 benchmarks/kb_eval.py --stub-llm-clients --control compile eager-ieee \
   --time-limit $(left 70) --tasks-dir .kb/l1 --bench .kb/export-l1 --resume .kb/kb-eval-l1-a.json --out $S/kb-l1.json > $S/kb-l1.log 2>&1
 python3 benchmarks/kb_eval.py --merge .kb/kb-eval-l1-a.json $S/kb-l1.json --out $S/kb-eval-l1-b.json > $S/kb-merge.log 2>&1) &
while [ $(jobs -r | wc -l) -gt 0 ] && [ $(left 15) -gt 0 ]; do sleep 5; done
sleep 5
grep -E "^(port|runs|fma|t1|t2|k64|static)" $S/prec-l2.log $S/runs2.log $S/prec-l1.log $S/tconv-tiles.log; tail -n 8 $S/pool.log 2>/dev/null
tail -n 25 $S/kb-merge.log
grep -h "^\[ *[0-9]*/" $S/l1pool.log $S/l2tc.log $S/big_off.log $S/big_on.log 2>/dev/null | tail -20
tar -czf $OUT/s16a.tgz --exclude='checkpoints.sqlite*' --exclude='*.png' -C /tmp s16
ls -la $OUT
