#!/usr/bin/env bash
# What the mpi transport adds to Open MPI per call, side by side in one run, over shared memory
# (vader), for small and mid-sized collectives. Per op, rank count and size, the median over
# REPEATS runs (runs interleaved, so load drifts alike) of the OSU-style mean time per call of:
#   blocking     Open MPI's blocking collective (../shared/peers/mpi_allreduce_bench.c, osu row)
#   nonblocking  Open MPI's non-blocking collective completed by polling MPI_Test
#                (bench/mpi_nonblocking_floor.c): the calls the transport's native collectives
#                make, so the floor under its figure
#   mpi          sfbench_comm --transport mpi (the comm layer and the fabric included)
# and mpi/blocking (the issue's target: <= 1.5 at 4 KiB) and mpi - nonblocking (µs the transport
# adds on top of the MPI calls it makes).
#   bash bench/compare_mpi_latency.sh                 (needs build/bench/sfbench_comm)
#   REPEATS=5 OPS=allreduce SIZES=4K RANKS=2 bash bench/compare_mpi_latency.sh
# Builds the two C programs with mpicc -O2 into $BUILD/bench/ when they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-./build}
ranks_list=${RANKS:-2 4}
sizes=${SIZES:-4K,64K,1M}
ops=${OPS:-allreduce,allgather}
repeats=${REPEATS:-3}
budget=${BUDGET:-0.3}
ours=$build/bench/sfbench_comm
blocking=$build/bench/peer_mpi_allreduce_bench
nonblocking=$build/bench/mpi_nonblocking_floor
mpirun_=(mpirun --oversubscribe --allow-run-as-root --mca pml ob1 --mca btl self,vader)
cores=$(nproc)

[ -x "$ours" ] || { echo "no $ours: build the sfbench_comm target first (or set BUILD)" >&2; exit 1; }
mkdir -p "$build/bench"
[ -x "$blocking" ] || mpicc -O2 -o "$blocking" ../shared/peers/mpi_allreduce_bench.c -lm
[ -x "$nonblocking" ] || mpicc -O2 -o "$nonblocking" bench/mpi_nonblocking_floor.c

peer_op() {  # our op name -> the peers'
  case $1 in reducescatter) echo reduce_scatter ;; broadcast) echo bcast ;; *) echo "$1" ;; esac
}

rows=$(mktemp)  # "source op ranks bytes us"
trap 'rm -f "$rows"' EXIT
for rep in $(seq "$repeats"); do
  for np in $ranks_list; do
    for op in ${ops//,/ }; do
      "${mpirun_[@]}" -np "$np" "$blocking" -o "$(peer_op "$op")" -s "$sizes" -t "$budget" |
        awk -F, -v op="$op" '$1 == "RESULT" && $3 == "osu" {print "blocking", op, $4, $5, $7}' >> "$rows"
      "${mpirun_[@]}" -np "$np" "$nonblocking" -o "$(peer_op "$op")" -s "$sizes" -t "$budget" |
        awk -F, -v op="$op" '$1 == "RESULT" {print "nonblocking", op, $4, $5, $7}' >> "$rows"
      "${mpirun_[@]}" -np "$np" "$ours" --transport mpi --op "$op" --sizes "$sizes" --budget "$budget" |
        awk -F, '$1 == "RESULT" {print "mpi", $4, $3, $5, $6}' >> "$rows"
    done
  done
done

echo "$cores cores; $(mpirun --version 2>/dev/null | head -1); vader; median of $repeats runs, ${budget} s per size; $(date -u +%F' '%H:%M) UTC; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "time per call in µs; * = more ranks than cores (oversubscribed)"
echo
echo "| op | ranks | bytes | Open MPI blocking | Open MPI non-blocking + MPI_Test | mpi transport | mpi/blocking | mpi − non-blocking (µs) |"
echo "|---|---|---|---|---|---|---|---|"
sort -k1,1 -k2,2 -k3,3n -k4,4n -k5,5g "$rows" | awk -v cores="$cores" '
  { k = $2 SUBSEP $3 SUBSEP $4; v[$1, k, ++c[$1, k]] = $5
    if (!(k in seen)) { seen[k] = 1; order[++n] = k } }
  function median(s, k,   m) { m = c[s, k]; if (m == 0) return ""; return m % 2 ? v[s, k, (m + 1) / 2] : (v[s, k, m / 2] + v[s, k, m / 2 + 1]) / 2 }
  function human(b) { return b >= 1048576 ? sprintf("%g MiB", b / 1048576) : sprintf("%g KiB", b / 1024) }
  END {
    for (i = 1; i <= n; ++i) {
      split(order[i], f, SUBSEP); b = median("blocking", order[i]); nb = median("nonblocking", order[i]); m = median("mpi", order[i])
      printf "| %s | %d%s | %s | %.2f | %.2f | %.2f | %.2f | %+.2f |\n", f[1], f[2], (f[2] > cores ? "*" : ""), human(f[3]), b, nb, m,
             m / b, m - nb
    }
  }'
