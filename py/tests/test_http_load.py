"""The load a server reports in its answers' ``endpoint-load-metrics`` header (gRPC's ORCA report in the
native HTTP encoding): how the HTTP integrations read it (both spellings, application_utilization before
cpu_utilization, and no report for anything they cannot read), that they pass it with every release of
an answer (plain, streamed, and the attempts a retry left behind), for httpx (sync and async) and
requests alike, and that a knee limit armed by a 503 eases a node whose server reports it is past its
knee, where one below its knee keeps its limit."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, List, Optional, Tuple

import pytest

import weir
import weir.httpx
import weir.requests
from clients import KINDS, Client
from servers import HttpServer
from weir._http import LOAD_HEADER, server_load

O = weir.Outcome


@pytest.mark.parametrize(
    "header, load",
    [
        # The native spelling, and the older one with its TEXT prefix.
        ("application_utilization:0.62, cpu_utilization:0.55, rps_fractional:120", 0.62),
        ("TEXT application_utilization=0.62, cpu_utilization=0.55, rps_fractional=120", 0.62),
        ("TEXT cpu_utilization=0.3", 0.3),
        ("cpu_utilization:0.3", 0.3),
        # Whitespace around the tokens, the names and the values.
        ("  application_utilization : 1.25 ,cpu_utilization:\t0.5  ", 1.25),
        ("TEXT   cpu_utilization = 0.75", 0.75),
        # application_utilization when above 0, else cpu_utilization (gRPC's and Envoy's order).
        ("cpu_utilization:0.4, application_utilization:0.9", 0.9),
        ("application_utilization:0, cpu_utilization:0.4", 0.4),
        ("application_utilization:0.0, cpu_utilization:0", 0.0),
        ("application_utilization:0", None),
        ("rps_fractional:120, eps:3", None),
        # Names of the report that are not read, and names it does not have, are skipped.
        ("named_metrics.queue:3, mem_utilization:0.9, eps:5, cpu_utilization:0.4, future:12", 0.4),
        ("rps_fractional:5000, cpu_utilization:0.5", 0.5),
        # Several header lines, joined with ", " by the clients, are one list.
        ("cpu_utilization:0.3, application_utilization:0.8", 0.8),
        ("TEXT cpu_utilization=0.2, TEXT application_utilization=0.9", 0.9),
        ("cpu_utilization:0.2, TEXT mem_utilization=0.9", 0.2),
        # Empty tokens (a trailing comma) are nothing.
        ("cpu_utilization:0.5,, ", 0.5),
        # Decimal numbers as written.
        ("cpu_utilization:.5", 0.5),
        ("cpu_utilization:5.", 5.0),
        ("cpu_utilization:+0.5", 0.5),
        ("cpu_utilization:1.2e-1", 0.12),
        ("cpu_utilization:12E-1", 1.2),
        # Up to 1000 times the knee, as a lease takes it.
        ("application_utilization:1000", 1000.0),
        ("cpu_utilization:0", 0.0),
        # A name given twice: unreadable, even in two spellings, two lines, or a name not read.
        ("cpu_utilization:0.5, cpu_utilization:0.5", None),
        ("application_utilization:0.5, TEXT application_utilization=0.6", None),
        ("rps_fractional:1, rps_fractional:2, cpu_utilization:0.5", None),
        # Beyond what a lease takes.
        ("application_utilization:1000.001", None),
        ("cpu_utilization:1e9", None),
        ("cpu_utilization:1e400", None),
        ("cpu_utilization:" + "9" * 400, None),
        ("cpu_utilization:-0.1", None),
        # Either utilization below 0 breaks the report, even the one not read.
        ("application_utilization:-0.5, cpu_utilization:0.4", None),
        ("application_utilization:0.4, cpu_utilization:-1", None),
        ("application_utilization:5000, cpu_utilization:0.5", None),
        # NaN and infinities, in any pair.
        ("cpu_utilization:nan", None),
        ("cpu_utilization:NaN", None),
        ("cpu_utilization:inf", None),
        ("cpu_utilization:-Infinity", None),
        ("application_utilization:nan, cpu_utilization:0.5", None),
        ("rps_fractional:inf, cpu_utilization:0.5", None),
        # Garbage.
        ("garbage", None),
        ("cpu_utilization", None),
        ("cpu_utilization:", None),
        (":0.5", None),
        ("=0.5", None),
        ("TEXT", None),
        ("cpu_utilization:abc", None),
        ("cpu_utilization:0.5x", None),
        ("cpu_utilization:0.5 0.6", None),
        ("cpu_utilization:1_0", None),
        ("cpu_utilization:0x10", None),
        ("cpu_utilization:\u0661", None),  # a digit, but not an ASCII one
        ("cpu_utilization:0.5:0.6", None),
        ("rps_fractional:fast, cpu_utilization:0.5", None),
        ('JSON {"cpu_utilization": 0.5}', None),
        ("BIN CQAAAAAAAOA/", None),
        # Empty, or no header at all.
        ("", None),
        ("   ", None),
        (",", None),
        (None, None),
    ],
)
def test_the_header_is_read(header: Optional[str], load: Optional[float]) -> None:
    assert server_load(header) == load


def test_what_is_not_a_string_is_no_report() -> None:
    odd: Any = b"cpu_utilization:0.5"
    assert server_load(odd) is None
    assert server_load(12) is None  # type: ignore[arg-type]


def test_no_header_raises_and_every_load_read_is_one_a_lease_takes() -> None:
    rng = random.Random(7)
    alphabet = "acpu_tilzon:=, .TEXT0123456789eE+-nif\t"
    names = ["application_utilization", "cpu_utilization", "rps_fractional", "x"]
    values = ["0.5", "1200", "-1", "1e3", "x", ""]
    b = weir.Balancer([1], weir.Config(limit=weir.Knee(), seed=1))
    read = 0
    for _ in range(3000):
        if rng.random() < 0.5:
            header = "".join(rng.choice(alphabet) for _ in range(rng.randrange(40)))
        else:
            pairs = (f"{rng.choice(names)}{rng.choice(':=')}{rng.choice(values)}" for _ in range(3))
            header = rng.choice(["", "TEXT "]) + ", ".join(list(pairs)[: rng.randrange(1, 4)])
        load = server_load(header)
        if load is not None:
            read += 1
            assert b.acquire().succeeded(load=load) is True
    # The draw reached both sides: some headers were read, and not all.
    assert 0 < read < 3000
    assert b.stats().released_total == read


HELD = 8


def knee_limits(kind: str, report: str) -> Tuple[int, int]:
    """A client of ``kind`` with a knee limit (initial 20) over one server that answers each request with
    a 200 whose header reports ``report``: 8 streamed responses held open, a 503 with a 9th request in
    flight (the drop that arms the node: its limit falls to 0.9 x 9 = 8.1), then the 8 closed and 4 more
    requests. The node's limit after the drop, and at the end."""
    with HttpServer(headers={LOAD_HEADER: report}) as server:
        balancer = weir.Balancer(config=weir.Config(limit=weir.Knee(), seed=1))
        client = Client(kind, [server.url], balancer=balancer, retries=0)
        try:
            held = [client.open() for _ in range(HELD)]
            assert [client.status(r) for r in held] == [200] * HELD
            server.once(503)
            assert client.send() == 503
            dropped = balancer.node(server.url).limit
            for r in held:
                client.close_response(r)
            assert [client.send() for _ in range(4)] == [200] * 4
            after = balancer.node(server.url).limit
        finally:
            client.close()
        stats = balancer.stats()
        assert stats.in_flight == 0 and stats.by_outcome == (HELD + 4, 0, 1, 0, 0, 0)
        return dropped, after


@pytest.mark.parametrize("kind", KINDS)
def test_a_server_past_its_knee_eases_the_armed_limit(kind: str) -> None:
    # The first held response to close was sent with 1 in flight: 20 % past the knee eases the limit
    # to that less 0.1, and the minimum, 1, holds it there.
    assert knee_limits(kind, "application_utilization:1.2") == (8, 1)


@pytest.mark.parametrize("kind", KINDS)
def test_a_server_below_its_knee_keeps_the_armed_limit(kind: str) -> None:
    # Half its knee reads as room: the calls sent with 7 and 8 in flight (at least 0.9 of the limit)
    # grow it by 1/8 each (8.35), the others change nothing.
    assert knee_limits(kind, "application_utilization:0.5") == (8, 8)


def test_the_older_spelling_and_cpu_utilization_are_read_alike() -> None:
    assert knee_limits("httpx", "TEXT application_utilization=1.2") == (8, 1)
    assert knee_limits("requests", "application_utilization:0, cpu_utilization:1.2") == (8, 1)
    assert knee_limits("httpx-async", "TEXT cpu_utilization=0.5, application_utilization=0") == (8, 8)


Released = Tuple[str, O, Optional[float]]


def spy(kind: str, monkeypatch: pytest.MonkeyPatch) -> List[Released]:
    """Every release the integration of ``kind`` makes with an answer's outcome: the node, the outcome
    and the load, in order (a lease's first only: the paths that end an answer may each try)."""
    module: Any = weir.requests if kind == "requests" else weir.httpx
    seen: List[Released] = []
    real = module.release

    def release(lease: weir.Lease[str], outcome: O, load: Optional[float] = None) -> None:
        if not lease.released:
            seen.append((lease.node, O(outcome), load))
        real(lease, outcome, load)

    monkeypatch.setattr(module, "release", release)
    return seen


@pytest.mark.parametrize("kind", KINDS)
def test_every_answer_is_released_with_its_report(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = spy(kind, monkeypatch)
    a_report, b_report = "application_utilization:1.5", "TEXT cpu_utilization=0.25, eps=3"
    with HttpServer(503, {LOAD_HEADER: a_report}) as a, HttpServer(503, {LOAD_HEADER: b_report}) as b:
        both = {(a.url, O.DROPPED, 1.5), (b.url, O.DROPPED, 0.25)}
        client = Client(kind, [a.url, b.url], balancer=weir.Balancer(config=weir.Config(seed=1)))
        try:
            # The first attempt's answer, read and closed before the retry, and the retry's.
            assert client.send() == 503
            assert len(seen) == 2 and set(seen) == both
            # Streamed: the first attempt's drained before the retry, the retry's when it is closed.
            r = client.open()
            assert client.status(r) == 503
            assert len(seen) == 3 and seen[2] in both
            client.close_response(r)
            assert len(seen) == 4 and set(seen[2:]) == both
        finally:
            client.close()
        assert client.balancer.stats().in_flight == 0
    # An unreadable report or none: the plain release, and the request as ever.
    with HttpServer(headers={LOAD_HEADER: "application_utilization:nan"}) as c, HttpServer() as d:
        for server in (c, d):
            client = Client(kind, [server.url])
            try:
                assert client.send() == 200
                r = client.open()
                assert client.status(r) == 200
                client.close_response(r)
            finally:
                client.close()
            assert seen[-2:] == [(server.url, O.SUCCESS, None)] * 2
    assert len(seen) == 8


def test_the_shared_header_cases_read_as_weir_tower_reads_them() -> None:
    # tests/vectors/load-headers.txt: weir-tower's classify::orca_load is checked against it too.
    path = Path(__file__).resolve().parents[2] / "tests" / "vectors" / "load-headers.txt"
    cases = 0
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if line.startswith("#"):
            continue
        want, _, rest = line.partition("|")
        assert rest.endswith("|"), f"line {n}"
        header = rest[:-1]
        load = server_load(header)
        got = None if load is None else int(load * 1000 + 0.5)
        assert got == (None if want == "none" else int(want)), f"line {n}: {header!r}"
        cases += 1
    assert cases >= 60
