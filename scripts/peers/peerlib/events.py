"""Splitting a profile's device events into samples (pure Python, self-tested)."""

import re

BOUNDARY_KERNEL = "gdnpeer_l2_flush"


class TimerError(RuntimeError):
    pass


SYNC_EVENT_NAMES = ("Context Sync", "Stream Sync", "Event Sync", "Stream Wait Event", "Device Sync")
# CUDA runtime / driver API calls (cudaLaunchKernel, cuLaunchKernelEx, ...) are host-side; should a
# profiler ever file them as device events they must not stretch a sample.
API_CALL = re.compile(r"^cu(da)?[A-Z]")


def split_samples(events, n):
    """events: (name, start_ns, end_ns) of device activity. Returns n samples, each
    (span_s, [(name, seconds), ...]); raises TimerError when the events do not form n samples."""
    samples, current = [], None
    for name, start, end in sorted(events, key=lambda e: (e[1], e[2])):
        if name.startswith(BOUNDARY_KERNEL):
            current = []
            samples.append(current)
        elif name in SYNC_EVENT_NAMES or API_CALL.match(name):
            continue
        elif current is not None:
            current.append((name, start, end))
    if len(samples) != n:
        raise TimerError(f"expected {n} boundary kernels in the profile, found {len(samples)}")
    out = []
    for i, evs in enumerate(samples):
        if not evs:
            raise TimerError(f"sample {i} of {n} has no device activity after its boundary kernel")
        span = (max(e[2] for e in evs) - min(e[1] for e in evs)) * 1e-9
        out.append((span, [(e[0], (e[2] - e[1]) * 1e-9) for e in evs]))
    return out
