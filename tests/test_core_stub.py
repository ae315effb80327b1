"""The stub _core.pyi against the compiled module's own signatures.

mypy's stubtest (.ci/run) checks that every name of budgetkernel._core is in the stub, but it
cannot read a pybind11 function's parameters (pybind11 gives no __text_signature__). pybind11
writes them as the first line(s) of each docstring, ``name(a: T, b: T = 1) -> R``; this test
compares those, parameter names and which ones have a default, with the stub's, for every
function and method (each overload).
"""

import ast
import re
from pathlib import Path

import pytest

from budgetkernel import _core

STUB = ast.parse((Path(_core.__file__).parent / "_core.pyi").read_text())


def _split_top(text):
    """Splits a parameter list at the commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return [p.strip() for p in parts + [text[start:]] if p.strip()]


def _runtime_signatures(name, obj):
    """Each overload's parameters (without self) from pybind11's docstring, as (name, has default)
    pairs; ``**`` for the keyword arguments."""
    out = []
    for m in re.finditer(rf"^(?:\d+\. )?{name}\((.*)\) ->", obj.__doc__, re.M):
        params = []
        for p in _split_top(m.group(1)):
            pname = re.match(r"\**\w+", p).group(0)
            if pname == "self" or pname == "*args":
                continue
            params.append(("**" if pname.startswith("**") else pname, "=" in p))
        out.append(tuple(params))
    return sorted(set(out))


def _stub_signature(fn):
    a = fn.args
    pos = a.posonlyargs + a.args
    defaults = [False] * (len(pos) - len(a.defaults)) + [True] * len(a.defaults)
    params = [(p.arg, d) for p, d in zip(pos, defaults) if p.arg != "self"]
    params += [(p.arg, d is not None) for p, d in zip(a.kwonlyargs, a.kw_defaults)]
    if a.kwarg:
        params.append(("**", False))
    return tuple(params)


CLASSES = {n.name: n for n in STUB.body if isinstance(n, ast.ClassDef)}


def _functions(body):
    """name -> the signatures (each overload) of the functions of a module or class body."""
    out = {}
    for node in body:
        if isinstance(node, ast.FunctionDef) and not any(getattr(d, "id", "") == "property" for d in node.decorator_list):
            out.setdefault(node.name, set()).add(_stub_signature(node))
    return out


def _stub_methods(cname):
    """A stub class's methods, its own and those of its (stub-only) bases, the first one found."""
    node = CLASSES[cname]
    out = _functions(node.body)
    for base in node.bases:
        base_name = getattr(base.value if isinstance(base, ast.Subscript) else base, "id", "")
        if base_name in CLASSES:
            out = _stub_methods(base_name) | out
    return out


def _callables():
    for name, obj in vars(_core).items():
        if callable(obj) and not isinstance(obj, type) and obj.__doc__:
            yield pytest.param(name, obj, id=name)
    for cname, cls in vars(_core).items():
        if isinstance(cls, type):
            for name, obj in vars(cls).items():
                if isinstance(obj, staticmethod):
                    obj = obj.__func__
                if callable(obj) and (name == "__init__" or not name.startswith("_")) and obj.__doc__:
                    yield pytest.param(name, obj, id=f"{cname}.{name}")


@pytest.mark.parametrize("name, obj", list(_callables()))
def test_stub_parameters_match_the_bindings(name, obj, request):
    qualname = request.node.callspec.id
    cname, _, _ = qualname.rpartition(".")
    stub = _stub_methods(cname) if cname else _functions(STUB.body)
    assert name in stub, f"{qualname} is not in _core.pyi"
    assert sorted(stub[name]) == _runtime_signatures(name, obj), qualname
