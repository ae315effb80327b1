"""The regressors as the last step of a river pipeline (river is optional: these tests skip
without it, and .ci/run runs them with river installed): learn_one / predict_one through a
Pipeline equal the same stream scaled by hand, and evaluate.progressive_val_score with
river's MSE gives the MSE of the predictions made before each example is learned."""

import inspect

import numpy as np
import pytest

from conftest import REGRESSORS, cases

# Every regressor of the registry (tests/conftest.py) and the variants with another loss or a
# quantised dictionary, made as river's examples would: a small budget, one kernel width.
CASES = REGRESSORS + cases("bsgdr-huber", "qklms")
# the step sizes with which each learns the stream below well in one pass
TUNED = {"BudgetedSGDRegressor": {"lam": 0.1}, "bsgdr-huber": {"lam": 3e-3}, "qklms": {"eta": 0.3}}


def _maker(case):
    return lambda: case.make(budget=30, gamma=0.5, random_state=0, **TUNED.get(case.id, {}))


MAKERS = [pytest.param(_maker(case), id=case.id) for case in CASES]


def _stream(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, size=(n, 2)) * [1.0, 10.0]  # unequal scales: the scaler matters
    y = np.sin(X[:, 0]) + 0.05 * X[:, 1] + 0.1 * rng.standard_normal(n)
    return [{"a": float(a), "b": float(b)} for a, b in X], y.tolist()


@pytest.mark.parametrize("make", MAKERS)
def test_river_protocol_without_river(make):
    # What river's Pipeline reads off a regressor, checked without river: the flag, keyword
    # calls learn_one(x=..., y=...) / predict_one(x=...), and 0.0 before any learning.
    reg = make()
    assert reg._supervised is True
    assert list(inspect.signature(type(reg).learn_one).parameters) == ["self", "x", "y"]
    xs, y = _stream(50, 0)
    assert reg.predict_one(x=xs[0]) == 0.0
    for x, t in zip(xs, y):
        reg.learn_one(x=x, y=t)
    assert isinstance(reg.predict_one(x=xs[1]), float) and reg.n_seen_ == 50


@pytest.mark.parametrize("make", MAKERS)
def test_river_pipeline_learns_and_predicts(make):
    pytest.importorskip("river")
    from river import compose, preprocessing

    pipeline = preprocessing.StandardScaler() | make()
    assert isinstance(pipeline, compose.Pipeline)
    assert pipeline.predict_one({"a": 1.0, "b": 2.0}) == 0.0
    xs, y = _stream(400, 1)
    # The same stream by hand: river's scaler learns x, then the regressor learns it scaled.
    scaler, reg = preprocessing.StandardScaler(), make()
    for x, t in zip(xs, y):
        pipeline.learn_one(x, t)
        scaler.learn_one(x)
        reg.learn_one(scaler.transform_one(x), t)
    last = pipeline[-1]
    assert last.n_seen_ == 400
    np.testing.assert_array_equal(last.support_vectors_, reg.support_vectors_)
    np.testing.assert_array_equal(last.dual_coef_, reg.dual_coef_)
    assert pipeline.predict_one(xs[0]) == reg.predict_one(scaler.transform_one(xs[0]))


@pytest.mark.parametrize("make", MAKERS)
def test_river_progressive_val_score_is_the_prequential_mse(make):
    pytest.importorskip("river")
    from river import base, evaluate, metrics, preprocessing

    # river's evaluate checks isinstance(model, base.Regressor): the registration the user
    # guide describes (budgetkernel does not import river)
    base.Regressor.register(type(make()))
    xs, y = _stream(400, 2)
    mse = evaluate.progressive_val_score(list(zip(xs, y)), preprocessing.StandardScaler() | make(), metrics.MSE())
    # by hand: each example predicted with the model and the scaler before it, then learned
    scaler, reg = preprocessing.StandardScaler(), make()
    errors = []
    for x, t in zip(xs, y):
        errors.append(reg.predict_one(scaler.transform_one(x)) - t)
        scaler.learn_one(x)
        reg.learn_one(scaler.transform_one(x), t)
    assert mse.get() == pytest.approx(float(np.mean(np.square(errors))), rel=1e-12)
    assert mse.get() < 0.5 * float(np.var(y))  # and it learned something
