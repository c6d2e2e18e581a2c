#!/usr/bin/env bash
# Writes CONFIG to stdout with `verify_heads: N` added to every prefill case (the fp64 reference
# of every head of a large sweep takes longer than a GPU call; the points are unchanged).
# Usage: scripts/with-verify-heads.sh CONFIG N > OUT   (exit 3 when no prefill case was found)
set -euo pipefail
config=$1 heads=$2
out=$(sed "s/^    op: prefill\$/    op: prefill\n    verify_heads: $heads/" "$config")
grep -q "verify_heads: $heads" <<< "$out" || { echo "with-verify-heads: no prefill case in $config" >&2; exit 3; }
printf '%s\n' "$out"
