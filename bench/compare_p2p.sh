#!/usr/bin/env bash
# Point-to-point between two processes on this host, side by side in one run: the zmq
# transport (tensors over its lanes, bench/p2p_bench.cc) against a plain TCP send/recv loop of
# the same bytes on loopback (the baseline, in the same program). Ping-pong, time per one-way
# message; the target is zmq >= 0.9x the loop's bandwidth at 1 MiB and 16 MiB.
#   bash bench/compare_p2p.sh [ROUNDS]     (BUILD=build, SIZES=4K,64K,1M,16M, BUDGET=0.5)
# Each round runs the loop, then zmq over tcp, then zmq over ipc (unix sockets), alternating so
# that the machine's load falls on all alike; the table gives the median of the rounds.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
build=${BUILD:-build}
sizes=${SIZES:-4K,64K,1M,16M}
budget=${BUDGET:-0.5}
bin=$build/bench/sfbench_p2p
[ -x "$bin" ] || { echo "needs $bin: cmake --build $build --target sfbench_p2p" >&2; exit 1; }
rows=$(mktemp)
trap 'rm -f "$rows"' EXIT
port=29760
for _ in $(seq "$rounds"); do
  for mode in tcp zmq zmq-ipc; do
    port=$((port + 1))
    case $mode in
      zmq-ipc) args=(--mode zmq --zmq-scheme ipc) ;;
      *) args=(--mode "$mode") ;;
    esac
    timeout -s KILL 300 "$bin" "${args[@]}" --sizes "$sizes" --budget "$budget" --port "$port" |
      awk -F, -v m="$mode" '$1 == "RESULT" {print m, $4, $5}' >>"$rows"
  done
done
echo "$(getconf _NPROCESSORS_ONLN) cores; load $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%F' '%H:%M) UTC; median of $rounds rounds"
echo
echo "| bytes | TCP loop µs | zmq tcp µs | zmq/loop | zmq ipc µs | ipc/loop | target |"
echo "|---|---|---|---|---|---|---|"
awk '
  { v[$1, $2, ++n[$1, $2]] = $3; if (!($2 in seen)) { seen[$2] = 1; order[++k] = $2 } }
  function med(m, b,   i, j, t, a, c) {
    c = n[m, b]; for (i = 1; i <= c; ++i) a[i] = v[m, b, i]
    for (i = 1; i <= c; ++i) for (j = i + 1; j <= c; ++j) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return c ? a[int((c + 1) / 2)] : 0
  }
  function human(b) { return b >= 1048576 ? sprintf("%g MiB", b / 1048576) : sprintf("%g KiB", b / 1024) }
  END {
    for (i = 1; i <= k; ++i) {
      b = order[i]; t = med("tcp", b); z = med("zmq", b); p = med("zmq-ipc", b)
      printf "| %s | %.1f | %.1f | %.2fx | %.1f | %.2fx | %s |\n", human(b), t, z, t / z, p, t / p,
             (b >= 1048576 ? ">= 0.9x" : "-")
    }
  }' "$rows"
echo
echo "(zmq/loop = the loop's time / zmq's: above 1 is faster than the loop)"
