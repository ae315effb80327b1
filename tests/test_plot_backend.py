"""The plot helpers draw with whatever matplotlib backend the caller chose."""

import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("matplotlib")

# Run in a fresh interpreter: the backend is process-wide state that other tests
# (and pyplot, once imported) would otherwise share.
SCRIPT = textwrap.dedent(
    """
    import sys
    import matplotlib
    matplotlib.use("svg")  # the caller's choice (stands in for Jupyter's inline or a GUI backend)
    import matplotlib.pyplot as plt

    from budgetkernel import BudgetedSGDClassifier, datasets
    from budgetkernel.preprocessing import StreamingStandardizer
    from budgetkernel.plot import plot_accuracy_curve, plot_decision_boundary, plot_demo

    scaler = StreamingStandardizer(n_warmup=200)
    clf = BudgetedSGDClassifier(budget=20, gamma=2.0, random_state=0)
    for X, y in scaler.fit_transform_stream(datasets.stream("checkerboard", 2000, chunk_size=500, random_state=0)):
        clf.partial_fit(X, y, classes=[-1, 1])

    plot_demo(clf, scaler, sys.argv[1])
    assert matplotlib.get_backend() == "svg", matplotlib.get_backend()
    assert plt.get_fignums() == [], plt.get_fignums()  # the demo figure is not left in pyplot

    plot_accuracy_curve([clf])  # no axes given: pyplot's current axes, same backend
    plot_decision_boundary(clf, transform=scaler.transform, resolution=30)
    assert matplotlib.get_backend() == "svg", matplotlib.get_backend()
    assert plt.get_fignums() == [1]
    print("ok")
    """
)


def test_plot_helpers_keep_the_callers_backend(tmp_path):
    png = tmp_path / "demo.png"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run([sys.executable, "-c", SCRIPT, str(png)], capture_output=True, text=True, env=env, check=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"  # still a PNG, drawn with Agg
