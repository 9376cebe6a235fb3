#!/usr/bin/env bash
# Archive result folders in the history, not the tree (BENCHMARKS.md): commit them once under
# benchmarks/results/ (git-ignored, hence -f), then remove them from the tree in the next commit.
# Prints the commit that holds them: pass it to `benchmarks/manifest.py add --archived-in`.
#
#   benchmarks/archive_results.sh benchmarks/results/2026-11-26-h100-bench-x [more folders...]
set -euo pipefail
if [ $# -lt 1 ]; then
  echo "usage: $0 benchmarks/results/<folder> ..." >&2
  exit 2
fi
git add -f -- "$@"
git commit -q -m "results: archive $* (removed from the tree in the next commit; BENCHMARKS.md)"
archived=$(git rev-parse --short HEAD)
git rm -r -q --cached -- "$@"
git commit -q -m "results: $* archived in $archived, out of the tree"
echo "$archived"
