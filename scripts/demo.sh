#!/usr/bin/env bash
# README command 1: install, build, and run the default job (scripts/default_job.sh: seed 001's
# network on 8 virtual devices, operator-parallel, on Fashion-MNIST, with the IR dump written).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
echo "The Python package is built too: PYTHONPATH=build/python python3 -c 'import shardflow' (or pip install .; docs/python.md)"
exec bash scripts/default_job.sh "$@"
