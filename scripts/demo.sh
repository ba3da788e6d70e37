#!/usr/bin/env bash
# README command 1: install, build, and run the default job (the seed MLP on Fashion-MNIST).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
exec ./build/examples/fashion_mnist_mlp "$@"
