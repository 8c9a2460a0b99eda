"""Balance an httpx client's requests over several backends with weir.httpx, sync and async.

    pip install "./py[httpx]"
    python py/examples/httpx_balance.py http://10.0.0.7:8080 http://10.0.0.8:8080

With no URLs it starts four local backends on 127.0.0.1: a healthy one, one that answers 500, a closed
port (connections refused) and a black hole (accepts, never answers: each request there waits for the
client's timeout). It sends 200 requests through an httpx.Client and 200 through an httpx.AsyncClient
and prints what came back: weir takes the broken backends out of the traffic after their first failures
(a 500 or a refused connection is a FAILURE, a timeout DROPPED).
"""

from __future__ import annotations

import asyncio
import http.server
import socket
import sys
import threading
from collections import Counter
from typing import List

import httpx

import weir
import weir.httpx

REQUESTS = 200
WORKERS = 4


def what(result: httpx.Response | httpx.TransportError) -> str:
    """A response's status, or the name of the error that came instead."""
    return str(result.status_code) if isinstance(result, httpx.Response) else type(result).__name__


def sync_client(urls: List[str]) -> Counter[str]:
    transport = weir.httpx.Transport(urls, wait=2.0)  # wait up to 2 s for room, then weir.NoCapacity
    seen: Counter[str] = Counter()
    lock = threading.Lock()
    with httpx.Client(transport=transport, base_url="http://backend", timeout=0.5) as client:

        def worker() -> None:
            for _ in range(REQUESTS // WORKERS):
                try:
                    result: httpx.Response | httpx.TransportError = client.get("/")
                except httpx.TransportError as e:  # refused, timed out: weir has recorded it already
                    result = e
                with lock:
                    seen[what(result)] += 1

        threads = [threading.Thread(target=worker) for _ in range(WORKERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    show("httpx.Client", transport.balancer, seen)
    return seen


async def async_client(urls: List[str]) -> Counter[str]:
    transport = weir.httpx.AsyncTransport(urls, wait=2.0)
    seen: Counter[str] = Counter()
    async with httpx.AsyncClient(transport=transport, base_url="http://backend", timeout=0.5) as client:

        async def worker() -> None:
            for _ in range(REQUESTS // WORKERS):
                try:
                    result: httpx.Response | httpx.TransportError = await client.get("/")
                except httpx.TransportError as e:
                    result = e
                seen[what(result)] += 1

        await asyncio.gather(*(worker() for _ in range(WORKERS)))
    show("httpx.AsyncClient", transport.balancer, seen)
    return seen


def show(name: str, balancer: weir.Balancer, seen: Counter[str]) -> None:
    print(f"{name}: {dict(seen)}")
    for info in balancer.nodes():
        print(f"  {info.node}: failures {info.failures:.2f}, penalty {info.penalty:.1f}")
    stats = balancer.stats()
    print(f"  {stats.by_outcome}, in flight {stats.in_flight}")


class _Backend(http.server.BaseHTTPRequestHandler):
    status = 200
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # head and body in two writes: no delayed-ACK stall between them

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.send_response(self.status)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (http.server's name)
        pass


_listening: List[socket.socket] = []


def local_backends() -> List[str]:
    """Healthy, failing (500), refusing (a closed port) and black-holed backends on 127.0.0.1."""
    urls = []
    for status in (200, 500):
        handler = type("Backend", (_Backend,), {"status": status})
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        urls.append(f"http://127.0.0.1:{server.server_address[1]}")
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        urls.append(f"http://127.0.0.1:{closed.getsockname()[1]}")
    hole = socket.socket()
    hole.bind(("127.0.0.1", 0))
    hole.listen(64)  # the kernel accepts the connections; nobody ever reads them
    _listening.append(hole)
    urls.append(f"http://127.0.0.1:{hole.getsockname()[1]}")
    return urls


def main(argv: List[str]) -> int:
    urls = argv[1:] or local_backends()
    seen = sync_client(urls) + asyncio.run(async_client(urls))
    ok = seen["200"]
    print(f"{ok}/{2 * REQUESTS} succeeded")
    return 0 if ok >= 0.9 * 2 * REQUESTS else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
