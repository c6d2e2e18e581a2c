"""Wall-clock time of one call on the host CPU (torch on the CPU, no CUDA device): the harness's
timer where gdnbench's CPU variants use their steady clock (docs/method.md 7.4, timer "host").

One call per sample, time.perf_counter_ns around it; the same stopping rule and statistics as on
the GPU (timing.measure). In cold mode a buffer of twice the host's last-level cache, within
8 to 64 MiB (a VM may report a cache of hundreds of MiB), is overwritten by torch before every
sample, outside the sample: torch's own threads do the writing, so the caches of the cores that
run the call are cycled too. gdnbench's CPU variants
flush line by line instead (clflushopt), which Python cannot reach; the record's notes say which
was used."""

import time

import torch

MIN_FLUSH_BYTES = 8 << 20
MAX_FLUSH_BYTES = 64 << 20


def flush_bytes(llc_bytes):
    return min(max(2 * int(llc_bytes or 0), MIN_FLUSH_BYTES), MAX_FLUSH_BYTES)


class HostFlush:
    """Before every sample: overwrite flush_bytes(llc) (cold) or nothing (hot)."""

    def __init__(self, llc_bytes, flush):
        self.buf = torch.empty(flush_bytes(llc_bytes) // 4, dtype=torch.int32) if flush else None
        self.round = 0

    def __call__(self):
        if self.buf is not None:
            self.round = (self.round + 1) & 0x3FFFFFFF
            self.buf.fill_(self.round)

    def note(self):
        if self.buf is None:
            return "host timer: caches not flushed (hot)"
        return (f"host timer: {self.buf.numel() * 4 >> 20} MiB overwritten by torch before every sample "
                "(gdnbench's CPU variants flush their buffers line by line)")


class HostTimer:
    """perf_counter_ns around one synchronous call per sample."""

    name = "host"

    def __init__(self, launch, flush):
        self.launch, self.flush = launch, flush

    def batch(self, n):
        out = []
        for _ in range(n):
            self.flush()
            t0 = time.perf_counter_ns()
            self.launch()
            out.append(((time.perf_counter_ns() - t0) * 1e-9, []))
        return out


def device_name(report):
    """The record's device, as gdnbench names the host for its CPU variants (CpuBackend)."""
    return "host: " + report["host"]["cpu_model"]


def time_call(call, flush, rule):
    """(timing block, notes) of one call on the host: timing.measure's loop over HostTimer."""
    from . import report as rp
    from .measure import measure
    timer = HostTimer(call, flush)
    m = measure(timer, rule)
    timing = rp.timing_json(timer.name, m["samples"], m["stats"], m["converged"], m["stop_reason"], m["wall_s"],
                            m["kernels"], m["sm_clock_mhz"], m["kernels_sum_median_s"])
    return timing, [flush.note()]
