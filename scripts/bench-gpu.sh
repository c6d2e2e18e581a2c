#!/usr/bin/env bash
# Named GPU benchmark suites: gdnbench's own checks, and our kernels timed beside the peers
# (scripts/peers: FLA, FlashInfer, FlashQLA) on the same points, in the same run, on the same GPU.
#
#   scripts/bench-gpu.sh SUITE...          scripts/bench-gpu.sh --help
#
# Suites:
#   tests           info, calibrate, list; verify configs/ci.yaml; run configs/ci.yaml with the
#                   per-kernel breakdown; then the GPU tests (ctest -L gpu in a build tree, or every
#                   test executable beside a packed binary through scripts/gpu-tests.sh)
#   prefill-edge    verify configs/prefill-edge.yaml (40 serving edge cases) on prefill/sm90 and
#                   prefill/sm80 (each where the GPU runs it)
#   smoke           configs/peers-smoke.yaml: ours, then every installed peer on every mapped path
#   decode          configs/decode.yaml: decode/fast, then FLA's fused_recurrent and FlashInfer
#   mtp             configs/mtp.yaml: mtp/fast, then FLA's fused_recurrent and FlashInfer
#   legacy          configs/legacy-sm75.yaml: prefill/sm75_legacy, then FLA's fused_recurrent
#   prefill         configs/qwen35-prefill.yaml (171 points): prefill/sm*, then FLA's chunk,
#                   FlashQLA and FlashInfer
#   prefill-sample  configs/qwen35-prefill-sample.yaml: 27 of those points, the same peers
#   all             tests prefill-edge smoke decode mtp legacy prefill
#   peers           import each peer from the current Python and print its version, or how to install it
#   peers-warm      the peers' first calls (compiles, autotuning) over the prefill points, WARM_JOBS
#                   processes per peer side by side, untimed: the timed suite then finds its kernels
#                   in the compile caches. Warms the points of WARM (prefill or prefill-sample;
#                   default: the prefill suite named on the same command line, else prefill)
#   peers-install   unpack peer archives made by scripts/peers/fetch-peers.sh (PEER_ARCHIVES,
#                   default .carry/peers) into PEER_SITE, for a GPU host without a package index
#
# A timed suite writes to OUT_DIR (default out/): NAME.plan.json (the points), NAME.ours.json,
# NAME.<peer>.json (each peer's report), NAME.peers.md (the tables), and prints our table and the
# table of ours against every peer. A peer the current Python cannot import is left out, and the
# output says so. Run a suite again to resume it: finished records are kept (--resume). To keep
# a run in results/: python3 scripts/results.py add out/NAME.ours.json out/NAME.fla.json ...
#
# Environment:
#   GDNBENCH        the binary (default build/gdnbench, built if missing). A build packed by
#                   scripts/pack-gpu.sh runs as GDNBENCH=.carry/gdn/bin/gdnbench (.carry/gdn.tar.xz
#                   is unpacked if the folder is not there yet); its GPU test executables sit beside it
#   BUILD_DIR       the build tree (default build)
#   OUT_DIR         where reports go (default out)
#   MODE            cold | hot | graph (default cold), for ours and every peer; a mode other than cold
#                   names the reports NAME-MODE. Graph mode replays a captured call, so it times the
#                   device work without the host's gaps between a call's kernels
#   OURS            our variant glob (defaults above)
#   VERIFY_HEADS    value heads verified per prefill case (default 2, "all" for every head): the
#                   points and their timing are the same, the fp64 reference walks fewer heads
#   CASE_TIMEOUT    seconds of sampling per case, ours and the peers (default: each tool's own)
#   BUDGET          stop starting new work after this many seconds of a suite (default: none); the
#                   reports stay incomplete and the same suite run again goes on
#   PEER_SITE       a folder of peer packages put on PYTHONPATH (default ~/.cache/gdnbench/peers/site)
#   PEER_CACHE      the peers' compile caches (Triton, TileLang, CuTe DSL; default
#                   ~/.cache/gdnbench/peers/cache) unless TRITON_CACHE_DIR etc. are set
#   GDNBENCH_CUPTI_PATH  libcupti for gdnbench's CUPTI timer; found under /usr/local, /opt, /usr/lib
#                   when unset
#
# Exit status: 0 when every suite passed and every report is complete, 1 otherwise, 3 for an
# unknown suite or setting.
set -uo pipefail
# Paths given in the environment are the caller's; the defaults are the repository's.
caller=$PWD
from_caller() { case $1 in /*) echo "$1" ;; *) echo "$caller/$1" ;; esac; }
[ -n "${GDNBENCH:-}" ] && GDNBENCH=$(from_caller "$GDNBENCH")
[ -n "${OUT_DIR:-}" ] && OUT_DIR=$(from_caller "$OUT_DIR")
[ -n "${BUILD_DIR:-}" ] && BUILD_DIR=$(from_caller "$BUILD_DIR")
[ -n "${PEER_ARCHIVES:-}" ] && PEER_ARCHIVES=$(from_caller "$PEER_ARCHIVES")
cd "$(dirname "$0")/.." || exit 4

usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; }
short_usage() {
  echo "usage: scripts/bench-gpu.sh SUITE...   (tests prefill-edge smoke decode mtp legacy prefill prefill-sample all"
  echo "       peers peers-warm peers-install; scripts/bench-gpu.sh --help says what each does)"
}

SUITES_ALL="tests prefill-edge smoke decode mtp legacy prefill"
KNOWN=" tests prefill-edge smoke decode mtp legacy prefill prefill-sample all peers peers-warm peers-install "
case "${1:-}" in
  -h | --help) usage; exit 0 ;;
  "") short_usage >&2; exit 3 ;;
esac
for suite in "$@"; do
  [[ "$KNOWN" == *" $suite "* ]] || { echo "bench-gpu.sh: unknown suite '$suite'" >&2; short_usage >&2; exit 3; }
done
MODE=${MODE:-cold}
case $MODE in cold | hot | graph) ;; *) echo "bench-gpu.sh: MODE=$MODE: cold, hot or graph" >&2; exit 3 ;; esac

BUILD_DIR=${BUILD_DIR:-build}
OUT_DIR=${OUT_DIR:-out}
PEERS_HOME=${XDG_CACHE_HOME:-$HOME/.cache}/gdnbench/peers
PEER_SITE=${PEER_SITE:-$PEERS_HOME/site}
PEER_CACHE=${PEER_CACHE:-$PEERS_HOME/cache}
mkdir -p "$OUT_DIR" "$PEER_CACHE"
suffix=""
[ "$MODE" != cold ] && suffix="-$MODE"

# The binary: a path (a packed build is unpacked from its archive once), else the build tree's.
G=${GDNBENCH:-$BUILD_DIR/gdnbench}
packed_archive="${G%/bin/gdnbench}.tar.xz"
if [ ! -x "$G" ] && [ "$packed_archive" != "$G.tar.xz" ] && [ -f "$packed_archive" ]; then
  echo "unpacking $packed_archive"
  tar -C "$(dirname "$packed_archive")" -xJf "$packed_archive"
fi
ensure_binary() {
  [ -x "$G" ] && return 0
  if [ -n "${GDNBENCH:-}" ]; then echo "bench-gpu.sh: GDNBENCH=$G is not an executable" >&2; exit 3; fi
  echo "building gdnbench into $BUILD_DIR"
  BUILD_DIR=$BUILD_DIR BUILD_TARGETS=gdnbench bash scripts/build.sh || { echo "bench-gpu.sh: the build failed" >&2; exit 4; }
}

if [ -z "${GDNBENCH_CUPTI_PATH:-}" ]; then
  cupti=$(find /usr/local /opt /usr/lib -name 'libcupti.so.13*' 2>/dev/null | head -n 1)
  [ -n "$cupti" ] && export GDNBENCH_CUPTI_PATH="$cupti"
fi

# The peers compile on their first call per shape family; the caches keep what they compiled.
export TRITON_CACHE_DIR=${TRITON_CACHE_DIR:-$PEER_CACHE/triton} TRITON_CACHE_AUTOTUNING=${TRITON_CACHE_AUTOTUNING:-1}
export TILELANG_CACHE_DIR=${TILELANG_CACHE_DIR:-$PEER_CACHE/tilelang} CUTE_DSL_CACHE_DIR=${CUTE_DSL_CACHE_DIR:-$PEER_CACHE/cute}
# The fp64 reference of a large point, computed once for every peer (peerlib/reference_store.py).
export GDN_PEER_REF_CACHE=${GDN_PEER_REF_CACHE:-$PEERS_HOME/refs}
# PEER_SITE first; FlashInfer's CuTe-DSL package is found through a .pth file, which PYTHONPATH
# ignores, so its folder goes on the path too.
if [ -d "$PEER_SITE" ]; then
  export PYTHONPATH="$PEER_SITE:$PEER_SITE/nvidia_cutlass_dsl/dsl_packages${PYTHONPATH:+:$PYTHONPATH}"
fi
export TVM_FFI_DISABLE_TORCH_C_DLPACK=1 PYTHONUNBUFFERED=1

declare -A MODULE=([fla]=fla [flashqla]=flash_qla [flashinfer]=flashinfer)
declare -A PIP=([fla]="fla-core==0.6.0" [flashqla]="flash-qla==0.1.3" [flashinfer]="flashinfer-python==0.7.2.post1")

# A peer is installed when the current Python finds its package (found, not imported: importing
# FlashInfer takes seconds; a peer that is found but cannot start writes no report and says why).
peer_installed() {
  python3 -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec(sys.argv[1]) is None)' "${MODULE[$1]}" 2>/dev/null
}
not_installed() { echo "$1: not installed in $(command -v python3) (pip install ${PIP[$1]}, or see scripts/peers/README.md)"; }

complete() { python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1])).get("complete") else 1)' "$1" 2>/dev/null; }
START=$SECONDS
# Seconds left of BUDGET (a large number without one).
left() { if [ -n "${BUDGET:-}" ]; then echo $((START + BUDGET - SECONDS)); else echo 1000000000; fi; }

# A prefill suite: its config with VERIFY_HEADS value heads verified per case (the same points).
# versus_prefill NAME CONFIG
versus_prefill() {
  local config=$2
  if [ "${VERIFY_HEADS:-2}" != all ]; then
    config="$OUT_DIR/$1.verify${VERIFY_HEADS:-2}.yaml"
    bash scripts/with-verify-heads.sh "$2" "${VERIFY_HEADS:-2}" > "$config" || return 1
  fi
  versus "$1$suffix" "$config" "${OURS:-prefill/sm*}" "fla:fla/chunk flashqla: flashinfer:"
}

# One timed suite: ours first, then each installed peer on the same plan, each resumed from an
# earlier report; then the tables. versus NAME CONFIG OURS_GLOB "PEER:VARIANTS ..."
versus() {
  local name=$1 config=$2 ours=$3 spec=$4 item peer variants report budget all=1 peer_args=() without=""
  local plan="$OUT_DIR/$name.plan.json" ours_json="$OUT_DIR/$name.ours.json" resume=() limit=() timeout=()
  "$G" plan --config "$config" --json "$plan" >/dev/null || { echo "$name: gdnbench plan failed"; return 1; }
  [ -n "${CASE_TIMEOUT:-}" ] && timeout=(--timeout "$CASE_TIMEOUT")
  if complete "$ours_json"; then
    echo "$name: ours complete ($ours_json)"
  else
    [ -f "$ours_json" ] && resume=(--resume "$ours_json")
    budget=$(left)
    if ((budget > 30)); then
      [ -n "${BUDGET:-}" ] && limit=(timeout --foreground -k 30 -s INT "$budget")
      "${limit[@]}" "$G" run --config "$config" --variant "$ours" --mode "$MODE" --json "$ours_json" "${resume[@]}" "${timeout[@]}"
    fi
    complete "$ours_json" || all=0
  fi
  for item in $spec; do
    peer=${item%%:*} variants=${item#*:}
    report="$OUT_DIR/$name.$peer.json"
    if ! peer_installed "$peer"; then
      not_installed "$peer"
      without+=" $peer"
      continue
    fi
    if complete "$report"; then
      echo "$name: $peer complete ($report)"
      peer_args+=(--peer "$report")
      continue
    fi
    budget=$(left)
    if ((budget < 30)); then all=0; continue; fi
    limit=()
    [ -n "${BUDGET:-}" ] && limit=(timeout --foreground -k 30 -s INT $((budget + 90)))
    echo "$name: $peer"
    "${limit[@]}" python3 "scripts/peers/${peer}_peer.py" --plan "$plan" --out "$report" --resume --variants "$variants" \
      --mode "$MODE" ${BUDGET:+--budget "$budget"} "${timeout[@]}" 2>&1 | grep --line-buffered -v '^ '
    if [ ! -f "$report" ]; then  # it could not start (import, no GPU): no column, the others still run
      echo "$name: $peer wrote no report: no $peer column"
      without+=" $peer"
      continue
    fi
    peer_args+=(--peer "$report")
    complete "$report" || all=0
  done
  if ((${#peer_args[@]})) && [ -f "$ours_json" ]; then
    "$G" peers "$ours_json" "${peer_args[@]}"
    "$G" peers "$ours_json" "${peer_args[@]}" --markdown > "$OUT_DIR/$name.peers.md" &&
      echo "$name: tables in $OUT_DIR/$name.peers.md"
  fi
  if ((all)); then
    echo "COMPLETE $name${without:+ (without$without)}"
  else
    echo "INCOMPLETE $name: run the same suite again to go on (reports in $OUT_DIR)"
    return 1
  fi
}

# The peers' first calls over a plan, many processes side by side, so that the timed suite finds
# its kernels compiled. warm NAME CONFIG "PEER:VARIANTS ..."
warm() {
  local name=$1 config=$2 spec=$3 item peer variants n per i jobs=${WARM_JOBS:-9} t0=$SECONDS
  local dir="$OUT_DIR/warm" plan="$OUT_DIR/warm/$1.plan.json" pids=() tags=()
  mkdir -p "$dir"
  "$G" plan --config "$config" --json "$plan" >/dev/null || { echo "warm: gdnbench plan failed"; return 1; }
  n=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["points"]))' "$plan")
  per=$(((n + jobs - 1) / jobs))
  for item in $spec; do
    peer=${item%%:*} variants=${item#*:}
    peer_installed "$peer" || { echo "warm: $peer not installed"; continue; }
    for ((i = 0; i < n; i += per)); do
      python3 "scripts/peers/${peer}_peer.py" --plan "$plan" --out "$dir/$name.$peer.$i.json" --first "$i" \
        --count "$per" --variants "$variants" --no-verify --warmup 1 --min-samples 1 --min-time 0 \
        --timeout 0.001 --timer events > "$dir/$name.$peer.$i.log" 2>&1 &
      pids+=($!) tags+=("${peer}[$i..$((i + per < n ? i + per - 1 : n - 1))]")
    done
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}"
    echo "warm ${tags[$i]}: exit $? ($((SECONDS - t0)) s)"
  done
  python3 - "$dir" "$name" <<'PY'
import glob, json, sys
count = {}
for f in glob.glob(f"{sys.argv[1]}/{sys.argv[2]}.*.*.json"):
    peer = f.rsplit("/", 1)[1].split(".")[1]
    for c in json.load(open(f)).get("cases", []):
        k = count.setdefault(peer, {})
        k[c["status"]] = k.get(c["status"], 0) + 1
        k["first_call_s"] = k.get("first_call_s", 0.0) + (c.get("first_call_s") or 0.0)
for peer, k in sorted(count.items()):
    print(f"warm {peer}: " + ", ".join(f"{s} {v:.0f}" if isinstance(v, float) else f"{s} {v}" for s, v in k.items()))
PY
  rm -f "$dir/$name".*.json
}

peers_check() {
  local p rc=0
  for p in fla flashqla flashinfer; do
    if peer_installed "$p"; then
      python3 "scripts/peers/${p}_peer.py" --check-import 2>&1 | tail -n 12
      ((PIPESTATUS[0] == 0)) || rc=1
    else
      not_installed "$p"
    fi
  done
  return $rc
}

# Archives from scripts/peers/fetch-peers.sh into PEER_SITE; one already unpacked (same sha256) is skipped.
peers_install() {
  local a name sum dir=${PEER_ARCHIVES:-.carry/peers} found=0
  mkdir -p "$PEER_SITE/.peers-sha"
  for a in "$dir"/*.tar.xz; do
    [ -f "$a" ] || continue
    found=1
    name=$(basename "$a" .tar.xz)
    sum=$(sha256sum "$a" | cut -d' ' -f1)
    if [ "$(cat "$PEER_SITE/.peers-sha/$name" 2>/dev/null)" = "$sum" ]; then
      echo "peers-install: $name already in $PEER_SITE"
      continue
    fi
    xz -dc "$a" | tar -x -C "$PEER_SITE" && echo "$sum" > "$PEER_SITE/.peers-sha/$name" &&
      echo "peers-install: $name unpacked into $PEER_SITE" || { echo "peers-install: $name failed to unpack"; return 1; }
  done
  ((found)) || { echo "peers-install: no archives in $dir (scripts/peers/fetch-peers.sh makes them)"; return 1; }
}

# The failures and the summary of a GPU test log.
tests_summary() {
  grep -E '^\[  (FAILED|PASSED|SKIPPED) |^[0-9]+% tests passed|tests failed|Failure|Expected|Which is' "$1" | sort | uniq -c | head -n 60
}

suite_tests() {
  local rc=0 code bindir
  "$G" info
  "$G" calibrate
  "$G" list
  "$G" verify --quiet --config configs/ci.yaml --json "$OUT_DIR/tests.ci-verify.json"
  code=$?; echo "verify configs/ci.yaml: exit $code (0: every case verified)"; ((code == 0)) || rc=1
  "$G" run --config configs/ci.yaml --breakdown --mode "$MODE" --json "$OUT_DIR/tests.ci-run.json" --csv "$OUT_DIR/tests.ci-run.csv"
  code=$?; echo "run configs/ci.yaml: exit $code"; ((code == 0)) || rc=1
  # A build tree runs ctest; a packed binary's GPU test executables sit beside it.
  bindir=$(dirname "$G")
  if [ -f "$bindir/CTestTestfile.cmake" ]; then
    BUILD_DIR=$bindir bash scripts/gpu-tests.sh > "$OUT_DIR/tests.gpu.log" 2>&1
  else
    BIN_DIR=$bindir bash scripts/gpu-tests.sh > "$OUT_DIR/tests.gpu.log" 2>&1
  fi
  code=$?; echo "GPU tests: exit $code (log: $OUT_DIR/tests.gpu.log)"; ((code == 0)) || rc=1
  tests_summary "$OUT_DIR/tests.gpu.log"
  return $rc
}

suite_prefill_edge() {
  local code
  "$G" verify --config configs/prefill-edge.yaml --variant "${OURS:-prefill/sm*0}" --json "$OUT_DIR/prefill-edge$suffix.json"
  code=$?; echo "verify configs/prefill-edge.yaml: exit $code (0: all verified, 2: a failure, 4: a fault)"
  return $((code != 0))
}

# peers-warm's points: WARM, else the prefill suite on the command line, else the full table.
WARM=${WARM:-}
if [ -z "$WARM" ]; then
  WARM=prefill
  [[ " $* " == *" prefill-sample "* && " $* " != *" prefill "* ]] && WARM=prefill-sample
fi
case $WARM in
  prefill) WARM_CONFIG=configs/qwen35-prefill.yaml ;;
  prefill-sample) WARM_CONFIG=configs/qwen35-prefill-sample.yaml ;;
  *) echo "bench-gpu.sh: WARM=$WARM: prefill or prefill-sample" >&2; exit 3 ;;
esac

STEP_PEERS="fla:fla/fused_recurrent flashinfer:"
failed=""
for suite in "$@"; do
  [ "$suite" = all ] && set -- $SUITES_ALL && break
done
for suite in "$@"; do
  echo "=== $suite"
  [ "$suite" = peers ] || [ "$suite" = peers-install ] || ensure_binary
  case $suite in
    tests) suite_tests ;;
    prefill-edge) suite_prefill_edge ;;
    smoke) versus "smoke$suffix" configs/peers-smoke.yaml "${OURS:-*}" "fla:fla/chunk,fla/fused_recurrent flashinfer: flashqla:" ;;
    decode) versus "decode$suffix" configs/decode.yaml "${OURS:-decode/fast}" "$STEP_PEERS" ;;
    mtp) versus "mtp$suffix" configs/mtp.yaml "${OURS:-mtp/fast}" "$STEP_PEERS" ;;
    legacy) versus "legacy$suffix" configs/legacy-sm75.yaml "${OURS:-prefill/sm75_legacy}" "fla:fla/fused_recurrent" ;;
    prefill) versus_prefill prefill configs/qwen35-prefill.yaml ;;
    prefill-sample) versus_prefill prefill-sample configs/qwen35-prefill-sample.yaml ;;
    peers) peers_check ;;
    peers-warm) warm "$WARM" "$WARM_CONFIG" "fla:fla/chunk flashqla: flashinfer:" ;;
    peers-install) peers_install ;;
  esac || failed+=" $suite"
done
if [ -n "$failed" ]; then
  echo "bench-gpu.sh: not passed or not complete:$failed"
  exit 1
fi
