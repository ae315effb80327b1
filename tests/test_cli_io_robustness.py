"""The command line, the svmlight reader/writer and the plot output at their edges: Ctrl-C,
broken gzip, huge integers, labels outside label_dtype, bad output paths checked before a
run, options of another learner, multi-epoch summaries."""

import gzip
import io
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import budgetkernel
from budgetkernel import cli, datasets
from budgetkernel import io as bk_io
from budgetkernel.cli import _options, _training

ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), OPENBLAS_NUM_THREADS="1")


@pytest.fixture()
def train_file(tmp_path):
    X, y = datasets.noisy_checkerboard(3000, random_state=0)
    bk_io.dump_svmlight(X, y, tmp_path / "train.libsvm")
    return tmp_path / "train.libsvm"


def _one_line_error(err, *fragments):
    """stderr is a single 'budgetkernel: error: ...' line holding every fragment."""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("budgetkernel: error: "), err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, err)


# ---------------------------------------------------------------------------
# Ctrl-C: exit code 130 and no traceback
# ---------------------------------------------------------------------------


def test_keyboard_interrupt_exits_130_without_traceback(train_file, monkeypatch, capsys):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(_training, "evaluate_prequential", interrupted)
    assert cli.main(["train", str(train_file), "-o", str(train_file.parent / "m.bkm")]) == 130
    captured = capsys.readouterr()
    assert captured.err.strip() == "budgetkernel: interrupted"
    assert not (train_file.parent / "m.bkm").exists()


def test_sigint_during_demo_exits_130_without_traceback():
    p = subprocess.Popen(
        [sys.executable, "-m", "budgetkernel", "demo", "--n", "500000000", "--chunk-size", "1000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=ENV,
        # a shell without job control starts background jobs with SIGINT ignored, and the
        # child would inherit that (Python then installs no KeyboardInterrupt handler)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        # the banner (flushed at once although stdout is a pipe) comes right before training;
        # stderr is no terminal, so no progress bar is drawn to wait for
        assert p.stdout.readline().startswith(b"budgetkernel demo: ")
        time.sleep(0.5)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    err = err.decode()
    assert p.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert err.rstrip().endswith("budgetkernel: interrupted")
    assert b"test accuracy" not in out


# ---------------------------------------------------------------------------
# Corrupt or truncated gzip input: a ValueError naming the file, not EOFError/zlib.error
# ---------------------------------------------------------------------------


def _broken_gzip_files(tmp_path, train_file):
    data = gzip.compress(train_file.read_bytes())
    truncated = tmp_path / "truncated.libsvm.gz"
    truncated.write_bytes(data[: len(data) // 2])  # EOFError inside gzip
    bad_block = bytearray(data)
    bad_block[10] = 0x07  # first deflate block: final, reserved type 11 -> zlib.error
    corrupt = tmp_path / "corrupt.libsvm.gz"
    corrupt.write_bytes(bytes(bad_block))
    bad_crc = bytearray(data)
    bad_crc[-6] ^= 0xFF  # CRC32 trailer -> gzip.BadGzipFile
    crc = tmp_path / "crc.libsvm.gz"
    crc.write_bytes(bytes(bad_crc))
    return truncated, corrupt, crc


def test_broken_gzip_is_a_value_error_naming_the_file(tmp_path, train_file):
    for path in _broken_gzip_files(tmp_path, train_file):
        for kwargs in ({}, {"n_features": 2, "zero_based": False, "label_dtype": np.int64}):
            with pytest.raises(ValueError, match=rf"{path.name}.*gzip"):
                bk_io.load_svmlight(path, **kwargs)
            with pytest.raises(ValueError, match=rf"{path.name}.*gzip"):
                list(bk_io.iter_svmlight(path, chunk_size=7, **kwargs))


def test_cli_reports_broken_gzip_in_one_line(tmp_path, train_file, capsys):
    for path in _broken_gzip_files(tmp_path, train_file):
        assert cli.main(["train", str(path), "-o", str(tmp_path / "m.bkm"), "-q"]) == 2
        _one_line_error(capsys.readouterr().err, path.name, "gzip")


# ---------------------------------------------------------------------------
# svmlight writer
# ---------------------------------------------------------------------------


def test_dump_svmlight_sums_duplicate_sparse_entries_and_leaves_input_alone(tmp_path):
    sp = pytest.importorskip("scipy.sparse")
    # CSR with a duplicate (2, 2) entry, as scipy allows: its value is the sum, 4
    X = sp.csr_matrix((np.array([1.0, 2.0, 3.0]), np.array([2, 0, 2]), np.array([0, 3])), shape=(1, 3))
    indices = X.indices.copy()
    buf = io.StringIO()
    bk_io.dump_svmlight(X, np.array([1]), buf)
    assert buf.getvalue() == "1 1:2 3:4\n"
    np.testing.assert_array_equal(X.indices, indices)  # the caller's matrix is not re-sorted
    path = tmp_path / "dup.svm"
    bk_io.dump_svmlight(X, np.array([1]), path)
    np.testing.assert_array_equal(bk_io.load_svmlight(path)[0], X.toarray())


def test_dump_svmlight_writes_integer_labels_exactly(tmp_path):
    buf = io.StringIO()
    bk_io.dump_svmlight(np.ones((2, 1)), np.array([2**63, 7], dtype=np.uint64), buf)
    assert buf.getvalue() == "9223372036854775808 1:1\n7 1:1\n"  # not wrapped to -2^63
    buf = io.StringIO()
    bk_io.dump_svmlight(np.ones((2, 1)), np.array([True, False]), buf)
    assert buf.getvalue() == "1 1:1\n0 1:1\n"
    with pytest.raises(ValueError, match="y"):
        bk_io.dump_svmlight(np.ones((1, 1)), np.array([1 + 2j]), io.StringIO())


# ---------------------------------------------------------------------------
# svmlight reader: labels that do not fit label_dtype
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,label_dtype,line",
    [
        ("1 1:1\n300 1:2\n", np.int8, 2),
        ("1 1:1\n-1 1:2\n", np.uint16, 2),
        ("1 1:1\n1e300 1:2\n", np.float32, 2),
        ("70000 1:2\n", np.float16, 1),
    ],
)
def test_label_outside_label_dtype_is_an_error(tmp_path, text, label_dtype, line):
    path = tmp_path / "labels.svm"
    path.write_text(text)
    for chunk_size in (1, 100):
        with pytest.raises(ValueError, match=rf"labels\.svm.*line {line}.*label"):
            list(bk_io.iter_svmlight(path, label_dtype=label_dtype, chunk_size=chunk_size))
    # labels that fit still read exactly
    path.write_text("1 1:1\n-3 1:2\n")
    assert bk_io.load_svmlight(path, label_dtype=np.int8)[1].tolist() == [1, -3]


@pytest.mark.parametrize(
    "text,fragment",
    [
        ("1 1:1\n" + "9" * 400 + " 1:2\n", "non-finite label"),  # int() fine, float() overflows
        ("1 1:1\n" + "9" * 5000 + " 1:2\n", "non-finite label"),  # beyond int()'s 4300 digits
        ("1 1:1\n-1 " + "1" * 5000 + ":1\n", "too large"),
        ("1 1:1\n-1 99999999999999999999:1\n", "too large"),  # > int64: no array has it
    ],
)
def test_huge_integers_are_malformed_lines(tmp_path, text, fragment):
    path = tmp_path / "huge.svm"
    path.write_text(text)
    for kwargs in ({}, {"n_features": 3, "zero_based": False, "label_dtype": np.float64}):
        with pytest.raises(ValueError, match=rf"huge\.svm.*line 2: .*{fragment}"):
            bk_io.load_svmlight(path, **kwargs)
    # leading zeros and a sign are still an ordinary index
    path.write_text("1 +0000000000000000000000003:2.5\n")
    np.testing.assert_array_equal(bk_io.load_svmlight(path)[0], [[0.0, 0.0, 2.5]])


# ---------------------------------------------------------------------------
# Output paths: checked before training; the plot goes where the message says
# ---------------------------------------------------------------------------


def test_train_checks_the_output_path_before_training(train_file, capsys):
    d = train_file.parent
    for output, fragment in ((d / "no" / "such" / "m.bkm", "does not exist"), (d, "is a directory")):
        assert cli.main(["train", str(train_file), "-o", str(output)]) == 2
        captured = capsys.readouterr()
        _one_line_error(captured.err, "-o", str(output), fragment)  # and no progress bar
        assert captured.out == ""


def test_demo_checks_the_plot_path_before_training(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    cases = (
        (tmp_path / "missing" / "d.png", "does not exist"),
        (tmp_path, "is a directory"),
        (tmp_path / "d.txt", "txt"),
    )
    for path, fragment in cases:
        assert cli.main(["demo", "--n", "2000", "-q", "--plot", str(path)]) == 2
        captured = capsys.readouterr()
        _one_line_error(captured.err, "--plot", fragment)
        assert captured.out == ""  # failed up front: no banner, no training


def test_demo_plot_is_written_to_the_path_it_names(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    path = tmp_path / "figure"  # no extension: PNG, at exactly this path
    assert cli.main(["demo", "--n", "2000", "-q", "--plot", str(path)]) == 0, capsys.readouterr().err
    assert f"plot written to {path}\n" in capsys.readouterr().out
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (tmp_path / "figure.png").exists()


# ---------------------------------------------------------------------------
# --epochs: the summary covers every pass
# ---------------------------------------------------------------------------


def test_epochs_summary_counts_every_pass(train_file, monkeypatch, capsys):
    real = _training.evaluate_prequential

    def one_second_per_pass(*args, **kwargs):
        r = real(*args, **kwargs)
        r["train_seconds"] = 1.0
        r["examples_per_second"] = r["examples"] / 1.0
        return r

    monkeypatch.setattr(_training, "evaluate_prequential", one_second_per_pass)
    model = str(train_file.parent / "m.bkm")
    assert cli.main(["train", str(train_file), "-o", model, "--epochs", "3", "--gamma", "2", "-q"]) == 0
    out = capsys.readouterr().out
    assert "trained on 3 epochs of 3,000 examples in 3.00 s (3,000/s)" in out, out
    assert budgetkernel.load(model).counters_["examples"] == 9000
    assert cli.main(["evaluate", str(train_file), "--epochs", "2", "--gamma", "2", "-q"]) == 0
    out = capsys.readouterr().out
    assert "examples            3,000 x 2 epochs\n" in out, out
    assert "examples/s          3,000\n" in out, out
    assert "online error        0." in out and "(last epoch)" in out


# ---------------------------------------------------------------------------
# Option errors
# ---------------------------------------------------------------------------


def test_a_bad_gamma_is_an_argument_error_naming_the_option(train_file, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["train", str(train_file), "-o", str(train_file.parent / "m.bkm"), "--gamma", "abc"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "argument --gamma" in err and "'abc'" in err and "Traceback" not in err
    assert _options._gamma_arg("scale") == "scale" and _options._gamma_arg("0.5") == 0.5


@pytest.mark.parametrize(
    "argv,option",
    [
        (["--learner", "spa", "--budget", "50"], "--budget"),
        (["--learner", "pa", "--lam", "0.1"], "--lam"),
        (["--C", "5"], "--C"),
        (["--variant", "nn"], "--variant"),
        (["--learner", "perceptron", "--loss", "ramp"], "--loss"),  # bsgd reads --loss (hinge, log)
        (["--pa-type", "2"], "--pa-type"),
        (["--eta", "0.3"], "--eta"),
        (["--learner", "bogd", "--alpha", "2", "--beta", "30"], "--alpha"),
        (["--learner", "pa", "--sampling", "nonuniform"], "--sampling"),
    ],
)
def test_options_of_another_learner_are_rejected(train_file, capsys, argv, option):
    learner = argv[argv.index("--learner") + 1] if "--learner" in argv else "bsgd"
    model = train_file.parent / "m.bkm"
    assert cli.main(["train", str(train_file), "-o", str(model), "-q", *argv]) == 2
    _one_line_error(capsys.readouterr().err, f"{option} does not apply to --learner {learner}")
    assert not model.exists()


def test_learner_options_keep_their_defaults(train_file, capsys):
    model = str(train_file.parent / "m.bkm")
    common = ["--gamma", "2", "-q"]
    assert cli.main(["train", str(train_file), "-o", model, "--learner", "pa", *common]) == 0
    m = budgetkernel.load(model)
    assert (m.budget, m.C, m.variant, m.loss, m.pa_type) == (100, 1.0, "nn", "hinge", 1)
    assert cli.main(["train", str(train_file), "-o", model, "--learner", "spa", *common]) == 0
    m = budgetkernel.load(model)
    assert (m.alpha, m.beta, m.eta) == (1.0, 20.0, 1.0)
    assert cli.main(["train", str(train_file), "-o", model, "--learner", "bogd", "--budget", "0", *common]) == 0
    m = budgetkernel.load(model)
    assert (m.budget, m.sampling, m.eta, m.lam) == (None, "uniform", 0.5, 0.01)
    # an option given for its own learner is used
    assert cli.main(["train", str(train_file), "-o", model, "--learner", "pa", "--C", "0.3", *common]) == 0
    assert budgetkernel.load(model).C == 0.3
