#!/usr/bin/env bash
# Builds here (CPU-only is fine: every CUDA target is compiled) and packs what a GPU host needs
# into ${PACK_DIR:-.carry/gdn} (and ${PACK_DIR}.tar.xz): the gdnbench binary and the GPU test
# executable, for a GPU host that does not build. There, `GDNBENCH=.carry/gdn/bin/gdnbench
# scripts/bench-gpu.sh SUITE...` runs the suites with it (unpacking the archive if the folder is
# missing) and the GPU tests beside it. The binary links cudart, yaml-cpp and libstdc++ statically
# and loads CUPTI at run time.
set -euo pipefail
cd "$(dirname "$0")/.."
# PACK_TESTS=0 leaves the GPU test executable (tests/gpu_tests, every tests/gpu/ test in one) out.
targets=gdnbench
[ "${PACK_TESTS:-1}" = 0 ] || targets="gdnbench gpu_tests"
BUILD_TARGETS=$targets bash scripts/build.sh "$@"
PACK_DIR=${PACK_DIR:-.carry/gdn}
rm -rf "$PACK_DIR" && mkdir -p "$PACK_DIR/bin"
cp "${BUILD_DIR:-build}/gdnbench" "$PACK_DIR/bin/"
[ "${PACK_TESTS:-1}" = 0 ] || cp "${BUILD_DIR:-build}/tests/gpu_tests" "$PACK_DIR/bin/"
strip "$PACK_DIR"/bin/* 2>/dev/null || true
# The fat binaries compress about 4x; the archive is what travels to the GPU host.
tar -C "$(dirname "$PACK_DIR")" -cJf "$PACK_DIR.tar.xz" "$(basename "$PACK_DIR")"
du -sh "$PACK_DIR" "$PACK_DIR.tar.xz"
