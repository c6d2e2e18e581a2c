#!/usr/bin/env python3
"""FlashInfer peer harness: runs FlashInfer's Gated DeltaNet kernels (CuTe DSL) on the points of
a gdnbench plan and writes a report in gdnbench's JSON schema for `gdnbench run --peer`.

    gdnbench plan --config X --json plan.json
    PYTHONPATH=SITE:SITE/nvidia_cutlass_dsl/dsl_packages \\
        python3 scripts/peers/flashinfer_peer.py --plan plan.json --out flashinfer.json [--ops decode]

Variants: flashinfer/decode_pretranspose (decode, vk: fp32 `state=` or pool form, bf16 pool;
mtp with a bf16 pool), flashinfer/decode (decode, kv, fp32), flashinfer/mtp
(gated_delta_rule_mtp, fp32 vk pool), flashinfer/chunk (gdn_prefill.chunk_gated_delta_rule with
alpha = exp(g)). A point FlashInfer cannot run, or whose kernel fails to compile, is a skipped
record with the message. Without a GPU: --self-test, --write-sample-report PATH, --list;
--check-import prints the versions and the kernels that did not load. README.md beside this
file says what is measured."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from peerlib import cli, peers  # noqa: E402

if __name__ == "__main__":
    sys.exit(cli.main(peers.PEERS["flashinfer"], sys.argv[1:], __doc__))
