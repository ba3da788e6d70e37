# A rank that is alive but stuck (SIGSTOP): with --timeout 2 its peers' collective times out
# naming it, and sfrun's summary quotes the comm report with the collective's sequence number;
# the stopped rank is killed after the grace period.
source "$TEST_DIR/lib.sh"
job=stuck$id
"$SFRUN" -n 4 --timeout 2 --grace 1 --log-dir "$logs" --job-id "$job" -- "$LOOP_MAIN" 120 >"$work/out" 2>"$work/err" &
sfrun=$!
cleanups+=("kill -9 $sfrun 2>/dev/null")
wait_pids "$job" 4 30
wait_for "$logs/$job/rank.1/stdout" "rank 1 step 3" 30
pids=$(job_pids "$job")
t0=$(now_ms)
kill -STOP "$(cat "$logs/$job/rank.1/pid")"
rc=0
wait "$sfrun" || rc=$?
t1=$(now_ms)
show "$work/err"
[[ $rc -ne 0 ]] || fail "sfrun exited 0"
(( t1 - t0 <= 15000 )) || fail "sfrun took $((t1 - t0)) ms"
expect_in "$work/err" "rank 1 did not take part within 2000 ms"
expect_in "$work/err" "timed out; flight recorder of group 'world'"
grep -q "seq [0-9]" "$work/err" || fail "the summary gives no sequence number"
assert_gone $pids
echo "PASS: reported $((t1 - t0)) ms after the stop"
