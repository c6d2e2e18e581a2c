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

_SHAPES = [
    # (case, shape): each op, both gate forms and layouts, odd axes that change the key.
    ("schema_prefill", {"op": "prefill", "gate": "raw", "l2norm": False, "scale": 0.125, "layout": "kv",
                        "seqlens": [5, 9, 17, 33, 65, 129, 257, 513, 1025], "has_h0": False, "inputs": "strong_decay"}),
    ("schema_mtp", {"op": "mtp", "batch": 48, "tokens": 4, "pool": 1000, "indices": "padded", "index_dtype": "i32",
                    "cache_intermediate": True, "update_state": False, "gate": "raw", "state_dtype": "bf16",
                    "input_dtype": "f16"}),
    ("schema_decode", {"op": "decode", "h_qk": 16, "h_v": 64, "batch": 256, "layout": "kv", "inputs": "beta_one",
                       "indices": "high", "pool": 4096}),
    ("schema_prefill_dense", {"op": "prefill", "seqlens": [4096] * 8}),
]


def _point(case, shape, seed):
    s = sh.normalize(shape)
    return {"case": case, "op": s["op"], "seed": seed, "shape": s, "shape_key": sh.shape_key(s)}


def _synthetic_timing(base_ns):
    # Whole nanoseconds, so the 1 ns rounding of samples_s in the file changes nothing and the
    # C++ statistics of the loaded samples must equal the ones written here.
    samples = [(base_ns + 10 * ((7 * i) % 13 - 6)) * 1e-9 for i in range(40)]
    kernels = [[("schema_kernel_a", x * 0.6), ("schema_kernel_b", x * 0.3)] for x in samples]
    stats = st.compute_stats(samples)
    sums = sorted(sum(s for _, s in ks) for ks in kernels)
    return rp.timing_json("cupti-torch-profiler", samples, stats, True, "noise", 0.25,
                          st.kernel_breakdown(kernels, stats["median"]), 1755.0, st.quantile_sorted(sums, 0.5))


def schema_test_variant(peer):
    return f"{peer.name}/schema-test"


def build(peer):
    devices = [{"index": 0, "name": "schema-test device (not a GPU)", "uuid": "GPU-schema-test",
                "cc_major": 9, "cc_minor": 0, "arch": 90, "sm_count": 132, "l2_bytes": 60 << 20,
                "memory_bytes": 141 << 30, "memory_free_bytes": 140 << 30, "sm_clock_max_mhz": 1980,
                "mem_clock_mhz": 2619, "mem_bus_width": 6144, "driver_version": "13.0", "runtime_version": "13.0",
                "cupti_version": "torch.profiler"}]
    plan = {"config": {"path": "schema-test.yaml", "hash": "0123456789abcdef"}}
    doc = rp.report_json("schema-test", [f"{peer.name}_peer.py", "--write-sample-report"], plan, "cold", devices,
                         rp.now_iso(), {"name": peer.script, "sample_report": True}, tool_name=peer.name)
    case, shape, variant = peer.sample_skip
    point = _point(case, shape, 1000)
    plan_ = peer.plan_point(point["shape"], variant, None)
    assert plan_.skip, f"{peer.name}: the sample skip ({case}) must be skipped by the rules"
    rec = rp.record_json(point, plan_.variant, "cold", devices[0]["name"], status="skipped", reason=plan_.skip,
                         work=sh.work_model(point["shape"]), notes=plan_.notes)
    rec.update(function=plan_.function, timing_method="", wall_s=1.0)
    doc["cases"].append(rec)
    for i, (case, shape) in enumerate(_SHAPES, start=1):
        point = _point(case, shape, 1000 + i)
        s = point["shape"]
        checks = [rp.check_json("o", 1.5e-3, 0.02, 5e-3, 4096, 0, True),
                  rp.check_json("ht" if s["op"] == "prefill" else "pool", 2.5e-4, 1e-3, 5e-3, 8192, 0, True)]
        rec = rp.record_json(point, schema_test_variant(peer), "cold", devices[0]["name"], status="skipped",
                             reason=SCHEMA_TEST_REASON, verification=rp.verification_json(True, True, "full", 0.5, checks),
                             timing=_synthetic_timing(10000 * (i + 1)), work=sh.work_model(s),
                             notes=["synthetic record for the schema test: not a measurement"])
        rec.update(function="schema test", timing_method=runner_text.timing_method("cold"), wall_s=1.0)
        doc["cases"].append(rec)
    doc["finished_at"] = rp.now_iso()
    doc["complete"] = True
    return doc


def write(path, peer):
    rp.write_atomic(path, build(peer))
