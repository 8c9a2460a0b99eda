"""Balance real HTTP requests over several backends with weir.

    python py/examples/http_balance.py http://10.0.0.7:8080 http://10.0.0.8:8080

With no URLs it starts three local backends on 127.0.0.1 (a healthy one, one that answers 500 and a slow
one) and shows weir moving the traffic off the broken and the slow one. Each request takes a lease on a
backend; the lease records the response's outcome (a 5xx counts against the backend, a 429 says it is
busy) and its latency, so the next requests go where they succeed.
"""

from __future__ import annotations

import http.server
import sys
import threading
import time
import urllib.error
import urllib.request
from typing import List, Optional

import weir


def fetch(backends: weir.Balancer, path: str, timeout: float = 2.0) -> Optional[bytes]:
    """GET `path` from the backend weir picks; None if it failed. Raises weir.NoCapacity when every
    backend is busy for longer than `timeout`."""
    with backends.acquire(timeout=timeout) as lease:
        try:
            with urllib.request.urlopen(f"{lease.node}{path}", timeout=timeout) as response:
                body: bytes = response.read()
                lease.http_status(response.status)
                return body
        except urllib.error.HTTPError as e:
            lease.http_status(e.code)  # 5xx: FAILURE, 429: THROTTLED, 503/504: DROPPED, 4xx: CLIENT_ERROR
            return None
        except (urllib.error.URLError, TimeoutError):
            lease.dropped()  # unreachable or too slow: back off from this backend
            return None


class _Backend(http.server.BaseHTTPRequestHandler):
    status = 200
    delay = 0.0

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        time.sleep(self.delay)
        self.send_response(self.status)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (http.server's name)
        pass


def local_backends() -> List[str]:
    """Three demo backends on 127.0.0.1: healthy, failing (500) and slow (50 ms)."""
    urls = []
    for status, delay in ((200, 0.0), (500, 0.0), (200, 0.05)):
        handler = type("Backend", (_Backend,), {"status": status, "delay": delay})
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        urls.append(f"http://127.0.0.1:{server.server_address[1]}")
    return urls


def main(argv: List[str]) -> int:
    urls = argv[1:] or local_backends()
    backends = weir.Balancer(urls)
    ok = 0

    def client() -> None:
        nonlocal ok
        for _ in range(100):
            if fetch(backends, "/") is not None:
                ok += 1

    threads = [threading.Thread(target=client) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for info in backends.nodes():
        print(f"{info.node}: limit {info.limit}, penalty {info.penalty:.1f}, failures {info.failures:.2f}")
    stats = backends.stats()
    print(f"{ok}/400 succeeded; {stats.by_outcome}")
    return 0 if ok >= 390 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
