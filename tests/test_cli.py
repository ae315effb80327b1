"""The command line: train/predict/evaluate on LIBSVM files, and the demo."""

import subprocess
import sys

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
