# --elastic with --max-restarts: a member that fails is replaced. With a stand-in rank program
# (elastic_rank.sh) whose rank 2 exits 1 early and whose rank 0 prints join lines, sfrun starts
# exactly one replacement for rank 2, once a door newer than the membership it was lost from is
# open (not rank 0's earlier door of generation 0), with SF_ELASTIC_JOIN set to that door, into
# the same logs; the replacement is a member once generation 2 lists it, and the job exits 0 —
# here and through the agent. With --max-restarts 0 nothing is replaced. A replacement that
# fails before it joined fails nothing; another follows only a newer door. A replacement still
# waiting to join when every member has ended is stopped. A replacement waiting at the door of a
# rank 0 that died is moved to the next world's door by the same restart; one whose rank 0 kept
# its door into a newer world stays.
source "$TEST_DIR/lib.sh"
rank_program=(bash "$TEST_DIR/elastic_rank.sh")

# run_job JOB MODE SFRUN-ARGS...: sfrun's stderr in $work/JOB.err, its status in $rc.
run_job() {
  local job=$1 mode=$2
  shift 2
  rc=0
  "$SFRUN" -n 4 --elastic 3:4 --log-dir "$logs" --job-id "$job" "$@" -- "${rank_program[@]}" "$mode" \
    "$logs/$job" "$work/$job.err" >"$work/$job.out" 2>"$work/$job.err" || rc=$?
  show "$work/$job.err"
}
# starts JOB: how many replacements sfrun started.
starts() { count_in "$work/$1.err" "sfrun: starting a replacement"; }

job=rejoin$id
run_job "$job" rejoin --max-restarts 2
[[ $rc -eq 0 ]] || fail "sfrun exited $rc, expected 0"
err=$work/$job.err
expect_in "$err" \
  "sfrun: rank 2 exited with code 1; the elastic job goes on without it; a replacement will join (restart 1 of 2)"
expect_in "$err" "sfrun: starting a replacement for rank 2 (restart 1 of 2); it joins generation 1"
[[ $(starts "$job") -eq 1 ]] || fail "$(starts "$job") replacements started, expected 1"
expect_in "$err" \
  "sfrun: shardflow elastic: generation 2: joined rank 2 (test); detected at 00:00:00.000; members 0,1,3,2 (3 -> 4"
expect_in "$err" "sfrun: the 4 ranks of generation 2 (0, 1, 2, 3) exited 0 in "
expect_in "$err" "; 0 of 4 left the job (1 restart of 2 used); logs in $logs/$job"
expect_not_in "$err" "join generation"  # the join lines stay in the rank logs
expect_not_in "$err" "before it joined"
# The replacement wrote into rank 2's logs after the first process, with the door of generation 1.
out2=$logs/$job/rank.2/stdout
[[ $(count_in "$out2" "rank 2: SF_ELASTIC=3:4") -eq 2 ]] || { show "$out2"; fail "rank 2's log is not appended"; }
[[ $(grep -c "SF_ELASTIC_JOIN=" "$out2") -eq 1 ]] || { show "$out2"; fail "not one SF_ELASTIC_JOIN line"; }
expect_in "$out2" "rank 2: SF_ELASTIC_JOIN=ipc://$logs/$job/door.1"
expect_in "$logs/$job/rank.0/stderr" "shardflow elastic: join generation 1 at ipc://"
for r in 0 1 3; do expect_not_in "$logs/$job/rank.$r/stdout" "SF_ELASTIC_JOIN"; done
assert_gone $(job_pids "$job")

# Through the agent (fake_agent.sh stands in for ssh): rank 2 runs on fakeB, and SF_ELASTIC_JOIN
# reaches the remote replacement on the wrapper's `env` line; the secret is still on no line.
printf 'fakeA slots=2 addr=127.0.0.1\nfakeB slots=2 addr=127.0.0.1\n' >"$work/hosts"
job=rrejoin$id
run_job "$job" rejoin --max-restarts 1 --hostfile "$work/hosts" --agent "$TEST_DIR/fake_agent.sh $work/agent.log {host}"
[[ $rc -eq 0 ]] || fail "sfrun exited $rc with remote ranks, expected 0"
err=$work/$job.err
expect_in "$err" "sfrun: starting a replacement for rank 2 (restart 1 of 1); it joins generation 1"
[[ $(starts "$job") -eq 1 ]] || fail "$(starts "$job") remote replacements started, expected 1"
expect_in "$err" "(1 restart of 1 used)"
expect_in "$logs/$job/rank.2/stdout" "rank 2: SF_ELASTIC_JOIN=ipc://$logs/$job/door.1"
[[ $(grep -c "SF_ELASTIC_JOIN=ipc://$logs/$job/door.1" "$work/agent.log") -eq 1 ]] ||
  { show "$work/agent.log"; fail "the agent did not start one replacement with SF_ELASTIC_JOIN"; }
expect_not_in "$work/agent.log" "SF_JOB_SECRET="
[[ $(wc -l <"$logs/$job/rank.2/pid") -eq 1 ]] || fail "rank 2's pid file is not one pid"
assert_gone $(job_pids "$job")

# --max-restarts 0 (and without it): today's behaviour, nothing is replaced.
for k in 0 none; do
  job=norestart$k$id
  if [[ $k == none ]]; then run_job "$job" no-replacement; else run_job "$job" no-replacement --max-restarts 0; fi
  [[ $rc -eq 0 ]] || fail "sfrun exited $rc with --max-restarts $k, expected 0"
  err=$work/$job.err
  expect_in "$err" "sfrun: rank 2 exited with code 1; the elastic job goes on without it"
  expect_not_in "$err" "replacement"
  expect_not_in "$err" "(restart"
  expect_not_in "$err" " used)"
  expect_in "$err" "sfrun: the 3 ranks of generation 1 (0, 1, 3) exited 0 in "
  expect_not_in "$logs/$job/rank.2/stdout" "SF_ELASTIC_JOIN"
  assert_gone $(job_pids "$job")
done

# A replacement that fails before it joined fails nothing. The next one waits for a newer door:
# a second join line of generation 1 starts none, one of generation 2 does.
job=rfail$id
run_job "$job" replacement-fails --max-restarts 3
[[ $rc -eq 0 ]] || fail "sfrun exited $rc after failed replacements, expected 0"
err=$work/$job.err
expect_in "$err" "sfrun: starting a replacement for rank 2 (restart 1 of 3); it joins generation 1"
expect_in "$err" \
  "sfrun: the replacement for rank 2 exited with code 3 before it joined; another will join (restart 2 of 3)"
expect_in "$err" "sfrun: starting a replacement for rank 2 (restart 2 of 3); it joins generation 2"
expect_in "$err" \
  "sfrun: the replacement for rank 2 exited with code 4 before it joined; another will join (restart 3 of 3)"
[[ $(starts "$job") -eq 2 ]] || fail "$(starts "$job") replacements started, expected 2"
expect_in "$err" "sfrun: the 3 ranks of generation 1 (0, 1, 3) exited 0 in "
expect_in "$err" "; 1 of 4 left the job (2 restarts of 3 used)"
expect_not_in "$err" " — see "
out2=$logs/$job/rank.2/stdout
expect_in "$out2" "rank 2: SF_ELASTIC_JOIN=ipc://$logs/$job/door.1"
expect_in "$out2" "rank 2: SF_ELASTIC_JOIN=ipc://$logs/$job/door.2"
expect_not_in "$out2" "door.stale"
assert_gone $(job_pids "$job")

# A replacement still waiting to join when every member has ended is stopped, promptly.
job=nojoin$id
t0=$(now_ms)
run_job "$job" never-joins --max-restarts 1
t1=$(now_ms)
[[ $rc -eq 0 ]] || fail "sfrun exited $rc with a replacement that never joined, expected 0"
(( t1 - t0 <= 20000 )) || fail "the job took $((t1 - t0)) ms"
err=$work/$job.err
expect_in "$err" "sfrun: starting a replacement for rank 2 (restart 1 of 1); it joins generation 1"
expect_in "$err" "sfrun: the replacement for rank 2 had not joined when the job's members ended; stopped it"
expect_in "$err" "sfrun: the 3 ranks of generation 1 (0, 1, 3) exited 0 in "
assert_gone $(job_pids "$job")

# Rank 0 dies while the replacement of rank 2 waits at its door: once rank 1, rank 0 of the next
# world, prints its own door, sfrun kills the waiting replacement and starts it again there,
# spending no restart; rank 0's replacement is the second of 2.
job=deaddoor$id
run_job "$job" dead-door --max-restarts 2
[[ $rc -eq 0 ]] || fail "sfrun exited $rc with a replacement at a dead door, expected 0"
err=$work/$job.err
expect_in "$err" "sfrun: starting a replacement for rank 2 (restart 1 of 2); it joins generation 1"
expect_in "$err" \
  "sfrun: rank 0 exited with code 1; the elastic job goes on without it; a replacement will join (restart 2 of 2)"
expect_in "$err" "sfrun: the replacement for rank 2 waited at the door of generation 1, whose rank 0 is gone; starting \
it again at generation 2 (ipc://$logs/$job/door.2)"
expect_in "$err" "sfrun: starting a replacement for rank 0 (restart 2 of 2); it joins generation 2"
[[ $(starts "$job") -eq 2 ]] || fail "$(starts "$job") replacements started, expected 2"
[[ $(count_in "$err" "starting it again") -eq 1 ]] || fail "not one move"
expect_not_in "$err" "before it joined"
expect_in "$err" "sfrun: the 4 ranks of generation 4 (0, 1, 2, 3) exited 0 in "
expect_in "$err" "; 0 of 4 left the job (2 restarts of 2 used)"
out2=$logs/$job/rank.2/stdout
[[ $(count_in "$out2" "rank 2: SF_ELASTIC=3:4") -eq 3 ]] || { show "$out2"; fail "rank 2's log has not 3 starts"; }
expect_in "$out2" "rank 2: SF_ELASTIC_JOIN=ipc://$logs/$job/door.1"
expect_in "$out2" "rank 2: SF_ELASTIC_JOIN=ipc://$logs/$job/door.2"
assert_gone $(job_pids "$job")

# Rank 0 keeps its door into a newer world (rank 3 lost meanwhile): the replacement waiting there
# stays, and rank 3's replacement gets the same door.
job=doorkept$id
run_job "$job" door-kept --max-restarts 2
[[ $rc -eq 0 ]] || fail "sfrun exited $rc with a door kept, expected 0"
err=$work/$job.err
expect_in "$err" "sfrun: starting a replacement for rank 2 (restart 1 of 2); it joins generation 1"
expect_in "$err" "sfrun: starting a replacement for rank 3 (restart 2 of 2); it joins generation 2"
[[ $(starts "$job") -eq 2 ]] || fail "$(starts "$job") replacements started, expected 2"
expect_not_in "$err" "starting it again"
expect_not_in "$err" "before it joined"
expect_in "$err" "sfrun: the 4 ranks of generation 4 (0, 1, 2, 3) exited 0 in "
expect_in "$err" "; 0 of 4 left the job (2 restarts of 2 used)"
[[ $(grep -c "SF_ELASTIC_JOIN=" "$logs/$job/rank.2/stdout") -eq 1 ]] ||
  { show "$logs/$job/rank.2/stdout"; fail "rank 2's replacement was started again"; }
expect_in "$logs/$job/rank.3/stdout" "rank 3: SF_ELASTIC_JOIN=ipc://$logs/$job/door.1"
assert_gone $(job_pids "$job")
echo PASS
