#!/usr/bin/env bash
# next session, call 1 (x4): GPU 0 reduce ROWS probe then the runs loop at BLOCK_K 8; GPUs 1-2 level 1's
# runs and live-tap transposed convs benched; GPU 3 KernelBench's eval over the latest level-2 programs.
set -u
D=${1:-540}
source .gpu/common.sh
S=/tmp/s15; mkdir -p $S $OUT
PROBE=benchmarks/probes/2026-11-26-conv/run.py
R="k_loop=runs,precision=tf32,tf32_round=1,num_warps=4,num_stages=3,BLOCK_M=128"
V_K8="port:;k8:$R,BLOCK_K=8,BLOCK_N=32;k8n64:$R,BLOCK_K=8,BLOCK_N=64;k16n16:$R,BLOCK_K=16,BLOCK_N=16"
(export CUDA_VISIBLE_DEVICES=0
 timeout -k 5 200 python3 benchmarks/probes/2026-11-27-reduce-rows/run.py --tasks-dir .kb/l2 --tasks 34_ 3_ \
   --out $S/rows-l2.json --time-limit 170 > $S/rows-l2.log 2>&1
 timeout -k 5 $(left 40) python3 $PROBE --tasks-dir .kb/l2 --tasks 7_ 8_ 21_ 67_ 90_ 73_ --no-compile \
   --variants "$V_K8" --out $S/runs-k8.json --time-limit $(left 70) > $S/runs-k8.log 2>&1) &
L1A="50_conv_standard_2D__square_input__square_kernel,54_conv_standard_3D__square_input__square_kernel,59_conv_standard_3D__asymmetric_input__square_kernel,60_conv_standard_3D__square_input__asymmetric_kernel,66_conv_standard_3D__asymmetric_input__asymmetric_kernel,78_conv_transposed_2D_asymmetric_input_asymmetric_kernel___padded__,69_conv_transposed_2D__asymmetric_input__asymmetric_kernel,73_conv_transposed_3D_asymmetric_input_square_kernel__strided_padded__grouped"
L1B="65_conv_transposed_2D__square_input__asymmetric_kernel,81_conv_transposed_2D_asymmetric_input_square_kernel___dilated____padded____strided__,71_conv_transposed_2D__asymmetric_input__square_kernel,57_conv_transposed_2D__square_input__square_kernel,79_conv_transposed_1D_asymmetric_input_square_kernel___padded____strided____dilated__,64_conv_transposed_1D,77_conv_transposed_3D_square_input_square_kernel___padded____dilated____strided__,61_conv_transposed_3D__square_input__square_kernel,74_conv_transposed_1D_dilated,68_conv_transposed_3D__square_input__asymmetric_kernel,70_conv_transposed_3D__asymmetric_input__square_kernel"
bash benchmarks/bench_queue.sh $S $(left 35) "l1a|suite=.kb/l1 tasks=[$L1A] max_steps=3 time_limit_s=150 gpus=[1]" > $S/queue-1.log 2>&1 &
bash benchmarks/bench_queue.sh $S $(left 35) "l1b|suite=.kb/l1 tasks=[$L1B] max_steps=3 time_limit_s=150 gpus=[2]" \
  "l3u|suite=.kb/l3 tasks=[45_UNetSoftmax] max_steps=1 time_limit_s=300 gpus=[2]" > $S/queue-2.log 2>&1 &
(bash benchmarks/bench_queue.sh $S 260 "bigres|suite=.kb/l1 tasks=[27_SELU_] max_steps=1 time_limit_s=250 gpus=[3] +verifier.resident_share=0.6" > $S/queue-3.log 2>&1
 CUDA_VISIBLE_DEVICES=3 PYTHONPATH=.kb/src:$PYTHONPATH timeout -k 5 $(left 40) python3 benchmarks/kb_eval.py \
   --tasks-dir .kb/l2 --bench .kb/export-l2 --out $S/kb-eval-l2.json --stub-llm-clients \
   --time-limit $(left 70) > $S/kb-eval-l2.log 2>&1
 CUDA_VISIBLE_DEVICES=3 PYTHONPATH=.kb/src:$PYTHONPATH timeout -k 5 $(left 40) python3 benchmarks/kb_eval.py \
   --tasks-dir .kb/l1 --bench .kb/export-l1 --out $S/kb-eval-l1.json --stub-llm-clients \
   --time-limit $(left 70) > $S/kb-eval-l1.log 2>&1) &
while [ $(jobs -r | wc -l) -gt 0 ] && [ $(left 20) -gt 0 ]; do sleep 5; done
sleep 8
grep -E "^(port|rows|k8|k16)" $S/rows-l2.log $S/runs-k8.log; tail -n 25 $S/kb-eval-l2.log $S/kb-eval-l1.log
grep -h "^\[[0-9]*/" $S/l1a.log $S/l1b.log $S/l3u.log $S/bigres.log | tail -24
tar -czf $OUT/s15a.tgz --exclude='checkpoints.sqlite*' -C /tmp s15
ls -la $OUT
