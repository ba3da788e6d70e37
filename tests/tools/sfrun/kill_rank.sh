# Fail fast: SIGKILL one rank of a 4-rank job mid-run; sfrun stops the others and exits
# non-zero within 10 s with one line naming that rank and its log, and no process of the job
# is left.
source "$TEST_DIR/lib.sh"
job=kill$id
"$SFRUN" -n 4 --log-dir "$logs" --job-id "$job" -- "$LOOP_MAIN" 120 >"$work/out" 2>"$work/err" &
sfrun=$!
cleanups+=("kill -9 $sfrun 2>/dev/null")
wait_pids "$job" 4 30
wait_for "$logs/$job/rank.3/stdout" "rank 3 step 3" 30
pids=$(job_pids "$job")
victim=$(cat "$logs/$job/rank.2/pid")
t0=$(now_ms)
kill -9 "$victim"
# sfrun must be gone within 10 s.
for ((i = 0; i < 100; i++)); do kill -0 "$sfrun" 2>/dev/null || break; sleep 0.1; done
rc=0
wait "$sfrun" || rc=$?
t1=$(now_ms)
show "$work/err"
(( t1 - t0 <= 10000 )) || fail "sfrun took $((t1 - t0)) ms to exit"
[[ $rc -ne 0 ]] || fail "sfrun exited 0 after a rank was killed"
[[ $rc -eq 137 ]] || fail "sfrun exited $rc, expected 137 (the rank's signal 9)"
expect_in "$work/err" "sfrun: rank 2 exited with signal 9 (Killed) — see $logs/$job/rank.2/stdout"
[[ $(head -1 "$work/err") == "sfrun: rank 2 exited with signal 9"* ]] || fail "the first line does not name rank 2"
assert_gone $pids
echo "PASS: sfrun exited $((t1 - t0)) ms after the kill"
