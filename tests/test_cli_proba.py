"""The command line's probabilities: `train --loss log` (bsgd's kernel logistic regression) and
`--probability` (the online calibration of any classifier) make models whose `predict --proba`
writes LIBSVM's svm-predict -b 1 layout with the estimator's own predict_proba values."""

import numpy as np
import pytest

import budgetkernel
from budgetkernel import cli
from conftest import write_svmlight_pair


@pytest.fixture()
def files(tmp_path):
    d, _, _, Xt, _ = write_svmlight_pair(tmp_path, 1500, 300, noisy=False)
    return d, Xt


def _read_proba(path):
    lines = path.read_text().splitlines()
    header = lines[0].split()
    rows = np.array([[float(v) for v in line.split()] for line in lines[1:]])
    return header, rows[:, 0], rows[:, 1:]


@pytest.mark.parametrize(
    "options",
    [
        ["--learner", "bsgd", "--loss", "log", "--lam", "1e-4"],
        ["--learner", "perceptron", "--probability"],
        ["--learner", "pa", "--probability", "--budget", "50"],
    ],
    ids=["klr", "perceptron-calibrated", "pa-calibrated"],
)
def test_predict_proba_writes_the_estimators_probabilities(files, options):
    d, Xt = files
    model, out = d / "m.bkm", d / "proba.txt"
    assert cli.main(["train", str(d / "train.svm"), "-o", str(model), "--gamma", "2", "-q", *options]) == 0
    clf = budgetkernel.load(model)
    assert cli.main(["predict", str(model), str(d / "test.svm"), "-o", str(out), "--proba", "-q"]) == 0
    header, labels, P = _read_proba(out)
    assert header == ["labels", *map(str, clf.classes_)]
    np.testing.assert_array_equal(labels, clf.predict(Xt))  # each line's label is predict's
    np.testing.assert_array_equal(P, clf.predict_proba(Xt))  # repr: the float64s read back exactly
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-12)


def test_proba_needs_a_model_with_probabilities(files, capsys):
    d, _ = files
    model = d / "m.bkm"
    assert cli.main(["train", str(d / "train.svm"), "-o", str(model), "--learner", "perceptron", "-q"]) == 0
    assert cli.main(["predict", str(model), str(d / "test.svm"), "--proba"]) == 2
    assert "train it with --probability" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--learner", "pa", "--loss", "log"], "--loss log is not a PA loss"),
        (["--learner", "bsgd", "--loss", "ramp"], "--loss ramp is not a BSGD loss"),
        (["--learner", "klms", "--probability"], "--probability does not apply to --learner klms"),
    ],
)
def test_option_errors(files, options, message, capsys):
    d, _ = files
    assert cli.main(["train", str(d / "train.svm"), "-o", str(d / "m.bkm"), "-q", *options]) == 2
    assert message in capsys.readouterr().err
