#!/usr/bin/env bash
# Installs the Debian packages shardflow needs, only those that are missing.
# Safe to run again; needs root (or sudo) only when something is missing. procps and
# iproute2 are for the launcher's tests (ps/pgrep, network namespaces as hosts).
set -euo pipefail

packages=(
  build-essential cmake pkg-config ninja-build
  libcaf-dev libzmq3-dev libsodium-dev cppzmq-dev libmsgpack-cxx-dev
  libopenblas-dev libopenmpi-dev openmpi-bin
  zlib1g-dev libfmt-dev libcli11-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  dataset-fashion-mnist
  fortunes  # real text for the character-level language model (shardflow/data/text_corpus.h)
  procps iproute2
  chromium fonts-dejavu-core  # sfviz's HTML test renders the page in headless Chromium
  clang-14 libclang-rt-14-dev  # the sanitizer builds and libFuzzer (scripts/test_sanitized.sh)
  doxygen  # the API reference (the `docs` target) and its zero-warning test
  python3  # the doc test: runs every code block of README.md and docs/
  python3-dev pybind11-dev python3-numpy python3-pytest  # the Python package and its tests (docs/python.md)
  python3-pip python3-venv  # `pip install .` and its test
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "bootstrap: installing ${missing[*]}" >&2
sudo_cmd=()
[ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
