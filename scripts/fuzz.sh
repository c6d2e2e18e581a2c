#!/usr/bin/env bash
# The fuzz targets (tests/fuzz/): the config reader and the report reader under libFuzzer with
# ASan and UBSan, each for SECONDS (default 60), starting from the seed corpus kept in
# tests/fuzz/corpus/. Inputs the fuzzer finds are kept in the build folder only; a crash, a leak,
# a hang (over 10 s on one input) or memory over 2 GiB stops it with the input saved there, and
# this script then exits non-zero.  Usage: scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${1:-60}
FUZZ_DIR=${FUZZ_DIR:-build-fuzz}
GDN_FUZZ_DEPS=1 source scripts/install-deps.sh
cmake -S tests/fuzz -B "$FUZZ_DIR" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$FUZZ_DIR" -j "$(nproc)"
for target in config report; do
  work="$FUZZ_DIR/corpus-$target"
  mkdir -p "$work" "$FUZZ_DIR/findings-$target"
  echo "fuzz_$target: ${SECONDS_EACH} s from tests/fuzz/corpus/$target ($(ls tests/fuzz/corpus/$target | wc -l) seeds)"
  "$FUZZ_DIR/fuzz_$target" "$work" "tests/fuzz/corpus/$target" -max_total_time="$SECONDS_EACH" -timeout=10 \
    -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 -artifact_prefix="$FUZZ_DIR/findings-$target/" \
    2>"$FUZZ_DIR/fuzz_$target.log" || { tail -40 "$FUZZ_DIR/fuzz_$target.log"; exit 1; }
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb|cov:" "$FUZZ_DIR/fuzz_$target.log" | tail -3
done
