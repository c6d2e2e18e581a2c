"""Kernel-only GPU time of one call, as gdnbench measures its own kernels (docs/method.md 7).

Timer "cupti-torch-profiler": CUPTI activity records through torch.profiler (CUDA activity
only). Every sample is: boundary kernel (the L2 flush in cold/graph mode, a one-element write in
hot mode), synchronize, the call, synchronize. The boundary kernel has a name of its own
(gdnpeer_l2_flush), so the device events split into samples by position: a sample's events are
those between its boundary kernel and the next one; its time is the span from the first event's
start to the last one's end (gaps between a multi-kernel call's kernels count, as in gdnbench).

Graph mode (as gdnbench's): the call is captured once in a CUDA graph and each sample replays it;
the flush stays before it and outside the graph. Timer "cuda-graph-events": CUDA events around a
graph replay; the fallback when CUPTI through torch.profiler fails (the record says so)."""

import torch
import triton
import triton.language as tl

from .events import split_samples
from .measure import measure  # noqa: F401 - the loop every timer shares

MIN_FLUSH_BYTES = 64 << 20


@triton.jit(do_not_specialize=["value"])
def gdnpeer_l2_flush(buf, n, value, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    tl.store(buf + offs, value, mask=offs < n)


class Boundary:
    """The kernel before every sample (its name is events.BOUNDARY_KERNEL): overwrites
    max(2 x L2, 64 MiB) (cold, graph) or one element (hot). A different value every round, so no
    two flushes write the same bytes."""

    BLOCK = 4096

    def __init__(self, device, flush):
        props = torch.cuda.get_device_properties(device)
        nbytes = max(2 * int(props.L2_cache_size), MIN_FLUSH_BYTES) if flush else 4
        self.buf = torch.empty(nbytes // 4, dtype=torch.int32, device=device)
        self.round = 0

    def __call__(self):
        self.round = (self.round + 1) & 0x3FFFFFFF
        n = self.buf.numel()
        gdnpeer_l2_flush[(triton.cdiv(n, self.BLOCK),)](self.buf, n, self.round, BLOCK=self.BLOCK)


def _device_events(prof):
    """(name, start_ns, end_ns) of every CUDA-device event of a finished torch.profiler run."""
    cuda = torch.autograd.DeviceType.CUDA
    try:
        raw = prof.profiler.kineto_results.events()
        return [(e.name(), e.start_ns(), e.end_ns()) for e in raw
                if e.device_type() == cuda and not e.is_user_annotation()]
    except AttributeError:
        # Older torch: FunctionEvents in microseconds.
        return [(e.name, int(e.time_range.start * 1e3), int(e.time_range.end * 1e3)) for e in prof.events()
                if e.device_type == cuda]


# ---- timers -------------------------------------------------------------------------------

class CuptiTimer:
    name = "cupti-torch-profiler"

    def __init__(self, launch, boundary):
        self.launch, self.boundary = launch, boundary

    def batch(self, n):
        from torch.profiler import ProfilerActivity, profile
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(n):
                self.boundary()
                torch.cuda.synchronize()
                self.launch()
                torch.cuda.synchronize()
        return split_samples(_device_events(prof), n)


def capture_graph(call):
    """The call captured in a CUDA graph (after one run on the capturing stream); returns replay."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        call()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        call()
    torch.cuda.synchronize()
    return graph.replay


class EventTimer:
    """CUDA events around each launch (meant for a graph replay: one launch, no host gaps)."""

    name = "cuda-graph-events"

    def __init__(self, launch, boundary):
        self.launch, self.boundary = launch, boundary

    def batch(self, n):
        out = []
        for _ in range(n):
            self.boundary()
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            start.record()
            self.launch()
            stop.record()
            stop.synchronize()
            out.append((start.elapsed_time(stop) * 1e-3, []))
        return out


class SmClock:
    """SM clock through NVML when pynvml is importable (0 = unknown)."""

    def __init__(self, uuid):
        self.handle = None
        try:
            import pynvml
            pynvml.nvmlInit()
            self.nvml = pynvml
            self.handle = pynvml.nvmlDeviceGetHandleByUUID(uuid)
        except Exception:  # noqa: BLE001 - no NVML is fine: the clock is optional
            self.handle = None

    def mhz(self):
        if self.handle is None:
            return 0.0
        try:
            return float(self.nvml.nvmlDeviceGetClockInfo(self.handle, self.nvml.NVML_CLOCK_SM))
        except Exception:  # noqa: BLE001
            return 0.0
