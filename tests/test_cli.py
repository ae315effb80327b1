"""The command line: train/predict/evaluate on LIBSVM files, and the demo."""

import argparse
import io
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from _terminal import read_until_closed

import budgetkernel
from budgetkernel import cli, datasets
from budgetkernel import io as bk_io
from budgetkernel.preprocessing import StreamingStandardizer
from budgetkernel.cli import _options, _training
from budgetkernel.cli._training import recorded_reading
from conftest import write_svmlight_pair


@pytest.fixture()
def libsvm_files(tmp_path):
    return write_svmlight_pair(tmp_path, 3000, 1000, suffix=".libsvm")


def test_train_predict_roundtrip(libsvm_files, capsys):
    d, X, y, Xt, yt = libsvm_files
    model = d / "m.bkm"
    args = ["train", str(d / "train.libsvm"), "-o", str(model), "--budget", "40", "--gamma", "2", "--lam", "1e-2", "-q"]
    assert cli.main(args) == 0
    assert "40 SVs" in capsys.readouterr().out
    out = d / "pred.txt"
    assert cli.main(["predict", str(model), str(d / "test.libsvm"), "-o", str(out)]) == 0
    pred = np.loadtxt(out)
    clf = budgetkernel.load(model)
    np.testing.assert_array_equal(pred, clf.predict(Xt))
    # The CLI trains exactly what the estimator trains on the same stream.
    ref = budgetkernel.BudgetedSGDClassifier(budget=40, gamma=2.0, lam=1e-2, random_state=0).fit(X, y)
    np.testing.assert_array_equal(clf.dual_coef_, ref.dual_coef_)
    assert np.mean(pred == yt) > 0.85


def test_evaluate_reports_test_accuracy(libsvm_files, capsys):
    d, *_ = libsvm_files
    argv = ["evaluate", str(d / "train.libsvm"), "--test", str(d / "test.libsvm"), "--budget", "30", "-q"]
    assert cli.main(argv + ["--gamma", "2"]) == 0
    out = capsys.readouterr().out
    assert "online error" in out and "test accuracy" in out


def test_errors_are_reported_not_raised(tmp_path, capsys):
    bad = tmp_path / "bad.libsvm"
    bad.write_text("1 1:0.5\n-1 2:abc\n")
    assert cli.main(["train", str(bad), "-o", str(tmp_path / "m.bkm"), "-q"]) == 2
    assert "line 2" in capsys.readouterr().err
    assert cli.main(["predict", str(tmp_path / "missing.bkm"), str(bad)]) == 2
    empty = tmp_path / "empty.libsvm"
    empty.write_text("")
    assert cli.main(["train", str(empty), "-o", str(tmp_path / "m.bkm"), "-q"]) == 2
    assert "no examples" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:  # argparse names the option
        cli.main(["train", str(bad), "-o", str(tmp_path / "m.bkm"), "-q", "--epochs", "0"])
    assert e.value.code == 2 and "--epochs" in capsys.readouterr().err


def test_averaged_models_report_the_size_they_predict_with(libsvm_files, capsys):
    d, *_ = libsvm_files
    data, model = str(d / "train.libsvm"), str(d / "m.bkm")
    common = ["--budget", "20", "--gamma", "2", "-q"]
    assert cli.main(["train", data, "-o", model, "--learner", "bogd", "--averaged", *common]) == 0
    m = budgetkernel.load(model)
    assert m.averaged and m.n_support_ == 20 and m.n_support_average_ > 200
    assert f"20 SVs (the averaged classifier predicts with {m.n_support_average_})" in capsys.readouterr().out
    assert cli.main(["evaluate", data, "--learner", "pa", "--averaged", *common]) == 0
    out = capsys.readouterr().out
    assert "support vectors     20\n" in out and "SVs of the average" in out
    # SPA is SPA-avg by default; --no-averaged gives SPA-last
    assert cli.main(["train", data, "-o", model, "--learner", "spa", "--no-averaged", "--gamma", "2", "-q"]) == 0
    assert not budgetkernel.load(model).averaged
    assert cli.main(["train", data, "-o", model, "--learner", "spa", "--gamma", "2", "-q"]) == 0
    assert budgetkernel.load(model).averaged
    assert cli.main(["train", data, "-o", model, "--learner", "perceptron", "--averaged", "-q"]) == 2
    assert "--averaged does not apply" in capsys.readouterr().err


def test_demo_small_with_plot(tmp_path, capsys):
    png = tmp_path / "demo.png"
    assert cli.main(["demo", "--n", "20000", "-q", "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    for key in ("prequential error", "test accuracy", "examples/s", "support vectors", "peak memory"):
        assert key in out
    acc = float(out.split("test accuracy")[1].split()[0])
    assert acc > 0.9
    assert png.stat().st_size > 10_000


def _zero_based_pair(d):
    """A zero-based training file and a test file that never uses index 0."""
    X, y = datasets.checkerboard(3000, random_state=0)
    bk_io.dump_svmlight(X, y, d / "tr", zero_based=True)
    Xt, yt = datasets.checkerboard(200, random_state=1)
    Xt[:, 0] = 0.0
    bk_io.dump_svmlight(Xt, yt, d / "te", zero_based=True)
    return Xt, yt


def test_predict_reads_test_files_with_the_training_index_base(tmp_path, capsys):
    Xt, yt = _zero_based_pair(tmp_path)
    model, out = tmp_path / "m.bkm", tmp_path / "pred.txt"
    common = ["--budget", "40", "--gamma", "2", "--lam", "1e-2", "-q"]
    assert cli.main(["train", str(tmp_path / "tr"), "-o", str(model), *common]) == 0
    clf = budgetkernel.load(model)
    assert recorded_reading(clf)[0] is True
    assert cli.main(["predict", str(model), str(tmp_path / "te"), "-o", str(out)]) == 0
    np.testing.assert_array_equal(np.loadtxt(out), clf.predict(Xt))  # not Xt shifted by one column
    # evaluate --test reads the test file with the training base too
    assert cli.main(["evaluate", str(tmp_path / "tr"), "--test", str(tmp_path / "te"), *common]) == 0
    acc = float(capsys.readouterr().out.split("test accuracy")[1].split()[0])
    assert acc == round(float(np.mean(clf.predict(Xt) == yt)), 4)
    # --no-zero-based on predict overrides the stored base (here: wrongly, so the columns shift)
    assert cli.main(["predict", str(model), str(tmp_path / "te"), "-o", str(out), "--no-zero-based"]) == 0
    shifted = np.c_[Xt[:, 1], np.zeros(len(Xt))]
    np.testing.assert_array_equal(np.loadtxt(out), clf.predict(shifted))


def test_zero_based_option_overrides_detection_for_training(tmp_path, capsys):
    X, y = datasets.checkerboard(500, random_state=0)
    X[:, 0] = 0.0  # a zero-based file that never uses index 0: 'auto' says one-based
    bk_io.dump_svmlight(X, y, tmp_path / "tr", zero_based=True)
    model = str(tmp_path / "m.bkm")
    assert cli.main(["train", str(tmp_path / "tr"), "-o", model, "-q"]) == 0
    auto = budgetkernel.load(model)
    assert auto.n_features_in_ == 1 and recorded_reading(auto)[0] is False
    assert cli.main(["train", str(tmp_path / "tr"), "-o", model, "-q", "--zero-based"]) == 0
    stated = budgetkernel.load(model)
    assert stated.n_features_in_ == 2 and recorded_reading(stated)[0] is True
    # and an index 0 in a file declared one-based is an error, not a shift
    bk_io.dump_svmlight(*datasets.checkerboard(50, random_state=0), tmp_path / "zb", zero_based=True)
    assert cli.main(["train", str(tmp_path / "zb"), "-o", model, "-q", "--no-zero-based"]) == 2
    assert "index 0" in capsys.readouterr().err


def test_model_without_stored_base_keeps_auto_detection(tmp_path):
    _zero_based_pair(tmp_path)
    X, y = datasets.checkerboard(3000, random_state=0)
    clf = budgetkernel.BudgetedSGDClassifier(budget=40, gamma=2.0, random_state=0).fit(X, y)
    clf.save(tmp_path / "py.bkm")  # trained in Python: no LIBSVM base recorded
    out = tmp_path / "pred.txt"
    assert cli.main(["predict", str(tmp_path / "py.bkm"), str(tmp_path / "te"), "-o", str(out)]) == 0
    auto_X, _ = bk_io.load_svmlight(tmp_path / "te", n_features=2)  # 'auto': one-based here
    np.testing.assert_array_equal(np.loadtxt(out), clf.predict(auto_X))


def test_classes_option_keeps_integer_labels():
    assert _options._classes_arg("0,1,2").dtype.kind == "i"
    assert _options._classes_arg("-1, +1").tolist() == [-1, 1]
    assert _options._classes_arg("0.5,1").tolist() == [0.5, 1.0]
    assert _options._classes_arg("a,b").tolist() == ["a", "b"]
    with pytest.raises(argparse.ArgumentTypeError):
        _options._classes_arg("1,,2")


def test_predict_prints_integer_classes_given_with_classes(tmp_path):
    X, y = datasets.waveform(600, random_state=0)
    bk_io.dump_svmlight(X, y, tmp_path / "w")
    model, out = str(tmp_path / "m.bkm"), tmp_path / "pred.txt"
    assert cli.main(["train", str(tmp_path / "w"), "-o", model, "--classes", "0,1,2", "-q"]) == 0
    assert budgetkernel.load(model).classes_.dtype.kind == "i"
    assert cli.main(["predict", model, str(tmp_path / "w"), "-o", str(out)]) == 0
    assert set(out.read_text().split()) <= {"0", "1", "2"}


def _feed_pipe(data):
    """``/dev/fd`` path of a pipe that a thread fills with data (opening it never blocks)."""
    r, w = os.pipe()

    def write():
        with open(w, "wb") as fh:
            fh.write(data)

    threading.Thread(target=write, daemon=True).start()
    return r, f"/dev/fd/{r}"


@pytest.mark.skipif(not os.path.isdir("/dev/fd"), reason="needs /dev/fd")
def test_train_and_predict_on_a_pipe(libsvm_files, capsys):
    d, X, y, Xt, _ = libsvm_files
    model, out = str(d / "m.bkm"), d / "pred.txt"
    common = ["--budget", "40", "--gamma", "2", "--lam", "1e-2", "-q"]
    r, pipe = _feed_pipe((d / "train.libsvm").read_bytes())
    try:
        # without what a single pass needs: a clear error, not "no examples"
        assert cli.main(["train", pipe, "-o", model, *common]) == 2
        err = capsys.readouterr().err
        assert "read only once" in err and "--n-features and --classes" in err
        assert cli.main(["train", pipe, "-o", model, "--n-features", "2", "--classes=-1,1", *common]) == 0
    finally:
        os.close(r)
    clf = budgetkernel.load(model)
    ref = budgetkernel.BudgetedSGDClassifier(budget=40, gamma=2.0, lam=1e-2, random_state=0).fit(X, y)
    np.testing.assert_array_equal(clf.dual_coef_, ref.dual_coef_)
    assert recorded_reading(clf)[0] is False
    r, pipe = _feed_pipe((d / "test.libsvm").read_bytes())
    try:
        assert cli.main(["predict", model, pipe, "-o", str(out)]) == 0
    finally:
        os.close(r)
    np.testing.assert_array_equal(np.loadtxt(out), clf.predict(Xt))


def test_predict_into_a_closed_pipe_is_quiet(tmp_path):
    X, y = datasets.checkerboard(60_000, random_state=0)  # ~180 kB of predictions > a pipe buffer
    bk_io.dump_svmlight(X, y, tmp_path / "d")
    model = tmp_path / "m.bkm"
    budgetkernel.BudgetedSGDClassifier(budget=10, random_state=0).fit(X[:500], y[:500]).save(model)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    p = subprocess.Popen(
        [sys.executable, "-m", "budgetkernel", "predict", str(model), str(tmp_path / "d")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    p.stdout.readline()  # like `| head -1`
    p.stdout.close()
    err = p.stderr.read().decode()
    p.wait(timeout=60)
    p.stderr.close()
    assert err == ""  # no "[Errno 32] Broken pipe", no traceback
    assert p.returncode == 1


def test_evaluate_checks_the_test_file_before_training(libsvm_files, capsys):
    d, *_ = libsvm_files
    X, y = datasets.waveform(20, random_state=0)
    bk_io.dump_svmlight(X, y, d / "wide.libsvm")
    assert cli.main(["evaluate", str(d / "train.libsvm"), "--test", str(d / "wide.libsvm"), "-q"]) == 2
    captured = capsys.readouterr()
    assert "n_features=2" in captured.err and "wide.libsvm" in captured.err
    assert "examples" not in captured.out  # nothing was trained


def test_evaluate_in_chunks_matches_whole_file_accuracy(libsvm_files, capsys):
    d, _, _, Xt, yt = libsvm_files
    common = ["--budget", "30", "--gamma", "2", "--chunk-size", "97", "-q"]
    argv = ["evaluate", str(d / "train.libsvm"), "--test", str(d / "test.libsvm"), *common]
    assert cli.main(argv) == 0
    acc = float(capsys.readouterr().out.split("test accuracy")[1].split()[0])
    assert cli.main(["train", str(d / "train.libsvm"), "-o", str(d / "m.bkm"), *common]) == 0
    clf = budgetkernel.load(d / "m.bkm")
    assert acc == round(float(np.mean(clf.predict(Xt) == yt)), 4)


def test_demo_plot_without_matplotlib_fails_before_training(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib` fail
    assert cli.main(["demo", "--n", "2000", "-q", "--plot", str(tmp_path / "x.png")]) == 2
    captured = capsys.readouterr()
    assert "--plot" in captured.err and "pip install" in captured.err
    assert captured.out == ""  # failed up front: no training, no report
    assert not (tmp_path / "x.png").exists()


def test_demo_rejects_an_empty_stream(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["demo", "--n", "0"])
    assert e.value.code == 2 and "--n" in capsys.readouterr().err


# ---------------------------------------------------------------------------
# Messages name the file line, the CLI option and the fix
# ---------------------------------------------------------------------------


def _error_line(err):
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("budgetkernel: error: "), err
    return lines[0]


def _with_bad_value_on_line_11(path):
    """A file whose line 11 holds a value the reader accepts and the estimator rejects (its
    square overflows the kernel's arithmetic); a comment and a blank line come first, so the
    row of the example (8) is neither the line nor the line - 1."""
    X, y = datasets.checkerboard(20, random_state=0)
    bk_io.dump_svmlight(X, y, path)
    rows = path.read_text().splitlines(keepends=True)
    rows[8] = "1 1:1e200 2:0.5\n"
    path.write_text("# header\n\n" + "".join(rows))
    assert path.read_text().splitlines()[10] == "1 1:1e200 2:0.5"


@pytest.mark.parametrize("chunk_size", ["10000", "4", "1"])
def test_a_value_the_estimator_rejects_is_reported_at_its_file_line(tmp_path, capsys, chunk_size):
    data = tmp_path / "bad.svm"
    _with_bad_value_on_line_11(data)
    model = tmp_path / "m.bkm"
    for argv in (["train", str(data), "-o", str(model)], ["evaluate", str(data)]):
        assert cli.main([*argv, "-q", "--chunk-size", chunk_size]) == 2
        err = _error_line(capsys.readouterr().err)
        assert "'" + str(data) + "', line 11: the example contains values too large" in err, err
        assert "row" not in err and "--standardize" in err
    assert not model.exists()


def test_predict_reports_a_rejected_value_at_its_file_line(tmp_path, capsys):
    data = tmp_path / "bad.svm"
    _with_bad_value_on_line_11(data)
    X, y = datasets.checkerboard(200, random_state=0)
    model = tmp_path / "m.bkm"
    budgetkernel.BudgetedSGDClassifier(budget=10, random_state=0).fit(X, y).save(model)
    assert cli.main(["predict", str(model), str(data), "--chunk-size", "3"]) == 2
    err = _error_line(capsys.readouterr().err)
    assert f"'{data}', line 11: the example contains values too large" in err and "row" not in err
    bk_io.dump_svmlight(X, y, tmp_path / "good.svm")
    argv = ["evaluate", str(tmp_path / "good.svm"), "--test", str(data), "-q", "--chunk-size", "5"]
    assert cli.main(argv) == 2
    assert f"'{data}', line 11: the example" in _error_line(capsys.readouterr().err)


def test_classes_accepts_negative_labels_as_a_separate_argument(libsvm_files, capsys):
    d, *_ = libsvm_files
    model = str(d / "m.bkm")
    for classes in (["--classes", "-1,1"], ["--classes=-1,1"], ["--classes", "-1, 1"], ["--clas", "-1,1"]):
        assert cli.main(["train", str(d / "train.libsvm"), "-o", model, "-q", *classes]) == 0, classes
        assert budgetkernel.load(model).classes_.tolist() == [-1, 1]
    # a label list that is then wrong is reported with the line of the first unknown label
    (d / "three.libsvm").write_text("-1 1:0.5\n1 1:0.2\n\n2 1:0.1\n")
    assert cli.main(["train", str(d / "three.libsvm"), "-o", model, "-q", "--classes", "-1,1"]) == 2
    err = _error_line(capsys.readouterr().err)
    assert "line 4: label 2 is not one of --classes -1,1" in err
    assert "partial_fit" not in err  # not the Python API's advice
    assert cli._attach_negative_values(["--classes", "-1,1", "--", "--classes", "-2"]) == [
        "--classes=-1,1",
        "--",
        "--classes",
        "-2",
    ]
    assert cli._attach_negative_values(["--classes", "a,b", "-q"]) == ["--classes", "a,b", "-q"]


def test_help_shows_how_to_give_negative_classes():
    assert "--classes=-1,1" in cli.build_parser()._subparsers._group_actions[0].choices["train"].format_help()


def test_fractional_labels_get_a_message_saying_what_to_do(tmp_path, capsys):
    half = tmp_path / "half.svm"
    half.write_text("0.5 1:1\n-0.5 1:2\n0.5 1:3\n")
    model = tmp_path / "m.bkm"
    for extra, source in (([], str(half)), (["--classes=-0.5,0.5"], "--classes -0.5,0.5")):
        for command in (["train", str(half), "-o", str(model)], ["evaluate", str(half)]):
            assert cli.main([*command, "-q", *extra]) == 2
            err = _error_line(capsys.readouterr().err)
            assert err.startswith(f"budgetkernel: error: {source}: the labels -0.5, 0.5 are not whole numbers")
            assert "regression target" in err and "relabel them as integers" in err
            assert "Unknown label type" not in err
    assert not model.exists()
    # whole numbers written as floats are classes
    (tmp_path / "whole.svm").write_text("1.0 1:1\n-1.0 1:2\n1.0 1:3\n")
    assert cli.main(["train", str(tmp_path / "whole.svm"), "-o", str(model), "-q"]) == 0
    assert budgetkernel.load(model).classes_.tolist() == [-1.0, 1.0]


def test_the_one_based_hint_names_the_cli_option(tmp_path, capsys):
    (tmp_path / "zb.svm").write_text("1 0:1 1:2\n-1 1:2\n")
    model = tmp_path / "m.bkm"
    assert cli.main(["train", str(tmp_path / "zb.svm"), "-o", str(model), "-q", "--no-zero-based"]) == 2
    err = _error_line(capsys.readouterr().err)
    assert "line 1: feature index 0 in a one-based file (give --zero-based" in err
    assert "zero_based=" not in err
    (tmp_path / "ob.svm").write_text("1 1:1 2:2\n-1 2:2\n")
    assert cli.main(["train", str(tmp_path / "ob.svm"), "-o", str(model), "-q", "--n-features", "2"]) == 0
    assert cli.main(["predict", str(model), str(tmp_path / "zb.svm")]) == 2  # the model says one-based
    err = _error_line(capsys.readouterr().err)
    assert "(give --zero-based" in err and "zero_based=" not in err


@pytest.mark.parametrize("value,shown", [("-3", "-3"), ("0", "0"), ("abc", "'abc'"), ("1.5", "'1.5'")])
@pytest.mark.parametrize("command", ["train", "predict", "evaluate", "demo"])
def test_chunk_size_must_be_positive(capsys, command, value, shown):
    argv = {
        "train": ["train", "d.svm", "-o", "m.bkm"],
        "predict": ["predict", "m.bkm", "d.svm"],
        "evaluate": ["evaluate", "d.svm"],
        "demo": ["demo", "--n", "100"],
    }[command]
    with pytest.raises(SystemExit) as e:
        cli.main([*argv, "--chunk-size", value])
    assert e.value.code == 2
    captured = capsys.readouterr()
    assert f"argument --chunk-size: must be a positive integer; got {shown}\n" in captured.err
    assert "non-negative" not in captured.err and captured.out == ""


def test_demo_budget_0_means_no_budget_as_for_train(capsys):
    assert cli.main(["demo", "--n", "3000", "--budget", "0", "-q"]) == 0
    out = capsys.readouterr().out
    assert "no budget" in out and "test accuracy" in out
    n_support = int(out.split("support vectors")[1].split()[0])
    assert n_support > 100  # the default budget would have held it at 100


@pytest.mark.parametrize(
    "argv,fragment",
    [
        (["--budget", "-3"], "argument --budget: must be a non-negative integer (0 = no budget); got -3"),
        (["--seed", "-1"], "argument --seed: must be a non-negative integer; got -1"),
        (["--n", "0"], "argument --n: must be a positive integer; got 0"),
    ],
)
def test_demo_argument_errors_come_before_the_banner(capsys, argv, fragment):
    with pytest.raises(SystemExit) as e:
        cli.main(["demo", *argv])
    captured = capsys.readouterr()
    assert e.value.code == 2 and fragment in captured.err and captured.out == ""


@pytest.mark.parametrize("argv,fragment", [(["--lam", "-1"], "lam"), (["--gamma", "0"], "gamma")])
def test_demo_estimator_errors_come_before_the_banner(capsys, argv, fragment):
    assert cli.main(["demo", "--n", "100", *argv]) == 2
    captured = capsys.readouterr()
    assert fragment in _error_line(captured.err) and captured.out == ""


def test_train_checks_the_learner_options_before_reading(tmp_path, capsys, monkeypatch):
    def no_reading(*args, **kwargs):
        raise AssertionError("the file was read before the options were checked")

    monkeypatch.setattr(_training, "_plan_svmlight", no_reading)
    (tmp_path / "d.svm").write_text("1 1:1\n-1 1:2\n")
    assert cli.main(["train", str(tmp_path / "d.svm"), "-o", str(tmp_path / "m.bkm"), "--lam", "-1", "-q"]) == 2
    assert "lam" in _error_line(capsys.readouterr().err)
    with pytest.raises(SystemExit):  # and the budget rule is the demo's: 0 or more
        cli.main(["train", str(tmp_path / "d.svm"), "-o", str(tmp_path / "m.bkm"), "--budget", "-1"])
    assert "argument --budget: must be a non-negative integer (0 = no budget)" in capsys.readouterr().err


# ---------------------------------------------------------------------------
# --standardize
# ---------------------------------------------------------------------------


@pytest.fixture()
def breast_cancer(tmp_path):
    """scikit-learn's breast_cancer, raw (feature ranges from ~0.01 to ~4,000) in its order."""
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    path = tmp_path / "bc.svm"
    bk_io.dump_svmlight(X, 2 * y - 1, path)
    return path, X, 2 * y - 1


def _test_accuracy(out):
    return float(out.split("test accuracy")[1].split()[0])


def test_standardize_helps_on_raw_breast_cancer_and_predict_applies_it(breast_cancer, capsys):
    path, X, y = breast_cancer
    d = path.parent
    common = ["--epochs", "5", "-q"]
    assert cli.main(["evaluate", str(path), "--test", str(path), *common]) == 0
    raw = _test_accuracy(capsys.readouterr().out)
    assert cli.main(["evaluate", str(path), "--test", str(path), "--standardize", *common]) == 0
    standardized = _test_accuracy(capsys.readouterr().out)
    assert standardized > 0.95 and standardized - raw > 0.05, (raw, standardized)
    # train + predict: the model file carries the statistics, predict applies them
    model = d / "m.bkm"
    assert cli.main(["train", str(path), "-o", str(model), "--standardize", *common]) == 0
    capsys.readouterr()
    assert cli.main(["predict", str(model), str(path), "-o", str(d / "p.txt")]) == 0
    err = capsys.readouterr().err
    assert f"accuracy {standardized:.4f} on the 569 labelled examples of {path}" in err
    pred = np.loadtxt(d / "p.txt")
    assert round(float(np.mean(pred == y)), 4) == standardized
    # the same statistics as the library's standardiser on the first chunk (the whole file here)
    clf = budgetkernel.load(model)
    scaler = StreamingStandardizer(n_warmup=10_000).partial_fit(X)
    mean, scale = recorded_reading(clf)[1]
    np.testing.assert_array_equal(mean, scaler.mean_)
    np.testing.assert_array_equal(scale, scaler.scale_)
    np.testing.assert_array_equal(pred, clf.predict(scaler.transform(X)))
    # a model trained without --standardize predicts on the raw features
    assert cli.main(["train", str(path), "-o", str(model), *common]) == 0
    plain = budgetkernel.load(model)
    assert recorded_reading(plain)[1] is None and b"standardize" not in plain._model.metadata


def test_standardize_warmup_takes_its_statistics_from_the_first_n_examples(breast_cancer, capsys):
    path, X, y = breast_cancer
    model = path.parent / "m.bkm"
    argv = ["train", str(path), "-o", str(model), "-q", "--chunk-size", "64"]
    assert cli.main([*argv, "--standardize-warmup", "100"]) == 0  # implies --standardize
    clf = budgetkernel.load(model)
    # fitted chunk by chunk, as the CLI reads them: 64 examples, then 36 of the next chunk
    ref = StreamingStandardizer(n_warmup=100).partial_fit(X[:64]).partial_fit(X[64:128])
    assert ref.n_seen_ == 100
    np.testing.assert_array_equal(recorded_reading(clf)[1][0], ref.mean_)
    np.testing.assert_array_equal(recorded_reading(clf)[1][1], ref.scale_)
    # the estimator learned exactly the standardised stream
    chunks = [ref.transform(X[i : i + 64]) for i in range(0, len(X), 64)]
    expected = budgetkernel.BudgetedSGDClassifier(random_state=0)
    for i, Xc in enumerate(chunks):
        expected.partial_fit(Xc, y[i * 64 : (i + 1) * 64], classes=[-1, 1])
    np.testing.assert_array_equal(clf.dual_coef_, expected.dual_coef_)
    # --standardize alone: the first chunk (64 examples)
    assert cli.main([*argv, "--standardize"]) == 0
    first_chunk = StreamingStandardizer(n_warmup=64).partial_fit(X[:64])
    np.testing.assert_array_equal(recorded_reading(budgetkernel.load(model))[1][0], first_chunk.mean_)


def test_standardize_with_several_epochs_keeps_the_first_pass_statistics(breast_cancer):
    path, X, _ = breast_cancer
    model = path.parent / "m.bkm"
    argv = ["train", str(path), "-o", str(model), "-q", "--standardize-warmup", "50", "--epochs", "3"]
    assert cli.main(argv) == 0
    ref = StreamingStandardizer(n_warmup=50).partial_fit(X[:50])  # within the first chunk
    np.testing.assert_array_equal(recorded_reading(budgetkernel.load(model))[1][1], ref.scale_)
    assert budgetkernel.load(model).counters_["examples"] == 3 * len(X)


def _rewrite_standardize_entry(path, entry):
    import json

    clf = budgetkernel.load(path)
    meta = json.loads(clf._model.metadata)
    meta["standardize"] = entry
    clf._model.metadata = json.dumps(meta).encode()
    path.write_bytes(clf._model.to_bytes())


@pytest.mark.parametrize(
    "entry,fragment",
    [
        ({"mean": [0.0], "scale": [1.0]}, "must hold 2 means and scales"),
        ({"mean": [0.0, 0.0], "scale": [1.0, 0.0]}, "positive finite scales"),
        ({"mean": [0.0, 0.0], "scale": [1.0, -2.0]}, "positive finite scales"),
        ({"mean": [0.0, float("nan")], "scale": [1.0, 1.0]}, "finite means"),
        ({"mean": [0.0, 0.0], "scale": [1.0, float("inf")]}, "positive finite scales"),
        ({"mean": ["a", 0.0], "scale": [1.0, 1.0]}, "not two lists of numbers"),
        ({"mean": [0.0, 0.0]}, "not two lists of numbers"),
        ([1.0, 2.0], "not two lists of numbers"),
        ({"mean": [[0.0, 0.0]], "scale": [1.0, 1.0]}, "must hold 2 means"),
    ],
)
def test_a_corrupt_standardize_entry_is_refused(libsvm_files, capsys, entry, fragment):
    d, *_ = libsvm_files
    model = d / "m.bkm"
    assert cli.main(["train", str(d / "train.libsvm"), "-o", str(model), "-q", "--standardize"]) == 0
    _rewrite_standardize_entry(model, entry)
    with pytest.raises(ValueError, match=rf"m\.bkm.*corrupt file: its standardize entry.*{fragment}"):
        recorded_reading(budgetkernel.load(model), str(model))
    assert cli.main(["predict", str(model), str(d / "test.libsvm")]) == 2
    assert "corrupt file" in _error_line(capsys.readouterr().err)


def test_the_standardize_entry_round_trips_exactly(libsvm_files):
    d, *_ = libsvm_files
    model = d / "m.bkm"
    assert cli.main(["train", str(d / "train.libsvm"), "-o", str(model), "-q", "--standardize"]) == 0
    clf = budgetkernel.load(model)
    clf.save(d / "again.bkm")
    again = budgetkernel.load(d / "again.bkm")
    for a, b in zip(recorded_reading(clf)[1], recorded_reading(again)[1]):
        np.testing.assert_array_equal(a, b)
    assert (d / "again.bkm").read_bytes() == model.read_bytes()


def test_a_hint_suggests_standardize_for_badly_scaled_features(breast_cancer, libsvm_files, capsys):
    path, *_ = breast_cancer
    assert cli.main(["evaluate", str(path)]) == 0
    err = capsys.readouterr().err
    assert "budgetkernel: hint:" in err and "--standardize" in err and "feature 24" in err
    for quiet in (["-q"], ["--standardize"]):
        assert cli.main(["evaluate", str(path), *quiet]) == 0
        assert "hint" not in capsys.readouterr().err
    d, *_ = libsvm_files  # features on one scale: no hint
    assert cli.main(["evaluate", str(d / "train.libsvm")]) == 0
    assert "hint" not in capsys.readouterr().err


# ---------------------------------------------------------------------------
# predict's accuracy, --version, help texts, progress bar
# ---------------------------------------------------------------------------


def test_predict_prints_the_accuracy_of_a_labelled_file(libsvm_files, capsys):
    d, _, _, Xt, yt = libsvm_files
    model = d / "m.bkm"
    assert cli.main(["train", str(d / "train.libsvm"), "-o", str(model), "--gamma", "2", "-q"]) == 0
    capsys.readouterr()
    assert cli.main(["predict", str(model), str(d / "test.libsvm"), "-o", str(d / "p.txt")]) == 0
    captured = capsys.readouterr()
    acc = float(np.mean(budgetkernel.load(model).predict(Xt) == yt))
    assert captured.err == f"accuracy {acc:.4f} on the 1,000 labelled examples of {d / 'test.libsvm'}\n"
    assert captured.out == ""
    # on standard output, the predictions stay alone there
    assert cli.main(["predict", str(model), str(d / "test.libsvm")]) == 0
    captured = capsys.readouterr()
    assert len(captured.out.split()) == 1000 and "accuracy" in captured.err
    assert cli.main(["predict", str(model), str(d / "test.libsvm"), "-q"]) == 0
    assert capsys.readouterr().err == ""
    # placeholder labels that are no class: no accuracy; some unknown labels: said so
    bk_io.dump_svmlight(Xt, np.zeros(len(Xt), dtype=int), d / "unlabelled.libsvm")
    assert cli.main(["predict", str(model), str(d / "unlabelled.libsvm")]) == 0
    assert capsys.readouterr().err == ""
    bk_io.dump_svmlight(Xt[:10], np.r_[yt[:6], [0, 0, 0, 0]], d / "partly.libsvm")
    assert cli.main(["predict", str(model), str(d / "partly.libsvm")]) == 0
    err = capsys.readouterr().err
    assert "on the 6 labelled examples" in err and "(4 others have labels the model does not know)" in err
    # a model with str classes (trained in Python) knows no numeric label of a LIBSVM file
    named = budgetkernel.BudgetedSGDClassifier(random_state=0).fit(Xt, np.where(yt > 0, "pos", "neg"))
    named.save(d / "named.bkm")
    assert cli.main(["predict", str(d / "named.bkm"), str(d / "test.libsvm"), "-o", str(d / "p.txt")]) == 0
    assert capsys.readouterr().err == ""
    assert set((d / "p.txt").read_text().split()) == {"neg", "pos"}


def test_version_flag(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out == f"budgetkernel {budgetkernel.__version__}\n"
    r = subprocess.run([sys.executable, "-m", "budgetkernel", "--version"], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == f"budgetkernel {budgetkernel.__version__}"


def test_every_option_and_argument_has_help():
    parser = cli.build_parser()
    subparsers = parser._subparsers._group_actions[0]
    parsers = {"budgetkernel": parser, **subparsers.choices}
    assert set(subparsers.choices) == {"train", "predict", "evaluate", "demo"}
    missing = [
        f"{name} {action.option_strings or action.dest}"
        for name, p in parsers.items()
        for action in p._actions
        if not action.help or action.help == argparse.SUPPRESS
    ]
    assert missing == []
    for choice in subparsers._choices_actions:
        assert choice.help


def test_no_progress_bar_when_stderr_is_not_a_terminal(libsvm_files, capsys):
    d, *_ = libsvm_files
    for argv in (["train", str(d / "train.libsvm"), "-o", str(d / "m.bkm")], ["demo", "--n", "20000"]):
        assert cli.main(argv) == 0
        out, err = capsys.readouterr()  # a stderr that is no terminal, like a log file's
        assert err == "", err  # no '\r' redraws in a log
        assert "\r" not in out


def _run_with_a_terminal_as_stderr(argv):
    """(stdout, what the process wrote to its stderr, a pseudo-terminal)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    master, slave = os.openpty()
    try:
        try:
            p = subprocess.run(
                [sys.executable, "-m", "budgetkernel", *argv],
                stdout=subprocess.PIPE,
                stderr=slave,
                env=env,
                check=True,
                timeout=120,
            )
        finally:
            os.close(slave)
        err = read_until_closed(master)
    finally:
        os.close(master)
    return p.stdout, err


class _Terminal(io.StringIO):
    """A stderr that says it is a terminal (the CLI asks sys.stderr.isatty())."""

    def isatty(self):
        return True


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_progress_bar_on_a_terminal(monkeypatch, capsys):
    out, err = _run_with_a_terminal_as_stderr(["demo", "--n", "20000"])
    assert b"test accuracy" in out
    assert b"\rtraining [" in err and b"20,000/20,000" in err
    monkeypatch.setattr(sys, "stderr", _Terminal())
    assert cli.main(["demo", "--n", "20000", "-q"]) == 0
    assert "test accuracy" in capsys.readouterr().out and sys.stderr.getvalue() == ""
    assert cli.main(["demo", "--n", "2000"]) == 0  # the stand-in terminal gets the bar without -q
    assert "\rtraining [" in sys.stderr.getvalue()


def test_a_value_that_overflows_the_standardisation_is_reported_at_its_line(tmp_path, capsys):
    # feature 1 varies by 1e-10 in the warm-up, so 1e300 on line 11 overflows (x - mean) / scale
    rows = ["1 1:1 2:0.5", "-1 1:1.0000000001 2:0.1"] * 5
    (tmp_path / "warm.svm").write_text("\n".join(rows) + "\n")
    (tmp_path / "far.svm").write_text("\n".join([*rows, "1 1:1e300 2:0.3"]) + "\n")
    model = tmp_path / "m.bkm"
    expected = "svmlight file '{}', line 11: a feature value is so far outside the range of the examples --standardize"
    assert cli.main(["train", str(tmp_path / "far.svm"), "-o", str(model), "-q", "--standardize-warmup", "10"]) == 2
    err = _error_line(capsys.readouterr().err)  # one line: no numpy RuntimeWarning
    assert err.startswith("budgetkernel: error: " + expected.format(tmp_path / "far.svm")), err
    assert "--standardize-warmup" in err
    assert cli.main(["train", str(tmp_path / "warm.svm"), "-o", str(model), "-q", "--standardize"]) == 0
    assert cli.main(["predict", str(model), str(tmp_path / "far.svm"), "-o", str(tmp_path / "p.txt")]) == 2
    err = _error_line(capsys.readouterr().err)
    assert err.startswith("budgetkernel: error: " + expected.format(tmp_path / "far.svm")), err
    assert not (tmp_path / "p.txt").exists()
