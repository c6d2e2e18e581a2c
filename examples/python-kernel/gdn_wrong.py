"""A deliberately wrong kernel: gdn_torch.gated_delta_rule with every beta taken as 1 (the
delta rule's step size ignored). Verification must catch it: every point it runs is a
verify_failed record, never a number in a table.

    scripts/peers/kernel_peer.py --kernel examples/python-kernel/gdn_wrong.py:gated_delta_rule ..."""

import torch

import gdn_torch


def gated_delta_rule(q, k, v, g, beta, **kwargs):
    if kwargs.get("use_beta_sigmoid_in_kernel"):
        beta = torch.full_like(beta, 100.0)  # sigmoid(100) == 1 in fp32
    else:
        beta = torch.ones_like(beta)
    return gdn_torch.gated_delta_rule(q, k, v, g, beta, **kwargs)
