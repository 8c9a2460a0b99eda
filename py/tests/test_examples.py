"""The httpx example runs as documented: over its four local backends (healthy, 500, refusing,
black-holed) nearly every request succeeds and every lease comes back."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_the_httpx_example_runs() -> None:
    done = subprocess.run(
        [sys.executable, "-W", "error", str(EXAMPLES / "httpx_balance.py")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("in flight 0") == 2, done.stdout
    assert done.stdout.rstrip().endswith("/400 succeeded"), done.stdout
