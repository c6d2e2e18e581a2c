#!/usr/bin/env bash
# Installs torch for the Python-kernel tests (tests/python-kernel: kernel_peer.py on the CPU) into
# one folder outside the clone, GDN_TORCH_SITE (default ~/.cache/gdnbench/torch-site), which those
# tests put on PYTHONPATH. Nothing is installed when the current python3 already imports torch or
# the folder already holds this version.
#
# PyPI's Linux torch is the CUDA build: its libraries link against CUDA's. It is installed without
# its dependency list, with only the libraries its shared objects need beyond the CUDA 13 toolkit
# this machine already has (cuSPARSELt, NVSHMEM, NCCL, cuFile) and its small pure-Python
# dependencies. torch.cuda.is_available() is then false on a host without a GPU, and every tensor
# lives on the CPU. About 0.9 GB to download, 2 GB installed.
set -euo pipefail
TORCH_VERSION=2.15.0
SITE="${GDN_TORCH_SITE:-$HOME/.cache/gdnbench/torch-site}"
PY="${PYTHON:-python3}"

if "$PY" -c 'import torch' >/dev/null 2>&1; then
  echo "torch: $("$PY" -c 'import torch; print(torch.__version__)') already importable"
  exit 0
fi
if [ -f "$SITE/.gdnbench-torch-$TORCH_VERSION" ] && PYTHONPATH="$SITE" "$PY" -c 'import torch' >/dev/null 2>&1; then
  echo "torch: $TORCH_VERSION in $SITE"
  exit 0
fi
t0=$SECONDS
rm -rf "$SITE"
mkdir -p "$SITE"
# One pip call: --target replaces a top-level folder (nvidia/) on a second call.
"$PY" -m pip install --quiet --disable-pip-version-check --no-deps --target "$SITE" \
  "torch==$TORCH_VERSION" \
  "nvidia-cusparselt-cu13==0.8.1" "nvidia-nvshmem-cu13==3.7.2" "nvidia-nccl-cu13==2.30.7" \
  "nvidia-cufile==1.17.1.22" \
  "filelock==3.20.0" "typing-extensions==4.15.0" "sympy==1.14.0" "mpmath==1.3.0" "networkx==3.5" \
  "jinja2==3.1.6" "markupsafe==3.0.3" "fsspec==2025.10.0" "numpy==2.3.5"
PYTHONPATH="$SITE" "$PY" -c 'import torch; torch.zeros(1).add_(1)'
touch "$SITE/.gdnbench-torch-$TORCH_VERSION"
echo "torch: $TORCH_VERSION installed in $SITE in $((SECONDS - t0)) s"
