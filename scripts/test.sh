#!/usr/bin/env bash
# The tests: builds, then runs every ctest test. GPU tests (label gpu) skip themselves, with
# the reason, where no CUDA device is present. Extra arguments go to ctest (e.g. -L cpu).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
exec ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j "$(nproc)" "$@"
