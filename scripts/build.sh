#!/usr/bin/env bash
# Installs missing dependencies, configures and builds gdnbench (Release) into ${BUILD_DIR:-build}.
# Extra arguments go to cmake's configure step (e.g. -DGDNBENCH_CUDA_ARCHS=90).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/install-deps.sh
BUILD_DIR=${BUILD_DIR:-build}
command -v nvcc >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$(command -v nvcc)" "$@" >/dev/null
# BUILD_TARGETS (e.g. "gdnbench") builds only those targets; default: everything, tests included.
cmake --build "$BUILD_DIR" -j "$(nproc)" ${BUILD_TARGETS:+--target $BUILD_TARGETS}
