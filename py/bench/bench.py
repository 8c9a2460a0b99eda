"""The cost of one acquire + release pair from Python, 16 nodes, weir's default configuration, next to the
same algorithm written in pure Python (measured in the same run).

    python py/bench/bench.py [--results benches/RESULTS.md]    (or: cargo xtask bench-py)

The pure-Python baseline is a faithful port of the default configuration's decision path as the core runs
it on every pair: time-decayed success and failure counters per node (half-lives 1 s and 30 s, 2^20 ns
ticks), the penalty `10 * F + 16 * log2(1 + F / (S + 1))` cached per node, the lowest-score scan (lowest
`in_flight + penalty` among nodes with room, ties broken at random, dialogue's give-up rule), and a CIAD
limit with fast start per node. Like weir it is safe to share between threads, so each call takes a lock
(weir needs none: its state is atomics). The timing loop is the same for both: `lease = b.acquire()`,
`lease.succeeded()`, on the monotonic clock.

Each measurement is the median over rounds of the mean pair time in a round, after a warm-up round.
"""

from __future__ import annotations

import argparse
import math
import platform
import random
import re
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Callable, List, Optional

import weir

NODES = 16
ROUNDS = 15
PAIRS_PER_ROUND = 20_000

TICK_NS = 1 << 20
SUCCESS_HALF_LIFE_NS = 1_000_000_000
FAILURE_HALF_LIFE_NS = 30_000_000_000


class Counter:
    """A time-decayed counter: a value and the tick it was written at."""

    __slots__ = ("value", "tick", "per_tick")

    def __init__(self, half_life_ns: int) -> None:
        self.value = 0.0
        self.tick = 0
        self.per_tick = TICK_NS / half_life_ns

    def read(self, tick: int) -> float:
        age = tick - self.tick
        return self.value * 2.0 ** (-age * self.per_tick) if age > 0 else self.value

    def add(self, tick: int, amount: float) -> None:
        self.value = self.read(tick) + amount
        self.tick = max(tick, self.tick)


class Node:
    __slots__ = ("name", "in_flight", "limit", "ramp_over", "successes", "failures", "penalty")

    def __init__(self, name: str) -> None:
        self.name = name
        self.in_flight = 0
        self.limit = 20.0  # CIAD: initial 20, min 1, max 1e6, backoff 0.9, fast start
        self.ramp_over = False
        self.successes = Counter(SUCCESS_HALF_LIFE_NS)
        self.failures = Counter(FAILURE_HALF_LIFE_NS)
        self.penalty = 0.0


class PyLease:
    __slots__ = ("balancer", "node", "start", "inflight", "done")

    def __init__(self, balancer: PyBalancer, node: Node, start: int, inflight: int) -> None:
        self.balancer = balancer
        self.node = node
        self.start = start
        self.inflight = inflight
        self.done = False

    def succeeded(self) -> bool:
        return self.balancer.release(self, True)

    def failed(self) -> bool:
        return self.balancer.release(self, False)


class PyBalancer:
    """weir's default algorithm in pure Python (one lock for thread safety)."""

    def __init__(self, names: List[str], seed: int = 0) -> None:
        self.nodes = [Node(n) for n in names]
        self.lock = threading.Lock()
        self.rng = random.Random(seed)

    def acquire(self) -> PyLease:
        now = time.monotonic_ns()
        with self.lock:
            best: Optional[Node] = None
            best_score = math.inf
            ties = 0
            worst_full = -math.inf
            for n in self.nodes:
                score = n.in_flight + n.penalty
                if n.in_flight < int(n.limit):
                    if score < best_score:
                        best, best_score, ties = n, score, 1
                    elif score == best_score:
                        ties += 1
                        if self.rng.randrange(ties) == 0:
                            best = n
                elif score > worst_full:
                    worst_full = score
            if best is None:
                raise weir.NoCapacity("every node is at its concurrency limit")
            # dialogue's give-up rule: a much worse node with room is refused (every full node counts,
            # scored at least 6, as in weir's core).
            if worst_full > -math.inf and worst_full <= best_score and best_score > 2 * max(worst_full, 6):
                raise weir.NoCapacity("the nodes with room are much worse than a busy one")
            best.in_flight += 1
            return PyLease(self, best, now, best.in_flight)

    def release(self, lease: PyLease, success: bool) -> bool:
        now = time.monotonic_ns()
        with self.lock:
            if lease.done:
                raise weir.LeaseError("lease already released")
            lease.done = True
            n = lease.node
            n.in_flight -= 1
            tick = now // TICK_NS
            if success:
                n.successes.add(tick, 1.0)
                if lease.inflight >= math.floor(n.limit * 0.9):
                    n.limit = min(n.limit + (1.0 if not n.ramp_over else 1.0 / n.limit), 1e6)
            else:
                n.failures.add(tick, 1.0)
                n.limit = max(math.floor(n.limit * 0.9), 1.0)
                n.ramp_over = True
            f = n.failures.read(tick)
            s = n.successes.read(tick)
            n.penalty = 10.0 * f + 16.0 * math.log2(1.0 + f / (s + 1.0))
            return True


def pair_ns(acquire: Callable[[], "weir.Lease | PyLease"]) -> float:
    """Median over rounds of the mean acquire + release time, in ns."""
    rounds: List[float] = []
    for r in range(ROUNDS + 1):
        t0 = time.perf_counter_ns()
        for _ in range(PAIRS_PER_ROUND):
            acquire().succeeded()
        elapsed = time.perf_counter_ns() - t0
        if r > 0:  # the first round warms up
            rounds.append(elapsed / PAIRS_PER_ROUND)
    return statistics.median(rounds)


def write_results(path: Path, weir_ns: float, py_ns: float) -> None:
    """Replaces (or appends) the "Python" section of benches/RESULTS.md; the rest is left as it is."""
    ratio = py_ns / weir_ns
    section = (
        "## Python\n\n"
        "`cargo xtask bench-py` (`py/bench/bench.py`): one `acquire()` + `lease.succeeded()` pair from Python, "
        f"{NODES} nodes, the default configuration, median of {ROUNDS} rounds of {PAIRS_PER_ROUND:,} pairs. "
        "The baseline is the same algorithm in pure Python (decayed counters, lowest score, CIAD with fast "
        "start, one lock), measured in the same run.\n\n"
        "| implementation | ns per pair | |\n|---|---:|---|\n"
        f"| weir (`import weir`) | {weir_ns:.0f} | goal < 1,000 ns: {'met' if weir_ns < 1000 else 'MISSED'} |\n"
        f"| pure Python | {py_ns:.0f} | |\n"
        f"| ratio | {ratio:.1f}x | goal >= 10x: {'met' if ratio >= 10 else 'MISSED'} |\n\n"
        f"Python {platform.python_version()} ({platform.python_implementation()}), {platform.machine()}, "
        f"{time.strftime('%Y-%m-%d')}.\n"
    )
    text = path.read_text() if path.exists() else ""
    pattern = re.compile(r"## Python\n.*?(?=\n## |\Z)", re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _: section.rstrip("\n") + "\n", text, count=1)
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--results", type=Path, help="write the Python section of this RESULTS.md")
    args = parser.parse_args()
    names = [f"10.0.0.{i}:8080" for i in range(NODES)]
    b = weir.Balancer(names, weir.Config(seed=1))
    pb = PyBalancer(names, seed=1)
    weir_ns = pair_ns(b.acquire)
    py_ns = pair_ns(pb.acquire)
    # Both balancers saw every pair as a success: check that the measured paths really ran.
    assert b.stats().released(weir.Outcome.SUCCESS) == (ROUNDS + 1) * PAIRS_PER_ROUND
    print(f"weir:        {weir_ns:8.0f} ns per acquire + release pair ({NODES} nodes)")
    print(f"pure Python: {py_ns:8.0f} ns per pair")
    print(f"ratio:       {py_ns / weir_ns:8.1f}x")
    if args.results:
        write_results(args.results, weir_ns, py_ns)
        print(f"wrote the Python section of {args.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
