#!/usr/bin/env bash
# The `sfbench comm` table: sfbench_comm for every op (AllReduce, AllGather, ReduceScatter,
# Broadcast, AlltoAll) x size x ranks x transport, as one markdown table per op with the time
# per call (OSU timing, µs), and the algorithm and bus bandwidth (nccl-tests definitions, GB/s)
# of each cell. Raw CSV rows (sfbench_comm's RESULT lines) go to $CSV if set.
#   bash bench/comm_table.sh                    (needs build/bench/sfbench_comm)
#   BUILD=build-perf RANKS="2 4" SIZES=4K,16M TRANSPORTS="inproc mpi" BUDGET=0.2 bash bench/comm_table.sh
# Transports: inproc (threads of one process), zmq (threads of one process over tcp sockets on
# 127.0.0.1, make_zmq_world), mpi (one process per rank under mpirun, shared memory: --mca pml
# ob1 --mca btl self,vader).
# NOFREE=1 runs every program with glibc's heap kept (GLIBC_TUNABLES, see compare_mpi.sh).
# The project's machines have 2 cores: 4 and 8 ranks are oversubscribed (marked *), so their
# figures measure scheduling as much as the transport.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-./build}
ranks_list=${RANKS:-2 4 8}
sizes=${SIZES:-4K,64K,1M,16M,64M}
transports=${TRANSPORTS:-inproc zmq mpi}
budget=${BUDGET:-0.2}
ops=${OPS:-allreduce,allgather,reducescatter,broadcast,alltoall}
ours=$build/bench/sfbench_comm
mpirun_=(mpirun --oversubscribe --allow-run-as-root --mca pml ob1 --mca btl self,vader)
cores=$(nproc)
if [ "${NOFREE:-0}" = 1 ]; then
  export GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=4294967296
  mpirun_+=(-x GLIBC_TUNABLES)
fi

[ -x "$ours" ] || { echo "no $ours: build the sfbench_comm target first (or set BUILD)" >&2; exit 1; }

rows=$(mktemp)
trap 'rm -f "$rows"' EXIT
for transport in $transports; do
  for np in $ranks_list; do
    cmd=("$ours" --transport "$transport" --op "$ops" --sizes "$sizes" --budget "$budget")
    case $transport in
      inproc | zmq) cmd+=(--ranks "$np") ;;
      mpi) cmd=("${mpirun_[@]}" -np "$np" "${cmd[@]}") ;;
      *) echo "unknown transport $transport" >&2; exit 1 ;;
    esac
    "${cmd[@]}" | grep '^RESULT' >> "$rows" || { echo "failed: ${cmd[*]}" >&2; exit 1; }
  done
done
[ -n "${CSV:-}" ] && cp "$rows" "$CSV"

echo "$cores cores; budget ${budget} s per cell; $(date -u +%F' '%H:%M) UTC; load $(cut -d' ' -f1-3 /proc/loadavg); GLIBC_TUNABLES=${GLIBC_TUNABLES:-}"
echo "cell: time per call in µs (algorithm) busbw GB/s; * = more ranks than cores (oversubscribed)"
# RESULT,transport,ranks,op,bytes,us,algbw,busbw,iters,errors,algorithm
awk -F, -v cores="$cores" -v transports="$transports" -v ranks="$ranks_list" '
  { key = $4 SUBSEP $5 SUBSEP $2 SUBSEP $3
    cell[key] = sprintf("%.1f (%s) %.2f", $6, $11, $8); if ($10 != 0) cell[key] = cell[key] " ERR" $10
    if (!($4 in seen_op)) { seen_op[$4] = 1; op_order[++nops] = $4 }
    if (!(($4, $5) in seen_size)) { seen_size[$4, $5] = 1; sizes[$4, ++nsizes[$4]] = $5 } }
  function human(b) { return b >= 1048576 ? sprintf("%g MiB", b / 1048576) : sprintf("%g KiB", b / 1024) }
  END {
    nt = split(transports, ts, " "); nr = split(ranks, rs, " ")
    for (o = 1; o <= nops; ++o) {
      op = op_order[o]; head = "| " op " | "; line = "|---|"
      for (t = 1; t <= nt; ++t) for (r = 1; r <= nr; ++r) {
        head = head ts[t] " " rs[r] (rs[r] > cores ? "*" : "") " | "; line = line "---|" }
      print ""; print head; print line
      for (s = 1; s <= nsizes[op]; ++s) {
        b = sizes[op, s]; row = "| " human(b) " | "
        for (t = 1; t <= nt; ++t) for (r = 1; r <= nr; ++r) {
          k = op SUBSEP b SUBSEP ts[t] SUBSEP rs[r]; row = row ((k in cell) ? cell[k] : "-") " | " }
        print row
      }
    }
  }' "$rows"
