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

When every node is at its concurrency limit a request waits up to ``wait`` seconds (0.1 by default, as
weir-tower; 0 fails at once) for room, then raises :class:`weir.NoCapacity`; with no node at all it raises
:class:`weir.NoNodes`. ``transport.balancer`` is the :class:`weir.Balancer`, for ``stats()`` and
``nodes()``.

Importing this module imports httpx (``pip install "weir-lb[httpx]"``); ``import weir`` does not.
"""

from __future__ import annotations

from datetime import timedelta
from typing import AsyncIterator, Iterator, Optional, Union

import httpx

import weir
from weir._http import (
    Members,
    Nodes,
    not_a_base_url,
    release,
    release_raised,
    status_outcome,
    wait_timeout,
)
from weir._types import Outcome
from weir._weir import Lease

__all__ = ["AsyncTransport", "Nodes", "Transport"]


class _Balanced:
    """What both transports share: the balancer, its membership, the wait, and the rewrite."""

    def __init__(
        self, nodes: Nodes, balancer: Optional[weir.Balancer], wait: Union[float, timedelta]
    ) -> None:
        self._timeout = wait_timeout(wait)
        self._members = Members(nodes, balancer, _parse, weir.Balancer)
        self._balancer = self._members.balancer

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

    ``Transport(nodes, *, balancer=None, wait=0.1, transport=None)``: ``nodes`` is a list of base URLs or
    a callable returning the current list (called before each request: keep it cheap; the balancer's
    members follow it); ``balancer`` a :class:`weir.Balancer` of your own configuration (the transport
    owns its membership); ``wait`` the seconds to wait for room; ``transport`` the inner transport.

    Thread-safe, as ``httpx.Client`` is.
    """

    def __init__(
        self,
        nodes: Nodes,
        *,
        balancer: Optional[weir.Balancer] = None,
        wait: Union[float, timedelta] = 0.1,
        transport: Optional[httpx.BaseTransport] = None,
    ) -> None:
        super().__init__(nodes, balancer, wait)
        self._transport = transport if transport is not None else httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self._members.refresh()
        lease = self._balancer.acquire(timeout=self._timeout)
        try:
            response = self._transport.handle_request(self._to(request, lease.node))
        except BaseException as exc:
            release_raised(lease, exc)
            raise
        return _hold(lease, response, asynchronous=False)

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
    ) -> None:
        super().__init__(nodes, balancer, wait)
        self._transport = transport if transport is not None else httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self._members.refresh()
        if self._timeout is None:
            lease = self._balancer.acquire()
        else:
            lease = await self._balancer.acquire_async(timeout=self._timeout)
        try:
            response = await self._transport.handle_async_request(self._to(request, lease.node))
        except BaseException as exc:
            release_raised(lease, exc)
            raise
        return _hold(lease, response, asynchronous=True)

    async def aclose(self) -> None:
        await self._transport.aclose()


def _hold(lease: Lease, response: httpx.Response, asynchronous: bool) -> httpx.Response:
    """Gives ``response`` a body (of the client's kind) that releases ``lease`` when it is closed, or
    releases it now if the inner transport read the body already (a mock does)."""
    outcome = status_outcome(response.status_code)
    stream = response.stream
    if not response.is_closed:
        if asynchronous and isinstance(stream, httpx.AsyncByteStream):
            response.stream = _AsyncStream(stream, lease, outcome)
            return response
        if not asynchronous and isinstance(stream, httpx.SyncByteStream):
            response.stream = _SyncStream(stream, lease, outcome)
            return response
    release(lease, outcome)
    return response


class _SyncStream(httpx.SyncByteStream):
    """A response body that holds its lease until it is closed (released with the status's outcome), or
    until reading it fails (released with the error's)."""

    def __init__(self, inner: httpx.SyncByteStream, lease: Lease, outcome: Outcome) -> None:
        self._inner = inner
        self._lease = lease
        self._outcome = outcome

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
            release(self._lease, self._outcome)


class _AsyncStream(httpx.AsyncByteStream):
    """:class:`_SyncStream` for ``httpx.AsyncClient``."""

    def __init__(self, inner: httpx.AsyncByteStream, lease: Lease, outcome: Outcome) -> None:
        self._inner = inner
        self._lease = lease
        self._outcome = outcome

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
            release(self._lease, self._outcome)
