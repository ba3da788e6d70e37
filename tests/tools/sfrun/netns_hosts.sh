# Two "hosts" on this machine: network namespaces joined by a veth pair, one address each, and
# `ip netns exec NS sh -c` as the agent. A 2 x 2 job of job_main runs over zmq tcp between
# them, and its traffic crosses the veth. Skipped (exit 77) where `ip netns add` is not
# permitted. The namespaces are removed however the test ends.
source "$TEST_DIR/lib.sh"
two_netns_hosts
job=netns$id
agent='ip netns exec {host} sh -c'
"$SFRUN" -n 4 --hostfile "$work/hosts" --agent "$agent" --dry-run -- "$JOB_MAIN" >"$work/plan" 2>&1 || { show "$work/plan"; fail "dry run"; }
expect_in "$work/plan" "rendezvous tcp://$net.1:"
expect_in "$work/plan" "rank 2 -> host $b local rank 0 of 2"
rx_before=$(ip netns exec "$b" cat "/sys/class/net/vb$id/statistics/rx_bytes")
rc=0
"$SFRUN" -n 4 --hostfile "$work/hosts" --agent "$agent" --log-dir "$logs" --job-id "$job" -- \
  "$JOB_MAIN" sfrun zmq SF_RANK SF_WORLD_SIZE SF_LOCAL_RANK >"$work/out" 2>"$work/err" || rc=$?
show "$work/err"
[[ $rc -eq 0 ]] || { for r in 0 1 2 3; do show "$logs/$job/rank.$r/stderr"; done; fail "sfrun exited $rc"; }
for r in 0 1 2 3; do expect_in "$logs/$job/rank.$r/stdout" "job_main: rank $r ok"; done
rx_after=$(ip netns exec "$b" cat "/sys/class/net/vb$id/statistics/rx_bytes")
(( rx_after - rx_before > 4000 )) || fail "only $((rx_after - rx_before)) bytes crossed the veth into $b"
# The pids the wrappers reported are the programs' (pids are shared across network namespaces).
[[ $(job_pids "$job" | wc -l) -eq 4 ]] || fail "expected 4 pid files"
assert_gone $(job_pids "$job")
echo "PASS: $((rx_after - rx_before)) bytes crossed the veth into $b"
