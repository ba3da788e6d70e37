# Helpers for sfviz's tests, sourced by each *.sh here. ctest passes the programs in SFVIZ and
# PNG_CHECK. Each test works in its own temporary directory, removed on exit.
set -u
work=$(mktemp -d "${TMPDIR:-/tmp}/sfviz-test.XXXXXX")
trap 'rm -rf "$work"' EXIT

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
# count_in FILE TEXT: how many times TEXT occurs in FILE.
count_in() { grep -oF -- "$2" "$1" | wc -l; }
