"""Train a small model in Python and write what the C++ example needs to check it.

    python make_reference.py OUTDIR

writes OUTDIR/model.bkm (``clf.save``) and OUTDIR/reference.txt: 200 test rows, each the
feature values followed by ``clf.decision_function`` for that row, printed with '%.17g' so
that every double round-trips exactly. ``embed OUTDIR/model.bkm OUTDIR/reference.txt`` then
checks that C++ predicts the same values.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import budgetkernel


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(f"usage: {argv[0]} OUTDIR", file=sys.stderr)
        return 2
    outdir = Path(argv[1])
    outdir.mkdir(parents=True, exist_ok=True)

    X, y = budgetkernel.datasets.noisy_checkerboard(5000, random_state=0)
    clf = budgetkernel.BudgetedSGDClassifier(
        budget=50, maintenance="merge", kernel="rbf", gamma=1.0, lam=1e-4, random_state=0
    )
    clf.fit(X, y)
    model_path = outdir / "model.bkm"
    clf.save(model_path)

    X_test, _ = budgetkernel.datasets.noisy_checkerboard(200, random_state=1)
    X_test = np.asarray(X_test, dtype=np.float64)
    D = np.asarray(clf.decision_function(X_test), dtype=np.float64).reshape(len(X_test), -1)
    table = np.hstack([X_test, D])
    ref_path = outdir / "reference.txt"
    np.savetxt(ref_path, table, fmt="%.17g")

    print(f"wrote {model_path}")
    print(f"wrote {ref_path} ({table.shape[0]} rows: {X_test.shape[1]} features + {D.shape[1]} outputs)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
