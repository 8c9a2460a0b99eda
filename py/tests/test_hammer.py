"""Eight threads hammer one balancer with 100,000 acquire/release pairs each; every counter is conserved
exactly."""

from __future__ import annotations

import threading

import weir

THREADS = 8
PAIRS = 100_000


def test_eight_threads_conserve_every_counter() -> None:
    nodes = [f"n{i}" for i in range(16)]
    b = weir.Balancer(nodes, limit=weir.Fixed(1000), seed=11)
    outcomes = list(weir.Outcome)
    counts = [[0] * 6 for _ in range(THREADS)]
    busy = [0] * THREADS
    wrong_node = [0] * THREADS
    start = threading.Barrier(THREADS)

    def worker(k: int) -> None:
        mine = counts[k]
        start.wait()
        for i in range(PAIRS):
            lease = b.try_acquire()
            if lease is None:
                busy[k] += 1
                continue
            if lease.node not in nodes:
                wrong_node[k] += 1
            o = outcomes[(i + k) % 6]
            lease.release(o)
            mine[o] += 1

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    st = b.stats()
    by_outcome = tuple(sum(c[o] for c in counts) for o in range(6))
    assert sum(wrong_node) == 0
    assert st.by_outcome == by_outcome
    assert st.acquired == THREADS * PAIRS - sum(busy) == sum(by_outcome)
    assert st.rejected_all_busy == sum(busy)
    assert (st.in_flight, st.released_stale, st.rejected_no_active) == (0, 0, 0)
    assert all(n.in_flight == 0 for n in b.nodes())
    assert sum(busy) == 0  # 8 threads never fill 16 nodes x 1000
