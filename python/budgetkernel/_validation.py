"""Checks of the estimators' parameters and of their input chunks.

Parameters are checked by each estimator's ``_validate_params`` in two steps. What only
Python sees is checked here with the ``_check_*`` functions: the Python types (a bool is not
a number, a str is not a bool), None where it means "no budget" or "off", the choices of an
option and the scikit-learn parameters (n_epochs, shuffle, random_state). Every numeric
range is then checked by the core: the estimator translates its parameters into the fields
of the core's Params struct (None -> 0, True -> 1, ...) and ``_forward`` calls its
``validate()``, where each range is written once (C++), appending the value as the user
wrote it to the message. A chunk of input is validated once, at the edge of a call (``validated``, or
``plain_chunk`` for a chunk that is already what the core takes); the core then checks its
rows for NaN, infinity and overflow before it learns any of them.
"""

from __future__ import annotations

import math
import numbers
import re

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_random_state, validate_data

# The _check_* functions and _seed keep the private names the estimator modules use.
__all__ = ["NO_Y", "plain_chunk", "validated"]


def _store_params(est, arguments):
    """An estimator's ``__init__``: every constructor argument stored unchanged under its
    name, as scikit-learn requires (get_params and clone read them back; checks happen in
    ``_validate_params``). ``arguments`` is the constructor's ``locals()``, taken first thing."""
    for name, value in arguments.items():
        if name not in ("self", "__class__"):
            setattr(est, name, value)


def _check_positive(name, value, *, integer=False, allow_none=False):
    if value is None and allow_none:
        return
    kind = numbers.Integral if integer else numbers.Real
    # Integers are compared as Python ints (np.isfinite rejects ints beyond 64 bits), and
    # capped at 2^62 so that the core's 64-bit fields take them (the core caps sizes further).
    ok = not isinstance(value, bool) and isinstance(value, kind)
    if ok and integer:
        ok = 0 < int(value) <= 2**62
    elif ok:
        try:
            ok = bool(np.isfinite(float(value))) and value > 0
        except OverflowError:  # an int beyond the float range
            ok = False
    if not ok:
        what = "a positive integer (at most 2^62)" if integer else "a positive finite number"
        raise ValueError(f"{name} must be {what}; got {value!r}")


def _real(value):
    """A float field of a core Params from a parameter: the float of a real number, else NaN
    (a bool, a str, None, an int beyond the float range), which every range of the core
    refuses, so that a value of the wrong type gets the message of the range it misses."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        return math.nan
    try:
        return float(value)
    except OverflowError:
        return math.nan


def _integer(value, bad):
    """A 32-bit int field of a core Params from a parameter: the int of an integer, else
    ``bad``, a value outside the field's range (as _real's NaN)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        return bad
    return int(value) if -(2**31) <= int(value) < 2**31 else bad


def _forward(est, params_cls, fields):
    """Checks the parameters of ``est`` translated into ``fields`` of the core's
    ``params_cls`` with its ``validate()``: its ValueError names the parameter at fault, and
    gets the value as the user wrote it appended ("lam must be ...; got 0.0")."""
    try:
        params_cls(**fields).validate()
    except ValueError as e:
        raise ValueError(f"{e}{_got(str(e), est.get_params(deep=False))}") from None


def _got(message, params):
    """"; got <value>" for the parameter a core message names, "; got a=.., b=.." for a
    message about several (BOGD's "eta * lam must be < 1"), "" for none."""
    names = list(dict.fromkeys(w for w in re.findall(r"\b[A-Za-z_]\w*", message) if w in params))
    if len(names) == 1:
        return f"; got {params[names[0]]!r}"
    return "; got " + ", ".join(f"{n}={params[n]!r}" for n in names) if names else ""


def _check_choice(name, value, choices):
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)}; got {value!r}")


def _check_bool(name, value):
    """Only True / False (numpy's too): a str such as 'False' is true in an `if`
    (shuffle='False' would shuffle), and None or 1 would pass silently."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False; got {value!r}")


def _check_random_state(value):
    """What scikit-learn's check_random_state takes (None, an int, a RandomState), plus a numpy
    Generator, with ints limited to what the core's 64-bit seed holds: [0, 2^64 - 1]. Values
    are not taken mod 2^64 (2**64 would give the model of 0), and the estimators that draw no
    seed (IncrementalSVC, LinearPegasosClassifier) check it too, whatever shuffle is.
    bool is refused although it is an int to Python (True is a mistake for a seed, e.g. for
    shuffle=True), as every numeric parameter here refuses it."""
    if value is None or isinstance(value, (np.random.RandomState, np.random.Generator)):
        return
    if isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)) and 0 <= int(value) < 2**64:
        return
    raise ValueError(
        "random_state must be None, an int in [0, 2**64 - 1], a numpy RandomState or a numpy Generator; "
        f"got {value!r}"
    )


def _seed(random_state):
    """A 64-bit seed for the core's own mt19937_64 (reproducible on every platform), from a
    random_state that _check_random_state accepted."""
    _check_random_state(random_state)
    if random_state is None:
        return int(np.random.default_rng().integers(0, 2**63))
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(0, 2**31 - 1))
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2**63))
    return int(random_state)


def _shuffler(random_state):
    """fit's row shuffler: a Generator as given, ints beyond RandomState's 2^32 through
    default_rng, everything else as scikit-learn's check_random_state."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool) and random_state >= 2**32:
        return np.random.default_rng(int(random_state))
    return check_random_state(random_state)


NO_Y = object()  # validated's "no y" (None is a y that validate_data must refuse)


def validated(est, X, y=NO_Y, *, reset):
    """scikit-learn's validate_data with what the core takes: finite float64 in C order (a
    sparse X densified, see _dense). Returns X, or (X, y) when y is passed (y=None too:
    validate_data then says that a classifier needs y). reset=True records n_features_in_
    (and feature_names_in_) on ``est``."""
    kw = dict(reset=reset, dtype=np.float64, order="C", ensure_all_finite=True, accept_sparse="csr")
    if y is NO_Y:
        return _dense(validate_data(est, X, **kw))
    X, y = validate_data(est, X, y, **kw)
    return _dense(X), y


def _dense(X):
    """A validated chunk as the C-contiguous float64 rows the core takes. The core is dense (it
    stores SVs as dense rows and computes kernel rows with dense products), so a sparse chunk
    (scipy.sparse, e.g. from load_svmlight_file) is densified whole: it costs its dense size
    while it is used, and a stream of sparse chunks is the way to bound that."""
    return X.toarray(order="C") if sp.issparse(X) else X


def plain_chunk(est, X, y):
    """Whether a chunk for the fitted ``est`` is already what validate_data would return: a
    C-contiguous float64 ndarray with n_features_in_ columns and at least one row (and y a 1-D
    ndarray of one label per row), for a model fitted without feature names. Such a chunk
    skips scikit-learn's validation, a fixed cost per call that is a visible share of a chunk's
    time at bench_speed's setting: the core checks every row for NaN, inf and overflow before
    it uses any (ValueError "X row i contains NaN or infinity"), and the label encoding checks
    every label."""
    return (
        type(X) is np.ndarray
        and X.dtype == np.float64
        and X.ndim == 2
        and X.flags.c_contiguous
        and X.shape[0] >= 1
        and X.shape[1] == getattr(est, "n_features_in_", None)
        and getattr(est, "feature_names_in_", None) is None
        and (y is None or (type(y) is np.ndarray and y.ndim == 1 and y.shape[0] == X.shape[0]))
    )
