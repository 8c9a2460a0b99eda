"""Garbage in, clear exceptions out: every constructor and method called with hostile values raises an
ordinary Exception (ValueError, TypeError or a WeirError) or succeeds, and never a pyo3 PanicException
(which derives from BaseException) or a crash; the balancer's counters stay conserved throughout."""

from __future__ import annotations

import inspect
import math
from datetime import timedelta
from typing import Any, Callable, List

import pytest

import weir

HOSTILE: List[Any] = [
    None,
    -1,
    0,
    1,
    2**63,
    2**64,
    2**200,
    -(2**200),
    math.nan,
    math.inf,
    -math.inf,
    -0.0,
    1e308,
    5e-324,
    True,
    "",
    "log10",
    b"x",
    [],
    {},
    object(),
    timedelta(days=999_999_999),
    timedelta(microseconds=1),
    weir.Fixed(1),
    weir.Percentile(0.5),
]


def call_safely(f: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    try:
        f(*args, **kwargs)
    except Exception:
        pass
    except BaseException as e:  # a PanicException, SystemExit, ...
        pytest.fail(f"{getattr(f, '__qualname__', f)}{args}{kwargs} raised {type(e).__name__}: {e}")


def keyword_params(f: Callable[..., Any]) -> List[str]:
    try:
        sig = inspect.signature(f)
    except (TypeError, ValueError):
        return []
    return [p.name for p in sig.parameters.values() if p.name != "self" and p.kind is not p.VAR_POSITIONAL and p.kind is not p.VAR_KEYWORD]


CLASSES = [
    weir.Config,
    weir.Config.cascade,
    weir.LowestScore,
    weir.Weighted,
    weir.Buckets,
    weir.Ewma,
    weir.Fixed,
    weir.Aimd,
    weir.Vegas,
    weir.Gradient,
    weir.Gradient2,
    weir.Ciad,
    weir.Knee,
    weir.Windowed,
    weir.Log10,
    weir.Sqrt,
    weir.Percentile,
    weir.Rng,
    weir.Balancer,
    weir.Shedder,
    weir.Throttle,
    weir.Backoff,
]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_constructors(cls: Callable[..., Any]) -> None:
    for name in keyword_params(cls):
        for v in HOSTILE:
            call_safely(cls, **{name: v})
    for v in HOSTILE:
        call_safely(cls, v)


def test_balancer_and_lease_methods() -> None:
    b = weir.Balancer(["a", 0, 2**64 - 1], weir.Config(limit=weir.Fixed(2), seed=1))
    for name in ("add", "remove", "set_lame_duck", "node", "__contains__", "due_check"):
        for v in HOSTILE:
            call_safely(getattr(b, name), v)
    for name in ("acquire", "try_acquire", "nodes"):
        for param in keyword_params(getattr(b, name)):
            for v in HOSTILE:
                call_safely(getattr(b, name), **{param: v})
    for v in HOSTILE:
        call_safely(b.set_lame_duck, "a", v)
        call_safely(b.due_check, 1.0, now=v)
        for healthy in (True, v):
            call_safely(b.report_check, v, healthy)
            call_safely(b.report_check, "a", healthy, now=v)
    lease = weir.Balancer(["n"], weir.Config(seed=1)).acquire()
    for name in ("release", "http_status", "raised"):
        for v in HOSTILE:
            call_safely(getattr(lease, name), v)
    for name in ("succeeded", "failed", "dropped", "ignore", "throttled", "client_error"):
        for v in HOSTILE:
            call_safely(getattr(lease, name), now=v)
    for v in HOSTILE:
        call_safely(lease.__exit__, v, None, None)
    # A classifier answering anything: the lease still goes back, and what escapes is an Exception.
    for v in HOSTILE:
        answering = weir.Balancer(["n"], weir.Config(seed=1), classify=lambda e, v=v: v)
        call_safely(answering.acquire().__exit__, RuntimeError, RuntimeError(), None)
        call_safely(answering.acquire().raised, TimeoutError())
        assert answering.stats().in_flight == 0
    st = b.stats()
    assert st.acquired == st.released_total + st.released_stale + st.in_flight


def test_overload_and_backoff_methods() -> None:
    s = weir.Shedder()
    t = weir.Throttle()
    bo = weir.Backoff()
    for v in HOSTILE:
        call_safely(s.allow, v)
        call_safely(s.allow, now=v)
        call_safely(s.overload_factor, v)
        call_safely(s.stats, now=v)
        call_safely(t.allow, v)
        call_safely(t.allow, now=v)
        call_safely(t.allow_retry, v)
        call_safely(t.accepted, v)
        call_safely(t.probability, v)
        call_safely(t.stats, now=v)
        call_safely(bo.step, v)
        call_safely(bo.on_failure, rng=v)
        call_safely(weir.rejection_probability, v, v, v)
        call_safely(weir.deterministic_subset, [1, 2, 3], v, v)
        call_safely(weir.random_subset, [1, 2, 3], v)
        call_safely(weir.shuffle, v, v)
        call_safely(weir.Outcome.from_http_status, v)
    p = s.allow()
    for v in HOSTILE:
        call_safely(p.success, now=v)
    assert s.stats()["in_flight"] <= 1
