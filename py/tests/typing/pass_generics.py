"""Type-checked by `cargo xtask py` with `mypy --strict`, never run: a balancer's node type flows to its
leases and snapshots (`Balancer[N]`, `Lease[N]`, `NodeInfo[N]`)."""

from __future__ import annotations

from datetime import timedelta
from typing import List, Optional, Tuple

import weir

urls: weir.Balancer[str] = weir.Balancer(["http://a", "http://b"])
inferred = weir.Balancer([("10.0.0.7", 8080), ("10.0.0.8", 8080)])  # Balancer[Tuple[str, int]]
untyped = weir.Balancer()  # Balancer[Any]: no annotation needed


def url_of(b: weir.Balancer[str]) -> str:
    with b.acquire(timeout=1.0) as lease:
        node: str = lease.node
        return node


def address_of(b: weir.Balancer[Tuple[str, int]]) -> Tuple[str, int]:
    lease: Optional[weir.Lease[Tuple[str, int]]] = b.try_acquire()
    if lease is None:
        raise weir.NoCapacity("busy")
    host, port = lease.node
    lease.succeeded(load=0.8)
    return host, port


async def fetch(b: weir.Balancer[str]) -> str:
    async with b.acquire() as lease:
        first: str = lease.node
    lease2 = await b.acquire_async(timeout=None)
    async with lease2:
        return first + lease2.node


def members(b: weir.Balancer[str]) -> List[str]:
    b.add("http://c")
    names: List[str] = [info.node for info in b.nodes()]
    return names + list(b)


def check_one(b: weir.Balancer[Tuple[str, int]]) -> Optional[Tuple[str, int]]:
    # The node due for a health check is a node of the balancer, reported back as one.
    node: Optional[Tuple[str, int]] = b.due_check(5.0)
    if node is not None:
        b.report_check(node, True, now=weir.monotonic())
    return b.due_check(timedelta(seconds=5), now=1.5)


def anything(b: weir.Balancer) -> int:
    # Unparametrized, the nodes are Any.
    n: int = b.acquire().node
    return n


url_of(urls)
address_of(inferred)
members(urls)
check_one(inferred)
print(untyped, anything)
