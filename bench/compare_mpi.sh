#!/usr/bin/env bash
# Side by side, in one run: Open MPI's own collectives (../shared/peers/mpi_allreduce_bench.c,
# its "osu" timing) over shared memory (vader) and over tcp loopback, PyTorch gloo's all_reduce
# (../shared/peers/torch_allreduce_bench.py, AllReduce only), and sfbench_comm over the inproc,
# zmq (one process per rank, joined through sfrun's variables over tcp on 127.0.0.1, the way
# users run it) and mpi transports; every op at 2 and 4 ranks by default. Prints one markdown table with the
# mean time per call (OSU convention: each call timed alone, untimed barrier between calls,
# mean over ranks) and the ratios the targets are stated in (issue 3):
#   mpi/vader    = Open MPI vader time / our mpi transport's time  (target >= 0.95)
#   inproc/vader = our inproc bus bandwidth / Open MPI vader's      (target >= 1.0 at 16 MiB)
#                  (same bytes and bus factor on both sides, so also a time ratio)
#   zmq/gloo     = gloo time / our zmq transport's time             (target >= 1.5 at 16 MiB)
#   zmq/tcp      = Open MPI tcp time / our zmq transport's time     (target >= 0.91 at 16 MiB,
#                  >= 0.67 at 4 KiB; AllGather and ReduceScatter >= 0.9 from 64 KiB to 16 MiB)
#   bash bench/compare_mpi.sh                 (needs build/bench/sfbench_comm)
#   BUILD=build-perf RANKS="2 4" OPS=allreduce SIZES=4K,16M BUDGET=0.4 GLOO=0 bash bench/compare_mpi.sh
#   NOFREE=1 bash bench/compare_mpi.sh   (every program, peers included, with glibc's heap kept:
#     GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=4294967296, the
#     "nofree" rows of ../shared/research/peers.md: first-touch page faults of per-call
#     temporaries, ~11 µs per 4 KiB page here, then no longer decide the comparison)
# Builds nothing but the peer (mpicc -O2 into $BUILD/bench/peer_mpi_allreduce_bench) when that
# binary is missing. All MPI runs: --mca pml ob1 and the plain environment (no GLIBC_TUNABLES);
# tcp adds --mca btl_tcp_if_include lo. gloo runs under Debian's /usr/bin/python3 (torch) with
# one thread per rank. More ranks than cores oversubscribe the machine (marked *).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-./build}
ranks_list=${RANKS:-2 4}
sizes=${SIZES:-4K,64K,1M,16M,64M}
ops=${OPS:-allreduce,allgather,reducescatter,broadcast,alltoall}
budget=${BUDGET:-0.4}
gloo=${GLOO:-1}
peer_src=${PEER:-../shared/peers/mpi_allreduce_bench.c}
gloo_src=${GLOO_BENCH:-../shared/peers/torch_allreduce_bench.py}
peer=$build/bench/peer_mpi_allreduce_bench
ours=$build/bench/sfbench_comm
mpirun_=(mpirun --oversubscribe --allow-run-as-root --mca pml ob1)
vader=(--mca btl self,vader)
tcp=(--mca btl self,tcp --mca btl_tcp_if_include lo)
cores=$(nproc)
if [ "${NOFREE:-0}" = 1 ]; then
  export GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=4294967296
  mpirun_+=(-x GLIBC_TUNABLES)
fi

[ -x "$ours" ] || { echo "no $ours: build the sfbench_comm target first (or set BUILD)" >&2; exit 1; }
if [ ! -x "$peer" ]; then
  mkdir -p "$(dirname "$peer")"
  mpicc -O2 -o "$peer" "$peer_src" -lm
fi

zmq_procs() {  # np cmd...: one process per rank, joined over tcp on 127.0.0.1; rank 0's stdout
  local np=$1 dir pids=() r
  shift
  dir=$(mktemp -d)
  for r in $(seq 0 $((np - 1))); do
    SF_RANK=$r SF_WORLD_SIZE=$np SF_LOCAL_RANK=$r SF_RENDEZVOUS="tcp://127.0.0.1:$port" SF_JOB_SECRET=compare_mpi \
      timeout -s KILL 600 "$@" >"$dir/out.$r" &
    pids+=($!)
  done
  wait "${pids[@]}" || true
  cat "$dir/out.0"
  rm -rf "$dir"
}

peer_op() {  # our op name -> the peer's
  case $1 in reducescatter) echo reduce_scatter ;; broadcast) echo bcast ;; *) echo "$1" ;; esac
}

# Every source prints "source op ranks bytes us errors" lines into $rows.
rows=$(mktemp)
trap 'rm -f "$rows"' EXIT
port=29650
for np in $ranks_list; do
  for op in ${ops//,/ }; do
    for btl in vader tcp; do
      [ $btl = vader ] && b=("${vader[@]}") || b=("${tcp[@]}")
      "${mpirun_[@]}" "${b[@]}" -np "$np" "$peer" -o "$(peer_op "$op")" -s "$sizes" -t "$budget" |
        awk -F, -v s="ompi_$btl" -v op="$op" '$1 == "RESULT" && $3 == "osu" {print s, op, $4, $5, $7, $12}' >> "$rows"
    done
    for transport in inproc zmq mpi; do
      cmd=("$ours" --transport "$transport" --op "$op" --sizes "$sizes" --budget "$budget")
      case $transport in
        mpi) cmd=("${mpirun_[@]}" "${vader[@]}" -np "$np" "${cmd[@]}") ;;
        zmq) port=$((port + 1)); cmd=(zmq_procs "$np" "${cmd[@]}") ;;
        *) cmd+=(--ranks "$np") ;;
      esac
      "${cmd[@]}" | awk -F, -v s="$transport" '$1 == "RESULT" {print s, $4, $3, $5, $6, $10}' >> "$rows"
    done
    if [ "$gloo" = 1 ] && [ "$op" = allreduce ]; then
      port=$((port + 1))
      OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 GLOO_SOCKET_IFNAME=lo /usr/bin/python3 "$gloo_src" --nproc "$np" \
        --sizes "$sizes" --budget "$budget" --port "$port" 2>/dev/null |
        awk -F, '$1 == "RESULT" && $3 == "osu" {print "gloo", "allreduce", $4, $5, $7, $12}' >> "$rows"
    fi
  done
done

echo "$cores cores; $(mpirun --version 2>/dev/null | head -1); budget ${budget} s per size; $(date -u +%F' '%H:%M) UTC; load $(cut -d' ' -f1-3 /proc/loadavg); GLIBC_TUNABLES=${GLIBC_TUNABLES:-}"
echo "time per call in µs; * = more ranks than cores (oversubscribed); errors: wrong elements over all sources"
echo
echo "| op | ranks | bytes | Open MPI vader | Open MPI tcp | gloo | inproc | zmq | mpi | mpi/vader | inproc/vader | zmq/gloo | zmq/tcp | errors |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
awk -v cores="$cores" -v ops="$ops" -v ranks="$ranks_list" '
  { t[$1, $2, $3, $4] = $5; err[$2, $3, $4] += $6
    if (!(($2, $3, $4) in seen)) { seen[$2, $3, $4] = 1; list[$2, $3, ++n[$2, $3]] = $4 } }
  function cell(v) { return v == "" ? "-" : sprintf("%.1f", v) }
  function ratio(a, b) { return (a == "" || b == "" || b == 0) ? "-" : sprintf("%.2f", a / b) }
  function human(b) { return b >= 1048576 ? sprintf("%g MiB", b / 1048576) : sprintf("%g KiB", b / 1024) }
  END {
    no = split(ops, os, ","); nr = split(ranks, rs, " ")
    for (o = 1; o <= no; ++o) for (r = 1; r <= nr; ++r) for (i = 1; i <= n[os[o], rs[r]]; ++i) {
      op = os[o]; np = rs[r]; b = list[op, np, i]
      v = t["ompi_vader", op, np, b]; c = t["ompi_tcp", op, np, b]; g = t["gloo", op, np, b]
      ip = t["inproc", op, np, b]; z = t["zmq", op, np, b]; m = t["mpi", op, np, b]
      printf "| %s | %d%s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d |\n", op, np, (np > cores ? "*" : ""),
             human(b), cell(v), cell(c), cell(g), cell(ip), cell(z), cell(m), ratio(v, m), ratio(v, ip), ratio(g, z),
             ratio(c, z), err[op, np, b]
    }
  }' "$rows"
