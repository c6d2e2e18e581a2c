"""Imports a user's kernel function for kernel_peer.py from `module:function` (a module on
PYTHONPATH, dotted names allowed) or `path/to/file.py:function`, and says where it came from:
the module file's absolute path and the SHA-256 of its bytes (the record's `origin`, as for a C
plugin), the variant name, what the function accepts and its optional declarations:

  fn.gdnbench_supports(shape) -> None or a reason (str): the point is skipped with the reason;
  fn.gdnbench_name = "mine": the variant is "python:mine" instead of "python:<module>/<function>".
"""

import hashlib
import importlib
import importlib.util
import inspect
import os
import re
import sys
from types import SimpleNamespace

CONVENTIONS = ("fla", "gdnbench")
NAME = re.compile(r"^[A-Za-z0-9_.+-]+(/[A-Za-z0-9_.+-]+)?$")
MAX_NAME = 80


class KernelSpecError(ValueError):
    """A --kernel argument that names nothing callable (the message says what and why)."""


def split_spec(spec):
    """'module:function' or 'path.py:function' -> (module or path, function)."""
    where, sep, fn = spec.rpartition(":")
    if not sep or not where or not fn:
        raise KernelSpecError(f"--kernel '{spec}': expected module:function or path/to/file.py:function")
    return where, fn


def _import(where):
    """The module named by `where`: a file path (ends in .py or contains a slash) or a module name."""
    if where.endswith(".py") or os.sep in where:
        path = os.path.abspath(where)
        if not os.path.isfile(path):
            raise KernelSpecError(f"--kernel: no such file '{where}'")
        name = os.path.splitext(os.path.basename(path))[0]
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses and pickling look the module up by name
        # The file's own folder is importable from it, as for `python3 file.py`.
        sys.path.insert(0, os.path.dirname(path))
        spec.loader.exec_module(module)
        return module
    return importlib.import_module(where)


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def parameters(fn):
    """The keyword names fn accepts; None when it takes **kwargs (it accepts any)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind == p.VAR_KEYWORD for p in params):
        return None
    return {p.name for p in params}


def variant_name(module_name, fn_name, declared):
    """'python:<module>/<function>', or 'python:<declared>' when the function declares gdnbench_name."""
    name = declared if declared is not None else f"{module_name}/{fn_name}"
    if not isinstance(name, str) or not NAME.match(name) or len(name) > MAX_NAME:
        raise KernelSpecError(f"--kernel: variant name 'python:{name}' is not a name of letters, digits, '_', '.', "
                              f"'+', '-' (one '/' allowed) of at most {MAX_NAME} characters: set gdnbench_name")
    return f"python:{name}"


def load_kernel(spec, convention):
    """SimpleNamespace(fn, variant, origin, accepts, supports, module, function) for --kernel spec."""
    if convention not in CONVENTIONS:
        raise KernelSpecError(f"--convention '{convention}': expected one of {', '.join(CONVENTIONS)}")
    where, fn_name = split_spec(spec)
    try:
        module = _import(where)
    except KernelSpecError:
        raise
    except ImportError as e:
        raise KernelSpecError(f"--kernel '{spec}': cannot import '{where}' ({e}); put its folder on PYTHONPATH "
                              "or give the file's path") from e
    fn = module
    for part in fn_name.split("."):
        fn = getattr(fn, part, None)
        if fn is None:
            raise KernelSpecError(f"--kernel '{spec}': module '{module.__name__}' has no '{fn_name}'")
    if not callable(fn):
        raise KernelSpecError(f"--kernel '{spec}': '{fn_name}' is not callable")
    supports = getattr(fn, "gdnbench_supports", None)
    if supports is not None and not callable(supports):
        raise KernelSpecError(f"--kernel '{spec}': gdnbench_supports must be a function shape -> reason or None")
    path = getattr(module, "__file__", None) or ""
    path = os.path.abspath(path) if path else ""
    origin = {"kind": "python", "path": path, "sha256": sha256_file(path) if path and os.path.isfile(path) else ""}
    module_name = module.__name__.rpartition(".")[2] if where.endswith(".py") or os.sep in where else module.__name__
    return SimpleNamespace(fn=fn, variant=variant_name(module_name, fn_name, getattr(fn, "gdnbench_name", None)),
                           origin=origin, accepts=parameters(fn), supports=supports, convention=convention,
                           module=module.__name__, function=fn_name, spec=spec)
