"""`<peer>_peer.py --self-test` (the same for every peer): the parts that need no GPU, against hand-computed numbers.
Torch-dependent checks (input distributions, the reference) run on the CPU when torch is
importable and are skipped with a message otherwise. Exit status 0 only when every check passed."""

import math
import sys

from . import events, fla_support, peers, runner_text
from . import report as rp
from . import shapes as sh
from . import stats as st


class Checker:
    def __init__(self):
        self.passed, self.failed = 0, 0

    def __call__(self, cond, what):
        if cond:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAIL: {what}", file=sys.stderr)

    def close(self, a, b, what, rel=1e-12):
        self(abs(a - b) <= rel * max(abs(a), abs(b)), f"{what}: {a!r} != {b!r}")


# The noise estimator and a stopping rule as a plan carries them (stopping_rule): test data here,
# the numbers of src/stats/stats.cpp, which `gdnbench plan --json` writes.
TEST_NOISE = {"min_samples": 5, "median_se_factor": 1.2533, "iqr_per_sigma": 1.349}


def test_rule(**kw):
    values = dict(warmup_runs=2, min_samples=10, max_samples=100000, min_time_s=0.05, max_noise=0.005, timeout_s=15.0,
                  noise=TEST_NOISE)
    values.update(kw)
    return st.StoppingRule(**values)


def test_inputs(kind="standard", hv=8, l2norm=True):
    """A plan point's `inputs` block (src/run/input_distribution.cpp) for the torch checks."""
    strong = kind == "strong_decay"
    g = ({"form": "zero"} if kind == "no_decay" else
         {"form": "strong_decay", "rate_max": 16.0, "softplus_scale": 0.5, "softplus_shift": 1.0} if strong else
         {"form": "logsigmoid", "divisor": 16.0})
    a_log = ({"form": "minus_inf"} if kind == "no_decay" else {"form": "log_rate", "rate_max": 16.0} if strong else
             {"form": "log_uniform", "low": 1.0 / 16.0, "high": 1.0})
    return {"kind": kind, "still_heads_from": (3 * hv + 3) // 4,
            "qk": {"draw": "uniform" if kind == "positive_keys" else "normal", "uniform_scale": 1.0 - 2.0 ** -8,
                   "row_norm": None if l2norm else [0.5, 1.0]},
            "g": g, "beta": {"form": "one" if kind == "beta_one" else "sigmoid"}, "a_log": a_log,
            "dt_bias": {"scale": 0.5, "shift": -2.0},
            "b": {"form": "constant", "value": 100.0} if kind == "beta_one" else {"form": "normal"},
            "padding_every": 8}


def check_stats(c):
    s = st.compute_stats([float(x) for x in range(10, 0, -1)], TEST_NOISE)  # 1..10, unsorted
    c(s["n"] == 10, "n")
    for name, want in (("min", 1.0), ("max", 10.0), ("p10", 1.9), ("p25", 3.25), ("median", 5.5), ("p75", 7.75),
                       ("p90", 9.1), ("mean", 5.5)):
        c.close(s[name], want, f"stats {name}")
    c.close(s["stdev"], math.sqrt(82.5 / 9), "stdev (n - 1)")
    c.close(s["rel_stdev"], math.sqrt(82.5 / 9) / 5.5, "rel_stdev")
    c.close(s["noise"], 1.2533 * (4.5 / 1.349) / math.sqrt(10) / 5.5, "noise of the median")
    c(math.isinf(st.compute_stats([1.0, 2.0, 3.0, 4.0], TEST_NOISE)["noise"]), "noise is infinite below 5 samples")
    c(math.isnan(st.compute_stats([1.0], TEST_NOISE)["stdev"]), "one sample has no stdev")
    rule = test_rule(min_samples=10, min_time_s=0.0, max_noise=0.005, timeout_s=10.0)
    c(st.should_stop(rule, [1e-5] * 10, 0.1) == (True, "noise"), "stop on noise with flat samples")
    c(not st.should_stop(rule, [1e-5] * 9, 0.1)[0], "no stop before min_samples")
    noisy = [1e-5 * (1 + (i % 2)) for i in range(12)]
    c(st.should_stop(rule, noisy, 0.1) == (False, ""), "noisy samples keep sampling")
    c(st.should_stop(rule, noisy, 11.0) == (True, "timeout"), "timeout stops")
    c(st.should_stop(test_rule(max_samples=12, min_time_s=0.0), noisy, 0.1) == (True, "max_samples"),
      "max_samples stops")
    c(not st.should_stop(test_rule(min_samples=10, min_time_s=1.0), [1e-5] * 20, 0.1)[0],
      "min_time_s not reached")
    b = st.kernel_breakdown([[("a", 1.0), ("b", 2.0), ("a", 1.0)], [("b", 4.0), ("a", 3.0)]], 4.0)
    c([k["name"] for k in b] == ["a", "b"], "breakdown keeps first-seen order")
    c.close(b[0]["median_s"], 2.5, "breakdown sums a kernel within a sample, medians across samples")
    c.close(b[1]["share"], 3.0 / 4.0, "breakdown share")


def check_rule_from_plan(c):
    plan_rule = dict(warmup_runs=2, min_samples=10, max_samples=100000, min_time_s=0.05, max_noise=0.005,
                     timeout_s=15.0, noise=TEST_NOISE)
    rule = st.rule_from_plan(plan_rule, min_samples=20, timeout_s=None)
    c(rule.min_samples == 20 and rule.timeout_s == 15.0 and rule.noise == TEST_NOISE,
      "a flag overrides the plan's rule, an unset flag keeps it")
    try:
        st.rule_from_plan({"min_samples": 10})
        c(False, "a plan rule without its fields is refused")
    except ValueError as e:
        c("warmup_runs" in str(e), f"the refusal names what is missing ({e})")
    from types import SimpleNamespace
    from . import cli
    args = SimpleNamespace(warmup=None, min_samples=None, min_time=None, max_noise=None, timeout=None, mode=None)
    plan = {"mode": "hot", "stopping_rule": plan_rule, "points": [{"work": {}, "tolerances": {}, "inputs": {}}]}
    cli.apply_plan(peers.PEERS["fla"], args, plan)
    c(args.mode == "hot" and args.rule.min_samples == 10, "the plan's mode and rule when no flag is given")
    try:
        cli.apply_plan(peers.PEERS["fla"], args, {"mode": "cold", "stopping_rule": plan_rule, "points": [{"work": {}}]})
        c(False, "a plan point without the contract is refused")
    except SystemExit as e:
        c("inputs, tolerances" in str(e), f"the refusal names what the plan lacks ({e})")


def check_events(c):
    flush = events.BOUNDARY_KERNEL
    evs = [(flush, 0, 100), ("k1", 200, 300), ("k2", 350, 500), ("Context Sync", 500, 900),
           ("cudaDeviceSynchronize", 150, 950), ("cuLaunchKernelEx", 120, 130),
           (flush, 1000, 1100), ("k1", 1200, 1290)]
    got = events.split_samples(list(reversed(evs)), 2)
    c.close(got[0][0], 300e-9, "span of a two-kernel sample includes its gap")
    c([n for n, _ in got[0][1]] == ["k1", "k2"], "sync events and API calls are not kernels")
    c.close(got[1][0], 90e-9, "single-kernel span")
    for bad, n in (([(flush, 0, 1), ("k", 2, 3)], 2), ([(flush, 0, 1), (flush, 2, 3), ("k", 4, 5)], 2)):
        try:
            events.split_samples(bad, n)
            c(False, "a profile that does not split must raise")
        except events.TimerError:
            c(True, "")


def check_keys_and_rules(c):
    c(sh.shape_key({"op": "prefill", "seqlens": [8192]}) == "h16/32 d128x128 seq=1x8192 layout=vk gate=log", "prefill key")
    c(sh.shape_key({"op": "prefill", "seqlens": [4096] * 8, "has_h0": False}) ==
      "h16/32 d128x128 seq=4096x8 layout=vk no_h0 gate=log", "dense batch key")
    c(sh.shape_key({"op": "prefill", "seqlens": [3, 3, 3, 3]}) == "h16/32 d128x128 seq=3+3+3+3 layout=vk gate=log",
      "short equal lengths list")
    c(sh.shape_key({"op": "decode", "batch": 32, "scale": 0.125, "l2norm": False}) ==
      "h16/32 d128x128 B=32 state=f32 layout=vk pool=32 idx=identity gate=log no_l2norm scale=0.125", "decode key")
    c(sh.shape_key({"op": "mtp", "batch": 128, "tokens": 4, "index_dtype": "i32", "inputs": "beta_one",
                    "input_dtype": "f16", "gate": "raw", "pool": 512, "indices": "random"}) ==
      "h16/32 d128x128 T=4 B=128 state=f32 layout=vk pool=512 idx=random/i32 cache=0 update=1 gate=raw in=f16 "
      "inputs=beta_one", "mtp key")
    c(sh.shape_key({"op": "decode", "scale": 1.0}).endswith(" scale=1"), "integral scale prints like fmt")
    c(sh.seqlens_label(list(range(1, 11))) == "10seqs/55tok", "long list label")
    plan = fla_support.plan_point(sh.normalize({"op": "decode", "state_dtype": "bf16"}), "fla/fused_recurrent")
    c("fp32" in plan.skip, "bf16 pool skipped")
    plan = fla_support.plan_point(sh.normalize({"op": "mtp", "tokens": 4, "cache_intermediate": True}),
                                  "fla/fused_recurrent")
    c("intermediate" in plan.skip, "cache_intermediate skipped")
    plan = fla_support.plan_point(sh.normalize({"op": "prefill", "seqlens": [64], "dk": 512, "dv": 512}), "fla/chunk")
    c("256" in plan.skip, "chunk head dim > 256 skipped")
    plan = fla_support.plan_point(sh.normalize({"op": "decode", "indices": "padded", "gate": "raw", "layout": "vk"}),
                                  "fla/fused_recurrent")
    c(not plan.skip and plan.raw_gate_in_kernel, "FLA 0.6.0 runs the raw gate in its kernel")
    c(any("state_v_first" in n for n in plan.notes) and "padding rows dropped" in plan.differences,
      "notes name the layout and the padding")
    old = fla_support.Caps(recurrent={"cu_seqlens"}, chunk={"cu_seqlens"}, chunk_gate_in_kernel=False)
    plan = fla_support.plan_point(sh.normalize({"op": "decode", "layout": "vk"}), "fla/fused_recurrent", old)
    c("kv" in plan.skip, "an FLA without state_v_first skips vk")
    plan = fla_support.plan_point(sh.normalize({"op": "decode", "layout": "kv", "gate": "raw"}), "fla/fused_recurrent",
                                  old)
    c(not plan.raw_gate_in_kernel and "raw gate computed outside timing" in plan.differences,
      "an FLA without the in-kernel gate gets g and beta from torch")


def check_report_helpers(c):
    # The sample report needs a plan (tests/cpu/test_peer_schema.cpp writes one and checks it).
    c(rp.finite({"a": [math.nan, 1.0, math.inf], "b": (2, "x")}) == {"a": [None, 1.0, None], "b": [2, "x"]},
      "non-finite numbers are written as null")
    c("flushed" in runner_text.timing_method("cold") and "not flushed" in runner_text.timing_method("hot")
      and "CUDA graph and replayed" in runner_text.timing_method("graph"), "timing method text per mode")


def check_torch(c):
    try:
        import torch
    except ImportError:
        print("torch is not importable here: skipping the input-distribution and reference checks", file=sys.stderr)
        return
    from . import inputs, reference
    s = sh.normalize({"op": "prefill", "h_qk": 2, "h_v": 8, "dk": 16, "dv": 8, "seqlens": [5, 3]})
    t = inputs.make_inputs(s, test_inputs(hv=8), 7, "cpu")
    c(tuple(t["q"].shape) == (8, 2, 16) and t["q"].dtype == torch.bfloat16, "q [T, H, K] bf16")
    c(tuple(t["v"].shape) == (8, 8, 8) and tuple(t["g"].shape) == (8, 8), "v [T, HV, V], g [T, HV]")
    c(tuple(t["h0"].shape) == (2, 8, 8, 16), "h0 vk [N, HV, V, K]")
    c(t["cu_seqlens"] == [0, 5, 8], "cu_seqlens")
    c(bool((t["g"][:, 6:] == 0).all()) and bool((t["g"][:, :6] < 0).all()), "the last quarter of heads has no decay")
    c(bool(((t["beta"] > 0) & (t["beta"] < 1)).all()), "beta in (0, 1)")
    t2 = inputs.make_inputs(s, test_inputs(hv=8), 7, "cpu")
    c(bool(torch.equal(t["q"], t2["q"])), "same seed, same inputs")
    sd = sh.normalize({"op": "decode", "h_qk": 1, "h_v": 4, "dk": 8, "dv": 8, "batch": 16, "pool": 40,
                       "indices": "padded", "inputs": "strong_decay", "layout": "kv"})
    t = inputs.make_inputs(sd, test_inputs("strong_decay", hv=4), 3, "cpu")
    c(tuple(t["pool"].shape) == (40, 4, 8, 8), "pool kv [P, HV, K, V]")
    idx = t["indices"]
    c(int(idx[7]) == -1 and int(idx[15]) == -1 and int((idx >= 0).sum()) == 14, "padded: every 8th row is -1")
    c(len(set(idx[idx >= 0].tolist())) == 14 and int(idx.max()) < 40, "padded: distinct slots inside the pool")
    c(bool((t["g"][..., 0] == 0).all()), "strong_decay: head 0 never decays")
    hi = inputs.make_inputs(sh.normalize({"op": "decode", "batch": 4, "pool": 10, "indices": "high", "h_v": 4,
                                          "h_qk": 4, "dk": 4, "dv": 4}), test_inputs(hv=4), 1, "cpu")["indices"]
    c(sorted(hi.tolist()) == [6, 7, 8, 9], "high: the top slots")
    raw = inputs.make_inputs(sh.normalize({"op": "mtp", "batch": 2, "tokens": 3, "gate": "raw", "h_v": 8, "h_qk": 4,
                                           "dk": 4, "dv": 4, "inputs": "beta_one"}), test_inputs("beta_one", hv=8), 5,
                            "cpu")
    g, b = inputs.gate_from_raw(raw["A_log"], raw["a"], raw["dt_bias"], raw["b"])
    c(tuple(raw["a"].shape) == (2, 3, 8) and raw["a"].dtype == torch.bfloat16, "raw a [B, T, HV] bf16")
    c(bool((g[..., 6:] == 0).all()) and bool((g[..., :6] < 0).all()), "raw gate: no-decay heads have A_log = -inf")
    c(bool((b == 1).all()), "beta_one: sigmoid(100) == 1")

    # The reference against a direct per-token, per-head loop of docs/method.md 1.
    torch.manual_seed(0)
    q, k = torch.randn(7, 2, 4), torch.randn(7, 2, 4)
    v, g, beta = torch.randn(7, 4, 3), -torch.rand(7, 4), torch.rand(7, 4)
    h0 = torch.randn(2, 4, 4, 3)
    cu = [0, 4, 7]
    o, ht = reference.recurrent(q, k, v, g, beta, cu, h0, 0.5, True, [1, 3], 2)
    worst = 0.0
    for n in range(2):
        for j, h in enumerate([1, 3]):
            state = h0[n, h].double()
            for tok in range(cu[n], cu[n + 1]):
                kt, qt = k[tok, h // 2].double(), q[tok, h // 2].double()
                kt, qt = kt / torch.sqrt((kt * kt).sum() + 1e-6), qt / torch.sqrt((qt * qt).sum() + 1e-6)
                state = math.exp(float(g[tok, h])) * state
                d = float(beta[tok, h]) * (v[tok, h].double() - state.T @ kt)
                state = state + torch.outer(kt, d)
                worst = max(worst, float((o[tok, j] - 0.5 * state.T @ qt).abs().max()))
            worst = max(worst, float((ht[n, j] - state).abs().max()))
    c(worst < 1e-12, f"reference matches the per-token loop (max diff {worst:.3g})")

    # The chunked form against the token loop: ragged lengths with an empty sequence, partial last
    # chunks, strong decay, no h0, l2norm off, GVA 2, and chunks of 4 and 64.
    torch.manual_seed(1)
    cu2 = [0, 9, 9, 10, 31]
    q2, k2 = torch.randn(31, 2, 4), torch.randn(31, 2, 4)
    v2, beta2 = torch.randn(31, 4, 3), torch.rand(31, 4)
    for gscale, h0x, l2, chunk in [(1.0, h0, True, 4), (30.0, None, True, 4), (0.0, h0, False, 4), (1.0, h0, True, 64)]:
        g2 = -gscale * torch.rand(31, 4)
        h02 = None if h0x is None else torch.randn(4, 4, 4, 3)
        o_r, s_r = reference.recurrent(q2, k2, v2, g2, beta2, cu2, h02, 0.3, l2, [0, 1, 3], 2)
        o_c, s_c = reference.chunked(q2, k2, v2, g2, beta2, cu2, h02, 0.3, l2, [0, 1, 3], 2, chunk=chunk)
        rel = max(float((o_c - o_r).norm() / o_r.norm()), float((s_c - s_r).norm() / s_r.norm()))
        c(o_c.shape == o_r.shape and s_c.shape == s_r.shape and rel < 1e-10,
          f"chunked reference (chunk {chunk}, decay x{gscale}, h0 {h0x is not None}, l2norm {l2}) matches the token loop "
          f"(rel {rel:.2g})")
    chk = reference.check("o", o + 1e-3, o, 5e-3)
    c(chk["passed"] and 0 < chk["rel_l2"] < 5e-3 and chk["nonfinite"] == 0, "check passes a small error")
    bad = o.clone()
    bad[0, 0, 0] = float("nan")
    c(not reference.check("o", bad, o, 5e-3)["passed"], "check fails a NaN")


def run():
    c = Checker()
    for part in (check_stats, check_rule_from_plan, check_events, check_keys_and_rules, check_report_helpers, check_torch):
        part(c)
    print(f"peer harness self-test: {c.passed} checks passed, {c.failed} failed")
    return 0 if c.failed == 0 else 1
