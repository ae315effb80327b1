"""The documentation's examples run as doctests: every ``>>>`` in the public modules'
docstrings and in the Markdown pages of docs/ (the user guide, the C++ pages, the papers).

A Markdown page is read as plain text with its code-fence lines blanked, so an example's
expected output ends at the fence as it would at a blank line.
"""

import doctest
import importlib
import pkgutil
from pathlib import Path

import numpy as np
import pytest

import budgetkernel

DOCS = Path(__file__).resolve().parent.parent / "docs"
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _public_modules():
    # Private modules are documented through the public names they export; the deprecated
    # budgetkernel.sparse warns on import; the CLI's modules are tested through its commands.
    names = ["budgetkernel"]
    for info in pkgutil.iter_modules(budgetkernel.__path__, "budgetkernel."):
        last = info.name.rsplit(".", 1)[-1]
        if last.startswith("_") or last in ("sparse", "cli"):
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
