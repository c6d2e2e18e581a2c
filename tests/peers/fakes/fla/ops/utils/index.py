def prepare_chunk_indices(cu_seqlens, chunk_size, cu_seqlens_cpu=None):
    raise NotImplementedError("fake")
