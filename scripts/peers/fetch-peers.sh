#!/usr/bin/env bash
# Downloads the peers' wheels (FLA, FlashQLA, FlashInfer, for the GPU host's Python 3.12) into the
# git-ignored .peers/, installs each set into a staging folder there, and packs it into
# .carry/peers/*.tar.xz, for a GPU host without a package index. Each archive stays under 60 MiB
# for hosts that take files in limited sizes, so FlashInfer needs two: its CuTe-DSL compiler
# library alone is ~51 MB after xz. `scripts/bench-gpu.sh peers-install` unpacks the archives into
# one site folder on the host.
#
#   scripts/peers/fetch-peers.sh [fla] [flashqla] [flashinfer]     (default: all three)
#
# Archives: fla.tar.xz, flashqla.tar.xz, flashinfer-1.tar.xz (the compiler library),
# flashinfer-2.tar.xz (the rest). Each holds a marker .peers/<archive name> naming its part.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="$root/.peers"
dest="$root/.carry/peers"
mkdir -p "$work/wheels" "$dest"
LIMIT=$((60 * 1024 * 1024))  # the largest archive a size-limited transfer takes with room to spare

declare -A SETS=(
  [fla]="fla-core==0.6.0"
  [flashqla]="flash-qla==0.1.3 tilelang==0.1.15 z3-solver==4.15.4.0 apache-tvm-ffi==0.1.12 torch-c-dlpack-ext==0.1.5"
  [flashinfer]="flashinfer-python==0.7.2.post1 nvidia-cutlass-dsl==4.8.1 nvidia-cutlass-dsl-libs-base==4.8.1 nvidia-cutlass-dsl-libs-core==4.8.1 nvidia-cutlass-dsl-libs-cu13==4.8.1 apache-tvm-ffi==0.1.12"
)
PLATFORMS=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64)
PY=(--python-version 3.12 --implementation cp --only-binary=:all:)
# The one file that makes FlashInfer's set too big for one call.
BIG=nvidia_cutlass_dsl/dsl_packages/cutlass/_mlir/_mlir_libs/_cutlass_ir.cu13.cpython-312-x86_64-linux-gnu.so

pack() {  # pack NAME DIR [tar args...]: DIR's files into $dest/NAME.tar.xz, with a part marker
  local name=$1 dir=$2
  shift 2
  mkdir -p "$dir/.peers" && echo "$name" > "$dir/.peers/$name"
  tar -C "$dir" -cf - "$@" | xz -T2 -7 > "$dest/$name.tar.xz.tmp"
  mv "$dest/$name.tar.xz.tmp" "$dest/$name.tar.xz"
  local size
  size=$(stat -c %s "$dest/$name.tar.xz")
  echo "packed $dest/$name.tar.xz: $((size / 1024 / 1024)) MiB"
  if ((size > LIMIT)); then echo "error: $name.tar.xz is over 60 MiB: split it as flashinfer is split" >&2; exit 1; fi
}

for set in "${@:-fla flashqla flashinfer}"; do
  for one in $set; do
    [[ -n "${SETS[$one]:-}" ]] || { echo "unknown peer '$one' (fla, flashqla, flashinfer)" >&2; exit 2; }
    wheels="$work/wheels/$one"
    site="$work/site-$one"
    mkdir -p "$wheels"
    # shellcheck disable=SC2086 - the set is a list of requirement words
    python3 -m pip download -q --no-deps "${PY[@]}" "${PLATFORMS[@]}" -d "$wheels" ${SETS[$one]}
    rm -rf "$site" && mkdir -p "$site"
    python3 -m pip install -q --no-deps --no-compile --no-index "${PY[@]}" "${PLATFORMS[@]}" --target "$site" \
      "$wheels"/*.whl
    rm -rf "$site/bin"
    if [ -f "$site/z3/lib/libz3.so.4.15" ]; then  # the same 22 MB twice (zip has no links); z3 loads libz3.so
      ln -sf libz3.so "$site/z3/lib/libz3.so.4.15"
    fi
    case $one in
      flashinfer)
        [ -f "$site/$BIG" ] || { echo "error: $BIG not in the FlashInfer set" >&2; exit 1; }
        pack flashinfer-1 "$site" "$BIG" .peers/flashinfer-1
        pack flashinfer-2 "$site" --exclude "./$BIG" --exclude ./.peers/flashinfer-1 .
        ;;
      *) pack "$one" "$site" . ;;
    esac
  done
done
ls -l "$dest"
