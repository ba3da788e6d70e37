# sfckpt's command line on a checkpoint saved by 4 virtual ranks with split layouts: inspect
# names every tensor, layout and block; --verify passes, then fails in one line naming the rank
# file after a byte is corrupted; convert to 1 and 2 devices loads back bitwise; convert by a
# strategy file to 6 and 4 devices holds each parameter under the file's layout, every rank of
# it reading exactly its blocks, bitwise as from the original, states kept; a strategy file
# that does not fit is refused in one line with nothing written; export writes an .npz numpy
# loads bitwise; bad arguments exit 2 and a bad checkpoint exits 1, one line each.
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

# convert --strategy-file: 4 ranks to 6 by a file whose "parameters" section ties each tensor
# to the op input that reads it — a tuple (2,3), a named layout, and (3) on 6 (a repeat axis).
cat >"$work/s6.json" <<'JSON'
{"version": 1,
 "strategies": {
   "fc1/MatMul": {"in_strategy": [[1, 2], [2, 3]]},
   "fc1/BiasAdd": {"in_strategy": [[2, 3], [3]]},
   "emb/Gather": {"in_strategy": [{"device_matrix": [3, 2], "alias_name": ["mp", "dp"], "tensor_map": ["dp", "mp"]},
                                  {"device_matrix": [3, 2], "alias_name": ["mp", "dp"], "tensor_map": ["None"]}]}},
 "parameters": {
   "fc1.weight": {"op": "fc1/MatMul", "input": 1},
   "fc1.bias": {"op": "fc1/BiasAdd", "input": 1},
   "emb": {"op": "emb/Gather", "input": 0}}}
JSON
run 0 "$work/out" convert "$work/ck" "$work/six" --devices 6 --strategy-file "$work/s6.json"
expect_in "$work/out" "for 6 device(s) by strategy file '$work/s6.json': 3 tensor(s) placed, 1 whole"
expect_in "$work/out" "  whole: global_step (not named in the file's \"parameters\")"
"$CKPT_FIXTURE" check "$work/six" 6 || fail "the strategy conversion to 6 does not load back bitwise"
"$CKPT_FIXTURE" same "$work/ck" "$work/six" || fail "the strategy conversion to 6 does not load as the original"
run 0 "$work/out" inspect "$work/six" --verify
expect_in "$work/out" "world size 6, parallel mode semi_auto_parallel"
expect_in "$work/out" "fc1.weight: shape (8, 6) f32, 192 bytes; layout device_matrix [2, 3] tensor_map [[0], [1]]"
expect_in "$work/out" "ranks [5] hold [4:8, 4:6] = rank_5.data @ 0, 32 bytes"
expect_in "$work/out" "emb: shape (4, 6) f32, 96 bytes; layout device_matrix [3, 2] tensor_map [[1], [0]]"
expect_in "$work/out" "fc1.bias: shape (6,) f32, 24 bytes; layout device_matrix [3, 2] tensor_map [[0]]"
expect_in "$work/out" "ranks [2, 3] hold [2:4] = rank_2.data"
expect_in "$work/out" "global_step: shape () i32, 4 bytes; layout device_matrix [1] tensor_map []"
expect_in "$work/out" "verify: OK"
# Back to 4 ranks (the saving job's size): every rank's state is kept, so it stays resumable;
# an optimizer moment would follow its parameter, a parameter whose op has no strategy stays whole.
cat >"$work/s4.json" <<'JSON'
{"strategies": {"fc1/MatMul": {"in_strategy": [[1, 2], [2, 1]]}},
 "parameters": {"fc1.weight": {"op": "fc1/MatMul", "input": 1}, "fc1.bias": {"op": "fc1/BiasAdd", "input": 1}}}
JSON
run 0 "$work/out" convert "$work/ck" "$work/four" --devices 4 --strategy-file "$work/s4.json"
expect_in "$work/out" "1 tensor(s) placed, 3 whole"
expect_in "$work/out" "  whole: fc1.bias (its op 'fc1/BiasAdd' has no strategy in the file)"
expect_in "$work/out" "  whole: emb (not named"
"$CKPT_FIXTURE" same "$work/ck" "$work/four" || fail "the strategy conversion to 4 lost a block or a rank's state"
run 0 "$work/out" inspect "$work/four"
expect_in "$work/out" "fc1.weight: shape (8, 6) f32, 192 bytes; layout device_matrix [2, 1, 2] tensor_map [[0], [1]]"

# A strategy file that does not fit the checkpoint: exit 2, one line naming the file and the
# rule, nothing written to DST.
refused() {  # refused FILE-TEXT EXPECTED [convert args...]
  local text=$1 want=$2
  shift 2
  printf '%s\n' "$text" >"$work/bad.json"
  run 2 "$work/out" convert "$work/ck" "$work/x" --strategy-file "$work/bad.json" "$@"
  one_line "$work/out"
  expect_in "$work/out" "strategy file '$work/bad.json'"
  expect_in "$work/out" "$want"
  [[ ! -e $work/x ]] || fail "a refused conversion wrote '$work/x'"
}
mm='"strategies": {"fc1/MatMul": {"in_strategy": [[1, 2], [2, 3]]}}'
refused "{$mm, \"parameters\": {\"fc9.weight\": {\"op\": \"fc1/MatMul\", \"input\": 1}}}" \
  "parameter 'fc9.weight': the checkpoint has no tensor of that name" --devices 6
refused "{$mm, \"parameters\": {\"fc1.weight\": {\"op\": \"fc1/MatMul\", \"input\": 1}}}" \
  "uses 6 devices, which neither equals nor divides the 4 devices of the job" --devices 4
refused "{\"strategies\": {\"e/G\": {\"in_strategy\": [[3, 2]]}}, \"parameters\": {\"emb\": {\"op\": \"e/G\", \"input\": 0}}}" \
  "does not divide dim 0 of size 4" --devices 6
refused "{$mm, \"parameters\": {\"fc1.weight\": {\"op\": \"fc1/MatMul\", \"input\": 2}}}" \
  "input 2 of op 'fc1/MatMul', whose in_strategy has 2 entries" --devices 6
refused "{$mm, \"parameters\": {\"fc1.bias\": {\"op\": \"fc1/MatMul\", \"input\": 1}}}" \
  "has 2 dims, the tensor (6,) has 1" --devices 6
refused "{$mm, \"parameters\": {\"fc1.weight\": {\"op\": \"fc1/MatMul\"}}}" \
  "\"input\" must be an input index" --devices 6
refused "{\"strategies\": {\"fc1/MatMul\": {\"in_strategy\": [[0, 1]]}}}" "in_strategy[0]" --devices 6
run 2 "$work/out" convert "$work/ck" "$work/x" --devices 6 --strategy-file "$work/none.json"
one_line "$work/out"
expect_in "$work/out" "$work/none.json"
[[ ! -e $work/x ]] || fail "a refused conversion wrote '$work/x'"

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
