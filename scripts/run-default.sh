#!/usr/bin/env bash
# The default sweep: builds, then verifies and times every variant that can run here on
# configs/default.yaml (the CPU backend on a machine without a GPU, CUDA variants too on one),
# writing the report to out/default.json. Extra arguments go to `gdnbench run`.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_TARGETS=gdnbench bash scripts/build.sh  # the program alone: the test suites are scripts/test.sh's
mkdir -p out
exec "${BUILD_DIR:-build}/gdnbench" run --config configs/default.yaml --json out/default.json "$@"
