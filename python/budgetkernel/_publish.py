"""An estimator's fitted state, changed as a whole: build privately, then publish.

Calls on one estimator from several threads must act as if they ran one after another
(docs/guide/contract.md). Every use of a core learner is serialised by the one lock around it, in C++
(python/src/model_lock.hpp: readers together, a writer alone, Ctrl-C ends a wait, nested use
from a finaliser). What that lock cannot cover is which learner the estimator holds, and the
Python state that goes with it (classes_ and the label map, n_features_in_, feature names,
the prequential curve): the first call has no learner yet to lock, and fit() replaces the
learner by a new one. Changed one attribute at a time, that state would break: two first
calls at once would each build a model and one chunk would be lost; a predict during fit would
see a model not yet trained (or the new classes_ with the old model: wrong labels).

So the calls that build a model (fit, a first partial_fit / learn_one) run on a private copy
of the estimator and publish its ``__dict__`` whole, by one assignment, once it holds a
trained model (``_publish_new``). They hold the estimator's lock, the only lock on the Python
side: first calls run one at a time, and one that waited uses the model another one built.
Calls on a built model take no Python lock (learn_one's cost): they read the state they use
from one ``__dict__`` (``_state``), which a concurrent fit replaces but never changes under
them. set_params and save take the lock too, so that a fit's publish does not drop a changed
parameter and a file holds the metadata of the model it holds.

The two locks cannot be one: the C++ one is keyed on a learner and held for one core call,
while this one guards which learner the estimator holds, across several calls and before any
learner exists; and it must be re-entrant (partial_fit_active's oracle may save the model it
is building; a signal handler may call set_params or save while its thread holds the lock),
where a change nested in a use of the same learner must raise. Neither is a second
implementation of the other.

The one build that runs in place is partial_fit_active's first call (``_undo_if_first``): its
oracle may predict with the model being built, so it must be the estimator's own.
"""

from __future__ import annotations

import contextlib
import threading

from sklearn.utils.validation import check_is_fitted

__all__ = ["_PublishedStateMixin"]


def _learned_by_new_model(new, old):
    """Whether state ``new`` holds a model other than ``old``'s that learned something: a call
    that failed after its model learned rows (an exact SVM breaking down mid-chunk, Ctrl-C
    between two examples) keeps them, as the core documents, and nothing learned is lost."""
    model = new.get("_model")
    return model is not None and model is not old.get("_model") and model.counters["examples"] > 0


class _PublishedStateMixin:
    """The estimator's lock and the build-then-publish of its state (module docstring)."""

    def _state_lock(self):
        """The estimator's lock (made on first use; never pickled)."""
        lock = self.__dict__.get("_lock")
        if lock is None:
            lock = self.__dict__.setdefault("_lock", threading.RLock())  # atomic: one lock wins
        return lock

    def _state(self):
        """The fitted state, as one __dict__ (see the module docstring): NotFittedError if none."""
        d = self.__dict__
        if "_model" not in d:
            check_is_fitted(self, "_model")
            d = self.__dict__  # published meanwhile
        return d

    def _publish_new(self, build, *, rebuild=False):
        """Runs ``build(new)`` on a private copy ``new`` of the estimator, which validates the
        call's input, builds a model on ``new`` and trains it, and publishes ``new``'s state
        whole. Returns False, having run nothing, when a model exists by the time the lock is
        held (a first call that waited for another one: the caller goes on as a later call);
        ``rebuild`` (fit) always builds a new one. A build that fails publishes nothing unless
        its model learned something (_learned_by_new_model): a failed call changes nothing."""
        with self._state_lock():
            old = self.__dict__
            if not rebuild and "_model" in old:
                return False
            new = object.__new__(type(self))
            new.__dict__.update(old)
            try:
                build(new)
            except BaseException:
                if _learned_by_new_model(new.__dict__, old):
                    self.__dict__ = new.__dict__
                raise
            self.__dict__ = new.__dict__
            return True

    @contextlib.contextmanager
    def _undo_on_error(self):
        """Puts every attribute back if the block raises before the model it built learned
        anything (_learned_by_new_model): a failed in-place build leaves the estimator as it
        was. The snapshot is shallow: the block rebinds attributes, never changes them."""
        saved = dict(self.__dict__)
        try:
            yield
        except BaseException:
            if not _learned_by_new_model(self.__dict__, saved):
                self.__dict__.clear()
                self.__dict__.update(saved)
            raise

    @contextlib.contextmanager
    def _undo_if_first(self):
        """A call that builds the model in place if it is the first (partial_fit_active, whose
        oracle may use the estimator): under the lock, undone if it fails (_undo_on_error). A
        call that waited for another first call uses its model; later calls need neither."""
        if "_model" in self.__dict__:
            yield
            return
        with self._state_lock():
            if "_model" in self.__dict__:
                yield
            else:
                with self._undo_on_error():
                    yield
