#!/usr/bin/env bash
# Installs missing Debian packages, then configures and builds shardflow into ./build.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
# CI (CI=true) turns every compiler warning into an error, so none can come back.
werror=OFF
[ "${CI:-}" = true ] && werror=ON
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSHARDFLOW_WERROR="$werror" >/dev/null
cmake --build build --parallel "$(nproc)"
