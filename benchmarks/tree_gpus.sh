#!/usr/bin/env bash
# Record the built-in tree on every visible GPU at once (issue 26): one one-GPU-mode recorder per GPU
# (benchmarks/tree_one_gpu.sh with CUDA_VISIBLE_DEVICES=i and shard=i/N), each on its own share of the
# tasks and its own file, then `mtmc tree merge` into STATE/tree/builtin.jsonl and the rate:
#
#   benchmarks/tree_gpus.sh $S 540 [extra overrides...]     # all done within 540 s of its start
#
# Resumable: it first merges what STATE holds (the merged tree and every earlier call's shard files)
# and seeds each GPU's file with a copy of it, so a call on a host of another size (another split)
# continues the same tree. STATE/call<k>/gpu<i>/ keeps each recorder's log, run folder and
# progress.txt; STATE/call<k>/progress.txt counts the programs of all of them (tree_rate.py reads it).
#
# Time: each recorder stops starting jobs at LIMIT - DRAIN_S - START_S from this script's start
# (START_S, default 45: imports, the shard split's enumeration, the pool's start, before the
# recorder's clock begins; DRAIN_S, default 90: a batch of 8 running when the limit passes ends with
# 11 others sharing the GPU's lock), so the levels it leaves are whole; at LIMIT - 25 any recorder
# still running is killed (its file keeps every line but a torn last one, which the next run redoes),
# and the last 25 s merge and print the rate.
#
# WORKERS: jobs per GPU, default min(12, cores / GPUs - 4): a job's compiles are CPU (the compile
# pass, 2-8 s of a port's kernels at level 0), and the GPU's lock is the bound from ~6 jobs on
# (docs/design.md "One-GPU mode": N x 0.6 s locked against ~3 s outside), so 12 leaves the compiles
# room while 4 cores a GPU stay for its recorder's own process (enumeration, rows, the static checks,
# baselines). 64 cores and 4 GPUs, or 32 and 2: 12 a GPU. tree_one_gpu.sh caps it at 8 on a GPU under
# 120 GB (an H100), where 12 jobs' resident inputs would not fit.
set -u
state=$1 limit=$2
shift 2
py=${PYTHON:-python3}
start=$SECONDS
mkdir -p "$state/tree"
tree="$state/tree/builtin.jsonl"
if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
  IFS=, read -r -a gpus <<<"$CUDA_VISIBLE_DEVICES"
else
  mapfile -t gpus < <(nvidia-smi --query-gpu=index --format=csv,noheader)
fi
n=${#gpus[@]}
[ "$n" -ge 1 ] || { echo "tree_gpus.sh: no GPU visible" >&2; exit 2; }
per=$(( $(nproc) / n - 4 ))
workers=${WORKERS:-$(( per > 12 ? 12 : (per < 2 ? 2 : per) ))}

merge() {  # $1: the parts, comma-separated
  "$py" -m mtmc.cli tree merge tree="$tree" "parts=[$1]" hydra.run.dir="$state/merge-run"
}
parts=$(ls "$tree" "$state"/call*/gpu*/tree/builtin.jsonl 2>/dev/null | paste -sd, -)
if [ -n "$parts" ]; then
  merge "$parts" || { echo "tree_gpus.sh: the tree so far did not merge; nothing started" >&2; exit 1; }
fi
k=1
while [ -e "$state/call$k" ]; do k=$((k + 1)); done
call="$state/call$k"
soft=$(( limit - (SECONDS - start) - ${DRAIN_S:-90} - ${START_S:-45} ))
hard=$(( limit - (SECONDS - start) - 25 ))
[ "$soft" -ge 30 ] || { echo "tree_gpus.sh: LIMIT $limit leaves $soft s to record" >&2; exit 2; }
[ "$hard" -gt "$soft" ] || echo "tree_gpus.sh: DRAIN_S + START_S under 25 s: killed at $hard s, before the time limit"
echo "$n GPUs (${gpus[*]}), $workers jobs each, $(nproc) cores; recording for $soft s, killed at $hard s: $call"

files=() pids=()
for i in "${!gpus[@]}"; do
  mkdir -p "$call/gpu$i/tree"
  files+=("$call/gpu$i/tree/builtin.jsonl")
  if [ -f "$tree" ]; then cp "$tree" "${files[$i]}"; fi
  CUDA_VISIBLE_DEVICES=${gpus[$i]} WORKERS=$workers HARD_LIMIT=$hard PYTHON=$py \
    bash benchmarks/tree_one_gpu.sh "$call/gpu$i" "$soft" "shard=$i/$n" "$@" >"$call/gpu$i/out.txt" 2>&1 &
  pids+=($!)
done
base=$(grep -c '"kind": "node"' "$tree" 2>/dev/null || echo 0)
count() {  # node rows in all the shards' files, each seeded with the `base` rows of the tree so far
  echo "$(( $(cat "${files[@]}" 2>/dev/null | grep -c '"kind": "node"') - (n - 1) * base ))"
}
t0=$SECONDS
echo "0 $base" >"$call/progress.txt"
( while sleep 20; do echo "$((SECONDS - t0)) $(count)" >>"$call/progress.txt"; done ) &
counter=$!
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
kill "$counter"
echo "$((SECONDS - t0)) $(count)" >>"$call/progress.txt"
for i in "${!gpus[@]}"; do
  grep -h "mtmc tree record: shard" "$call/gpu$i/record.log" | cut -c1-200
  tail -1 "$call/gpu$i/record.log" | cut -c1-400
done
[ -f "$tree" ] && files=("$tree" "${files[@]}")  # the tree so far first: its verdicts are kept
merge "$(IFS=,; echo "${files[*]}")" || status=1
"$py" benchmarks/tree_rate.py "$tree" "$call/progress.txt"
exit $status
