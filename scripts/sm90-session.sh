#!/usr/bin/env bash
# A GPU session of prefill/sm90 (issue 24) for an H100/H200, sized for one 10-minute call. Runs
# from the repository root with the binaries scripts/pack-gpu.sh packs (.carry/gdn/bin, or the
# archive .carry/gdn.tar.xz; BIN=.carry/NAME/bin for another pack) and writes logs and JSON
# reports to $OUT (else out/).
# Usage: scripts/sm90-session.sh [STEP...]   (default: tests edge prefill)
#   tests    gpu_test_prefill_sm90 (edge cases for kernels v1 and v2, 1000 launches bit-identical,
#            v2 bit-identical to v1, batch invariance, graph capture, offsets past 2^31) and the
#            prefill/sm90 cases of gpu_test_variants (the default kernel); TESTS_FILTER (a gtest
#            filter, e.g. '*packed*:*inverse*:*PackedSlot*:*Thousand*') runs a part of the first
#   edge     gdnbench verify configs/prefill-edge.yaml, prefill/sm90 only, for each kernel of
#            KERNELS ("v3 v2 v1"; GDNBENCH_SM90_PLAN=kernel=..., so "v3,cp=2" forces a split too)
#   ab       the kernels of AB_KERNELS ("v1 v2 v3", each "kernel=<it>"; "v3,cp=off" works too)
#            timed on a handful of qwen35 points (16/32 and 2/8 at 1x8192, 1x32768, 1x2048 and
#            1024x8, 16/32 4096x2, 16/64 4096x8), each verified on two value heads first; one table
#            per kernel, with the per-kernel breakdown. AB_SET=cp times the points context
#            parallelism is for instead (2/8 at 1x32768, 1x8192, 1x2048, 28672+4096, 16384x2;
#            16/32 1x32768); AB_SET=wide the many-head, many-sequence ones (16/64, 16/32, 8/32 at
#            4096x8, 8192x4, 16384x2; 16/16 and 16/64 at 1x32768); AB_SET=gva3 the GVA-3 heads
#            (16/48, 8/24 at 4096x8, 8192x4, 16384x2, 4096x2, 1x32768, 1x8192), for
#            AB_KERNELS="v3 v3,prep=group" (the preparation per q/k head; the default at GVA >= 3 since the seventh session, at GVA 2 since the ninth where the grid is deep);
#            AB_KERNELS="v3 v3,slot=packed v3,inverse=f16 v3,inverse=hier v3,slot=packed,inverse=hier"
#            (the eighth session's overrides). After each kernel but the first,
#            gdnbench compare against the first (AB_THRESHOLD, 1 %; AB_COMPARE_TAIL lines, 20)
#   prefill  gdnbench run configs/qwen35-prefill.yaml, prefill/sm90 only (the default kernel): every
#            case verified (on two value heads: the full fp64 reference of 171 cells takes longer
#            than a call) then timed
# Each step stops at its deadline with SIGINT (gdnbench keeps every finished case in its JSON):
# TESTS_DEADLINE (240 s), VARIANTS_DEADLINE (120 s), EDGE_DEADLINE (120 s per kernel), AB_DEADLINE
# (45 s per kernel), PREFILL_DEADLINE (220 s); CASE_TIMEOUT caps the sampling of one case (1 s).
# RESUME=path/to/qwen35.sm90.json continues an interrupted prefill step.
# The v1/v2 A/B in at most about five minutes (the A/B before the edge sweep, v2's edge sweep first):
#   TESTS_DEADLINE=100 VARIANTS_DEADLINE=30 AB_DEADLINE=35 EDGE_DEADLINE=45 scripts/sm90-session.sh tests ab edge
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.carry/gdn/bin}
OUT_DIR=${OUT_DIR:-${OUT:-out}}
mkdir -p "$OUT_DIR"
G="$BIN/gdnbench"
# BIN=.carry/NAME/bin unpacks .carry/NAME.tar.xz (PACK_DIR=.carry/NAME scripts/pack-gpu.sh): two
# builds (a branch beside main) travel in one call and each step runs the one BIN names.
archive="${BIN%/bin}.tar.xz"
if [ ! -x "$G" ] && [ -f "$archive" ]; then tar -C "$(dirname "$archive")" -xJf "$archive"; fi
if [ -z "${GDNBENCH_CUPTI_PATH:-}" ]; then
  cupti=$(find /usr/local /opt /usr/lib -name 'libcupti.so.13*' 2>/dev/null | head -n 1)
  [ -n "$cupti" ] && export GDNBENCH_CUPTI_PATH="$cupti"
fi

# The failures and the summary of a gtest log.
gtest_summary() {
  grep -E '^\[  (FAILED|PASSED|SKIPPED) |Failure|rel_l2|differs|Expected|Which is|error' "$1" | head -n 80
}

steps=${*:-tests edge prefill}
for step in $steps; do
  echo "=== $step ($(date -u +%H:%M:%S))"
  case $step in
    tests)
      "$G" info | head -n 20
      timeout --foreground -k 30 -s INT "${TESTS_DEADLINE:-240}" "$BIN/gpu_test_prefill_sm90" --gtest_filter="${TESTS_FILTER:-*}" \
        > "$OUT_DIR/gpu_test_prefill_sm90.log" 2>&1
      echo "gpu_test_prefill_sm90: exit $?"
      gtest_summary "$OUT_DIR/gpu_test_prefill_sm90.log"
      timeout --foreground -k 30 -s INT "${VARIANTS_DEADLINE:-120}" "$BIN/gpu_test_variants" --gtest_filter='*prefill_sm90*' > "$OUT_DIR/gpu_test_variants.sm90.log" 2>&1
      echo "gpu_test_variants (prefill/sm90): exit $?"
      gtest_summary "$OUT_DIR/gpu_test_variants.sm90.log"
      ;;
    edge)
      for kernel in ${KERNELS:-v3 v2 v1}; do
        tag=$(echo "$kernel" | tr ',=' '-_')
        GDNBENCH_SM90_PLAN="kernel=$kernel" timeout --foreground -k 30 -s INT "${EDGE_DEADLINE:-120}" "$G" verify \
          --config configs/prefill-edge.yaml --variant prefill/sm90 --json "$OUT_DIR/prefill-edge.sm90.$tag.json" \
          > "$OUT_DIR/prefill-edge.sm90.$tag.log" 2>&1
        echo "verify prefill-edge.yaml, kernel $kernel: exit $? (0 all verified, 2 a failure, 4 a fault, 124 deadline)"
        tail -n "${EDGE_TAIL:-40}" "$OUT_DIR/prefill-edge.sm90.$tag.log"
      done
      ;;
    ab)
      ab="$OUT_DIR/sm90-ab.yaml"
      {
        echo "description: prefill/sm90 A/B, set ${AB_SET:-qwen} (scripts/sm90-session.sh ab)"
        printf 'defaults:\n  variant: "*"\n  seed: 20260101\n  head_dim: 128\n  h0: true\n  verify_heads: 2\ncases:\n'
        if [ "${AB_SET:-qwen}" = wide ]; then
          cat <<'YAML'
  - name: wide-many-sequences
    op: prefill
    heads: ["16/64", "16/32", "8/32"]
    seqlens: ["4096x8", "8192x4", "16384x2"]
  - name: wide-one-sequence
    op: prefill
    heads: ["16/16", "16/64"]
    seqlens: "1x32768"
YAML
        elif [ "${AB_SET:-qwen}" = gva3 ]; then
          cat <<'YAML'
  - name: gva3-many-sequences
    op: prefill
    heads: ["16/48", "8/24"]
    seqlens: ["4096x8", "8192x4", "16384x2", "4096x2"]
  - name: gva3-one-sequence
    op: prefill
    heads: ["16/48", "8/24"]
    seqlens: ["1x32768", "1x8192"]
YAML
        elif [ "${AB_SET:-qwen}" = cp ]; then
          cat <<'YAML'
  - name: cp-few-heads
    op: prefill
    heads: "2/8"
    seqlens: ["1x32768", "1x8192", "1x2048", "28672+4096", "16384x2"]
  - name: cp-many-heads
    op: prefill
    heads: "16/32"
    seqlens: "1x32768"
YAML
        else
          cat <<'YAML'
  - name: ab-one-sequence
    op: prefill
    heads: ["16/32", "2/8"]
    seqlens: "1x8192"
  - name: ab-two-sequences
    op: prefill
    heads: "16/32"
    seqlens: "4096x2"
  - name: ab-eight-sequences
    op: prefill
    heads: "16/64"
    seqlens: "4096x8"
  - name: ab-more
    op: prefill
    heads: ["16/32", "2/8"]
    seqlens: ["1x32768", "1x2048", "1024x8"]
YAML
        fi
      } > "$ab"
      base=""
      for kernel in ${AB_KERNELS:-v1 v2 v3}; do
        tag=$(echo "$kernel" | tr ',=' '-_')
        GDNBENCH_SM90_PLAN="kernel=$kernel" timeout --foreground -k 30 -s INT "${AB_DEADLINE:-45}" "$G" run --config "$ab" \
          --variant prefill/sm90 --timeout "${CASE_TIMEOUT:-1}" --breakdown --json "$OUT_DIR/sm90-ab.$tag.json" \
          > "$OUT_DIR/sm90-ab.$tag.log" 2>&1
        echo "ab, kernel $kernel: exit $? (124: deadline reached)"
        tail -n "${AB_TAIL:-25}" "$OUT_DIR/sm90-ab.$tag.log"
        # Each later kernel against the first, case by case (gdnbench compare; exit 1 marks a slower case).
        if [ -z "$base" ]; then
          base="$OUT_DIR/sm90-ab.$tag.json"
        elif [ -f "$base" ] && [ -f "$OUT_DIR/sm90-ab.$tag.json" ]; then
          echo "--- $kernel against ${AB_KERNELS%% *}"
          "$G" compare "$base" "$OUT_DIR/sm90-ab.$tag.json" --threshold "${AB_THRESHOLD:-1}" | tail -n "${AB_COMPARE_TAIL:-20}"
        fi
      done
      ;;
    prefill)
      # The sweep itself, with two verified value heads per case.
      sampled="$OUT_DIR/qwen35-prefill.sampled.yaml"
      bash scripts/with-verify-heads.sh configs/qwen35-prefill.yaml 2 > "$sampled" || exit 3
      timeout --foreground -k 30 -s INT "${PREFILL_DEADLINE:-220}" "$G" run --config "$sampled" --variant prefill/sm90 \
        --timeout "${CASE_TIMEOUT:-1}" --json "$OUT_DIR/qwen35.sm90.json" ${RESUME:+--resume "$RESUME"} \
        > "$OUT_DIR/qwen35.sm90.log" 2>&1
      echo "run qwen35-prefill.yaml: exit $? (124: deadline reached, RESUME=$OUT_DIR/qwen35.sm90.json continues)"
      tail -n 60 "$OUT_DIR/qwen35.sm90.log"
      ;;
    *) echo "unknown step $step"; exit 3 ;;
  esac
done
