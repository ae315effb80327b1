"""Numerical stress: degenerate streams and extreme parameters must give finite models (or a
clear ValueError for a parameter region that cannot work), never NaN/inf, a budget overrun or
a model file that does not load back."""

import numpy as np
import pytest

import budgetkernel
from budgetkernel import BudgetedPAClassifier, BudgetedSGDClassifier
from conftest import LEARNERS, cases, online_kernel_cases


# Every kernel learner with a gradient or PA step (the exact SVMs' numerical limits are tested in
# test_svm_scale_limits.py), and the maintenance rules, losses and averaging with numerics of
# their own.
STRESSED = [
    *online_kernel_cases(LEARNERS),
    *cases("bsgd-merge-average", "bsgd-project-exact", "bsgd-remove-smallest"),
    *cases("bpa-project", "bpa-nn-ramp-averaged", "pa-unbudgeted"),
    *cases("forgetron", "projectron++", "spa-beta-20", "bogd++-averaged"),
]


def _merges(case):
    """Merging is defined for the Gaussian kernel only."""
    return case.make().get_params().get("maintenance") == "merge"


def _kernel_learners(budget, **kernel):
    """One estimator of every case in STRESSED (budgeted where it has a budget)."""
    rbf = kernel.get("kernel", "rbf") == "rbf"
    return [case.make(budget=budget, random_state=0, **kernel) for case in STRESSED if rbf or not _merges(case)]


def _check_sane(est, X, y, Xt, tmp_path):
    est.fit(X, y)
    df = est.decision_function(Xt)
    assert np.all(np.isfinite(df)), type(est).__name__
    if getattr(est, "budget", None) is not None:
        assert est.n_support_ <= est.budget
    c = est.counters_
    assert c["examples"] == len(X) and 0 <= c["updates"] <= c["examples"]
    assert np.isfinite(c["degradation"]) and c["degradation"] >= 0.0
    path = tmp_path / "m.bkm"
    est.save(path)
    np.testing.assert_array_equal(budgetkernel.load(path).decision_function(Xt), df)


# ---------------------------------------------------------------- polynomial kernel, coef0 < 0


@pytest.mark.parametrize("degree", [1, 2, 3, 5])
@pytest.mark.parametrize("case", [c for c in STRESSED if not _merges(c)], ids=repr)
def test_indefinite_polynomial_kernel_is_refused(case, degree):
    # (gamma x.z + coef0)^degree with coef0 < 0 is not positive semi-definite: k(x, x) is zero
    # or negative for |x|^2 near -coef0 / gamma. Before it was refused, coef0 = -1 gave NaN
    # decision values (hard-margin PA: steps L / k(x, x) with k(x, x) ~ 0 overflowed; PA-II too)
    # and BSGD's removal reported negative degradations (-4.3e5 after 15 examples), whose square
    # root made ||w|| NaN and the saved model unloadable ("invalid scale or norm").
    X = np.random.default_rng(0).normal(size=(200, 2))
    y = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)
    est = case.make(budget=5, random_state=0, kernel="poly", degree=degree, coef0=-1.0, gamma=1.0)
    with pytest.raises(ValueError, match="coef0 >= 0"):
        est.fit(X, y)
    assert not hasattr(est, "_model")


def test_negative_coef0_is_ignored_by_other_kernels(tmp_path):
    X = np.random.default_rng(1).normal(size=(300, 2))
    y = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)
    for est in _kernel_learners(5, kernel="rbf", coef0=-1.0, gamma=1.0):
        _check_sane(est, X, y, X[:50], tmp_path)
    est = BudgetedPAClassifier(budget=5, variant="project", kernel="linear", coef0=-3.0)
    _check_sane(est, X, y, X[:50], tmp_path)


def test_polynomial_kernel_with_overflowing_coef0_power_is_refused(tmp_path):
    # k(0, 0) = coef0^degree: 1e31^10 = inf, so even the all-zero rows (the only ones the
    # kernel's input bound admitted) had inf kernel values, and every learner gave NaN.
    X = np.zeros((40, 2))
    y = np.tile([1, -1], 20)
    for est in _kernel_learners(5, kernel="poly", degree=10, coef0=1e31, gamma=1.0):
        with pytest.raises(ValueError, match=r"\|coef0\|\^degree must be at most 1e300"):
            est.fit(X, y)
    # At the edge (1e30^10 = 1e300) the zero rows still work, with exact values.
    est = BudgetedPAClassifier(budget=5, variant="project", kernel="poly", degree=10, coef0=1e30, gamma=1.0)
    _check_sane(est, X, y, X[:5], tmp_path)
    df = est.decision_function(X[:5])
    # PA-I on identical rows: tau = min(C, L / k) with k = 1e300 -> coefficient (1 - 0) / 1e300
    # for the first example; the score of a zero row is that coefficient times 1e300 = 1 (then
    # the alternating labels pull it back and forth; it stays within [-1, 1]).
    assert np.all(np.abs(df) <= 1.0 + 1e-12)


# ---------------------------------------------------------------- degenerate streams


def _regimes():
    rng = np.random.default_rng(2)
    X = np.tile([[0.3, -0.7]], (3000, 1))
    X[0] = [1.0, 1.0]
    yield "duplicates, contradictory labels", X, np.tile([1, -1], 1500), dict(gamma=1.0)
    X = rng.normal(size=(4000, 2))
    yield "one class then the other", X, np.r_[np.ones(2000, int), -np.ones(2000, int)], dict(gamma=1.0)
    X = rng.normal(size=(1000, 3)) * np.array([1e-8, 1.0, 1e8])
    yield "feature scales 1e-8..1e8", X, np.where(X[:, 0] > 0, 1, -1), dict(gamma="scale")
    X = rng.normal(size=(1000, 2))
    y = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)
    yield "gamma 1e-12", X, y, dict(gamma=1e-12)
    yield "gamma 1e12 (identity kernel matrix)", X, y, dict(gamma=1e12)
    yield "poly degree 10", X, y, dict(kernel="poly", degree=10, coef0=1.0, gamma=1.0)
    yield "50 classes", X, rng.integers(0, 50, 1000), dict(gamma=1.0)


@pytest.mark.parametrize("regime", list(_regimes()), ids=lambda r: r[0])
@pytest.mark.parametrize("budget", [1, 2, 5])
def test_degenerate_streams_stay_finite_and_on_budget(regime, budget, tmp_path):
    _, X, y, kernel = regime
    for est in _kernel_learners(budget, **kernel):
        _check_sane(est, X, y, X[:100], tmp_path)


# ---------------------------------------------------------------- BSGD: ||w||^2 beyond the double range


def _huge_rows(n=400, sqnorm=1e280, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)
    X *= np.sqrt(sqnorm) / np.linalg.norm(X, axis=1, keepdims=True) * rng.uniform(0.5, 1.0, size=(n, 1))
    return X, y


@pytest.mark.parametrize("lam, sqnorm", [(1e-30, 1e280), (1e-30, 1e250), (1e-10, 1e298)])
def test_bsgd_step_whose_norm_squared_overflows_matches_linear_pegasos(lam, sqnorm):
    # The first step adds beta phi(x) with beta = 1/lam = 1e30 and k(x, x) = 1e280: ||w||^2 =
    # 1e340 overflowed to inf, the ball projection scaled by 1/sqrt(inf) = 0, ||w||^2 became
    # inf * 0 = NaN, and the model never projected again: NaN decision values. ||w|| (1e170)
    # is finite, and after the projection ||w|| = 1/sqrt(lam). Unbudgeted kernel Pegasos with
    # the linear kernel is linear Pegasos (batch_size=1), which never squares that far.
    X, y = _huge_rows(sqnorm=sqnorm)
    Xt = X[:50]
    kernel = BudgetedSGDClassifier(budget=None, kernel="linear", lam=lam, average=False).fit(X, y)
    linear = budgetkernel.LinearPegasosClassifier(lam=lam).fit(X, y)
    df = kernel.decision_function(Xt)
    assert np.all(np.isfinite(df))
    # Linear Pegasos had the same overflow the other way: its ball projection divided by
    # sqrt(inf), so every such step reset w to 0 (all-zero decision values). Each step projects
    # onto the sphere ||w|| = 1/sqrt(lam) here; the last one may have shrunk it by 1 - 1/t.
    w_norm = np.linalg.norm(linear.coef_)
    assert 1.0 - 1e-2 <= w_norm * np.sqrt(lam) <= 1.0 + 1e-9
    np.testing.assert_allclose(df, linear.decision_function(Xt), rtol=1e-8)
    assert kernel._model.norm2 * lam <= 1.0 + 1e-9


@pytest.mark.parametrize(
    "maintenance", ["project", "project-exact", "remove-random", "remove-oldest", "remove-smallest"]
)
@pytest.mark.parametrize("average", [False, True])
def test_budgeted_sgd_with_overflowing_steps_stays_finite(maintenance, average, tmp_path):
    X, y = _huge_rows(sqnorm=1e280)
    est = BudgetedSGDClassifier(
        budget=5, maintenance=maintenance, kernel="linear", lam=1e-30, average=average, random_state=0
    )
    est.fit(X, y)
    df = est.decision_function(X[:50])
    assert np.all(np.isfinite(df)) and est.n_support_ <= 5
    # ||w|| <= 1/sqrt(lam) = 1e15 and |x| <= 1e140: |f(x)| <= 1e155.
    assert np.abs(df).max() <= 1e155 * (1 + 1e-9)
    assert est._model.norm2 * 1e-30 <= 1.0 + 1e-9
    path = tmp_path / "m.bkm"
    est.save(path)  # the saved ||w||^2 used to be NaN: "model file: invalid scale or norm"
    loaded = budgetkernel.load(path)
    np.testing.assert_array_equal(loaded.decision_function(X[:50]), df)
    est.partial_fit(X[:20], y[:20])
    loaded.partial_fit(X[:20], y[:20])
    np.testing.assert_array_equal(loaded.decision_function(X[:50]), est.decision_function(X[:50]))
