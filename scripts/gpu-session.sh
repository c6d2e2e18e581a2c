#!/usr/bin/env bash
# One GPU session, as recorded in docs/PERFORMANCE.md. Runs on the GPU host from the repository
# root with a prebuilt binary (scripts/pack-gpu.sh) and, for peer steps, the FLA wheel
# (scripts/peers/fetch-fla.sh). Usage: scripts/gpu-session.sh STEP...   (results go to $OUT_DIR)
#   engine  info, calibrate, verify configs/ci.yaml, the broken variant (must exit 2),
#           run configs/ci.yaml with the stage breakdown, the GPU tests
#   decode  configs/decode.yaml: FLA (scripts/peers) then ours, with FLA beside us per shape
#   mtp     configs/mtp.yaml, likewise
#   legacy  configs/legacy-sm75.yaml, likewise (FLA's fused_recurrent is the control)
#   prefill configs/qwen35-prefill.yaml, likewise (FLA's chunk)
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.carry/gdn/bin}
OUT_DIR=${OUT_DIR:-${OUT:-out}}
mkdir -p "$OUT_DIR"
G="$BIN/gdnbench"
if [ ! -x "$G" ] && [ -f .carry/gdn.tar.xz ]; then tar -C .carry -xJf .carry/gdn.tar.xz; fi

if [ -z "${GDNBENCH_CUPTI_PATH:-}" ]; then
  cupti=$(find /usr/local /opt /usr/lib -name 'libcupti.so.13*' 2>/dev/null | head -n 1)
  [ -n "$cupti" ] && export GDNBENCH_CUPTI_PATH="$cupti"
fi

peer_setup() {
  [ -n "${PEER_READY:-}" ] && return
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl &&
    export PYTHONPATH=/tmp/site PEER_READY=1
}

# ours vs FLA on one sweep: FLA first (its own process), then ours with --peer.
# PEER_TIMEOUT / OUR_TIMEOUT cap the sampling seconds per point (defaults 4 and 5).
versus() {
  local name=$1 config=$2 ours=$3 peer_ops=$4 peer_variants=$5
  peer_setup
  "$G" plan --config "$config" --json "$OUT_DIR/$name.plan.json" >/dev/null
  PYTHONUNBUFFERED=1 python3 scripts/peers/fla_peer.py --plan "$OUT_DIR/$name.plan.json" --ops "$peer_ops" \
    --variants "$peer_variants" --timeout "${PEER_TIMEOUT:-4}" --out "$OUT_DIR/$name.fla.json" 2>&1 | tail -n 3
  "$G" run --quiet --config "$config" --variant "$ours" --timeout "${OUR_TIMEOUT:-5}" \
    --json "$OUT_DIR/$name.ours.json" --peer "$OUT_DIR/$name.fla.json"
}

for step in "$@"; do
  echo "=== $step"
  case $step in
    engine)
      "$G" info
      "$G" calibrate
      "$G" list
      "$G" verify --quiet --config configs/ci.yaml --json "$OUT_DIR/ci-verify.json"
      echo "verify ci.yaml: exit $?"
      "$G" verify --quiet --config tests/data/broken-gpu.yaml
      echo "verify broken-gpu.yaml: exit $? (2 expected)"
      "$G" run --config configs/ci.yaml --breakdown --json "$OUT_DIR/ci-run.json" --csv "$OUT_DIR/ci-run.csv"
      echo "run ci.yaml: exit $?"
      BIN_DIR="$BIN" bash scripts/gpu-tests.sh > "$OUT_DIR/gpu-tests.log" 2>&1
      echo "gpu tests: exit $?"; grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT_DIR/gpu-tests.log" | sort | uniq -c | head -40
      ;;
    decode) versus decode configs/decode.yaml 'decode/fast' decode fla/fused_recurrent ;;
    mtp) versus mtp configs/mtp.yaml 'mtp/fast' mtp fla/fused_recurrent ;;
    legacy) versus legacy configs/legacy-sm75.yaml 'prefill/sm75_legacy' prefill fla/fused_recurrent ;;
    prefill) versus prefill configs/qwen35-prefill.yaml 'prefill/*' prefill fla/chunk,fla/fused_recurrent ;;
    *) echo "unknown step $step"; exit 3 ;;
  esac
done
