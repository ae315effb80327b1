"""The command line's --tune: train / evaluate through a PrequentialSearch over the file's stream."""

import json

import numpy as np
import pytest

import budgetkernel
from budgetkernel import cli
from budgetkernel import io as bk_io
from budgetkernel.cli import _training
from budgetkernel.model_selection import PrequentialSearch
from budgetkernel.preprocessing import StreamingStandardizer
from budgetkernel.cli._training import recorded_reading
from conftest import write_svmlight_pair

CHUNK = 400


@pytest.fixture()
def files(tmp_path):
    return write_svmlight_pair(tmp_path, 1500, 500)


def _chunks(X, y):
    return [(X[i : i + CHUNK], y[i : i + CHUNK]) for i in range(0, len(y), CHUNK)]


def _python_search(estimator, X, y, **kwargs):
    """The search the CLI runs, driven from Python over the same chunks."""
    search = PrequentialSearch(estimator, n_expected=len(y), random_state=0, **kwargs)
    for Xc, yc in _chunks(X, y):
        search.partial_fit(Xc, yc, classes=[-1, 1])
    return search


def _core_bytes(model):
    """The core model's bytes without the Python metadata (the prequential curve of a candidate
    also has the rung points its chunks were split at)."""
    model._model.metadata = b""
    return model._model.to_bytes()


def _meta(path):
    return json.loads(budgetkernel.load(path)._model.metadata)


def _error_line(err):
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("budgetkernel: error: "), err
    return lines[0]


def test_train_tune_writes_the_searchs_winner_and_predict_uses_it(files, capsys):
    d, X, y, Xt, _ = files
    model = d / "m.bkm"
    argv = ["train", str(d / "train.svm"), "-o", str(model), "--budget", "30", "--chunk-size", str(CHUNK), "-q"]
    assert cli.main([*argv, "--tune"]) == 0
    out = capsys.readouterr().out
    search = _python_search(budgetkernel.BudgetedSGDClassifier(budget=30, random_state=0), X, y)
    assert len(search.candidate_params_) == 27  # the default grid: 3 gamma x 9 lam
    assert search.summary() in out
    best = search.best_params_
    assert f"chosen parameters: gamma={best['gamma']!r}, lam={best['lam']!r}" in out
    assert "model written to" in out.splitlines()[-1]
    saved = budgetkernel.load(model)
    assert saved.get_params() == search.best_estimator_.get_params()
    assert _core_bytes(saved) == _core_bytes(search.best_estimator_)

    pred = d / "pred.txt"
    assert cli.main(["predict", str(model), str(d / "test.svm"), "-o", str(pred)]) == 0
    np.testing.assert_array_equal(np.loadtxt(pred), search.best_estimator_.predict(Xt))
    assert "accuracy" in capsys.readouterr().err


def test_evaluate_tune_prints_the_table_and_the_winners_accuracy(files, capsys):
    d, X, y, Xt, yt = files
    argv = ["evaluate", str(d / "train.svm"), "--test", str(d / "test.svm"), "--budget", "30"]
    assert cli.main([*argv, "--chunk-size", str(CHUNK), "--tune", "--tune-eta", "2", "-q"]) == 0
    out = capsys.readouterr().out
    search = _python_search(budgetkernel.BudgetedSGDClassifier(budget=30, random_state=0), X, y, eta=2)
    assert search.summary() in out and out.index("rank") < out.index("test accuracy")
    winner = search.best_estimator_
    assert f"test accuracy       {np.mean(winner.predict(Xt) == yt):.4f}\n" in out
    online = winner.counters_["mistakes"] / winner.counters_["examples"]
    assert f"online error        {online:.4f}  (the chosen model)\n" in out


@pytest.mark.parametrize(
    "plain, tuned",
    [
        (["--gamma", "2", "--lam", "0.001"], ["--tune-grid", "gamma=2", "--tune-grid", "lam=0.001"]),
        (
            ["--learner", "pa", "--variant", "nn", "--C", "0.5", "--pa-type", "2"],
            ["--learner", "pa", "--tune-grid", "variant=nn", "--tune-grid", "C=0.5", "--tune-grid", "pa-type=2"],
        ),
        (
            ["--learner", "bogd", "--eta", "0.25", "--averaged", "--budget", "0"],
            ["--learner", "bogd", "--tune-grid", "eta=0.25", "--tune-grid", "averaged=true", "--tune-grid", "budget=0"],
        ),
    ],
)
def test_a_grid_of_one_value_each_is_plain_training(files, capsys, plain, tuned):
    d, *_ = files
    common = [str(d / "train.svm"), "--chunk-size", str(CHUNK), "-q"]
    assert cli.main(["train", *common, "-o", str(d / "plain.bkm"), *plain]) == 0
    assert cli.main(["train", *common, "-o", str(d / "tuned.bkm"), *tuned]) == 0
    assert "--tune: 1 candidate, no halving" in capsys.readouterr().out
    # the same model file, byte for byte (parameters, curve and reading metadata included)
    assert (d / "tuned.bkm").read_bytes() == (d / "plain.bkm").read_bytes()


def test_options_given_are_left_out_of_the_default_grid(files, capsys):
    d, *_ = files
    argv = ["train", str(d / "train.svm"), "-o", str(d / "m.bkm"), "--gamma", "2", "--budget", "30", "--tune", "-q"]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "--tune: 9 candidates" in out and "chosen parameters: lam=" in out
    assert budgetkernel.load(d / "m.bkm").gamma == 2.0


def test_the_thread_count_does_not_change_the_model(files, capsys):
    d, *_ = files
    argv = ["train", str(d / "train.svm"), "--budget", "30", "--tune", "-q"]
    assert cli.main([*argv, "-o", str(d / "all.bkm")]) == 0
    assert cli.main([*argv, "-o", str(d / "one.bkm"), "--tune-jobs", "1"]) == 0
    assert (d / "all.bkm").read_bytes() == (d / "one.bkm").read_bytes()


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--tune-grid", "foo=1,2"], "--tune-grid foo: not a parameter of --learner bsgd"),
        (["--learner", "pa", "--tune-grid", "lam=1e-4"], "--tune-grid lam: not a parameter of --learner pa"),
        (["--tune-grid", "lam=1e-4,-1"], "lam must be"),
        (["--tune-grid", "lam=1e-4,abc"], "--tune-grid lam: 'abc' is not a number"),
        (["--tune-grid", "maintenance=merge,bogus"], "maintenance must be one of"),
        (["--tune-grid", "budget=1.5"], "'1.5' is not an integer (0 = no budget)"),
        (["--tune-grid", "lam=1e-4", "--tune-grid", "lam=1e-5"], "--tune-grid lam is given twice"),
    ],
)
def test_a_bad_grid_fails_before_anything_is_read_or_written(files, capsys, monkeypatch, argv, fragment):
    d, *_ = files

    def no_reading(*args, **kwargs):
        raise AssertionError("the file was read before the grid was checked")

    monkeypatch.setattr(_training, "_plan_svmlight", no_reading)
    model = d / "m.bkm"
    assert cli.main(["train", str(d / "train.svm"), "-o", str(model), "-q", *argv]) == 2
    captured = capsys.readouterr()
    assert fragment in _error_line(captured.err) and captured.out == ""
    assert not model.exists()
    assert cli.main(["evaluate", str(d / "train.svm"), "-q", *argv]) == 2
    assert fragment in _error_line(capsys.readouterr().err)


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--tune-grid", "lam="], "lam: no values"),
        (["--tune-grid", "lam=1,,2"], "empty value"),
        (["--tune-grid", "lam"], "must be NAME=v1,v2,..."),
        (["--tune-eta", "1"], "--tune-eta: must be a number > 1"),
        (["--tune-jobs", "0"], "--tune-jobs: must be a positive integer"),
    ],
)
def test_a_malformed_tune_option_is_an_argument_error(files, capsys, argv, fragment):
    d, *_ = files
    with pytest.raises(SystemExit) as e:
        cli.main(["train", str(d / "train.svm"), "-o", str(d / "m.bkm"), *argv])
    assert e.value.code == 2 and fragment in capsys.readouterr().err
    assert not (d / "m.bkm").exists()


def test_standardize_with_tune_keeps_the_statistics_in_the_file(files, capsys):
    d, X, y, Xt, yt = files
    X, Xt = 100.0 * X + 5.0, 100.0 * Xt + 5.0  # far from standardised
    bk_io.dump_svmlight(X, y, d / "raw.svm")
    bk_io.dump_svmlight(Xt, yt, d / "raw_test.svm")
    common = [str(d / "raw.svm"), "--budget", "30", "--chunk-size", str(CHUNK), "--standardize", "-q"]
    assert cli.main(["train", *common, "-o", str(d / "plain.bkm")]) == 0
    assert cli.main(["train", *common, "-o", str(d / "tuned.bkm"), "--tune"]) == 0
    capsys.readouterr()
    assert "standardize" in _meta(d / "tuned.bkm")
    assert _meta(d / "tuned.bkm")["standardize"] == _meta(d / "plain.bkm")["standardize"]

    # the winner learned the standardised stream: the same search over it in Python
    scaler = StreamingStandardizer(n_warmup=CHUNK)
    Xs = np.vstack([Xc for Xc, _ in scaler.fit_transform_stream(_chunks(X, y))])
    search = _python_search(budgetkernel.BudgetedSGDClassifier(budget=30, random_state=0), Xs, y)
    tuned = budgetkernel.load(d / "tuned.bkm")
    np.testing.assert_array_equal(recorded_reading(tuned)[1][0], scaler.mean_)
    np.testing.assert_array_equal(recorded_reading(tuned)[1][1], scaler.scale_)
    assert _core_bytes(tuned) == _core_bytes(search.best_estimator_)
    # and predict applies the transform
    pred = d / "pred.txt"
    assert cli.main(["predict", str(d / "tuned.bkm"), str(d / "raw_test.svm"), "-o", str(pred), "-q"]) == 0
    np.testing.assert_array_equal(np.loadtxt(pred), search.best_estimator_.predict(scaler.transform(Xt)))


def test_tune_over_several_epochs_reports_each(files, capsys):
    d, X, y, *_ = files
    argv = ["evaluate", str(d / "train.svm"), "--budget", "30", "--chunk-size", str(CHUNK), "--epochs", "2"]
    assert cli.main([*argv, "--tune-grid", "lam=1e-3,1e-4"]) == 0
    captured = capsys.readouterr()
    assert "epoch 2: online error" in captured.err
    assert "(last epoch, the chosen model)" in captured.out
    search = PrequentialSearch(
        budgetkernel.BudgetedSGDClassifier(budget=30, random_state=0), {"lam": [1e-3, 1e-4]}, n_expected=2 * len(y)
    )
    for Xc, yc in _chunks(X, y) * 2:
        search.partial_fit(Xc, yc, classes=[-1, 1])
    assert search.summary() in captured.out
