"""The timing method every peer record states (pure text, shared by the runner and the sample
report)."""

TIMING_METHOD = ("CUPTI kernel span through torch.profiler (first kernel start to last kernel end of the call, "
                 "gaps included), {flush}, gdnbench's stopping rule (noise of the median <= max_noise after "
                 "min_samples and min_time, or the timeout){graph}")


HOST_TIMING_METHOD = ("host wall clock (time.perf_counter_ns) around one synchronous call per sample, {flush}, "
                      "gdnbench's stopping rule (noise of the median <= max_noise after min_samples and min_time, "
                      "or the timeout)")


def timing_method(mode, host=False):
    if host:
        return HOST_TIMING_METHOD.format(flush="caches not flushed (hot)" if mode == "hot" else
                                         "a buffer of twice the last-level cache (8 to 64 MiB) overwritten before every sample")
    flush = "L2 not flushed (hot)" if mode == "hot" else "L2 flushed before every sample (max(2 x L2, 64 MiB) written)"
    graph = "; the call captured in a CUDA graph and replayed" if mode == "graph" else "; no CUDA graph"
    return TIMING_METHOD.format(flush=flush, graph=graph)
