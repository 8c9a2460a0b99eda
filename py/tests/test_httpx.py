"""weir.httpx against real local servers: requests rewritten to the node weir picks, statuses and errors
as outcomes, streamed bodies holding their lease until closed, cancellation and timeouts, waiting or
failing fast, membership that follows a callable, and a fleet with a failing, a refusing and a
black-holed server, sync and async, with every lease accounted for."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any, Dict, List, Union

import httpx
import pytest

import weir
import weir.httpx
from servers import BlackHole, Fleet, HttpServer, Stalling

O = weir.Outcome
# The client's timeout: what a request to the black hole costs.
TIMEOUT = 0.2
REQUESTS = 400
WORKERS = 8


def kind(result: Union[httpx.Response, BaseException]) -> str:
    """Which server of the fleet answered, told by what the client saw."""
    if isinstance(result, httpx.Response):
        return {200: "healthy", 500: "failing"}[result.status_code]
    if isinstance(result, httpx.ConnectError):
        return "refusing"
    if isinstance(result, httpx.TimeoutException):
        return "black_hole"
    raise result


def test_a_fleet_through_a_sync_client() -> None:
    with Fleet() as fleet:
        # One attempt per request (no retry elsewhere): the counts are what the client saw.
        transport = weir.httpx.Transport(fleet.urls, wait=5.0, retries=0)
        with httpx.Client(transport=transport, base_url="http://users", timeout=TIMEOUT) as client:

            def send() -> str:
                try:
                    return kind(client.get("/api"))
                except httpx.TransportError as e:
                    return kind(e)

            seen = fleet.from_threads(send, REQUESTS, WORKERS)
        assert len(seen) == REQUESTS
        fleet.check("httpx.Client", transport.balancer, seen, WORKERS)


def test_a_fleet_through_an_async_client() -> None:
    async def main(fleet: Fleet) -> None:
        # One attempt per request (no retry elsewhere): the counts are what the client saw.
        transport = weir.httpx.AsyncTransport(fleet.urls, wait=5.0, retries=0)
        seen: List[str] = []
        async with httpx.AsyncClient(transport=transport, base_url="http://users", timeout=TIMEOUT) as client:

            async def worker() -> None:
                for _ in range(REQUESTS // WORKERS):
                    try:
                        result: Union[httpx.Response, BaseException] = await client.get("/api")
                    except httpx.TransportError as e:
                        result = e
                    seen.append(kind(result))

            await asyncio.wait_for(asyncio.gather(*(worker() for _ in range(WORKERS))), 60)
        assert len(seen) == REQUESTS
        fleet.check("httpx.AsyncClient", transport.balancer, seen, WORKERS)

    with Fleet() as fleet:
        asyncio.run(main(fleet))


def test_a_request_is_rewritten_to_the_node() -> None:
    with HttpServer() as server:
        transport = weir.httpx.Transport([server.url + "/v1/"])
        with httpx.Client(transport=transport, base_url="http://users:9999") as client:
            r = client.post(
                "/api/items", params={"q": "a b", "n": 2}, json={"x": 1}, headers={"X-Trace": "7"}
            )
            echo: Dict[str, Any] = r.json()
            assert echo["method"] == "POST"
            # The path and query string as the client encoded them, behind the node's prefix.
            assert echo["path"] == "/v1" + r.request.url.raw_path.decode()
            assert r.request.url.path == "/api/items" and r.request.url.params["q"] == "a b"
            assert echo["body"] == r.request.content.decode() and json.loads(echo["body"]) == {"x": 1}
            assert echo["headers"]["x-trace"] == "7"
            # Host named the placeholder, so it follows the URL; a Host set by hand is kept.
            assert echo["host"] == f"127.0.0.1:{server.port}"
            assert client.get("/", headers={"Host": "users.internal"}).json()["host"] == "users.internal"
            # The response keeps the URL that was asked for.
            assert r.url == httpx.URL("http://users:9999/api/items", params={"q": "a b", "n": 2})
            # A relative redirect goes through the balancer again.
            landed = client.get("/redirect", follow_redirects=True)
            assert landed.json()["path"] == "/v1/landed?from=redirect"
            assert str(landed.url) == "http://users:9999/landed?from=redirect"
        assert transport.balancer.stats().by_outcome == (4, 0, 0, 0, 0, 0)


@pytest.mark.parametrize(
    "status, outcome",
    [(200, O.SUCCESS), (404, O.CLIENT_ERROR), (429, O.THROTTLED), (500, O.FAILURE), (503, O.DROPPED)],
)
def test_statuses_are_outcomes(status: int, outcome: O) -> None:
    with HttpServer(status) as server:
        transport = weir.httpx.Transport([server.url])
        with httpx.Client(transport=transport, base_url="http://users") as client:
            assert client.get("/").status_code == status
        stats = transport.balancer.stats()
        assert stats.released(outcome) == 1 and stats.released_total == 1 and stats.in_flight == 0


def test_timeouts_are_dropped_and_refusals_failures() -> None:
    with BlackHole() as hole, Stalling() as stall, Fleet() as fleet:
        for url, error, outcome in [
            (hole.url, httpx.ReadTimeout, O.DROPPED),
            (stall.url, httpx.ReadTimeout, O.DROPPED),  # the head arrives, the body never ends
            (fleet.refusing.url, httpx.ConnectError, O.FAILURE),
        ]:
            transport = weir.httpx.Transport([url])
            with httpx.Client(transport=transport, base_url="http://users", timeout=TIMEOUT) as client:
                with pytest.raises(error):
                    client.get("/")
            stats = transport.balancer.stats()
            assert stats.released(outcome) == 1 and stats.released_total == 1 and stats.in_flight == 0


def test_a_streamed_body_holds_its_lease_until_closed() -> None:
    with HttpServer() as server:
        transport = weir.httpx.Transport([server.url])
        with httpx.Client(transport=transport, base_url="http://users") as client:
            with client.stream("GET", "/") as r:
                assert r.status_code == 200
                assert transport.balancer.stats().in_flight == 1
                next(r.iter_bytes())
            assert transport.balancer.stats().in_flight == 0
            # Closed before a byte was read: still the status's outcome.
            with client.stream("GET", "/"):
                pass
        assert transport.balancer.stats().by_outcome == (2, 0, 0, 0, 0, 0)


def test_async_cancellation_mid_request_and_mid_body_is_ignored() -> None:
    async def cancel_after_start(url: str, stream: bool) -> weir.Balancer:
        transport = weir.httpx.AsyncTransport([url])
        async with httpx.AsyncClient(transport=transport, base_url="http://users", timeout=10) as client:

            async def call() -> None:
                if stream:
                    async with client.stream("GET", "/") as r:
                        await r.aread()
                else:
                    await client.get("/")

            task = asyncio.ensure_future(call())
            for _ in range(500):
                await asyncio.sleep(0.01)
                if transport.balancer.stats().in_flight == 1:
                    break
            await asyncio.sleep(0.05)  # into the wait for the answer (or the rest of the body)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        return transport.balancer

    with BlackHole() as hole, Stalling() as stall:
        for url, stream in [(hole.url, False), (stall.url, True), (stall.url, False)]:
            balancer = asyncio.run(asyncio.wait_for(cancel_after_start(url, stream), 30))
            stats = balancer.stats()
            assert stats.by_outcome == (0, 0, 0, 1, 0, 0), (url, stream)
            assert stats.in_flight == 0


def test_an_async_timeout_is_dropped() -> None:
    async def main(url: str) -> weir.Balancer:
        transport = weir.httpx.AsyncTransport([url])
        async with httpx.AsyncClient(transport=transport, base_url="http://users", timeout=TIMEOUT) as client:
            with pytest.raises(httpx.ReadTimeout):
                await client.get("/")
        return transport.balancer

    with BlackHole() as hole:
        stats = asyncio.run(asyncio.wait_for(main(hole.url), 30)).stats()
    assert stats.by_outcome == (0, 0, 1, 0, 0, 0) and stats.in_flight == 0


def test_no_room_waits_then_fails_and_no_node_fails() -> None:
    with HttpServer() as server:
        for wait in (0, 0.05):
            transport = weir.httpx.Transport(
                [server.url], balancer=weir.Balancer(config=weir.Config(limit=weir.Fixed(1), seed=1)), wait=wait
            )
            with httpx.Client(transport=transport, base_url="http://users") as client:
                with client.stream("GET", "/"):
                    with pytest.raises(weir.NoCapacity):
                        client.get("/")
                assert client.get("/").status_code == 200
            stats = transport.balancer.stats()
            assert stats.by_outcome == (2, 0, 0, 0, 0, 0) and stats.in_flight == 0
    with httpx.Client(transport=weir.httpx.Transport([]), base_url="http://users") as client:
        with pytest.raises(weir.NoNodes):
            client.get("/")


def test_async_no_room_waits_off_the_loop_then_fails() -> None:
    async def main(url: str) -> weir.Balancer:
        transport = weir.httpx.AsyncTransport(
            [url], balancer=weir.Balancer(config=weir.Config(limit=weir.Fixed(1), seed=1)), wait=0.05
        )
        async with httpx.AsyncClient(transport=transport, base_url="http://users") as client:
            async with client.stream("GET", "/"):
                with pytest.raises(weir.NoCapacity):
                    await client.get("/")
            assert (await client.get("/")).status_code == 200
        return transport.balancer

    with HttpServer() as server:
        stats = asyncio.run(asyncio.wait_for(main(server.url), 30)).stats()
    assert stats.by_outcome == (2, 0, 0, 0, 0, 0) and stats.in_flight == 0


def test_members_follow_a_callable() -> None:
    with HttpServer() as a, HttpServer() as b:
        current = [a.url]
        transport = weir.httpx.Transport(lambda: current)
        with httpx.Client(transport=transport, base_url="http://users") as client:
            assert client.get("/").json()["port"] == a.port
            current = [b.url]
            assert client.get("/").json()["port"] == b.port
            assert list(transport.balancer) == [b.url]
            current = [a.url, b.url]
            client.get("/")
            assert sorted(transport.balancer) == sorted([a.url, b.url])
            current = []
            with pytest.raises(weir.NoNodes):
                client.get("/")
        assert transport.balancer.stats().released(O.SUCCESS) == 3


def test_members_follow_a_list_that_changes_under_threads() -> None:
    """Workers send while another thread keeps changing the list: every request is answered, every
    lease is released (to a member, or stale to one removed meanwhile), and the members end as the list
    does."""
    with HttpServer() as a, HttpServer() as b:
        lists = [[a.url], [b.url], [a.url, b.url]]
        current = lists[0]
        stop = threading.Event()

        def change() -> None:
            nonlocal current
            i = 0
            while not stop.is_set():
                i += 1
                current = lists[i % len(lists)]
                stop.wait(0.001)

        transport = weir.httpx.Transport(lambda: current, wait=5.0)
        answered: List[int] = []
        with httpx.Client(transport=transport, base_url="http://users", timeout=5) as client:

            def worker() -> None:
                for _ in range(50):
                    answered.append(client.get("/").status_code)

            changer = threading.Thread(target=change)
            changer.start()
            workers = [threading.Thread(target=worker) for _ in range(4)]
            for t in workers:
                t.start()
            for t in workers:
                t.join(timeout=60)
            stop.set()
            changer.join(timeout=5)
            current = [b.url]
            client.get("/")
        assert answered == [200] * 200
        stats = transport.balancer.stats()
        # A grant whose node is removed before the acquire returns is handed back (stale) and tried
        # again, so `acquired` may pass the 201 requests; every lease still comes back.
        assert stats.in_flight == 0 and stats.acquired >= 201
        assert stats.released(O.SUCCESS) + stats.released_stale == stats.acquired
        assert stats.released_total == stats.released(O.SUCCESS)
        assert list(transport.balancer) == [b.url]
        assert a.requests + b.requests == 201


def answer_with_the_host(request: httpx.Request) -> httpx.Response:
    """An inner transport's answer: the host the request was rewritten to."""
    return httpx.Response(200, text=request.url.host)


def test_a_list_that_moves_to_other_nodes_never_leaves_the_balancer_empty() -> None:
    """While the list moves from [a] to [b], b joins before a leaves: a request on another thread finds a
    member at every step, never an empty balancer (NoNodes)."""
    sizes: List[int] = []

    class Watched(weir.Balancer[str]):
        """Records its member count after each change of membership."""

        def add(self, node: str) -> None:
            super().add(node)
            sizes.append(len(self))

        def remove(self, node: str) -> None:
            super().remove(node)
            sizes.append(len(self))

    current = ["http://a.test"]
    mock = httpx.MockTransport(answer_with_the_host)
    transport = weir.httpx.Transport(lambda: current, balancer=Watched(), transport=mock)
    with httpx.Client(transport=transport, base_url="http://users") as client:
        assert client.get("/").text == "a.test" and sizes == [1]
        current = ["http://b.test"]
        assert client.get("/").text == "b.test"
        assert sizes == [1, 2, 1]
        current = ["http://c.test", "http://d.test"]
        client.get("/")
        assert sizes == [1, 2, 1, 2, 3, 2]
    assert sorted(transport.balancer) == ["http://c.test", "http://d.test"]


def test_a_full_balancer_makes_room_from_the_departing_nodes() -> None:
    current = ["http://a.test"]
    balancer = weir.Balancer(config=weir.Config(seed=1), capacity=1)
    mock = httpx.MockTransport(answer_with_the_host)
    transport = weir.httpx.Transport(lambda: current, balancer=balancer, transport=mock)
    with httpx.Client(transport=transport, base_url="http://users") as client:
        assert client.get("/").text == "a.test"
        # No slot for b until a leaves: a leaves first.
        current = ["http://b.test"]
        assert client.get("/").text == "b.test"
        assert list(balancer) == ["http://b.test"]
        # A departing node whose lease is in flight keeps its slot until the lease ends: the change
        # cannot be made yet, and is made at the first request after.
        held = balancer.acquire()
        current = ["http://c.test"]
        with pytest.raises(weir.CapacityFull):
            client.get("/")
        assert held.succeeded() is False
        assert client.get("/").text == "c.test"
        assert list(balancer) == ["http://c.test"]


def test_the_balancers_classify_and_an_inner_transport() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/down":
            raise httpx.ConnectError("refused", request=request)
        return httpx.Response(503 if request.url.path == "/busy" else 200, text="read already")

    balancer = weir.Balancer(config=weir.Config(seed=1), classify=lambda e: O.IGNORED)
    mock = httpx.MockTransport(refuse)
    transport = weir.httpx.Transport(["http://10.9.9.9"], balancer=balancer, transport=mock)
    with httpx.Client(transport=transport, base_url="http://users") as client:
        with pytest.raises(httpx.ConnectError):
            client.get("/down")
        # A mock's response body is read already: the lease ends with the call.
        assert client.get("/busy").status_code == 503
        assert client.get("/").text == "read already"
    assert balancer.stats().by_outcome == (1, 0, 1, 1, 0, 0)
    assert balancer.stats().in_flight == 0


@pytest.mark.parametrize(
    "nodes, wait, error",
    [
        (["10.0.0.7:8080"], 0.1, ValueError),
        (["ftp://10.0.0.7"], 0.1, ValueError),
        (["http://10.0.0.7/?q=1"], 0.1, ValueError),
        (["http://[::1"], 0.1, ValueError),
        ([7], 0.1, TypeError),
        (["http://10.0.0.7"], -1.0, ValueError),
        ("http://10.0.0.7", 0.1, TypeError),
        (["http://10.0.0.7"], float("nan"), ValueError),
        (["http://10.0.0.7"], "1", TypeError),
    ],
)
def test_bad_arguments(nodes: Any, wait: Any, error: type) -> None:
    with pytest.raises(error):
        weir.httpx.Transport(nodes, wait=wait)
    with pytest.raises(error):
        weir.httpx.AsyncTransport(nodes, wait=wait)
