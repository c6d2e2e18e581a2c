"""Imports FLA for the harness (no torch at module level, so the CPU tests can check the
environment it imports FLA under, with a fake `fla` package)."""

import os
import sys
from types import SimpleNamespace

from . import fla_support

DISPATCH_ENV = "FLA_DISABLE_BACKEND_DISPATCH"


def load_fla():
    """FLA's two entry points and what they accept. Backend dispatch is turned off before FLA is
    imported, so "fla/chunk" is FLA's own Triton path even where FlashQLA is installed (fla-core
    0.6.0 sends chunk_gated_delta_rule to FlashQLA when it can import it)."""
    if os.environ.get(DISPATCH_ENV, "1") != "1":
        print(f"fla_peer: {DISPATCH_ENV}={os.environ[DISPATCH_ENV]} overridden with 1: the FLA peer measures "
              "FLA's own kernels", file=sys.stderr)
    os.environ[DISPATCH_ENV] = "1"
    import fla
    from fla.ops.gated_delta_rule import chunk_gated_delta_rule, fused_recurrent_gated_delta_rule
    try:
        from fla.ops.utils.index import prepare_chunk_indices
    except ImportError:
        prepare_chunk_indices = None
    caps = fla_support.probe_caps(fused_recurrent_gated_delta_rule, chunk_gated_delta_rule)
    if prepare_chunk_indices is None or not {"chunk_indices", "cu_seqlens_cpu"} <= caps.chunk:
        prepare_chunk_indices = None
    dispatch = os.environ.get(DISPATCH_ENV) != "1"
    return SimpleNamespace(version=getattr(fla, "__version__", "unknown"), recurrent=fused_recurrent_gated_delta_rule,
                           chunk=chunk_gated_delta_rule, prepare_chunk_indices=prepare_chunk_indices, caps=caps,
                           dispatch=dispatch,
                           harness={"fla_backend_dispatch": "on" if dispatch else f"off ({DISPATCH_ENV}=1)"})
