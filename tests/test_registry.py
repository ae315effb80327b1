"""The registry of tests/conftest.py holds every public estimator, found as river's
test_estimators.py finds its own: by walking the public modules of the package for the
scikit-learn estimator classes they define."""

import importlib
import inspect
import pkgutil
import warnings

from sklearn.base import BaseEstimator

import budgetkernel
from conftest import REGISTRY


def _public_estimators():
    found = set()
    for info in pkgutil.walk_packages(budgetkernel.__path__, "budgetkernel."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        with warnings.catch_warnings():  # a deprecated alias module still counts
            warnings.simplefilter("ignore", DeprecationWarning)
            module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            # (a mixin, such as the streaming API's, is a part of estimators, not one)
            if (inspect.isclass(obj) and issubclass(obj, BaseEstimator) and not name.startswith("_")
                    and not name.endswith("Mixin")
                    and obj.__module__.startswith("budgetkernel") and not inspect.isabstract(obj)):
                found.add(obj)
    return found


def test_every_public_estimator_is_in_the_registry():
    found = _public_estimators()
    assert {c.__name__ for c in found} >= {n for n in budgetkernel.__all__ if isinstance(getattr(budgetkernel, n), type)}
    missing = sorted(c.__name__ for c in found - {case.cls for case in REGISTRY.values()})
    assert missing == [], f"add these to tests/conftest.py's registry: {missing}"
