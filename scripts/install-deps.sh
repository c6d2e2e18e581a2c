#!/usr/bin/env bash
# Installs the Debian packages gdnbench builds with, if any is missing. The CUDA toolkit
# (nvcc, CUPTI headers) must already be on the machine: it is not a Debian package here.
set -euo pipefail
pkgs=(cmake make g++ libcli11-dev nlohmann-json3-dev libfmt-dev libeigen3-dev libyaml-cpp-dev libgtest-dev)
# `gdnbench dashboard` inlines Chart.js from Debian's package into the pages it writes.
pkgs+=(libjs-chart.js)
# The dashboard's browser test (tests/dashboard) loads a page in headless Chromium; without it the test skips.
[ -n "${GDN_BROWSER_DEPS:-}" ] && pkgs+=(chromium)
# The fuzz step (scripts/fuzz.sh) also needs clang and its libFuzzer runtime.
[ -n "${GDN_FUZZ_DEPS:-}" ] && pkgs+=(clang libclang-rt-dev)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if ! command -v nvcc >/dev/null 2>&1; then
  for d in /usr/local/cuda/bin /usr/local/cuda-13.0/bin; do [ -x "$d/nvcc" ] && export PATH="$d:$PATH"; done
fi
command -v nvcc >/dev/null 2>&1 || { echo "error: nvcc (CUDA toolkit 13) not found" >&2; exit 4; }
# The Python-kernel tests (tests/python-kernel) run torch on the CPU; without it they skip.
# (An if, not `&&`: this file is sourced, and its last status is the caller's.)
if [ -n "${GDN_TORCH_DEPS:-}" ]; then bash "$(dirname "${BASH_SOURCE[0]}")/install-torch.sh"; fi
