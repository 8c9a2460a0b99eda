"""Metrics as Prometheus text: parsed by prometheus_client's own parser, the same values as stats() and
nodes(), the same bytes as Rust and C after the same trace, and the weir.prometheus collector."""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

import weir
from vectors import VECTORS, replay
from weir.prometheus import Collector

# The fixed format of tests/vectors/metrics/README.md.
SERVICE = 'or"d\\ers\nEU'


def samples(text: str) -> Dict[Tuple[str, Tuple[Tuple[str, str], ...]], float]:
    """Every sample of a text, parsed by prometheus_client: (name, sorted labels) -> value."""
    out: Dict[Tuple[str, Tuple[Tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            key = (s.name, tuple(sorted(s.labels.items())))
            assert key not in out, key
            out[key] = s.value
    return out


# Leases kept in flight by the tests (a lease collected by the garbage collector is released).
HELD: list = []


def make() -> weir.Balancer[str]:
    """Three nodes, one in lame duck, one failed call, one call in flight."""
    b = weir.Balancer(["a", "b", "c"], weir.Config(seed=3))
    b.set_lame_duck("c")
    lease = b.try_acquire(now=1.0)
    assert lease is not None
    lease.release(weir.Outcome.FAILURE, now=1.5)
    held = b.try_acquire(now=2.0)
    assert held is not None
    HELD.append(held)
    return b


def test_the_text_parses_and_holds_the_stats_and_snapshot_values() -> None:
    b = make()
    got = samples(b.metrics_text(now=2.0))
    st = b.stats()
    assert got[("weir_acquired_total", ())] == st.acquired == 2
    assert got[("weir_in_flight", ())] == st.in_flight == 1
    assert got[("weir_released_total", (("outcome", "failure"),))] == 1
    assert got[("weir_nodes", (("state", "lame_duck"),))] == st.lame_duck_nodes == 1
    assert got[("weir_waits_ended_total", (("result", "timed_out"),))] == 0
    for n in b.nodes(now=2.0):
        node = (("node", n.node),)
        assert got[("weir_node_in_flight", node)] == n.in_flight
        assert got[("weir_node_limit", node)] == n.limit
        assert got[("weir_node_penalty", node)] == n.penalty
        assert got[("weir_node_failures", node)] == n.failures
        assert got[("weir_node_success_rate", node)] == n.success_rate
        active = 1.0 if n.state == "active" else 0.0
        assert got[("weir_node_state", node + (("state", "active"),))] == active
        assert got[("weir_node_state", node + (("state", "lame_duck"),))] == 1.0 - active
        for o in weir.Outcome:
            assert got[("weir_node_released_total", node + (("outcome", o.name.lower()),))] == n.released(o)
    assert sum(v for k, v in got.items() if k[0] == "weir_node_released_total") == st.released_total
    assert sum(1 for k in got if k[0] == "weir_node_limit") == 3


def test_prefix_labels_and_node_names_round_trip_through_the_parser() -> None:
    b = make()
    names = {"a": 'alpha "1"', "b": "beta\\2"}
    text = b.metrics_text("app:lb", {"service": SERVICE, "zone": "eu-1"}, names, now=2.0)
    got = samples(text)
    base = (("service", SERVICE), ("zone", "eu-1"))
    for node, name in [("a", 'alpha "1"'), ("b", "beta\\2"), ("c", "c")]:  # c: not in the mapping
        key = ("app:lb_node_limit", tuple(sorted(base + (("node", name),))))
        assert key in got, (key, text)
    # A callable, and pairs instead of a mapping; an empty prefix.
    text = b.metrics_text("", [("service", "x")], lambda n: n.upper(), now=2.0)
    assert ("node_in_flight", (("node", "A"), ("service", "x"))) in samples(text)


def test_refused_formats_raise_value_error_and_bad_types_type_error() -> None:
    b = make()
    for prefix in ("9lives", "a-b", "é"):
        with pytest.raises(ValueError, match="prefix"):
            b.metrics_text(prefix)
    for labels in ({"node": "x"}, {"__x": "y"}, {"a b": "y"}, [("a", "1"), ("a", "2")]):
        with pytest.raises(ValueError, match="constant label"):
            b.metrics_text("weir", labels)
    with pytest.raises(TypeError):
        b.metrics_text("weir", {"a": 1})  # type: ignore[dict-item]
    with pytest.raises(TypeError):
        b.metrics_text("weir", None, lambda n: 5)  # type: ignore[arg-type,return-value]
    with pytest.raises(ZeroDivisionError):
        b.metrics_text("weir", None, lambda n: str(1 // 0))
    with pytest.raises(ValueError):
        weir.Backoff().metrics_text("bad prefix")


def test_the_overload_tools_write_their_families() -> None:
    s = weir.Shedder()
    promise = s.allow(cpu=400, now=1.0)
    got = samples(s.metrics_text(cpu=400, now=1.0))
    assert got[("weir_shedder_in_flight", ())] == 1
    promise.success(now=1.1)
    assert samples(s.metrics_text(now=1.1))[("weir_shedder_completed_total", (("result", "success"),))] == 1
    assert got[("weir_shedder_allowed_total", ())] == 1
    assert got[("weir_shedder_cpu_usage_ratio", ())] == 0.4
    t = weir.Throttle(seed=1)
    t.allow(weir.Criticality.SHEDDABLE, now=1.0)
    got = samples(t.metrics_text(labels={"service": "s"}, now=1.0))
    key = (("criticality", "SHEDDABLE"), ("service", "s"))
    assert got[("weir_throttle_requests_total", key)] == 1
    assert got[("weir_throttle_rejection_probability", key)] == t.probability(weir.Criticality.SHEDDABLE, now=1.0)
    k = weir.Backoff(initial=0.25, jitter="none")
    k.on_failure()
    got = samples(k.metrics_text())
    assert got[("weir_backoff_delay_seconds", ())] == 0.25
    assert got[("weir_backoff_steps_total", (("direction", "up"),))] == 1


@pytest.mark.parametrize("name", ["cascade", "default"])
def test_after_a_trace_the_text_is_the_committed_one(name: str) -> None:
    # The same file the Rust and C suites compare their text with, byte for byte.
    want = (VECTORS / "metrics" / f"{name}.prom").read_text()
    got: Dict[str, str] = {}

    def at_end(b: Any, t: int) -> None:
        got["text"] = b.metrics_text("weir", {"service": SERVICE}, now=t / 1e9)

    replay(VECTORS / f"{name}.trace", at_end)
    assert got["text"] == want


def test_every_committed_text_is_compared() -> None:
    assert sorted(p.stem for p in (VECTORS / "metrics").glob("*.prom")) == ["cascade", "default"]


def test_the_collector_serves_the_text_through_a_registry() -> None:
    b = make()
    registry = CollectorRegistry()
    c = Collector(b, weir.Backoff(), prefix="svc", labels={"service": "orders"}, names=str.upper).register(registry)
    assert isinstance(c, Collector)
    out = generate_latest(registry).decode()
    got = samples(out)
    assert got[("svc_acquired_total", (("service", "orders"),))] == 2
    assert got[("svc_node_limit", (("node", "A"), ("service", "orders")))] == b.node("a").limit
    assert got[("svc_backoff_delay_seconds", (("service", "orders"),))] == 0.0
    assert "# TYPE svc_acquired_total counter" in out
    # Every family reaches the registry: one TYPE line each.
    assert out.count("# TYPE svc_") == len(list(text_string_to_metric_families(c.text())))
    with pytest.raises(ValueError):
        Collector(b, prefix="1bad")
    with pytest.raises(TypeError):
        Collector(object())  # type: ignore[arg-type]


def test_metrics_text_is_one_line_per_sample() -> None:
    text = make().metrics_text("weir", {"service": SERVICE}, {"a": "x\ny"}, now=2.0)
    assert "\n\n" not in text and text.endswith("\n")
    assert all(line.startswith(("# HELP ", "# TYPE ", "weir_")) for line in text.splitlines())


def test_metrics_read_while_threads_hammer_end_with_their_counts() -> None:
    import threading

    b = weir.Balancer([f"n{i}" for i in range(4)], weir.Config(limit=weir.Fixed(2), seed=5))
    released = [0] * 4
    busy = [0] * 4
    done = threading.Event()
    start = threading.Barrier(5)

    def worker(k: int) -> None:
        start.wait()
        for _ in range(5_000):
            lease = b.try_acquire()
            if lease is None:
                busy[k] += 1
                continue
            lease.release(weir.Outcome.SUCCESS)
            released[k] += 1

    readings: List[int] = []

    def reader() -> None:
        start.wait()
        while True:
            # Every reading parses, whole, while the counters move.
            readings.append(len(list(text_string_to_metric_families(b.metrics_text()))))
            if done.is_set():
                break

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    watcher = threading.Thread(target=reader)
    for t in threads + [watcher]:
        t.start()
    for t in threads:
        t.join()
    done.set()
    watcher.join()
    assert readings and set(readings) == {18}  # the balancer's and the nodes' families, every time
    got = samples(b.metrics_text())
    assert got[("weir_acquired_total", ())] == sum(released)
    assert got[("weir_released_total", (("outcome", "success"),))] == sum(released)
    per_node = [
        v for (name, labels), v in got.items() if name == "weir_node_released_total" and ("outcome", "success") in labels
    ]
    assert len(per_node) == 4 and sum(per_node) == sum(released)
    assert got[("weir_rejected_total", (("cause", "all_busy"),))] == sum(busy)
    assert got[("weir_in_flight", ())] == 0
