#!/usr/bin/env bash
# Step times of the pipeline engine (docs/benchmarks.md, "Pipeline engine"): p = 4 and p = 2
# against OLD_BENCH (pipeline_bubble as built at 257998e, the last commit with the sequential
# engine; skipped when absent), three runs each, alternating; then 2 stages on 2 processes
# against 2 stages x tp 2 on 4 processes over zmq under sfrun, at widths 512 and 1024.
#
#   bash bench/compare_pipeline_engine.sh [BUILD_DIR] [OLD_BENCH]
set -u
build=${1:-build}
old=${2:-}
new=$build/bench/pipeline_bubble
sfrun=$build/tools/sfrun/sfrun
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
schedules="1f1b gpipe zb_h1 interleaved_1f1b"
for p in 4 2; do
  for i in 1 2 3; do
    echo "== new p=$p run $i"
    timeout 120 "$new" --stages $p --micro-batches 8 --schedules $schedules --steps 9 2>&1 | tail -n +3
    if [ -n "$old" ] && [ -x "$old" ]; then
      echo "== old p=$p run $i"
      timeout 120 "$old" --stages $p --micro-batches 8 --schedules $schedules --steps 9 2>&1 | tail -n +3
    fi
  done
done
for width in 512 1024; do
  for i in 1 2 3; do
    for n in 2 4; do
      tp=$((n / 2))
      rm -rf "${logs:?}"/*
      timeout 120 "$sfrun" -n $n --timeout 60 --log-dir "$logs" -- "$new" --stages 2 --tp $tp --width $width \
        --micro-batches 8 --schedules 1f1b gpipe --steps 9 >/dev/null || echo "sfrun -n $n failed"
      echo "== processes=$n tp=$tp width=$width run $i"
      tail -n +3 "$logs"/*/rank.0/stdout
    done
  done
done
