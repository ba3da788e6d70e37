# sfckpt's command line on a checkpoint saved by 4 virtual ranks with split layouts: inspect
# names every tensor, layout and block; --verify passes, then fails in one line naming the rank
# file after a byte is corrupted; convert to 1 and 2 devices loads back bitwise; export writes an
# .npz numpy loads bitwise; bad arguments exit 2 and a bad checkpoint exits 1, one line each.
set -u
work=$(mktemp -d "${TMPDIR:-/tmp}/sfckpt-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/../assert.sh"

# run RC OUT ARGS...: sfckpt ARGS with stdout and stderr in OUT; fails unless it exits RC.
run() {
  local want=$1 out=$2
  shift 2
  timeout 60 "$SFCKPT" "$@" >"$out" 2>&1
  local rc=$?
  [[ $rc -eq $want ]] || { show "$out"; fail "sfckpt $* exited $rc, expected $want"; }
}
# one_line OUT: the error is exactly one line.
one_line() { [[ $(wc -l <"$1") -eq 1 ]] || { show "$1"; fail "expected a one-line error in $1"; }; }

timeout 60 "$CKPT_FIXTURE" make "$work/ck" || fail "fixture could not save the checkpoint"
"$CKPT_FIXTURE" check "$work/ck" 4 || fail "fixture checkpoint does not load"

# inspect: step, job, every tensor with its layout and blocks, the steps of the directory.
run 0 "$work/out" inspect "$work/ck"
expect_in "$work/out" "step 30, world size 4, parallel mode semi_auto_parallel"
expect_in "$work/out" "committed steps in '$work/ck': step_30 (latest)"
expect_in "$work/out" "tensors: 4"
expect_in "$work/out" "fc1.weight: shape (8, 6) f32, 192 bytes; layout device_matrix [4] tensor_map [[0], []]"
expect_in "$work/out" "ranks [2] hold [4:6, 0:6] = rank_2.data @ 0, 48 bytes"
expect_in "$work/out" "emb: shape (4, 6) f32, 96 bytes; layout device_matrix [2, 2] tensor_map [[0], [1]]"
expect_in "$work/out" "ranks [3] hold [2:4, 3:6] = rank_3.data"
expect_in "$work/out" "fc1.bias: shape (6,) f32, 24 bytes; layout device_matrix [4] tensor_map [[]]"
expect_in "$work/out" "ranks [0, 1, 2, 3] hold [0:6] = rank_0.data"
expect_in "$work/out" "global_step: shape () i32, 4 bytes; layout device_matrix [1] tensor_map []"
expect_in "$work/out" "total: 316 bytes of tensors"
expect_not_in "$work/out" "verify:"
run 0 "$work/out" inspect "$work/ck/step_30" --verify
expect_in "$work/out" "verify: OK"

# An incomplete step is named; the committed one still inspects.
mkdir "$work/ck/step_40"
run 0 "$work/out" inspect "$work/ck"
expect_in "$work/out" "incomplete steps (no manifest.json): step_40"
rmdir "$work/ck/step_40"

# convert to 1 device, and to 2 (data parallel): loads back bitwise.
run 0 "$work/out" convert "$work/ck" "$work/one" --devices 1
"$CKPT_FIXTURE" check "$work/one" 1 || fail "the 1-device conversion does not load back bitwise"
run 0 "$work/out" inspect "$work/one" --verify
expect_in "$work/out" "world size 1, parallel mode stand_alone"
expect_in "$work/out" "fc1.weight: shape (8, 6) f32, 192 bytes; layout device_matrix [1] tensor_map [[], []]"
expect_in "$work/out" "verify: OK"
run 0 "$work/out" convert "$work/ck/step_30" "$work/two" --devices 2
"$CKPT_FIXTURE" check "$work/two" 2 || fail "the 2-device conversion does not load back bitwise"

# export: an .npz that numpy loads, bitwise the gathered tensors.
run 0 "$work/out" export "$work/ck" --npz "$work/w.npz"
expect_in "$work/out" "exported 4 tensors to '$work/w.npz'"
"$CKPT_FIXTURE" npz "$work/w.npz" || fail "the .npz archive is malformed"
if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
  "$SFCKPT" export "$work/one" --npz "$work/one.npz" >/dev/null || fail "export of the conversion"
  /usr/bin/python3 - "$work/w.npz" "$work/one.npz" <<'PY' || fail "numpy does not load the .npz as expected"
import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
assert sorted(a.files) == ["emb", "fc1.bias", "fc1.weight", "global_step"], a.files
assert a["fc1.weight"].shape == (8, 6) and a["fc1.weight"].dtype == np.float32
assert a["emb"].shape == (4, 6) and a["fc1.bias"].shape == (6,)
assert a["global_step"].shape == () and a["global_step"].dtype == np.int32 and int(a["global_step"]) == 30
for k in a.files:
    assert a[k].tobytes() == b[k].tobytes(), k
assert len(np.unique(a["fc1.weight"])) == 48
PY
else
  echo "numpy is not installed: the .npz was checked by ckpt_fixture's zip reader only"
fi

# Bad arguments: exit 2, one line.
run 2 "$work/out" inspect
one_line "$work/out"
run 2 "$work/out" frobnicate "$work/ck"
one_line "$work/out"
run 2 "$work/out" convert "$work/ck" "$work/x" --devices 0
one_line "$work/out"
expect_in "$work/out" "--devices 0: must be in [1, 1024]"
run 2 "$work/out" convert "$work/ck" "$work/x" --devices 2 --strategy-file "$work/s.json"
one_line "$work/out"
expect_in "$work/out" "--strategy-file '$work/s.json': not supported"
run 2 "$work/out" convert "$work/ck" "$work/one" --devices 1
one_line "$work/out"
expect_in "$work/out" "'$work/one/step_30' already holds a committed checkpoint"
run 2 "$work/out" export "$work/ck"
one_line "$work/out"

# A bad checkpoint: exit 1, one line naming the file and the rule.
run 1 "$work/out" inspect "$work/missing"
one_line "$work/out"
# Corrupt one byte of rank 2's block: inspect still prints, --verify fails naming rank_2.data.
printf '\xff' | dd of="$work/ck/step_30/rank_2.data" bs=1 seek=5 conv=notrunc status=none
run 1 "$work/out" inspect "$work/ck" --verify
[[ $(grep -c "verify: FAILED" "$work/out") -eq 1 ]] || { show "$work/out"; fail "expected one verify: FAILED line"; }
expect_in "$work/out" "rank_2.data"
[[ $(grep "verify: FAILED" "$work/out" | wc -c) -lt 400 ]] || fail "the verify error is not brief"
run 1 "$work/out" export "$work/ck" --npz "$work/bad.npz"
one_line "$work/out"
expect_in "$work/out" "rank_2.data"
[[ ! -e $work/bad.npz && ! -e $work/bad.npz.tmp ]] || fail "a failed export left a file behind"
run 1 "$work/out" convert "$work/ck" "$work/bad" --devices 1
one_line "$work/out"
# A truncated rank file is refused on opening.
truncate -s 10 "$work/ck/step_30/rank_1.data"
run 1 "$work/out" inspect "$work/ck"
one_line "$work/out"
expect_in "$work/out" "rank_1.data"
echo "sfckpt cli: OK"
