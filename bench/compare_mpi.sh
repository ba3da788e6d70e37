#!/usr/bin/env bash
# Runs the Open MPI peer (../shared/peers/mpi_allreduce_bench.c, its "osu" timing) and
# sfbench_comm (inproc threads and the mpi transport) back to back for f32 sum AllReduce at 2
# and 4 ranks, and prints a markdown table of the mean time per call (OSU convention: each
# call timed alone, untimed barrier between calls, mean over ranks) and the ratios
# Open MPI time / ours (above 1: ours is faster).
#   bash bench/compare_mpi.sh                 (needs a build with build/bench/sfbench_comm)
#   BUILD=/path/to/build SIZES=4K,64K BUDGET=0.4 bash bench/compare_mpi.sh
# Builds nothing, except the peer (mpicc -O2 into $BUILD/bench/peer_mpi_allreduce_bench) when
# that binary is missing. All MPI runs: --mca pml ob1 --mca btl self,vader (shared memory),
# plain environment (no GLIBC_TUNABLES); 4 ranks oversubscribe the machine's 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-./build}
sizes=${SIZES:-4K,64K,1M,16M}
budget=${BUDGET:-0.4}
peer_src=${PEER:-../shared/peers/mpi_allreduce_bench.c}
peer=$build/bench/peer_mpi_allreduce_bench
ours=$build/bench/sfbench_comm
mpirun_=(mpirun --oversubscribe --allow-run-as-root --mca pml ob1 --mca btl self,vader)

[ -x "$ours" ] || { echo "no $ours: build the sfbench_comm target first (or set BUILD)" >&2; exit 1; }
if [ ! -x "$peer" ]; then
  mkdir -p "$(dirname "$peer")"
  mpicc -O2 -o "$peer" "$peer_src" -lm
fi

# Each prints "bytes us errors" per size.
peer_rows() {  # ranks
  "${mpirun_[@]}" -np "$1" "$peer" -o allreduce -s "$sizes" -t "$budget" |
    awk -F, '$1 == "RESULT" && $3 == "osu" {print $5, $7, $12}'
}
ours_rows() {  # transport ranks
  local cmd=("$ours" --transport "$1" --op allreduce --sizes "$sizes" --budget "$budget")
  if [ "$1" = mpi ]; then cmd=("${mpirun_[@]}" -np "$2" "${cmd[@]}"); else cmd+=(--ranks "$2"); fi
  "${cmd[@]}" | awk -F, '$1 == "RESULT" {print $5, $6, $10}'
}

echo "$(nproc) cores; $(mpirun --version 2>/dev/null | head -1); budget ${budget} s per size; $(date -u +%F' '%H:%M) UTC"
echo
echo "| ranks | bytes | Open MPI (us) | shardflow inproc (us) | shardflow mpi (us) | ratio inproc | ratio mpi | errors (ompi/inproc/mpi) |"
echo "|---|---|---|---|---|---|---|---|"
for np in 2 4; do
  p=$(peer_rows "$np"); i=$(ours_rows inproc "$np"); m=$(ours_rows mpi "$np")
  paste -d' ' <(echo "$p") <(echo "$i") <(echo "$m") | awk -v np="$np" '{
    printf "| %d | %d | %.1f | %.1f | %.1f | %.2f | %.2f | %d/%d/%d |\n",
           np, $1, $2, $5, $8, $2 / $5, $2 / $8, $3, $6, $9 }'
done
