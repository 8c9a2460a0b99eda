"""weir in asyncio code: `async with` on a lease, waiting for room without blocking the loop, a shedder
guarding a handler, and retries with responsive backoff.

    python py/examples/async_balance.py
"""

from __future__ import annotations

import asyncio
import random
import sys
from typing import Dict, List

import weir

backends = weir.Balancer(["replica-a", "replica-b", "replica-c"], weir.Config(limit=weir.Fixed(4)))
shedder = weir.Shedder(cpu_threshold=900)
# replica-c is broken: it fails four calls in five.
FAILURE_RATE: Dict[str, float] = {"replica-a": 0.0, "replica-b": 0.01, "replica-c": 0.8}


class BackendError(Exception):
    """A simulated 5xx."""


async def call(node: str) -> str:
    await asyncio.sleep(0.001)
    if random.random() < FAILURE_RATE[node]:
        raise BackendError(node)
    return f"answer from {node}"


@weir.retry(attempts=3, on=BackendError, backoff=weir.Backoff(initial=0.001, max=0.05))
async def query() -> str:
    lease = await backends.acquire_async(timeout=1.0)  # waits, never blocking the loop, when all are busy
    async with lease:  # success on a normal exit, failure on BackendError
        return await call(str(lease.node))


@shedder
async def handle(request_id: int) -> str:
    return await query()


async def main() -> int:
    answers: List[str] = await asyncio.gather(*(handle(i) for i in range(200)))
    for info in backends.nodes():
        calls = sum(info.by_outcome)
        print(f"{info.node}: {calls} calls, penalty {info.penalty:.1f}, failures {info.failures:.2f}")
    print(f"{len(answers)} answers; balancer {backends.stats()}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
