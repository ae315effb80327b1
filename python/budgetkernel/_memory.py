"""The memory a budgeted model needs, checked before anything is allocated.

Unchecked, a large budget fails with a bare MemoryError('std::bad_alloc') once the first
example reaches a B x B structure (merging's kernel cache holds B^2 float64). The model's memory
at a full budget is estimated from its parameters (each learner lists its structures in
``_memory_plan``) and checked against what the process can get before anything is
allocated; a std::bad_alloc that still happens (a limit we cannot see) gets the same
explanation.
"""

from __future__ import annotations

import numbers
import os

__all__ = ["_MemoryPlanMixin", "_projection_memory"]


def _projection_memory(side, formula):
    """The plan entry of projection-based maintenance: the SVs' kernel matrix and its
    maintained inverse (budget/projection.hpp), each side x side at a full budget, where the
    learner's growth leaves the capacity (which stays as it is: it is part of the arithmetic,
    Eigen blocks its sums by the column stride)."""
    return 2 * side**2 * 8, "kernel matrix and its inverse", f"2 x {formula} float64 values"


def _gb(n):
    return f"{n / 1e9:.3g} GB"


def _allocatable_bytes():
    """(bytes, reason): about the most memory this process can still allocate, and what sets
    it: the address-space limit (RLIMIT_AS) less what the process already maps, and the
    machine's physical memory plus swap (Linux's default overcommit refuses one allocation
    beyond that, and touching more than it ends in the OOM killer). (None, None) where
    neither is known (Windows): a std::bad_alloc is then explained after the fact."""
    found = []
    try:
        import resource
    except ImportError:  # Windows
        resource = None
    if resource is not None:
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY:
            left = max(soft - _mapped_bytes(), 0)
            found.append((left, "its address-space limit RLIMIT_AS, less what it maps already"))
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        physical = 0
    if physical > 0:
        found.append((physical + _meminfo_bytes("SwapTotal"), "the machine's physical memory and swap"))
    return min(found) if found else (None, None)


def _mapped_bytes():
    """The address space this process maps (Linux: /proc/self/statm; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return 0


def _meminfo_bytes(field):
    """A size from /proc/meminfo (Linux; 0 elsewhere)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


class _MemoryPlanMixin:
    """The memory estimate of an OnlineClassifierMixin (which uses get_params and the class name)."""

    def _memory_budget(self, n_features):
        """The budget the memory estimate is for: None for an unbudgeted model (its memory grows
        with the stream) and for a budget the core refuses itself ((budget + 1) * n_features
        beyond 2^31 preallocated values: its ValueError says so)."""
        budget = self.get_params(deep=False).get("budget")
        if isinstance(budget, bool) or not isinstance(budget, numbers.Integral):
            return None
        budget = int(budget)
        return budget if 0 < budget <= 2**31 // n_features - 1 else None

    def _memory_plan(self, budget, n_features, n_classes):
        """[(bytes, structure, its size as a formula)] of what the model holds once ``budget``
        SVs are stored: the support-vector store here; learners add their caches. Structures
        of O(budget) float64 values besides the store are left out (scratch rows), so the
        estimate is a slight underestimate."""
        n_out = 1 if n_classes == 2 else n_classes
        return [
            (
                (budget + 1) * (n_features + n_out + 3) * 8,
                "support-vector store",
                "(budget + 1) x (n_features + n_outputs + 3) float64 values",
            )
        ]

    def _calibration_plan(self, n_classes):
        """Plan entries of a probability calibration (_proba: a classifier with probability=True)."""
        return []

    def _full_memory_plan(self, budget, n_features, n_classes):
        """_memory_plan with what does not depend on the learner (the calibration's window)."""
        return self._memory_plan(budget, n_features, n_classes) + self._calibration_plan(n_classes)

    def _memory_note(self):
        """What the estimate leaves out that can grow further (appended to the message)."""
        return ""

    def _memory_total(self, budget, n_features, n_classes):
        return sum(b for b, _, _ in self._full_memory_plan(budget, n_features, n_classes))

    def _check_memory(self, n_features, n_classes):
        """MemoryError, before anything is allocated, when the estimate at a full budget exceeds
        what this process can allocate (_allocatable_bytes)."""
        budget = self._memory_budget(n_features)
        if budget is None:
            return
        total = self._memory_total(budget, n_features, n_classes)
        available, why = _allocatable_bytes()
        if available is not None and total > available:
            raise MemoryError(self._memory_message(n_features, n_classes, (available, why)))

    def _memory_message(self, n_features, n_classes, limit=None):
        """What the model needs and why, for a refused or failed allocation (limit: the
        (bytes, reason) it was refused against; None when an allocation failed)."""
        what = f"{type(self).__name__}: not enough memory"
        budget = self._memory_budget(n_features)
        if budget is None:
            return f"{what} to build the model ({self._memory_shape(n_features, n_classes)})"
        plan = self._full_memory_plan(budget, n_features, n_classes)
        total = sum(b for b, _, _ in plan)
        msg = (
            f"{what} for budget={budget} ({self._memory_shape(n_features, n_classes)}): the model needs about "
            f"{_gb(total)} once the budget is full"
        )
        if limit is not None:
            msg += f", more than the {_gb(limit[0])} this process can allocate ({limit[1]})"
        msg += ". Of that: " + "; ".join(f"the {name}, {formula}: {_gb(b)}" for b, name, formula in plan)
        msg += self._memory_note() + ". "
        quadratic = [name for _, name, formula in plan if "^2" in formula]
        if quadratic:
            msg += f"The {quadratic[0]} grows with budget^2: "
        fits = self._largest_budget(limit[0], budget, n_features, n_classes) if limit is not None else None
        if fits:
            msg += f"use a budget of at most {fits}"
        else:
            msg += "use a smaller budget"
        return msg

    def _memory_shape(self, n_features, n_classes):
        """The model's dimensions as the message names them (a regressor names no classes)."""
        return f"{n_features} features, {n_classes} classes"

    def _largest_budget(self, available, budget, n_features, n_classes):
        """The largest budget below ``budget`` whose estimate fits in ``available`` bytes (the
        estimate grows with the budget), or None if not even 1 does."""
        lo, hi = 0, budget - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self._memory_total(mid, n_features, n_classes) <= available:
                lo = mid
            else:
                hi = mid - 1
        return lo or None

    def _explain_memory_error(self, error, model):
        """Raises the core's std::bad_alloc while the core ``model`` learns as _memory_message
        explains it, for a budgeted model (whose caches reach their full size while it learns).
        Any other MemoryError (numpy's "Unable to allocate ...", an unbudgeted model's growing
        store) is raised as it is."""
        n_features = model.n_features
        if str(error) != "std::bad_alloc" or self._memory_budget(n_features) is None:
            raise error
        # (a regressor's model has no classes: its plan is that of two, as _init_model's check)
        raise MemoryError(self._memory_message(n_features, getattr(model, "n_classes", 2))) from None
