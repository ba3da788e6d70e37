# Helpers for sfviz's tests, sourced by each *.sh here. ctest passes the programs in SFVIZ and
# PNG_CHECK. Each test works in its own temporary directory, removed on exit.
set -u
work=$(mktemp -d "${TMPDIR:-/tmp}/sfviz-test.XXXXXX")
trap 'rm -rf "$work"' EXIT

source "$(dirname "${BASH_SOURCE[0]}")/../assert.sh"

# need_chromium: skips the test where chromium is not installed. chrome ARGS...: headless
# Chromium under `timeout 60` with a fresh profile each time, since a headless Chromium can hang.
need_chromium() {
  chromium=$(command -v chromium || command -v chromium-browser) ||
    skip "chromium is not installed (scripts/bootstrap.sh installs it)"
}
chrome() {
  timeout 60 "$chromium" --headless --no-sandbox --disable-gpu --user-data-dir="$(mktemp -d "$work/profile.XXXXXX")" "$@"
}
