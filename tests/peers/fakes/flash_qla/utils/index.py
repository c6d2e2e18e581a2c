"""Fake flash_qla.utils.index.prepare_varlen_metadata (0.1.3)."""
from spec_checks import dtype_in, need, record


def prepare_varlen_metadata(cu_seqlens, cu_seqlens_cpu):
    record("prepare_varlen_metadata", locals())
    need(cu_seqlens.shape == cu_seqlens_cpu.shape, "device and host cu_seqlens agree")
    dtype_in(cu_seqlens_cpu, ("i64",), "cu_seqlens_cpu (it is used as a LongTensor)")
    return cu_seqlens
