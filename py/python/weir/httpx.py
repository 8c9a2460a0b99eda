"""weir for httpx: transports that balance each request of an ``httpx.Client`` (:class:`Transport`) or an
``httpx.AsyncClient`` (:class:`AsyncTransport`) over a list of base URLs::

    import httpx, weir.httpx

    client = httpx.Client(
        base_url="http://users",   # any name: the transport sends each request to one of the nodes
        transport=weir.httpx.Transport(["http://10.0.0.7:8080", "http://10.0.0.8:8080"]),
        timeout=2.0,
    )
    r = client.get("/api/users", params={"id": 3})  # to 10.0.0.7 or 10.0.0.8, whichever weir picks

Each request takes a lease on a node, is rewritten to it (scheme, host, port, and the node's path prefix
if it has one; the path, query string, headers and body stay; a ``Host`` header that named the original
host names the node, one set by hand is kept), and is sent by the inner transport (by default
``httpx.HTTPTransport()``: configure TLS, HTTP/2, retries and pool limits there, since an
``httpx.Client`` given a transport ignores its own). The lease is released with the response's status
(:meth:`weir.Outcome.from_http_status`) when the response is closed, which for a non-streaming request
is as soon as its body is read, and for ``client.stream(...)`` when the ``with`` block ends: a streamed
body counts as in flight while it is read. An error (on the way or while the body is read) is classified
by the balancer's ``classify`` (:func:`weir.outcome_for_exception` by default: a timeout DROPPED, a refused
or reset connection FAILURE, a cancelled task IGNORED). The response keeps the URL that was asked for, so
a relative redirect is balanced again.

A response that carries the node's load report, gRPC's ORCA ``endpoint-load-metrics`` header in its
native HTTP encoding (``application_utilization:0.62, cpu_utilization:0.55``; the older ``TEXT
application_utilization=0.62`` too), releases its lease with that utilization as ``load=`` (1.0 is the
server at its knee; ``application_utilization``, else ``cpu_utilization``). Only a :class:`weir.Knee`
limit reads it, within a minute (its ``armed_for``) of the node's last drop, in place of the latency: so
a client that starts while the fleet is loaded still finds the servers' knee. A header that cannot be
read counts as none, and a response without one is released as before.

When every node is at its concurrency limit a request waits up to ``wait`` seconds (0.1 by default, as
weir-tower; 0 fails at once) for room, then raises :class:`weir.NoCapacity`; with no node at all it raises
:class:`weir.NoNodes`. ``transport.balancer`` is the :class:`weir.Balancer`, for ``stats()`` and
``nodes()``.

A request whose attempt failed (a refused or reset connection, a timeout, a 5xx, a 429; never a success or
another 4xx, never a cancellation) is sent once more (``retries=1``, the default; 0 turns it off) to a
node it has not tried, as Finagle and Linkerd do, when all of these hold: the request may be sent twice
(``retry_if(request)``, by default an idempotent method: :data:`IDEMPOTENT`), its body can be sent again
(given as bytes, not as a stream), another member exists and has room, and the shared
:class:`weir.RetryBudget` admits it (``retry_budget=``, by default one of the transport's own with
Finagle's defaults: retries up to 20 % of the requests plus 10 a second over 10 s). With
``retry_backoff=weir.Backoff(...)`` it first waits what the backoff's ``on_failure()`` says. Each
attempt's lease is released with its own outcome; a failed response is read and closed before the retry.
When no retry is made, the request ends as its last attempt did: that response, or that error. The
client's timeout applies to each attempt, and an error while the client reads the body of the response it
was handed is not retried.

Importing this module imports httpx (``pip install "./py[httpx]"`` from a checkout; ``weir-lb[httpx]``
after the first release); ``import weir`` does not.
"""

from __future__ import annotations

from datetime import timedelta
from typing import AsyncIterator, Callable, Iterator, Optional, Union

import httpx

import weir
from weir._http import (
    IDEMPOTENT,
    LOAD_HEADER,
    Members,
    Nodes,
    Retry,
    not_a_base_url,
    release,
    release_raised,
    server_load,
    status_outcome,
    wait_timeout,
)
from weir._types import Outcome
from weir._weir import Lease

__all__ = ["IDEMPOTENT", "AsyncTransport", "Nodes", "Transport"]


class _Balanced:
    """What both transports share: the balancer, its membership, the wait, the retries, and the rewrite."""

    def __init__(
        self,
        nodes: Nodes,
        balancer: Optional[weir.Balancer],
        wait: Union[float, timedelta],
        retries: int,
        retry_budget: Optional[weir.RetryBudget],
        retry_backoff: Optional[weir.Backoff],
        retry_if: Optional[Callable[[httpx.Request], bool]],
    ) -> None:
        self._timeout = wait_timeout(wait)
        self._retry = Retry(retries, retry_budget, retry_backoff, retry_if, _method)
        self._members = Members(nodes, balancer, _parse, weir.Balancer)
        self._balancer = self._members.balancer

    @property
    def retry_budget(self) -> weir.RetryBudget:
        """The retry budget the retries are admitted by (shared with whoever else was given it)."""
        return self._retry.budget

    @property
    def balancer(self) -> weir.Balancer:
        """The balancer the requests go through (its members are the nodes)."""
        return self._balancer

    def _to(self, request: httpx.Request, node: str) -> httpx.Request:
        """``request`` rewritten to ``node``, as a new request (the caller's stays as it was)."""
        base = self._members.base(node)
        url = request.url
        target = url.copy_with(
            scheme=base.scheme,
            host=base.host,
            port=base.port,
            raw_path=base.raw_path.rstrip(b"/") + url.raw_path,
        )
        headers = request.headers.copy()
        # httpx set Host from the URL unless the caller gave one: follow the URL, keep the caller's.
        if headers.get("Host") == url.netloc.decode("ascii"):
            headers["Host"] = target.netloc.decode("ascii")
        return httpx.Request(
            request.method, target, headers=headers, stream=request.stream, extensions=request.extensions
        )


def _method(request: httpx.Request) -> str:
    return request.method


def _replayable(request: httpx.Request) -> bool:
    """Whether the body can be sent again: it was given as bytes (or read), not as a stream."""
    try:
        request.content  # noqa: B018 (raises for a streamed body not read)
    except httpx.RequestNotRead:
        return False
    return True


def _parse(node: str) -> httpx.URL:
    try:
        url = httpx.URL(node)
    except httpx.InvalidURL as e:
        raise not_a_base_url(node, e) from e
    if url.scheme not in ("http", "https") or not url.host or url.query or url.fragment:
        raise not_a_base_url(node)
    return url


class Transport(_Balanced, httpx.BaseTransport):
    """An ``httpx.BaseTransport`` that balances each request over ``nodes`` (see the module).

    ``Transport(nodes, *, balancer=None, wait=0.1, transport=None, retries=1, retry_budget=None,
    retry_backoff=None, retry_if=None)``: ``nodes`` is a list of base URLs or a callable returning the
    current list (called before each request: keep it cheap; the balancer's members follow it);
    ``balancer`` a :class:`weir.Balancer` of your own configuration (the transport owns its membership);
    ``wait`` the seconds to wait for room; ``transport`` the inner transport; the ``retr*`` options as the
    module says (``transport.retry_budget`` is the budget).

    Thread-safe, as ``httpx.Client`` is.
    """

    def __init__(
        self,
        nodes: Nodes,
        *,
        balancer: Optional[weir.Balancer] = None,
        wait: Union[float, timedelta] = 0.1,
        transport: Optional[httpx.BaseTransport] = None,
        retries: int = 1,
        retry_budget: Optional[weir.RetryBudget] = None,
        retry_backoff: Optional[weir.Backoff] = None,
        retry_if: Optional[Callable[[httpx.Request], bool]] = None,
    ) -> None:
        super().__init__(nodes, balancer, wait, retries, retry_budget, retry_backoff, retry_if)
        self._transport = transport if transport is not None else httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self._members.refresh()
        retryable = self._retry.start(request, _replayable)
        lease = self._balancer.acquire(timeout=self._timeout)

        def attempt(lease: Lease) -> httpx.Response:
            try:
                response = self._transport.handle_request(self._to(request, lease.node))
            except BaseException as exc:
                release_raised(lease, exc)
                raise
            return _hold(lease, response, asynchronous=False)

        return self._retry.send(self._balancer, retryable, lease, attempt, _status, _drain)

    def close(self) -> None:
        self._transport.close()


class AsyncTransport(_Balanced, httpx.AsyncBaseTransport):
    """An ``httpx.AsyncBaseTransport`` that balances each request over ``nodes``: :class:`Transport` for
    ``httpx.AsyncClient``. Waiting for room never blocks the event loop (``Balancer.acquire_async``); a
    task cancelled mid-request releases its lease as IGNORED.
    """

    def __init__(
        self,
        nodes: Nodes,
        *,
        balancer: Optional[weir.Balancer] = None,
        wait: Union[float, timedelta] = 0.1,
        transport: Optional[httpx.AsyncBaseTransport] = None,
        retries: int = 1,
        retry_budget: Optional[weir.RetryBudget] = None,
        retry_backoff: Optional[weir.Backoff] = None,
        retry_if: Optional[Callable[[httpx.Request], bool]] = None,
    ) -> None:
        super().__init__(nodes, balancer, wait, retries, retry_budget, retry_backoff, retry_if)
        self._transport = transport if transport is not None else httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self._members.refresh()
        retryable = self._retry.start(request, _replayable)
        lease = await self._balancer.acquire_async(timeout=self._timeout)

        async def attempt(lease: Lease) -> httpx.Response:
            try:
                response = await self._transport.handle_async_request(self._to(request, lease.node))
            except BaseException as exc:
                release_raised(lease, exc)
                raise
            return _hold(lease, response, asynchronous=True)

        return await self._retry.send_async(self._balancer, retryable, lease, attempt, _status, _adrain)

    async def aclose(self) -> None:
        await self._transport.aclose()


def _status(response: httpx.Response) -> int:
    return response.status_code


def _drain(response: httpx.Response) -> Optional[Exception]:
    """Reads and closes a failed response before its retry; what reading it raised, if anything."""
    try:
        response.read()
    except Exception as exc:
        return exc
    finally:
        response.close()
    return None


async def _adrain(response: httpx.Response) -> Optional[Exception]:
    """:func:`_drain` for an async response."""
    try:
        await response.aread()
    except Exception as exc:
        return exc
    finally:
        await response.aclose()
    return None


def _hold(lease: Lease, response: httpx.Response, asynchronous: bool) -> httpx.Response:
    """Gives ``response`` a body (of the client's kind) that releases ``lease`` when it is closed, or
    releases it now if the inner transport read the body already (a mock does). Either way the lease is
    released with the status's outcome and the load the server reported in the head, if it did."""
    outcome = status_outcome(response.status_code)
    load = server_load(response.headers.get(LOAD_HEADER))
    stream = response.stream
    if not response.is_closed:
        if asynchronous and isinstance(stream, httpx.AsyncByteStream):
            response.stream = _AsyncStream(stream, lease, outcome, load)
            return response
        if not asynchronous and isinstance(stream, httpx.SyncByteStream):
            response.stream = _SyncStream(stream, lease, outcome, load)
            return response
    release(lease, outcome, load)
    return response


class _SyncStream(httpx.SyncByteStream):
    """A response body that holds its lease until it is closed (released with the status's outcome and
    the server's reported load), or until reading it fails (released with the error's outcome)."""

    def __init__(
        self, inner: httpx.SyncByteStream, lease: Lease, outcome: Outcome, load: Optional[float]
    ) -> None:
        self._inner = inner
        self._lease = lease
        self._outcome = outcome
        self._load = load

    def __iter__(self) -> Iterator[bytes]:
        try:
            for chunk in self._inner:
                yield chunk
        except GeneratorExit:
            # The reader stopped early; closing the response releases the lease.
            raise
        except BaseException as exc:
            release_raised(self._lease, exc)
            raise

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            release(self._lease, self._outcome, self._load)


class _AsyncStream(httpx.AsyncByteStream):
    """:class:`_SyncStream` for ``httpx.AsyncClient``."""

    def __init__(
        self, inner: httpx.AsyncByteStream, lease: Lease, outcome: Outcome, load: Optional[float]
    ) -> None:
        self._inner = inner
        self._lease = lease
        self._outcome = outcome
        self._load = load

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._inner:
                yield chunk
        except GeneratorExit:
            raise
        except BaseException as exc:
            release_raised(self._lease, exc)
            raise

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            release(self._lease, self._outcome, self._load)
