"""Shedder (explicit, context manager, decorator), Promise, CpuSampler and Throttle."""

from __future__ import annotations

import asyncio
import gc
import math
import sys
from pathlib import Path
from typing import Any

import pytest

import weir


def overload(s: weir.Shedder) -> list[weir.Promise]:
    """Drives a shedder into overload on the test clock, as the core's doc example does: 20 admitted, 10
    completed as failures (the in-flight average rises); at cpu 1000 the next request is dropped."""
    held = [s.allow(0, now=0.0) for _ in range(20)]
    for p in held[:10]:
        p.failure()
    return held[10:]


def test_shedder_drops_when_overloaded() -> None:
    s = weir.Shedder()
    held = overload(s)
    with pytest.raises(weir.Overloaded, match="service overloaded: cpu 1000/1000, 10 in flight") as e:
        s.allow(1000, now=0.0)
    err = e.value
    assert (err.cpu, err.hot, err.in_flight, err.limit) == (1000, False, 10, 1.0)
    assert err.avg_in_flight > 1.0
    assert isinstance(err, weir.WeirError)
    # At low CPU the same load passes.
    s.allow(0, now=0.0).success(now=0.001)
    st = s.stats(now=0.0)
    assert (st["allowed"], st["dropped"], st["failed"], st["in_flight"]) == (21, 1, 10, 10)
    for p in held:
        p.success(now=0.01)
    assert s.stats(now=0.02)["in_flight"] == 0


def test_shedder_config_and_validation() -> None:
    s = weir.Shedder(window=10, buckets=20, cpu_threshold=800, cool_off=0.5)
    assert (s.window, s.buckets, s.cpu_threshold, s.cool_off) == (10.0, 20, 800, 0.5)
    assert s.overload_factor(0) == 1.0 and s.overload_factor(900) < 1.0
    for kwargs, exc, match in [
        ({"buckets": 0}, ValueError, "buckets must be between 1 and 128"),
        ({"buckets": 200}, ValueError, "buckets must be between 1 and 128"),
        ({"window": 1e-8}, ValueError, "window / buckets must be at least 1 ns"),
        ({"window": math.nan}, ValueError, "window must not be NaN"),
        ({"cpu_threshold": 1000}, ValueError, "cpu_threshold must be between 0 and 999"),
        ({"cool_off": -1}, ValueError, "cool_off must not be negative"),
        ({"cpu": 5}, TypeError, "cpu must be a weir.CpuSampler, a callable"),
    ]:
        with pytest.raises(exc, match=match):
            weir.Shedder(**kwargs)
    with pytest.raises(ValueError, match="cpu must be between 0 and 1000"):
        s.allow(1001)
    with pytest.raises(TypeError):
        s.allow("high")


def test_promise_completion_rules() -> None:
    s = weir.Shedder()
    p = s.allow()
    assert not p.done and p.allowed_at > 0
    p.success()
    assert p.done
    with pytest.raises(weir.LeaseError, match="already completed"):
        p.failure()
    q = s.allow(now=1.0)
    with pytest.raises(weir.ClockMismatch):
        q.success()
    q.success(now=1.5)
    with s.allow():
        pass
    with pytest.raises(KeyError):
        with s.allow():
            raise KeyError
    s.allow()  # garbage-collected: a failure
    gc.collect()
    st = s.stats()
    assert (st["succeeded"], st["failed"], st["in_flight"]) == (3, 2, 0)


def test_shedder_as_context_manager_and_decorator() -> None:
    s = weir.Shedder(cpu=lambda: 0)
    with s as p:
        assert isinstance(p, weir.Promise)
        with s:  # nests
            pass
    with pytest.raises(ValueError):
        with s:
            raise ValueError

    @s
    def work(x: int) -> int:
        return x * 2

    @s
    async def awork(x: int) -> int:
        return x + 1

    assert work(21) == 42
    assert asyncio.run(awork(1)) == 2
    st = s.stats()
    assert (st["succeeded"], st["failed"], st["in_flight"]) == (4, 1, 0)
    with pytest.raises(weir.LeaseError):
        s.__exit__(None, None, None)


def test_shedder_reads_its_cpu_source() -> None:
    s = weir.Shedder(cpu=lambda: 1000)
    held = overload(s)
    with pytest.raises(weir.Overloaded):
        s.allow(now=0.0)
    bad = weir.Shedder(cpu=lambda: 5000)
    with pytest.raises(ValueError, match="cpu\\(\\) result must be between 0 and 1000"):
        bad.allow()
    for p in held:
        p.failure()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="CPU statistics exist on Linux only")
def test_cpu_sampler_on_linux() -> None:
    c = weir.CpuSampler()
    assert c.source in ("cgroup_v2", "cgroup_v1", "proc_stat")
    assert c.allowance() > 0
    assert 0 <= c.sample() <= 1000
    assert 0 <= c.usage() <= 1000
    assert "CpuSampler" in repr(c)
    s = weir.Shedder(cpu=c)
    s.allow().success()


def test_cpu_sampler_without_statistics(tmp_path: Path) -> None:
    with pytest.raises(weir.CpuUnavailable, match="no cgroup v2, cgroup v1 or /proc/stat"):
        weir.CpuSampler(root=tmp_path)
    assert issubclass(weir.CpuUnavailable, OSError)


def test_throttle_rejects_as_the_sre_book_says() -> None:
    t = weir.Throttle(seed=1)
    assert (t.window, t.buckets, t.k, t.max_rejection, t.retry_ratio, t.seed) == (120.0, 120, 2.0, 1.0, 0.1, 1)
    rng = weir.Rng(2)
    rejected = 0
    for _ in range(200):  # the backend accepts nothing
        try:
            t.allow(weir.Criticality.SHEDDABLE, now=1.0, rng=rng)
        except weir.Throttled as e:
            assert e.criticality is weir.Criticality.SHEDDABLE and 0 < e.probability <= 1
            rejected += 1
    assert 100 < rejected < 200
    assert t.probability(weir.Criticality.SHEDDABLE, now=1.0) > 0.9
    assert t.probability(now=1.0) == 0.0  # CRITICAL saw no requests
    t.allow(now=1.0)
    t.accepted(now=1.0)
    st = t.stats(now=1.0)
    assert st["total_requests"][3] == 200 and st["total_throttled"][3] == rejected
    assert st["total_accepts"] == (0, 1, 0, 0)
    assert weir.rejection_probability(100, 50, 2.0) == 0.0
    assert abs(weir.rejection_probability(100, 25, 2.0) - 0.49505) < 1e-5


def test_throttle_retry_budget() -> None:
    t = weir.Throttle(seed=1, retry_ratio=0.1)
    for _ in range(10):
        t.allow(now=0.0)
        t.accepted(now=0.0)
    allowed = 0
    with pytest.raises(weir.RetryBudgetExhausted, match="retry budget exhausted") as e:
        for _ in range(10):
            t.allow_retry(now=0.0)
            allowed += 1
    # Retries count as requests; the budget holds them under a tenth.
    assert allowed == 2
    assert (e.value.retries, e.value.requests) == (2, 12)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"k": 0.5}, "k must be finite and >= 1"),
        ({"max_rejection": 1.5}, "max_rejection must be in"),
        ({"retry_ratio": -0.1}, "retry_ratio must be in"),
        ({"buckets": 0}, "buckets must be between 1 and 128"),
        ({"window": 0}, "window / buckets"),
        ({"k": math.nan}, "k must not be NaN"),
    ],
)
def test_throttle_validation(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        weir.Throttle(**kwargs)


def test_criticality_validation() -> None:
    t = weir.Throttle()
    with pytest.raises(ValueError, match="criticality must be between 0 and 3"):
        t.allow(4)
    with pytest.raises(TypeError):
        t.accepted("CRITICAL")
    assert [c.name for c in weir.Criticality] == ["CRITICAL_PLUS", "CRITICAL", "SHEDDABLE_PLUS", "SHEDDABLE"]
