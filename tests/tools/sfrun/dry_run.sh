# --dry-run prints the rank -> host plan and the command (and --elastic's range and --max-restarts), starts
# nothing and creates nothing. --help names --max-restarts.
source "$TEST_DIR/lib.sh"
"$SFRUN" -n 4 --dry-run --log-dir "$logs" -- "$JOB_MAIN" a b >"$work/out" 2>&1 || { show "$work/out"; fail "rc $?"; }
expect_in "$work/out" "sfrun plan: 4 ranks over zmq on 1 host; rendezvous tcp://127.0.0.1:"
expect_in "$work/out" "rank 0 -> host localhost local rank 0 of 4, binds 127.0.0.1:"
expect_in "$work/out" "rank 3 -> host localhost local rank 3 of 4"
expect_in "$work/out" "logs: $logs/1/rank.R/stdout"
expect_in "$work/out" "command: '$JOB_MAIN' 'a' 'b'"
[[ ! -e $logs ]] || fail "--dry-run created $logs"
# Several hosts: filled in order, at most --nproc-per-node each, remote ones through the agent.
printf 'hostA slots=4 addr=10.1.2.3\n# a comment\nhostB slots=4 addr=10.1.2.4\n' >"$work/hosts"
"$SFRUN" -n 5 --nproc-per-node 3 --hostfile "$work/hosts" --master-port 29555 --dry-run --timeout 7 \
  --agent 'ip netns exec {host} sh -c' -- prog >"$work/out" 2>&1 || { show "$work/out"; fail "rc $?"; }
expect_in "$work/out" "sfrun plan: 5 ranks over zmq on 2 hosts; rendezvous tcp://10.1.2.3:29555"
expect_in "$work/out" "host hostA (addr 10.1.2.3): ranks 0..2, started through \`ip netns exec hostA sh -c\`"
expect_in "$work/out" "rank 3 -> host hostB local rank 0 of 2"
expect_in "$work/out" "command: 'prog' '--comm-timeout' '7'"
# --elastic: the plan, and a note of the range every rank gets.
"$SFRUN" -n 4 --elastic 2:6 --dry-run --log-dir "$logs" -- prog >"$work/out" 2>&1 || { show "$work/out"; fail "rc $?"; }
expect_in "$work/out" "sfrun plan: 4 ranks over zmq on 1 host"
expect_in "$work/out" "elastic 2:6: a rank that fails does not stop the job; every rank gets SF_ELASTIC=2:6"
expect_in "$work/out" "max restarts 0: a member that fails is not replaced"
"$SFRUN" -n 4 --elastic 2:6 --max-restarts 3 --dry-run --log-dir "$logs" -- prog >"$work/out" 2>&1 ||
  { show "$work/out"; fail "rc $?"; }
expect_in "$work/out" \
  "max restarts 3: a member that fails is replaced, at most 3 times in all; the replacement gets SF_ELASTIC_JOIN"
"$SFRUN" --help >"$work/help" 2>&1 || { show "$work/help"; fail "--help: rc $?"; }
expect_in "$work/help" "--max-restarts K"
[[ ! -e $logs ]] || fail "--dry-run --elastic created $logs"
echo PASS
