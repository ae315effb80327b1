"""Every ```python block of the docs' Markdown pages runs as a script, as a user who pastes it
into a file runs it: in a fresh interpreter, in a scratch directory, with a time limit.

(The ``>>>`` examples are doctests: tests/test_doctests.py.) A block whose first line is
``# continues the snippet above`` is run after the page's block before it, in one script, as
the page asks its reader to; every other block runs alone. Nothing is exempt: a block that
needs a setup shows it. A block that imports river (optional, not in the ``test`` extra) is
skipped where river is not installed. The one measurement script (its page's numbers come
from it at full size) runs on smaller data here: SMALLER.
"""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import budgetkernel

DOCS = Path(__file__).resolve().parent.parent / "docs"
CONTINUES = "# continues the snippet above"
_FENCE = re.compile(r"^(`{3,})(.*)$")


def _python_blocks(text):
    """(line number, code) of each ```python block of a Markdown page, in order."""
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info, start = m.group(1), m.group(2).strip(), i + 1
        i += 1
        while i < len(lines) and lines[i].rstrip() != fence:
            i += 1
        if info == "python":
            blocks.append((start, "\n".join(lines[start:i]) + "\n"))
        i += 1
    return blocks


def _scripts():
    """(id, script) of every block: a continuation joined to the blocks it continues."""
    out = []
    for page in sorted(DOCS.rglob("*.md")):
        if {"_build", "generated", "auto_examples"} & set(page.relative_to(DOCS).parts):
            continue
        previous = None
        for line, code in _python_blocks(page.read_text(encoding="utf-8")):
            if code.startswith(CONTINUES):
                assert previous is not None, f"{page}:{line} continues no snippet"
                code = previous + code
            previous = code
            out.append((f"{page.relative_to(DOCS).as_posix()}:{line}", code))
    return out


# id -> (text of the block, what the test runs instead): the measurement scripts, at a size
# that runs in seconds
SMALLER = {
    "cascade.md:92": ("n, k, params = 20_000, 2,", "n, k, params = 2_000, 2,"),
}


def _smaller(name, code):
    if name not in SMALLER:
        return code
    full, small = SMALLER[name]
    assert full in code, f"{name}: SMALLER no longer matches the block"
    return code.replace(full, small)


SCRIPTS = [(name, _smaller(name, code)) for name, code in _scripts()]


def test_the_pages_have_snippets():
    # the parser finds blocks (an empty list would pass every test below)
    assert len(SCRIPTS) >= 10 and any(CONTINUES in code for _, code in SCRIPTS)
    assert set(SMALLER) <= {name for name, _ in SCRIPTS}


@pytest.mark.parametrize("code", [code for _, code in SCRIPTS], ids=[name for name, _ in SCRIPTS])
def test_snippet_runs_as_a_script(code, tmp_path):
    if re.search(r"^\s*(from|import) river\b", code, re.M) and importlib.util.find_spec("river") is None:
        pytest.skip("river is not installed (optional: pip install river)")
    script = tmp_path / "snippet.py"
    script.write_text(code, encoding="utf-8")
    # the budgetkernel these tests import, installed or not; plots to no screen
    path = [os.path.dirname(os.path.dirname(budgetkernel.__file__)), os.environ.get("PYTHONPATH")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p), "MPLBACKEND": "Agg"}
    run = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert run.returncode == 0, f"exit {run.returncode}\n{run.stderr}"


@pytest.mark.parametrize("code", [code for _, code in SCRIPTS], ids=[name for name, _ in SCRIPTS])
def test_snippet_closes_the_clusters_it_starts(code):
    # A Dask cluster or client a script leaves open is killed when Python exits ("Worker process
    # still alive ... killing" for each worker): each is opened by a with statement. (Not read
    # off the run's stderr: a loaded machine can time out a graceful close too.)
    for line in code.splitlines():
        statement = line.split("#", 1)[0]
        if re.search(r"\b(LocalCluster|Client)\(", statement):
            assert statement.lstrip().startswith("with "), line
