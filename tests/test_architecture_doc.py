"""docs/architecture.md names every C++ header, binding file and Python module, so the page
a newcomer reads first cannot silently fall behind the code (issue 42, item 10)."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


def _files(folder, pattern):
    base = ROOT / folder
    return sorted(p.relative_to(base) for p in base.rglob(pattern) if "__pycache__" not in p.parts)


PIECES = (
    [("cpp/include/budgetkernel", p) for p in _files("cpp/include/budgetkernel", "*.hpp")]
    + [("python/src", p) for p in _files("python/src", "*.[ch]pp")]
    + [("python/budgetkernel", p) for p in _files("python/budgetkernel", "*.py")]
    + [("python/budgetkernel", p) for p in _files("python/budgetkernel", "*.pyi")]
)


@pytest.mark.parametrize("folder, path", PIECES, ids=lambda v: str(v))
def test_the_architecture_page_names_every_file(folder, path):
    # A file is named by its name (the page groups files under their folder), a Python module
    # also as `module` (the page's lists of a class's parts), a package's __init__.py by its folder.
    if path.name == "__init__.py" and path.parent.name:
        names = [f"{path.parent.name}/"]
    else:
        names = [path.name] + ([f"`{path.stem}`"] if path.suffix == ".py" else [])
    assert any(n in PAGE for n in names), f"docs/architecture.md does not mention {folder}/{path}"


def test_every_file_the_page_names_exists():
    import re

    known = {p.name for folder in ("cpp", "python", "tests") for p in (ROOT / folder).rglob("*") if p.is_file()}
    named = set(re.findall(r"[\w.]+\.(?:hpp|cpp|pyi|py)\b", PAGE))
    assert sorted(n for n in named if n.split("/")[-1] not in known) == []
