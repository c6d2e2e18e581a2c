#!/usr/bin/env bash
# One GPU session, as recorded in docs/PERFORMANCE.md. Runs on the GPU host from the repository
# root with a prebuilt binary (scripts/pack-gpu.sh) and, for peer steps, the peers' archives
# (scripts/peers/fetch-peers.sh). Usage: scripts/gpu-session.sh STEP...   (results go to $OUT_DIR)
#   engine        info, calibrate, verify configs/ci.yaml, the broken variant (must exit 2),
#                 run configs/ci.yaml with the stage breakdown, the GPU tests
#   peers-install unpack the .carry/peers/*.tar.xz this call carries into $PEER_SITE (idempotent;
#                 FlashInfer's two archives may come in consecutive calls while the host is warm)
#   peers-check   import each installed peer as its harness does and print versions and kernels
#   smoke         configs/peers-smoke.yaml: ours, then every installed peer on every mapped path
#   decode        configs/decode.yaml: ours, then FLA and FlashInfer, tables with every peer
#   mtp           configs/mtp.yaml, likewise
#   prefill       configs/qwen35-prefill.yaml: ours, then FLA's chunk, FlashQLA and FlashInfer
#                 (OURS glob, default prefill/sm*; VERIFY_HEADS=2 verifies ours on two value heads;
#                 a peer not installed is left out, so installing FlashInfer alone times ours
#                 against it only). PREFILL_SET=sample (here and in peers-warm): the 27 points of
#                 configs/qwen35-prefill-sample.yaml instead, reports named prefill-sample
#   legacy        configs/legacy-sm75.yaml with FLA's fused_recurrent as the control
#   peers-warm    the peers' first-call compiles for every point of the prefill step's config,
#                 WARM_JOBS (9) processes per installed peer side by side, each a slice of the plan,
#                 unverified, one sample: the compile caches below then spare the timed prefill
#                 step its compiles (TileLang compiles 3-4 kernels of 20-60 s per head group). Its
#                 reports are thrown away; run nothing timed beside it
#   peers-cache   pack the peers' compile caches ($PEER_CACHE: Triton kernels and autotune results,
#                 TileLang, CuTe DSL) into $OUT_DIR/peer-cache.tar.xz when under PEER_CACHE_MAX_MB
#                 (40); put it in .carry/peer-cache.tar.xz and carry it, and the next machine skips
#                 the first-call compiles (up to a minute per head group: the first_call_s of the
#                 peer records)
# An op step runs ours first, then each peer, and stops starting work at CALL_BUDGET seconds (default
# 520): peer reports and ours are kept in $PEER_OUT on the host, so the same step run again goes on
# where it stopped (--resume);
# it prints "COMPLETE name" once every report is complete. Each call leaves $OUT_DIR/NAME.peers.md
# (the tables) and NAME.reports.tar.xz (plan, every peer's report and ours); that archive (or its
# JSON files) put in .carry/peer-results/ and carried seeds $PEER_OUT when the host went cold.
# MODE=graph|hot|cold (default cold) is passed to every peer harness and to ours (--mode); a mode
# other than cold names the op's reports NAME-MODE (e.g. prefill-graph). Cold spans include the
# host's gaps between a call's kernels (FlashQLA plans its CP on the host per call); graph mode
# replays a captured call, so it times the device work alone.
set -uo pipefail
cd "$(dirname "$0")/.."
# The prefill step's points and report name (PREFILL_SET=sample: a 27-point same-run check).
if [ "${PREFILL_SET:-full}" = sample ]; then
  PREFILL_CONFIG=configs/qwen35-prefill-sample.yaml PREFILL_NAME=prefill-sample
elif [ "${PREFILL_SET:-full}" = full ]; then
  PREFILL_CONFIG=configs/qwen35-prefill.yaml PREFILL_NAME=prefill
else
  echo "PREFILL_SET=$PREFILL_SET: full or sample"; exit 3
fi
BIN=${BIN:-.carry/gdn/bin}
OUT_DIR=${OUT_DIR:-${OUT:-out}}
PEER_SITE=${PEER_SITE:-/tmp/peers/site}
PEER_OUT=${PEER_OUT:-/tmp/peers/out}
CALL_BUDGET=${CALL_BUDGET:-520}
PEER_CACHE=${PEER_CACHE:-/tmp/peers/cache}
mkdir -p "$OUT_DIR" "$PEER_SITE" "$PEER_OUT" "$PEER_CACHE"
# The peers compile on their first call per shape family; these caches outlive the process, and a
# carried archive of them outlives the machine.
export TRITON_CACHE_DIR="$PEER_CACHE/triton" TRITON_CACHE_AUTOTUNING=1 TILELANG_CACHE_DIR="$PEER_CACHE/tilelang" \
  CUTE_DSL_CACHE_DIR="$PEER_CACHE/cute"
# The peers' fp64 reference results, shared by the harnesses of this host (peerlib/reference_store.py):
# a reference that took a second or more is computed once for FLA, FlashQLA and FlashInfer together
# (never packed).
export GDN_PEER_REF_CACHE=${GDN_PEER_REF_CACHE:-/tmp/peers/refs}
if [ -f .carry/peer-cache.tar.xz ] && [ ! -f "$PEER_CACHE/.unpacked" ]; then
  tar -C "$PEER_CACHE" -xJf .carry/peer-cache.tar.xz && touch "$PEER_CACHE/.unpacked" &&
    echo "peer caches unpacked into $PEER_CACHE ($(du -sh "$PEER_CACHE" | cut -f1))"
fi
G="$BIN/gdnbench"
if [ ! -x "$G" ] && [ -f .carry/gdn.tar.xz ]; then tar -C .carry -xJf .carry/gdn.tar.xz; fi

if [ -z "${GDNBENCH_CUPTI_PATH:-}" ]; then
  cupti=$(find /usr/local /opt /usr/lib -name 'libcupti.so.13*' 2>/dev/null | head -n 1)
  [ -n "$cupti" ] && export GDNBENCH_CUPTI_PATH="$cupti"
fi

# The parts each peer needs in $PEER_SITE (archive markers written by fetch-peers.sh).
declare -A PARTS=([fla]="fla" [flashqla]="flashqla" [flashinfer]="flashinfer-1 flashinfer-2")

peers_install() {
  local a name sum
  mkdir -p "$PEER_SITE/.peers-sha"
  # The old way (scripts/peers/fetch-fla.sh): FLA's wheel in .whl/.
  if compgen -G ".whl/fla_core-*.whl" >/dev/null && [ ! -f "$PEER_SITE/.peers/fla" ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$PEER_SITE" \
      .whl/fla_core-*.whl && mkdir -p "$PEER_SITE/.peers" && echo fla > "$PEER_SITE/.peers/fla"
  fi
  for a in .carry/peers/*.tar.xz; do
    [ -f "$a" ] || continue
    name=$(basename "$a" .tar.xz)
    sum=$(sha256sum "$a" | cut -d' ' -f1)
    if [ -f "$PEER_SITE/.peers/$name" ] && [ "$(cat "$PEER_SITE/.peers-sha/$name" 2>/dev/null)" = "$sum" ]; then
      echo "peers-install: $name already in $PEER_SITE"
      continue
    fi
    xz -dc "$a" | tar -x -C "$PEER_SITE" && echo "$sum" > "$PEER_SITE/.peers-sha/$name" &&
      echo "peers-install: $name unpacked into $PEER_SITE" || echo "peers-install: $name FAILED to unpack"
  done
}

peer_ready() {  # peer_ready NAME: every part of the peer is in $PEER_SITE
  local part
  for part in ${PARTS[$1]}; do [ -f "$PEER_SITE/.peers/$part" ] || return 1; done
}

peer_env() {
  export PYTHONPATH="$PEER_SITE:$PEER_SITE/nvidia_cutlass_dsl/dsl_packages${PYTHONPATH:+:$PYTHONPATH}"
  export TVM_FFI_DISABLE_TORCH_C_DLPACK=1 PYTHONUNBUFFERED=1
}

peers_check() {
  local p part
  peer_env
  for p in fla flashqla flashinfer; do
    if peer_ready "$p"; then
      python3 "scripts/peers/${p}_peer.py" --check-import 2>&1 | tail -n 12
    else
      for part in ${PARTS[$p]}; do
        [ -f "$PEER_SITE/.peers/$part" ] || echo "$p: not installed: carry .carry/peers/$part.tar.xz (peers-install)"
      done
    fi
  done
}

complete() { python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1])).get("complete") else 1)' "$1" 2>/dev/null; }
left() { echo $((START + CALL_BUDGET - SECONDS)); }

# One op: ours first (so a session that runs out of device time still has ours from this session),
# then each peer, all resumed inside the call's budget; once every report is complete, the tables
# with every peer (gdnbench peers). versus NAME CONFIG OURS_GLOB "PEER:VARIANTS ..."
versus() {
  local name=$1 config=$2 ours=$3 spec=$4 item peer variants report budget all=1 peer_args=() without=""
  peer_env
  "$G" plan --config "$config" --json "$PEER_OUT/$name.plan.json" >/dev/null || { echo "plan failed"; return 1; }
  # A cold host: reports from an earlier call (its NAME.reports.tar.xz, carried back) seed the resume.
  if [ -f ".carry/peer-results/$name.reports.tar.xz" ]; then
    local seed f
    seed=$(mktemp -d) && tar -xJf ".carry/peer-results/$name.reports.tar.xz" -C "$seed" &&
      for f in "$seed"/*.json; do [ -f "$PEER_OUT/$(basename "$f")" ] || cp "$f" "$PEER_OUT/"; done
    rm -rf "$seed"
  fi
  local ours_json="$PEER_OUT/$name.ours.json"
  [ -f "$ours_json" ] || [ ! -f ".carry/peer-results/$name.ours.json" ] || cp ".carry/peer-results/$name.ours.json" "$ours_json"
  if complete "$ours_json"; then
    echo "$name: ours complete"
  else
    budget=$(($(left) - 15))
    local resume=()
    [ -f "$ours_json" ] && resume=(--resume "$ours_json")
    if ((budget > 30)); then
      timeout --foreground -k 30 -s INT "$budget" "$G" run --quiet --config "$config" --variant "$ours" --timeout "${OUR_TIMEOUT:-5}" \
        --mode "${MODE:-cold}" --json "$ours_json" "${resume[@]}" | tail -n "${OURS_LOG_LINES:-4}"
    fi
    complete "$ours_json" || all=0
  fi
  for item in $spec; do
    peer=${item%%:*} variants=${item#*:}
    report="$PEER_OUT/$name.$peer.json"
    if ! peer_ready "$peer"; then
      echo "$name: $peer not installed (peers-install with its archives): no $peer column"
      without+=" $peer"
      continue
    fi
    [ -f "$report" ] || [ ! -f ".carry/peer-results/$name.$peer.json" ] || cp ".carry/peer-results/$name.$peer.json" "$report"
    complete "$report" && { echo "$name: $peer report complete"; peer_args+=(--peer "$report"); continue; }
    budget=$(($(left) - ${POINT_RESERVE:-90}))
    if ((budget < 30)); then all=0; continue; fi
    timeout --foreground -k 30 -s INT $((budget + ${POINT_RESERVE:-90})) python3 "scripts/peers/${peer}_peer.py" --plan "$PEER_OUT/$name.plan.json" \
      --out "$report" --resume --budget "$budget" --variants "$variants" --timeout "${PEER_TIMEOUT:-4}" --mode "${MODE:-cold}" 2>&1 |
      grep -v '^ ' | tail -n "${PEER_LOG_LINES:-8}"
    if [ ! -f "$report" ]; then  # it could not start (import, no GPU): no column, but the others still run
      echo "$name: $peer wrote no report: no $peer column"
      without+=" $peer"
      continue
    fi
    peer_args+=(--peer "$report")
    complete "$report" || all=0
  done
  if ((all)) && ((${#peer_args[@]})); then
    "$G" peers "$ours_json" "${peer_args[@]}" --markdown > "$PEER_OUT/$name.peers.md" || all=0
    head -n 1 "$PEER_OUT/$name.peers.md"
  fi
  # The reports hold every sample (can pass the 16 MiB a returned file may have): one xz archive.
  tar -C "$PEER_OUT" -cJf "$OUT_DIR/$name.reports.tar.xz" $(cd "$PEER_OUT" && ls "$name".*.json)
  cp "$PEER_OUT/$name.peers.md" "$OUT_DIR"/ 2>/dev/null
  ((all)) && echo "COMPLETE $name${without:+ (without$without)}" || echo "INCOMPLETE $name: run the same step again (reports in $PEER_OUT and \$OUT)"
}

# The peers' first calls, many processes side by side, so the timed step finds its kernels compiled.
# warm NAME CONFIG "PEER:VARIANTS ..."
warm() {
  local name=$1 config=$2 spec=$3 item peer variants n per i jobs=${WARM_JOBS:-9} t0=$SECONDS
  local dir="$PEER_OUT/warm" plan="$PEER_OUT/warm/$1.plan.json" pids=() tags=()
  peer_env
  mkdir -p "$dir"
  "$G" plan --config "$config" --json "$plan" >/dev/null || { echo "plan failed"; return 1; }
  n=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["points"]))' "$plan")
  per=$(((n + jobs - 1) / jobs))
  for item in $spec; do
    peer=${item%%:*} variants=${item#*:}
    peer_ready "$peer" || { echo "warm: $peer not installed"; continue; }
    for ((i = 0; i < n; i += per)); do
      python3 "scripts/peers/${peer}_peer.py" --plan "$plan" --out "$dir/$name.$peer.$i.json" --first "$i" \
        --count "$per" --variants "$variants" --no-verify --warmup 1 --min-samples 1 --min-time 0 \
        --timeout 0.001 --timer events > "$dir/$name.$peer.$i.log" 2>&1 &
      pids+=($!) tags+=("$peer[$i..$((i + per < n ? i + per - 1 : n - 1))]")
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
}

START=$SECONDS
# MODE=graph (or hot) times peers and ours that way (CUDA-graph replay: no host gaps between a
# call's kernels) and names the op's reports NAME-graph, so they never mix with the cold ones.
suffix=""
[ -n "${MODE:-}" ] && [ "$MODE" != cold ] && suffix="-$MODE"
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
    peers-install) peers_install ;;
    peers-warm) warm "$PREFILL_NAME" "$PREFILL_CONFIG" "fla:fla/chunk flashqla: flashinfer:" ;;
    peers-cache)
      tar -C "$PEER_CACHE" --exclude=.unpacked -cJf "$OUT_DIR/peer-cache.tar.xz" . 2>/dev/null
      mb=$(( $(stat -c %s "$OUT_DIR/peer-cache.tar.xz") / 1048576 ))
      if [ "$mb" -gt "${PEER_CACHE_MAX_MB:-40}" ]; then
        rm -f "$OUT_DIR/peer-cache.tar.xz"; echo "peers-cache: $mb MiB packed, over PEER_CACHE_MAX_MB: not kept"
      else
        echo "peers-cache: $OUT_DIR/peer-cache.tar.xz ($mb MiB; carry it as .carry/peer-cache.tar.xz)"
      fi ;;
    peers-check) peers_check ;;
    smoke) versus "smoke$suffix" configs/peers-smoke.yaml "${OURS:-*}" "fla:fla/chunk,fla/fused_recurrent flashinfer: flashqla:" ;;
    decode) versus "decode$suffix" configs/decode.yaml "${OURS:-decode/fast}" "fla:fla/fused_recurrent flashinfer:" ;;
    mtp) versus "mtp$suffix" configs/mtp.yaml "${OURS:-mtp/fast}" "fla:fla/fused_recurrent flashinfer:" ;;
    legacy) versus "legacy$suffix" configs/legacy-sm75.yaml "${OURS:-prefill/sm75_legacy}" "fla:fla/fused_recurrent" ;;
    prefill)
      # VERIFY_HEADS=n verifies ours on n value heads per case (the fp64 reference of every head of
      # the 171 cells takes longer than a call); the points, and so the peers' plan, are the same.
      config=$PREFILL_CONFIG
      if [ -n "${VERIFY_HEADS:-}" ]; then
        config="$PEER_OUT/$PREFILL_NAME.verify$VERIFY_HEADS.yaml"
        bash scripts/with-verify-heads.sh "$PREFILL_CONFIG" "$VERIFY_HEADS" > "$config" || exit 3
      fi
      versus "$PREFILL_NAME$suffix" "$config" "${OURS:-prefill/sm*}" "fla:fla/chunk flashqla: flashinfer:" ;;
    *) echo "unknown step $step"; exit 3 ;;
  esac
done
