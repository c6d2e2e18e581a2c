"""gdnbench's Shape as the plan JSON writes it (src/report/json_report.cpp, to_json(Shape)), with
the derived values the mappings need and the canonical key (src/core/shape.cpp; a record carries
the plan's key, this one checks it and names the reference store's entries). The work model and
the tolerances are not here: the plan carries them per point."""

import math

# Defaults of src/core/shape.h: a field missing from the JSON keeps them.
DEFAULTS = {
    "op": "prefill", "h_qk": 16, "h_v": 32, "dk": 128, "dv": 128, "input_dtype": "bf16",
    "l2norm": True, "gate": "log", "inputs": "standard", "scale": 0.0, "seqlens": [],
    "has_h0": True, "batch": 1, "tokens": 1, "state_dtype": "f32", "layout": "vk", "pool": 0,
    "indices": "identity", "index_dtype": "i64", "cache_intermediate": False, "update_state": True,
    "rollback": False, "plan": "", "checkpoint_every": 0, "checkpoint_at": [],
}


def normalize(shape):
    """A full shape dict: the plan's fields over the defaults (the plan writes every field)."""
    out = dict(DEFAULTS)
    out.update(shape)
    out["seqlens"] = [int(x) for x in out["seqlens"]]
    return out


def pool_slots(s):
    return s["pool"] if s["pool"] > 0 else (len(s["seqlens"]) if s["op"] == "prefill" else s["batch"])


def total_tokens(s):
    if s["op"] == "prefill":
        return sum(s["seqlens"])
    return s["batch"] * (s["tokens"] if s["op"] == "mtp" else 1)


def num_sequences(s):
    return len(s["seqlens"]) if s["op"] == "prefill" else s["batch"]


def effective_scale(s):
    return s["scale"] if s["scale"] > 0 else 1.0 / math.sqrt(s["dk"])


def state_update_work(s):
    """Token-head state updates times K V: the size of the recurrence a reference must run."""
    return total_tokens(s) * s["h_v"] * s["dk"] * s["dv"]


# ---- key (src/core/shape.cpp) ---------------------------------------------------------------

def seqlens_label(seqlens):
    if not seqlens:
        return "-"
    n, first = len(seqlens), seqlens[0]
    if all(x == first for x in seqlens):
        if n == 1:
            return f"1x{first}"
        if first > n:
            return f"{first}x{n}"
    if n <= 8:
        return "+".join(str(x) for x in seqlens)
    return f"{n}seqs/{sum(seqlens)}tok"


def _fnv_lengths(seqlens):
    h = 1469598103934665603
    for x in seqlens:
        h = ((h ^ (x & 0xFFFFFFFFFFFFFFFF)) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h & 0xFFFFFFFF


def _fmt_double(x):
    """fmt's "{}" for a double: the shortest round-trip text, without Python's trailing ".0"."""
    text = repr(float(x))
    return text[:-2] if text.endswith(".0") else text


def checkpoint_part(s):
    """The checkpoints' part of a prefill key (src/core/axes.cpp checkpoint_part)."""
    if s["checkpoint_every"] > 0:
        return f" ckpt={s['checkpoint_every']}"
    table = s["checkpoint_at"]
    if not table:
        return ""
    text = "at:" + "/".join("+".join(str(p) for p in group) for group in table)
    if len(text) <= 48:
        return f" ckpt={text}"
    h, count = 1469598103934665603, 0
    for group in table:
        h = ((h ^ len(group)) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
        for p in group:
            h = ((h ^ (p & 0xFFFFFFFFFFFFFFFF)) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
            count += 1
    return f" ckpt=at:{count}pos#{h & 0xFFFFFFFF:08x}"


def shape_key(shape):
    s = normalize(shape)
    k = f"h{s['h_qk']}/{s['h_v']} d{s['dk']}x{s['dv']}"
    op = s["op"]
    if op == "prefill":
        k += f" seq={seqlens_label(s['seqlens'])}"
        if len(s["seqlens"]) > 8:
            k += f"#{_fnv_lengths(s['seqlens']):08x}"
        pooled = s["pool"] > 0  # the pool form: state, pool and indices are part of the key
        if pooled:
            k += f" state={s['state_dtype']}"
        k += f" layout={s['layout']}{'' if s['has_h0'] else ' no_h0'}"
        if pooled:
            k += f" pool={s['pool']} idx={s['indices']}"
            if s["index_dtype"] != "i64":
                k += f"/{s['index_dtype']}"
        k += checkpoint_part(s)
    else:
        if op == "mtp":
            k += f" T={s['tokens']}"
        k += (f" B={s['batch']} state={s['state_dtype']} layout={s['layout']} pool={pool_slots(s)}"
              f" idx={s['indices']}")
        if s["index_dtype"] != "i64":
            k += f"/{s['index_dtype']}"
        if op == "mtp":
            k += f" cache={int(bool(s['cache_intermediate']))} update={int(bool(s['update_state']))}"
            if s["rollback"]:
                k += " rollback=1"
    k += f" gate={s['gate']}"
    if not s["l2norm"]:
        k += " no_l2norm"
    if s["input_dtype"] != "bf16":
        k += f" in={s['input_dtype']}"
    if s["inputs"] != "standard":
        k += f" inputs={s['inputs']}"
    if s["scale"] > 0:
        k += f" scale={_fmt_double(s['scale'])}"
    if s["plan"]:
        k += f" plan={s['plan']}"
    return k


def default_plan(point):
    """Whether a plan point runs each variant's default plan: a peer has no plans of ours, so
    the harness runs only these (the `plan` axis, docs/plans.md)."""
    return not point.get("shape", {}).get("plan", "")


def check_axes(table):
    """Checks this module against gdnbench's axis table (the "axes" of `gdnbench plan --json`,
    src/core/axes.cpp): every shape field the table names has a default here, and each op's default
    shape is DEFAULTS with that op's own values. Returns a list of mismatches (empty when equal)."""
    problems = []
    fields = {"op"} | {name for axis in table["axes"] for name in axis["json"]}
    for name in sorted(fields ^ set(DEFAULTS)):
        problems.append(f"field {name}: {'missing here' if name in fields else 'not in the table'}")
    for op, shape in table["defaults"].items():
        expected = normalize({"op": op, "layout": OP_LAYOUT[op]})
        for name, value in shape.items():
            if expected.get(name) != value:
                problems.append(f"{op} default {name}: table {value!r}, here {expected.get(name)!r}")
    return problems


# The state layout each op defaults to (kernels/<op>/op.cpp default_shape).
OP_LAYOUT = {"prefill": "kv", "decode": "vk", "mtp": "vk"}


# ---- tolerances ------------------------------------------------------------------------------
# The work model and the tolerances are gdnbench's: the plan carries them per point ("work",
# "tolerances"); a record's work model is the plan's, and gdnbench recomputes it on reading.

# A peer's outputs are checked for correctness, not held to our accuracy: FLA's and FlashInfer's
# chunked prefill round their intra-chunk operands to bf16 and measured o at 5.0-5.2e-3 relative
# L2 on the standard inputs (measured on an H200), just above the 5e-3 of docs/method.md 4, while a wrong
# mapping (layout, head, gate) shows as errors of order 1. Peers pass at the loosest bound there.
PEER_TOLERANCE = 1e-2


def peer_tolerances(plan_tolerances):
    """What a peer record must meet: the plan point's tolerances, loosened to PEER_TOLERANCE."""
    return {name: max(t, PEER_TOLERANCE) for name, t in plan_tolerances.items()}
