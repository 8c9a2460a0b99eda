"""weir for requests: an adapter that balances each request of a ``requests.Session`` over a list of base
URLs. Mount it on a prefix of your choosing, an http URL whose host is a name for the service::

    import requests, weir.requests

    session = requests.Session()
    session.mount("http://users/", weir.requests.Adapter(["http://10.0.0.7:8080", "http://10.0.0.8:8080"]))
    r = session.get("http://users/api/users", params={"id": 3}, timeout=2)  # to whichever node weir picks

Each request takes a lease on a node, is rewritten to it (scheme, host and port, and the node's path prefix
if it has one; the path, query string, headers and body stay; a ``Host`` header set by hand is kept, else
urllib3 names the node), and is sent by ``requests.adapters.HTTPAdapter`` (keyword arguments such as
``max_retries`` and ``pool_maxsize`` go to it). The lease is released with the response's status
(:meth:`weir.Outcome.from_http_status`) once the body is read: at once for a normal request, and for
``stream=True`` when the body has been read to its end or the response is closed (``with
session.get(..., stream=True) as r:``). An error on the way or while the body is read is classified by
the balancer's ``classify`` (:func:`weir.outcome_for_exception` by default: a timeout DROPPED, a refused
or reset connection FAILURE). The response keeps the URL that was asked for (``r.url``, ``r.request``),
so a relative redirect is balanced again.

The node's load report, when a response has one (an ``endpoint-load-metrics`` header, gRPC's ORCA report
as Envoy reads it over HTTP: ``application_utilization:0.62, cpu_utilization:0.55``, or the older ``TEXT
cpu_utilization=0.55``), goes with the release as ``load=``: its utilization, 1.0 at the server's knee.
A :class:`weir.Knee` limit alone reads it, and only in the minute (``armed_for``) after the node's last
drop, where it stands in for the latency, so that a client started while the fleet is loaded still finds
the servers' knee. A header that cannot be read counts as none; without one, nothing changes.

When every node is at its concurrency limit a request waits up to ``wait`` seconds (0.1 by default; 0
fails at once) for room, then raises :class:`weir.NoCapacity`; with no node at all, :class:`weir.NoNodes`.
``adapter.balancer`` is the :class:`weir.Balancer`, for ``stats()`` and ``nodes()``.

A request whose attempt failed (a refused or reset connection, a timeout, a 5xx, a 429; never a success or
another 4xx) is sent once more (``retries=1``, the default; 0 turns it off) to a node it has not tried,
when it may be sent twice (``retry_if(prepared_request)``, by default an idempotent method:
:data:`IDEMPOTENT`), its body can be sent again (none, bytes or text: not a file or a generator), another
member exists and has room, and the shared :class:`weir.RetryBudget` admits it (``retry_budget=``, by
default one of the adapter's own: 20 % of the requests plus 10 a second over 10 s). With
``retry_backoff=weir.Backoff(...)`` it first waits what the backoff's ``on_failure()`` says. Each
attempt's lease is released with its own outcome; a failed streamed response is read and closed before
the retry. When no retry is made, the request ends as its last attempt did: that response, or that
error. ``timeout`` applies to each attempt. Unlike urllib3's ``max_retries`` (which retries on the same
node, and stays off by default), these retries go elsewhere and are bounded by the budget.

Importing this module imports requests (``pip install "./py[requests]"`` from a checkout;
``weir-lb[requests]`` after the first release); ``import weir`` does not.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Callable, Iterator, Mapping, Optional, Tuple, Union
from urllib.parse import SplitResult, urlsplit, urlunsplit

import requests
import requests.adapters

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

__all__ = ["IDEMPOTENT", "Adapter", "Nodes"]

_Timeout = Union[None, float, Tuple[float, float], Tuple[float, None]]


class Adapter(requests.adapters.HTTPAdapter):
    """A ``requests.adapters.HTTPAdapter`` that balances each request over ``nodes`` (see the module).

    ``Adapter(nodes, *, balancer=None, wait=0.1, retries=1, retry_budget=None, retry_backoff=None,
    retry_if=None, **kwargs)``: ``nodes`` is a list of base URLs or a callable returning the current list
    (called before each request: keep it cheap; the balancer's members follow it); ``balancer`` a
    :class:`weir.Balancer` of your own configuration (the adapter owns its membership); ``wait`` the
    seconds to wait for room; the ``retr*`` options as the module says (``adapter.retry_budget`` is the
    budget); ``kwargs`` go to ``HTTPAdapter``.

    Thread-safe as far as requests is: one adapter may serve several sessions and threads.
    """

    def __init__(
        self,
        nodes: Nodes,
        *,
        balancer: Optional[weir.Balancer] = None,
        wait: Union[float, timedelta] = 0.1,
        retries: int = 1,
        retry_budget: Optional[weir.RetryBudget] = None,
        retry_backoff: Optional[weir.Backoff] = None,
        retry_if: Optional[Callable[[requests.PreparedRequest], bool]] = None,
        **kwargs: Any,
    ) -> None:
        self._timeout = wait_timeout(wait)
        self._retry = Retry(retries, retry_budget, retry_backoff, retry_if, _method)
        self._members = Members(nodes, balancer, _parse, weir.Balancer)
        super().__init__(**kwargs)

    @property
    def balancer(self) -> weir.Balancer:
        """The balancer the requests go through (its members are the nodes)."""
        return self._members.balancer

    @property
    def retry_budget(self) -> weir.RetryBudget:
        """The retry budget the retries are admitted by (shared with whoever else was given it)."""
        return self._retry.budget

    def send(
        self,
        request: requests.PreparedRequest,
        stream: bool = False,
        timeout: _Timeout = None,
        verify: Union[bool, str] = True,
        cert: Union[None, bytes, str, Tuple[Union[bytes, str], Union[bytes, str]]] = None,
        proxies: Optional[Mapping[str, str]] = None,
    ) -> requests.Response:
        self._members.refresh()
        retryable = self._retry.start(request, _replayable)
        balancer = self.balancer
        lease = balancer.acquire(timeout=self._timeout)

        def attempt(lease: Lease) -> requests.Response:
            return self._attempt(
                request, lease, stream=stream, timeout=timeout, verify=verify, cert=cert, proxies=proxies
            )

        def drain(response: requests.Response) -> Optional[Exception]:
            # A streamed body is read and closed (its lease released with its status), so that the
            # response can still be the answer if no node has room for the retry; any other is read.
            if not stream:
                return None
            try:
                response.content  # noqa: B018
            except Exception as exc:
                return exc
            finally:
                response.close()
            return None

        return self._retry.send(balancer, retryable, lease, attempt, _status, drain)

    def _attempt(
        self, request: requests.PreparedRequest, lease: Lease, stream: bool, **kwargs: Any
    ) -> requests.Response:
        """One attempt on ``lease``'s node: the response, its lease released once its body is read (at
        once unless ``stream``) with the status's outcome and the server's reported load, or the error,
        its lease released with the error's outcome."""
        try:
            response = super().send(self._to(request, lease.node), stream=stream, **kwargs)
        except BaseException as exc:
            release_raised(lease, exc)
            raise
        response.url = request.url or response.url
        response.request = request
        outcome = status_outcome(response.status_code)
        load = server_load(response.headers.get(LOAD_HEADER))
        if stream:
            _hold(response, lease, outcome, load)
            return response
        try:
            response.content  # noqa: B018 (read now, so the lease ends with the body)
        except BaseException as exc:
            release_raised(lease, exc)
            raise
        release(lease, outcome, load)
        return response

    def _to(self, request: requests.PreparedRequest, node: str) -> requests.PreparedRequest:
        """A copy of ``request`` sent to ``node`` (the caller's stays as it was)."""
        base = self._members.base(node)
        url = urlsplit(request.url or "")
        copy = request.copy()
        copy.url = urlunsplit(
            (base.scheme, base.netloc, base.path.rstrip("/") + url.path, url.query, url.fragment)
        )
        return copy


def _method(request: requests.PreparedRequest) -> str:
    return request.method or "GET"


def _replayable(request: requests.PreparedRequest) -> bool:
    """Whether the body can be sent again: none, bytes or text, not a file or a generator."""
    return request.body is None or isinstance(request.body, (bytes, str))


def _status(response: requests.Response) -> int:
    return response.status_code


def _parse(node: str) -> SplitResult:
    try:
        url = urlsplit(node)
        url.port  # noqa: B018 (raises ValueError for a port that is not a number)
    except ValueError as e:
        raise not_a_base_url(node, e) from e
    if url.scheme not in ("http", "https") or not url.hostname or url.query or url.fragment:
        raise not_a_base_url(node)
    return url


def _hold(response: requests.Response, lease: Lease, outcome: Outcome, load: Optional[float]) -> None:
    """Holds ``lease`` until the streamed body of ``response`` has been read or the response closed.

    urllib3 hands its connection back (``raw.release_conn``) at the end of the body, after an error
    while reading it, and when requests closes the response; the lease is released then, with the
    status's outcome and the server's reported ``load``, or with the error's outcome when a read
    raised. A ``release_conn`` from inside a read waits for that read to finish, so an error it raises
    is seen first.
    """
    # urllib3's response: its methods are replaced on this one instance.
    raw: Any = response.raw
    reading = 0
    ended = False

    def end() -> None:
        nonlocal ended
        ended = True
        if reading == 0:
            release(lease, outcome, load)

    def enter() -> None:
        nonlocal reading
        reading += 1

    def leave(exc: Optional[BaseException]) -> None:
        nonlocal reading
        reading -= 1
        if exc is not None:
            release_raised(lease, exc)
        elif ended and reading == 0:
            release(lease, outcome, load)

    def read_with(method: Callable[..., Any]) -> Callable[..., Any]:
        def read(*args: Any, **kwargs: Any) -> Any:
            enter()
            try:
                data = method(*args, **kwargs)
            except BaseException as exc:
                leave(exc)
                raise
            leave(None)
            return data

        return read

    def chunks_with(method: Callable[..., Iterator[bytes]]) -> Callable[..., Iterator[bytes]]:
        def read_chunked(*args: Any, **kwargs: Any) -> Iterator[bytes]:
            enter()
            try:
                yield from method(*args, **kwargs)
            except GeneratorExit:
                # The reader stopped early; closing the response releases the lease.
                leave(None)
                raise
            except BaseException as exc:
                leave(exc)
                raise
            leave(None)

        return read_chunked

    release_conn = raw.release_conn

    def release_conn_and_lease() -> None:
        try:
            release_conn()
        finally:
            end()

    raw.release_conn = release_conn_and_lease
    raw.read = read_with(raw.read)
    if hasattr(raw, "read_chunked"):
        raw.read_chunked = chunks_with(raw.read_chunked)
