#!/usr/bin/env bash
# Downloads FLA's ops package (fla-core, pure Python + Triton kernels) as a wheel into the
# git-ignored folder .whl/ at the repository root, for a GPU machine with Python 3.12 that cannot
# reach a package index. Its other needs (torch, triton, einops, packaging) are expected there.
#
#   scripts/peers/fetch-fla.sh [VERSION]      (default 0.6.0, the version the harness was checked against)
#
# Then on the GPU machine, from the repository root:
#   python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
#   export PYTHONPATH=/tmp/site
set -euo pipefail

version="${1:-0.6.0}"
root="$(cd "$(dirname "$0")/../.." && pwd)"
dest="$root/.whl"
mkdir -p "$dest"

# One version of each package: two wheels of fla-core would break the install on the GPU box.
find "$dest" -maxdepth 1 -name 'fla_core-*.whl' ! -name "fla_core-${version}-*" -print -delete

python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
  -d "$dest" "fla-core==${version}"

wheel="$(ls "$dest"/fla_core-"${version}"-*.whl)"
echo "fetched $wheel"
# The harness calls these; fail here rather than on the GPU if a version lacks them.
for needle in "def fused_recurrent_gated_delta_rule(" "def chunk_gated_delta_rule(" "state_v_first"; do
  if ! python3 -c 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); sys.exit(0 if any(sys.argv[2] in z.read(n).decode("utf-8", "replace") for n in z.namelist() if n.startswith("fla/ops/gated_delta_rule/")) else 1)' "$wheel" "$needle"; then
    echo "warning: '$needle' not found in fla/ops/gated_delta_rule of $wheel; the harness may skip points" >&2
  fi
done
