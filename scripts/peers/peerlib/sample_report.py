"""A schema-complete report for testing gdnbench's loader against the harnesses' writer
(tests/cpu/test_peer_schema.cpp). No GPU, no torch, no peer: nothing in it is a measurement.

Records: one skip produced by the peer's own rules (PeerDef.sample_skip), and
"<peer>/schema-test" records whose every field is filled, timing included, from made-up samples;
they are status "skipped" with reason "schema test" and timed false, so no table or peer
comparison ever shows them as results."""

from . import report as rp
from . import runner_text
from . import shapes as sh
from . import stats as st

SCHEMA_TEST_REASON = "schema test"

# The cases of tests/peers/schema-points.yaml whose plan points the schema-test records take: each
# op, both gate forms and layouts, odd axes that change the key. A peer's rules skip names its own
# case there (PeerDef.sample_skip).
SCHEMA_CASES = ("schema_prefill", "schema_mtp", "schema_decode", "schema_prefill_dense")


def _point(plan, case):
    """The plan point of `case` (its shape, key, seed, work and tolerances are gdnbench's)."""
    for point in plan["points"]:
        if point["case"] == case:
            return dict(point, shape=sh.normalize(point["shape"]))
    raise SystemExit(f"the plan has no point of case '{case}': write it from tests/peers/schema-points.yaml")


def _synthetic_timing(base_ns, noise):
    # Whole nanoseconds, so the 1 ns rounding of samples_s in the file changes nothing and the
    # C++ statistics of the loaded samples must equal the ones written here.
    samples = [(base_ns + 10 * ((7 * i) % 13 - 6)) * 1e-9 for i in range(40)]
    kernels = [[("schema_kernel_a", x * 0.6), ("schema_kernel_b", x * 0.3)] for x in samples]
    stats = st.compute_stats(samples, noise)
    sums = sorted(sum(s for _, s in ks) for ks in kernels)
    return rp.timing_json("cupti-torch-profiler", samples, stats, True, "noise", 0.25,
                          st.kernel_breakdown(kernels, stats["median"]), 1755.0, st.quantile_sorted(sums, 0.5))


def schema_test_variant(peer):
    return f"{peer.name}/schema-test"


def build(peer, plan):
    devices = [{"index": 0, "name": "schema-test device (not a GPU)", "uuid": "GPU-schema-test",
                "cc_major": 9, "cc_minor": 0, "arch": 90, "sm_count": 132, "l2_bytes": 60 << 20,
                "memory_bytes": 141 << 30, "memory_free_bytes": 140 << 30, "sm_clock_max_mhz": 1980,
                "mem_clock_mhz": 2619, "mem_bus_width": 6144, "driver_version": "13.0", "runtime_version": "13.0",
                "cupti_version": "torch.profiler"}]
    noise = plan["stopping_rule"]["noise"]
    header = {"config": {"path": "schema-test.yaml", "hash": "0123456789abcdef"}}
    doc = rp.report_json("schema-test", [f"{peer.name}_peer.py", "--write-sample-report"], header, "cold", devices,
                         rp.now_iso(), {"name": peer.script, "sample_report": True}, tool_name=peer.name)
    case, variant = peer.sample_skip
    point = _point(plan, case)
    plan_ = peer.plan_point(point["shape"], variant, None)
    assert plan_.skip, f"{peer.name}: the sample skip ({case}) must be skipped by the rules"
    rec = rp.record_json(point, plan_.variant, "cold", devices[0]["name"], status="skipped", reason=plan_.skip,
                         work=point["work"], notes=plan_.notes)
    rec.update(function=plan_.function, timing_method="", wall_s=1.0)
    doc["cases"].append(rec)
    for i, case in enumerate(SCHEMA_CASES, start=1):
        point = _point(plan, case)
        s = point["shape"]
        checks = [rp.check_json("o", 1.5e-3, 0.02, 5e-3, 4096, 0, True),
                  rp.check_json("ht" if s["op"] == "prefill" else "pool", 2.5e-4, 1e-3, 5e-3, 8192, 0, True)]
        rec = rp.record_json(point, schema_test_variant(peer), "cold", devices[0]["name"], status="skipped",
                             reason=SCHEMA_TEST_REASON, verification=rp.verification_json(True, True, "full", 0.5, checks),
                             timing=_synthetic_timing(10000 * (i + 1), noise), work=point["work"],
                             notes=["synthetic record for the schema test: not a measurement"])
        rec.update(function="schema test", timing_method=runner_text.timing_method("cold"), wall_s=1.0)
        doc["cases"].append(rec)
    doc["finished_at"] = rp.now_iso()
    doc["complete"] = True
    return doc


def write(path, peer, plan):
    rp.write_atomic(path, build(peer, plan))
