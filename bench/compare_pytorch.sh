#!/usr/bin/env bash
# Runs bench/train_mlp and the PyTorch reference (../shared/peers/train_fmnist.py, Debian's
# python3-torch) back to back in the same environment, and prints a markdown table.
#   bash bench/compare_pytorch.sh [REPS]     (needs a build in ./build and python3-torch)
# 1 thread: both with OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1. 2 threads: PyTorch with
# OPENBLAS_NUM_THREADS=2 OMP_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE (its best setting here),
# shardflow with --threads 2 (actor workers; OpenBLAS single-threaded per call).
# PyTorch runs twice: as is, and with glibc's heap trimming off ("nofree"), which removes
# its bimodal page-fault slowdowns on these machines; ratios are against the faster median.
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-3}
peer=${PEER:-../shared/peers/train_fmnist.py}
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c "import torch" 2>/dev/null || {
  echo "needs Debian's python3-torch: apt-get install python3-torch" >&2; exit 1; }

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
nofree=GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=4294967296
torch_rate() {  # threads batch [extra env]
  local t=$1 b=$2 env=(OPENBLAS_NUM_THREADS=$1 OMP_NUM_THREADS=$1 ${3:-})
  [ "$t" -gt 1 ] && env+=(OMP_WAIT_POLICY=PASSIVE)
  for _ in $(seq "$reps"); do
    env "${env[@]}" /usr/bin/python3 "$peer" --batch "$b" --threads "$t" | awk -F, '/^RESULT/ {print $9}'
  done | median
}
ours_rate() {
  OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 ./build/bench/train_mlp --threads "$1" --batch "$2" --reps "$reps" |
    awk -F, '/^RESULT/ {print $5}'
}

echo "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}; $(nproc) cores; $(date -u +%F' '%H:%M) UTC"
echo
echo "| threads | batch | PyTorch samples/s | PyTorch nofree | shardflow samples/s | ratio to the faster |"
echo "|---|---|---|---|---|---|"
for t in 1 2; do
  for b in 32 256; do
    p=$(torch_rate "$t" "$b"); q=$(torch_rate "$t" "$b" "$nofree"); s=$(ours_rate "$t" "$b")
    ratio=$(awk -v s="$s" -v p="$p" -v q="$q" 'BEGIN {m = p > q ? p : q; printf "%.2fx", s / m}')
    echo "| $t | $b | $p | $q | $s | $ratio |"
  done
done
echo
./build/bench/train_mlp --overhead --reps "$reps" | awk -F, '/^RESULT/ {printf "actor runtime overhead: %s us per op firing (no-op chain of %s ops, %s thread)\n", $5, $4, $3}'
