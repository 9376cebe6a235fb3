#!/usr/bin/env bash
# Record the built-in tree on ONE GPU (issue 26 Show 1), with a node count every 20 s in progress.txt:
#
#   benchmarks/tree_one_gpu.sh $S 420 [extra overrides...]
#
# then `python3 benchmarks/tree_rate.py $S/tree/builtin.jsonl $S/progress.txt`. One-GPU mode
# (verifier.gpu_lock, docs/design.md "One-GPU mode"): 12 jobs on GPU 0 of 16 cores, every kernel
# under its lock; the recording's timing loop shortened (re-timed by `mtmc tree retime judge=batch`).
#
# resident_share: the share of the GPU the 12 jobs' inputs and reference outputs keep there (split
# between them), not parked in host memory. At the default 0.125 (1.5 GiB a job on an H200) every
# built-in of 2 GiB a case was parked, and its copies crossed PCIe at every call (3.3 programs a
# minute, 2026-11-28). 0.7 of an H200 is 8.2 GiB a job: every built-in (at most 8 GiB of inputs and
# outputs at seeds=1) stays, 98 GiB in all, leaving ~36 GiB for the locked job's working memory and
# the compile passes' stand-ins. An H100 (80 GiB) cannot hold 12 such jobs (0.5 would be 3.3 GiB a
# job, and the 4 GiB tasks would park as before), so there at most 8 jobs take 0.6: 6 GiB a job, 48 GiB
# in all, ~32 GiB left for the locked job. Compiles are the jobs' CPU work (2-5 s a program outside the
# lock): 8 jobs still compile faster than the model's 75-110 programs a minute need (not measured).
# warmup_ms 25: the lock keeps the GPU busy back to back, so its clocks do not idle between timings
# (the 100 ms default is for a GPU coming from idle).
#
# WORKERS (default 12 on a GPU of 120 GB or more, else 8; a caller's value is capped at 8 there too):
# jobs on the GPU. HARD_LIMIT: seconds after which the recorder is killed
# (`timeout`), for a caller with a wall of its own (benchmarks/tree_gpus.sh); the time limit above
# stops it first, cleanly, whole levels kept.
set -u
state=$1 limit=$2
shift 2
mkdir -p "$state/tree"
tree="$state/tree/builtin.jsonl"
gpu=${CUDA_VISIBLE_DEVICES:-0}
mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits -i "${gpu%%,*}" 2>/dev/null || echo 0)
if [ "${mib:-0}" -ge 120000 ]; then big=1; else big=0; fi
share=${RESIDENT_SHARE:-$([ $big = 1 ] && echo 0.7 || echo 0.6)}
workers=${WORKERS:-12}
if [ $big = 0 ] && [ "$workers" -gt 8 ]; then workers=8; fi
echo "GPU ${gpu%%,*}: ${mib} MiB, resident_share $share, $workers jobs" >>"$state/record.log"
( start=$SECONDS
  while sleep 20; do
    echo "$((SECONDS - start)) $(grep -c '"kind": "node"' "$tree" 2>/dev/null || echo 0)" >>"$state/progress.txt"
  done ) &
counter=$!
CUDA_VISIBLE_DEVICES=$gpu ${HARD_LIMIT:+timeout -k 10 "$HARD_LIMIT"} "${PYTHON:-python3}" -m mtmc.cli \
  tree record tree="$tree" suite=builtin depth=2 judge=batch chunk=8 time_limit_s="$limit" \
  verifier=local "verifier.gpus=[0]" verifier.gpu_lock=true verifier.workers_per_gpu="$workers" \
  verifier.resident_share="$share" verifier.warmup_ms=25 \
  verifier.seeds=1 +verifier.compile_baseline=false verifier.time_budget_s=0.5 verifier.max_reps=100 \
  hydra.run.dir="$state/run" "$@" >>"$state/record.log" 2>&1
status=$?
kill "$counter"
echo "$SECONDS $(grep -c '"kind": "node"' "$tree")" >>"$state/progress.txt"
tail -3 "$state/record.log"
exit $status
