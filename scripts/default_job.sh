#!/usr/bin/env bash
# The default job, once built (README command 1 runs it): seed 001's network, operator-parallel
# on 8 virtual devices in one process, one epoch of Fashion-MNIST through Model.train; prints
# rank 0's loss lines and the test accuracy, writes every rank's parallel IR to saved_graph/
# and every rank's log to log_output/<job>/rank.<r>/stdout. Extra arguments go to the program
# after these defaults and override them (the last of a repeated option wins), e.g.
#   SF_BUILD_DIR=build scripts/default_job.sh --epochs 10 --devices 4
set -euo pipefail
build=${SF_BUILD_DIR:-$(cd "$(dirname "$0")/.." && pwd)/build}
exec "$build/examples/operator_parallel" --devices 8 --api model --epochs 1 --print-every 100 \
  --save-graphs saved_graph "$@"
