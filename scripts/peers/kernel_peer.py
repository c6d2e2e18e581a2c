#!/usr/bin/env python3
"""Your own PyTorch-style GDN function verified and timed on the points of a gdnbench plan, like
any variant: the same inputs, fp64 reference, stopping rule and report schema as the peer
harnesses, one record per point with the variant "python:<module>/<function>" and the module file's
path and SHA-256 (`origin`).

    gdnbench plan --config configs/python-kernel-cpu.yaml --json plan.json
    python3 scripts/peers/kernel_peer.py --kernel examples/python-kernel/gdn_torch.py:gated_delta_rule \\
        --plan plan.json --out mine.json [--convention fla|gdnbench] [--cpu] [the peer harness options]

--kernel module:function (a module on PYTHONPATH) or path/to/file.py:function. --convention fla
(default) calls it as FLA's fused_recurrent_gated_delta_rule is called, so FLA's functions and any
function with their signature drop in; --convention gdnbench calls fn(t, shape) with gdnbench's
tensors in a dict. On a CUDA device the call is timed by CUPTI like the peers; without one (or
with --cpu) torch runs on the CPU and the host clock times one call per sample. A --kernel that
names nothing callable exits 3. docs/python-kernels.md has the conventions in full."""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from peerlib import cli, kernel_load, kernel_peer  # noqa: E402

BAD_INPUT = 3  # gdnbench's exit code for bad input (src/core/errors.h)


def main(argv):
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--kernel")
    pre.add_argument("--convention", default="fla")
    pre.add_argument("--self-test", action="store_true")
    pre.add_argument("--write-sample-report")
    pre.add_argument("-h", "--help", action="store_true")
    known, _ = pre.parse_known_args(argv)
    if known.self_test:
        from peerlib import selftest
        return selftest.run()
    if known.write_sample_report:
        print("kernel_peer: --write-sample-report is for the library peers' schema tests", file=sys.stderr)
        return BAD_INPUT
    if not known.kernel:
        if known.help:
            print(__doc__ + "\n\nEvery option, with its default: kernel_peer.py --kernel MODULE:FUNCTION --help")
            return 0
        print("kernel_peer: --kernel module:function is required (see --help)", file=sys.stderr)
        return BAD_INPUT
    try:
        kernel = kernel_load.load_kernel(known.kernel, known.convention)
    except kernel_load.KernelSpecError as e:
        print(f"kernel_peer: {e}", file=sys.stderr)
        return BAD_INPUT
    except Exception as e:  # noqa: BLE001 - the user's module raised while being imported
        print(f"kernel_peer: importing --kernel '{known.kernel}' raised {type(e).__name__}: {e}", file=sys.stderr)
        return BAD_INPUT
    return cli.main(kernel_peer.make_peer(kernel), argv, __doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
