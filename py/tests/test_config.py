"""The configuration classes: defaults, attributes, equality, and every validation error."""

from __future__ import annotations

import inspect
import math
from datetime import timedelta
from typing import Any, Callable

import pytest

import weir


def test_defaults_are_the_cores() -> None:
    c = weir.Config()
    assert (c.algorithm, c.limit, c.max_waiters, c.seed) == (weir.LowestScore(), weir.Ciad(fast_start=True), 1024, None)
    d = weir.LowestScore()
    assert (d.success_half_life, d.failure_half_life, d.throttled_cost, d.client_error_cost) == (1.0, 30.0, 0.1, 0.01)
    assert d.dropped_cost == 0.1 and weir.LowestScore(dropped_cost=1.0).dropped_cost == 1.0
    assert (d.penalty, d.ratio_penalty) == (10.0, 16.0)
    assert (d.probe_fraction, d.forgiveness, d.probe_after, d.slow_ratio) == (0.0, 0.0, 0.0, 0.0)
    assert weir.LowestScore(slow_ratio=2.5).slow_ratio == 2.5
    probation = weir.LowestScore(probe_fraction=0.01, forgiveness=0.5)
    assert (probation.probe_fraction, probation.forgiveness, probation.ratio_penalty) == (0.01, 0.5, 16.0)
    w = weir.Weighted()
    assert (w.health, w.draw, w.weight_exponent, w.floor) == (weir.Buckets(), weir.Draw.CASCADE, 3.0, 1e-4)
    bk = weir.Buckets()
    assert (bk.count, bk.width, bk.decay) == (6, 5.0, 3.0)
    assert weir.Ewma().half_life == 32
    assert weir.Fixed().limit == 100 and weir.Fixed(7).limit == 7
    a = weir.Aimd()
    assert (a.initial_limit, a.min_limit, a.max_limit, a.backoff_ratio, a.timeout) == (20, 20, 200, 0.9, 5.0)
    v = weir.Vegas()
    assert (v.initial_limit, v.max_limit, v.smoothing, v.probe_multiplier) == (20, 1000, 1.0, 30)
    assert (v.alpha, v.beta, v.threshold) == (weir.Log10(3), weir.Log10(6), weir.Log10(1))
    assert (v.increase, v.decrease, v.baseline_from_drops) == ("log10", "log10", True)
    g = weir.Gradient()
    assert (g.initial_limit, g.min_limit, g.max_limit, g.smoothing) == (50, 1, 1000, 0.2)
    assert (g.queue_size, g.rtt_tolerance, g.probe_interval, g.backoff_ratio) == (weir.Sqrt(4), 2.0, 1000, 0.9)
    assert weir.Gradient(probe_interval=None).probe_interval is None
    g2 = weir.Gradient2()
    assert (g2.initial_limit, g2.min_limit, g2.max_limit, g2.smoothing, g2.queue_size) == (20, 20, 200, 0.2, 4)
    assert (g2.long_window, g2.rtt_tolerance, g2.drop_backoff) == (600, 1.5, None)
    ci = weir.Ciad()
    assert (ci.initial_limit, ci.min_limit, ci.max_limit, ci.backoff_ratio, ci.fast_start) == (20, 1, 1_000_000, 0.9, False)
    assert ci.rtt_tolerance == 0.0 and weir.Ciad(rtt_tolerance=2).rtt_tolerance == 2.0
    assert weir.Ciad(rtt_tolerance=2.0) != c and "rtt_tolerance=2" in repr(weir.Ciad(rtt_tolerance=2.0))
    kn = weir.Knee()
    assert (kn.initial_limit, kn.min_limit, kn.max_limit, kn.backoff_ratio, kn.knee, kn.hold) == (20, 1, 1000, 0.9, 2.0, 1.75)
    assert kn.armed_for == 60.0
    assert weir.Knee(knee=3, hold=1).knee == 3.0 and weir.Knee(knee=3, hold=1).hold == 1.0
    assert weir.Knee(knee=1.0, hold=1.0, backoff_ratio=0.5, min_limit=8).min_limit == 8  # the rules' edges
    assert repr(kn) == "Knee(initial_limit=20, min_limit=1, max_limit=1000, backoff_ratio=0.9, knee=2.0, hold=1.75, armed_for=60.0)"
    wi = weir.Windowed()
    assert (wi.inner, wi.min_window, wi.max_window, wi.min_samples, wi.window) == (weir.Vegas(), 1.0, 1.0, 10, None)
    assert wi.min_rtt_threshold == 0.0001
    p = weir.Percentile(0.75, capacity=8)
    assert (p.percentile, p.capacity) == (0.75, 8)
    assert weir.Sqrt().min == 4 and weir.Log10().k == 1


def test_values_round_trip_and_compare() -> None:
    v = weir.Vegas(alpha=2, beta=weir.Log10(4), increase=1.25, smoothing=0.5)
    assert (v.alpha, v.beta, v.increase, v.smoothing) == (2, weir.Log10(4), 1.25, 0.5)
    assert v == weir.Vegas(alpha=2, beta=weir.Log10(4), increase=1.25, smoothing=0.5)
    assert v != weir.Vegas() and v != "Vegas"
    assert hash(weir.Ciad()) == hash(weir.Ciad())
    assert weir.Knee(hold=1.5) == weir.Knee(hold=1.5) and hash(weir.Knee(hold=1.5)) == hash(weir.Knee(hold=1.5))
    assert weir.Knee() != weir.Knee(hold=1.5) and weir.Knee() != weir.Ciad()
    # A knee limit inside a windowed one, and as a balancer's limit, comes back as it went in.
    wk = weir.Windowed(weir.Knee(initial_limit=4, backoff_ratio=0.75), min_samples=3)
    assert wk.inner == weir.Knee(initial_limit=4, backoff_ratio=0.75) and repr(wk).startswith("Windowed(Knee(initial_limit=4,")
    assert weir.Balancer(config=weir.Config(limit=wk)).config.limit == wk
    knee_config = weir.Config(limit=weir.Knee(initial_limit=4, max_limit=12), seed=1)
    assert weir.Balancer(config=knee_config).config == knee_config
    w = weir.Windowed(weir.Aimd(timeout=timedelta(milliseconds=40)), window=weir.Percentile(0.5, 4), min_samples=2)
    assert w.inner == weir.Aimd(timeout=0.04)
    assert w.window == weir.Percentile(0.5, capacity=4)
    for obj in (weir.LowestScore(), weir.Weighted(), weir.Config(), weir.Buckets(width=0.1), weir.Ewma(), v,
                weir.Gradient(), weir.Gradient2(), weir.Ciad(), weir.Knee(), w):
        assert repr(obj).startswith(type(obj).__name__ + "(")
    assert weir.LowestScore(success_half_life=timedelta(seconds=2)).success_half_life == 2.0
    assert weir.Balancer(config=weir.Config(limit=w)).config.limit == w


def test_the_algorithm_families_and_the_config() -> None:
    pick = weir.Weighted(health=weir.Ewma(half_life=20), draw=weir.Draw.WEIGHTED_PICK, weight_exponent=2.5)
    assert (pick.health, pick.draw, pick.weight_exponent, pick.floor) == (weir.Ewma(half_life=20), weir.Draw.WEIGHTED_PICK, 2.5, 1e-4)
    # A draw may be given by its value; None is the default health.
    assert weir.Weighted(draw="cascade_approx").draw is weir.Draw.CASCADE_APPROX
    assert weir.Weighted(health=None) == weir.Weighted()
    assert [d.value for d in weir.Draw] == ["cascade", "cascade_approx", "weighted_pick"]
    assert repr(pick) == "Weighted(health=Ewma(half_life=20), draw=Draw.WEIGHTED_PICK, weight_exponent=2.5, floor=0.0001)"
    assert repr(weir.LowestScore(penalty=4)) == (
        "LowestScore(success_half_life=1.0, failure_half_life=30.0, dropped_cost=0.1, throttled_cost=0.1, "
        "client_error_cost=0.01, penalty=4.0, ratio_penalty=16.0, probe_fraction=0.0, forgiveness=0.0, probe_after=0.0, "
        "slow_ratio=0.0)"
    )
    # Probation's fields read back from the repr, and each one sets the algorithm apart.
    probation = weir.LowestScore(probe_fraction=0.2, forgiveness=0.5)
    assert repr(probation).endswith("ratio_penalty=16.0, probe_fraction=0.2, forgiveness=0.5, probe_after=0.0, slow_ratio=0.0)")
    assert eval(repr(probation), {"LowestScore": weir.LowestScore}) == probation
    assert hash(probation) == hash(weir.LowestScore(probe_fraction=0.2, forgiveness=0.5))
    assert len({weir.LowestScore(), probation, weir.LowestScore(probe_fraction=0.2), weir.LowestScore(forgiveness=0.5)}) == 4
    probation_config = weir.Config(algorithm=probation, seed=3)
    assert weir.Balancer(config=probation_config).config.algorithm == probation
    # So does the slowness term's ratio, and a balancer built with it reports it.
    slow = weir.LowestScore(slow_ratio=2.0)
    assert repr(slow).endswith("forgiveness=0.0, probe_after=0.0, slow_ratio=2.0)")
    assert eval(repr(slow), {"LowestScore": weir.LowestScore}) == slow
    assert hash(slow) == hash(weir.LowestScore(slow_ratio=2.0))
    assert len({weir.LowestScore(), slow, weir.LowestScore(slow_ratio=4.0)}) == 3
    back = weir.Balancer(config=weir.Config(algorithm=slow, seed=3)).config.algorithm
    assert back == slow and back.slow_ratio == 2.0
    c = weir.Config(algorithm=pick, limit=weir.Fixed(7), max_waiters=0, seed=9)
    assert (c.algorithm, c.limit, c.max_waiters, c.seed) == (pick, weir.Fixed(7), 0, 9)
    assert repr(c) == f"Config(algorithm={pick!r}, limit=Fixed(7), max_waiters=0, seed=9)"
    assert repr(weir.Config()) == f"Config(algorithm={weir.LowestScore()!r}, limit={weir.Ciad(fast_start=True)!r}, max_waiters=1024, seed=None)"
    # Equal values compare and hash equal; a field apart makes them differ.
    assert c == weir.Config(algorithm=weir.Weighted(health=weir.Ewma(half_life=20), draw="weighted_pick", weight_exponent=2.5),
                            limit=weir.Fixed(7), max_waiters=0, seed=9)
    assert hash(weir.Config(seed=1)) == hash(weir.Config(seed=1))
    assert len({weir.Config(), weir.Config(seed=0), weir.Config(seed=1), weir.Config.cascade()}) == 4
    assert weir.Weighted() != weir.Weighted(draw=weir.Draw.WEIGHTED_PICK) and weir.Weighted() != weir.LowestScore()
    assert hash(weir.LowestScore()) == hash(weir.LowestScore()) and hash(weir.Weighted()) == hash(weir.Weighted())
    # The cascade: the weighted family's defaults and a fixed limit of 100.
    cascade = weir.Config.cascade(seed=4, max_waiters=8)
    assert cascade == weir.Config(algorithm=weir.Weighted(), limit=weir.Fixed(100), max_waiters=8, seed=4)
    assert weir.Config.cascade().seed is None and weir.Config.cascade().max_waiters == 1024


BAD: list[tuple[Callable[..., Any], dict[str, Any], type[Exception], str]] = [
    (weir.LowestScore, {"success_half_life": 0.0001}, ValueError, "between 1 ms and 1 hour"),
    (weir.LowestScore, {"failure_half_life": 7200}, ValueError, "between 1 ms and 1 hour"),
    (weir.LowestScore, {"throttled_cost": 2.0}, ValueError, "throttled_cost and client_error_cost"),
    (weir.LowestScore, {"dropped_cost": -0.5}, ValueError, "dropped_cost, throttled_cost"),
    (weir.LowestScore, {"dropped_cost": math.nan}, ValueError, "dropped_cost must not be NaN"),
    (weir.LowestScore, {"client_error_cost": math.nan}, ValueError, "client_error_cost must not be NaN"),
    (weir.LowestScore, {"penalty": math.inf}, ValueError, "penalty must be finite"),
    (weir.LowestScore, {"ratio_penalty": -1.0}, ValueError, "penalty and ratio_penalty"),
    (weir.LowestScore, {"probe_fraction": 2.0}, ValueError, "probe_fraction and forgiveness"),
    (weir.LowestScore, {"forgiveness": -0.5}, ValueError, "probe_fraction and forgiveness"),
    (weir.LowestScore, {"probe_fraction": "0.1"}, TypeError, "probe_fraction must be a float"),
    (weir.LowestScore, {"forgiveness": True}, TypeError, "forgiveness must be a float, not bool"),
    (weir.LowestScore, {"probe_after": 0.0005}, ValueError, "probe_after 0 or between 1 ms and 1 hour"),
    (weir.LowestScore, {"probe_after": 3601.0}, ValueError, "probe_after 0 or between 1 ms and 1 hour"),
    (weir.LowestScore, {"probe_after": -5.0}, ValueError, "probe_after must not be negative"),
    (weir.LowestScore, {"probe_after": math.nan}, ValueError, "probe_after must not be NaN"),
    (weir.LowestScore, {"probe_after": "5s"}, TypeError, "probe_after must be a number of seconds"),
    (weir.LowestScore, {"slow_ratio": 0.5}, ValueError, "slow_ratio 0 or in \\[1, 64\\]"),
    (weir.LowestScore, {"slow_ratio": "2"}, TypeError, "slow_ratio must be a float"),
    (weir.LowestScore, {"success_half_life": "1s"}, TypeError, "success_half_life must be a number of seconds"),
    (weir.Weighted, {"weight_exponent": math.nan}, ValueError, "weight_exponent must not be NaN"),
    (weir.Weighted, {"weight_exponent": 0.0}, ValueError, "Weighted: weight_exponent must be finite and in"),
    (weir.Weighted, {"weight_exponent": "3"}, TypeError, "weight_exponent must be a float"),
    (weir.Weighted, {"floor": 2.0}, ValueError, "Weighted: floor must be finite and in"),
    (weir.Weighted, {"floor": -1.0}, ValueError, "floor must be finite"),
    (weir.Weighted, {"health": "buckets"}, TypeError, "health must be weir.Buckets or weir.Ewma, not str"),
    (weir.Weighted, {"health": weir.LowestScore()}, TypeError, "health must be weir.Buckets or weir.Ewma"),
    (weir.Weighted, {"draw": "fastest"}, ValueError, "draw must be one of 'cascade', 'cascade_approx', 'weighted_pick'"),
    (weir.Weighted, {"draw": "lowest_score"}, ValueError, "it is the other family, weir.LowestScore"),
    (weir.Weighted, {"draw": 3}, TypeError, "draw must be a weir.Draw, not int"),
    (weir.Weighted, {"draw": weir.Outcome.SUCCESS}, TypeError, "draw must be a weir.Draw, not Outcome"),
    (weir.Config, {"algorithm": weir.Buckets()}, TypeError, r"not Buckets \(a success-rate model goes in weir.Weighted\(health=...\)\)"),
    (weir.Config, {"algorithm": "lowest_score"}, TypeError, "algorithm must be weir.LowestScore or weir.Weighted, not str"),
    (weir.Config, {"limit": 100}, TypeError, "limit must be weir.Fixed"),
    (weir.Config, {"max_waiters": 2**21}, ValueError, "max_waiters must be between 0 and 1048576"),
    (weir.Config, {"max_waiters": -1}, ValueError, "max_waiters must be between"),
    (weir.Config, {"seed": -1}, ValueError, "seed must be between"),
    (weir.Config, {"seed": 2**64}, ValueError, "seed must be between"),
    (weir.Config, {"seed": 1.5}, TypeError, "seed must be an int"),
    (weir.Config.cascade, {"seed": "1"}, TypeError, "seed must be an int"),
    (weir.Config.cascade, {"max_waiters": 2**21}, ValueError, "max_waiters must be between"),
    (weir.Buckets, {"count": 0}, ValueError, "count must be between 1 and 8"),
    (weir.Buckets, {"count": 9}, ValueError, "count must be between 1 and 8"),
    (weir.Buckets, {"width": 0}, ValueError, "width must be at least 1 ns"),
    (weir.Buckets, {"width": -5.0}, ValueError, "width must not be negative"),
    (weir.Buckets, {"decay": 0.5}, ValueError, "decay must be finite and >= 1"),
    (weir.Buckets, {"decay": math.nan}, ValueError, "decay must not be NaN"),
    (weir.Ewma, {"half_life": 0}, ValueError, "half_life must be between 1 and"),
    (weir.Ewma, {"half_life": 2.5}, TypeError, "half_life must be an int"),
    (weir.Fixed, {"limit": -1}, ValueError, "limit must be between 0 and"),
    (weir.Fixed, {"limit": 2**24}, ValueError, "limit must be between 0 and 16777215"),
    (weir.Aimd, {"initial_limit": 10}, ValueError, "min_limit <= initial_limit <= max_limit"),
    (weir.Aimd, {"backoff_ratio": 1.0}, ValueError, "backoff_ratio must be in"),
    (weir.Ciad, {"rtt_tolerance": 0.5}, ValueError, "rtt_tolerance must be finite and >= 1"),
    (weir.Ciad, {"rtt_tolerance": math.inf}, ValueError, "rtt_tolerance must be finite"),
    (weir.Aimd, {"timeout": 0}, ValueError, "timeout must be at least 1 ns"),
    (weir.Aimd, {"max_limit": "200"}, TypeError, "max_limit must be an int"),
    (weir.Vegas, {"smoothing": 1.5}, ValueError, "smoothing must be in"),
    (weir.Vegas, {"probe_multiplier": 0}, ValueError, "probe_multiplier must be at least 1"),
    (weir.Vegas, {"increase": -1.0}, ValueError, "factors must be finite and > 0"),
    (weir.Vegas, {"decrease": "log2"}, ValueError, "decrease must be 'log10' or a float"),
    (weir.Vegas, {"alpha": 1.5}, TypeError, "alpha must be an int .a constant. or weir.Log10"),
    (weir.Vegas, {"baseline_from_drops": 1}, TypeError, "baseline_from_drops must be a bool"),
    (weir.Gradient, {"rtt_tolerance": 0.5}, ValueError, "rtt_tolerance must be finite and >= 1"),
    (weir.Gradient, {"probe_interval": 0}, ValueError, "probe_interval must be between 1"),
    (weir.Gradient, {"queue_size": "sqrt"}, TypeError, "queue_size must be an int"),
    (weir.Gradient2, {"long_window": 0}, ValueError, "long_window must be at least 1"),
    (weir.Gradient2, {"drop_backoff": 0.1}, ValueError, "backoff_ratio must be in"),
    (weir.Ciad, {"min_limit": 0, "initial_limit": 0}, ValueError, "min_limit <= initial_limit"),
    (weir.Ciad, {"fast_start": "yes"}, TypeError, "fast_start must be a bool"),
    (weir.Knee, {"min_limit": 0, "initial_limit": 0}, ValueError, "min_limit <= initial_limit"),
    (weir.Knee, {"initial_limit": 2000}, ValueError, "min_limit <= initial_limit <= max_limit"),
    (weir.Knee, {"knee": "2"}, TypeError, "knee must be a float"),
    (weir.Knee, {"hold": 1.5j}, TypeError, "hold must be a float"),
    (weir.Windowed, {"inner": weir.Windowed()}, ValueError, "inner must not be another Windowed"),
    (weir.Windowed, {"inner": 3}, TypeError, "limit must be weir.Fixed"),
    (weir.Windowed, {"min_window": 2.0}, ValueError, "min_window and max_window must satisfy"),
    (weir.Windowed, {"window": "p99"}, TypeError, "window must be None"),
    (weir.Windowed, {"window": weir.Percentile(0.5, 4), "min_samples": 5}, ValueError, "min_samples must be at least 1"),
    (weir.Percentile, {"percentile": 1.0}, ValueError, "percentile must be in .0, 1."),
    (weir.Percentile, {"percentile": 0.5, "capacity": 11}, ValueError, "capacity must be between 1 and 10"),
    (weir.Log10, {"k": -1}, ValueError, "k must be between 0 and"),
    (weir.Sqrt, {"min": 2**24}, ValueError, "min must be between 0 and"),
]


# Knee's bad parameters raise what Ciad's do: the same exception type, and the same message in the same
# words (the class, then the rule) where the rule is the same one; the RTT tolerance rule names the
# parameters it checks.
RANGE = "the limits must satisfy min_limit <= initial_limit <= max_limit <= MAX_LIMIT (Vegas: min_limit is 1; Ciad and Knee: min_limit >= 1; Fixed: limit <= MAX_LIMIT)"
BACKOFF = "backoff_ratio must be in [0.5, 1.0) ([0.5, 1.0] for Gradient; drop_backoff for Gradient2)"
KNEE_RULE = "Knee: knee and hold must be finite and >= 1, and hold <= knee"
BAD_LIKE_CIAD: list[tuple[dict[str, Any], str, dict[str, Any], str]] = [
    ({"backoff_ratio": 1.0}, f"Ciad: {BACKOFF}", {"backoff_ratio": 1.0}, f"Knee: {BACKOFF}"),
    ({"backoff_ratio": 0.4}, f"Ciad: {BACKOFF}", {"backoff_ratio": 0.4}, f"Knee: {BACKOFF}"),
    ({"min_limit": 0, "initial_limit": 0}, f"Ciad: {RANGE}", {"min_limit": 0, "initial_limit": 0}, f"Knee: {RANGE}"),
    ({"max_limit": 4}, f"Ciad: {RANGE}", {"max_limit": 4}, f"Knee: {RANGE}"),
    ({"rtt_tolerance": math.nan}, "rtt_tolerance must not be NaN", {"knee": math.nan}, "knee must not be NaN"),
    ({"rtt_tolerance": math.nan}, "rtt_tolerance must not be NaN", {"hold": math.nan}, "hold must not be NaN"),
    ({"rtt_tolerance": 0.5}, "Ciad: rtt_tolerance must be finite and >= 1", {"knee": 0.5, "hold": 0.5}, KNEE_RULE),
    ({"rtt_tolerance": math.inf}, "Ciad: rtt_tolerance must be finite and >= 1", {"knee": math.inf}, KNEE_RULE),
    ({"rtt_tolerance": 0.5}, "Ciad: rtt_tolerance must be finite and >= 1", {"hold": 0.5}, KNEE_RULE),
    ({"rtt_tolerance": 0.5}, "Ciad: rtt_tolerance must be finite and >= 1", {"hold": 2.5}, KNEE_RULE),
    ({"rtt_tolerance": 0.5}, "Ciad: rtt_tolerance must be finite and >= 1", {"knee": 1.5, "hold": 1.75}, KNEE_RULE),
]


@pytest.mark.parametrize("ciad, ciad_says, knee, knee_says", BAD_LIKE_CIAD, ids=str)
def test_bad_knee_values_raise_as_ciads_do(ciad: dict[str, Any], ciad_says: str, knee: dict[str, Any], knee_says: str) -> None:
    with pytest.raises(ValueError) as c:
        weir.Ciad(**ciad)
    with pytest.raises(ValueError) as k:
        weir.Knee(**knee)
    assert type(k.value) is type(c.value) is ValueError
    assert (str(c.value), str(k.value)) == (ciad_says, knee_says)


# The knee's arm, in seconds as every duration of this module: 0 (the latency read always), 1 ns and the
# longest, 1000 s, are taken exactly; past 1000 s is the core's rule, named by the class; negative, NaN,
# the wrong type or more than 2**64 - 1 ns are refused on the way in, naming the parameter.
ARM = "Knee: armed_for must be at most 1000 s"


@pytest.mark.parametrize("armed_for, ns", [(0, 0), (0.0, 0), (1e-9, 1), (timedelta(microseconds=1), 1_000),
                                           (1000, 10**12), (1000.0, 10**12), (timedelta(seconds=1000), 10**12)],
                         ids=str)
def test_the_knee_arm_edges_are_accepted(armed_for: float | timedelta, ns: int) -> None:
    k = weir.Knee(armed_for=armed_for)
    assert k.armed_for == ns / 1e9
    assert k == weir.Knee(armed_for=ns / 1e9) and float(repr(k).split("armed_for=")[1][:-1]) == ns / 1e9
    config = weir.Config(limit=k, seed=3)
    assert weir.Balancer(config=config).config.limit == k
    assert weir.Windowed(k).inner == k


@pytest.mark.parametrize("armed_for, error, says", [
    (1000.000000001, ValueError, ARM),
    (1001, ValueError, ARM),
    (timedelta(seconds=1000, microseconds=1), ValueError, ARM),
    (10**9, ValueError, ARM),
    (2**64, ValueError, "armed_for is too large"),
    (-1e-9, ValueError, "armed_for must not be negative"),
    (math.nan, ValueError, "armed_for must not be NaN"),
    (math.inf, ValueError, "armed_for is too large"),
    (True, TypeError, "armed_for must be a number of seconds"),
    ("60", TypeError, "armed_for must be a number of seconds"),
], ids=str)
def test_a_bad_knee_arm_is_refused(armed_for: Any, error: type[Exception], says: str) -> None:
    with pytest.raises(error) as e:
        weir.Knee(armed_for=armed_for)
    assert str(e.value) == says if says == ARM else str(e.value).startswith(says), str(e.value)


# Probation's two fractions: out of [0, 1] is the core's rule, named by the class (one rule with timed
# probes' period, one message); NaN and the infinities are refused on the way in, as every f32 parameter's
# are, naming the parameter.
PROBATION = (
    "LowestScore: probe_fraction and forgiveness must be finite and in [0, 1], probe_after 0 or between 1 ms "
    "and 1 hour"
)


@pytest.mark.parametrize("name", ["probe_fraction", "forgiveness"])
@pytest.mark.parametrize(
    "value, says",
    [
        (math.nan, "{name} must not be NaN"),
        (-0.01, PROBATION),
        (1.01, PROBATION),
        (math.inf, "{name} must be finite, got inf"),
        (-math.inf, "{name} must be finite, got -inf"),
    ],
    ids=str,
)
def test_probation_fractions_outside_0_to_1_are_refused(name: str, value: float, says: str) -> None:
    with pytest.raises(ValueError) as e:
        weir.LowestScore(**{name: value})
    assert type(e.value) is ValueError and str(e.value) == says.format(name=name)
    # The edges are in.
    for edge in (0.0, 1.0):
        assert getattr(weir.LowestScore(**{name: edge}), name) == edge


# Timed probes' period: 0 (off) or 1 ms to 1 hour is the core's rule, shared with the two fractions (one
# error, one message); what is no duration at all is refused on the way in, naming the parameter.


@pytest.mark.parametrize(
    "value, error, says",
    [
        (-1.0, ValueError, "probe_after must not be negative, got -1"),
        (-1, ValueError, "probe_after must not be negative, got -1"),
        (timedelta(seconds=-1), ValueError, "probe_after must not be negative, got datetime.timedelta"),
        (math.nan, ValueError, "probe_after must not be NaN"),
        (math.inf, ValueError, "probe_after is too large"),
        (0.0005, ValueError, PROBATION),
        (0.000999999, ValueError, PROBATION),
        # Below half a nanosecond a float rounds to 0, which would be off: refused as any value under 1 ms.
        (1e-10, ValueError, PROBATION),
        (5e-324, ValueError, PROBATION),
        (3600.000000001, ValueError, PROBATION),
        (7200, ValueError, PROBATION),
        (timedelta(hours=1, microseconds=1), ValueError, PROBATION),
        (True, TypeError, "probe_after must be a number of seconds (float or int) or a datetime.timedelta, not bool"),
        ("5", TypeError, "probe_after must be a number of seconds (float or int) or a datetime.timedelta, not str"),
        ([5.0], TypeError, "probe_after must be a number of seconds"),
    ],
    ids=str,
)
def test_a_bad_probe_period_is_refused(value: Any, error: type[Exception], says: str) -> None:
    with pytest.raises(error) as e:
        weir.LowestScore(probe_after=value)
    assert type(e.value) is error and str(e.value).startswith(says), str(e.value)
    if says == PROBATION:
        # The same class and text as a fraction out of range.
        with pytest.raises(ValueError) as p:
            weir.LowestScore(forgiveness=2.0)
        assert str(p.value) == str(e.value) == PROBATION


@pytest.mark.parametrize(
    "value, seconds",
    [(0, 0.0), (0.0, 0.0), (-0.0, 0.0), (timedelta(0), 0.0), (0.001, 0.001), (timedelta(milliseconds=1), 0.001),
     (5.0, 5.0), (5, 5.0), (timedelta(seconds=5), 5.0), (0.123456789, 0.123456789), (3600, 3600.0),
     (3600.0, 3600.0), (timedelta(hours=1), 3600.0)],
    ids=str,
)
def test_a_probe_period_reads_back_and_sets_the_algorithm_apart(value: Any, seconds: float) -> None:
    timed = weir.LowestScore(forgiveness=0.5, probe_after=value)
    assert timed.probe_after == seconds and type(timed.probe_after) is float
    assert repr(timed).endswith(f"forgiveness=0.5, probe_after={seconds!r}, slow_ratio=0.0)")
    # The repr builds it again, to the nanosecond, and a config and a balancer carry it as it is.
    again = eval(repr(timed), {"LowestScore": weir.LowestScore})
    assert again == timed and hash(again) == hash(timed) and again.probe_after == seconds
    assert weir.Balancer(config=weir.Config(algorithm=timed, seed=3)).config.algorithm == timed
    others = {weir.LowestScore(forgiveness=0.5, probe_after=s) for s in (0.0, 0.001, 5.0, 3600.0)}
    assert len(others) == 4 and (timed in others) == (seconds in (0.0, 0.001, 5.0, 3600.0))
    assert (timed == weir.LowestScore(forgiveness=0.5)) == (seconds == 0.0)


# The slowness term's ratio: neither 0 nor in [1, 64] is the core's rule, which it shares with the
# penalties (one error, one message); NaN and the infinities are refused on the way in, naming the parameter.
PENALTY = "LowestScore: penalty and ratio_penalty must be finite and in [0, 1e6], slow_ratio 0 or in [1, 64]"


@pytest.mark.parametrize(
    "value, says",
    [
        (math.nan, "slow_ratio must not be NaN"),
        (-1.0, PENALTY),
        (0.5, PENALTY),
        (1e-45, PENALTY),
        (0.9999999, PENALTY),
        (65.0, PENALTY),
        (64.00001, PENALTY),
        (math.inf, "slow_ratio must be finite, got inf"),
        (-math.inf, "slow_ratio must be finite, got -inf"),
    ],
    ids=str,
)
def test_slow_ratios_outside_0_and_1_to_64_are_refused(value: float, says: str) -> None:
    with pytest.raises(ValueError) as e:
        weir.LowestScore(slow_ratio=value)
    assert type(e.value) is ValueError and str(e.value) == says
    # The same class and text as a penalty out of range.
    with pytest.raises(ValueError) as p:
        weir.LowestScore(penalty=-1.0)
    assert type(p.value) is type(e.value) and str(p.value) == PENALTY
    # 0, -0 and the ends of [1, 64] are in.
    for edge in (0.0, -0.0, 1.0, 64.0):
        assert weir.LowestScore(slow_ratio=edge).slow_ratio == edge


@pytest.mark.parametrize("cls, kwargs, exc, match", BAD, ids=lambda x: getattr(x, "__name__", None) or str(x))
def test_bad_values_name_the_parameter(cls: Callable[..., Any], kwargs: dict[str, Any], exc: type[Exception], match: str) -> None:
    with pytest.raises(exc, match=match):
        cls(**kwargs)


def _float_parameters() -> list[tuple[type, str]]:
    """Every keyword of an exported class whose default is a float: the parameters a float can set."""
    found = []
    for name in sorted(weir.__all__ if hasattr(weir, "__all__") else dir(weir)):
        cls = getattr(weir, name)
        if not isinstance(cls, type) or not getattr(cls, "__text_signature__", None):
            continue
        for p in inspect.signature(cls).parameters.values():
            if isinstance(p.default, float):
                found.append((cls, p.name))
    return found


FLOAT_PARAMETERS = _float_parameters()


def test_the_float_parameters_are_found() -> None:
    # The scan finds the classes it must (a scan that found nothing would pass the test below vacuously).
    names = {f"{c.__name__}.{p}" for c, p in FLOAT_PARAMETERS}
    assert {"LowestScore.penalty", "Knee.hold", "RetryBudget.ratio", "Throttle.k", "Ciad.backoff_ratio"} <= names
    assert len(FLOAT_PARAMETERS) >= 25


@pytest.mark.parametrize("cls,param", FLOAT_PARAMETERS, ids=[f"{c.__name__}.{p}" for c, p in FLOAT_PARAMETERS])
@pytest.mark.parametrize("huge", [10**400, -(10**400)])
def test_an_int_beyond_a_float_is_a_value_error_naming_the_parameter(cls: type, param: str, huge: int) -> None:
    # Python's own conversion raises OverflowError, which is no ValueError: every parameter refuses such an
    # int as it refuses any other value out of range, with ValueError naming it.
    with pytest.raises(ValueError, match=param):
        cls(**{param: huge})


def test_positional_misuse_is_refused() -> None:
    with pytest.raises(TypeError):
        weir.Aimd(20)  # type: ignore[misc]
    with pytest.raises(TypeError):
        weir.LowestScore(1.0)  # type: ignore[misc]
    with pytest.raises(TypeError):
        weir.Config(weir.LowestScore())  # type: ignore[misc]
    with pytest.raises(TypeError):
        weir.Config.cascade(1)  # type: ignore[misc]
