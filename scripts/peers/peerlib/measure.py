"""gdnbench's measurement loop (src/timing/measure.cpp, docs/method.md 7.3) over batches of
samples from any timer with `batch(n) -> [(seconds, [(kernel, seconds), ...]), ...]`: the CUPTI
and CUDA-event timers (timing.py) and the host clock (host_timing.py). Needs neither a GPU nor
Triton."""

import math
import time

from . import stats as st

MAX_BATCH_WALL_S = 1.0


def measure(timer, rule, clock=None):
    """gdnbench's measurement loop over batches of samples (warm-up done by the caller)."""
    t0 = time.monotonic()
    samples, kernels, clocks = [], [], []
    batch, reason = max(rule.min_samples, 1), ""
    while True:
        b0 = time.monotonic()
        got = timer.batch(batch)
        batch_wall = time.monotonic() - b0
        if clock is not None and clock.mhz() > 0:
            clocks.append(clock.mhz())
        for span, ks in got:
            samples.append(span)
            kernels.append(ks)
        now = time.monotonic() - t0
        stop, reason = st.should_stop(rule, samples, now)
        if stop:
            break
        per_sample = max(batch_wall / len(got), 1e-9)
        cap = max(32.0, len(samples) / 16.0)
        cap = min(cap, max(1.0, math.floor(MAX_BATCH_WALL_S / per_sample)))
        if now < rule.timeout_s:
            cap = min(cap, max(1.0, math.ceil((rule.timeout_s - now) / per_sample)))
        if rule.max_samples > 0:
            cap = min(cap, float(rule.max_samples - min(len(samples), rule.max_samples)))
        batch = int(max(1.0, min(batch * 2.0, cap)))
    stats = st.compute_stats(samples, rule.noise)
    breakdown = st.kernel_breakdown(kernels, stats["median"]) if any(kernels) else []
    sums = sorted(sum(s for _, s in ks) for ks in kernels if ks)
    return {
        "samples": samples, "stats": stats, "converged": reason == "noise", "stop_reason": reason,
        "wall_s": time.monotonic() - t0, "kernels": breakdown,
        "sm_clock_mhz": st.quantile_sorted(sorted(clocks), 0.5) if clocks else 0.0,
        "kernels_sum_median_s": st.quantile_sorted(sums, 0.5) if sums else math.nan,
    }
