"""The PeerDef of a user's kernel function (scripts/peers/kernel_peer.py --kernel module:function):
one variant for every op, the conventions' rules (kernel_rules.py), the call (kernel_calls.py),
and the options only this harness has. It runs on a CUDA device or, without one (or with --cpu),
with torch on the CPU."""

from types import SimpleNamespace

from . import kernel_rules
from .kernel_load import CONVENTIONS
from .peers import PeerDef

OPS = ("prefill", "decode", "mtp")

EXTRA_ARGS = (
    (("--kernel",), {"metavar": "MODULE:FUNCTION", "required": True,
                     "help": "the function to verify and time: a module on PYTHONPATH (module:function) or a file "
                             "(path/to/file.py:function)"}),
    (("--convention",), {"default": "fla", "choices": list(CONVENTIONS),
                         "help": "fla (default): called as FLA's gated_delta_rule functions; gdnbench: fn(t, shape) "
                                 "with gdnbench's tensors in a dict (docs/python-kernels.md)"}),
    (("--cpu",), {"action": "store_true",
                  "help": "torch on the CPU and the host clock even where a CUDA device exists (the default "
                          "without one)"}),
)


def version(kernel):
    """The report's tool version: the module file's hash, so --resume keeps records of this very file."""
    return f"sha256:{kernel.origin['sha256'][:16]}" if kernel.origin["sha256"] else "unknown"


def make_peer(kernel):
    """kernel: kernel_load.load_kernel's namespace."""
    loaded = SimpleNamespace(version=version(kernel), caps=kernel, origin=kernel.origin,
                             harness={"kernel": kernel.spec, "convention": kernel.convention,
                                      "origin": kernel.origin})

    def plan_point(s, variant, caps=None):
        return kernel_rules.plan_point(s, variant, kernel)

    def make_call(loaded_, s, plan, tensors, device):
        from .kernel_calls import make_call as call
        return call(kernel, s, plan, tensors, device)

    return PeerDef(
        "kernel", kernel.variant, "scripts/peers/kernel_peer.py", {op: [kernel.variant] for op in OPS}, plan_point,
        lambda: loaded, make_call,
        "put the module's folder on PYTHONPATH or give the file's path (docs/python-kernels.md)",
        None, "", extra_args=EXTRA_ARGS, runs_on_host=True)
