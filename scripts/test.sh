#!/usr/bin/env bash
# README command 2: install, build, and run the whole test suite with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
ctest --test-dir build --output-on-failure --parallel "$(nproc)" --timeout 300 "$@"
