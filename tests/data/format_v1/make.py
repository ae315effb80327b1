"""Writes the version-1 model files of tests/test_format_v1.py (run from the repository root:
``PYTHONPATH=python python tests/data/format_v1/make.py``).

Format version 1 is frozen as the writer of budgetkernel 0.1.0 writes it: these files are
committed once and must keep loading, re-saving to the same bytes and predicting what
``<name>.json`` stores. Regenerate them only for a new format version (then keep the old
ones). One file per learner and per configuration the writer distinguishes (binary and
multi-class, probability calibration on and off, each maintenance, variant and loss, averaged
or not); small (a few support vectors, 3 features) and seeded.
"""

import json
import os
import sys
import warnings

import numpy as np

import budgetkernel as bk

HERE = os.path.dirname(os.path.abspath(__file__))
N_TRAIN, N_PROBE, D = 40, 10, 3

BINARY, MULTI = ["no", "yes"], [0, 1, 2]  # str labels: the metadata's label encoding is part of v1

_SMALL = {"budget": 6, "gamma": 1.0, "random_state": 0}
_SVM = {"C": 2.0, "gamma": 1.0, "random_state": 0}

# name -> (estimator class, parameters, "clf" or "reg"); each classifier twice (binary, 3 classes)
CLASSIFIERS = {
    "bsgd": (bk.BudgetedSGDClassifier, {**_SMALL, "maintenance": "merge"}),
    "bsgd-remove-random": (bk.BudgetedSGDClassifier, {**_SMALL, "maintenance": "remove-random"}),
    "bsgd-remove-smallest": (bk.BudgetedSGDClassifier, {**_SMALL, "maintenance": "remove-smallest"}),
    "bsgd-project": (bk.BudgetedSGDClassifier, {**_SMALL, "maintenance": "project"}),
    "bsgd-project-exact": (bk.BudgetedSGDClassifier, {**_SMALL, "maintenance": "project-exact"}),
    "bsgd-no-average": (bk.BudgetedSGDClassifier, {**_SMALL, "maintenance": "merge", "average": False}),
    "bsgd-log": (bk.BudgetedSGDClassifier, {**_SMALL, "loss": "log"}),
    "bsgd-unbudgeted": (bk.BudgetedSGDClassifier, {**_SMALL, "budget": None}),
    "linear-pegasos": (bk.LinearPegasosClassifier, {"batch_size": 3, "random_state": 0}),
    "bpa-simple": (bk.BudgetedPAClassifier, {**_SMALL, "variant": "simple"}),
    "bpa-nn": (bk.BudgetedPAClassifier, {**_SMALL, "variant": "nn"}),
    "bpa-project": (bk.BudgetedPAClassifier, {**_SMALL, "variant": "project"}),
    "bpa-random-averaged": (bk.BudgetedPAClassifier, {**_SMALL, "variant": "random", "averaged": True}),
    "bpa-nn-ramp": (bk.BudgetedPAClassifier, {**_SMALL, "variant": "nn", "loss": "ramp"}),
    "pa-unbudgeted": (bk.BudgetedPAClassifier, {**_SMALL, "budget": None, "pa_type": 0}),
    "perceptron-random": (bk.KernelPerceptron, {**_SMALL, "maintenance": "random"}),
    "forgetron": (bk.KernelPerceptron, {**_SMALL, "maintenance": "forgetron"}),
    "projectron": (bk.KernelPerceptron, {**_SMALL, "maintenance": "projectron"}),
    "projectron++": (bk.KernelPerceptron, {**_SMALL, "maintenance": "projectron++"}),
    "max-margin": (bk.KernelPerceptron, {**_SMALL, "maintenance": "max-margin"}),
    "spa": (bk.SparsePAClassifier, {"beta": 2.0, "gamma": 1.0, "random_state": 0}),
    "bogd": (bk.BOGDClassifier, {**_SMALL}),
    "bogd++-averaged": (bk.BOGDClassifier, {**_SMALL, "sampling": "nonuniform", "averaged": True}),
    "idsvm": (bk.IncrementalSVC, {**_SVM}),
    "idsvm-ridge": (bk.IncrementalSVC, {**_SVM, "ridge": 1e-3}),
    "tvm": (bk.TwinVectorMachine, {**_SVM, "budget": 6}),
    "tvm-feature-merge": (bk.TwinVectorMachine, {**_SVM, "budget": 6, "merge": "feature", "ridge": 1e-3}),
    "reservoir-svc": (bk.ReservoirSVC, {**_SVM, "budget": 6}),
}
PROBABILITY = ("bsgd", "linear-pegasos", "bpa-nn", "perceptron-random", "spa", "bogd", "idsvm", "tvm", "reservoir-svc")
REGRESSORS = {
    "bsgd-regressor": (bk.BudgetedSGDRegressor, {**_SMALL}),
    "bsgd-regressor-squared-t0": (bk.BudgetedSGDRegressor, {**_SMALL, "loss": "squared", "t0": 10.0}),
    "bsgd-regressor-project": (bk.BudgetedSGDRegressor, {**_SMALL, "maintenance": "project"}),
    "bpa-regressor-nn": (bk.BudgetedPARegressor, {**_SMALL, "variant": "nn"}),
    "bpa-regressor-project-averaged": (bk.BudgetedPARegressor, {**_SMALL, "variant": "project", "averaged": True}),
    "bpa-regressor-simple-sampling": (bk.BudgetedPARegressor, {**_SMALL, "variant": "simple", "sampling": True}),
    "klms": (bk.KLMSRegressor, {"gamma": 1.0}),
    "qklms": (bk.KLMSRegressor, {"gamma": 1.0, "epsilon": 0.5}),
    "krls": (bk.KRLSRegressor, {"gamma": 1.0}),
    "krls-budget": (bk.KRLSRegressor, {"gamma": 1.0, "budget": 6}),
    "sw-krls": (bk.SlidingWindowKRLSRegressor, {"gamma": 1.0, "budget": 6}),
}


def data(n_classes, seed):
    """A 2-d checkerboard in 3 features (the third is noise): training rows and probe rows."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(N_TRAIN + N_PROBE, D))
    cell = (np.floor(X[:, 0] * 2) + np.floor(X[:, 1] * 2)).astype(int) % n_classes
    return X[:N_TRAIN], cell[:N_TRAIN], X[N_TRAIN:]


def regression_data(seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(N_TRAIN + N_PROBE, D))
    y = np.sin(3.0 * X[:, 0]) + X[:, 1] * X[:, 2]
    return X[:N_TRAIN], y[:N_TRAIN], X[N_TRAIN:]


def expected(model, X, kind):
    """What test_format_v1.py compares: decision values, labels and probabilities (or predictions)."""
    out = {"X": X.tolist()}
    if kind == "reg":
        out["predict"] = model.predict(X).tolist()
        return out
    out["decision_function"] = np.asarray(model.decision_function(X), dtype=np.float64).tolist()
    out["predict"] = model.predict(X).tolist()
    if getattr(model, "probability", False) or getattr(model, "loss", None) == "log":
        out["predict_proba"] = model.predict_proba(X).tolist()
    return out


def write(name, model, X, kind):
    model.save(os.path.join(HERE, name + ".bkm"))
    with open(os.path.join(HERE, name + ".json"), "w") as f:
        json.dump(expected(model, X, kind), f, indent=0)
        f.write("\n")


def cases():
    """(file name, estimator, training data, probe rows, kind) of every v1 file."""
    for name, (cls, params) in CLASSIFIERS.items():
        for labels in (BINARY, MULTI):
            X, cell, P = data(len(labels), seed=1)
            y = np.asarray(labels)[cell]
            for prob in (False, True) if name in PROBABILITY else (False,):
                tag = f"{name}-{len(labels)}class" + ("-proba" if prob else "")
                model = cls(**params, **({"probability": True} if prob else {}))
                yield tag, model, (X, y, labels), P, "clf"
    for name, (cls, params) in REGRESSORS.items():
        X, y, P = regression_data(seed=2)
        yield name, cls(**params), (X, y, None), P, "reg"


def main():
    warnings.simplefilter("error")
    for old in os.listdir(HERE):
        if old.endswith((".bkm", ".json")):
            os.remove(os.path.join(HERE, old))
    for name, model, (X, y, labels), P, kind in cases():
        # two chunks: the file then holds a model that resumed once (counters, curve, generator)
        half = len(X) // 2
        for sl in (slice(0, half), slice(half, None)):
            if kind == "clf":
                model.partial_fit(X[sl], y[sl], classes=labels)
            else:
                model.partial_fit(X[sl], y[sl])
        write(name, model, P, kind)
    print(len(os.listdir(HERE)) // 2, "models written to", HERE, file=sys.stderr)


if __name__ == "__main__":
    main()
