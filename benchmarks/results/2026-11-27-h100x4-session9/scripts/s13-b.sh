#!/usr/bin/env bash
# call 2: GPU 0 probes the FMA loop on level 2's 2-D convs with 8 input channels; GPU 1 benches level-1
# 87 then level-2 21; GPU 2 benches level-3 9_ResNet18; GPU 3 runs KernelBench's own eval over call 1's
# level-2 bench folders. Usage: s13-b.sh DEADLINE_S
set -u
D=${1:-540}
source .gpu/common.sh
S=/tmp/s13; mkdir -p $OUT; tar -xzf .gpustate/s13a-state.tgz -C /tmp
PROBE=benchmarks/probes/2026-11-26-conv/run.py
FMA="k_loop=fma,precision=ieee,channels_last=0,tf32_round=0,num_warps=4,num_stages=2"
V="port:;fma-m128:$FMA,BLOCK_M=128,BLOCK_N=64;fma-m256:$FMA,BLOCK_M=256,BLOCK_N=64;fma-m128n32:$FMA,BLOCK_M=128,BLOCK_N=32;flat:k_loop=flat,precision=tf32,tf32_round=0,BLOCK_M=64,BLOCK_K=32"
(CUDA_VISIBLE_DEVICES=0 timeout -k 5 $(left 40) python3 $PROBE --tasks-dir .kb/l2 --tasks 21_ 57_ 65_ 67_ 69_ 71_ 73_ 82_ 85_ 87_ 92_ \
  --variants "$V" --no-compile --out $S/fma-l2-2d.json --time-limit $(left 60) > $S/fma-l2-2d.log 2>&1) &
bash benchmarks/bench_queue.sh $S $(left 35) \
  "l1p87|suite=.kb/l1 tasks=[87_conv_pointwise_2D] max_steps=1 time_limit_s=450 verifier.timeout_s=450 gpus=[1]" \
  "l2f21|suite=.kb/l2 tasks=[21_Conv2d_Add_Scale_Sigmoid_GroupNorm] max_steps=4 time_limit_s=200 gpus=[1]" > $S/queue-c.log 2>&1 &
bash benchmarks/bench_queue.sh $S $(left 35) \
  "l3r18|suite=.kb/l3 tasks=[9_ResNet18] max_steps=1 time_limit_s=450 verifier.timeout_s=450 gpus=[2]" > $S/queue-d.log 2>&1 &
(CUDA_VISIBLE_DEVICES=3 PYTHONPATH=$PWD/.kb/src:$PYTHONPATH timeout -k 5 $(left 40) python3 benchmarks/kb_eval.py \
  --tasks-dir .kb/l2 --bench $S/l2fa $S/l2fb --out $S/kb-eval-l2f.json --time-limit $(left 90) --stub-llm-clients \
  > $S/kb-eval-l2f.log 2>&1) &
while [ $(jobs -r | wc -l) -gt 0 ] && [ $(left 20) -gt 0 ]; do sleep 5; done
sleep 8
tail -n 25 $S/fma-l2-2d.log; tail -n 5 $S/queue-c.log $S/queue-d.log; tail -n 20 $S/kb-eval-l2f.log
grep -h "^\[[0-9]*/" $S/l1p87.log $S/l2f21.log $S/l3r18.log | tail -5
tar -czf $OUT/s13b.tgz --exclude='checkpoints.sqlite*' -C /tmp s13
ls -la $OUT
