"""Checks the fake peer functions share. Arguments are peerlib.ops.SpecTensors."""

CALLS = []  # (function name, kwargs) of every fake call, for the tests


class ContractError(AssertionError):
    """An argument the real function would refuse (or misread)."""


def need(cond, what):
    if not cond:
        raise ContractError(what)


def dtype_in(x, names, what):
    need(x is not None and x.dtype in names, f"{what}: dtype {getattr(x, 'dtype', None)} not in {names}")


def shape_is(x, shape, what):
    need(x is not None and tuple(x.shape) == tuple(shape), f"{what}: shape {getattr(x, 'shape', None)} != {tuple(shape)}")


def record(name, kwargs):
    CALLS.append((name, dict(kwargs)))
