"""The command line with the regressors: --learner bsgd-regressor / klms / krls / sliding-krls
train on LIBSVM files whose labels are real-valued targets, report MSE, MAE and R^2, predict
real values, and --tune searches them by prequential MSE."""

import numpy as np
import pytest
from sklearn.metrics import mean_absolute_error, mean_squared_error, r2_score

import budgetkernel
from budgetkernel import cli
from budgetkernel import io as bk_io
from budgetkernel.cli import _training
from budgetkernel.model_selection import PrequentialSearch
from budgetkernel.cli._training import recorded_reading

# test id -> (--learner, its options in this test, the estimator they make)
LEARNERS = {
    "bsgd-regressor": ("bsgd-regressor",
        ["--budget", "30", "--lam", "1e-3", "--t0", "1000", "--loss", "huber", "--epsilon", "0.05"],
        lambda: budgetkernel.BudgetedSGDRegressor(budget=30, lam=1e-3, t0=1000.0, loss="huber", epsilon=0.05, random_state=0),
    ),
    "pa-regressor": ("pa-regressor",
        ["--budget", "30", "--C", "0.5", "--variant", "project", "--pa-type", "2", "--epsilon", "0.05"],
        lambda: budgetkernel.BudgetedPARegressor(budget=30, C=0.5, variant="project", pa_type=2, epsilon=0.05, random_state=0),
    ),
    "pa-regressor-spa": ("pa-regressor",
        ["--spa-sampling", "--alpha", "0.5", "--beta", "1", "--averaged", "--budget", "0"],
        lambda: budgetkernel.BudgetedPARegressor(budget=None, sampling=True, alpha=0.5, beta=1.0, averaged=True, random_state=0),
    ),
    "klms": ("klms", ["--eta", "0.3", "--epsilon", "0.2"], lambda: budgetkernel.KLMSRegressor(eta=0.3, epsilon=0.2, random_state=0)),
    "krls": ("krls", ["--nu", "1e-3", "--lam", "1e-2"], lambda: budgetkernel.KRLSRegressor(nu=1e-3, lam=1e-2, random_state=0)),
    "sliding-krls": ("sliding-krls",
        ["--budget", "40", "--lam", "1e-2"],
        lambda: budgetkernel.SlidingWindowKRLSRegressor(budget=40, lam=1e-2, random_state=0),
    ),
}


def _function(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, size=(n, 2))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] + 0.1 * rng.standard_normal(n)
    return X, y


@pytest.fixture()
def files(tmp_path):
    X, y = _function(2000, 0)
    Xt, yt = _function(500, 1)
    bk_io.dump_svmlight(X, y, tmp_path / "train.svm")
    bk_io.dump_svmlight(Xt, yt, tmp_path / "test.svm")
    return tmp_path, X, y, Xt, yt


def _same_model(a, b, X):
    """The same learned model (the bytes differ: a model file also holds the reading's metadata)."""
    np.testing.assert_array_equal(a.support_vectors_, b.support_vectors_)
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    assert a.counters_ == b.counters_


def _stream(est, X, y, size):
    for i in range(0, len(y), size):
        est.partial_fit(X[i : i + size], y[i : i + size])
    return est


@pytest.mark.parametrize("learner", list(LEARNERS))
def test_train_predict_is_the_estimator_on_the_same_stream(files, learner, capsys):
    d, X, y, Xt, yt = files
    learner, options, make = LEARNERS[learner]
    model, out = d / "m.bkm", d / "pred.txt"
    argv = ["train", str(d / "train.svm"), "-o", str(model), "--learner", learner, "--chunk-size", "700", "-q"]
    assert cli.main(argv + options) == 0
    ref = _stream(make(), X, y, 700)  # gamma='scale' of the first 700 rows, as the CLI's
    reg = budgetkernel.load(model)
    assert type(reg) is type(ref) and reg.get_params() == ref.get_params()
    _same_model(reg, ref, Xt)
    report = capsys.readouterr().out
    assert f"online MSE {ref.online_mse_:.6g}, MAE {ref.online_mae_:.6g}, R^2 " in report
    assert f"{ref.n_support_} SVs" in report
    # predict writes the real values, each read back as the same float64
    assert cli.main(["predict", str(model), str(d / "test.svm"), "-o", str(out)]) == 0
    pred = ref.predict(Xt)
    np.testing.assert_array_equal(np.loadtxt(out), pred)
    err = capsys.readouterr().err
    assert f"MSE {mean_squared_error(yt, pred):.6g}, MAE {mean_absolute_error(yt, pred):.6g}" in err
    assert f"R^2 {r2_score(yt, pred):.4f} on the 500 examples" in err


def test_evaluate_reports_prequential_and_test_mse_mae_r2(files, capsys):
    d, X, y, Xt, yt = files
    argv = ["evaluate", str(d / "train.svm"), "--test", str(d / "test.svm"), "--learner", "krls", "--gamma", "0.5"]
    assert cli.main(argv + ["-q"]) == 0
    out = capsys.readouterr().out
    ref = budgetkernel.KRLSRegressor(gamma=0.5).fit(X, y)
    pred = ref.predict(Xt)
    assert f"online MSE          {ref.online_mse_:.6g}\n" in out and f"online MAE          {ref.online_mae_:.6g}\n" in out
    assert "online R^2" in out
    assert f"test MSE            {mean_squared_error(yt, pred):.6g}\n" in out
    assert f"test MAE            {mean_absolute_error(yt, pred):.6g}\n" in out
    assert f"test R^2            {r2_score(yt, pred):.6g}\n" in out
    assert "accuracy" not in out


def test_prequential_r2_is_one_minus_sse_over_the_targets_spread(files, capsys):
    d, X, y, *_ = files
    argv = ["evaluate", str(d / "train.svm"), "--learner", "klms", "--gamma", "1", "--chunk-size", "333", "-q"]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    ref = budgetkernel.KLMSRegressor(gamma=1.0).fit(X, y)
    r2 = 1 - ref.counters_["squared_error"] / np.sum((y - y.mean()) ** 2)
    assert f"online R^2          {r2:.6g}\n" in out


def test_fractional_targets_and_epochs(files, capsys):
    d, X, y, *_ = files
    # a classifier refuses these labels; a regressor reads them as its targets
    assert cli.main(["train", str(d / "train.svm"), "-o", str(d / "c.bkm"), "-q"]) == 2
    assert "not whole numbers" in capsys.readouterr().err
    argv = ["train", str(d / "train.svm"), "-o", str(d / "m.bkm"), "--learner", "klms", "--epochs", "2", "--gamma", "1"]
    assert cli.main(argv) == 0
    captured = capsys.readouterr()
    assert "epoch 1: online MSE" in captured.err and "epoch 2: online MSE" in captured.err
    assert "trained on 2 epochs of 2,000 examples" in captured.out
    ref = budgetkernel.KLMSRegressor(gamma=1.0, n_epochs=2).fit(X, y)
    _same_model(budgetkernel.load(d / "m.bkm"), ref, X)


def test_integer_targets_are_targets_too(tmp_path, capsys):
    X, y = _function(300, 2)
    bk_io.dump_svmlight(X, np.round(3 * y), tmp_path / "int.svm")
    argv = ["train", str(tmp_path / "int.svm"), "-o", str(tmp_path / "m.bkm"), "--learner", "krls", "-q"]
    assert cli.main(argv) == 0
    out = tmp_path / "p.txt"
    assert cli.main(["predict", str(tmp_path / "m.bkm"), str(tmp_path / "int.svm"), "-o", str(out), "-q"]) == 0
    pred = np.loadtxt(out)
    assert np.any(pred != np.round(pred))  # real values, not labels


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--learner", "klms", "--budget", "10"], "--budget does not apply to --learner klms"),
        (["--learner", "krls", "--eta", "0.1"], "--eta does not apply to --learner krls"),
        (["--learner", "bsgd", "--epsilon", "0.1"], "--epsilon does not apply to --learner bsgd"),
        (["--learner", "pa", "--loss", "huber"], "--loss huber is not a PA loss"),
        (["--learner", "bsgd-regressor", "--loss", "hinge"], "--loss hinge is not a regression loss"),
        (["--learner", "krls", "--classes", "1,2"], "--classes does not apply to --learner krls"),
        (["--learner", "klms", "--eta", "-1"], "eta"),
        (["--learner", "sliding-krls", "--budget", "0"], "budget"),
    ],
)
def test_options_a_learner_does_not_take_are_errors(files, argv, message, capsys):
    d, *_ = files
    assert cli.main(["train", str(d / "train.svm"), "-o", str(d / "m.bkm"), "-q", *argv]) == 2
    assert message in capsys.readouterr().err
    assert not (d / "m.bkm").exists()


def test_a_bad_line_is_reported_with_its_number(tmp_path, capsys):
    bad = tmp_path / "bad.svm"
    bad.write_text("0.5 1:0.5\n1.25 1:abc\n")
    assert cli.main(["train", str(bad), "-o", str(tmp_path / "m.bkm"), "--learner", "klms", "-q"]) == 2
    assert "line 2" in capsys.readouterr().err


@pytest.mark.parametrize("tune", [[], ["--tune"]])
def test_a_target_the_core_refuses_is_reported_with_its_line(tmp_path, tune, capsys):
    bad = tmp_path / "huge.svm"
    bad.write_text("0.5 1:0.5\n0.25 1:0.1\n-0.5 1:0.3\n1e300 1:0.2\n")
    argv = ["train", str(bad), "-o", str(tmp_path / "m.bkm"), "--learner", "klms", "--chunk-size", "2", "-q", *tune]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "huge.svm', line 4: the target (label) exceeds 1e150" in err and "Warning" not in err


def test_ctrl_c_exits_130(files, monkeypatch, capsys):
    d, *_ = files

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(_training, "_regression_pass", interrupted)
    argv = ["train", str(d / "train.svm"), "-o", str(d / "m.bkm"), "--learner", "krls"]
    assert cli.main(argv) == 130
    assert capsys.readouterr().err.strip() == "budgetkernel: interrupted"
    assert not (d / "m.bkm").exists()


def test_standardize_is_stored_and_applied_by_predict(files, capsys):
    d, _, _, Xt, _ = files
    model = d / "m.bkm"
    argv = ["train", str(d / "train.svm"), "-o", str(model), "--learner", "sliding-krls", "--standardize", "-q"]
    assert cli.main(argv) == 0
    reg = budgetkernel.load(model)
    mean, scale = recorded_reading(reg)[1]
    out = d / "p.txt"
    assert cli.main(["predict", str(model), str(d / "test.svm"), "-o", str(out), "-q"]) == 0
    np.testing.assert_array_equal(np.loadtxt(out), reg.predict((Xt - mean) / scale))


def test_a_pipe_needs_only_the_width(files, pipe_fed_with, capsys):
    d, X, y, *_ = files
    data = (d / "train.svm").read_bytes()

    def train(*options):
        pipe, _ = pipe_fed_with(data)  # a pipe, as /dev/stdin is in `... | budgetkernel train /dev/stdin`
        return cli.main(["train", pipe, "-o", str(d / "m.bkm"), "--learner", "krls", "-q", *options])

    assert train() == 2 and "--n-features" in capsys.readouterr().err
    assert train("--n-features", "2") == 0, capsys.readouterr().err
    ref = _stream(budgetkernel.KRLSRegressor(), X, y, 10_000)
    _same_model(budgetkernel.load(d / "m.bkm"), ref, X)


def test_tune_chooses_what_prequential_search_chooses(files, capsys):
    d, X, y, *_ = files
    model = d / "m.bkm"
    argv = ["train", str(d / "train.svm"), "-o", str(model), "--learner", "bsgd-regressor", "--budget", "20"]
    grid = ["--tune-grid", "gamma=0.25,1,4", "--tune-grid", "lam=1e-2,1e-3,1e-4", "--chunk-size", "500"]
    assert cli.main(argv + grid + ["-q"]) == 0
    out = capsys.readouterr().out
    search = PrequentialSearch(
        budgetkernel.BudgetedSGDRegressor(budget=20, random_state=0),
        {"gamma": [0.25, 1.0, 4.0], "lam": [1e-2, 1e-3, 1e-4]},
        eta=3,
        n_expected=len(y),
        random_state=0,
    )
    _stream(search, X, y, 500)
    chosen = ", ".join(f"{k}={v!r}" for k, v in sorted(search.best_params_.items()))
    assert f"chosen parameters: {chosen}" in out and "online_mse" in out
    best = search.best_estimator_
    _same_model(budgetkernel.load(model), best, X)
    assert f"online MSE {best.online_mse_:.6g}" in out


def test_tune_with_the_default_grid_and_evaluate(files, capsys):
    d, *_ = files
    argv = ["evaluate", str(d / "train.svm"), "--test", str(d / "test.svm"), "--learner", "klms", "--tune", "-q"]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "--tune: 15 candidates" in out and "chosen parameters: eta=" in out
    assert "online MSE" in out and "(the chosen model)" in out and "test R^2" in out
