"""weir.requests against real local servers: requests rewritten to the node weir picks, statuses and
errors as outcomes, streamed bodies holding their lease until read or closed, timeouts, waiting or failing
fast, membership that follows a callable, and a fleet with a failing, a refusing and a black-holed
server, with every lease accounted for."""

from __future__ import annotations

from typing import Any, Union

import pytest
import requests

import weir
import weir.requests
from servers import BlackHole, Fleet, HttpServer, Stalling

O = weir.Outcome
TIMEOUT = 0.2
REQUESTS = 400
WORKERS = 8


def session(adapter: weir.requests.Adapter) -> requests.Session:
    s = requests.Session()
    s.mount("http://users/", adapter)
    return s


def kind(result: Union[requests.Response, BaseException]) -> str:
    if isinstance(result, requests.Response):
        return {200: "healthy", 500: "failing"}[result.status_code]
    # Before ConnectionError: a ConnectTimeout is both.
    if isinstance(result, requests.Timeout):
        return "black_hole"
    if isinstance(result, requests.ConnectionError):
        return "refusing"
    raise result


def test_a_fleet_through_a_session() -> None:
    with Fleet() as fleet:
        # One attempt per request (no retry elsewhere): the counts are what the client saw.
        adapter = weir.requests.Adapter(fleet.urls, wait=5.0, retries=0)
        with session(adapter) as s:

            def send() -> str:
                try:
                    return kind(s.get("http://users/api", timeout=TIMEOUT))
                except requests.RequestException as e:
                    return kind(e)

            seen = fleet.from_threads(send, REQUESTS, WORKERS)
        assert len(seen) == REQUESTS
        fleet.check("requests.Session", adapter.balancer, seen, WORKERS)


def test_a_request_is_rewritten_to_the_node() -> None:
    with HttpServer() as server:
        adapter = weir.requests.Adapter([server.url + "/v1"])
        with session(adapter) as s:
            r = s.put("http://users/api/items", params={"q": "a b"}, json={"x": 1}, headers={"X-Trace": "7"})
            echo = r.json()
            assert echo["method"] == "PUT"
            assert echo["path"] == "/v1/api/items?q=a+b"
            assert echo["body"] == '{"x": 1}'
            assert echo["headers"]["x-trace"] == "7"
            assert echo["host"] == f"127.0.0.1:{server.port}"
            by_hand = s.get("http://users/", headers={"Host": "users.internal"})
            assert by_hand.json()["host"] == "users.internal"
            assert r.url == "http://users/api/items?q=a+b" and r.request.url == r.url
            landed = s.get("http://users/redirect")
            assert landed.json()["path"] == "/v1/landed?from=redirect"
            assert landed.url == "http://users/landed?from=redirect"
            assert s.head("http://users/").status_code == 200
        stats = adapter.balancer.stats()
        assert stats.by_outcome == (5, 0, 0, 0, 0, 0) and stats.in_flight == 0


@pytest.mark.parametrize(
    "status, outcome",
    [(200, O.SUCCESS), (404, O.CLIENT_ERROR), (429, O.THROTTLED), (500, O.FAILURE), (503, O.DROPPED)],
)
def test_statuses_are_outcomes(status: int, outcome: O) -> None:
    with HttpServer(status) as server:
        adapter = weir.requests.Adapter([server.url])
        with session(adapter) as s:
            assert s.get("http://users/").status_code == status
        stats = adapter.balancer.stats()
        assert stats.released(outcome) == 1 and stats.released_total == 1 and stats.in_flight == 0


@pytest.mark.parametrize("stream", [False, True])
def test_timeouts_are_dropped_and_refusals_failures(stream: bool) -> None:
    with BlackHole() as hole, Stalling() as stall, Fleet() as fleet:
        for url, error, outcome in [
            (hole.url, requests.ReadTimeout, O.DROPPED),
            # The head arrives and the body never ends: requests calls that a ConnectionError, of
            # urllib3's ReadTimeoutError.
            (stall.url, requests.ConnectionError, O.DROPPED),
            (fleet.refusing.url, requests.ConnectionError, O.FAILURE),
        ]:
            adapter = weir.requests.Adapter([url])
            with session(adapter) as s:
                with pytest.raises(error):
                    s.get("http://users/", timeout=TIMEOUT, stream=stream).content
            stats = adapter.balancer.stats()
            assert stats.released(outcome) == 1 and stats.released_total == 1 and stats.in_flight == 0, url


def test_a_streamed_body_holds_its_lease_until_read_or_closed() -> None:
    with HttpServer() as server:
        adapter = weir.requests.Adapter([server.url])

        def in_flight() -> int:
            return adapter.balancer.stats().in_flight

        with session(adapter) as s:
            r = s.get("http://users/", stream=True)
            assert in_flight() == 1
            assert r.json()["path"] == "/"  # read to its end
            assert in_flight() == 0
            r = s.get("http://users/", stream=True)
            assert next(r.iter_content(4)) == b'{"me'
            assert in_flight() == 1
            r.close()
            assert in_flight() == 0
            with s.get("http://users/", stream=True) as r:
                assert in_flight() == 1
            assert in_flight() == 0
            r = s.head("http://users/", stream=True)
            r.content
            assert in_flight() == 0
        assert adapter.balancer.stats().by_outcome == (4, 0, 0, 0, 0, 0)


def test_no_room_waits_then_fails_and_no_node_fails() -> None:
    with HttpServer() as server:
        for wait in (0, 0.05):
            balancer = weir.Balancer(config=weir.Config(limit=weir.Fixed(1), seed=1))
            adapter = weir.requests.Adapter([server.url], balancer=balancer, wait=wait)
            with session(adapter) as s:
                with s.get("http://users/", stream=True):
                    with pytest.raises(weir.NoCapacity):
                        s.get("http://users/")
                assert s.get("http://users/").status_code == 200
            stats = adapter.balancer.stats()
            assert stats.by_outcome == (2, 0, 0, 0, 0, 0) and stats.in_flight == 0
    with session(weir.requests.Adapter([])) as s:
        with pytest.raises(weir.NoNodes):
            s.get("http://users/")


def test_members_follow_a_callable() -> None:
    with HttpServer() as a, HttpServer() as b:
        current = [a.url]
        adapter = weir.requests.Adapter(lambda: current)
        with session(adapter) as s:
            assert s.get("http://users/").json()["port"] == a.port
            current = [b.url]
            assert s.get("http://users/").json()["port"] == b.port
            assert list(adapter.balancer) == [b.url]


def test_the_balancers_classify_is_used() -> None:
    with Fleet() as fleet:
        balancer = weir.Balancer(config=weir.Config(seed=1), classify=lambda e: O.THROTTLED)
        adapter = weir.requests.Adapter([fleet.refusing.url], balancer=balancer)
        with session(adapter) as s:
            with pytest.raises(requests.ConnectionError):
                s.get("http://users/")
        assert balancer.stats().by_outcome == (0, 0, 0, 0, 1, 0)


@pytest.mark.parametrize(
    "nodes, wait, error",
    [
        (["10.0.0.7:8080"], 0.1, ValueError),
        (["http://10.0.0.7:port"], 0.1, ValueError),
        (["http://10.0.0.7/#x"], 0.1, ValueError),
        ([b"http://10.0.0.7"], 0.1, TypeError),
        (["http://10.0.0.7"], -0.5, ValueError),
        ("http://10.0.0.7", 0.1, TypeError),
        (["http://10.0.0.7"], None, TypeError),
    ],
)
def test_bad_arguments(nodes: Any, wait: Any, error: type) -> None:
    with pytest.raises(error):
        weir.requests.Adapter(nodes, wait=wait)
