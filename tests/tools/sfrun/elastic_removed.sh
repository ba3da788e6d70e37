# --elastic: a rank the others removed while it was frozen (SIGSTOP) is killed once every member
# has exited, with one line; a removed rank that exits with an error fails nothing: sfrun exits
# 0, promptly, and no process of the job is left.
source "$TEST_DIR/lib.sh"
job=removed$id
t0=$(now_ms)
rc=0
"$SFRUN" -n 4 --elastic 2:4 --log-dir "$logs" --job-id "$job" -- bash "$TEST_DIR/elastic_rank.sh" frozen \
  "$logs/$job" "$work/err" >"$work/out" 2>"$work/err" || rc=$?
t1=$(now_ms)
show "$work/err"
[[ $rc -eq 0 ]] || fail "sfrun exited $rc, expected 0"
(( t1 - t0 <= 20000 )) || fail "the job took $((t1 - t0)) ms"
expect_in "$work/err" "sfrun: rank 3 exited with code 1; the elastic job goes on without it"
expect_in "$work/err" "sfrun: rank 1 was removed from the job; stopped it"
[[ $(count_in "$work/err" "sfrun: shardflow elastic: generation 1: lost ranks 1, 3 (test)") -eq 1 ]] ||
  fail "generation 1 is not said once"
expect_in "$work/err" "sfrun: the 2 ranks of generation 1 (0, 2) exited 0"
expect_in "$logs/$job/rank.3/stderr" "this rank was removed from the job"
assert_gone $(job_pids "$job")
echo "PASS: the job ended $((t1 - t0)) ms after its start"
