"""Health checks, `Balancer.due_check` and `Balancer.report_check`: a node avoided since a failure is named
for a check once its failures have been quiet `quiet` seconds, once per period, and the check's answer
brings it back (healthy) or keeps it out for another period (failed), without a caller's call."""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

import pytest

import weir
from test_probes import T0, two_at_once

QUIET = 2.0


def one_failure(config: weir.Config | None = None) -> weir.Balancer[str]:
    """Two nodes, `a` failed once at `T0` (and `b` answered well)."""
    b = weir.Balancer(["a", "b"], config or weir.Config(seed=1))
    # Two calls at once take both nodes, whichever the balancer starts with.
    first, second = b.acquire(now=T0), b.acquire(now=T0)
    leases = {first.node: first, second.node: second}
    assert set(leases) == {"a", "b"}
    leases["b"].succeeded(now=T0)
    leases["a"].failed(now=T0)
    return b


def test_a_failed_node_is_due_once_quiet_and_a_healthy_check_brings_it_back() -> None:
    b = one_failure()
    assert b.node("a", now=T0).penalty > 5
    # Not before its failures have been quiet for the period; b, which carries no penalty, never.
    assert b.due_check(QUIET, now=T0) is None
    assert b.due_check(QUIET, now=T0 + 1.0) is None
    assert two_at_once(b, T0 + 1.0) == ["b", "b"]
    # Past it, a is named, once: the check is under way.
    assert b.due_check(QUIET, now=T0 + 2.5) == "a"
    assert b.due_check(QUIET, now=T0 + 2.5) is None
    assert b.due_check(QUIET, now=T0 + 3.0) is None
    # It answered well: all its failures are forgiven and it takes calls again.
    b.report_check("a", True, now=T0 + 2.6)
    back = b.node("a", now=T0 + 2.6)
    assert back.penalty == 0.0 and back.failures == 0.0
    assert b.due_check(QUIET, now=T0 + 10.0) is None
    assert sorted(two_at_once(b, T0 + 10.0)) == ["a", "b"]


def test_a_failed_check_keeps_the_node_out_for_another_period() -> None:
    b = one_failure()
    failures = b.node("a", now=T0 + 2.5).failures
    assert b.due_check(QUIET, now=T0 + 2.5) == "a"
    # The check took a second and failed: a's failures are dated T0 + 3.5, so it is not due at T0 + 4.6
    # (2.1 s after it was named, 1.1 s after the failure) but is once 2 s have passed since the report.
    b.report_check("a", False, now=T0 + 3.5)
    assert b.node("a", now=T0 + 3.5).failures > failures
    assert b.due_check(QUIET, now=T0 + 4.6) is None
    assert two_at_once(b, T0 + 4.6) == ["b", "b"]
    assert b.due_check(QUIET, now=T0 + 5.6) == "a"


def test_a_check_is_not_a_call() -> None:
    b = one_failure()
    before, node_before = b.stats(), b.node("a", now=T0)
    assert b.due_check(QUIET, now=T0 + 2.5) == "a"
    b.report_check("a", False, now=T0 + 2.6)
    b.report_check("a", True, now=T0 + 2.7)
    after, node_after = b.stats(), b.node("a", now=T0 + 2.7)
    assert after == before
    assert node_after.by_outcome == node_before.by_outcome and node_after.limit == node_before.limit
    assert node_after.in_flight == 0 and node_after.penalty == 0.0


def test_any_member_may_be_reported_and_quiet_zero_names_at_once() -> None:
    b = one_failure()
    # b was never named: a healthy report changes nothing of it, a failed one gives it a penalty.
    b.report_check("b", True, now=T0 + 1.0)
    assert b.node("b", now=T0 + 1.0).penalty == 0.0
    b.report_check("b", False, now=T0 + 1.0)
    assert b.node("b", now=T0 + 1.0).penalty > 0
    # Quiet 0: every avoided node is due at once, one per call, the quietest first: a (failed at T0), then
    # b (at T0 + 1), and naming one never leaves it out.
    assert b.due_check(0, now=T0 + 2.0) == "a"
    assert b.due_check(0.0, now=T0 + 2.0) == "b"
    assert b.due_check(timedelta(0), now=T0 + 2.0) in ("a", "b")
    # A period longer than anything that follows never names a node.
    assert b.due_check(1e9, now=T0 + 1000.0) is None


def test_a_node_with_a_call_in_flight_or_in_lame_duck_is_not_named() -> None:
    b = weir.Balancer(["a", "b"], weir.Config(limit=weir.Fixed(4), seed=1))
    leases = [b.acquire(now=T0) for _ in range(4)]
    on_a = [lease for lease in leases if lease.node == "a"]
    assert len(on_a) >= 2
    # One of a's calls fails while another is still in flight: left to that call's outcome.
    on_a[0].failed(now=T0)
    for lease in leases:
        if lease is not on_a[1] and not lease.released:
            lease.succeeded(now=T0)
    assert b.node("a", now=T0).penalty > 0
    assert b.due_check(QUIET, now=T0 + 2.5) is None
    on_a[1].ignore(now=T0 + 2.5)
    # In lame duck it is out of rotation: not named either, and named once back.
    b.set_lame_duck("a")
    assert b.due_check(QUIET, now=T0 + 2.5) is None
    b.set_lame_duck("a", False)
    assert b.due_check(QUIET, now=T0 + 2.5) == "a"


def test_the_monotonic_clock_is_read_without_now() -> None:
    b = weir.Balancer(["a"], weir.Config(seed=1))
    b.acquire().failed()
    assert b.due_check(3600.0) is None
    assert b.due_check(0.0) == "a"
    b.report_check("a", True)
    assert b.node("a").penalty == 0.0


def test_an_unknown_node_is_refused_and_changes_nothing() -> None:
    b = one_failure()
    before = b.nodes(now=T0)
    for node in ("c", 7, ["unhashable"]):
        with pytest.raises((weir.UnknownNode, TypeError)):
            b.report_check(node, True, now=T0)
    with pytest.raises(weir.UnknownNode, match="node 'c' is not a member"):
        b.report_check("c", True, now=T0)
    b.remove("a")
    with pytest.raises(weir.UnknownNode, match="node 'a' is not a member"):
        b.report_check("a", True, now=T0)
    assert b.nodes(now=T0) == before[1:]
    # A removed node is no longer named.
    assert b.due_check(0, now=T0 + 10.0) is None


def test_the_weighted_family_takes_no_checks() -> None:
    b = weir.Balancer(["a", "b"], weir.Config.cascade(seed=1))
    for _ in range(20):
        b.acquire(now=T0).failed(now=T0)
    before = b.nodes(now=T0)
    with pytest.raises(weir.WeirError, match="^health checks are read by the lowest-score family only$") as e:
        b.report_check("a", True, now=T0)
    assert type(e.value) is weir.WeirError
    # An unknown node is still UnknownNode, and nothing is ever due.
    with pytest.raises(weir.UnknownNode):
        b.report_check("c", True, now=T0)
    assert b.due_check(0, now=T0 + 100.0) is None
    assert b.nodes(now=T0) == before


@pytest.mark.parametrize(
    "quiet, error, message",
    [
        (-1, ValueError, "quiet must not be negative"),
        (-0.5, ValueError, "quiet must not be negative"),
        (timedelta(seconds=-1), ValueError, "quiet must not be negative"),
        (math.nan, ValueError, "quiet must not be NaN"),
        (math.inf, ValueError, "quiet is too large"),
        (1e11, ValueError, "quiet is too large"),
        (2**64, ValueError, "quiet is too large"),
        (10**400, ValueError, "quiet is too large"),
        (timedelta(days=300_000), ValueError, "quiet is too large"),
        ("2", TypeError, "quiet must be a number of seconds .* not str"),
        (True, TypeError, "quiet must be a number of seconds .* not bool"),
        (None, TypeError, "quiet must be a number of seconds .* not NoneType"),
    ],
    ids=repr,
)
def test_a_bad_quiet_period_is_refused(quiet: Any, error: type, message: str) -> None:
    b = one_failure()
    with pytest.raises(error, match=message):
        b.due_check(quiet, now=T0 + 2.5)
    # Nothing was claimed: a is named by the next good call.
    assert b.due_check(QUIET, now=T0 + 2.5) == "a"


def test_bad_arguments_of_a_report_are_refused() -> None:
    b = one_failure()
    for healthy in (1, None, "yes"):
        with pytest.raises(TypeError, match="healthy must be a bool"):
            b.report_check("a", healthy, now=T0)
    with pytest.raises(ValueError, match="now must not be negative"):
        b.report_check("a", True, now=-1.0)
    with pytest.raises(ValueError, match="now must not be NaN"):
        b.due_check(QUIET, now=math.nan)
    assert b.node("a", now=T0).penalty > 5
