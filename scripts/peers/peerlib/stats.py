"""The statistics a harness needs while it samples: gdnbench's stopping rule (src/timing/measure.cpp
should_stop) over its noise of the median (src/stats/stats.cpp), with the rule and the noise
estimator's constants read from the plan (`stopping_rule`, written by `gdnbench plan --json` and
`gdnbench run --peers`). The statistics in a record are a courtesy for people reading the file:
gdnbench recomputes them from the record's samples when it reads a peer's records."""

import math
from dataclasses import dataclass


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


def compute_stats(samples, noise):
    """The Stats fields of src/stats/stats.h, as a dict. noise: the plan's
    stopping_rule.noise ({min_samples, median_se_factor, iqr_per_sigma})."""
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
    if n < noise["min_samples"]:
        s["noise"] = math.inf
    else:
        se = noise["median_se_factor"] * ((s["p75"] - s["p25"]) / noise["iqr_per_sigma"]) / math.sqrt(n)
        if s["median"] > 0:
            s["noise"] = se / s["median"]
        else:
            s["noise"] = 0.0 if se == 0 else math.inf
    return s


@dataclass
class StoppingRule:
    warmup_runs: int        # untimed calls first (the first one compiles)
    min_samples: int
    max_samples: int
    min_time_s: float       # minimum accumulated measured time
    max_noise: float        # target relative noise of the median
    timeout_s: float        # wall-clock limit per point and variant (warm-up excluded)
    noise: dict             # the noise estimator's constants


RULE_FIELDS = ("warmup_runs", "min_samples", "max_samples", "min_time_s", "max_noise", "timeout_s", "noise")


def rule_from_plan(plan_rule, **overrides):
    """The plan's stopping_rule, with the harness's flags (not None) over it."""
    missing = [k for k in RULE_FIELDS if k not in plan_rule]
    if missing:
        raise ValueError(f"the plan's stopping_rule lacks {', '.join(missing)}")
    values = {k: plan_rule[k] for k in RULE_FIELDS}
    values.update({k: v for k, v in overrides.items() if v is not None})
    return StoppingRule(**values)


def should_stop(rule, samples, elapsed_wall_s):
    """(stop, reason): gdnbench's should_stop, reason "noise" | "max_samples" | "timeout"."""
    n = len(samples)
    if n == 0:
        return False, ""
    if n >= max(rule.min_samples, 1):
        if naive_sum(samples) >= rule.min_time_s and compute_stats(samples, rule.noise)["noise"] <= rule.max_noise:
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
