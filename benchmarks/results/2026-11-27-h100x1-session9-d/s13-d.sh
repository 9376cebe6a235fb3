#!/usr/bin/env bash
# call 4 (short): level-1 44 and 46 with the pool port after the probe (rows form, plain taps)
set -u
D=${1:-140}
source .gpu/common.sh
S=/tmp/s13d; mkdir -p $S $OUT
bash benchmarks/bench_queue.sh $S $(left 12) "l1pool2|suite=.kb/l1 tasks=[44_Average_Pooling_1D,46_Average_Pooling_3D,45_Average_Pooling_2D] max_steps=1 time_limit_s=120 gpus=[0]" > $S/queue.log 2>&1
grep -h "^\[[0-9]*/" $S/l1pool2.log
tar -czf $OUT/s13d.tgz --exclude='checkpoints.sqlite*' -C /tmp s13d
