"""The documentation's examples run as doctests: every ``>>>`` in the public modules'
docstrings and in the Markdown pages of docs/ (the user guide, the C++ pages, the papers).

A Markdown page is read as plain text with its code-fence lines blanked, so an example's
expected output ends at the fence as it would at a blank line.

Every public class and function has an example, and a place in the API reference
(docs/api.rst): both are checked here, so that a new public name cannot go undocumented.
"""

import doctest
import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import numpy as np
import pytest

import budgetkernel

DOCS = Path(__file__).resolve().parent.parent / "docs"
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _public_modules():
    # Private modules are documented through the public names they export; the CLI's modules
    # are tested through its commands.
    names = ["budgetkernel"]
    for info in pkgutil.iter_modules(budgetkernel.__path__, "budgetkernel."):
        last = info.name.rsplit(".", 1)[-1]
        if last.startswith("_") or last == "cli":
            continue
        names.append(info.name)
    return names


def _run(tests):
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    return result.failed, result.attempted


def _module_tests(module):
    finder = doctest.DocTestFinder(exclude_empty=True)
    tests = []
    seen = set()
    # A public name defined in a private module (the estimators) is found through the module
    # that exports it: DocTestFinder only follows objects whose __module__ is the module itself.
    for name in getattr(module, "__all__", []):
        obj = getattr(module, name)
        if id(obj) in seen or not (callable(obj) or isinstance(obj, type)):
            continue
        seen.add(id(obj))
        tests += finder.find(obj, f"{module.__name__}.{name}", module=False, globs={"np": np})
    tests += finder.find(module, module.__name__, globs={"np": np})
    unique = {t.name: t for t in tests if t.examples}
    return list(unique.values())


@pytest.mark.parametrize("name", _public_modules())
def test_module_doctests(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples that save a model write into a scratch directory
    module = importlib.import_module(name)
    failed, attempted = _run(_module_tests(module))
    assert failed == 0
    assert attempted > 0  # every public module has examples: they were found, and ran


def _markdown_pages():
    return sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md") if "_build" not in p.parts)


@pytest.mark.parametrize("page", _markdown_pages())
def test_markdown_doctests(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = (DOCS / page).read_text(encoding="utf-8")
    text = "\n".join("" if line.lstrip().startswith("```") else line for line in text.splitlines())
    test = doctest.DocTestParser().get_doctest(text, {"np": np}, page, page, 0)
    failed, _ = _run([test])
    assert failed == 0


def _public_callables(module):
    """(name, object) of the classes and functions a module exports. Its data (STREAM_NAMES,
    the WAVEFORM_* arrays, __version__) and submodules (budgetkernel.datasets) are not
    callable: they are documented in the reference's text, without examples."""
    return [(n, getattr(module, n)) for n in module.__all__ if callable(getattr(module, n))]


@pytest.mark.parametrize("name", _public_modules())
def test_every_public_callable_has_an_example(name):
    module = importlib.import_module(name)
    missing = [n for n, obj in _public_callables(module) if ">>>" not in (inspect.getdoc(obj) or "")]
    assert not missing, f"{name}: no >>> example in the docstring of {missing}"


def _api_reference():
    """What docs/api.rst documents, as fully qualified names: (the entries of its autosummary
    tables, the names its ``.. data::`` directives describe), each under the
    ``currentmodule`` in force where it stands."""
    entries, data, module, in_table = [], [], None, False
    for line in (DOCS / "api.rst").read_text(encoding="utf-8").splitlines():
        text = line.strip()
        if m := re.match(r"\.\. (?:py:)?currentmodule:: (\S+)", line):
            module = m.group(1)
        elif m := re.match(r"\.\. (?:py:)?data:: (\S+)", line):
            data.append(f"{module}.{m.group(1)}")
        if line.startswith(".. "):
            in_table = text == ".. autosummary::"
        elif in_table and text and not line.startswith(" "):
            in_table = False  # the table ended at the next unindented text
        elif in_table and text and not text.startswith(":"):  # (not an option: an entry)
            # relative to the current module, or (as Sphinx also reads it) fully qualified
            entries.append(text if text.startswith("budgetkernel.") else f"{module}.{text}")
    return entries, data


def _resolve(qualified):
    module_name, attr = qualified.rsplit(".", 1)
    return getattr(importlib.import_module(module_name), attr)


def test_api_reference_lists_every_public_callable():
    # A name is documented once, where it is defined: a re-export (budgetkernel.pegasos'
    # classes, the io functions and StreamingStandardizer in budgetkernel.datasets) is the
    # same object as the entry that documents it, and the page's text says where else it lives.
    entries, _ = _api_reference()
    documented = {}
    for e in entries:
        documented.setdefault(id(_resolve(e)), []).append(e)
    twice = [names for names in documented.values() if len(names) > 1]
    assert not twice, f"docs/api.rst lists an object more than once: {twice}"
    missing = [
        f"{name}.{n}"
        for name in _public_modules()
        for n, obj in _public_callables(importlib.import_module(name))
        if id(obj) not in documented
    ]
    assert not missing, f"not in an autosummary table of docs/api.rst: {missing}"


def test_api_reference_describes_the_public_data():
    # The data the modules export (not classes, functions or modules) are described by hand
    # with ``.. data::``, without examples.
    _, described = _api_reference()
    data = []
    for name in _public_modules():
        module = importlib.import_module(name)
        data += [
            f"{name}.{n}" for n in module.__all__
            if not callable(getattr(module, n)) and not inspect.ismodule(getattr(module, n))
        ]
    assert "budgetkernel.datasets.STREAM_NAMES" in data
    missing = [d for d in data if d not in described]
    assert not missing, f"not described by a .. data:: directive in docs/api.rst: {missing}"
