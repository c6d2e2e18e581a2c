"""The arguments of the FlashQLA call for a gdnbench prefill point, built through peerlib.ops
(the CPU tests run this code on SpecTensors)."""

from . import flashqla_rules as rules
from .mapping import Mapped, Result, StateOut


def map_point(s, plan, ops):
    assert not plan.skip and s["op"] == "prefill", plan.skip
    if s["gate"] == "log":
        g, beta = ops.input("g"), ops.input("beta")
    else:
        g, beta = ops.gate_from_raw()
    cu = ops.input("cu_seqlens")
    cu_dev = ops.device_ints(cu, "i64", "cu_seqlens")
    kw = dict(q=ops.unsqueeze0(ops.input("q")), k=ops.unsqueeze0(ops.input("k")), v=ops.unsqueeze0(ops.input("v")),
              g=ops.unsqueeze0(g), beta=ops.unsqueeze0(beta), scale=s["scale"] if s["scale"] > 0 else None,
              initial_state=ops.input("h0") if s["has_h0"] else None, output_final_state=True,
              use_qk_l2norm_in_kernel=bool(s["l2norm"]), cu_seqlens=cu_dev, state_v_first=s["layout"] == "vk",
              auto_cp=True)
    return Mapped(rules.FUNCTIONS[plan.variant], kw, o=Result("result", 0),
                  final=StateOut(Result("result", 1), s["layout"]),
                  prepare=("prepare_varlen_metadata", cu_dev, ops.host_ints(cu, "i64", "cu_seqlens")))
