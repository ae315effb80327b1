"""Checks the compiled core of an installed wheel without scikit-learn: `python core_check.py`.

The wheel workflow runs this on the musllinux wheels. scikit-learn, which the package imports,
publishes no musllinux wheels, so testing those wheels with the full suite would compile
scikit-learn from source for every Python version. What is specific to a musllinux wheel is
the compiled code (musl's libm, the libstdc++ auditwheel bundles, the CPU dispatch), not the
pure-Python layer that the manylinux wheels test completely; this script exercises that code
with numpy alone. (Not a pytest module: pytest collects only test_*.py.)
"""

import importlib.machinery
import importlib.util
import os
import sys

import numpy as np


def load_compiled(name):
    """budgetkernel.<name> from the installed package, without running the package's __init__
    (which imports scikit-learn). None if the wheel has no such module (non-x86-64)."""
    spec = importlib.util.find_spec("budgetkernel")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("budgetkernel is not installed")
    for folder in spec.submodule_search_locations:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(folder, name + suffix)
            if os.path.exists(path):
                mod_spec = importlib.util.spec_from_file_location(f"budgetkernel.{name}", path)
                module = importlib.util.module_from_spec(mod_spec)
                mod_spec.loader.exec_module(module)
                return module
    return None


def xor(n, seed):
    """Two classes in alternate quadrants: no linear model separates them."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(n, 2))
    y = (X[:, 0] * X[:, 1] > 0).astype(np.int32)
    return X, y


def bsgd(core):
    # As budgetkernel.BudgetedSGDClassifier builds it: 2 features, 2 classes, the parameters
    # by name (the fields of the C++ BSGDParams).
    return core.KernelPegasos(2, 2, kernel="rbf", gamma=2.0, lam=1e-3, budget=50, maintenance="merge", seed=0)


def check(core, X, y, X_test, y_test):
    half = len(X) // 2
    a = bsgd(core)
    a.partial_fit(X[:half], y[:half])
    b = core.KernelPegasos.from_bytes(a.to_bytes())  # save, load, then both go on learning
    a.partial_fit(X[half:], y[half:])
    b.partial_fit(X[half:], y[half:])
    assert a.to_bytes() == b.to_bytes(), "a loaded model did not resume bit for bit"
    d = a.decision_function(X_test)
    assert np.array_equal(d, b.decision_function(X_test))
    assert a.n_support <= 50
    accuracy = float(np.mean(a.predict(X_test) == y_test))
    assert accuracy > 0.85, f"accuracy {accuracy:.3f} on XOR"
    print(f"{core.__name__} ({core.simd}): accuracy {accuracy:.3f}, {a.n_support} SVs, resume exact")
    return a, d


def main():
    X, y = xor(6000, 0)
    X_test, y_test = xor(2000, 1)
    base = load_compiled("_core")
    assert base is not None, "no compiled budgetkernel._core in the installed package"
    assert base.simd == "baseline"
    model, d = check(base, X, y, X_test, y_test)

    avx2 = load_compiled("_core_avx2")
    if avx2 is None or not base.cpu_has_avx2_fma():
        print("AVX2 module: absent or not runnable on this CPU; skipped")
        return
    assert avx2.simd == "avx2+fma"
    check(avx2, X, y, X_test, y_test)
    # Both builds read each other's files; their exp differs in the last bits only.
    other = avx2.KernelPegasos.from_bytes(model.to_bytes())
    np.testing.assert_allclose(other.decision_function(X_test), d, rtol=1e-12, atol=1e-12)
    back = base.KernelPegasos.from_bytes(other.to_bytes())
    assert np.array_equal(back.decision_function(X_test), d)
    print("baseline and AVX2 modules agree")


if __name__ == "__main__":
    main()
