"""A peer call as data: which function, with which arguments, and where its results are.

A peer's mapping module turns a gdnbench point into a Mapped (through peerlib.ops, so the same
code builds real tensors on the GPU and shape-only SpecTensors in the CPU tests). MappedCall
(peerlib.mapped_call) runs it and reads the results back in gdnbench's terms for verification."""

from dataclasses import dataclass, field


@dataclass
class Result:
    """Where a tensor is after the call: a keyword argument the peer wrote into, or an element
    of what the function returned."""
    kind: str          # "kwarg" | "result"
    key: object        # the keyword (str) or the index in the returned tuple (int)


@dataclass
class StateOut:
    """A state tensor the peer wrote: `where`, then rows `slots` of it (None: row i is sequence
    or valid row i), in `layout` ("kv" [.., K, V] or "vk" [.., V, K])."""
    where: Result
    layout: str
    slots: object = None


@dataclass
class Mapped:
    fn: str                                     # function name in the loaded peer namespace
    kwargs: dict
    o: Result = field(default_factory=lambda: Result("kwarg", "output"))
    o_rows: object = None                       # rows of o that hold verified output (None: all)
    final: StateOut = None                      # ht (prefill) or the updated pool slots
    intermediate: StateOut = None               # mtp cache [rows, T, HV, ..] per valid row
    inplace: tuple = ()                         # kwargs the call overwrites (restored before verifying)
    untouched: tuple = None                     # (pool kwarg, slots named, has a null slot 0)
    ref_gate: dict = None                       # the raw gate the peer got instead of the log gate
    prepare: object = None                      # run once before the first call (not timed)
