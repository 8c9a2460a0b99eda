"""What an exception teaches the balancer: :func:`outcome_for_exception`, the rule every lease's context
exit uses unless its balancer was given another (``Balancer(..., classify=...)``).

It follows the outcome table of the Rust core and weir-tower's ``error_outcome``: a timeout is DROPPED (the
node is slow or overloaded: back off), a refused or reset connection or any other error is a FAILURE, a
cancellation is IGNORED (not the node's fault), an HTTP status error is read by its status. httpx, requests
and urllib3 are recognised without importing them: an exception of theirs can only exist once its library
was imported, so the rule looks for them in ``sys.modules`` and never imports anything itself.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import errno
import socket
import sys
import urllib.error
from typing import Any, FrozenSet, Optional, Tuple

from weir._types import Outcome

__all__ = ["outcome_for_exception"]

# Builtin timeouts; on Python < 3.11 the socket, asyncio and concurrent.futures ones are distinct classes.
_TIMEOUTS: Tuple[type, ...] = (
    TimeoutError,
    socket.timeout,
    asyncio.TimeoutError,
    concurrent.futures.TimeoutError,
)


def _errnos(*names: str) -> FrozenSet[int]:
    return frozenset(getattr(errno, name) for name in names if hasattr(errno, name))


# The errno table of the Rust core's `Outcome::from_raw_os_error` and C's `weir_outcome_from_errno`
# (`weir._weir.outcome_from_errno`; the tests check every errno against it).
# Errnos of a connection the node refused, reset or dropped, or a way to it that is broken: its fault, so
# a FAILURE (also the default; naming them stops the walk down the exception's causes).
_BROKEN_ERRNOS = _errnos(
    "ECONNREFUSED",
    "ECONNRESET",
    "ECONNABORTED",
    "ENOTCONN",
    "EPIPE",
    "EADDRNOTAVAIL",
    "EHOSTUNREACH",
    "ENETUNREACH",
)
# A timeout: a socket's read or write timeout (SO_RCVTIMEO) ends with EAGAIN.
_TIMEOUT_ERRNOS = _errnos("ETIMEDOUT", "EAGAIN", "EWOULDBLOCK")
# A signal (EINTR), or a local fault (the call never reached the node): nothing learnt about the node.
_LOCAL_ERRNOS = _errnos("EINTR", "EINVAL", "ENOMEM", "ENOSYS", "EOPNOTSUPP", "ENOTSUP")
# How many causes deep the walk looks before it settles for FAILURE.
_MAX_DEPTH = 16

# (outcome, None) when the exception says what it is; (None, inner) when it wraps the one to read.
_Known = Tuple[Optional[Outcome], Optional[BaseException]]


def outcome_for_exception(exc: BaseException) -> Outcome:
    """The outcome of a call that raised ``exc``, by the outcome table:

    * cancellation and the other exceptions that are not ``Exception`` (``asyncio.CancelledError``,
      ``KeyboardInterrupt``, ``SystemExit``, ``GeneratorExit``), ``concurrent.futures.CancelledError``:
      IGNORED, since the node did nothing wrong;
    * the caller's own mistakes, found before the node answered (httpx's ``InvalidURL``,
      ``UnsupportedProtocol``, ``LocalProtocolError``, ``StreamError``; requests' ``MissingSchema``,
      ``InvalidSchema``, ``InvalidURL``, ``InvalidHeader``, ``URLRequired``, ``StreamConsumedError``) and a
      full connection pool of the client's own (httpx's ``PoolTimeout``, urllib3's ``EmptyPoolError``):
      IGNORED;
    * an HTTP status error with its response (httpx's ``HTTPStatusError``, requests' ``HTTPError``,
      ``urllib.error.HTTPError``): the status's outcome, :meth:`Outcome.from_http_status` (FAILURE for a
      status outside 100..=599);
    * a timeout (``TimeoutError``, ``socket.timeout``, ``asyncio.TimeoutError``,
      ``concurrent.futures.TimeoutError``, httpx's ``TimeoutException``, requests' ``Timeout``, urllib3's
      ``TimeoutError``): DROPPED;
    * a refused, reset or aborted connection (``ConnectionError`` and its subclasses, an ``OSError`` with
      such an errno, httpx's ``ConnectError`` and ``RemoteProtocolError``, requests' ``ConnectionError``):
      FAILURE;
    * an ``OSError`` by its errno, as the Rust core's ``Outcome::from_raw_os_error`` and C's
      ``weir_outcome_from_errno`` read it: ``ETIMEDOUT``, ``EAGAIN`` (``BlockingIOError``) DROPPED;
      ``EINTR`` (``InterruptedError``) and the local faults ``EINVAL``, ``ENOMEM``, ``ENOSYS``,
      ``EOPNOTSUPP`` IGNORED, as is a ``MemoryError``; ``ECONNREFUSED``, ``ECONNRESET``, ``ECONNABORTED``,
      ``ENOTCONN``, ``EPIPE``, ``EADDRNOTAVAIL``, ``EHOSTUNREACH``, ``ENETUNREACH`` FAILURE;
    * anything else: what its ``__cause__`` (``raise ... from cause``), and the error a wrapper names
      (``urllib.error.URLError.reason``, urllib3's ``MaxRetryError.reason``, the urllib3 error a requests
      exception was built from), says; failing that, FAILURE.

    Pure and cheap; never raises, never imports a library. Pass it on for the cases a classifier of your
    own leaves alone::

        def classify(exc: BaseException) -> weir.Outcome:
            if isinstance(exc, QuotaExceeded):
                return weir.Outcome.THROTTLED
            return weir.outcome_for_exception(exc)

        backends = weir.Balancer(urls, classify=classify)
    """
    seen = set()
    current: Optional[BaseException] = exc
    for _ in range(_MAX_DEPTH):
        if current is None or id(current) in seen:
            break
        seen.add(id(current))
        outcome, inner = _known(current)
        if outcome is not None:
            return outcome
        current = inner if inner is not None else current.__cause__
    return Outcome.FAILURE


def _known(exc: BaseException) -> _Known:
    if not isinstance(exc, Exception):
        return Outcome.IGNORED, None
    if isinstance(exc, concurrent.futures.CancelledError):
        return Outcome.IGNORED, None
    for library in (_httpx, _requests, _urllib3):
        found = library(exc)
        if found != (None, None):
            return found
    if isinstance(exc, urllib.error.HTTPError):
        return _status(exc.code), None
    if isinstance(exc, _TIMEOUTS):
        return Outcome.DROPPED, None
    if isinstance(exc, urllib.error.URLError):
        return None, exc.reason if isinstance(exc.reason, BaseException) else None
    if isinstance(exc, MemoryError):
        return Outcome.IGNORED, None
    if isinstance(exc, OSError) and exc.errno is not None:
        # By the errno, not the class: BlockingIOError is also EINPROGRESS and EALREADY, which the table
        # reads as FAILURE.
        if exc.errno in _TIMEOUT_ERRNOS:
            return Outcome.DROPPED, None
        if exc.errno in _LOCAL_ERRNOS:
            return Outcome.IGNORED, None
        if exc.errno in _BROKEN_ERRNOS or isinstance(exc, ConnectionError):
            return Outcome.FAILURE, None
        return None, None
    # Raised without an errno: by the class, as the errno it stands for.
    if isinstance(exc, InterruptedError):
        return Outcome.IGNORED, None
    if isinstance(exc, BlockingIOError):
        return Outcome.DROPPED, None
    if isinstance(exc, ConnectionError):
        return Outcome.FAILURE, None
    return None, None


def _status(status: Any) -> Outcome:
    """The outcome of an HTTP status; FAILURE for one that is not a status at all."""
    try:
        return Outcome.from_http_status(status)
    except (TypeError, ValueError):
        return Outcome.FAILURE


def _httpx(exc: BaseException) -> _Known:
    httpx = sys.modules.get("httpx")
    if httpx is None or not isinstance(exc, (httpx.HTTPError, httpx.InvalidURL, httpx.StreamError)):
        return None, None
    if isinstance(exc, httpx.HTTPStatusError):
        return _status(exc.response.status_code), None
    if isinstance(
        exc,
        (
            httpx.PoolTimeout,
            httpx.InvalidURL,
            httpx.UnsupportedProtocol,
            httpx.LocalProtocolError,
            httpx.StreamError,
        ),
    ):
        return Outcome.IGNORED, None
    if isinstance(exc, httpx.TimeoutException):
        return Outcome.DROPPED, None
    if isinstance(exc, (httpx.NetworkError, httpx.RemoteProtocolError)):
        return Outcome.FAILURE, None
    return None, None


def _requests(exc: BaseException) -> _Known:
    exceptions = sys.modules.get("requests.exceptions")
    if exceptions is None or not isinstance(exc, exceptions.RequestException):
        return None, None
    if isinstance(exc, exceptions.HTTPError) and exc.response is not None:
        return _status(exc.response.status_code), None
    if isinstance(
        exc,
        (
            exceptions.MissingSchema,
            exceptions.InvalidSchema,
            exceptions.InvalidURL,
            exceptions.InvalidHeader,
            exceptions.URLRequired,
            exceptions.StreamConsumedError,
        ),
    ):
        return Outcome.IGNORED, None
    # Before ConnectionError: requests' ConnectTimeout is both.
    if isinstance(exc, exceptions.Timeout):
        return Outcome.DROPPED, None
    # requests wraps the urllib3 error it caught as its first argument, often without `from` (a body that
    # times out while it is read becomes a ConnectionError of urllib3's ReadTimeoutError).
    wrapped = exc.args[0] if exc.args and isinstance(exc.args[0], BaseException) else None
    if wrapped is not None:
        return None, wrapped
    if isinstance(exc, exceptions.ConnectionError):
        return Outcome.FAILURE, None
    return None, None


def _urllib3(exc: BaseException) -> _Known:
    exceptions = sys.modules.get("urllib3.exceptions")
    if exceptions is None or not isinstance(exc, exceptions.HTTPError):
        return None, None
    if isinstance(exc, exceptions.MaxRetryError):
        return None, exc.reason
    if isinstance(exc, exceptions.EmptyPoolError):
        return Outcome.IGNORED, None
    # Before TimeoutError: a refused connection is a NewConnectionError, which urllib3 derives from its
    # ConnectTimeoutError for compatibility.
    if isinstance(exc, exceptions.NewConnectionError):
        return Outcome.FAILURE, None
    if isinstance(exc, exceptions.TimeoutError):
        return Outcome.DROPPED, None
    return None, None
