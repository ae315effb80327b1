"""Model files of format version 1, committed under tests/data/format_v1/ (written by its
make.py), load, re-save to the same bytes and predict what is stored next to them.

This is the compatibility promise: format version 1 is what budgetkernel 0.1.0 writes, and
every later version reads it unchanged. A learner requires every field its writer always
writes; the fields a writer omits at their default (a hinge model's "loss", an uncalibrated
model's "probability", BSGDRegressor's "t0" = 0) are part of the format, and the files cover
both sides of each.
"""

import json
import os

import numpy as np
import pytest

import budgetkernel as bk
from test_model_file_fields import encode, parse

DATA = os.path.join(os.path.dirname(__file__), "data", "format_v1")
NAMES = sorted(f[: -len(".bkm")] for f in os.listdir(DATA) if f.endswith(".bkm"))

# The stored values were computed by one build on one CPU. Loading reads the coefficients
# bit for bit, but a decision value is a sum of kernel values (exp, dot products), which the
# AVX2+FMA module and the baseline one, and different libm versions, round differently in the
# last bits (a few ulp of each term; the two modules differed by up to 1.3e-15 relative on the
# machine that wrote the files): rtol 1e-12 is far above that and far below any change a wrong
# field would make. Labels are compared exactly where no tie is within that tolerance.
RTOL = 1e-12


def _path(name, ext):
    return os.path.join(DATA, name + ext)


def _read(name):
    with open(_path(name, ".bkm"), "rb") as f:
        return f.read()


def _expected(name):
    with open(_path(name, ".json")) as f:
        return json.load(f)


def _assert_close(got, want):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=RTOL * max(1.0, float(np.abs(want).max())))


def _decisive(f):
    """Rows whose label no rounding within RTOL can change: |f| (binary) or the gap between
    the two largest values (one-vs-rest, Crammer-Singer) above the tolerance."""
    f = np.asarray(f, dtype=np.float64)
    tol = 1e3 * RTOL * max(1.0, float(np.abs(f).max()))
    if f.ndim == 1:
        return np.abs(f) > tol
    top = np.sort(f, axis=1)
    return top[:, -1] - top[:, -2] > tol


def test_every_estimator_has_version_1_files():
    estimators = {n for n in bk.__all__ if isinstance(getattr(bk, n), type)}
    covered = set()
    for name in NAMES:
        meta = json.loads(bk._core.load_model_info(_read(name))["metadata"])
        covered.add(meta["estimator"])
    assert covered == estimators


@pytest.mark.parametrize("name", NAMES)
def test_a_version_1_file_loads_resaves_identically_and_predicts_as_stored(name, tmp_path):
    data = _read(name)
    assert parse(data)[0] == 1  # the container's format version
    model = bk.load(_path(name, ".bkm"))
    model.save(tmp_path / "again.bkm")
    assert (tmp_path / "again.bkm").read_bytes() == data
    want = _expected(name)
    X = np.asarray(want["X"])
    if "decision_function" not in want:  # a regressor
        _assert_close(model.predict(X), want["predict"])
        return
    f = model.decision_function(X)
    _assert_close(f, want["decision_function"])
    sure = _decisive(want["decision_function"])
    assert sure.sum() >= len(X) // 2  # the label check is not vacuous
    assert np.array_equal(np.asarray(model.predict(X))[sure], np.asarray(want["predict"])[sure])
    if "predict_proba" in want:
        _assert_close(model.predict_proba(X), want["predict_proba"])


# Fields the writers always write: a file without one is refused, never loaded with a default.
ALWAYS_WRITTEN = [
    ("bsgd-2class", "bound_norm"),
    ("bsgd-2class", "norm_exact"),
    ("bsgd-2class", "norm_since"),
    ("tvm-2class", "tvm.ridge"),
    ("tvm-2class", "tvm.m0.svm.kmax"),
    ("idsvm-2class", "ridge"),
    ("idsvm-3class", "m1.ridge"),
    ("idsvm-3class", "m2.kmax"),
]


@pytest.mark.parametrize(("name", "field"), ALWAYS_WRITTEN)
def test_a_file_without_an_always_written_field_is_refused(name, field, tmp_path):
    version, fields = parse(_read(name))
    assert field in {f[0] for f in fields}
    path = tmp_path / "m.bkm"
    path.write_bytes(encode(version, [f for f in fields if f[0] != field]))
    with pytest.raises((RuntimeError, ValueError), match=f"missing field '{field}'"):
        bk.load(path)


def test_optional_fields_are_exactly_the_defaults_the_writer_omits():
    """Both sides of every field a writer omits at its default are among the files."""
    def names(name):
        return {f[0] for f in parse(_read(name))[1]}

    assert "loss" not in names("bsgd-2class") and "loss" in names("bsgd-log-2class")
    assert "probability" not in names("bsgd-2class") and "probability" in names("bsgd-2class-proba")
    assert "t0" not in names("bsgd-regressor") and "t0" in names("bsgd-regressor-squared-t0")
