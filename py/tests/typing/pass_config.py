"""Type-checked by `cargo xtask py` with `mypy --strict`, never run: a configuration is built from the
algorithm families and a limit, and a balancer built from one keeps its node type."""

from __future__ import annotations

import datetime

import weir

pick = weir.Weighted(health=weir.Ewma(half_life=20), draw=weir.Draw.WEIGHTED_PICK)
by_value = weir.Weighted(draw="cascade_approx")
config = weir.Config(algorithm=pick, limit=weir.Aimd(), max_waiters=0, seed=7)
cascade: weir.Balancer[str] = weir.Balancer(["http://a", "http://b"], weir.Config.cascade(seed=1))
default = weir.Balancer([("10.0.0.7", 8080)], config=None, capacity=32)  # Balancer[Tuple[str, int]]
knee = weir.Config(limit=weir.Knee(knee=3.0, hold=2.0))
windowed_knee = weir.Windowed(weir.Knee(backoff_ratio=0.75))
hold: float = weir.Knee().hold
always = weir.Knee(armed_for=0)
armed_for: float = weir.Knee(armed_for=datetime.timedelta(seconds=5)).armed_for
probation = weir.Config(algorithm=weir.LowestScore(probe_fraction=0.01, forgiveness=0.5))
forgiveness: float = weir.LowestScore().forgiveness
timed = weir.Config(algorithm=weir.LowestScore(forgiveness=0.5, probe_after=5.0))
probe_after: float = weir.LowestScore(probe_after=datetime.timedelta(seconds=2)).probe_after
slow = weir.Config(algorithm=weir.LowestScore(slow_ratio=2.0))
slow_ratio: float = weir.LowestScore().slow_ratio


def describe(c: weir.Config) -> str:
    algorithm = c.algorithm
    if isinstance(algorithm, weir.LowestScore):
        return f"lowest score, penalty {algorithm.penalty}"
    draw: weir.Draw = algorithm.draw
    seed: int | None = c.seed
    return f"weighted, {draw.value}, seed {seed}"


def host_of(b: weir.Balancer[tuple[str, int]]) -> str:
    seed: int | None = b.config.seed
    with b.acquire() as lease:
        return f"{lease.node[0]} ({seed})"


describe(config)
describe(cascade.config)
host_of(default)
print(by_value, knee, windowed_knee.inner, hold, always, armed_for, probation, forgiveness, timed, probe_after, slow,
      slow_ratio)
