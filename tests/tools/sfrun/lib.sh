# Helpers for sfrun's launch tests, sourced by each *.sh here. ctest passes the programs in
# SFRUN, JOB_MAIN, LOOP_MAIN, PORT_HOLDER and this folder in TEST_DIR. Each test works in
# its own temporary directory and uses a job id with its pid in it, so tests run in parallel.
set -u
work=$(mktemp -d "${TMPDIR:-/tmp}/sfrun-test.XXXXXX")
logs=$work/logs
id=$$
cleanups=()
on_exit() {
  local status=$?
  local c
  for c in "${cleanups[@]}"; do eval "$c" || true; done
  rm -rf "$work"
  exit $status
}
trap on_exit EXIT

source "$(dirname "${BASH_SOURCE[0]}")/../assert.sh"
# The pids sfrun wrote for job $1.
job_pids() { cat "$logs/$1"/rank.*/pid 2>/dev/null; }
# wait_pids JOB N SECONDS: until N pid files exist.
wait_pids() {
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    [[ $(job_pids "$1" | wc -l) -ge $2 ]] && return 0
    sleep 0.1
  done
  fail "job $1 did not start $2 ranks within $3 s"
}
# wait_for FILE TEXT SECONDS
wait_for() {
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    grep -qF -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  show "$1"
  fail "'$2' did not appear in $1 within $3 s"
}
# assert_gone PIDS...: none of them is alive. A zombie is dead: it waits only for a parent to
# reap it, and a container's init may never do that for the orphans it inherits.
assert_gone() {
  local p
  for p in "$@"; do
    if kill -0 "$p" 2>/dev/null && [[ $(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | cut -d' ' -f1) != Z ]]; then
      ps -o pid,stat,args -p "$p" >&2 || true
      fail "process $p is still running"
    fi
  done
}
# now_ms: a monotonic-enough clock for timing sfrun's reaction.
now_ms() { date +%s%3N; }
# assert_groups_gone PGIDS...: no live (non-zombie) process is in any of these process groups.
assert_groups_gone() {
  local left
  left=$(ps -eo pgid=,pid=,stat=,args= | awk -v groups=" $* " 'index(groups, " " $1 " ") && $3 !~ /^Z/')
  [[ -z $left ]] || fail "processes left in the ranks' groups: $left"
}
# make_netns_hosts: two network namespaces $a and $b joined by a veth pair ($net.1 and $net.2,
# a subnet of this run's own), lo up in each, and $work/hosts naming them with slots=2 each.
# Returns 1 with the reason in $netns_why where namespaces cannot be made or entered (no
# CAP_SYS_ADMIN; a chroot whose / is no mount point); the namespaces go when the test ends.
make_netns_hosts() {
  a=sfa$id b=sfb$id
  # `ip netns add` mounts /run/netns on itself the first time; where this run made that mount
  # and no namespace is left at the end, it takes it away again (a chroot cannot be removed
  # while it stays). Cleanups run in order: this one after the namespaces' own.
  local unmount=':'
  mountpoint -q /run/netns 2>/dev/null ||
    unmount='[ -z "$(ip netns list 2>/dev/null)" ] && umount /run/netns 2>/dev/null'
  if ! ip netns add "$a" 2>"$work/netns.err"; then
    eval "$unmount" || true
    netns_why="cannot create network namespaces here ($(head -1 "$work/netns.err")): needs root or CAP_SYS_ADMIN"
    return 1
  fi
  cleanups+=("ip netns del $a 2>/dev/null" "ip netns del $b 2>/dev/null" "$unmount")
  if ! ip -n "$a" link set lo up 2>"$work/netns.err"; then
    netns_why="cannot enter a network namespace here ($(head -1 "$work/netns.err"))"
    return 1
  fi
  ip netns add "$b" || fail "ip netns add $b"
  # A subnet of its own for this run: 10.X.Y.0/24 from the pid.
  net=10.$((100 + (id / 250) % 100)).$((id % 250))
  ip link add "va$id" type veth peer name "vb$id" || fail "ip link add veth"
  ip link set "va$id" netns "$a" && ip link set "vb$id" netns "$b" || fail "moving the veth ends"
  ip -n "$a" addr add "$net.1/24" dev "va$id" && ip -n "$b" addr add "$net.2/24" dev "vb$id" || fail "addresses"
  ip -n "$b" link set lo up || fail "lo up in $b"
  ip -n "$a" link set "va$id" up && ip -n "$b" link set "vb$id" up || fail "veth up"
  printf '%s slots=2 addr=%s\n%s slots=2 addr=%s\n' "$a" "$net.1" "$b" "$net.2" >"$work/hosts"
}
# two_netns_hosts: make_netns_hosts, or skip the test (exit 77) saying why.
two_netns_hosts() { make_netns_hosts || skip "$netns_why"; }
