"""weir's exceptions, enums and snapshot dataclasses: the pure-Python half of the package's types.

The native module ``weir._weir`` raises these exceptions and builds these dataclasses, so there is one
definition of each, importable and subclassable like any Python class.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Hashable, Literal, NamedTuple, Optional, TypeVar

if TYPE_CHECKING:
    from typing_extensions import TypeVar as _TypeVarDefault

    # A balancer's node type; Any when not given (``Balancer()`` with no nodes).
    N = _TypeVarDefault("N", bound=Hashable, default=Any)
else:
    N = TypeVar("N", bound=Hashable)

__all__ = [
    "WeirError",
    "NoCapacity",
    "NoNodes",
    "LeaseError",
    "ClockMismatch",
    "DuplicateNode",
    "UnknownNode",
    "CapacityFull",
    "Overloaded",
    "Throttled",
    "RetryBudgetExhausted",
    "RetryError",
    "CpuUnavailable",
    "Outcome",
    "Criticality",
    "Draw",
    "OutcomeCounts",
    "NodeInfo",
    "Stats",
]


class WeirError(Exception):
    """The base class of every error weir raises (bad arguments raise ValueError or TypeError)."""


class NoCapacity(WeirError):
    """No node can take the call now: every node is at its concurrency limit (or, with ``timeout=``, none
    had room in time, or too many callers wait already). Shed the call or try later."""


class NoNodes(WeirError):
    """No node is in rotation: none was added, all were removed, or all are in lame duck."""


class LeaseError(WeirError):
    """A lease (or a shedder's promise) was released twice; the second release changed nothing."""


class ClockMismatch(WeirError, ValueError):
    """A lease acquired with an explicit ``now=`` was released without one, or the other way round: the two
    clocks cannot be mixed silently."""


class DuplicateNode(WeirError, ValueError):
    """``Balancer.add`` of a node that is already a member."""


class UnknownNode(WeirError, LookupError):
    """A membership call or snapshot named a node that is not a member."""


class CapacityFull(WeirError):
    """``Balancer.add`` found no free slot: every slot holds a member, or a removed node whose leases are
    still in flight. Build the balancer with a larger ``capacity``."""


class Overloaded(WeirError):
    """``Shedder.allow`` dropped the request (answer 503 / RESOURCE_EXHAUSTED). The attributes say what the
    shedder saw."""

    cpu: int = 0
    """CPU usage in millicpu."""
    hot: bool = False
    """Whether the shedder was cooling off rather than over its CPU threshold."""
    in_flight: int = 0
    """Requests in flight."""
    avg_in_flight: float = 0.0
    """Their moving average."""
    limit: float = 0.0
    """The in-flight limit both exceeded."""


class Throttled(WeirError):
    """``Throttle.allow`` rejected the request locally: do not send it, and do not retry it."""

    criticality: Criticality
    """The request's criticality (set on every instance weir raises)."""
    probability: float = 0.0
    """The rejection probability it was rejected with."""


class RetryBudgetExhausted(WeirError):
    """``Throttle.allow_retry`` refused a retry: retries are already at ``retry_ratio`` of the requests."""

    retries: int = 0
    requests: int = 0


class RetryError(WeirError):
    """``@weir.retry(reraise=False)`` gave up; ``last_exception`` is the last attempt's error."""

    def __init__(self, message: str, last_exception: Optional[BaseException], attempts: int) -> None:
        super().__init__(message)
        self.last_exception = last_exception
        self.attempts = attempts


class CpuUnavailable(WeirError, OSError):
    """``CpuSampler`` found no CPU statistics to read (only Linux has them) or could not read them."""


class _NamedIntEnum(enum.IntEnum):
    """An IntEnum whose ``str()`` and ``format()`` give its name, ``Outcome.SUCCESS``, as a plain Enum's
    do (``weir.Draw``'s included), and as an IntEnum's did before Python 3.11, where they became the
    bare number (``0``) so that IntEnums could replace int constants without changing any output. weir's
    codes are not such constants: they matter only across the Rust and C boundary, where ``int(x)``
    gives them, so a printed outcome says which one it is, the same on every Python version."""

    def __str__(self) -> str:
        return f"{type(self).__name__}.{self.name}"

    def __format__(self, format_spec: str) -> str:
        return format(str(self), format_spec)


class Outcome(_NamedIntEnum):
    """What happened to a call, as the balancer learns it (codes shared with Rust and C; ``int(outcome)``
    is the code, ``str(outcome)`` its name, ``Outcome.SUCCESS``)."""

    SUCCESS = 0
    """The node answered as it should."""
    FAILURE = 1
    """A real error of the node: a 5xx, connection refused or reset."""
    DROPPED = 2
    """Timeout or overload: 503, 504, a deadline. Counts against health; the limiter backs off."""
    IGNORED = 3
    """Not the node's fault (a cancelled call): recorded nowhere but the counters."""
    THROTTLED = 4
    """The node is busy and said so: a 429."""
    CLIENT_ERROR = 5
    """The node refused the request as the caller's fault: another 4xx."""
    TIMEOUT = 2
    """A call that timed out (a deadline passed, a read or connect timeout): an alias of DROPPED."""
    CANCELLED = 3
    """A call the caller cancelled (it stopped waiting, for its own reasons): an alias of IGNORED."""

    @classmethod
    def from_http_status(cls, status: int) -> Outcome:
        """100-399 SUCCESS, 429 THROTTLED, 503 and 504 DROPPED, other 4xx CLIENT_ERROR, other 5xx FAILURE;
        ValueError outside 100..=599."""
        from weir._weir import outcome_from_http_status

        return cls(outcome_from_http_status(status))

    @property
    def is_retryable(self) -> bool:
        """Whether a call that ended so may be tried again on another node: FAILURE, DROPPED and
        THROTTLED, never SUCCESS, CLIENT_ERROR (the request's own fault) or IGNORED. The core's rule,
        shared with Rust and C; whether the request is safe to repeat and a retry budget allows it is
        the caller's to decide."""
        from weir._weir import outcome_is_retryable

        return outcome_is_retryable(int(self))


class Criticality(_NamedIntEnum):
    """How much a request matters (the SRE book's four levels); lower ones are throttled first."""

    CRITICAL_PLUS = 0
    CRITICAL = 1
    SHEDDABLE_PLUS = 2
    SHEDDABLE = 3


class Draw(enum.Enum):
    """How the weighted family (:class:`weir.Weighted`) draws a node from the weights; a draw may be given
    as its value too (``Weighted(draw="weighted_pick")``)."""

    CASCADE = "cascade"
    """The original cascade's: a weighted random order of the nodes by success rate, the first with room."""
    CASCADE_APPROX = "cascade_approx"
    """The gist's cheaper approximation of the cascade."""
    WEIGHTED_PICK = "weighted_pick"
    """The cascade's later variant: one weighted random pick among the nodes with room."""


class OutcomeCounts(NamedTuple):
    """Leases released, one count per outcome (``Stats.by_outcome``, ``NodeInfo.by_outcome``). A tuple in
    the order of the outcomes' codes, so ``counts[Outcome.FAILURE]``, ``counts.failure``, ``sum(counts)``
    and ``counts == (1, 2, 0, 0, 1, 0)`` all work, and its repr names each count:
    ``OutcomeCounts(success=1, failure=2, dropped=0, ignored=0, throttled=1, client_error=0)``."""

    success: int
    failure: int
    dropped: int
    """Including ``Outcome.TIMEOUT``, its alias."""
    ignored: int
    """Including ``Outcome.CANCELLED``, its alias."""
    throttled: int
    client_error: int


@dataclass(frozen=True)
class NodeInfo(Generic[N]):
    """A point-in-time view of one member node (``Balancer.nodes()``, ``Balancer.node()``)."""

    node: N
    """The node object (the repr shows it, not the core's id)."""
    id: int = field(repr=False)
    """The core's id of the node."""
    state: Literal["active", "lame_duck"]
    success_rate: float
    weight: float
    successes: float
    """The lowest-score family's success counter (0.0 under the weighted family)."""
    failures: float
    """The lowest-score family's failure counter (0.0 under the weighted family)."""
    penalty: float
    """The lowest-score family's penalty in in-flight requests: the node's score is ``in_flight + penalty``."""
    limit: int
    """The current concurrency limit."""
    in_flight: int
    window_finished: int
    window_succeeded: int
    sticky_finished: int
    sticky_succeeded: int
    has_data: bool
    by_outcome: OutcomeCounts
    """Leases released to this node while it was a member, by outcome (``by_outcome[Outcome.SUCCESS]``,
    ``by_outcome.success``), counted from its ``add`` (a node added into the place another node left
    starts at 0)."""

    def released(self, outcome: Outcome) -> int:
        """Leases released with ``outcome`` to this node while it was a member, since its ``add``."""
        return self.by_outcome[Outcome(outcome)]


@dataclass(frozen=True)
class Stats:
    """Balancer-wide counters since construction. Conserved:
    ``acquired == released_total + released_stale + in_flight`` and
    ``waits == waits_granted + waits_timed_out + waits_cancelled + waiting``.

    Refusals and waits are counted apart. A refusal is a call that gave no lease: ``NoCapacity`` or
    ``NoNodes`` raised, or ``try_acquire()`` returning None. A wait is an ``acquire(timeout=...)`` or
    ``acquire_async`` that found no room and queued; one that then gets its lease is no refusal, one that
    times out is both."""

    acquired: int
    """Leases granted."""
    rejected_all_busy: int
    """Calls that gave no lease because every node was at its limit (``NoCapacity``, or None from
    ``try_acquire``), including waits that timed out and a full queue."""
    rejected_no_active: int
    """Calls that raised ``NoNodes``."""
    by_outcome: OutcomeCounts
    """Leases released to a live node, by outcome (``by_outcome[Outcome.SUCCESS]``,
    ``by_outcome.success``)."""
    released_stale: int
    """Leases released after their node was removed."""
    in_flight: int
    """Leases in flight now."""
    active_nodes: int
    lame_duck_nodes: int
    waits: int
    """Waiting acquires that found no room and queued."""
    waits_granted: int
    """Waits that a lease was handed to."""
    waits_timed_out: int
    """Waits whose timeout passed first (each also counted in ``rejected_all_busy``)."""
    waits_cancelled: int
    """Waits abandoned by their caller: an asyncio task cancelled while it waited (or a Rust future
    dropped)."""
    waiting: int
    """Callers waiting for room now."""

    def released(self, outcome: Outcome) -> int:
        """Leases released with ``outcome`` to a live node."""
        return self.by_outcome[Outcome(outcome)]

    @property
    def released_total(self) -> int:
        """Leases released to a live node, whatever the outcome."""
        return sum(self.by_outcome)
