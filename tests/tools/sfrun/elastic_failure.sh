# --elastic: what fails an elastic job is a rank of the last membership that failed — the first
# of them, by sfrun's usual rule — not a rank the others went on without. A member that exits 3
# after the change makes sfrun exit 3 naming it; a dead rank that no membership line removed is
# still a member, and its signal is the job's status. Until a rank has said that it trains
# elastic, a failed rank stops the job as without --elastic.
source "$TEST_DIR/lib.sh"
rank_program=(bash "$TEST_DIR/elastic_rank.sh")

job=mfail$id
rc=0
"$SFRUN" -n 3 --elastic 2:3 --log-dir "$logs" --job-id "$job" -- "${rank_program[@]}" member-fails "$logs/$job" \
  "$work/err" >"$work/out" 2>"$work/err" || rc=$?
show "$work/err"
[[ $rc -eq 3 ]] || fail "sfrun exited $rc, expected 3 (rank 2's code)"
expect_in "$work/err" "sfrun: rank 1 exited with signal 9 (Killed); the elastic job goes on without it"
expect_in "$work/err" "sfrun: rank 2 exited with code 3 — see $logs/$job/rank.2/stdout"
expect_not_in "$work/err" "sfrun: rank 1 exited with signal 9 (Killed) — see"
assert_gone $(job_pids "$job")

job=silent$id
rc=0
"$SFRUN" -n 3 --elastic 2:3 --log-dir "$logs" --job-id "$job" -- "${rank_program[@]}" silent "$logs/$job" \
  "$work/serr" >"$work/sout" 2>"$work/serr" || rc=$?
show "$work/serr"
[[ $rc -eq 137 ]] || fail "sfrun exited $rc, expected 137 (rank 1 is still a member)"
expect_in "$work/serr" "sfrun: rank 1 exited with signal 9 (Killed) — see $logs/$job/rank.1/stdout"
expect_not_in "$work/serr" "sfrun: shardflow elastic:"
assert_gone $(job_pids "$job")

# A program that never says it trains elastic (it does not call train_elastic): its ranks cannot
# go on without the lost one, so sfrun stops the job as it would without --elastic.
job=notel$id
rc=0
"$SFRUN" -n 3 --elastic 2:3 --log-dir "$logs" --job-id "$job" -- "${rank_program[@]}" not-elastic "$logs/$job" \
  "$work/nerr" >"$work/nout" 2>"$work/nerr" || rc=$?
show "$work/nerr"
[[ $rc -eq 137 ]] || fail "sfrun exited $rc, expected 137 (rank 1's signal)"
expect_in "$work/nerr" "sfrun: rank 1 exited with signal 9 (Killed); no rank has said it trains elastic"
expect_not_in "$work/nerr" "goes on without it"
expect_in "$work/nerr" "sfrun: stopped the ranks still running"
assert_gone $(job_pids "$job")
echo PASS
