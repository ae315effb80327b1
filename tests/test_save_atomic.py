"""save() writes through a unique temporary file in the target's directory, fsynced, then
renamed over the target: concurrent writers never share a temporary file, the file is always
one complete model, a symlink is written through, and nothing is left behind on failure."""

import errno
import multiprocessing
import os
import stat
import sys
import threading

import numpy as np
import pytest

import budgetkernel
from budgetkernel import BudgetedSGDClassifier, KernelPerceptron
from budgetkernel import _files


def _two_models():
    X = np.random.default_rng(0).normal(size=(300, 3))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    a = BudgetedSGDClassifier(budget=30, gamma=1.0, random_state=0).fit(X, y)
    b = KernelPerceptron(budget=40, gamma=0.5, random_state=1).fit(X, y)
    return X, a, b


def _same_model(loaded, est, X):
    return type(loaded) is type(est) and np.array_equal(loaded.decision_function(X), est.decision_function(X))


def _listing(d):
    return sorted(os.listdir(d))


def test_two_threads_saving_to_one_path_leave_one_complete_model(tmp_path):
    # The reproducer: both writers used to share "<path>.tmp", so one raised
    # FileNotFoundError and the file left behind was corrupt in about 1 round in 5.
    X, a, b = _two_models()
    path = tmp_path / "shared.bkm"

    def save(m, barrier, errors):
        try:
            barrier.wait()
            m.save(path)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    for _ in range(50):
        errors = []
        barrier = threading.Barrier(2)
        threads = [threading.Thread(target=save, args=(m, barrier, errors)) for m in (a, b)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        loaded = budgetkernel.load(path)
        assert _same_model(loaded, a, X) or _same_model(loaded, b, X)
        assert _listing(tmp_path) == ["shared.bkm"]


def _save_many(which, path, rounds, start):
    _, a, b = _two_models()
    start.wait()
    for _ in range(rounds):
        (a if which == 0 else b).save(path)


def test_two_processes_saving_to_one_path_leave_one_complete_model(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    path = str(tmp_path / "shared.bkm")
    start = ctx.Event()
    procs = [ctx.Process(target=_save_many, args=(i, path, 50, start)) for i in (0, 1)]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(timeout=300)
    assert [p.exitcode for p in procs] == [0, 0]
    X, a, b = _two_models()
    loaded = budgetkernel.load(path)
    assert _same_model(loaded, a, X) or _same_model(loaded, b, X)
    assert _listing(tmp_path) == ["shared.bkm"]


@pytest.mark.skipif(not hasattr(os, "symlink") or sys.platform == "win32", reason="needs POSIX symlinks")
def test_saving_over_a_symlink_writes_through_to_its_target(tmp_path):
    X, a, b = _two_models()
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "model.bkm"
    a.save(target)
    link = tmp_path / "link.bkm"
    link.symlink_to(target)
    b.save(link)
    # the link stays a link (it was replaced by a regular file), and its target got the model
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert _same_model(budgetkernel.load(target), b, X)
    assert _listing(tmp_path) == ["link.bkm", "real"]
    assert _listing(tmp_path / "real") == ["model.bkm"]
    # a dangling link: the model is written where it points
    target.unlink()
    a.save(link)
    assert link.is_symlink() and _same_model(budgetkernel.load(target), a, X)


@pytest.mark.skipif(not hasattr(os, "symlink") or sys.platform == "win32", reason="needs POSIX symlinks")
def test_a_relative_symlink_is_resolved_against_its_own_directory(tmp_path):
    X, a, _ = _two_models()
    (tmp_path / "sub").mkdir()
    link = tmp_path / "sub" / "link.bkm"
    link.symlink_to(os.path.join("..", "model.bkm"))
    a.save(link)
    assert link.is_symlink() and _same_model(budgetkernel.load(tmp_path / "model.bkm"), a, X)
    assert _listing(tmp_path) == ["model.bkm", "sub"]


def test_a_bytes_path_works_like_a_str_path(tmp_path):
    X, a, b = _two_models()
    path = os.fsencode(tmp_path / "model.bkm")
    a.save(path)
    assert _same_model(budgetkernel.load(path), a, X)
    b.save(path)  # over an existing file
    assert _same_model(budgetkernel.load(os.fsdecode(path)), b, X)
    # the temporary file used to be named "b'...'.tmp" (the bytes' repr)
    assert _listing(tmp_path) == ["model.bkm"]


def test_a_path_like_object_works(tmp_path):
    class Where:
        def __fspath__(self):
            return str(tmp_path / "m.bkm")

    X, a, _ = _two_models()
    a.save(Where())
    assert _same_model(budgetkernel.load(tmp_path / "m.bkm"), a, X)
    assert _listing(tmp_path) == ["m.bkm"]


def test_a_relative_path_is_saved_in_the_working_directory(tmp_path, monkeypatch):
    X, a, _ = _two_models()
    monkeypatch.chdir(tmp_path)
    a.save("m.bkm")
    assert _same_model(budgetkernel.load(tmp_path / "m.bkm"), a, X)
    assert _listing(tmp_path) == ["m.bkm"]


def _existing(tmp_path):
    X, a, b = _two_models()
    path = tmp_path / "model.bkm"
    a.save(path)
    return X, a, b, path, path.read_bytes()


@pytest.mark.parametrize("error", [OSError(errno.ENOSPC, "No space left on device"), KeyboardInterrupt()])
def test_a_failed_write_leaves_the_old_file_and_no_temporary_file(tmp_path, monkeypatch, error):
    _, _, b, path, before = _existing(tmp_path)
    real_write = os.write

    def failing_write(fd, data):
        real_write(fd, bytes(data)[: len(data) // 2])  # half of it reached the disk
        raise error

    monkeypatch.setattr(_files.os, "write", failing_write)
    with pytest.raises(type(error)):
        b.save(path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert _listing(tmp_path) == ["model.bkm"]


@pytest.mark.parametrize("error", [OSError(errno.EIO, "Input/output error"), KeyboardInterrupt()])
def test_a_failed_fsync_leaves_the_old_file_and_no_temporary_file(tmp_path, monkeypatch, error):
    _, _, b, path, before = _existing(tmp_path)

    def failing_fsync(fd):
        raise error

    monkeypatch.setattr(_files.os, "fsync", failing_fsync)
    with pytest.raises(type(error)):
        b.save(path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert _listing(tmp_path) == ["model.bkm"]


def test_an_interrupted_rename_leaves_the_old_file_and_no_temporary_file(tmp_path, monkeypatch):
    _, _, b, path, before = _existing(tmp_path)

    def interrupted(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(_files.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        b.save(path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert _listing(tmp_path) == ["model.bkm"]


def test_the_file_is_fsynced_before_the_rename(tmp_path, monkeypatch):
    # Durability: the data is flushed to disk before the new name points at it (else a crash
    # right after the rename can leave an empty or partial file under the final name), and
    # the directory entry afterwards (POSIX only: Windows cannot open a directory).
    _, a, _ = _two_models()
    events = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        events.append(("fsync", os.path.isdir(f"/proc/self/fd/{fd}") if sys.platform == "linux" else None))
        real_fsync(fd)

    def replace(src, dst):
        events.append(("replace", None))
        real_replace(src, dst)

    monkeypatch.setattr(_files.os, "fsync", fsync)
    monkeypatch.setattr(_files.os, "replace", replace)
    a.save(tmp_path / "m.bkm")
    names = [e for e, _ in events]
    if os.name == "nt":
        assert names == ["fsync", "replace"]
    else:
        assert names == ["fsync", "replace", "fsync"]
        if sys.platform == "linux":
            assert [d for _, d in events] == [False, None, True]


def test_a_directory_that_does_not_exist_is_an_error_without_leftovers(tmp_path):
    _, a, _ = _two_models()
    with pytest.raises(FileNotFoundError):
        a.save(tmp_path / "missing" / "m.bkm")
    assert _listing(tmp_path) == []


@pytest.mark.skipif(os.name == "nt", reason="POSIX file modes")
def test_a_new_file_gets_the_umask_mode_as_open_gives_it(tmp_path):
    # A private 0600 temporary file (mkstemp's mode) renamed into place would change the
    # model file's permissions from what open(path, "wb") always gave.
    _, a, _ = _two_models()
    a.save(tmp_path / "m.bkm")
    with open(tmp_path / "plain", "wb"):
        pass
    assert os.stat(tmp_path / "m.bkm").st_mode & 0o777 == os.stat(tmp_path / "plain").st_mode & 0o777


@pytest.mark.skipif(not os.path.exists("/dev/null") or os.name == "nt", reason="POSIX /dev/null")
def test_saving_to_a_device_writes_it_in_place():
    # A rename over /dev/null (which root may do) would swap the device for a regular file.
    _, a, _ = _two_models()
    a.save("/dev/null")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
