#!/usr/bin/env bash
# The GPT decoder on 1 device against PyTorch (bench/gpt_peer_torch.py, Debian's python3-torch):
# both train the same model from the same initial weights on the same batches (gpt_tokens --dump),
# so their losses must agree at every step before their speeds mean anything. Prints the largest
# relative loss difference over all runs (fails above 1e-4) and a markdown table of tokens/s.
#   bash bench/compare_gpt_torch.sh [REPS]   (needs bench/gpt_tokens built in ./build and python3-torch)
# Env: BUILD (./build), STEPS (50: the first rep of each thread count, whose every loss is
# checked), SPEED_STEPS (20: the other reps, timed the same way and also checked), ARGS (more
# gpt_tokens options, e.g. "--layers 2"; the default size is 4 layers, hidden 256, 4 heads,
# seq 128, batch 8). Each cell is the median over REPS runs, PyTorch and shardflow alternating.
# 1 thread: both with OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1. 2 threads: PyTorch with
# OPENBLAS_NUM_THREADS=2 OMP_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE and torch.set_num_threads(2)
# (bench/compare_pytorch.sh's setting), shardflow with --threads 2 (actor workers, the batch cut
# into one row block per thread; OpenBLAS single-threaded per call).
# The last column lists each back-to-back pair's own ratio: on a machine shared with other work
# the load moves between pairs, and a pair's two runs see about the same load.
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-3}
build=${BUILD:-./build}
steps=${STEPS:-50}
speed_steps=${SPEED_STEPS:-20}
read -r -a extra <<< "${ARGS:-}"
peer=bench/gpt_peer_torch.py
[ -x "$build/bench/gpt_tokens" ] || { echo "no $build/bench/gpt_tokens: cmake --build $build --target gpt_tokens" >&2; exit 1; }
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c "import torch, numpy" 2>/dev/null || {
  echo "needs Debian's python3-torch: apt-get install python3-torch" >&2; exit 1; }

work=$(mktemp -d /tmp/sf_gpt_torch.XXXXXX)
trap 'rm -rf "$work"' EXIT
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
rate() { awk -F, '/^RESULT/ {print $9}' "$1"; }
# The largest |ours - torch| / |torch| over the steps both printed; fails if a step is missing.
loss_diff() {
  awk -F, 'FNR == 1 {f++} /^step/ {if (f == 1) a[$2] = $3; else b[$2] = $3}
    END {m = 0; n = 0; for (k in b) {if (!(k in a)) {print "missing step " k > "/dev/stderr"; exit 1}
         d = a[k] - b[k]; if (d < 0) d = -d; r = d / (b[k] < 0 ? -b[k] : b[k]); if (r > m) m = r; n++}
         if (n == 0) {print "no loss lines" > "/dev/stderr"; exit 1}; printf "%.3g %d\n", m, n}' "$1" "$2"
}

echo "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}; $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg);" \
  "$(date -u +%F' '%H:%M) UTC; gpt_tokens ${extra[*]:-(default size)}"
# The weights and the $steps batches both sides train on; the shorter speed runs use their first batches.
OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 "$build/bench/gpt_tokens" "${extra[@]}" --steps "$steps" --threads 1 \
  --dump "$work/dump" > /dev/null
worst=0
declare -A torch_med ours_med pairs
for t in 1 2; do
  torch_env=(OPENBLAS_NUM_THREADS=$t OMP_NUM_THREADS=$t)
  [ "$t" -gt 1 ] && torch_env+=(OMP_WAIT_POLICY=PASSIVE)
  for r in $(seq "$reps"); do
    n=$([ "$r" -eq 1 ] && echo "$steps" || echo "$speed_steps")
    env "${torch_env[@]}" /usr/bin/python3 "$peer" "$work/dump" --threads "$t" --steps "$n" > "$work/torch.$t.$r"
    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 "$build/bench/gpt_tokens" "${extra[@]}" --steps "$n" --threads "$t" \
      > "$work/ours.$t.$r"
    read -r diff count < <(loss_diff "$work/ours.$t.$r" "$work/torch.$t.$r")
    echo "threads $t rep $r: $count steps, max relative loss difference $diff;" \
      "PyTorch $(rate "$work/torch.$t.$r") tokens/s, shardflow $(rate "$work/ours.$t.$r") tokens/s"
    pairs[$t]+="$(awk -v s="$(rate "$work/ours.$t.$r")" -v p="$(rate "$work/torch.$t.$r")" \
      'BEGIN {printf "%.2f ", s / p}')"
    worst=$(awk -v a="$worst" -v b="$diff" 'BEGIN {print (b > a ? b : a)}')
  done
  torch_med[$t]=$(for r in $(seq "$reps"); do rate "$work/torch.$t.$r"; done | median)
  ours_med[$t]=$(for r in $(seq "$reps"); do rate "$work/ours.$t.$r"; done | median)
done
echo
echo "max relative loss difference over every step of every run: $worst (limit 1e-4)"
echo
echo "| threads | PyTorch tokens/s | shardflow tokens/s | ratio | ratio of each pair |"
echo "|---|---|---|---|---|"
for t in 1 2; do
  ratio=$(awk -v s="${ours_med[$t]}" -v p="${torch_med[$t]}" 'BEGIN {printf "%.2fx", s / p}')
  echo "| $t | ${torch_med[$t]} | ${ours_med[$t]} | $ratio | ${pairs[$t]% } |"
done
if awk -v w="$worst" 'BEGIN {exit !(w > 1e-4)}'; then
  echo "FAIL: the losses differ by $worst relative (> 1e-4): the two sides do not compute the same model" >&2
  exit 1
fi
