"""A torch-free stand-in with the signature of FLA's fused_recurrent_gated_delta_rule, for the
rules test (test_kernel_rules.py: --list and what the function accepts). Never called."""


def gated_delta_rule(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False,
                     use_qk_l2norm_in_kernel=False, cu_seqlens=None, state_v_first=False,
                     use_gate_in_kernel=False, A_log=None, dt_bias=None, use_beta_sigmoid_in_kernel=False):
    raise NotImplementedError("a signature for the rules test")
