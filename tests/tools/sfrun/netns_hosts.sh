# Two "hosts" on this machine: network namespaces joined by a veth pair, one address each, and
# `ip netns exec NS sh -c` as the agent. A 2 x 2 job of job_main runs over zmq tcp between
# them, and its traffic crosses the veth. Skipped (exit 77) where `ip netns add` is not
# permitted. The namespaces are removed however the test ends.
source "$TEST_DIR/lib.sh"
a=sfa$id b=sfb$id
if ! ip netns add "$a" 2>"$work/netns.err"; then
  skip "cannot create network namespaces here ($(head -1 "$work/netns.err")): needs root or CAP_SYS_ADMIN"
fi
cleanups+=("ip netns del $a 2>/dev/null" "ip netns del $b 2>/dev/null")
ip netns add "$b" || fail "ip netns add $b"
# A subnet of its own for this run: 10.X.Y.0/24 from the pid.
net=10.$((100 + (id / 250) % 100)).$((id % 250))
ip link add "va$id" type veth peer name "vb$id" || fail "ip link add veth"
ip link set "va$id" netns "$a" && ip link set "vb$id" netns "$b" || fail "moving the veth ends"
ip -n "$a" addr add "$net.1/24" dev "va$id" && ip -n "$b" addr add "$net.2/24" dev "vb$id" || fail "addresses"
for ns in "$a" "$b"; do ip -n "$ns" link set lo up || fail "lo up in $ns"; done
ip -n "$a" link set "va$id" up && ip -n "$b" link set "vb$id" up || fail "veth up"
printf '%s slots=2 addr=%s\n%s slots=2 addr=%s\n' "$a" "$net.1" "$b" "$net.2" >"$work/hosts"

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
