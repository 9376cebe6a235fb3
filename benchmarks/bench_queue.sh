#!/usr/bin/env bash
# Run `mtmc bench` jobs one after another until a wall-clock deadline, each into its own folder under
# STATE_DIR; run it again with the same STATE_DIR to go on where it stopped (a bench folder skips its
# finished tasks and resumes the one in flight from its checkpoint). For machines lent by the hour:
#
#   benchmarks/bench_queue.sh /tmp/state 560 \
#       "suite|suite=builtin max_steps=4 time_limit_s=60" \
#       "random_eval|suite=builtin split=eval planner=random max_steps=4 time_limit_s=60"
#
# Each job gets the time left (SIGINT at the deadline, so the bench saves what it has); its output is
# appended to STATE_DIR/<name>.log. Archive STATE_DIR yourself to carry it to the next machine.
# PYTHON names the interpreter (default python3).
set -u
if [ $# -lt 3 ]; then
  echo "usage: $0 STATE_DIR DEADLINE_S 'name|bench overrides' ..." >&2
  exit 2
fi
state=$1 deadline=$2
shift 2
mkdir -p "$state"
for job in "$@"; do
  name=${job%%|*} args=${job#*|}
  left=$((deadline - SECONDS))
  if [ "$left" -lt 40 ]; then
    echo "=== $name: skipped, ${left}s left"
    continue
  fi
  echo "=== $name (${left}s left): mtmc bench $args"
  # shellcheck disable=SC2086  # the overrides are meant to split into words
  timeout -k 15 -s INT "$left" "${PYTHON:-python3}" -m mtmc.cli bench $args "out=$state/$name" >>"$state/$name.log" 2>&1
  echo "=== $name: exit $? (124: stopped at the deadline; run again to resume)"
  grep -E "^\[[0-9]+/[0-9]+\]" "$state/$name.log" | tail -n 3
done
