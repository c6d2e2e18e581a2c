#!/usr/bin/env bash
# The CPU suite under AddressSanitizer and UndefinedBehaviorSanitizer: a build tree of its own
# (${SANITIZE_DIR:-build-asan}, GDNBENCH_SANITIZE=ON, every C++ file instrumented), kernels for
# sm_90a only (they run on no CPU; one architecture keeps the build short), then the tests of
# label cpu. Any sanitizer report fails the test it happens in. Extra arguments go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/install-deps.sh
SANITIZE_DIR=${SANITIZE_DIR:-build-asan}
command -v nvcc >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B "$SANITIZE_DIR" -DCMAKE_BUILD_TYPE=Release -DGDNBENCH_SANITIZE=ON -DGDNBENCH_CUDA_ARCHS=90a-real \
  -DCMAKE_CUDA_COMPILER="$(command -v nvcc)" >/dev/null
cmake --build "$SANITIZE_DIR" -j "$(nproc)" --target cpu_tests
# protect_shadow_gap=0: the CUDA runtime maps memory where ASan's guard would be (it only asks
# for a device here). Leaks are reported too; a leak fails the test like any other error.
export ASAN_OPTIONS=${ASAN_OPTIONS:-protect_shadow_gap=0:detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ctest --test-dir "$SANITIZE_DIR" -L cpu --output-on-failure -j "$(nproc)" "$@"
