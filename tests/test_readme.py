"""The README's Python blocks are what a new user pastes first: each must run on its own (a
block that borrows ``X, y`` from another fails with NameError when pasted alone), and a
``print(...)   # a b c`` line must print what its comment promises."""

import contextlib
import io
import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_the_readme_has_python_blocks():
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_each_readme_python_block_runs_on_its_own(index, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # blocks save model files into the working directory
    code = BLOCKS[index]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, f"README.md python block {index}", "exec"), {"__name__": "__readme__"})
    # Each print line's trailing comment lists the values it prints, rounded as shown.
    promised = [m.group(1).split() for m in re.finditer(r"^print\(.*\)\s+#\s*(.+)$", code, flags=re.M)]
    printed = [line.split() for line in out.getvalue().splitlines()]
    assert len(printed) == len(promised)
    for want, got in zip(promised, printed):
        assert len(got) == len(want)
        for w, g in zip(want, got):
            decimals = len(w.partition(".")[2])
            assert f"{float(g):.{decimals}f}" == w, (want, got)
