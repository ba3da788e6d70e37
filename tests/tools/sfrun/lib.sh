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

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
skip() {
  echo "SKIP: $*"
  exit 77
}
show() { echo "--- $1:" >&2; cat "$1" >&2 || true; }
# expect_in FILE TEXT: FILE has TEXT (fixed string).
expect_in() { grep -qF -- "$2" "$1" || { show "$1"; fail "expected '$2' in $1"; }; }
expect_not_in() { ! grep -qF -- "$2" "$1" || { show "$1"; fail "did not expect '$2' in $1"; }; }
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
