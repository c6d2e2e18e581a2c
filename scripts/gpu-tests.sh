#!/usr/bin/env bash
# The GPU tests (ctest label gpu) on a machine with a CUDA device. With a build tree here it
# runs ctest; given a folder of prebuilt test executables (BIN_DIR, e.g. one copied from a build
# machine by scripts/pack-gpu.sh) it runs each of them directly.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ -n "${BIN_DIR:-}" ]; then
  rc=0
  for t in "$BIN_DIR"/gpu_tests; do
    echo "== $(basename "$t")"
    "$t" --gtest_brief=1 || rc=1
  done
  exit $rc
fi
bash scripts/build.sh && exec ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -L gpu "$@"
