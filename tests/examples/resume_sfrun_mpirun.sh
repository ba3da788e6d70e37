#!/usr/bin/env bash
# A checkpoint saved under `sfrun -n 2` (zmq) resumed under `mpirun -np 2` (mpi) and on 1
# device: data_parallel (Model.train, global batch 64) saves step 30 of 60; each resumed run's
# rank-0 loss lines after step 30 must be those of the uninterrupted run on its own
# configuration (mpirun, 1 device), step for step within 1e-5 relative (the transports and rank
# counts sum in different orders, so the last bits may differ), its test accuracy within 0.005.
#   resume_sfrun_mpirun.sh SFRUN MPIRUN DATA_PARALLEL   (MPIRUN_EXTRA: more mpirun arguments)
set -u
sfrun=$1 mpirun=$2 dp=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/resume-sfrun-mpirun.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
args=(--api model --steps 60 --print-every 5)
mpi=("$mpirun" --oversubscribe --allow-run-as-root --mca pml ob1 --mca btl self,vader ${MPIRUN_EXTRA:-} -np 2)

# run NAME CMD...: runs it with a hard limit; its output in $work/NAME.out, shown if it fails.
run() {
  local name=$1
  shift
  timeout -s KILL 200 "$@" >"$work/$name.out" 2>&1 || { cat "$work/$name.out" >&2; fail "$name: exit $?: $*"; }
}
run save "$sfrun" -n 2 --log-dir "$work/logs" --job-id save -- "$dp" "${args[@]}" --batch 32 \
  --checkpoint-dir "$work/ckpt" --save-every 30
[[ -f $work/ckpt/step_30/manifest.json ]] || fail "sfrun -n 2 committed no step_30 (ckpt: $(ls "$work/ckpt" 2>&1))"
run mpi_full "${mpi[@]}" --output-filename "$work/mpi_full" "$dp" "${args[@]}" --batch 32
run mpi_resumed "${mpi[@]}" --output-filename "$work/mpi_resumed" "$dp" "${args[@]}" --batch 32 \
  --resume "$work/ckpt/step_30"
run one_full "$dp" --devices 1 "${args[@]}" --batch 64
run one_resumed "$dp" --devices 1 "${args[@]}" --batch 64 --resume "$work/ckpt/step_30"

# same FULL RESUMED WHAT: RESUMED's loss lines are FULL's last ones within 1e-5, accuracy within 0.005.
same() {
  grep -E '^epoch: [0-9]+ step: [0-9]+, loss is ' "$1" >"$1.loss"
  grep -E '^epoch: [0-9]+ step: [0-9]+, loss is ' "$2" >"$2.loss"
  local n
  n=$(wc -l <"$2.loss")
  [[ $n -eq 6 ]] || { cat "$2" >&2; fail "$3: the resumed run printed $n loss lines, not 6"; }
  tail -n "$n" "$1.loss" | paste -d'|' - "$2.loss" | awk -F'|' -v what="$3" '
    { split($1, a, ", loss is "); split($2, b, ", loss is ")
      if (a[1] != b[1]) { print what ": step lines differ: " $1 " vs " $2; bad = 1; exit }
      d = a[2] - b[2]; if (d < 0) d = -d
      if (d > 1e-5 * a[2]) { printf "%s, %s: loss %s resumed, %s uninterrupted\n", what, a[1], b[2], a[2]; bad = 1; exit } }
    END { exit bad }' || fail "$3: losses differ"
  local fa ra
  fa=$(grep -oE 'test accuracy: 0\.[0-9]+' "$1" | head -1 | cut -d' ' -f3)
  ra=$(grep -oE 'test accuracy: 0\.[0-9]+' "$2" | head -1 | cut -d' ' -f3)
  [[ -n $fa && -n $ra ]] || fail "$3: no test accuracy"
  awk -v a="$fa" -v b="$ra" 'BEGIN { d = a - b; exit (d > 0.005 || d < -0.005) }' ||
    fail "$3: test accuracy $ra resumed, $fa uninterrupted"
  echo "$3: 6 loss lines within 1e-5 of the uninterrupted run's, test accuracy $ra ($fa)"
}
same "$work/mpi_full/1/rank.0/stdout" "$work/mpi_resumed/1/rank.0/stdout" "mpirun -np 2"
same "$work/mpi_full/1/rank.1/stdout" "$work/mpi_resumed/1/rank.1/stdout" "mpirun -np 2, rank 1"
same "$work/one_full.out" "$work/one_resumed.out" "1 device"
