#!/usr/bin/env bash
# Data parallel on this machine: samples/s of the seed MLP (bench/train_dp) for 1 rank against
# 2 ranks (processes) over zmq and mpi, and against PyTorch DDP over gloo (2 processes x 1
# thread, ../shared/peers/train_fmnist.py --ddp 2) at the same global batch. Prints markdown
# tables with the ratios and the targets, run back to back in the same environment.
#   bash bench/compare_ddp.sh [REPS]        (BUILD=build-dp to use another build directory)
# Every process runs with OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1. zmq ranks are started with
# sfrun's variables (SF_RANK, SF_WORLD_SIZE, SF_RENDEZVOUS over ipc://, SF_JOB_SECRET); mpi
# ranks by mpirun with vader shared memory. NOFREE=1 runs every side with glibc's heap trimming
# off (../shared/research/peers.md finding 1: fresh pages cost ~11 us each on this VM).
# STAT=max reports the best of the REPS runs instead of the median, for both sides: on a
# machine shared with other work, interference only ever slows a run down.
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-3}
build=${BUILD:-build}
peer=${PEER:-../shared/peers/train_fmnist.py}
bin=$build/bench/train_dp
[ -x "$bin" ] || { echo "needs $bin: ninja -C $build train_dp" >&2; exit 1; }
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
[ "${NOFREE:-0}" = 1 ] && export GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=4294967296

stat=${STAT:-median}
median() {
  if [ "$stat" = max ]; then sort -g | tail -1; else sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; fi
}
rate() { awk -F, -v c=$([ "$stat" = max ] && echo 10 || echo 8) '/^RESULT/ {print $c}'; }
one_rank() { "$bin" --batch "$1" --reps "$reps" | rate; }
zmq_ranks() {  # per-rank batch: 2 processes with sfrun's variables; rank 0 prints the result
  local dir secret pids=() out
  dir=$(mktemp -d)
  secret=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
  for r in 0 1; do
    SF_RANK=$r SF_WORLD_SIZE=2 SF_LOCAL_RANK=$r SF_RENDEZVOUS="ipc://$dir/rendezvous" SF_JOB_SECRET=$secret \
      timeout -s KILL 600 "$bin" --batch "$1" --reps "$reps" >"$dir/out.$r" &
    pids+=($!)
  done
  wait "${pids[@]}"
  rate <"$dir/out.0"
  rm -rf "$dir"
}
mpi_ranks() {
  timeout -s KILL 600 mpirun -np 2 --allow-run-as-root --mca pml ob1 --mca btl self,vader \
    -x OPENBLAS_NUM_THREADS -x OMP_NUM_THREADS ${GLIBC_TUNABLES:+-x GLIBC_TUNABLES} "$bin" --batch "$1" --reps "$reps" | rate
}
ddp_rate() {  # global batch
  for _ in $(seq "$reps"); do
    /usr/bin/python3 "$peer" --ddp 2 --threads 1 --batch "$1" | awk -F, '/^RESULT/ {print $9}'
  done | median
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2fx", a / b}'; }

echo "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}; NOFREE=${NOFREE:-0}; $(getconf _NPROCESSORS_ONLN) cores; load $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%F' '%H:%M) UTC"
echo
echo "| batch per rank | 1 rank | 2 ranks zmq | ratio | 2 ranks mpi | ratio | target |"
echo "|---|---|---|---|---|---|---|"
for b in 32 256; do
  one=$(one_rank "$b"); z=$(zmq_ranks "$b"); m=$(mpi_ranks "$b")
  target=$([ "$b" = 32 ] && echo ">= 1.4x" || echo ">= 1.7x")
  echo "| $b | $one | $z | $(ratio "$z" "$one") | $m | $(ratio "$m" "$one") | $target |"
done
echo
echo "| global batch | PyTorch DDP gloo 2x1 | shardflow 2 ranks zmq | ratio | shardflow 2 ranks mpi | ratio | target |"
echo "|---|---|---|---|---|---|---|"
for g in 32 256; do
  p=$(ddp_rate "$g"); z=$(zmq_ranks $((g / 2))); m=$(mpi_ranks $((g / 2)))
  target=$([ "$g" = 32 ] && echo ">= 2x (zmq)" || echo ">= 1.5x (zmq)")
  echo "| $g | $p | $z | $(ratio "$z" "$p") | $m | $(ratio "$m" "$p") | $target |"
done
echo
echo "(samples/s, the $stat of $reps runs of one epoch each; shardflow: rank 0's clock)"
