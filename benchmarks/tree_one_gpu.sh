#!/usr/bin/env bash
# Record the built-in tree on ONE GPU (issue 26 Show 1), with a node count every 20 s in progress.txt:
#
#   benchmarks/tree_one_gpu.sh $S 420 [extra overrides...]
#
# then `python3 benchmarks/tree_rate.py $S/tree/builtin.jsonl $S/progress.txt`. One-GPU mode
# (verifier.gpu_lock, docs/design.md): 12 jobs on GPU 0 of 16 cores, every kernel under its lock;
# the recording's timing loop shortened (re-timed by `mtmc tree retime judge=batch`).
set -u
state=$1 limit=$2
shift 2
mkdir -p "$state/tree"
tree="$state/tree/builtin.jsonl"
( start=$SECONDS
  while sleep 20; do
    echo "$((SECONDS - start)) $(grep -c '"kind": "node"' "$tree" 2>/dev/null || echo 0)" >>"$state/progress.txt"
  done ) &
counter=$!
CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0} "${PYTHON:-python3}" -m mtmc.cli tree record tree="$tree" \
  suite=builtin depth=2 judge=batch chunk=8 time_limit_s="$limit" \
  verifier=local "verifier.gpus=[0]" verifier.gpu_lock=true verifier.workers_per_gpu=12 \
  verifier.seeds=1 +verifier.compile_baseline=false verifier.time_budget_s=0.5 verifier.max_reps=100 \
  hydra.run.dir="$state/run" "$@" >>"$state/record.log" 2>&1
status=$?
kill "$counter"
echo "$SECONDS $(grep -c '"kind": "node"' "$tree")" >>"$state/progress.txt"
tail -3 "$state/record.log"
exit $status
