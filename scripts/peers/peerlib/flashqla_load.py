"""Imports FlashQLA (TileLang kernels) for the harness."""

from importlib import metadata
from types import SimpleNamespace


def load():
    import flash_qla
    from flash_qla import chunk_gated_delta_rule

    fns = {"chunk_gated_delta_rule": chunk_gated_delta_rule}
    try:
        from flash_qla.utils.index import prepare_varlen_metadata
        fns["prepare_varlen_metadata"] = prepare_varlen_metadata
    except ImportError:
        pass
    try:
        tilelang = metadata.version("tilelang")
    except metadata.PackageNotFoundError:
        tilelang = "unknown"
    return SimpleNamespace(version=getattr(flash_qla, "__version__", "unknown"), caps={}, fns=fns,
                           harness={"flash_qla": getattr(flash_qla, "__version__", "unknown"), "tilelang": tilelang})
