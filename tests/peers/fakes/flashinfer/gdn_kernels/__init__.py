"""Fake flashinfer.gdn_kernels: every GDN kernel the harness checks is present."""
run_pretranspose_decode = object()
run_nontranspose_decode = object()
run_mtp_decode = object()
chunk_gated_delta_rule_sm90 = object()
chunk_gated_delta_rule_sm100 = object()
chunk_gated_delta_rule_sm120 = object()
