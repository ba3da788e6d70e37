# The remote path without a second machine: an agent script that runs the command line here
# (fake_agent.sh) stands in for ssh. Ranks on "remote" hosts get their variables on the
# command line and the job secret on stdin: the secret appears in no agent argument. A
# SIGKILLed remote rank fails the job naming it; SIGINT to sfrun stops every remote rank.
source "$TEST_DIR/lib.sh"
printf 'fakeA slots=2 addr=127.0.0.1\nfakeB slots=2 addr=127.0.0.1\n' >"$work/hosts"
agent="$TEST_DIR/fake_agent.sh $work/agent.log {host}"
job=remote$id
rc=0
"$SFRUN" -n 4 --hostfile "$work/hosts" --agent "$agent" --log-dir "$logs" --job-id "$job" -- \
  "$JOB_MAIN" sfrun zmq SF_RANK SF_WORLD_SIZE SF_LOCAL_RANK >"$work/out" 2>"$work/err" || rc=$?
[[ $rc -eq 0 ]] || { show "$work/err"; fail "sfrun exited $rc"; }
expect_in "$work/err" "warning: the rendezvous address 127.0.0.1 of host 'fakeA' is a loopback address"
for r in 0 1 2 3; do
  expect_in "$logs/$job/rank.$r/stdout" "job_main: rank $r ok"
  expect_not_in "$logs/$job/rank.$r/stdout" "@sfrun-pid"
done
[[ $(grep -c "SF_RANK=" "$work/agent.log") -eq 4 ]] || { show "$work/agent.log"; fail "expected 4 rank command lines"; }
expect_in "$work/agent.log" "SF_LOCAL_RANK=1"
assert_gone $(job_pids "$job")

# The secret: every rank has the same one, and no agent command line shows it.
job=secret$id
"$SFRUN" -n 4 --hostfile "$work/hosts" --agent "$agent" --log-dir "$logs" --job-id "$job" -- \
  sh -c 'printf %s "$SF_JOB_SECRET" >"$0/secret.$SF_RANK"' "$work" 2>"$work/err" || { show "$work/err"; fail "secret job"; }
secret=$(cat "$work/secret.0")
[[ ${#secret} -eq 64 ]] || fail "the secret is '${secret}', not 64 hex digits"
for r in 1 2 3; do [[ $(cat "$work/secret.$r") == "$secret" ]] || fail "rank $r has another secret"; done
expect_not_in "$work/agent.log" "$secret"

# A remote rank killed: the job fails naming it, within 10 s, nothing left.
job=rkill$id
"$SFRUN" -n 4 --hostfile "$work/hosts" --agent "$agent" --log-dir "$logs" --job-id "$job" -- "$LOOP_MAIN" 120 \
  >"$work/out" 2>"$work/err" &
sfrun=$!
cleanups+=("kill -9 $sfrun 2>/dev/null")
wait_pids "$job" 4 30
wait_for "$logs/$job/rank.3/stdout" "rank 3 step 3" 30
pids=$(job_pids "$job")
t0=$(now_ms)
kill -9 "$(cat "$logs/$job/rank.3/pid")"
rc=0
wait "$sfrun" || rc=$?
t1=$(now_ms)
show "$work/err"
(( t1 - t0 <= 10000 )) || fail "sfrun took $((t1 - t0)) ms"
[[ $rc -eq 137 ]] || fail "sfrun exited $rc, expected 137"
expect_in "$work/err" "sfrun: rank 3 exited with code 137 (its program died of signal 9, Killed) — see $logs/$job/rank.3/stdout"
assert_gone $pids
! pgrep -f "SF_JOB_ID=$job" >/dev/null || fail "a rank wrapper of $job is left"

# Ctrl-C with remote ranks.
job=rint$id
"$SFRUN" -n 4 --hostfile "$work/hosts" --agent "$agent" --log-dir "$logs" --job-id "$job" -- "$LOOP_MAIN" 120 \
  >"$work/out" 2>"$work/err" &
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
assert_gone $pids
! pgrep -f "SF_JOB_ID=$job" >/dev/null || fail "a rank wrapper of $job is left"
echo "PASS: remote rank kill reported in $((t1 - t0)) ms"
