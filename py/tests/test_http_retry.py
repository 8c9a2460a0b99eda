"""The HTTP integrations' retries elsewhere, against real local servers, for httpx (sync and async) and
requests alike: a failed attempt (500, 429, 503, a refused connection, a timeout) is sent again to a node
it has not tried, each attempt's lease released with its own outcome; a success, another 4xx, a POST, a
streamed body and a cancellation are not; every node failing, the retries stay within the budget; bad
options are refused before anything is sent."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Callable, Dict, Iterator, List, Tuple

import httpx
import pytest
import requests

import weir
import weir.httpx
import weir.requests
from clients import KINDS, Client
from servers import BlackHole, HttpServer, Refusing, Server

O = weir.Outcome


ERRORS = (httpx.TransportError, requests.RequestException)


def attempts(client: Client) -> int:
    """Every lease taken, each released, none stale: the number of attempts."""
    stats = client.balancer.stats()
    assert stats.in_flight == 0 and stats.released_stale == 0
    assert stats.acquired == stats.released_total
    return int(stats.acquired)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    "broken, outcome", [("failing", O.FAILURE), ("refusing", O.FAILURE), ("black_hole", O.DROPPED)]
)
def test_a_request_meeting_a_broken_node_succeeds_on_the_next(kind: str, broken: str, outcome: O) -> None:
    servers: Dict[str, Callable[[], Server]] = {
        "failing": lambda: HttpServer(500),
        "refusing": Refusing,
        "black_hole": BlackHole,
    }
    with HttpServer() as healthy, servers[broken]() as bad:
        client = Client(kind, [bad.url, healthy.url])
        statuses = []
        # The default algorithm breaks ties at random: the broken node is met within a few requests, and
        # avoided after.
        for _ in range(100):
            statuses.append(client.send())
            if client.balancer.stats().released(outcome) > 0:
                break
        client.close()
        assert statuses == [200] * len(statuses)
        assert healthy.requests == len(statuses)
        stats = client.balancer.stats()
        assert stats.released(outcome) == 1 and stats.released(O.SUCCESS) == len(statuses)
        assert attempts(client) == len(statuses) + 1
        budget = client.budget.stats()
        assert (budget["requests"], budget["retries"], budget["denied"]) == (len(statuses), 1, 0)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    "status, outcome, retried",
    [
        (200, O.SUCCESS, False),
        (404, O.CLIENT_ERROR, False),
        (429, O.THROTTLED, True),
        (500, O.FAILURE, True),
        (503, O.DROPPED, True),
    ],
)
def test_which_answers_are_retried(kind: str, status: int, outcome: O, retried: bool) -> None:
    with HttpServer(status) as a, HttpServer(status) as b:
        client = Client(kind, [a.url, b.url])
        assert client.send() == status  # the last attempt's answer
        client.close()
        hits = 2 if retried else 1
        assert (a.requests + b.requests, attempts(client)) == (hits, hits)
        assert client.balancer.stats().released(outcome) == hits
        if retried:
            assert a.requests == b.requests == 1  # the retry went to the other node


@pytest.mark.parametrize("kind", KINDS)
def test_only_requests_that_may_be_sent_twice_are_retried(kind: str) -> None:
    """By default: idempotent methods with a body that can be sent again; `retry_if` decides otherwise."""
    cases: List[Tuple[Dict[str, Any], Dict[str, Any], int]] = [
        ({}, {"method": "POST", "body": b"x"}, 1),
        ({}, {"method": "PUT", "body": b"x"}, 2),
        ({}, {"method": "PUT", "body": b"x", "streamed": True}, 1),
        ({"retry_if": lambda request: True}, {"method": "POST", "body": b"x"}, 2),
        ({"retry_if": lambda request: request.method == "POST"}, {"method": "GET"}, 1),
        ({"retries": 0}, {"method": "GET"}, 1),
    ]
    for options, request, hits in cases:
        with HttpServer(500) as a, HttpServer(500) as b:
            client = Client(kind, [a.url, b.url], **options)
            assert client.send(**request) == 500
            client.close()
            assert (a.requests + b.requests, attempts(client)) == (hits, hits), (options, request)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("broken", ["failing", "refusing"])
def test_with_every_node_failing_the_retries_stay_within_the_budget(kind: str, broken: str) -> None:
    """Three broken nodes and two retries allowed per request, but a budget of 10 % of the requests: the
    requests end with the last attempt's answer (a 500) or error (a refused connection)."""
    make: Callable[[], Server] = (lambda: HttpServer(500)) if broken == "failing" else Refusing
    with make() as a, make() as b, make() as c:
        budget = weir.RetryBudget(ratio=0.1, per_second=0.0)
        client = Client(kind, [a.url, b.url, c.url], retries=2, retry_budget=budget)
        assert client.budget is budget
        answers = []
        for _ in range(50):
            try:
                answers.append(client.send())
            except ERRORS as e:
                answers.append(type(e).__name__)
        client.close()
        assert len(set(answers)) == 1 and answers[0] == (500 if broken == "failing" else answers[0])
        if broken == "refusing":
            assert answers[0] in ("ConnectError", "ConnectionError")
        stats = budget.stats()
        # Each request is counted before its first attempt, so the k-th may take the budget to 0.1 k.
        assert stats["requests"] == 50 and 4 <= stats["retries"] <= 5
        assert stats["denied"] >= 40
        assert attempts(client) == 50 + stats["retries"]
        assert client.balancer.stats().released(O.FAILURE) == 50 + stats["retries"]
        if broken == "failing":
            assert a.requests + b.requests + c.requests == 50 + stats["retries"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_backoff_waits_before_the_retry(kind: str) -> None:
    backoff = weir.Backoff(initial=0.05, jitter="none")
    with HttpServer(500) as a, HttpServer() as b:
        client = Client(kind, [a.url, b.url], retry_backoff=backoff)
        sends = 0
        for _ in range(100):
            start = time.monotonic()
            assert client.send() == 200
            took = time.monotonic() - start
            sends += 1
            if a.requests:
                break
        client.close()
    assert a.requests == 1
    assert took >= 0.05  # a lower bound: a sleep is never shorter
    # A failure for the 500, a success for each 200 (as @weir.retry reports them).
    stats = backoff.stats()
    assert (stats["went_up"], stats["invocations"]) == (1, sends + 1)


def test_a_cancelled_request_is_not_retried() -> None:
    async def main(urls: List[str]) -> weir.Balancer:
        transport = weir.httpx.AsyncTransport(urls)
        async with httpx.AsyncClient(transport=transport, base_url="http://users", timeout=10) as client:
            task = asyncio.ensure_future(client.get("/"))
            for _ in range(500):
                await asyncio.sleep(0.01)
                if transport.balancer.stats().in_flight == 1:
                    break
            await asyncio.sleep(0.05)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        return transport.balancer

    with BlackHole() as one, BlackHole() as two:
        balancer = asyncio.run(asyncio.wait_for(main([one.url, two.url]), 30))
        assert one.requests + two.requests == 1
    stats = balancer.stats()
    assert stats.by_outcome == (0, 0, 0, 1, 0, 0) and stats.acquired == 1 and stats.in_flight == 0


def test_a_streamed_failed_response_is_closed_before_the_retry() -> None:
    """requests with stream=True and httpx's client.stream: the 500 is read and closed (its lease released
    FAILURE), the retry's response is the one handed over, its lease held until it is closed."""
    with HttpServer(500) as a, HttpServer() as b:
        adapter = weir.requests.Adapter([a.url, b.url])
        transport = weir.httpx.Transport([a.url, b.url])
        with requests.Session() as s, httpx.Client(transport=transport, base_url="http://users") as h:
            s.mount("http://users/", adapter)
            for _ in range(100):
                with s.get("http://users/", stream=True) as r:
                    assert r.status_code == 200 and adapter.balancer.stats().in_flight == 1
                with h.stream("GET", "/") as r2:
                    assert r2.status_code == 200 and transport.balancer.stats().in_flight == 1
                if adapter.balancer.stats().released(O.FAILURE) and transport.balancer.stats().released(
                    O.FAILURE
                ):
                    break
        for balancer in (adapter.balancer, transport.balancer):
            stats = balancer.stats()
            assert stats.released(O.FAILURE) == 1 and stats.in_flight == 0
            assert stats.acquired == stats.released_total


def body_iterator() -> Iterator[bytes]:
    yield b"x"


@pytest.mark.parametrize(
    "options, error",
    [
        ({"retries": -1}, ValueError),
        ({"retries": 1.0}, TypeError),
        ({"retries": True}, TypeError),
        ({"retries": None}, TypeError),
        ({"retry_budget": 0.2}, TypeError),
        ({"retry_backoff": 0.1}, TypeError),
        ({"retry_if": "GET"}, TypeError),
    ],
)
def test_bad_retry_options(options: Dict[str, Any], error: type) -> None:
    for make in (weir.httpx.Transport, weir.httpx.AsyncTransport, weir.requests.Adapter):
        with pytest.raises(error, match=next(iter(options))):
            make(["http://10.0.0.7"], **options)


def test_a_retry_if_that_raises_leaves_no_lease() -> None:
    def broken(request: Any) -> bool:
        raise RuntimeError("no")

    with HttpServer() as a:
        client = Client("httpx", [a.url], retry_if=broken)
        with pytest.raises(RuntimeError, match="no"):
            client.send()
        client.close()
        assert a.requests == 0 and client.balancer.stats().acquired == 0
