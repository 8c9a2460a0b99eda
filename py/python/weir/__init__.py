"""weir: adaptive load balancing and overload protection.

One exact, lock-free core (Rust) shared by Rust, C and Python. A client asks a :class:`Balancer` which node
to call; the balancer answers from each node's recent failures and concurrency limit, fails fast when no
node can take the call, and learns from every outcome::

    import urllib.request, weir

    backends = weir.Balancer(["http://10.0.0.7:8080", "http://10.0.0.8:8080"])
    with backends.acquire() as lease:          # raises weir.NoCapacity when every node is busy
        with urllib.request.urlopen(lease.node + "/api", timeout=2) as r:
            body = r.read()                    # a normal exit records SUCCESS, an exception its outcome

An exception's outcome is :func:`outcome_for_exception`'s (a timeout DROPPED, a cancellation IGNORED, an
HTTP error its status's outcome, anything else FAILURE) unless the balancer has a ``classify=`` of its own.
For HTTP clients, ``weir.httpx`` (transports for ``httpx.Client`` and ``httpx.AsyncClient``) and
``weir.requests`` (an adapter for ``requests.Session``) do all of this per request, and
``weir.prometheus`` serves every object's ``metrics_text()`` to a ``prometheus_client`` registry; each
imports its library only when imported itself.

Everything is thread-safe without a Python-side lock. Durations are float seconds (``datetime.timedelta``
is accepted too); every ``now=`` is optional and defaults to the monotonic clock (:func:`monotonic`).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import time
import warnings
from datetime import timedelta
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Iterable,
    Literal,
    Optional,
    Tuple,
    Type,
    TypeVar,
    Union,
    cast,
)

from weir import _wait, _weir
from weir._outcomes import outcome_for_exception
from weir._types import (
    N,
    CapacityFull,
    ClockMismatch,
    CpuUnavailable,
    Criticality,
    Draw,
    DuplicateNode,
    LeaseError,
    NodeInfo,
    NoCapacity,
    NoNodes,
    Outcome,
    OutcomeCounts,
    Overloaded,
    RetryBudgetExhausted,
    RetryError,
    Stats,
    Throttled,
    UnknownNode,
    WeirError,
)
from weir._weir import (
    MAX_LIMIT,
    MAX_NODES,
    MAX_WAITERS,
    Aimd,
    Buckets,
    Ciad,
    Config,
    CpuSampler,
    Ewma,
    Fixed,
    Gradient,
    Gradient2,
    Knee,
    Lease,
    Log10,
    LowestScore,
    Percentile,
    Promise,
    RetryBudget,
    Rng,
    Sqrt,
    Throttle,
    Vegas,
    Weighted,
    Windowed,
    deterministic_subset,
    monotonic,
    random_subset,
    rejection_probability,
    shuffle,
)

__version__: str = _weir.__version__

__all__ = [
    "Aimd",
    "Backoff",
    "Balancer",
    "Buckets",
    "CapacityFull",
    "Ciad",
    "ClockMismatch",
    "Config",
    "CpuSampler",
    "CpuUnavailable",
    "Criticality",
    "Draw",
    "DuplicateNode",
    "Ewma",
    "Fixed",
    "Gradient",
    "Gradient2",
    "Knee",
    "Lease",
    "LeaseError",
    "Log10",
    "LowestScore",
    "MAX_LIMIT",
    "MAX_NODES",
    "MAX_WAITERS",
    "NoCapacity",
    "NoNodes",
    "NodeInfo",
    "Outcome",
    "OutcomeCounts",
    "Overloaded",
    "Percentile",
    "Promise",
    "RetryBudget",
    "RetryBudgetExhausted",
    "RetryError",
    "Rng",
    "Shedder",
    "Sqrt",
    "Stats",
    "Throttle",
    "Throttled",
    "UnknownNode",
    "Vegas",
    "WeirError",
    "Weighted",
    "Windowed",
    "deterministic_subset",
    "monotonic",
    "outcome_for_exception",
    "random_subset",
    "rejection_probability",
    "retry",
    "shuffle",
]

Seconds = Union[float, int, timedelta]
F = TypeVar("F", bound=Callable[..., Any])
if TYPE_CHECKING:
    from typing_extensions import Self

if TYPE_CHECKING:
    WAIT_TIMEOUT: float
    """Deprecated: 1.0, the default ``timeout`` of :meth:`Balancer.acquire_async` until its default became
    :meth:`Balancer.acquire`'s, 0 (no wait). Pass the seconds to wait instead."""
else:
    # Hidden from type checkers, which would read any missing name of the module as its return type.
    def __getattr__(name: str) -> float:
        # PEP 562: a name the module no longer defines, looked up with a warning.
        if name == "WAIT_TIMEOUT":
            warnings.warn(
                "weir.WAIT_TIMEOUT (1.0) is no longer a default: Balancer.acquire() and acquire_async() "
                "both default to timeout=0 (no wait); pass the seconds to wait, such as timeout=1.0",
                DeprecationWarning,
                stacklevel=2,
            )
            return 1.0
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Balancer(_weir.Balancer[N]):
    """An adaptive load balancer over nodes that are any hashable objects (``Balancer[N]`` for nodes of
    type ``N``: ``lease.node`` is an ``N``).

    ``nodes`` are the first members. ``config`` is a :class:`Config`, the algorithm and everything it
    decides by; ``None`` is ``Config()``, weir's default algorithm (``LowestScore()``, a
    ``Ciad(fast_start=True)`` limit), and ``Config.cascade()`` is the original cascade. A config whose
    ``seed`` is ``None`` gets a random seed; ``balancer.config`` is the configuration with the seed in use
    (give it to another balancer to configure it the same way). ``capacity`` is the number of node slots
    (``None``: twice the nodes given, at least 16): removed nodes hold their slot until their leases
    finish. ``classify`` (a callable ``(BaseException) -> Outcome``, by default
    :func:`outcome_for_exception`) decides the outcome of a lease whose ``with`` block raised.

    Thread-safe without a Python-side lock (free-threading included); each call holds the GIL only for
    the core call, and ``acquire(timeout=...)`` releases it while it waits. In asyncio code,
    :meth:`acquire_async` and ``async with balancer.acquire(...)`` wait on the event loop, never blocking
    it.
    """

    __slots__ = ()

    def __new__(
        cls,
        nodes: Optional[Iterable[N]] = (),
        config: Optional[Config] = None,
        *,
        capacity: Optional[int] = None,
        classify: Optional[Callable[[BaseException], Outcome]] = None,
    ) -> Self:
        return super().__new__(cls, nodes, config, capacity=capacity, classify=classify)

    async def acquire_async(self, *, timeout: Optional[Seconds] = 0) -> Lease[N]:
        """Grants a lease, waiting for room without blocking the event loop and without a thread.

        ``timeout`` is how long to wait for room, in seconds or a ``timedelta``: 0, the default, never
        waits (NoCapacity at once), ``None`` waits for as long as it takes; the same in :meth:`acquire`.

        A node with room is taken at once when nobody waits. Otherwise the call joins the balancer's
        queue of waiters (first come first served, newest first once it has stood 100 ms; shared with
        threads in ``acquire(timeout=...)``, at most ``max_waiters``) and the release that frees a slot
        hands it over and wakes this task through the loop. Raises NoCapacity when the timeout passes (or
        at once when ``max_waiters`` callers wait already, or when the queue stands and serves callers
        that came more than 100 ms after this one first: a wait with a timeout is then answered early, as
        an overload; one with ``timeout=None`` waits on), NoNodes when no node is in rotation.
        Cancelling the awaiting task (``asyncio.timeout``, ``wait_for``, ``task.cancel()``) takes it out
        of the queue at once; a lease handed over at that moment goes back as IGNORED, to the next
        waiter. In ``stats()``, a call that gets its lease is no refusal, whether or not it waited; a
        wait ends granted, timed out or cancelled. (The default was 1 s, :data:`WAIT_TIMEOUT`, before it
        became :meth:`acquire`'s.)
        """
        return await _wait.granted(self._enqueue(timeout))


_held: contextvars.ContextVar[Tuple[Tuple[int, Promise], ...]] = contextvars.ContextVar(
    "weir_shedder_promises", default=()
)


class Shedder(_weir.Shedder):
    """go-zero's adaptive load shedder, usable three ways:

    * explicitly: ``p = shedder.allow()`` then ``p.success()`` or ``p.failure()``;
    * as a context manager: ``with shedder:`` (or ``with shedder.allow():``) records success on a normal
      exit and failure on an exception; entering raises :class:`Overloaded` when the server is overloaded;
    * as a decorator: ``@shedder`` on a function or an ``async def``.

    A request is dropped when the CPU is over ``cpu_threshold`` millicpu (or was, less than ``cool_off``
    seconds ago) and both the requests in flight and their average exceed what the server passed in the
    last ``window`` seconds (``buckets`` buckets). ``cpu`` is where ``allow()`` reads CPU usage when it is
    not given one: a :class:`CpuSampler`, a callable returning millicpu, or None (0: never CPU-overloaded
    unless ``cpu_threshold=0``).

    Thread-safe and lock-free; ``with shedder:`` keeps each entry's promise in a context variable, so threads
    and asyncio tasks nest it independently.
    """

    __slots__ = ()

    def __enter__(self) -> Promise:
        promise = self.allow()
        _held.set(_held.get() + ((id(self), promise),))
        return promise

    def __exit__(
        self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Any
    ) -> Literal[False]:
        stack = _held.get()
        for i in range(len(stack) - 1, -1, -1):
            if stack[i][0] == id(self):
                promise = stack[i][1]
                _held.set(stack[:i] + stack[i + 1 :])
                return promise.__exit__(exc_type, exc, tb)
        raise LeaseError("Shedder.__exit__ without a matching __enter__ in this context")

    def __call__(self, func: F) -> F:
        """Decorates ``func`` (sync or async): each call is admitted by the shedder (or raises Overloaded)
        and completed as a success or, if it raises, a failure."""
        if inspect.iscoroutinefunction(func):

            @functools.wraps(func)
            async def shed_async(*args: Any, **kwargs: Any) -> Any:
                with self.allow():
                    return await func(*args, **kwargs)

            return cast(F, shed_async)

        @functools.wraps(func)
        def shed(*args: Any, **kwargs: Any) -> Any:
            with self.allow():
                return func(*args, **kwargs)

        return cast(F, shed)


class Backoff(_weir.Backoff):
    """AutoSleeper's responsive exponential backoff: ``on_failure()`` and ``on_success()`` return the seconds
    to wait before the next call, and :meth:`sleep`, :meth:`asleep` and :meth:`retry` wait them.

    The interval starts at ``initial`` on the first failure, grows by ``up_multiplier`` per failure up to
    ``max``, shrinks by ``down_multiplier`` after ``down_threshold`` consecutive successes, and drops to 0
    once below ``initial``. ``jitter`` is ``'proportional'`` (AutoSleeper's: ``jitter_factor`` of the
    interval, at most ``jitter_max`` seconds either way), ``'full'``, ``'equal'``, ``'decorrelated'`` or
    ``'none'``; ``seed=None`` draws a random seed.

    Thread-safe and lock-free; ``sleep`` releases the GIL while it sleeps and ``asleep`` never blocks the
    event loop.
    """

    __slots__ = ()

    def sleep(self, failed: bool = True) -> float:
        """Records a failure (or, with ``failed=False``, a success) and sleeps the delay it returns;
        returns the seconds slept."""
        delay = self.on_failure() if failed else self.on_success()
        if delay > 0:
            time.sleep(delay)
        return delay

    async def asleep(self, failed: bool = True) -> float:
        """As :meth:`sleep`, with ``await asyncio.sleep``."""
        delay = self.on_failure() if failed else self.on_success()
        if delay > 0:
            await asyncio.sleep(delay)
        return delay

    def retry(
        self,
        *,
        attempts: int = 3,
        on: Union[Type[BaseException], Tuple[Type[BaseException], ...]] = Exception,
        throttle: Optional[Throttle] = None,
        criticality: Criticality = Criticality.CRITICAL,
        reraise: bool = True,
    ) -> Callable[[F], F]:
        """``@backoff.retry(...)``: :func:`retry` with this backoff."""
        return retry(
            attempts=attempts,
            on=on,
            backoff=self,
            throttle=throttle,
            criticality=criticality,
            reraise=reraise,
        )


def retry(
    *,
    attempts: int = 3,
    on: Union[Type[BaseException], Tuple[Type[BaseException], ...]] = Exception,
    backoff: Optional[Backoff] = None,
    throttle: Optional[Throttle] = None,
    criticality: Criticality = Criticality.CRITICAL,
    reraise: bool = True,
) -> Callable[[F], F]:
    """Retries a function (or an ``async def``) that raises ``on``, at most ``attempts`` calls in all.

    Between attempts it waits what ``backoff.on_failure()`` says (a fresh ``Backoff(initial=0.1, max=10)``
    per decorated function if none is given: shared by all its calls, so a failing dependency slows every
    caller down, and successes bring the delay back to 0). With ``throttle``, each retry must also pass
    ``throttle.allow_retry(criticality)`` (the SRE book's retry budget); a refused retry stops retrying.
    When the attempts run out the last exception is raised (``reraise=True``) or wrapped in
    :class:`RetryError` (``reraise=False``). Exceptions that are not ``on`` propagate at once.
    """
    if isinstance(attempts, bool) or not isinstance(attempts, int):
        raise TypeError(f"attempts must be an int, not {type(attempts).__name__}")
    if attempts < 1:
        raise ValueError(f"attempts must be at least 1, got {attempts}")

    def decorate(func: F) -> F:
        policy = backoff if backoff is not None else Backoff(initial=0.1, max=10.0)

        def may_retry() -> bool:
            """Whether the retry budget (if any) admits one more attempt."""
            if throttle is None:
                return True
            try:
                throttle.allow_retry(criticality)
            except (RetryBudgetExhausted, Throttled):
                return False
            return True

        if inspect.iscoroutinefunction(func):

            @functools.wraps(func)
            async def retry_async(*args: Any, **kwargs: Any) -> Any:
                tries = 0
                while True:
                    tries += 1
                    try:
                        result = await func(*args, **kwargs)
                    except on as err:
                        delay = policy.on_failure()
                        if tries >= attempts or not may_retry():
                            if reraise:
                                raise
                            raise RetryError(f"gave up after {tries} attempts: {err!r}", err, tries) from err
                        if delay > 0:
                            await asyncio.sleep(delay)
                        continue
                    policy.on_success()
                    return result

            return cast(F, retry_async)

        @functools.wraps(func)
        def retry_sync(*args: Any, **kwargs: Any) -> Any:
            tries = 0
            while True:
                tries += 1
                try:
                    result = func(*args, **kwargs)
                except on as err:
                    delay = policy.on_failure()
                    if tries >= attempts or not may_retry():
                        if reraise:
                            raise
                        raise RetryError(f"gave up after {tries} attempts: {err!r}", err, tries) from err
                    if delay > 0:
                        time.sleep(delay)
                    continue
                policy.on_success()
                return result

        return cast(F, retry_sync)

    return decorate

