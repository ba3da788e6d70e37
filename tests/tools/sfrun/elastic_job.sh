# --elastic: a rank that dies does not stop the job. With a stand-in rank program
# (elastic_rank.sh) every rank gets SF_ELASTIC; sfrun says the loss in one line, passes each
# membership change on once however many ranks print it, and exits 0 when the members left
# exit 0 — on this host and through the agent, over two generations.
source "$TEST_DIR/lib.sh"
rank_program=(bash "$TEST_DIR/elastic_rank.sh")

job=elastic$id
rc=0
"$SFRUN" -n 3 --elastic 2:3 --log-dir "$logs" --job-id "$job" -- "${rank_program[@]}" goes-on "$logs/$job" \
  "$work/err" >"$work/out" 2>"$work/err" || rc=$?
show "$work/err"
[[ $rc -eq 0 ]] || fail "sfrun exited $rc, expected 0"
for r in 0 1 2; do expect_in "$logs/$job/rank.$r/stdout" "rank $r: SF_ELASTIC=2:3"; done
expect_in "$work/err" "sfrun: rank 1 exited with signal 9 (Killed); the elastic job goes on without it"
[[ $(count_in "$work/err" "sfrun: shardflow elastic: generation 1:") -eq 1 ]] || fail "generation 1 is not said once"
change="sfrun: shardflow elastic: generation 1: lost rank 1 (test); detected at 00:00:00.000; members 0,2"
expect_in "$work/err" "$change (3 -> 2 ranks; this rank "
expect_in "$work/err" "sfrun: the 2 ranks of generation 1 (0, 2) exited 0"
expect_not_in "$work/err" " — see "
assert_gone $(job_pids "$job")

# Remote ranks (fake_agent.sh stands in for ssh) get SF_ELASTIC too; two ranks are lost, one
# generation each.
printf 'fakeA slots=2 addr=127.0.0.1\nfakeB slots=2 addr=127.0.0.1\n' >"$work/hosts"
job=relastic$id
rc=0
"$SFRUN" -n 4 --elastic 2:4 --hostfile "$work/hosts" --agent "$TEST_DIR/fake_agent.sh $work/agent.log {host}" \
  --log-dir "$logs" --job-id "$job" -- "${rank_program[@]}" two-losses "$logs/$job" "$work/rerr" \
  >"$work/rout" 2>"$work/rerr" || rc=$?
show "$work/rerr"
[[ $rc -eq 0 ]] || fail "sfrun exited $rc with remote ranks, expected 0"
for r in 0 1 2 3; do expect_in "$logs/$job/rank.$r/stdout" "rank $r: SF_ELASTIC=2:4"; done
expect_in "$work/rerr" \
  "sfrun: rank 1 exited with code 137 (its program died of signal 9, Killed); the elastic job goes on without it"
expect_in "$work/rerr" "sfrun: rank 3 exited with code 137"
for g in 1 2; do
  [[ $(count_in "$work/rerr" "sfrun: shardflow elastic: generation $g:") -eq 1 ]] ||
    fail "generation $g is not said once"
done
expect_in "$work/rerr" "sfrun: the 2 ranks of generation 2 (0, 2) exited 0"
assert_gone $(job_pids "$job")

# Without --elastic a rank gets no SF_ELASTIC.
"$SFRUN" -n 1 --log-dir "$logs" --job-id plain$id -- sh -c 'echo "SF_ELASTIC=${SF_ELASTIC-unset}"' 2>"$work/perr" ||
  { show "$work/perr"; fail "a plain job failed"; }
expect_in "$logs/plain$id/rank.0/stdout" "SF_ELASTIC=unset"
echo PASS
