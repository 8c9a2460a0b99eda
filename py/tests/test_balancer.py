"""Balancer: construction, membership, acquire forms, snapshots, stats and every validation error."""

from __future__ import annotations

import dataclasses
import gc
import math
import threading
import time
from datetime import timedelta
from typing import Any

import pytest

import weir


def fixed(n: int, nodes: Any = ("a", "b"), max_waiters: int = 1024, capacity: Any = None) -> weir.Balancer:
    return weir.Balancer(list(nodes), weir.Config(limit=weir.Fixed(n), max_waiters=max_waiters, seed=1), capacity=capacity)


def test_defaults_are_the_cores() -> None:
    b = weir.Balancer(["x"], weir.Config(seed=3))
    assert b.config == weir.Config(algorithm=weir.LowestScore(), limit=weir.Ciad(fast_start=True), seed=3)
    assert b.config.algorithm == weir.LowestScore() and b.config.max_waiters == 1024
    assert b.capacity == 16
    assert repr(b) == "<weir.Balancer 1 nodes, capacity 16, algorithm LowestScore, limit Ciad>"
    # No config is the default configuration.
    assert weir.Balancer(config=None).config.algorithm == weir.LowestScore()


def test_the_cascade_preset() -> None:
    s = weir.Balancer(["a"], weir.Config.cascade(seed=0))
    assert isinstance(s, weir.Balancer)
    assert s.config == weir.Config(algorithm=weir.Weighted(), limit=weir.Fixed(100), seed=0)
    w = s.config.algorithm
    assert isinstance(w, weir.Weighted)
    assert (w.health, w.draw, w.weight_exponent, w.floor) == (weir.Buckets(), weir.Draw.CASCADE, 3.0, 1e-4)
    assert repr(s).endswith("algorithm Weighted(cascade), limit Fixed>")


def test_random_seed_when_none() -> None:
    seeds = {weir.Balancer().config.seed for _ in range(4)}
    assert len(seeds) > 1 and None not in seeds
    # One configuration without a seed: each balancer draws its own, and tells it.
    shared = weir.Config(limit=weir.Fixed(3))
    a, b = weir.Balancer(["n"], shared), weir.Balancer(["n"], shared)
    assert shared.seed is None and a.config.seed != b.config.seed
    assert a.config == weir.Config(limit=weir.Fixed(3), seed=a.config.seed)
    # balancer.config, seed included, configures another balancer the same way.
    assert weir.Balancer(["n"], a.config).config == a.config


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"capacity": 0}, ValueError, "capacity must be between 1 and 65536"),
        ({"capacity": 65537}, ValueError, "capacity"),
        ({"capacity": True}, TypeError, "capacity must be an int, not bool"),
        ({"config": {"seed": 1}}, TypeError, "config must be a weir.Config, not dict"),
        ({"config": weir.LowestScore()}, TypeError, r"not LowestScore \(an algorithm goes in weir.Config\(algorithm=...\)\)"),
        ({"config": weir.Fixed(3)}, TypeError, r"not Fixed \(a limit goes in weir.Config\(limit=...\)\)"),
        ({"seed": 1}, TypeError, "seed"),
        ({"limit": weir.Fixed(1)}, TypeError, "limit"),
        ({"policy": "cascade"}, TypeError, "policy"),
    ],
)
def test_bad_construction(kwargs: dict[str, Any], exc: type[Exception], match: str) -> None:
    with pytest.raises(exc, match=match):
        weir.Balancer(["a"], **kwargs)


def test_bad_nodes_argument() -> None:
    with pytest.raises(TypeError, match="not a str"):
        weir.Balancer("abc")
    with pytest.raises(TypeError):
        weir.Balancer(5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="unhashable"):
        weir.Balancer([["a"]])
    with pytest.raises(ValueError, match="capacity .2. is smaller than the 3 nodes"):
        weir.Balancer(["a", "b", "c"], capacity=2)
    with pytest.raises(weir.DuplicateNode, match="'a' is already a member"):
        weir.Balancer(["a", "a"])


def test_nodes_are_any_hashable_objects() -> None:
    @dataclasses.dataclass(frozen=True)
    class Backend:
        host: str
        port: int

    nodes = ["10.0.0.7:8080", ("h", 1), Backend("h", 2), 7, 2**64 - 1, -3, 1.5, None]
    b = weir.Balancer(nodes, weir.Config(limit=weir.Fixed(1), seed=2))
    assert len(b) == len(nodes)
    assert list(b) == nodes
    for n in nodes:
        assert n in b
    assert ["x"] not in b  # unhashable: simply not a member
    got = []
    for _ in nodes:
        lease = b.acquire()
        got.append(lease)
    assert sorted(map(repr, (l.node for l in got))) == sorted(map(repr, nodes))
    # The objects themselves, not copies.
    backend = next(l.node for l in got if isinstance(l.node, Backend))
    assert backend is nodes[2]
    # Ints in 0..2**64 are their own ids; other objects get ids from 2**63.
    ids = {repr(l.node): l.id for l in got}
    assert ids["7"] == 7 and ids[repr(2**64 - 1)] == 2**64 - 1
    assert ids["-3"] >= 2**63
    for l in got:
        l.succeeded()


def test_membership_errors_leave_state_intact() -> None:
    b = fixed(5, capacity=2)
    before = (b.stats(), [n.node for n in b.nodes()])
    with pytest.raises(weir.DuplicateNode):
        b.add("a")
    with pytest.raises(weir.CapacityFull, match="all 2 node slots"):
        b.add("c")
    with pytest.raises(weir.UnknownNode, match="'zz' is not a member"):
        b.remove("zz")
    with pytest.raises(weir.UnknownNode):
        b.set_lame_duck("zz")
    with pytest.raises(weir.UnknownNode):
        b.node("zz")
    with pytest.raises(TypeError, match="unhashable"):
        b.add({})
    with pytest.raises(TypeError, match="lame_duck must be a bool"):
        b.set_lame_duck("a", 1)
    assert (b.stats(), [n.node for n in b.nodes()]) == before
    assert isinstance(weir.UnknownNode("x"), LookupError)
    assert isinstance(weir.DuplicateNode("x"), ValueError)


def test_add_remove_lame_duck() -> None:
    b = fixed(1, nodes=["a"])
    b.add("b")
    assert len(b) == 2
    b.set_lame_duck("a")
    assert b.node("a").state == "lame_duck"
    on_b = b.acquire()
    assert on_b.node == "b"
    with pytest.raises(weir.NoCapacity):
        b.acquire()
    # Garbage-collected unreleased: the slot comes back, released as IGNORED.
    del on_b
    gc.collect()
    assert b.stats().released(weir.Outcome.IGNORED) == 1
    on_b = b.acquire()
    assert on_b.node == "b"
    b.set_lame_duck("a", False)
    lease = b.acquire()
    assert lease.node == "a"
    on_b.succeeded()
    b.remove("a")
    assert "a" not in b and len(b) == 1
    # A lease of a removed node is released without recording: False, and counted as stale.
    assert lease.succeeded() is False
    assert b.stats().released_stale == 1
    b.add("a")  # the slot drained: re-adding works
    assert "a" in b


def test_slots_in_use_counts_draining_slots() -> None:
    b = fixed(1, nodes=["a"])
    assert b.slots_in_use == 1
    lease = b.acquire()
    b.remove("a")
    assert (len(b), b.slots_in_use) == (0, 1)  # a's slot drains until its lease ends
    lease.ignore()
    assert b.slots_in_use == 0


def test_node_outcome_counts_start_at_zero_in_a_reused_slot() -> None:
    b = fixed(10, nodes=["a"], capacity=1)
    for outcome in (weir.Outcome.FAILURE, weir.Outcome.SUCCESS, weir.Outcome.FAILURE, weir.Outcome.THROTTLED):
        b.acquire(now=1.0).release(outcome, now=2.0)
    a = b.node("a", now=2.0)
    assert a.by_outcome == (1, 2, 0, 0, 1, 0)
    assert a.released(weir.Outcome.FAILURE) == 2 and a.released(weir.Outcome.DROPPED) == 0
    assert a.by_outcome == b.stats().by_outcome  # one node since the start: the balancer's counts
    # "a" leaves with a lease in flight; "b" takes the one slot once it is back (stale).
    late = b.acquire(now=3.0)
    b.remove("a")
    with pytest.raises(weir.CapacityFull):
        b.add("b")
    assert late.failed(now=4.0) is False
    b.add("b")
    assert b.node("b", now=4.0).by_outcome == (0, 0, 0, 0, 0, 0)
    assert b.stats().by_outcome == (1, 2, 0, 0, 1, 0) and b.stats().released_stale == 1
    b.acquire(now=5.0).failed(now=6.0)
    assert b.node("b", now=6.0).released(weir.Outcome.FAILURE) == 1
    assert b.stats().released(weir.Outcome.FAILURE) == 3


def test_snapshots_read_themselves() -> None:
    # The counts name their outcomes, and still behave as the tuple they were: indexed by an outcome
    # (or its code), summed, compared with a tuple.
    b = fixed(10, nodes=["a"])
    for outcome in (weir.Outcome.FAILURE, weir.Outcome.SUCCESS, weir.Outcome.FAILURE, weir.Outcome.THROTTLED):
        b.acquire(now=1.0).release(outcome, now=2.0)
    counts = b.stats().by_outcome
    assert isinstance(counts, weir.OutcomeCounts) and isinstance(counts, tuple)
    assert repr(counts) == "OutcomeCounts(success=1, failure=2, dropped=0, ignored=0, throttled=1, client_error=0)"
    assert counts[weir.Outcome.FAILURE] == counts.failure == counts[1] == 2
    assert counts[weir.Outcome.TIMEOUT] == counts.dropped == 0
    assert counts == (1, 2, 0, 0, 1, 0) and sum(counts) == b.stats().released_total == 4
    assert weir.OutcomeCounts._fields == tuple(o.name.lower() for o in weir.Outcome)
    a = b.node("a", now=2.0)
    assert isinstance(a.by_outcome, weir.OutcomeCounts) and a.by_outcome == counts
    # The repr shows the node as given and its counts by name, not the core's id (2**63 for the first
    # node that is not an int).
    assert a.id == 2**63
    shown = repr(a)
    assert shown.startswith("NodeInfo(node='a', state='active', ") and str(a.id) not in shown, shown
    assert "by_outcome=OutcomeCounts(success=1, failure=2, " in shown, shown
    assert repr(weir.Balancer([("10.0.0.7", 8080)]).nodes()[0]).startswith("NodeInfo(node=('10.0.0.7', 8080), ")


def test_acquire_try_acquire_no_capacity_no_nodes() -> None:
    b = fixed(1, nodes=["a"])
    assert weir.Balancer().try_acquire.__doc__
    with pytest.raises(weir.NoNodes, match="no node is in rotation"):
        weir.Balancer().acquire()
    with pytest.raises(weir.NoNodes):
        weir.Balancer().try_acquire()
    held = b.try_acquire()
    assert held is not None and held.node == "a" and held.in_flight == 1
    assert b.try_acquire() is None
    with pytest.raises(weir.NoCapacity, match="every node is at its concurrency limit"):
        b.acquire()
    st = b.stats()
    assert (st.rejected_all_busy, st.in_flight, st.acquired) == (2, 1, 1)
    held.ignore()
    assert isinstance(weir.NoCapacity(), weir.WeirError) and isinstance(weir.NoNodes(), weir.WeirError)


def test_waiting_acquire_gets_a_released_slot() -> None:
    b = fixed(1, nodes=["a"])
    held = b.acquire()
    t0 = time.monotonic()
    with pytest.raises(weir.NoCapacity, match="within the timeout"):
        b.acquire(timeout=0.05)
    assert time.monotonic() - t0 >= 0.04
    threading.Timer(0.05, held.succeeded).start()
    lease = b.acquire(timeout=timedelta(seconds=5))
    assert lease.node == "a"
    lease.succeeded()
    with pytest.raises(TypeError, match="cannot be combined"):
        b.acquire(timeout=1.0, now=1.0)
    with pytest.raises(ValueError, match="timeout must not be negative"):
        b.acquire(timeout=-1.0)
    with pytest.raises(weir.NoNodes):
        weir.Balancer().acquire(timeout=0.01)
    no_wait = fixed(1, nodes=["a"], max_waiters=0)
    h = no_wait.acquire()
    with pytest.raises(weir.NoCapacity, match="waiting is off"):
        no_wait.acquire(timeout=1.0)
    h.succeeded()


def test_explicit_rng_reproduces_draws() -> None:
    def picks(seed: int) -> list[Any]:
        b = weir.Balancer(list(range(8)), weir.Config.cascade(seed=0))
        rng = weir.Rng(seed)
        out = []
        for i in range(50):
            lease = b.acquire(now=float(i), rng=rng)
            out.append(lease.node)
            lease.succeeded(now=i + 0.5)
        return out

    assert picks(5) == picks(5)
    assert picks(5) != picks(6)
    r = weir.Rng(1)
    assert r.next_u64() != r.next_u64()
    with pytest.raises(ValueError, match="seed must be between"):
        weir.Rng(-1)
    with pytest.raises(TypeError):
        fixed(1).acquire(rng=3)  # type: ignore[arg-type]


def test_nodes_snapshot_and_stats_dataclasses() -> None:
    b = fixed(3, nodes=["a"])
    lease = b.acquire(now=10.0)
    lease.failed(now=10.5)
    (info,) = b.nodes(now=11.0)
    assert isinstance(info, weir.NodeInfo)
    assert dataclasses.is_dataclass(info)
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.limit = 3  # type: ignore[misc]
    assert (info.node, info.state, info.limit, info.in_flight, info.has_data) == ("a", "active", 3, 0, True)
    assert info.failures > 0.9 and info.penalty > 10
    assert b.node("a", now=11.0) == info
    st = b.stats()
    assert isinstance(st, weir.Stats)
    assert st.released(weir.Outcome.FAILURE) == 1 and st.released_total == 1
    assert st.acquired == st.released_total + st.released_stale + st.in_flight
    with pytest.raises(ValueError, match="now must not be NaN"):
        b.nodes(now=math.nan)


@pytest.mark.parametrize(
    "now, exc, match",
    [
        (math.nan, ValueError, "now must not be NaN"),
        (-1.0, ValueError, "now must not be negative"),
        (math.inf, ValueError, "now is too large"),
        (1e30, ValueError, "now is too large"),
        (-1, ValueError, "now must not be negative"),
        (True, TypeError, "not bool"),
        ("1", TypeError, "now must be a number of seconds"),
        (timedelta(seconds=-1), ValueError, "now must not be negative"),
    ],
)
def test_bad_now_changes_nothing(now: Any, exc: type[Exception], match: str) -> None:
    b = fixed(1, nodes=["a"])
    before = b.stats()
    with pytest.raises(exc, match=match):
        b.acquire(now=now)
    with pytest.raises(exc, match=match):
        b.try_acquire(now=now)
    assert b.stats() == before


def test_timedelta_and_int_now() -> None:
    b = fixed(1, nodes=["a"])
    lease = b.acquire(now=timedelta(seconds=2, microseconds=5))
    assert lease.acquired_at == 2.000005
    assert lease.succeeded(now=3) is True


def test_monotonic_is_the_default_clock() -> None:
    a = weir.monotonic()
    b = fixed(1, nodes=["a"])
    lease = b.acquire()
    assert a <= lease.acquired_at <= weir.monotonic()
    lease.succeeded()


def test_balancer_outlives_its_handle_while_leases_are_held() -> None:
    b = fixed(1, nodes=["a"])
    lease = b.acquire()
    del b
    gc.collect()
    assert lease.succeeded() is True
