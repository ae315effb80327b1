"""The package's modules import each other without a circle.

Every module's imports of the package are read with ``ast`` (those inside functions too, which
is where a circle would hide), and the graph must be acyclic. An import of ``a.b.c`` counts as
importing its packages ``a.b`` too (Python runs their ``__init__`` first), except the importer's
own packages (already being imported). Imports that static analysis alone sees (under
``if TYPE_CHECKING:``) are not imports at run time and are left out.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "python" / "budgetkernel"
PACKAGE = "budgetkernel"


def _modules():
    """{dotted name: (path, is_package)} of every module of the package."""
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = (PACKAGE, *path.relative_to(ROOT).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return out


def _runtime_nodes(tree):
    """The tree's nodes, less the bodies of ``if TYPE_CHECKING:``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and isinstance(child.test, ast.Name) and child.test.id == "TYPE_CHECKING":
                stack.extend(child.orelse)
                continue
            stack.append(child)


def _imported(name, is_package, tree, modules):
    """The package's modules that module ``name`` imports."""
    here = name if is_package else name.rpartition(".")[0]
    targets = set()
    for node in _runtime_nodes(tree):
        if isinstance(node, ast.Import):
            targets.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = here
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            mod = (base + ("." + node.module if node.module else "")) if node.level else node.module
            targets.add(mod)
            targets.update(f"{mod}.{a.name}" for a in node.names if f"{mod}.{a.name}" in modules)
    own = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 2)}
    edges = set()
    for target in targets:
        parts = target.split(".")
        for i in range(1, len(parts) + 1):
            t = ".".join(parts[:i])
            if t in modules and t not in own:
                edges.add(t)
    return edges


def _graph():
    modules = _modules()
    return {
        name: _imported(name, is_package, ast.parse(path.read_text(encoding="utf-8")), modules)
        for name, (path, is_package) in modules.items()
    }


def _cycle(graph):
    """One import circle as a list of modules (first == last), or None."""
    state, path = {}, []

    def visit(node):
        state[node], _ = "open", path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node], _ = "done", path.pop()
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_package_has_no_import_circle():
    cycle = _cycle(_graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle)


def test_the_graph_sees_local_imports_and_circles():
    # the reader itself: a function-local import is an edge, and a circle through it is found
    tree = ast.parse("def f():\n    from ._b import g\n")
    modules = {"budgetkernel": None, "budgetkernel._a": None, "budgetkernel._b": None}
    assert _imported("budgetkernel._a", False, tree, modules) == {"budgetkernel._b"}
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


@pytest.mark.parametrize("name", ["budgetkernel.dask", "budgetkernel._cascade", "budgetkernel.datasets._synthetic"])
def test_the_modules_of_the_known_circles_are_read(name):
    assert name in _graph()
