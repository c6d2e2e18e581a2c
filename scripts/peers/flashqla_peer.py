#!/usr/bin/env python3
"""FlashQLA peer harness: runs FlashQLA's chunked Gated DeltaNet prefill (TileLang kernels) on the
prefill points of a gdnbench plan and writes a report in gdnbench's JSON schema for
`gdnbench run --peer`.

    gdnbench plan --config X --json plan.json
    python3 scripts/peers/flashqla_peer.py --plan plan.json --out flashqla.json --ops prefill

Variant flashqla/chunk: flash_qla.chunk_gated_delta_rule with log-space g, both state layouts
(state_v_first), auto_cp on. TileLang compiles each kernel at its first call per shape class
(10-20 s): the warm-up covers it, and a point whose compilation fails is a skipped record with
the message. Without a GPU: --self-test, --write-sample-report PATH, --list; --check-import
prints the versions. README.md beside this file says what is measured."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from peerlib import cli, peers  # noqa: E402

if __name__ == "__main__":
    sys.exit(cli.main(peers.PEERS["flashqla"], sys.argv[1:], __doc__))
