"""Imports FlashInfer for the harness and says which of its GDN kernels are usable.

FlashInfer's GDN kernels are CuTe-DSL Python that imports `cutlass`, which the
nvidia-cutlass-dsl wheel puts on the path through a .pth file; a --target install read through
PYTHONPATH ignores .pth files, and FlashInfer then sets the kernels to None without a word. So
the harness adds <site>/nvidia_cutlass_dsl/dsl_packages itself, and turns every kernel that is
still None into a skip reason instead of a crash."""

import importlib
import os
import sys
from importlib import metadata
from types import SimpleNamespace

DSL_PACKAGES = os.path.join("nvidia_cutlass_dsl", "dsl_packages")

# variant (or (variant, state dtype)) -> (module of the kernel, name in flashinfer.gdn_kernels or
# a flag in flashinfer.gdn_decode that must be set)
KERNELS = {
    ("flashinfer/decode_pretranspose", "f32"): ("gdn_decode_pretranspose", "run_pretranspose_decode"),
    ("flashinfer/decode_pretranspose", "bf16"): ("gdn_decode_bf16_state", "_GDN_DECODE_BF16_STATE_AVAILABLE"),
    "flashinfer/decode": ("gdn_decode_nontranspose", "run_nontranspose_decode"),
    "flashinfer/mtp": ("gdn_decode_mtp", "run_mtp_decode"),
}
PREFILL_KERNEL = {9: "chunk_gated_delta_rule_sm90", 10: "chunk_gated_delta_rule_sm100", 12: "chunk_gated_delta_rule_sm120"}


def add_cutlass_dsl_path(path=None):
    """Appends <entry>/nvidia_cutlass_dsl/dsl_packages for every path entry that has one."""
    path = sys.path if path is None else path
    for entry in list(path):
        extra = os.path.join(entry or ".", DSL_PACKAGES)
        if os.path.isdir(extra) and extra not in path:
            path.append(extra)


def _why(module):
    try:
        importlib.import_module(f"flashinfer.gdn_kernels.{module}")
        return "imported, but FlashInfer disabled it"
    except Exception as e:  # noqa: BLE001 - the message is the point
        return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]


def _version(dist):
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def missing_kernels(gdn_kernels, gdn_decode, arch_major):
    """{variant or (variant, dtype): skip reason} for every kernel FlashInfer could not load."""
    missing = {}
    for key, (module, name) in KERNELS.items():
        holder = gdn_decode if name.startswith("_GDN") else gdn_kernels
        if not getattr(holder, name, None):
            missing[key] = (f"FlashInfer's {module} kernel did not load ({_why(module)}); "
                            f"is <site>/{DSL_PACKAGES} on PYTHONPATH?")
    name = PREFILL_KERNEL.get(arch_major)
    if name is None:
        missing["flashinfer/chunk"] = f"FlashInfer's prefill has no kernel for sm_{arch_major}x"
    elif getattr(gdn_kernels, name, None) is None:
        missing["flashinfer/chunk"] = f"FlashInfer's {name} did not load; is <site>/{DSL_PACKAGES} on PYTHONPATH?"
    return missing


def load():
    os.environ.setdefault("TVM_FFI_DISABLE_TORCH_C_DLPACK", "1")  # else a C++ build is tried at import
    add_cutlass_dsl_path()
    import torch

    import flashinfer
    from flashinfer import gdn_decode, gdn_kernels, gdn_prefill

    major = torch.cuda.get_device_capability()[0] if torch.cuda.is_available() else 0
    fns = {n: getattr(gdn_decode, n) for n in ("gated_delta_rule_decode_pretranspose", "gated_delta_rule_decode",
                                               "gated_delta_rule_mtp")}
    fns["chunk_gated_delta_rule"] = gdn_prefill.chunk_gated_delta_rule
    harness = {"flashinfer": flashinfer.__version__, "nvidia-cutlass-dsl": _version("nvidia-cutlass-dsl"),
               "apache-tvm-ffi": _version("apache-tvm-ffi"),
               "TVM_FFI_DISABLE_TORCH_C_DLPACK": os.environ.get("TVM_FFI_DISABLE_TORCH_C_DLPACK", "")}
    return SimpleNamespace(version=flashinfer.__version__, caps=missing_kernels(gdn_kernels, gdn_decode, major),
                           fns=fns, harness=harness)
