"""tests/core_check.py is what the musllinux wheels are tested with (scikit-learn, which pytest's
suite needs, has no musllinux wheels): it must keep passing here too, or it rots unseen."""

import pathlib
import subprocess
import sys


def test_the_wheel_core_check_passes():
    script = pathlib.Path(__file__).with_name("core_check.py")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "resume exact" in r.stdout
