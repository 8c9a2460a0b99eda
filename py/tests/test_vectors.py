"""The shared decision traces give exactly the same decisions through Python as through Rust and C."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

import weir
from vectors import VECTORS, ConfigLines, Mismatch, quiet_secs, replay

FILES = sorted(VECTORS.glob("*.trace"))


def test_all_trace_files_are_found() -> None:
    assert len(FILES) >= 11
    # Together they cover every limit algorithm (as the Rust suite checks), so each one is replayed here.
    limits = {
        kv.split("=", 1)[1]
        for path in FILES
        for line in path.read_text().split("\n")
        if line.startswith("config ")
        for kv in line.split(" ")[1:]
        if kv.startswith(("limit=", "limit.inner="))
    }
    assert limits == {"fixed", "aimd", "vegas", "gradient", "gradient2", "ciad", "knee", "windowed"}


@pytest.mark.parametrize(
    "name, key, value",
    [
        ("decay-lowest-score-probation.trace", "probe_fraction", "0.2"),
        ("decay-lowest-score-probation.trace", "forgiveness", "0.5"),
        ("decay-lowest-score-probation.trace", "probe_after_ns", "2000000000"),
        ("decay-lowest-score-slow.trace", "slow_ratio", "2.0"),
    ],
    ids=lambda x: str(x),
)
def test_opt_in_terms_are_replayed_with_their_values(tmp_path: Path, name: str, key: str, value: str) -> None:
    # The probation trace runs both fractions and timed probes, the slow trace the slowness term, and each
    # is read: the same file with one of them off (the default, 0) is refused, so the exact replay above
    # depends on each reaching the balancer.
    src = (VECTORS / name).read_text()
    line = f"config algorithm.{key}={value}\n"
    assert src.count(line) == 1, key
    off = tmp_path / f"{key}-off.trace"
    off.write_text(src.replace(line, f"config algorithm.{key}={'0' if key.endswith('_ns') else '0.0'}\n"))
    with pytest.raises(Mismatch, match=f"{key}-off.trace:"):
        replay(off)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_trace_replays_exactly(path: Path) -> None:
    assert replay(path) > 0


@pytest.mark.parametrize("armed_for_ns", ["0", "1000000000000"])
def test_the_knee_arm_is_replayed_with_its_value(tmp_path: Path, armed_for_ns: str) -> None:
    # The knee trace arms a node for 5 s after a drop, and the arm is read: the same file with the latency
    # read always (0), or with an arm that never lapses within it (1000 s), is refused.
    src = (VECTORS / "decay-lowest-score-knee.trace").read_text()
    line = "config limit.armed_for_ns=5000000000\n"
    assert src.count(line) == 1
    other = tmp_path / f"armed-{armed_for_ns}.trace"
    other.write_text(src.replace(line, f"config limit.armed_for_ns={armed_for_ns}\n"))
    with pytest.raises(Mismatch, match=f"armed-{armed_for_ns}.trace:"):
        replay(other)


def test_a_changed_answer_is_caught(tmp_path: Path) -> None:
    # The replay can fail: the same file with one acquire's answer changed is refused at that line.
    src = (VECTORS / "edges-decay.trace").read_text().split("\n")
    i = next(i for i, line in enumerate(src) if line.startswith("acquire ") and line.split(" ")[-1].isdigit())
    parts = src[i].split(" ")
    parts[-1] = str(int(parts[-1]) + 1)
    src[i] = " ".join(parts)
    bad = tmp_path / "bad.trace"
    bad.write_text("\n".join(src))
    with pytest.raises(Mismatch, match=f"bad.trace:{i + 1}: acquire"):
        replay(bad)


def test_a_windowed_knee_limit_is_read() -> None:
    # No trace wraps the knee limit in a windowed one; its keys are read as the spec writes them.
    inner = {"initial_limit": "4", "min_limit": "2", "max_limit": "12", "backoff_ratio": "0.75", "knee": "1.5", "hold": "1.25",
             "armed_for_ns": "7000000000"}
    pairs = {"limit": "windowed", "limit.inner": "knee", **{f"limit.inner.{k}": v for k, v in inner.items()}}
    pairs.update({"limit.min_window_ns": "1000000", "limit.max_window_ns": "2000000", "limit.min_samples": "3",
                  "limit.min_rtt_threshold_ns": "1000", "limit.window": "average"})
    lines = ConfigLines(pairs)
    want = weir.Windowed(weir.Knee(initial_limit=4, min_limit=2, max_limit=12, backoff_ratio=0.75, knee=1.5, hold=1.25,
                                   armed_for=7.0),
                         min_window=0.001, max_window=0.002, min_samples=3, min_rtt_threshold=1e-6)
    assert lines.limit("limit") == want
    assert lines.used == set(pairs)


def test_the_knee_traces_load_reports_are_replayed(tmp_path: Path) -> None:
    # The knee trace releases half its leases with the server's load report, and the reports are read: the
    # same file with every report withheld (`release_loaded` lines as plain `release` lines) is refused.
    src = (VECTORS / "decay-lowest-score-knee.trace").read_text().split("\n")
    loaded = [i for i, line in enumerate(src) if line.startswith("release_loaded ")]
    assert len(loaded) >= 100  # 116 when written
    for i in loaded:
        f = src[i].split(" ")
        src[i] = " ".join(["release", *f[1:5], f[6]])
    withheld = tmp_path / "withheld.trace"
    withheld.write_text("\n".join(src))
    with pytest.raises(Mismatch, match="withheld.trace:"):
        replay(withheld)


@pytest.mark.parametrize("load", ["1000001", "4294967296", "-1", "+5", "1.5", "x", ""])
def test_a_bad_load_field_is_refused(tmp_path: Path, load: str) -> None:
    src = (VECTORS / "decay-lowest-score-knee.trace").read_text().split("\n")
    i = next(i for i, line in enumerate(src) if line.startswith("release_loaded "))
    f = src[i].split(" ")
    f[5] = load
    src[i] = " ".join(f)
    bad = tmp_path / "bad-load.trace"
    bad.write_text("\n".join(src))
    with pytest.raises(Mismatch, match=f"bad-load.trace:{i + 1}: load"):
        replay(bad)


def test_only_format_6_is_read(tmp_path: Path) -> None:
    src = (VECTORS / "edges-decay.trace").read_text()
    assert src.startswith("weir-trace 6\n")
    old = tmp_path / "old.trace"
    old.write_text(src.replace("weir-trace 6\n", "weir-trace 5\n", 1))
    with pytest.raises(Mismatch, match="old.trace:1: not a weir-trace 6 file"):
        replay(old)


def test_the_health_checks_are_met() -> None:
    # The files name nodes for checks and refuse them under the weighted family, and the replay reaches
    # each answer: a replay that skipped the lines would count none.
    met: Counter[str] = Counter()
    for path in FILES:
        replay(path, met=met)
    assert met["due_check node"] >= 1 and met["due_check none"] >= 1
    assert met["report_check ok"] >= 1 and met["report_check unknown_id"] >= 1
    assert met["report_check not_lowest_score"] >= 1


@pytest.mark.parametrize("quiet_ns", ["0", "1000000000", "4000000000"])
def test_the_quiet_period_is_read(tmp_path: Path, quiet_ns: str) -> None:
    # The checks trace names node 2 once it has been quiet 2 s: the same file with every 2 s period
    # changed (none due at once, or due after half or twice the time) is refused.
    src = (VECTORS / "decay-lowest-score-checks.trace").read_text().split("\n")
    changed = 0
    for i, line in enumerate(src):
        f = line.split(" ")
        if f[0] == "due_check" and f[2] == "2000000000":
            f[2] = quiet_ns
            src[i] = " ".join(f)
            changed += 1
    assert changed >= 3
    other = tmp_path / f"quiet-{quiet_ns}.trace"
    other.write_text("\n".join(src))
    with pytest.raises(Mismatch, match=f"quiet-{quiet_ns}.trace:"):
        replay(other)


@pytest.mark.parametrize("healthy", ["true", "false"])
def test_the_checks_answer_is_read(tmp_path: Path, healthy: str) -> None:
    # Each answer the checks trace reports for a member changes what follows: the same file with one
    # report's answer turned round is refused.
    src = (VECTORS / "decay-lowest-score-checks.trace").read_text().split("\n")
    i = next(i for i, line in enumerate(src) if line.startswith("report_check ") and line.endswith(f" {healthy} ok"))
    f = src[i].split(" ")
    f[3] = "false" if healthy == "true" else "true"
    src[i] = " ".join(f)
    turned = tmp_path / "turned.trace"
    turned.write_text("\n".join(src))
    with pytest.raises(Mismatch, match="turned.trace:"):
        replay(turned)


@pytest.mark.parametrize(
    "kind, field, value",
    [("due_check", 3, "none"), ("report_check", 4, "unknown_id"), ("report_check", 3, "yes")],
    ids=lambda x: str(x),
)
def test_a_changed_check_line_is_caught(tmp_path: Path, kind: str, field: int, value: str) -> None:
    # A node named changed to none, a report's ok to unknown_id, and a healthy field that is no bool are
    # each refused at their line.
    src = (VECTORS / "decay-lowest-score-checks.trace").read_text().split("\n")
    i = next(
        i for i, line in enumerate(src)
        if line.startswith(kind + " ") and (line.split(" ")[-1].isdigit() or line.endswith(" ok"))
    )
    f = src[i].split(" ")
    f[field] = value
    src[i] = " ".join(f)
    bad = tmp_path / "bad-check.trace"
    bad.write_text("\n".join(src))
    with pytest.raises(Mismatch, match=f"bad-check.trace:{i + 1}: "):
        replay(bad)


@pytest.mark.parametrize("ns", [0, 1, 2_000_000_000, 3_600_000_000_000, 2**64 - 1])
def test_a_quiet_period_crosses_exactly(ns: int) -> None:
    assert quiet_secs(ns) == ns / 1_000_000_000


@pytest.mark.parametrize("ns", [2**64 - 2, 2**60 + 1])
def test_a_quiet_period_a_float_cannot_carry_is_refused(ns: int) -> None:
    with pytest.raises(AssertionError, match="does not cross float seconds exactly"):
        quiet_secs(ns)


LOWEST_SCORE_KEYS = {
    "algorithm": "lowest_score", "algorithm.success_half_life_ns": "1000000000",
    "algorithm.failure_half_life_ns": "30000000000", "algorithm.dropped_cost": "0.1", "algorithm.throttled_cost": "0.1",
    "algorithm.client_error_cost": "0.01", "algorithm.penalty": "10.0", "algorithm.ratio_penalty": "16.0",
    "algorithm.probe_fraction": "0.0", "algorithm.forgiveness": "0.5", "algorithm.slow_ratio": "0.0",
}


@pytest.mark.parametrize("ns", [0, 1_000_000, 1_000_001, 1_234_567_891, 999_999_999_999, 3_600_000_000_000])
def test_the_probe_period_is_read_to_the_nanosecond(ns: int) -> None:
    # The traces give timed probes' period in ns; the binding takes seconds, and every valid period crosses
    # exactly: its neighbours a nanosecond either side make other algorithms.
    def read(value: int) -> weir.LowestScore:
        pairs = {**LOWEST_SCORE_KEYS, "algorithm.probe_after_ns": str(value)}
        lines = ConfigLines(pairs)
        algorithm = lines.algorithm()
        assert lines.used == set(pairs) and isinstance(algorithm, weir.LowestScore)
        return algorithm

    got = read(ns)
    assert round(got.probe_after * 1_000_000_000) == ns and got.forgiveness == 0.5
    assert (got == weir.LowestScore(forgiveness=0.5)) == (ns == 0)
    neighbours = [read(n) for n in (ns - 1, ns + 1) if 1_000_000 <= n <= 3_600_000_000_000]
    assert len(neighbours) == (0 if ns == 0 else 1 if ns in (1_000_000, 3_600_000_000_000) else 2)
    assert all(n != got for n in neighbours)


def test_a_lowest_score_config_without_the_probe_period_is_refused() -> None:
    with pytest.raises(Mismatch, match="missing config key algorithm.probe_after_ns"):
        ConfigLines(dict(LOWEST_SCORE_KEYS)).algorithm()
    # And a period the core refuses is refused as the class refuses it.
    with pytest.raises(ValueError, match="probe_after 0 or between 1 ms and 1 hour"):
        ConfigLines({**LOWEST_SCORE_KEYS, "algorithm.probe_after_ns": "999999"}).algorithm()
