# A 4-rank job of job_main over zmq on this host succeeds and writes the seeds' log layout,
# LOG_DIR/JOB/rank.R/{stdout,stderr,pid}, with no process left afterwards.
source "$TEST_DIR/lib.sh"
job=job$id
"$SFRUN" -n 4 --log-dir "$logs" --job-id "$job" -- "$JOB_MAIN" sfrun zmq SF_RANK SF_WORLD_SIZE SF_LOCAL_RANK \
  >"$work/out" 2>"$work/err" || { show "$work/err"; fail "sfrun exited $?"; }
expect_in "$work/err" "sfrun: 4 ranks exited 0"
for r in 0 1 2 3; do
  expect_in "$logs/$job/rank.$r/stdout" "job_main: rank $r ok"
  [[ -f $logs/$job/rank.$r/stderr ]] || fail "no stderr file for rank $r"
done
[[ $(job_pids "$job" | wc -l) -eq 4 ]] || fail "expected 4 pid files"
assert_gone $(job_pids "$job")
# Without --job-id the first job of a fresh log dir is job 1, then 2.
(cd "$work" && "$SFRUN" -n 1 -- /bin/true && "$SFRUN" -n 1 -- /bin/true) 2>"$work/err2" || { show "$work/err2"; fail "-n 1"; }
[[ -d $work/log_output/1/rank.0 && -d $work/log_output/2/rank.0 ]] || fail "default job ids are not 1 and 2"
echo PASS
