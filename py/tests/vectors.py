"""A replay of the shared decision traces (``tests/vectors/*.trace``, specified in
``tests/vectors/README.md``) through the Python binding: the same configuration, the same calls, the same
generator, and every answer, snapshot and counter compared exactly (floats bit for bit)."""

from __future__ import annotations

import math
import struct
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import weir

VECTORS = Path(__file__).resolve().parents[2] / "tests" / "vectors"

NS = 1_000_000_000


def secs(ns: int) -> float:
    """Nanoseconds as the float seconds the binding takes, checked to convert back exactly."""
    s = ns / NS
    if round(s * NS) != ns:
        raise AssertionError(f"{ns} ns does not round-trip through float seconds")
    return s


def bits(x: float) -> bytes:
    return struct.pack("<d", x)


def f32(text: str) -> float:
    """A trace's f32 field as the f32 value (the spec's strtof), widened to a Python float."""
    value: float = struct.unpack("<f", struct.pack("<f", float(text)))[0]
    return value


class Mismatch(AssertionError):
    pass


class ConfigLines:
    """The `config` lines: every key once, each consumed exactly once."""

    def __init__(self, pairs: Dict[str, str]) -> None:
        self.pairs = pairs
        self.used: set[str] = set()

    def get(self, key: str) -> str:
        if key not in self.pairs:
            raise Mismatch(f"missing config key {key}")
        self.used.add(key)
        return self.pairs[key]

    def u(self, key: str) -> int:
        return int(self.get(key))

    def f(self, key: str) -> float:
        return float(self.get(key))

    def b(self, key: str) -> bool:
        v = self.get(key)
        if v not in ("true", "false"):
            raise Mismatch(f"{key}: not a bool: {v}")
        return v == "true"

    def algorithm(self) -> Any:
        kind = self.get("algorithm")
        if kind == "lowest_score":
            return weir.LowestScore(
                success_half_life=secs(self.u("algorithm.success_half_life_ns")),
                failure_half_life=secs(self.u("algorithm.failure_half_life_ns")),
                dropped_cost=f32(self.get("algorithm.dropped_cost")),
                throttled_cost=f32(self.get("algorithm.throttled_cost")),
                client_error_cost=f32(self.get("algorithm.client_error_cost")),
                penalty=f32(self.get("algorithm.penalty")),
                ratio_penalty=f32(self.get("algorithm.ratio_penalty")),
                probe_fraction=f32(self.get("algorithm.probe_fraction")),
                forgiveness=f32(self.get("algorithm.forgiveness")),
                probe_after=secs(self.u("algorithm.probe_after_ns")),
                slow_ratio=f32(self.get("algorithm.slow_ratio")),
            )
        if kind == "weighted":
            return weir.Weighted(
                health=self.health("algorithm.health"),
                draw=weir.Draw(self.get("algorithm.draw")),
                weight_exponent=self.f("algorithm.weight_exponent"),
                floor=self.f("algorithm.floor"),
            )
        raise Mismatch(f"unknown algorithm {kind}")

    def health(self, p: str) -> Any:
        kind = self.get(p)
        if kind == "buckets":
            return weir.Buckets(
                count=self.u(p + ".count"),
                width=secs(self.u(p + ".width_ns")),
                decay=self.f(p + ".decay"),
            )
        if kind == "ewma":
            return weir.Ewma(half_life=self.u(p + ".half_life"))
        raise Mismatch(f"unknown health {kind} under {p}")

    def threshold(self, key: str) -> Any:
        kind = self.get(key)
        k = self.u(key + ".0")
        return weir.Log10(k) if kind == "log10" else k

    def step(self, key: str) -> Any:
        kind = self.get(key)
        return "log10" if kind == "log10" else self.f(key + ".0")

    def queue(self, key: str) -> Any:
        kind = self.get(key)
        return self.u(key + ".0") if kind == "constant" else weir.Sqrt(self.u(key + ".min"))

    def limit(self, p: str) -> Any:
        kind = self.get(p)
        if kind == "fixed":
            return weir.Fixed(self.u(p + ".limit"))
        if kind == "aimd":
            return weir.Aimd(
                initial_limit=self.u(p + ".initial_limit"),
                min_limit=self.u(p + ".min_limit"),
                max_limit=self.u(p + ".max_limit"),
                backoff_ratio=self.f(p + ".backoff_ratio"),
                timeout=secs(self.u(p + ".timeout_ns")),
            )
        if kind == "vegas":
            return weir.Vegas(
                initial_limit=self.u(p + ".initial_limit"),
                max_limit=self.u(p + ".max_limit"),
                smoothing=self.f(p + ".smoothing"),
                probe_multiplier=self.u(p + ".probe_multiplier"),
                alpha=self.threshold(p + ".alpha"),
                beta=self.threshold(p + ".beta"),
                threshold=self.threshold(p + ".threshold"),
                increase=self.step(p + ".increase"),
                decrease=self.step(p + ".decrease"),
                baseline_from_drops=self.b(p + ".baseline_from_drops"),
            )
        if kind == "gradient":
            probe = self.get(p + ".probe_interval")
            return weir.Gradient(
                initial_limit=self.u(p + ".initial_limit"),
                min_limit=self.u(p + ".min_limit"),
                max_limit=self.u(p + ".max_limit"),
                smoothing=self.f(p + ".smoothing"),
                queue_size=self.queue(p + ".queue_size"),
                rtt_tolerance=self.f(p + ".rtt_tolerance"),
                probe_interval=None if probe == "none" else int(probe),
                backoff_ratio=self.f(p + ".backoff_ratio"),
            )
        if kind == "gradient2":
            drop = self.get(p + ".drop_backoff")
            return weir.Gradient2(
                initial_limit=self.u(p + ".initial_limit"),
                min_limit=self.u(p + ".min_limit"),
                max_limit=self.u(p + ".max_limit"),
                smoothing=self.f(p + ".smoothing"),
                queue_size=self.queue(p + ".queue_size"),
                long_window=self.u(p + ".long_window"),
                rtt_tolerance=self.f(p + ".rtt_tolerance"),
                drop_backoff=None if drop == "none" else float(drop),
            )
        if kind == "ciad":
            return weir.Ciad(
                initial_limit=self.u(p + ".initial_limit"),
                min_limit=self.u(p + ".min_limit"),
                max_limit=self.u(p + ".max_limit"),
                backoff_ratio=self.f(p + ".backoff_ratio"),
                fast_start=self.b(p + ".fast_start"),
                rtt_tolerance=self.f(p + ".rtt_tolerance"),
            )
        if kind == "knee":
            return weir.Knee(
                initial_limit=self.u(p + ".initial_limit"),
                min_limit=self.u(p + ".min_limit"),
                max_limit=self.u(p + ".max_limit"),
                backoff_ratio=self.f(p + ".backoff_ratio"),
                knee=self.f(p + ".knee"),
                hold=self.f(p + ".hold"),
                armed_for=secs(self.u(p + ".armed_for_ns")),
            )
        if kind == "windowed" and p == "limit":
            window = self.get("limit.window")
            return weir.Windowed(
                self.limit("limit.inner"),
                min_window=secs(self.u("limit.min_window_ns")),
                max_window=secs(self.u("limit.max_window_ns")),
                min_samples=self.u("limit.min_samples"),
                min_rtt_threshold=secs(self.u("limit.min_rtt_threshold_ns")),
                window=None
                if window == "average"
                else weir.Percentile(self.f("limit.window.percentile"), self.u("limit.window.capacity")),
            )
        raise Mismatch(f"unknown limit {kind} under {p}")

    def balancer(self, capacity: int) -> weir.Balancer:
        config = weir.Config(
            algorithm=self.algorithm(),
            limit=self.limit("limit"),
            max_waiters=self.u("max_waiters"),
            seed=self.u("seed"),
        )
        unused = set(self.pairs) - self.used
        if unused:
            raise Mismatch(f"unknown config keys {sorted(unused)}")
        b = weir.Balancer(config=config, capacity=capacity)
        if b.config != config:
            raise Mismatch(f"the balancer's configuration {b.config!r} is not the one given, {config!r}")
        return b


OUTCOMES = ["success", "failure", "dropped", "ignored", "throttled", "client_error"]

# The highest load a `release_loaded` line may give, in thousandths (the core's ServerLoad::MAX_PERMILLE).
MAX_PERMILLE = 1_000_000


def load_permille(path: Path, lineno: int, text: str) -> int:
    """A `release_loaded` line's load: decimal digits only, a u32 at most MAX_PERMILLE."""
    if not (text.isascii() and text.isdigit()) or int(text) > MAX_PERMILLE:
        raise Mismatch(
            f"{path.name}:{lineno}: load {text!r} is not a whole number of thousandths up to {MAX_PERMILLE}"
        )
    return int(text)


# The most nanoseconds a duration may have (the core's u64).
MAX_NS = 2**64 - 1


def quiet_secs(ns: int) -> float:
    """A `due_check` line's quiet period as the float seconds the binding takes, checked to reach the core
    as exactly `ns` by the binding's rule: seconds times 1e9 rounded to the nearest nanosecond (half away
    from zero), past 2**64 refused, 2**64 itself taken as the most a duration holds, 2**64 - 1 (a float
    cannot hold u64::MAX, which the traces use for "never")."""
    s = ns / NS
    x = s * 1e9
    whole = math.floor(x)
    got = whole + 1 if x - whole >= 0.5 else whole
    if got > 2**64 or min(got, MAX_NS) != ns:
        raise AssertionError(f"a quiet period of {ns} ns does not cross float seconds exactly")
    return s


def replay(
    path: Path,
    at_end: Optional[Callable[[weir.Balancer, int], None]] = None,
    met: Optional[Counter[str]] = None,
) -> int:
    """Replays one file; returns the number of steps. Raises Mismatch naming the line and field.

    ``at_end`` is called with the balancer and the last step's time (ns) once the file is replayed. ``met``
    counts the health checks' answers the file gave (`due_check node`, `due_check none`, `report_check ok`,
    `report_check unknown_id`, `report_check not_lowest_score`)."""
    lines = path.read_text().split("\n")
    if lines[0] != "weir-trace 6":
        raise Mismatch(f"{path.name}:1: not a weir-trace 6 file")
    pairs: Dict[str, str] = {}
    b: Optional[weir.Balancer] = None
    rng: Optional[weir.Rng] = None
    leases: Dict[str, weir.Lease] = {}
    answers: Dict[str, int] = {}
    steps = 0
    pending_nodes: List[Tuple[int, List[str]]] = []
    t = 0
    ended = False

    def check(lineno: int, field: str, got: Any, want: Any) -> None:
        if got != want:
            raise Mismatch(f"{path.name}:{lineno}: {field}: got {got!r}, want {want!r}")

    def check_nodes(lineno: int) -> None:
        assert b is not None
        snaps = b.nodes(now=secs(t))
        check(lineno, "node count", len(snaps), len(pending_nodes))
        for s, (ln, f) in zip(snaps, pending_nodes):
            check(ln, "id", s.id, int(f[1]))
            check(ln, "node object", s.node, int(f[1]))
            check(ln, "state", s.state, f[2])
            for name, text in zip(("success_rate", "weight", "successes", "failures", "penalty"), f[3:8]):
                check(ln, name, bits(getattr(s, name)), bits(float(text)))
            for name, text in zip(
                ("limit", "in_flight", "window_finished", "window_succeeded", "sticky_finished", "sticky_succeeded"),
                f[8:14],
            ):
                check(ln, name, getattr(s, name), int(text))
            check(ln, "has_data", s.has_data, f[14] == "true")
            check(ln, "field count", len(f), 21)
            for o in weir.Outcome:
                check(ln, f"released {o.name.lower()}", s.released(o), int(f[15 + o]))
            check(ln, "by_outcome", s.by_outcome, tuple(int(x) for x in f[15:21]))

    for lineno, line in enumerate(lines[1:], start=2):
        if not line or line.startswith("#"):
            continue
        f = line.split(" ")
        kind = f[0]
        if kind == "config":
            for kv in f[1:]:
                k, _, v = kv.partition("=")
                if k in pairs:
                    raise Mismatch(f"{path.name}:{lineno}: repeated key {k}")
                pairs[k] = v
        elif kind == "capacity":
            b = ConfigLines(pairs).balancer(int(f[1]))
        elif kind == "rng":
            rng = weir.Rng(int(f[1]))
        elif kind == "node":
            pending_nodes.append((lineno, f))
        elif kind == "stats":
            assert b is not None
            check_nodes(lineno)
            pending_nodes = []
            st = b.stats()
            want = [int(x) for x in f[1:]]
            got = [
                st.acquired,
                st.rejected_all_busy,
                st.rejected_no_active,
                *st.by_outcome,
                st.released_stale,
                st.in_flight,
                st.active_nodes,
                st.lame_duck_nodes,
                st.waits,
                st.waits_granted,
                st.waits_timed_out,
                st.waits_cancelled,
                st.waiting,
            ]
            check(lineno, "stats", got, want)
            steps += 1
        elif kind == "end":
            check(lineno, "step count", steps, int(f[1]))
            ended = True
        else:
            assert b is not None and rng is not None
            t = int(f[1])
            now = secs(t)
            answer = f[-1]
            got_answer: str
            if kind == "acquire":
                try:
                    lease = b.try_acquire(now=now, rng=rng)
                    if lease is None:
                        got_answer = "all_busy"
                    else:
                        got_answer = str(lease.id)
                        check(lineno, "lease node", lease.node, lease.id)
                        leases[f[2]] = lease
                        answers[f[2]] = lease.id
                except weir.NoNodes:
                    got_answer = "no_active_nodes"
            elif kind == "acquire_excluding":
                tried = [] if f[3] == "-" else [int(i) for i in f[3].split(",")]
                try:
                    lease = b.acquire_excluding(tried, now=now, rng=rng)
                    got_answer = str(lease.id)
                    check(lineno, "lease node", lease.node, lease.id)
                    leases[f[2]] = lease
                    answers[f[2]] = lease.id
                except weir.NoCapacity:
                    got_answer = "all_busy"
                except weir.NoNodes:
                    got_answer = "no_active_nodes"
            elif kind in ("release", "release_loaded"):
                code, name = int(f[3]), f[4]
                check(lineno, "outcome name", OUTCOMES[code], name)
                check(lineno, "field count", len(f), 6 if kind == "release" else 7)
                # The report in thousandths as the utilization the binding takes: permille / 1000 is the
                # float nearest it, which the core's rounding to the nearest thousandth maps back exactly.
                load = None if kind == "release" else load_permille(path, lineno, f[5]) / 1000
                try:
                    recorded = leases[f[2]].release(weir.Outcome(code), now=now, load=load)
                    got_answer = "ok" if recorded else "node_removed"
                except weir.LeaseError:
                    got_answer = "invalid_lease"
            elif kind in ("add", "remove", "lame_duck"):
                node = int(f[2])
                action: Callable[[], None]
                if kind == "add":
                    action = lambda: b.add(node)  # noqa: E731
                elif kind == "remove":
                    action = lambda: b.remove(node)  # noqa: E731
                else:
                    on = f[3] == "on"
                    action = lambda: b.set_lame_duck(node, on)  # noqa: E731
                try:
                    action()
                    got_answer = "ok"
                except weir.DuplicateNode:
                    got_answer = "duplicate_id"
                except weir.CapacityFull:
                    got_answer = "capacity_full"
                except weir.UnknownNode:
                    got_answer = "unknown_id"
            elif kind == "due_check":
                check(lineno, "field count", len(f), 4)
                due = b.due_check(quiet_secs(int(f[2])), now=now)
                if due is None:
                    got_answer = "none"
                else:
                    # The traces' nodes are their own ids: the object named is the int.
                    check(lineno, "node object type", type(due), int)
                    got_answer = str(due)
                if met is not None:
                    met["due_check " + ("none" if due is None else "node")] += 1
            elif kind == "report_check":
                check(lineno, "field count", len(f), 5)
                if f[3] not in ("true", "false"):
                    raise Mismatch(f"{path.name}:{lineno}: healthy: not a bool: {f[3]}")
                try:
                    b.report_check(int(f[2]), f[3] == "true", now=now)
                    got_answer = "ok"
                except weir.UnknownNode:
                    got_answer = "unknown_id"
                except weir.WeirError as e:
                    # Only the base class, with the core's message: any other error is a mismatch.
                    if type(e) is not weir.WeirError or "lowest-score family" not in str(e):
                        raise
                    got_answer = "not_lowest_score"
                if met is not None:
                    met["report_check " + got_answer] += 1
            else:
                raise Mismatch(f"{path.name}:{lineno}: unknown line kind {kind}")
            check(lineno, kind, got_answer, answer)
    if not ended:
        raise Mismatch(f"{path.name}: no end line")
    if at_end is not None:
        assert b is not None
        at_end(b, t)
    return steps
