"""gdnbench's sample statistics and stopping rule (src/stats/stats.cpp, src/timing/measure.cpp)
in Python, so a peer's numbers mean exactly what gdnbench's own mean."""

import math
from dataclasses import dataclass

MIN_SAMPLES_FOR_NOISE = 5
MEDIAN_SE_FACTOR = 1.2533  # sqrt(pi / 2): normal-theory standard error of a median
IQR_PER_SIGMA = 1.349


def naive_sum(xs):
    """Left-to-right double sum, like std::accumulate (Python 3.12's sum() compensates)."""
    total = 0.0
    for x in xs:
        total += x
    return total


def quantile_sorted(xs, q):
    """Type-7 quantile (numpy's "linear") of sorted data."""
    if not xs:
        return math.nan
    q = min(max(q, 0.0), 1.0)
    pos = q * (len(xs) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (pos - lo) * (xs[hi] - xs[lo])


def compute_stats(samples):
    """The Stats fields of src/stats/stats.h, as a dict."""
    xs = sorted(samples)
    n = len(xs)
    if n == 0:
        nan = math.nan
        return {"n": 0, "min": nan, "p10": nan, "p25": nan, "median": nan, "mean": nan, "p75": nan,
                "p90": nan, "max": nan, "stdev": nan, "rel_stdev": nan, "noise": math.inf}
    s = {"n": n, "min": xs[0], "max": xs[-1]}
    for name, q in (("p10", 0.10), ("p25", 0.25), ("median", 0.50), ("p75", 0.75), ("p90", 0.90)):
        s[name] = quantile_sorted(xs, q)
    mean = naive_sum(xs) / n  # sorted order, as the C++: the same doubles
    s["mean"] = mean
    if n >= 2:
        stdev = math.sqrt(naive_sum((x - mean) * (x - mean) for x in xs) / (n - 1))
        s["stdev"] = stdev
        s["rel_stdev"] = stdev / mean if mean != 0 else math.nan
    else:
        s["stdev"] = s["rel_stdev"] = math.nan
    if n < MIN_SAMPLES_FOR_NOISE:
        s["noise"] = math.inf
    else:
        se = MEDIAN_SE_FACTOR * ((s["p75"] - s["p25"]) / IQR_PER_SIGMA) / math.sqrt(n)
        if s["median"] > 0:
            s["noise"] = se / s["median"]
        else:
            s["noise"] = 0.0 if se == 0 else math.inf
    return s


@dataclass
class StoppingRule:
    warmup_runs: int = 3        # Triton compiles and autotunes on the first calls
    min_samples: int = 10
    max_samples: int = 100000
    min_time_s: float = 0.05    # minimum accumulated measured time
    max_noise: float = 0.005    # target relative noise of the median
    timeout_s: float = 10.0     # wall-clock limit per point and variant (warm-up excluded)


def should_stop(rule, samples, elapsed_wall_s):
    """(stop, reason): gdnbench's should_stop, reason "noise" | "max_samples" | "timeout"."""
    n = len(samples)
    if n == 0:
        return False, ""
    if n >= max(rule.min_samples, 1):
        if naive_sum(samples) >= rule.min_time_s and compute_stats(samples)["noise"] <= rule.max_noise:
            return True, "noise"
    if rule.max_samples > 0 and n >= rule.max_samples:
        return True, "max_samples"
    if elapsed_wall_s > rule.timeout_s:
        floor_samples = min(max(min(3, rule.min_samples), 1), 3)
        if n >= floor_samples or max(samples) > rule.timeout_s:
            return True, "timeout"
    return False, ""


def kernel_breakdown(per_sample_kernels, median_span):
    """Per kernel name: the median over samples of its per-sample total, in first-seen order.
    per_sample_kernels: one list of (name, seconds) per sample."""
    order, per_name = [], {}
    for kernels in per_sample_kernels:
        totals = {}
        for name, secs in kernels:
            if name not in per_name and name not in totals:
                order.append(name)
            totals[name] = totals.get(name, 0.0) + secs
        for name, t in totals.items():
            per_name.setdefault(name, []).append(t)
    out = []
    for name in order:
        med = quantile_sorted(sorted(per_name[name]), 0.5)
        out.append({"name": name, "median_s": med, "share": med / median_span if median_span > 0 else 0.0})
    return out
