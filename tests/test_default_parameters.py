"""Every default works with every other default; BSGD's maintenance='auto' is the rule the
kernel allows, and a model with it is the model (and the file) of that rule named."""

import numpy as np
import pytest

import budgetkernel
from budgetkernel import BudgetedSGDClassifier, BudgetedSGDRegressor

_KERNELS = ("rbf", "linear", "poly")


def _data(n=300, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, np.where(X[:, 0] + 0.5 * X[:, 1] > 0, 1, -1), X @ np.array([1.0, -2.0, 0.5])


def _estimator_classes():
    return [getattr(budgetkernel, n) for n in budgetkernel.__all__ if isinstance(getattr(budgetkernel, n), type)]


@pytest.mark.parametrize("cls", _estimator_classes(), ids=lambda c: c.__name__)
def test_each_kernel_learns_with_every_other_parameter_at_its_default(cls):
    X, y, t = _data()
    kernels = _KERNELS if "kernel" in cls().get_params() else (None,)
    for kernel in kernels:
        est = cls() if kernel is None else cls(kernel=kernel)
        target = t if "Regressor" in cls.__name__ else y
        est.fit(X, target)
        assert np.all(np.isfinite(est.predict(X).astype(float)))


@pytest.mark.parametrize("cls", [BudgetedSGDClassifier, BudgetedSGDRegressor], ids=lambda c: c.__name__)
@pytest.mark.parametrize("kernel, rule", [("rbf", "merge"), ("linear", "project"), ("poly", "project")])
def test_auto_maintenance_is_the_kernels_rule(tmp_path, cls, kernel, rule):
    X, y, t = _data(400)
    target = t if cls is BudgetedSGDRegressor else y
    auto = cls(budget=20, kernel=kernel, gamma=0.5, random_state=0).fit(X, target)
    named = cls(budget=20, kernel=kernel, gamma=0.5, maintenance=rule, random_state=0).fit(X, target)
    assert auto.maintenance == "auto" and auto._model.params.maintenance == rule
    assert auto.n_support_ <= 20
    # the same model, and the same file: the file records the rule
    auto.save(tmp_path / "auto.bkm")
    named.save(tmp_path / "named.bkm")
    assert (tmp_path / "auto.bkm").read_bytes() == (tmp_path / "named.bkm").read_bytes()
    np.testing.assert_array_equal(auto.predict(X), named.predict(X))
    # ... which loads as the default's name, and resumes as the original does
    loaded = budgetkernel.load(tmp_path / "auto.bkm")
    assert loaded.get_params() == auto.get_params()
    np.testing.assert_array_equal(loaded.partial_fit(X, target).predict(X), auto.partial_fit(X, target).predict(X))


def test_a_rule_other_than_autos_loads_as_written(tmp_path):
    X, y, _ = _data()
    clf = BudgetedSGDClassifier(budget=20, maintenance="remove-oldest", kernel="linear", random_state=0).fit(X, y)
    clf.save(tmp_path / "m.bkm")
    assert budgetkernel.load(tmp_path / "m.bkm").maintenance == "remove-oldest"


def test_merge_under_another_kernel_is_still_an_error():
    X, y, _ = _data()
    with pytest.raises(ValueError, match="maintenance='merge' needs the Gaussian"):
        BudgetedSGDClassifier(kernel="linear", maintenance="merge").fit(X, y)
    with pytest.raises(ValueError, match="maintenance must be one of"):
        BudgetedSGDClassifier(maintenance="automatic").fit(X, y)


def test_combine_takes_auto_and_the_rule_it_resolves_to():
    # a default (maintenance='auto') model and one naming 'merge' are the same learner under rbf
    import numpy as np

    from budgetkernel import BudgetedSGDClassifier, combine

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(200, 2))
    y = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)
    a = BudgetedSGDClassifier(budget=10, gamma=1.0, random_state=0).fit(X[:100], y[:100])
    b = BudgetedSGDClassifier(budget=10, gamma=1.0, maintenance="merge", random_state=0).fit(X[100:], y[100:])
    c = BudgetedSGDClassifier(budget=10, gamma=1.0, maintenance="merge", random_state=0).fit(X[:100], y[:100])
    assert np.array_equal(combine([a, b]).decision_function(X), combine([c, b]).decision_function(X))
    with pytest.raises(ValueError, match="combine needs equal parameters"):
        combine([a, BudgetedSGDClassifier(budget=10, gamma=1.0, maintenance="project", random_state=0).fit(X, y)])
