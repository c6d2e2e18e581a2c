#!/usr/bin/env python3
"""FLA peer harness: runs flash-linear-attention's Gated DeltaNet kernels (Triton) on the points
of a gdnbench plan and writes a report in gdnbench's JSON schema, so that
`gdnbench run --config X --peer fla.json` and `gdnbench compare` put ours and FLA side by side.

    gdnbench plan --config X --json plan.json
    python3 scripts/peers/fla_peer.py --plan plan.json --out fla.json [--mode cold|hot|graph]
        [--ops decode,mtp,prefill] [--min-samples N] [--device 0]

FLA's backend dispatch is turned off (FLA_DISABLE_BACKEND_DISPATCH=1) before FLA is imported,
so "fla/chunk" is FLA's own Triton path even where FlashQLA is installed. Without a GPU:
--self-test (pure parts), --write-sample-report PATH (schema test only), --list (which variant
runs or is skipped for each point, and why). README.md beside this file says what is measured
and how it differs from gdnbench's own variants."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from peerlib import cli, peers  # noqa: E402

if __name__ == "__main__":
    sys.exit(cli.main(peers.PEERS["fla"], sys.argv[1:], __doc__))
