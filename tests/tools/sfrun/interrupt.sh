# Ctrl-C: SIGINT to sfrun reaches every rank; sfrun exits 130 and no rank is left. A rank that
# ignores SIGINT and SIGTERM is killed after --grace.
source "$TEST_DIR/lib.sh"
job=int$id
"$SFRUN" -n 4 --log-dir "$logs" --job-id "$job" -- "$LOOP_MAIN" 120 >"$work/out" 2>"$work/err" &
sfrun=$!
cleanups+=("kill -9 $sfrun 2>/dev/null")
wait_pids "$job" 4 30
wait_for "$logs/$job/rank.0/stdout" "rank 0 step 2" 30
pids=$(job_pids "$job")
kill -INT "$sfrun"
rc=0
wait "$sfrun" || rc=$?
show "$work/err"
[[ $rc -eq 130 ]] || fail "sfrun exited $rc, expected 130"
expect_in "$work/err" "sfrun: interrupted by SIGINT"
assert_gone $pids

job=stubborn$id
"$SFRUN" -n 2 --grace 1 --log-dir "$logs" --job-id "$job" -- sh -c 'trap "" INT TERM; echo up; while :; do sleep 0.1; done' \
  >"$work/out" 2>"$work/err" &
sfrun=$!
cleanups+=("kill -9 $sfrun 2>/dev/null")
wait_pids "$job" 2 30
wait_for "$logs/$job/rank.1/stdout" "up" 30
pids=$(job_pids "$job")
t0=$(now_ms)
kill -INT "$sfrun"
rc=0
wait "$sfrun" || rc=$?
t1=$(now_ms)
show "$work/err"
[[ $rc -eq 130 ]] || fail "sfrun exited $rc, expected 130"
(( t1 - t0 >= 900 && t1 - t0 < 5000 )) || fail "the stubborn ranks were stopped after $((t1 - t0)) ms, not after the 1 s grace"
assert_gone $pids
# Their children (the sleeps) went with them: the whole process group is killed.
assert_groups_gone $pids
echo PASS
