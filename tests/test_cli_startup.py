"""What a new user meets first: --version and --help start at once (scikit-learn is imported
by the commands, not by parsing), a missing input file is named by its argument, and the
--tune table prints the error its ranking uses."""

import os
import subprocess
import sys

import numpy as np
import pytest
from sklearn.base import clone

import budgetkernel
from budgetkernel import BudgetedSGDClassifier, cli, datasets
from budgetkernel import io as bk_io
from budgetkernel.model_selection import PrequentialSearch

_HEAVY = ("sklearn", "scipy", "pandas", "matplotlib", "dask")


def _modules_after(code):
    """The top-level packages imported by running ``code`` in a fresh interpreter."""
    probe = f"{code}\nimport sys\nprint(' '.join(sorted({{m.split('.')[0] for m in sys.modules}})))"
    # the budgetkernel these tests import, installed or not
    path = [os.path.dirname(os.path.dirname(budgetkernel.__file__)), os.environ.get("PYTHONPATH")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p)}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    return set(out.stdout.strip().splitlines()[-1].split())


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["train", "--help"], ["predict", "--help"], ["demo", "--help"]])
def test_version_and_help_import_no_scikit_learn(argv):
    code = f"from budgetkernel.cli import main\ntry:\n    main({argv!r})\nexcept SystemExit as e:\n    assert e.code == 0, e.code"
    loaded = _modules_after(code)
    assert "budgetkernel" in loaded and not loaded & set(_HEAVY)


def test_import_budgetkernel_is_light_and_keeps_every_public_name():
    assert not _modules_after("import budgetkernel") & set(_HEAVY)
    # each public name resolves on first use, the star import included, and dir() lists them
    names = {}
    exec("from budgetkernel import *", names)
    assert set(budgetkernel.__all__) <= set(names) and set(budgetkernel.__all__) <= set(dir(budgetkernel))
    assert issubclass(budgetkernel.BudgetedSGDClassifier, budgetkernel.pegasos.OnlineClassifierMixin)
    with pytest.raises(AttributeError, match="no attribute 'NoSuchEstimator'"):
        budgetkernel.NoSuchEstimator  # noqa: B018


def test_load_registers_every_estimator_before_it_looks_one_up():
    # In a fresh interpreter: load()'s registry holds every estimator class the package defines
    code = (
        "import importlib, pkgutil, budgetkernel\n"
        "from budgetkernel._persistence import _REGISTRY, _registry\n"
        "first = set(_registry())\n"
        "for m in pkgutil.walk_packages(budgetkernel.__path__, 'budgetkernel.'):\n"
        "    if m.name == 'budgetkernel.__main__':\n"
        "        continue\n"
        "    try:\n"
        "        importlib.import_module(m.name)\n"
        "    except ImportError:\n"
        "        pass\n"
        "assert first == set(_REGISTRY), set(_REGISTRY) - first"
    )
    _modules_after(code)


@pytest.fixture()
def svm_file(tmp_path):
    X, y = datasets.checkerboard(300, random_state=0)
    bk_io.dump_svmlight(X, y, tmp_path / "train.svm")
    assert cli.main(["train", str(tmp_path / "train.svm"), "-o", str(tmp_path / "m.bkm"), "-q"]) == 0
    return tmp_path


@pytest.mark.parametrize(
    "argv, named",
    [
        (["train", "{missing}", "-o", "{d}/out.bkm"], "training file {missing}"),
        (["evaluate", "{missing}"], "training file {missing}"),
        (["evaluate", "{d}/train.svm", "--test", "{missing}"], "--test file {missing}"),
        (["predict", "{missing}", "{d}/train.svm"], "model file {missing}"),
        (["predict", "{d}/m.bkm", "{missing}"], "data file {missing}"),
    ],
)
def test_a_missing_input_file_is_named_by_its_argument(svm_file, capsys, argv, named):
    capsys.readouterr()
    missing = str(svm_file / "nonexistent.svm")
    fill = {"missing": missing, "d": str(svm_file)}
    assert cli.main([a.format(**fill) for a in argv]) == 2
    out, err = capsys.readouterr()
    assert err == f"budgetkernel: error: {named.format(**fill)}: no such file; check the path\n" and out == ""
    assert not (svm_file / "out.bkm").exists()


def test_a_relative_missing_path_says_where_it_was_looked_for_and_a_directory_is_not_a_file(svm_file, capsys, monkeypatch):
    monkeypatch.chdir(svm_file)
    capsys.readouterr()
    assert cli.main(["train", "nonexistent.svm", "-o", "out.bkm"]) == 2
    assert capsys.readouterr().err == (
        f"budgetkernel: error: training file nonexistent.svm: no such file (relative to the current directory "
        f"{os.getcwd()}); check the path\n"
    )
    assert cli.main(["predict", "m.bkm", "."]) == 2
    assert capsys.readouterr().err == "budgetkernel: error: data file .: is a directory; give a file in it\n"


def test_an_os_error_is_reported_as_file_and_reason():
    assert cli._error_text(FileNotFoundError(2, "No such file or directory", "x.svm")) == "x.svm: no such file or directory"
    assert cli._error_text(ValueError("bad")) == "bad"


def _mistakes_after(est, X, y, n):
    """Prequential mistakes of ``est`` alone over the first n examples (a fresh clone)."""
    alone = clone(est).partial_fit(X[:n], y[:n], classes=[-1, 1])
    return alone.counters_["mistakes"]


def test_the_table_ranks_the_survivors_by_the_window_error_it_prints():
    X, y = datasets.noisy_checkerboard(1999, random_state=0)
    grid = {"gamma": [1.0, 4.0], "lam": [1e-4, 1e-2]}
    est = BudgetedSGDClassifier(budget=30, random_state=0)
    # eta 2 and 4 candidates: rungs at 1000 and 2000; the stream ends before the second, so two
    # candidates survive, each judged on its window since the rung at 1000 (1000 * eta <= 1999 + eta)
    search = PrequentialSearch(est, grid, eta=2, first_rung=1000).fit(X, y)
    res = search.results_
    survivors = [i for i, d in enumerate(res["dropped_at"]) if d is None]
    assert len(survivors) == 2 and search.rungs_ == [1000, 2000]
    for i in survivors:  # the oracle: each survivor's parameters learned alone
        cand = clone(est).set_params(**search.candidate_params_[i])
        expected = (_mistakes_after(cand, X, y, 1999) - _mistakes_after(cand, X, y, 1000)) / 999
        assert res["window_error"][i] == pytest.approx(expected, abs=1e-15)
    ranked = sorted(survivors, key=lambda i: (res["window_error"][i], i))
    assert [res["rank"][i] for i in ranked] == [1, 2] and ranked[0] == search.best_index_
    assert all(res["window_error"][i] is None for i in range(4) if i not in survivors)
    # the table prints it, between the rungs and the online error
    header, first, second = search.summary().splitlines()[:3]
    assert header.split()[-4:] == ["rung1", "window_error", "online_error", "dropped_at"]
    assert first.split()[0] == "1" and f"{res['window_error'][ranked[0]]:.4f}" in first.split()
    assert second.split()[0] == "2" and f"{res['window_error'][ranked[1]]:.4f}" in second.split()


def test_train_tune_prints_the_ranking_column(svm_file, capsys):
    X, y = datasets.noisy_checkerboard(3000, random_state=1)
    bk_io.dump_svmlight(X, y, svm_file / "big.svm")
    capsys.readouterr()
    argv = ["train", str(svm_file / "big.svm"), "-o", str(svm_file / "t.bkm"), "-q", "--budget", "20"]
    assert cli.main([*argv, "--tune-grid", "gamma=1,4", "--tune-grid", "lam=1e-4,1e-2", "--tune-eta", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("; rank: the survivors by their error over the latest window (window_), then the dropped")
    assert "window_error" in lines[1].split()
    rows = [line.split() for line in lines[2:6]]
    assert [r[0] for r in rows] == ["1", "2", "3", "4"]
    np.testing.assert_array_equal(sorted(float(r[1]) for r in rows), [1.0, 1.0, 4.0, 4.0])
