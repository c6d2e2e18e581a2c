"""A test kernel (tests/python-kernel/test_kernel_peer.py): the example recurrence, declining
every decode point through gdnbench_supports and naming its variant through gdnbench_name."""

from gdn_torch import gated_delta_rule as _example


def gated_delta_rule(q, k, v, g, beta, **kwargs):
    return _example(q, k, v, g, beta, **kwargs)


gated_delta_rule.gdnbench_supports = lambda shape: "no decode here" if shape["op"] == "decode" else None
gated_delta_rule.gdnbench_name = "declining"
