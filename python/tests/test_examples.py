"""The examples in python/examples run on the selected devices."""

import os
import subprocess
import sys

import pytest

from conftest import SCALE

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "examples")


@pytest.mark.parametrize("args", [["double.py"], ["pipeline.py", "--n", "65536"]][:2 if SCALE >= 1 else 1])
def test_example(args, tmp_path):
    env = dict(os.environ)
    pkg = os.path.join(EXAMPLES, os.pardir)
    env["PYTHONPATH"] = pkg + os.pathsep + env.get("PYTHONPATH", "")
    trace = ["--trace", str(tmp_path / "t.json")] if args[0] == "pipeline.py" else []
    r = subprocess.run([sys.executable, os.path.join(EXAMPLES, args[0])] + args[1:] + trace,
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    if trace:
        assert "ok" in r.stdout and (tmp_path / "t.json").stat().st_size > 0
