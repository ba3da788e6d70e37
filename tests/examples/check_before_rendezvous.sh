#!/usr/bin/env bash
# A bad input stops a rank before it joins its job: one rank of a 2-rank zmq job (sfrun's
# variables, a rendezvous no peer ever comes to) with a bad strategy file or dataset directory
# exits non-zero within 5 s with a one-line error naming the input. Before, it waited for its
# peers (a minute) and only then read its inputs.
#   check_before_rendezvous.sh OPERATOR_PARALLEL SEMI_AUTO DATA_PARALLEL MANUAL_PARALLEL PIPELINE_PARALLEL BAD_AXIS_JSON
set -u
op=$1 sa=$2 dp=$3 mp=$4 pp=$5 bad_axis=$6
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
printf '{"version": 1, "strategies": ' >"$dir/cut.json"
failures=0
# refused NAME REGEX PROGRAM ARGS...
refused() {
  local name=$1 regex=$2
  shift 2
  local start end rc=0
  start=$(date +%s%N)
  env SF_RANK=1 SF_WORLD_SIZE=2 SF_LOCAL_RANK=0 SF_RENDEZVOUS="ipc://$dir/rendezvous" \
    SF_JOB_SECRET=0123456789abcdef0123456789abcdef timeout -s KILL 30 "$@" >"$dir/$name.out" 2>"$dir/$name.err" || rc=$?
  end=$(date +%s%N)
  local ms=$(((end - start) / 1000000)) lines
  lines=$(wc -l <"$dir/$name.err")
  if [[ $rc -eq 0 || $rc -eq 137 ]] || ((ms >= 5000)) || [[ $lines -ne 1 ]] || ! grep -Eq -- "$regex" "$dir/$name.err"; then
    echo "FAIL $name: exit $rc after $ms ms, $lines line(s) on stderr, expected one matching '$regex':"
    cat "$dir/$name.err"
    failures=$((failures + 1))
  else
    echo "ok $name: exit $rc after $ms ms: $(cat "$dir/$name.err")"
  fi
}
refused operator_bad_axis "^error: strategy file '.*seed001_bad_axis.json'.*xp" "$op" --strategy-file "$bad_axis"
refused operator_cut_json "^error: strategy file '$dir/cut.json': not JSON" "$op" --strategy-file "$dir/cut.json"
refused semi_auto_cut_json "^error: strategy file '$dir/cut.json': not JSON" "$sa" --strategy-file "$dir/cut.json"
refused data_parallel_no_data "^error: MnistDataset: dataset directory '$dir/none'" "$dp" --data-dir "$dir/none"
refused manual_parallel_no_data "^error: MnistDataset: dataset directory '$dir/none'" "$mp" --data-dir "$dir/none"
refused pipeline_parallel_bad_axis "^error: strategy file '.*seed001_bad_axis.json'.*xp" "$pp" --strategy-file "$bad_axis"
# Well-formed, but naming ops no stage of the ResNet has.
refused pipeline_parallel_no_such_op "^error: pipeline: a strategy is given for 'matmul1/MatMul', which is no op of any stage" \
  "$pp" --strategy-file "$(dirname "$bad_axis")/seed001_other_strategies.json"
refused pipeline_parallel_no_data "^error: MnistDataset: dataset directory '$dir/none'" "$pp" --data-dir "$dir/none"
exit $((failures > 0))
