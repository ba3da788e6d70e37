#!/usr/bin/env bash
# Tensor parallel across processes: the GPT decoder (examples/gpt) at hidden 1024 on TP 2 over 2
# processes — zmq under sfrun and Open MPI under mpirun, with and without sequence parallel —
# against 1 process with 1 thread, back to back in one run (the issue's goal: >= 1.5x tokens/s).
#   bash bench/compare_gpt_tp.sh [REPS]        (needs a build in ./build)
# Each run trains 2 epochs of 3 steps with --time; the second epoch's time per step is the one
# counted (the first includes building the graph and faulting in the buffers). Both sides train
# the same layers on the same batches, so tokens/s per layer compare as tokens/s do. Each cell is
# the median over REPS runs; the ratio is against the 1-process median.
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-3}
gpt=./build/examples/gpt
sfrun=./build/tools/sfrun/sfrun
args=(--layers 2 --hidden 1024 --heads 8 --seq 128 --batch 8 --steps 3 --epochs 2 --print-every 1000
      --valid-batches 0 --dropout 0 --time)
tokens=$((8 * 128))
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# The last "per step time: X ms" line's X: the second epoch's.
step_ms() { awk '/per step time/ {v=$(NF-1)} END {if (v == "") exit 1; print v}'; }
run() {  # kind rep
  case "$1" in
    one) "$gpt" --devices 1 "${args[@]}" | step_ms ;;
    zmq) "$sfrun" -n 2 --log-dir "$logs" --job-id "zmq$2" -- "$gpt" --tp 2 "${args[@]}" >/dev/null
         step_ms <"$logs/zmq$2/rank.0/stdout" ;;
    zmq_sp) "$sfrun" -n 2 --log-dir "$logs" --job-id "zmqsp$2" -- "$gpt" --tp 2 --sp "${args[@]}" >/dev/null
            step_ms <"$logs/zmqsp$2/rank.0/stdout" ;;
    mpi) mpirun --allow-run-as-root --oversubscribe -np 2 "$gpt" --tp 2 "${args[@]}" | step_ms ;;
    mpi_sp) mpirun --allow-run-as-root --oversubscribe -np 2 "$gpt" --tp 2 --sp "${args[@]}" | step_ms ;;
  esac
}

echo "$(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%F' '%H:%M) UTC; ${args[*]}"
declare -A ms
for r in $(seq "$reps"); do
  for k in one zmq mpi zmq_sp mpi_sp; do
    v=$(run "$k" "$r")
    echo "rep $r $k: $v ms per step"
    ms[$k]+="$v "
  done
done
echo
echo "| run | ms per step (median of $reps) | tokens/s | against 1 process, 1 thread |"
echo "|---|---|---|---|"
one=$(echo "${ms[one]}" | tr ' ' '\n' | grep . | median)
for k in one zmq mpi zmq_sp mpi_sp; do
  m=$(echo "${ms[$k]}" | tr ' ' '\n' | grep . | median)
  label=$(case "$k" in one) echo "1 process, 1 thread" ;; zmq) echo "TP 2, 2 processes, zmq (sfrun)" ;;
          mpi) echo "TP 2, 2 processes, Open MPI (mpirun)" ;; zmq_sp) echo "TP 2 + SP, zmq" ;;
          mpi_sp) echo "TP 2 + SP, Open MPI" ;; esac)
  awk -v l="$label" -v m="$m" -v o="$one" -v t="$tokens" \
    'BEGIN {printf "| %s | %.1f | %.0f | %.2fx |\n", l, m, t * 1000 / m, o / m}'
done
