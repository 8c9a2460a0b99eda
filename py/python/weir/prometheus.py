"""weir's metrics for prometheus_client: a custom collector (``pip install "./py[prometheus]"``
from a checkout; ``weir-lb[prometheus]`` after the first release).

Every weir object with a ``metrics_text()`` (``Balancer``, ``Shedder``, ``Throttle``, ``Backoff``) writes
the metric set of docs/metrics.md as Prometheus text, from the core's own writer. ``Collector`` hands that
text, parsed by prometheus_client's own parser, to a registry at each scrape::

    from prometheus_client import REGISTRY, generate_latest
    import weir
    from weir.prometheus import Collector

    b = weir.Balancer(["a", "b"])
    REGISTRY.register(Collector(b, labels={"service": "orders"}))
    print(generate_latest().decode())

A registry refuses two collectors that write the same metric names: give each balancer its own
``prefix`` (labels do not make names distinct), or collect them all in one ``Collector`` only if their
kinds differ (one balancer, one shedder, ...).

GIL: a scrape holds it while it reads the objects (lock-free reads) and parses the text.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, Mapping, Optional, Protocol, Union

from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from weir._weir import Backoff, Balancer, Shedder, Throttle

__all__ = ["Collector"]

_Labels = Union[Mapping[str, str], Iterable["tuple[str, str]"]]
_Source = Union[Balancer[Any], Shedder, Throttle, Backoff]


class _Registry(Protocol):
    def register(self, collector: Any) -> None: ...


class Collector:
    """Collects the metrics of ``sources`` (balancers, shedders, throttles, backoffs) at each scrape.

    ``prefix`` and ``labels`` are those of ``Balancer.metrics_text``; ``names`` (a mapping or a callable
    from node to str) names the balancers' nodes, ``str(node)`` by default. A bad prefix or label name
    raises ``ValueError`` here, not at the first scrape.
    """

    def __init__(
        self,
        *sources: _Source,
        prefix: str = "weir",
        labels: Optional[_Labels] = None,
        names: Optional[Union[Mapping[Any, str], Callable[[Any], str]]] = None,
    ) -> None:
        for s in sources:
            if not isinstance(s, (Balancer, Shedder, Throttle, Backoff)):
                raise TypeError(f"not a weir Balancer, Shedder, Throttle or Backoff: {type(s).__name__}")
        self._sources = sources
        self._prefix = prefix
        self._labels = list(labels.items()) if isinstance(labels, Mapping) else list(labels or ())
        self._names = names
        self.text()  # checks the prefix and labels now

    def text(self) -> str:
        """The sources' metrics text, concatenated (what a scrape parses)."""
        parts = []
        for s in self._sources:
            if isinstance(s, Balancer):
                parts.append(s.metrics_text(self._prefix, self._labels, self._names))
            else:
                parts.append(s.metrics_text(self._prefix, self._labels))
        return "".join(parts)

    def collect(self) -> Iterator[Metric]:
        """The metric families, as prometheus_client's text parser reads them from ``text()``."""
        yield from text_string_to_metric_families(self.text())

    def register(self, registry: Optional[_Registry] = None) -> "Collector":
        """Registers this collector with ``registry`` (prometheus_client's ``REGISTRY`` by default)."""
        if registry is None:
            from prometheus_client import REGISTRY

            registry = REGISTRY
        registry.register(self)
        return self
