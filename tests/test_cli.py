"""The command line: train/predict/evaluate on LIBSVM files, and the demo."""

import argparse
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import budgetkernel
from budgetkernel import cli, datasets


@pytest.fixture()
def libsvm_files(tmp_path):
    X, y = datasets.noisy_checkerboard(3000, random_state=0)
    Xt, yt = datasets.checkerboard(1000, random_state=1)
    datasets.dump_svmlight(X, y, tmp_path / "train.libsvm")
    datasets.dump_svmlight(Xt, yt, tmp_path / "test.libsvm")
    return tmp_path, X, y, Xt, yt


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


def test_demo_small_with_plot(tmp_path):
    png = tmp_path / "demo.png"
    r = subprocess.run(
        [sys.executable, "-m", "budgetkernel", "demo", "--n", "20000", "-q", "--plot", str(png)],
        capture_output=True,
        text=True,
        check=True,
    )
    for key in ("prequential error", "test accuracy", "examples/s", "support vectors", "peak memory"):
        assert key in r.stdout
    acc = float(r.stdout.split("test accuracy")[1].split()[0])
    assert acc > 0.9
    assert png.stat().st_size > 10_000


def _zero_based_pair(d):
    """A zero-based training file and a test file that never uses index 0."""
    X, y = datasets.checkerboard(3000, random_state=0)
    datasets.dump_svmlight(X, y, d / "tr", zero_based=True)
    Xt, yt = datasets.checkerboard(200, random_state=1)
    Xt[:, 0] = 0.0
    datasets.dump_svmlight(Xt, yt, d / "te", zero_based=True)
    return Xt, yt


def test_predict_reads_test_files_with_the_training_index_base(tmp_path, capsys):
    Xt, yt = _zero_based_pair(tmp_path)
    model, out = tmp_path / "m.bkm", tmp_path / "pred.txt"
    common = ["--budget", "40", "--gamma", "2", "--lam", "1e-2", "-q"]
    assert cli.main(["train", str(tmp_path / "tr"), "-o", str(model), *common]) == 0
    clf = budgetkernel.load(model)
    assert clf._svmlight_zero_based is True
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
    datasets.dump_svmlight(X, y, tmp_path / "tr", zero_based=True)
    model = str(tmp_path / "m.bkm")
    assert cli.main(["train", str(tmp_path / "tr"), "-o", model, "-q"]) == 0
    auto = budgetkernel.load(model)
    assert auto.n_features_in_ == 1 and auto._svmlight_zero_based is False
    assert cli.main(["train", str(tmp_path / "tr"), "-o", model, "-q", "--zero-based"]) == 0
    stated = budgetkernel.load(model)
    assert stated.n_features_in_ == 2 and stated._svmlight_zero_based is True
    # and an index 0 in a file declared one-based is an error, not a shift
    datasets.dump_svmlight(*datasets.checkerboard(50, random_state=0), tmp_path / "zb", zero_based=True)
    assert cli.main(["train", str(tmp_path / "zb"), "-o", model, "-q", "--no-zero-based"]) == 2
    assert "index 0" in capsys.readouterr().err


def test_model_without_stored_base_keeps_auto_detection(tmp_path):
    _zero_based_pair(tmp_path)
    X, y = datasets.checkerboard(3000, random_state=0)
    clf = budgetkernel.BudgetedSGDClassifier(budget=40, gamma=2.0, random_state=0).fit(X, y)
    clf.save(tmp_path / "py.bkm")  # trained in Python: no LIBSVM base recorded
    out = tmp_path / "pred.txt"
    assert cli.main(["predict", str(tmp_path / "py.bkm"), str(tmp_path / "te"), "-o", str(out)]) == 0
    auto_X, _ = datasets.load_svmlight(tmp_path / "te", n_features=2)  # 'auto': one-based here
    np.testing.assert_array_equal(np.loadtxt(out), clf.predict(auto_X))


def test_classes_option_keeps_integer_labels():
    assert cli._classes_arg("0,1,2").dtype.kind == "i"
    assert cli._classes_arg("-1, +1").tolist() == [-1, 1]
    assert cli._classes_arg("0.5,1").tolist() == [0.5, 1.0]
    assert cli._classes_arg("a,b").tolist() == ["a", "b"]
    with pytest.raises(argparse.ArgumentTypeError):
        cli._classes_arg("1,,2")


def test_predict_prints_integer_classes_given_with_classes(tmp_path):
    X, y = datasets.waveform(600, random_state=0)
    datasets.dump_svmlight(X, y, tmp_path / "w")
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
    assert clf._svmlight_zero_based is False
    r, pipe = _feed_pipe((d / "test.libsvm").read_bytes())
    try:
        assert cli.main(["predict", model, pipe, "-o", str(out)]) == 0
    finally:
        os.close(r)
    np.testing.assert_array_equal(np.loadtxt(out), clf.predict(Xt))


def test_predict_into_a_closed_pipe_is_quiet(tmp_path):
    X, y = datasets.checkerboard(60_000, random_state=0)  # ~180 kB of predictions > a pipe buffer
    datasets.dump_svmlight(X, y, tmp_path / "d")
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
    datasets.dump_svmlight(X, y, d / "wide.libsvm")
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
