"""What the HTTP integrations (``weir.httpx``, ``weir.requests``) share, without importing either library:
a balancer's membership following a list of base URLs (or a callable returning the current list), the
wait option, the retry option, the outcome of a status, the load a server reports in its answer's
``endpoint-load-metrics`` header, and releasing a lease exactly once from whichever path ends a call
first (the response read to its end, closed, or failed while it was read).
"""

from __future__ import annotations

import asyncio
import math
import re
import threading
import time
from datetime import timedelta
from typing import Awaitable, Callable, Dict, Generic, Iterable, List, Optional, Tuple, TypeVar, Union

from weir._types import CapacityFull, LeaseError, Outcome, RetryBudgetExhausted, WeirError
from weir._weir import Backoff, Balancer, Lease, RetryBudget

__all__ = [
    "IDEMPOTENT",
    "LOAD_HEADER",
    "Members",
    "Nodes",
    "Retry",
    "not_a_base_url",
    "release",
    "release_raised",
    "server_load",
    "status_outcome",
    "wait_timeout",
]

Nodes = Union[Iterable[str], Callable[[], Iterable[str]]]
"""Base URLs (``"http://10.0.0.7:8080"``, optionally with a path prefix), or a callable returning them."""

T = TypeVar("T")
B = TypeVar("B", bound=Balancer)
R = TypeVar("R")
A = TypeVar("A")

IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"})
"""The methods retried by default: RFC 9110's idempotent ones (sending one twice does what sending it
once does)."""

class Retry(Generic[R]):
    """The retry option of the integrations: after an attempt that failed (``Outcome.is_retryable``), the
    request is sent again to a node it has not tried (``Balancer.acquire_excluding``), at most
    ``retries`` times, if it may be sent twice (``retry_if``, by default an idempotent method), its body
    can be sent again, and the shared ``budget`` admits the retry (``RetryBudget.try_retry``); first it
    waits what ``backoff.on_failure()`` says, if a backoff was given.

    Arguments are checked here, before any request: a bad one raises TypeError or ValueError.
    """

    def __init__(
        self,
        retries: int,
        budget: Optional[RetryBudget],
        backoff: Optional[Backoff],
        retry_if: Optional[Callable[[R], bool]],
        method: Callable[[R], str],
    ) -> None:
        if isinstance(retries, bool) or not isinstance(retries, int):
            raise TypeError(f"retries must be an int, not {type(retries).__name__}")
        if retries < 0:
            raise ValueError(f"retries must be zero or more, got {retries}")
        if budget is not None and not isinstance(budget, RetryBudget):
            raise TypeError(f"retry_budget must be a weir.RetryBudget, not {type(budget).__name__}")
        if backoff is not None and not isinstance(backoff, Backoff):
            raise TypeError(f"retry_backoff must be a weir.Backoff, not {type(backoff).__name__}")
        if retry_if is not None and not callable(retry_if):
            raise TypeError(f"retry_if must be a callable, not {type(retry_if).__name__}")
        self.retries = retries
        self.budget = budget if budget is not None else RetryBudget()
        self.backoff = backoff
        self._retry_if = retry_if
        self._method = method

    def start(self, request: R, replayable: Callable[[R], bool]) -> bool:
        """Counts a request in the budget and says whether it may be retried at all (the caller's
        ``retry_if``, or its method, and a body that can be sent again). Called once per request, before
        its first attempt, so a ``retry_if`` that raises leaves no lease behind."""
        if self.retries == 0:
            return False
        self.budget.request()
        if self._retry_if is not None:
            allowed = bool(self._retry_if(request))
        else:
            allowed = self._method(request).upper() in IDEMPOTENT
        return allowed and replayable(request)

    def outcome(self, balancer: Balancer, exc: BaseException) -> Optional[Outcome]:
        """The outcome the balancer's classifier gives ``exc`` (as ``Lease.raised`` records it); None for
        an exception that is not an ``Exception`` (a cancellation) or a classifier that fails."""
        if not isinstance(exc, Exception):
            return None
        try:
            outcome = balancer.classify(exc)
        except Exception:
            return None
        return outcome if isinstance(outcome, Outcome) else None

    def delay(
        self,
        retryable: bool,
        done: int,
        outcome: Optional[Outcome],
        tried: List[str],
        balancer: Balancer,
    ) -> Optional[float]:
        """The seconds to wait before the next attempt, or None for no retry: the request may not be
        retried, the attempt did not fail, ``done`` retries were made already, every member was tried, or
        the budget is spent."""
        if self.backoff is not None and outcome is Outcome.SUCCESS:
            self.backoff.on_success()
        if not retryable or done >= self.retries or outcome is None or not Outcome(outcome).is_retryable:
            return None
        if all(node in tried for node in balancer):
            return None
        try:
            self.budget.try_retry()
        except RetryBudgetExhausted:
            return None
        return self.backoff.on_failure() if self.backoff is not None else 0.0

    def send(
        self,
        balancer: Balancer,
        retryable: bool,
        lease: Lease,
        attempt: Callable[[Lease], A],
        status: Callable[[A], int],
        drain: Callable[[A], Optional[Exception]],
    ) -> A:
        """Sends a request (``retryable`` from :meth:`start`) on ``lease``, then retries it while
        :meth:`delay` allows, each time on a node it has not tried. ``attempt(lease)`` makes one attempt
        and releases its lease (with the error's outcome if it raises); ``status`` is an answer's HTTP
        status; ``drain`` reads and closes a failed answer before its retry (so that it can still be the
        request's answer if no node has room) and returns what reading it raised. The answer is the last
        attempt's: its response, or its error raised again."""
        tried: List[str] = []
        while True:
            tried.append(lease.node)
            try:
                answer = attempt(lease)
            except BaseException as exc:
                outcome = self.outcome(balancer, exc)
                delay = self.delay(retryable, len(tried) - 1, outcome, tried, balancer)
                if delay is None:
                    raise
                if delay > 0:
                    time.sleep(delay)
                following = self.acquire(balancer, tried)
                if following is None:
                    raise
                lease = following
                continue
            outcome = status_outcome(status(answer))
            delay = self.delay(retryable, len(tried) - 1, outcome, tried, balancer)
            if delay is None:
                return answer
            unread = drain(answer)
            if delay > 0:
                time.sleep(delay)
            following = self.acquire(balancer, tried)
            if following is None:
                if unread is not None:
                    raise unread
                return answer
            lease = following

    async def send_async(
        self,
        balancer: Balancer,
        retryable: bool,
        lease: Lease,
        attempt: Callable[[Lease], Awaitable[A]],
        status: Callable[[A], int],
        drain: Callable[[A], Awaitable[Optional[Exception]]],
    ) -> A:
        """:meth:`send` for asyncio: the same rules, awaiting the attempts, the draining and the pauses."""
        tried: List[str] = []
        while True:
            tried.append(lease.node)
            try:
                answer = await attempt(lease)
            except BaseException as exc:
                outcome = self.outcome(balancer, exc)
                delay = self.delay(retryable, len(tried) - 1, outcome, tried, balancer)
                if delay is None:
                    raise
                if delay > 0:
                    await asyncio.sleep(delay)
                following = self.acquire(balancer, tried)
                if following is None:
                    raise
                lease = following
                continue
            outcome = status_outcome(status(answer))
            delay = self.delay(retryable, len(tried) - 1, outcome, tried, balancer)
            if delay is None:
                return answer
            unread = await drain(answer)
            if delay > 0:
                await asyncio.sleep(delay)
            following = self.acquire(balancer, tried)
            if following is None:
                if unread is not None:
                    raise unread
                return answer
            lease = following

    @staticmethod
    def acquire(balancer: Balancer, tried: List[str]) -> Optional[Lease]:
        """The next attempt's lease, on a node not in ``tried``; None when no node has room (the request
        ends with the last attempt's answer) or the only one with room was tried (released IGNORED: it
        was never asked)."""
        try:
            lease = balancer.acquire_excluding(tried)
        except WeirError:
            return None
        if lease.node in tried:
            release(lease, Outcome.IGNORED)
            return None
        return lease


class Members(Generic[B, T]):
    """Keeps a balancer's members equal to the base URLs of ``nodes``: the list once, or whatever the
    callable returns, looked at before each request (:meth:`refresh`). The balancer is ``balancer``, or
    ``make(capacity=...)`` with room for the nodes. ``parse`` turns a base URL into what a request is
    rewritten with, and refuses a bad one (ValueError) before anything changes.

    Thread-safe: a change of membership is made under a lock, new nodes joining before departing ones
    leave (so the balancer is never empty on the way); looking up a node's parsed URL takes no lock.
    """

    def __init__(
        self, nodes: Nodes, balancer: Optional[B], parse: Callable[[str], T], make: Callable[..., B]
    ) -> None:
        self._source: Optional[Callable[[], Iterable[str]]] = nodes if callable(nodes) else None
        first = _listed(nodes() if callable(nodes) else nodes)
        # Room for the nodes and those still draining after their removal; more for a list that changes.
        capacity = max(2 * len(first), 64 if self._source is not None else 16)
        self.balancer: B = balancer if balancer is not None else make(capacity=capacity)
        self._parse = parse
        self._bases: Dict[str, T] = {}
        self._last: Tuple[str, ...] = ()
        self._lock = threading.Lock()
        with self._lock:
            self._follow(first)

    def refresh(self) -> None:
        """Follows the callable's current list, if the nodes were given as one (a no-op otherwise)."""
        if self._source is None:
            return
        if _listed(self._source()) != self._last:
            with self._lock:
                # Asked again under the lock: a list read before another thread's change must not undo it.
                current = _listed(self._source())
                if current != self._last:
                    self._follow(current)

    def base(self, node: str) -> T:
        """The parsed base URL of a node (one removed a moment ago included)."""
        base = self._bases.get(node)
        return base if base is not None else self._parse(node)

    def _follow(self, current: Tuple[str, ...]) -> None:
        for node in current:
            if not isinstance(node, str):
                raise TypeError(f"a node must be a base URL (str), not {type(node).__name__}")
        # Parse every node first: a bad one changes nothing.
        bases = {node: self._bases.get(node) or self._parse(node) for node in current}
        # The new nodes join before the departing ones leave: while a list moves from [a] to [b], a
        # request on another thread finds a member (b, or a a moment longer), never an empty balancer.
        departing = [node for node in self.balancer if node not in bases]
        for node in bases:
            if node in self.balancer:
                continue
            while True:
                try:
                    self.balancer.add(node)
                    break
                except CapacityFull:
                    # No free slot: a departing node's may be one. They leave one at a time until the
                    # node fits (a node with leases in flight keeps its slot until they end); with
                    # none left to leave, the error stands and the next refresh tries again.
                    if not departing:
                        raise
                    self.balancer.remove(departing.pop(0))
        for node in departing:
            self.balancer.remove(node)
        # One assignment: a reader sees the old table or the new one.
        self._bases = bases
        self._last = current


def _listed(nodes: Iterable[str]) -> Tuple[str, ...]:
    if isinstance(nodes, (str, bytes)):
        raise TypeError(
            f"nodes must be a list of base URLs, not a {type(nodes).__name__} (did you mean [{nodes!r}]?)"
        )
    return tuple(nodes)


def not_a_base_url(node: str, why: object = None) -> ValueError:
    """The error for a node that is not an http(s) base URL."""
    return ValueError(
        f"a node must be an http(s) base URL such as 'http://10.0.0.7:8080' (a path prefix is allowed, a "
        f"query or fragment is not), got {node!r}" + (f": {why}" if why is not None else "")
    )


def wait_timeout(wait: Union[float, timedelta]) -> Union[float, timedelta]:
    """The ``timeout=`` of ``Balancer.acquire`` and ``acquire_async`` for a ``wait=`` option, checked (0
    fails fast, as it does there)."""
    seconds = wait.total_seconds() if isinstance(wait, timedelta) else wait
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise TypeError(
            f"wait must be a number of seconds or a datetime.timedelta, not {type(wait).__name__}"
        )
    if math.isnan(seconds) or seconds < 0:
        raise ValueError(f"wait must be zero or more seconds, got {wait!r}")
    return wait


def status_outcome(status: int) -> Outcome:
    """:meth:`Outcome.from_http_status`, and FAILURE for a status outside 100..=599 (as weir-tower)."""
    try:
        return Outcome.from_http_status(status)
    except (TypeError, ValueError):
        return Outcome.FAILURE


LOAD_HEADER = "endpoint-load-metrics"
"""The header a server reports its load in: gRPC's ORCA load report, in the native HTTP encoding that
Envoy parses (read by :func:`server_load`)."""

# A decimal number, as a load report writes one: digits with an optional fraction and exponent, ASCII
# only (Python's float() would take "nan", "1_000" and other scripts' digits too).
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_UTILIZATIONS = ("application_utilization", "cpu_utilization")
_MAX_LOAD = 1000.0


def server_load(header: Optional[str]) -> Optional[float]:
    """The utilization a server reports in an ``endpoint-load-metrics`` header (:data:`LOAD_HEADER`), as
    ``Lease.release(..., load=)`` takes it (1.0 at the server's knee), or None when there is no header or
    it cannot be read. Never raises: a report that cannot be read is no report.

    The header is gRPC's ORCA load report in the native HTTP encoding Envoy parses: comma-separated
    ``name:value`` pairs (``application_utilization:0.62, cpu_utilization:0.55, rps_fractional:120``),
    whitespace allowed around each token; an older spelling, ``TEXT`` and a space before ``name=value``
    pairs, is read too. Several header lines, which httpx and requests join with ", ", are one list. The
    utilization is ``application_utilization`` when it is given and above 0, else ``cpu_utilization``
    when it is given (the order of gRPC's and Envoy's weighted round robin); none of the two, no report.
    Other names (``mem_utilization``, ``rps_fractional``, ``named_metrics.*``, names to come) are skipped.
    A pair that is not a name and a finite decimal number, a name given twice, either utilization below
    0, or the one read above 1000 (what a lease refuses) makes the whole header unreadable. weir-tower's
    ``classify::orca_load`` reads a header by the same rules.
    """
    if not isinstance(header, str):
        return None
    values: Dict[str, float] = {}
    for token in header.split(","):
        pair = token.strip()
        if pair.startswith("TEXT "):
            pair = pair[len("TEXT ") :]
        if not pair:
            continue
        # The separator is whichever of ":" (the native spelling) and "=" (TEXT's) comes first; a name
        # holds neither.
        cut = min((i for i in (pair.find(":"), pair.find("=")) if i >= 0), default=-1)
        if cut < 0:
            return None
        name, value = pair[:cut].strip(), pair[cut + 1 :].strip()
        if not name or name in values or _NUMBER.fullmatch(value) is None:
            return None
        number = float(value)
        if not math.isfinite(number):
            return None
        values[name] = number
    if any(values.get(name, 0.0) < 0 for name in _UTILIZATIONS):
        return None
    application = values.get(_UTILIZATIONS[0])
    load = application if application is not None and application > 0 else values.get(_UTILIZATIONS[1])
    if load is None or not 0 <= load <= _MAX_LOAD:
        return None
    return load


def release(lease: Lease, outcome: Outcome, load: Optional[float] = None) -> None:
    """Releases ``lease`` with ``outcome`` (and the server's reported ``load``, from
    :func:`server_load`) unless another path already did."""
    if not lease.released:
        try:
            lease.release(outcome, load=load)
        except LeaseError:
            pass


def release_raised(lease: Lease, exc: BaseException) -> None:
    """Releases ``lease`` with the outcome of ``exc`` (``Lease.raised``) unless another path already did."""
    if not lease.released:
        try:
            lease.raised(exc)
        except LeaseError:
            pass

