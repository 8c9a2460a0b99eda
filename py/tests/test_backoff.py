"""Backoff (on_failure/on_success, sleep, asleep, stats) and the retry decorator."""

from __future__ import annotations

import asyncio
import math
import time
from typing import Any

import pytest

import weir


def test_goes_up_on_failure_and_down_after_successes() -> None:
    b = weir.Backoff(jitter=None, down_threshold=2, seed=1)
    assert (b.initial, b.max, b.seed) == (0.5, 900.0, 1)
    assert b.on_success() == 0.0  # idle
    assert b.on_failure() == 0.5
    assert b.on_failure() == 0.75
    assert b.interval == 0.75
    assert b.on_success() == 0.75  # hold
    assert b.step(False) == (0.675, "down")
    assert b.step(True) == (1.0125, "up")
    st = b.stats()
    assert (st["invocations"], st["went_up"], st["went_down"]) == (6, 3, 1)
    b.reset()
    assert b.interval == 0.0


def test_capped_and_jittered() -> None:
    b = weir.Backoff(initial=0.1, max=0.3, jitter=None)
    assert [b.on_failure() for _ in range(4)] == [0.1, 0.15, 0.225, 0.3]
    j = weir.Backoff(initial=1.0, seed=7)
    r1 = [j.on_failure(rng=weir.Rng(3)) for _ in range(3)]
    j.reset()
    r2 = [j.on_failure(rng=weir.Rng(3)) for _ in range(3)]
    assert r1 == r2 and r1[0] == 1.0 and r1[1] != 1.5  # the first interval is exact, later ones jittered
    for kind in ("full", "equal", "decorrelated", "none", "proportional"):
        assert weir.Backoff(jitter=kind).on_failure() >= 0


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"initial": 0}, ValueError, "initial must be at least 1 ns and at most max"),
        ({"initial": 10, "max": 5}, ValueError, "initial must be at least 1 ns and at most max"),
        ({"max": 1e6}, ValueError, "max must be at least 1 ns and at most"),
        ({"up_multiplier": 0.5}, ValueError, "up_multiplier must be finite and >= 1"),
        ({"down_multiplier": 0}, ValueError, "down_multiplier must be in"),
        ({"down_threshold": 0}, ValueError, "down_threshold must be between 1 and 65535"),
        ({"jitter_factor": 2.0}, ValueError, "jitter_factor must be in"),
        ({"jitter": "gaussian"}, ValueError, "jitter must be 'proportional'"),
        ({"jitter": 3}, TypeError, "jitter must be a str"),
        ({"jitter": "full", "jitter_factor": 0.1}, ValueError, "apply to jitter='proportional' only"),
        ({"initial": math.nan}, ValueError, "initial must not be NaN"),
        ({"seed": "x"}, TypeError, "seed must be an int"),
    ],
)
def test_validation(kwargs: dict[str, Any], exc: type[Exception], match: str) -> None:
    with pytest.raises(exc, match=match):
        weir.Backoff(**kwargs)


def test_sleep_and_asleep() -> None:
    b = weir.Backoff(initial=0.02, jitter=None)
    t0 = time.monotonic()
    assert b.sleep() == 0.02
    assert time.monotonic() - t0 >= 0.018
    assert asyncio.run(b.asleep()) == 0.03
    assert b.sleep(failed=False) == 0.03  # a success within the streak holds the interval


def test_retry_sync() -> None:
    calls: list[int] = []

    @weir.retry(attempts=3, on=ConnectionError, backoff=weir.Backoff(initial=0.001, jitter=None))
    def flaky(x: int) -> int:
        calls.append(x)
        if len(calls) < 3:
            raise ConnectionError("down")
        return x

    assert flaky(5) == 5 and calls == [5, 5, 5]

    @weir.retry(attempts=2, on=ConnectionError, backoff=weir.Backoff(initial=0.001))
    def broken() -> None:
        raise ConnectionError("always")

    with pytest.raises(ConnectionError, match="always"):
        broken()

    @weir.retry(attempts=2, on=ConnectionError, reraise=False, backoff=weir.Backoff(initial=0.001))
    def wrapped() -> None:
        raise ConnectionError("x")

    with pytest.raises(weir.RetryError, match="gave up after 2 attempts") as e:
        wrapped()
    assert isinstance(e.value.last_exception, ConnectionError) and e.value.attempts == 2

    @weir.retry(attempts=5, on=ConnectionError)
    def other() -> None:
        calls.append(0)
        raise KeyError

    n = len(calls)
    with pytest.raises(KeyError):
        other()
    assert len(calls) == n + 1  # not retried
    with pytest.raises(ValueError, match="attempts must be at least 1"):
        weir.retry(attempts=0)
    with pytest.raises(TypeError, match="attempts must be an int"):
        weir.retry(attempts=1.5)  # type: ignore[arg-type]


def test_retry_async_and_budget() -> None:
    calls: list[int] = []
    backoff = weir.Backoff(initial=0.001, jitter=None)

    @backoff.retry(attempts=4, on=TimeoutError)
    async def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise TimeoutError
        return "ok"

    assert asyncio.run(flaky()) == "ok" and len(calls) == 3
    # A throttle whose retry budget is spent stops the retries at once.
    throttle = weir.Throttle(retry_ratio=0.0)
    attempts: list[int] = []

    @weir.retry(attempts=5, on=ConnectionError, throttle=throttle, backoff=weir.Backoff(initial=0.001))
    def refused() -> None:
        attempts.append(1)
        raise ConnectionError

    with pytest.raises(ConnectionError):
        refused()
    assert len(attempts) == 1
