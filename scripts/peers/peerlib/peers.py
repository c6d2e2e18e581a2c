"""The peers the harness knows: for each, its variants, its rules (pure Python), how it is
imported and how one of its calls is built. Importing this module needs no torch."""

from dataclasses import dataclass

from . import fla_support, flashinfer_rules, flashqla_rules


@dataclass
class PeerDef:
    name: str           # report tool name and variant prefix
    title: str          # for people
    script: str         # the harness script
    variants: dict      # op -> [variant]
    plan_point: object  # (shape, variant, caps) -> Plan, pure
    load: object        # () -> namespace(version, caps, harness, ...); imports the peer
    make_call: object   # (loaded, shape, plan, tensors, device) -> call (torch)
    install_hint: str
    sample_skip: tuple  # (case of tests/peers/schema-points.yaml, variant) the rules skip: the sample report's skip
    skip_word: str      # a word of that skip's reason (the C++ schema test looks for it)
    graph_skip: dict = None  # variant -> why it cannot be captured in a CUDA graph (--mode graph)
    extra_args: tuple = ()   # ((flags, argparse kwargs), ...): options of this harness only
    runs_on_host: bool = False  # torch on the CPU where no CUDA device is (kernel_peer.py)


def _load_fla():
    from .fla_load import load_fla
    return load_fla()


def _fla_call(loaded, s, plan, tensors, device):
    from .fla_calls import FlaCall
    return FlaCall(loaded, s, plan, tensors, device)


def _fla_plan(s, variant, caps=None):
    return fla_support.plan_point(s, variant, caps)


def _load_flashinfer():
    from .flashinfer_load import load
    return load()


def _load_flashqla():
    from .flashqla_load import load
    return load()


def _mapped_call(map_point):
    def make(loaded, s, plan, tensors, device):
        from .mapped_call import MappedCall
        from .ops import TorchOps
        return MappedCall(loaded.fns, s, map_point(s, plan, TorchOps(s, tensors, device)), tensors)
    return make


def _flashinfer_map(s, plan, ops):
    from .flashinfer_map import map_point
    return map_point(s, plan, ops)


def _flashqla_map(s, plan, ops):
    from .flashqla_map import map_point
    return map_point(s, plan, ops)


PEERS = {
    "fla": PeerDef(
        "fla", "FLA (fla-core)", "scripts/peers/fla_peer.py", fla_support.VARIANTS, _fla_plan, _load_fla, _fla_call,
        "pip install fla-core==0.6.0 (scripts/peers/README.md; offline hosts: fetch-peers.sh)",
        ("bf16_pool_decode", "fla/fused_recurrent"), "fp32"),
    "flashinfer": PeerDef(
        "flashinfer", "FlashInfer", "scripts/peers/flashinfer_peer.py", flashinfer_rules.VARIANTS,
        flashinfer_rules.plan_point, _load_flashinfer, _mapped_call(_flashinfer_map),
        "pip install flashinfer-python==0.7.2.post1 nvidia-cutlass-dsl==4.8.1 (scripts/peers/README.md; offline hosts: "
        "fetch-peers.sh)",
        ("d256_prefill", "flashinfer/chunk"), "128",
        {"flashinfer/chunk": "FlashInfer's prefill plans context parallelism on the host at every call: its CUDA-graph "
                             "capture failed on an H200 and left the process's CUDA RNG unusable"}),
    "flashqla": PeerDef(
        "flashqla", "FlashQLA", "scripts/peers/flashqla_peer.py", flashqla_rules.VARIANTS, flashqla_rules.plan_point,
        _load_flashqla, _mapped_call(_flashqla_map),
        "pip install flash-qla==0.1.3 (scripts/peers/README.md; offline hosts: fetch-peers.sh)",
        ("d64_prefill", "flashqla/chunk"), "128"),
}

MAPPERS = {"flashinfer": _flashinfer_map, "flashqla": _flashqla_map}
