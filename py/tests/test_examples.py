"""The examples run as documented. The httpx example: over its four local backends (healthy, 500,
refusing, black-holed) nearly every request succeeds and every lease comes back. The asyncio example:
its broken replica, whose four calls in five fail, draws few of the calls that wait for room."""

from __future__ import annotations

import re
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


def test_the_async_example_avoids_its_failing_replica() -> None:
    # 200 concurrent requests wait for room at Fixed(4) on three replicas. A waiter used to take whichever
    # replica freed a slot, and the failing one drew 27 % of the calls; the give-up rule now sends a
    # waiter on to wait for a healthy replica rather than take one far worse.
    done = subprocess.run(
        [sys.executable, "-W", "error", str(EXAMPLES / "async_balance.py")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    calls = {m[0]: int(m[1]) for m in re.findall(r"^(replica-\w): (\d+) calls", done.stdout, re.M)}
    assert set(calls) == {"replica-a", "replica-b", "replica-c"}, done.stdout
    assert sum(calls.values()) >= 200, done.stdout
    assert calls["replica-c"] * 20 <= sum(calls.values()), done.stdout
