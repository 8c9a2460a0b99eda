"""What the HTTP integrations (``weir.httpx``, ``weir.requests``) share, without importing either library:
a balancer's membership following a list of base URLs (or a callable returning the current list), the
wait option, the outcome of a status, and releasing a lease exactly once from whichever path ends a call
first (the response read to its end, closed, or failed while it was read).
"""

from __future__ import annotations

import math
import threading
from datetime import timedelta
from typing import Callable, Dict, Generic, Iterable, Optional, Tuple, TypeVar, Union

from weir._types import LeaseError, Outcome
from weir._weir import Balancer, Lease

__all__ = [
    "Members",
    "Nodes",
    "not_a_base_url",
    "release",
    "release_raised",
    "status_outcome",
    "wait_timeout",
]

Nodes = Union[Iterable[str], Callable[[], Iterable[str]]]
"""Base URLs (``"http://10.0.0.7:8080"``, optionally with a path prefix), or a callable returning them."""

T = TypeVar("T")
B = TypeVar("B", bound=Balancer)


class Members(Generic[B, T]):
    """Keeps a balancer's members equal to the base URLs of ``nodes``: the list once, or whatever the
    callable returns, looked at before each request (:meth:`refresh`). The balancer is ``balancer``, or
    ``make(capacity=...)`` with room for the nodes. ``parse`` turns a base URL into what a request is
    rewritten with, and refuses a bad one (ValueError) before anything changes.

    Thread-safe: a change of membership is made under a lock; looking up a node's parsed URL is not.
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
        for node in list(self.balancer):
            if node not in bases:
                self.balancer.remove(node)
        for node in bases:
            if node not in self.balancer:
                self.balancer.add(node)
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


def wait_timeout(wait: Union[float, timedelta]) -> Optional[Union[float, timedelta]]:
    """The ``timeout=`` of ``Balancer.acquire`` for a ``wait=`` option: None (fail fast) for zero."""
    seconds = wait.total_seconds() if isinstance(wait, timedelta) else wait
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise TypeError(
            f"wait must be a number of seconds or a datetime.timedelta, not {type(wait).__name__}"
        )
    if math.isnan(seconds) or seconds < 0:
        raise ValueError(f"wait must be zero or more seconds, got {wait!r}")
    return None if seconds == 0 else wait


def status_outcome(status: int) -> Outcome:
    """:meth:`Outcome.from_http_status`, and FAILURE for a status outside 100..=599 (as weir-tower)."""
    try:
        return Outcome.from_http_status(status)
    except (TypeError, ValueError):
        return Outcome.FAILURE


def release(lease: Lease, outcome: Outcome) -> None:
    """Releases ``lease`` with ``outcome`` unless another path already did."""
    if not lease.released:
        try:
            lease.release(outcome)
        except LeaseError:
            pass


def release_raised(lease: Lease, exc: BaseException) -> None:
    """Releases ``lease`` with the outcome of ``exc`` (``Lease.raised``) unless another path already did."""
    if not lease.released:
        try:
            lease.raised(exc)
        except LeaseError:
            pass

