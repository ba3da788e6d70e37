#!/usr/bin/env bash
# Step time of each seed script (python/examples/) against its C++ example, in one run on the
# same machine, and the import time of the package (docs/python.md, "Benchmarks").
#
#   bash bench/compare_python.sh [build-dir]      # REPEAT=5 for more runs per figure (default 3)
#
# Each program runs its seed's ten epochs on Fashion-MNIST cut to two sizes; the time per step
# is the difference of the two wall times over the difference of their step counts, so
# start-up, imports and tracing cancel out and the ratio is of the steps alone. Each wall time
# is the median of REPEAT runs, the C++ and Python runs taken in turn so that both see the
# same load. Target: the script's step time within 1.05x the C++ example's.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
python=${PYTHON:-/usr/bin/python3}
[ -x "$python" ] || python=python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export PYTHONPATH="$PWD/$build/python${PYTHONPATH:+:$PYTHONPATH}"

"$python" - "$work" <<'PY'
import sys
sys.path.insert(0, "tests/python")
from conftest import write_small_mnist
for rows in (640, 3200):
    write_small_mnist(f"{sys.argv[1]}/rows{rows}", rows, 1000)
PY

seconds() {  # wall seconds of a command run in a scratch folder, its output kept in $work/last.log
  local dir
  dir=$(mktemp -d -p "$work")
  local t0 t1
  t0=$(date +%s.%N)
  (cd "$dir" && "$@") > "$work/last.log" 2>&1 || { echo "failed: $*" >&2; tail -20 "$work/last.log" >&2; exit 1; }
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }'
}

repeat=${REPEAT:-3}
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

ex="$PWD/$build/examples"
py="$PWD/python/examples"
sfrun="$PWD/$build/tools/sfrun/sfrun"
printf '%-30s %-22s %10s %10s %7s\n' "seed" "launch" "C++ ms" "Python ms" "ratio"
row() {  # row NAME LAUNCH SMALL_STEPS LARGE_STEPS CXX_CMD PY_CMD: ms per step of each, and their ratio
  local name=$1 launch=$2 small=$3 large=$4 cxx=$5 python_cmd=$6 rows side i
  declare -A times
  for rows in 640 3200; do
    for side in cxx py; do : > "$work/$side.$rows"; done
    for ((i = 0; i < repeat; i++)); do
      DATA_DIR="$work/rows$rows" seconds bash -c "$cxx" >> "$work/cxx.$rows"
      DATA_DIR="$work/rows$rows" seconds bash -c "$python_cmd" >> "$work/py.$rows"
    done
    for side in cxx py; do times[$side.$rows]=$(median < "$work/$side.$rows"); done
  done
  local c p
  c=$(awk -v a="${times[cxx.640]}" -v b="${times[cxx.3200]}" -v s="$small" -v l="$large" 'BEGIN { print (b - a) * 1000 / (l - s) }')
  p=$(awk -v a="${times[py.640]}" -v b="${times[py.3200]}" -v s="$small" -v l="$large" 'BEGIN { print (b - a) * 1000 / (l - s) }')
  printf '%-30s %-22s %10.3f %10.3f %7.3f\n' "$name" "$launch" "$c" "$p" "$(awk -v p="$p" -v c="$c" 'BEGIN { print p / c }')"
}
# Ten epochs of 640 / 3200 rows in batches of 32: 200 / 1000 steps (per rank for data parallel).
row seed004_data_parallel "1 process" 200 1000 \
  "$ex/data_parallel --data-dir \$DATA_DIR --epochs 10 --print-every 10" \
  "DATA_PATH=\$DATA_DIR $python $py/seed004_data_parallel.py"
row seed004_data_parallel "sfrun -n 2" 100 500 \
  "$sfrun -n 2 -- $ex/data_parallel --data-dir \$DATA_DIR --epochs 10 --print-every 10" \
  "DATA_PATH=\$DATA_DIR $sfrun -n 2 -- $python $py/seed004_data_parallel.py"
row seed000_manual_parallel "1 process" 200 1000 \
  "$ex/manual_parallel --data-dir \$DATA_DIR --epochs 10" \
  "DATA_PATH=\$DATA_DIR $python $py/seed000_manual_parallel.py"
row seed001_operator_parallel "8 virtual devices" 200 1000 \
  "$ex/operator_parallel --devices 8 --data-dir \$DATA_DIR --epochs 10 --print-every 10" \
  "DATA_PATH=\$DATA_DIR $python -m shardflow.launch --devices 8 $py/seed001_operator_parallel.py"
row seed001_operator_parallel "sfrun -n 8" 200 1000 \
  "$sfrun -n 8 -- $ex/operator_parallel --data-dir \$DATA_DIR --epochs 10 --print-every 10" \
  "DATA_PATH=\$DATA_DIR $sfrun -n 8 -- $python $py/seed001_operator_parallel.py"

import_s=$("$python" -c "import time; t = time.perf_counter(); import shardflow; print(time.perf_counter() - t)")
printf 'import shardflow: %.3f s (target < 0.5 s)\n' "$import_s"
