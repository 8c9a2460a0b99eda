"""Retrying elsewhere: Balancer.acquire_excluding and RetryBudget."""

from __future__ import annotations

from typing import Any

import pytest

import weir


def test_a_retry_goes_elsewhere_while_another_has_room() -> None:
    b: weir.Balancer[str] = weir.Balancer(["a", "b", "c", "d"], weir.Config(seed=1))
    rng = weir.Rng(5)
    seen: dict[str, int] = {}
    for i in range(200):
        lease = b.acquire_excluding(["a", "c", "not-a-member", ["unhashable"]], now=float(i), rng=rng)
        seen[lease.node] = seen.get(lease.node, 0) + 1
        lease.succeeded(now=float(i) + 0.5)
    assert set(seen) == {"b", "d"}


def test_all_or_nothing_excluded_is_the_ordinary_acquire() -> None:
    for tried in ([], ["a", "b", "c"], (n for n in ["x"])):
        plain: weir.Balancer[str] = weir.Balancer(["a", "b", "c"], weir.Config(seed=2))
        retrying: weir.Balancer[str] = weir.Balancer(["a", "b", "c"], weir.Config(seed=2))
        r1, r2 = weir.Rng(9), weir.Rng(9)
        for i in range(100):
            one = plain.acquire(now=float(i), rng=r1)
            two = retrying.acquire_excluding(tried, now=float(i), rng=r2)
            assert one.node == two.node
            for lease in (one, two):
                if lease.node == "b":
                    lease.failed(now=float(i) + 0.5)
                else:
                    lease.succeeded(now=float(i) + 0.5)
        assert r1.next_u64() == r2.next_u64()  # the same draws


def test_refusals_are_those_of_acquire() -> None:
    empty: weir.Balancer[str] = weir.Balancer()
    with pytest.raises(weir.NoNodes):
        empty.acquire_excluding(["a"], now=0.0)
    assert empty.stats().rejected_no_active == 1
    one: weir.Balancer[str] = weir.Balancer(["a"], weir.Config(limit=weir.Fixed(1)))
    held = one.acquire_excluding(["a"], now=0.0)
    assert held.node == "a"  # the only node, tried already: the ordinary acquire takes it
    with pytest.raises(weir.NoCapacity):
        one.acquire_excluding([], now=0.0)
    held.succeeded(now=1.0)


def test_retry_budget_admits_the_ratio_plus_the_floor() -> None:
    budget = weir.RetryBudget(per_second=0.1)  # a floor of 1 over 10 s
    assert (budget.window, budget.buckets, budget.ratio, budget.per_second) == (10.0, 10, 0.2, 0.1)
    for _ in range(50):
        budget.request(now=1.0)
    admitted = 0
    for _ in range(20):
        try:
            budget.try_retry(now=1.0)
            admitted += 1
        except weir.RetryBudgetExhausted as e:
            assert (e.retries, e.requests) == (11, 50)
            assert isinstance(e, weir.WeirError)
    assert admitted == 11  # 0.2 x 50 + 1
    stats = budget.stats(now=1.0)
    assert stats == {
        "requests": 50,
        "retries": 11,
        "denied": 9,
        "window_requests": 50,
        "window_retries": 11,
        "available": 0,
    }
    # A whole window later, the floor is back.
    budget.try_retry(now=20.0)
    assert budget.stats(now=20.0)["window_retries"] == 1


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"ratio": float("nan")}, "ratio"),
        ({"ratio": 1e300}, "ratio"),
        ({"per_second": -1.0}, "per_second"),
        ({"buckets": 0}, "buckets"),
        ({"window": 0.0}, "window"),
    ],
)
def test_retry_budget_validation(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        weir.RetryBudget(**kwargs)


def test_retry_budget_metrics_text() -> None:
    budget = weir.RetryBudget(per_second=0.0)
    for _ in range(10):
        budget.request(now=1.0)
    budget.try_retry(now=1.0)
    text = budget.metrics_text(labels={"service": "api"}, now=1.0)
    assert 'weir_retry_budget_requests_total{service="api"} 10\n' in text
    assert 'weir_retry_budget_retries_total{service="api"} 1\n' in text
    assert 'weir_retry_budget_available{service="api"} 1\n' in text
    assert "# TYPE weir_retry_budget_denied_total counter\n" in text
