"""The command line never destroys its own inputs, and a failed run leaves an earlier output
as it was: outputs are refused when they are an input (by name, symlink or hard link) and
written through a temporary file renamed over them at the end."""

import os
import stat
import subprocess
import sys

import numpy as np
import pytest

from _terminal import read_until_closed

import budgetkernel
from budgetkernel import cli, datasets
from budgetkernel import io as bk_io
from budgetkernel.cli import _commands

ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), OPENBLAS_NUM_THREADS="1")


@pytest.fixture()
def files(tmp_path):
    """A training file, a test file and a model trained on the first."""
    X, y = datasets.checkerboard(400, random_state=0)
    bk_io.dump_svmlight(X, y, tmp_path / "train.svm")
    Xt, yt = datasets.checkerboard(100, random_state=1)
    bk_io.dump_svmlight(Xt, yt, tmp_path / "test.svm")
    model = tmp_path / "m.bkm"
    assert cli.main(["train", str(tmp_path / "train.svm"), "-o", str(model), "--gamma", "2", "-q"]) == 0
    return tmp_path, model, Xt


def _snapshot(d):
    """Every file in d with its bytes (a refused or failed run changes none and adds none)."""
    return {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.is_file() and not p.is_symlink()}


def _refused(capsys, argv, *fragments):
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("budgetkernel: error: "), captured.err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, captured.err)
    assert captured.out == ""


@pytest.mark.parametrize(
    "argv,fragments",
    [
        (["predict", "{m}", "{d}/test.svm", "-o", "{d}/test.svm"], ["-o", "test.svm", "same file as the data file"]),
        (["predict", "{m}", "{d}/test.svm", "-o", "{m}"], ["-o", "m.bkm", "same file as the model"]),
        (["train", "{d}/train.svm", "-o", "{d}/train.svm", "-q"], ["-o", "same file as the training file"]),
    ],
)
def test_an_output_that_is_an_input_is_refused(files, capsys, argv, fragments):
    d, model, _ = files
    before = _snapshot(d)
    _refused(capsys, [a.format(d=d, m=model) for a in argv], *fragments, "choose another -o file")
    assert _snapshot(d) == before  # nothing emptied, replaced or added


def test_links_to_an_input_are_refused(files, capsys):
    d, model, _ = files
    os.symlink(d / "test.svm", d / "sym.svm")
    os.link(d / "test.svm", d / "hard.svm")
    os.symlink(model, d / "sym.bkm")
    before = _snapshot(d)
    _refused(capsys, ["predict", str(model), str(d / "test.svm"), "-o", str(d / "sym.svm")], "sym.svm", "test.svm")
    _refused(capsys, ["predict", str(model), str(d / "sym.svm"), "-o", str(d / "test.svm")], "same file")
    _refused(capsys, ["predict", str(model), str(d / "test.svm"), "-o", str(d / "hard.svm")], "hard.svm")
    _refused(capsys, ["predict", str(model), str(d / "test.svm"), "-o", str(d / "sym.bkm")], "the model")
    _refused(capsys, ["train", str(d / "hard.svm"), "-o", str(d / "test.svm"), "-q"], "training file")
    assert _snapshot(d) == before
    assert (d / "sym.svm").is_symlink() and (d / "sym.bkm").is_symlink()


def test_the_refusal_runs_in_a_real_process_too(files):
    d, model, _ = files
    before = _snapshot(d)
    r = subprocess.run(
        [sys.executable, "-m", "budgetkernel", "predict", str(model), str(d / "test.svm"), "-o", str(d / "test.svm")],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=120,
        check=False,  # the exit code is the test
    )
    assert r.returncode == 2 and "same file" in r.stderr and "Traceback" not in r.stderr
    assert _snapshot(d) == before


def test_a_failed_predict_leaves_the_old_predictions(files, capsys):
    d, model, Xt = files
    out = d / "pred.txt"
    out.write_text("earlier predictions\n")
    os.chmod(out, 0o640)
    # line 31 holds a value the model rejects only when it reaches that row (the reader
    # accepts it): with chunks of 4, seven chunks of predictions were written by then
    lines = (d / "test.svm").read_text().splitlines(keepends=True)
    lines[30] = "1 1:1e200 2:0.5\n"
    (d / "late.svm").write_text("".join(lines))
    before = _snapshot(d)
    assert cli.main(["predict", str(model), str(d / "late.svm"), "-o", str(out), "--chunk-size", "4"]) == 2
    assert "line 31" in capsys.readouterr().err
    assert _snapshot(d) == before  # the old file as it was, and no temporary file left
    assert stat.S_IMODE(out.stat().st_mode) == 0o640
    # a successful run replaces it, keeping its permissions
    assert cli.main(["predict", str(model), str(d / "test.svm"), "-o", str(out), "-q"]) == 0
    clf = budgetkernel.load(model)
    assert out.read_text().split() == [str(v) for v in clf.predict(Xt)]
    assert stat.S_IMODE(out.stat().st_mode) == 0o640
    assert sorted(p.name for p in d.iterdir()) == sorted([*before])


def test_an_interrupted_predict_leaves_the_old_predictions(files, monkeypatch, capsys):
    d, model, _ = files
    out = d / "pred.txt"
    out.write_text("earlier predictions\n")
    real = _commands._predict_chunks

    def interrupted_after_one_chunk(*args, **kwargs):
        chunks = real(*args, **kwargs)
        yield next(chunks)
        raise KeyboardInterrupt

    monkeypatch.setattr(_commands, "_predict_chunks", interrupted_after_one_chunk)
    before = _snapshot(d)
    assert cli.main(["predict", str(model), str(d / "test.svm"), "-o", str(out), "--chunk-size", "10"]) == 130
    assert capsys.readouterr().err.strip() == "budgetkernel: interrupted"
    assert _snapshot(d) == before


def test_new_predictions_file_gets_the_usual_permissions(files):
    d, model, _ = files
    umask = os.umask(0o022)
    try:
        assert cli.main(["predict", str(model), str(d / "test.svm"), "-o", str(d / "new.txt"), "-q"]) == 0
    finally:
        os.umask(umask)
    assert stat.S_IMODE((d / "new.txt").stat().st_mode) == 0o644  # not mkstemp's private 0600


def test_predictions_are_written_through_a_symlink(files):
    d, model, Xt = files
    (d / "real.txt").write_text("old\n")
    os.symlink(d / "real.txt", d / "link.txt")
    assert cli.main(["predict", str(model), str(d / "test.svm"), "-o", str(d / "link.txt"), "-q"]) == 0
    assert (d / "link.txt").is_symlink()  # the link stays a link; its target gets the predictions
    assert (d / "real.txt").read_text().split() == [str(v) for v in budgetkernel.load(model).predict(Xt)]


def test_devices_are_written_in_place(files, capsys):
    d, model, _ = files
    assert cli.main(["predict", str(model), str(d / "test.svm"), "-o", os.devnull, "-q"]) == 0
    assert os.path.exists(os.devnull) and stat.S_ISCHR(os.stat(os.devnull).st_mode)
    assert capsys.readouterr().out == ""


def test_a_read_only_output_is_refused_up_front(files, capsys):
    d, model, _ = files
    out = d / "keep.txt"
    out.write_text("keep\n")
    os.chmod(out, 0o444)  # refused also for root, whom the permission does not stop
    _refused(capsys, ["predict", str(model), str(d / "test.svm"), "-o", str(out)], "read-only")
    assert out.read_text() == "keep\n"


def test_a_missing_output_directory_is_refused_before_reading(files, capsys):
    d, model, _ = files
    missing = d / "no" / "p.txt"
    _refused(capsys, ["predict", str(model), str(d / "test.svm"), "-o", str(missing)], "does not exist")
    _refused(capsys, ["predict", str(model), str(d / "test.svm"), "-o", str(d)], "is a directory")


def test_demo_plot_replaces_an_old_plot_only_when_written(tmp_path, monkeypatch, capsys):
    pytest.importorskip("matplotlib")
    import budgetkernel.plot as plot

    png = tmp_path / "d.png"
    png.write_bytes(b"old plot")

    def failing(est, scaler, path):
        with open(path, "wb") as f:
            f.write(b"half a plot")
        raise OSError("disk full")

    monkeypatch.setattr(plot, "plot_demo", failing)
    assert cli.main(["demo", "--n", "2000", "-q", "--plot", str(png)]) == 2
    assert "disk full" in capsys.readouterr().err
    assert png.read_bytes() == b"old plot" and sorted(p.name for p in tmp_path.iterdir()) == ["d.png"]
    monkeypatch.undo()
    assert cli.main(["demo", "--n", "2000", "-q", "--plot", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.png"]


def test_predictions_match_the_estimator(files):
    # the temporary-file path writes exactly what standard output gets
    d, model, Xt = files
    assert cli.main(["predict", str(model), str(d / "test.svm"), "-o", str(d / "p.txt"), "-q"]) == 0
    np.testing.assert_array_equal(np.loadtxt(d / "p.txt"), budgetkernel.load(model).predict(Xt))


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_a_terminal_may_be_both_input_and_output(files):
    # /dev/stdin and /dev/stdout are one device on a terminal: nothing to destroy there
    _, model, _ = files
    master, slave = os.openpty()
    try:
        p = subprocess.Popen(
            [sys.executable, "-m", "budgetkernel", "predict", str(model), "/dev/stdin", "-o", "/dev/stdout", "-q"],
            stdin=slave,
            stdout=slave,
            stderr=subprocess.PIPE,
            env=ENV,
        )
        os.close(slave)
        os.write(master, b"1 1:0.5 2:0.5\n-1 1:0.1 2:0.2\n\x04")  # two lines, then end of input (Ctrl-D)
        err = p.stderr.read().decode()
        assert p.wait(timeout=120) == 0, err
        p.stderr.close()
        shown = read_until_closed(master)
    finally:
        os.close(master)
    assert err == ""
    expected = budgetkernel.load(model).predict(np.array([[0.5, 0.5], [0.1, 0.2]]))
    # the terminal echoes the two input lines, then shows the two predictions
    assert shown.split(b"\r\n")[2:4] == [str(v).encode() for v in expected]


def test_an_output_name_near_the_length_limit_is_written(files):
    d, model, Xt = files
    out = d / ("p" * 250 + ".txt")  # 254 bytes: a temporary name adding to it would be too long
    assert cli.main(["predict", str(model), str(d / "test.svm"), "-o", str(out), "-q"]) == 0
    assert out.read_text().split() == [str(v) for v in budgetkernel.load(model).predict(Xt)]
