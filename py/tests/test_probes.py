"""Timed probes, `LowestScore(probe_after=...)`: a node avoided since a failure is tried again once it has
gone `probe_after` seconds without one, whatever the call rate, and a good answer brings it back."""

from __future__ import annotations

import pytest

import weir

T0 = 100.0
CALLS = 50


def one_failure(probe_after: float) -> weir.Balancer[str]:
    """Two nodes, `a` failed once at `T0` (and `b` answered well), probation's forgiveness on."""
    algorithm = weir.LowestScore(forgiveness=0.5, probe_after=probe_after)
    b = weir.Balancer(["a", "b"], weir.Config(algorithm=algorithm, seed=1))
    # Two calls at once take both nodes, whichever the balancer starts with.
    first, second = b.acquire(now=T0), b.acquire(now=T0)
    leases = {first.node: first, second.node: second}
    assert set(leases) == {"a", "b"}
    leases["b"].succeeded(now=T0)
    leases["a"].failed(now=T0)
    assert b.node("a", now=T0).penalty > 5
    return b


def calls(b: weir.Balancer[str], now: float, n: int = CALLS) -> list[str]:
    """The nodes of `n` calls made one after another at `now`, each answered well."""
    out = []
    for _ in range(n):
        lease = b.acquire(now=now)
        out.append(lease.node)
        lease.succeeded(now=now)
    return out


def two_at_once(b: weir.Balancer[str], now: float) -> list[str]:
    """The nodes of two calls in flight together at `now` (each answered well): `["a", "b"]` in some order
    while `a` scores as well as `b`, `["b", "b"]` while its penalty outweighs a call in flight on `b`."""
    first, second = b.acquire(now=now), b.acquire(now=now)
    nodes = [first.node, second.node]
    first.succeeded(now=now)
    second.succeeded(now=now)
    return nodes


def test_a_failed_node_is_probed_after_the_period_and_comes_back() -> None:
    b = one_failure(probe_after=1.0)
    # Half the period later, a is still avoided, by every call.
    assert calls(b, T0 + 0.5) == ["b"] * CALLS
    assert two_at_once(b, T0 + 0.5) == ["b", "b"]
    # Past the period, the next call is a's probe.
    probe = b.acquire(now=T0 + 1.5)
    assert probe.node == "a"
    probe.succeeded(now=T0 + 1.5)
    # Its good answer takes all of a's failures: a scores as b does and takes calls again.
    back = b.node("a", now=T0 + 1.5)
    assert back.failures == 0.0 and back.penalty == 0.0
    assert sorted(two_at_once(b, T0 + 1.6)) == ["a", "b"]


def test_a_probe_that_fails_waits_another_period() -> None:
    b = one_failure(probe_after=1.0)
    probe = b.acquire(now=T0 + 1.5)
    assert probe.node == "a"
    probe.failed(now=T0 + 1.5)
    # The failure is written again at T0 + 1.5: nothing for a until T0 + 2.5.
    assert calls(b, T0 + 2.0) == ["b"] * CALLS
    assert calls(b, T0 + 2.25) == ["b"] * CALLS
    again = b.acquire(now=T0 + 3.0)
    assert again.node == "a"
    again.succeeded(now=T0 + 3.0)
    assert b.node("a", now=T0 + 3.0).failures == 0.0


@pytest.mark.parametrize("later", [1.5, 3.0])
def test_without_timed_probes_the_failed_node_stays_avoided(later: float) -> None:
    # The same failure with probe_after=0 (the default): nothing tries a again, as long as its penalty
    # outweighs a call in flight on b.
    b = one_failure(probe_after=0.0)
    assert calls(b, T0 + later) == ["b"] * CALLS
    assert two_at_once(b, T0 + later) == ["b", "b"]
    assert b.node("a", now=T0 + later).failures > 0.9
