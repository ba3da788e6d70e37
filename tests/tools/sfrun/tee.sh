# --tee streams every rank's stdout to sfrun's stdout and its stderr to sfrun's stderr, each
# whole line prefixed `[rank R] `, while the log files keep the lines as written.
source "$TEST_DIR/lib.sh"
job=tee$id
"$SFRUN" -n 3 --tee --log-dir "$logs" --job-id "$job" -- \
  sh -c 'echo "out of $SF_RANK"; printf "err of %s\nno newline" "$SF_RANK" >&2' >"$work/out" 2>"$work/err" ||
  fail "sfrun exited $?"
for r in 0 1 2; do
  expect_in "$work/out" "[rank $r] out of $r"
  expect_in "$work/err" "[rank $r] err of $r"
  expect_in "$work/err" "[rank $r] no newline"
  expect_in "$logs/$job/rank.$r/stdout" "out of $r"
  expect_not_in "$logs/$job/rank.$r/stdout" "[rank"
done
[[ $(grep -c '^\[rank ' "$work/out") -eq 3 ]] || { show "$work/out"; fail "expected 3 prefixed stdout lines"; }
# The job with tee: job_main's own lines.
"$SFRUN" -n 3 --tee --log-dir "$logs" --job-id "${job}b" -- "$JOB_MAIN" sfrun zmq SF_RANK SF_WORLD_SIZE SF_LOCAL_RANK \
  >"$work/out2" 2>"$work/err2" || { show "$work/err2"; fail "sfrun exited $?"; }
for r in 0 1 2; do expect_in "$work/out2" "[rank $r] job_main: rank $r ok"; done
echo PASS
