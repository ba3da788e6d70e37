# Assertions shared by the tools' shell tests (sourced by each folder's lib.sh): fail, skip
# (ctest's SKIP_RETURN_CODE 77), show a file, and checks on a file's text.
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
# count_in FILE TEXT: how many times TEXT occurs in FILE.
count_in() { grep -oF -- "$2" "$1" | wc -l; }
