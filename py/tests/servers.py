"""Local test servers on 127.0.0.1 ephemeral ports, each in a thread of its own: a healthy one (with
headers of the test's choosing, and a status of its choosing once), one that answers 500, a closed port
(connections refused), one that accepts and never answers (black-holed), and one that sends half its body
and stalls. Every server counts what reached it and stops at the end of the
`with` block that started it; `Fleet` starts the first four together."""

from __future__ import annotations

import http.server
import json
import socket
import sys
import threading
from collections import Counter
from types import TracebackType
from typing import Any, Callable, Dict, List, Optional, Type, TypeVar

S = TypeVar("S", bound="Server")


class _Handler(http.server.BaseHTTPRequestHandler):
    """Answers every method with its server's status and headers and a JSON echo of what it received,
    and a path with ``/redirect`` in it with a 302 to the relative ``/landed?from=redirect``."""

    protocol_version = "HTTP/1.1"
    # The head and the body go out in two writes: without this, the client's delayed ACK holds the
    # second one back 40 ms.
    disable_nagle_algorithm = True

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        server: HttpServer = self.server.owner  # type: ignore[attr-defined]
        with server.lock:
            server.requests += 1
            status, headers = server.status, server.headers
            if server.next_status is not None:
                status, headers, server.next_status = server.next_status, {}, None
        echo = json.dumps(
            {
                "method": self.command,
                "path": self.path,
                "host": self.headers.get("Host"),
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": body.decode(),
                "port": server.port,
            }
        ).encode()
        if "/redirect" in self.path:
            self.send_response(302)
            self.send_header("Location", "/landed?from=redirect")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(echo)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(echo)

    do_GET = do_POST = do_PUT = do_HEAD = _answer  # noqa: N815 (http.server's names)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's name)
        pass


class Server:
    """A base class: ``url``, ``port``, ``requests`` (how many reached it), a context manager that stops
    it."""

    url: str
    port: int
    requests: int

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests = 0

    def __enter__(self: S) -> S:
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()

    def close(self) -> None:
        raise NotImplementedError


class _Quiet(http.server.ThreadingHTTPServer):
    """Does not print a client's reset of a kept-alive connection (a test closing a response early)."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class HttpServer(Server):
    """Answers every request with ``status`` (200: healthy, 500: failing) and ``headers``, but the one
    after :meth:`once`."""

    def __init__(self, status: int = 200, headers: Optional[Dict[str, str]] = None) -> None:
        super().__init__()
        self.status = status
        self.headers = dict(headers or {})
        self.next_status: Optional[int] = None
        self._server = _Quiet(("127.0.0.1", 0), _Handler)
        self._server.owner = self  # type: ignore[attr-defined]
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05})
        self._thread.daemon = True
        self._thread.start()

    def once(self, status: int) -> None:
        """Answers the next request with ``status`` (and none of ``headers``), then as before."""
        with self.lock:
            self.next_status = status

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


class Refusing(Server):
    """A port nothing listens on: every connection is refused."""

    def __init__(self) -> None:
        super().__init__()
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        pass


class _Acceptor(Server):
    """Accepts connections in a thread and gives each to ``serve`` (which must not block for long)."""

    def __init__(self) -> None:
        super().__init__()
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(128)
        self._listener.settimeout(0.05)
        self.port = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._held: List[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept)
        self._thread.daemon = True
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except (socket.timeout, OSError):
                continue
            with self.lock:
                self.requests += 1
                self._held.append(conn)
            self.serve(conn)

    def serve(self, conn: socket.socket) -> None:
        pass

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._listener.close()
        with self.lock:
            for conn in self._held:
                conn.close()


class BlackHole(_Acceptor):
    """Accepts every connection and never answers: each request runs into the client's timeout."""


class Stalling(_Acceptor):
    """Answers 200 with the head and half of a 10-byte body, then stalls: a body read that never ends."""

    def serve(self, conn: socket.socket) -> None:
        def answer() -> None:
            try:
                conn.settimeout(5)
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello")
            except OSError:
                pass

        threading.Thread(target=answer, daemon=True).start()


class Fleet(Server):
    """The four servers of the failure tests: healthy, answering 500, refusing, black-holed."""

    def __init__(self) -> None:
        super().__init__()
        self.healthy = HttpServer(200)
        self.failing = HttpServer(500)
        self.refusing = Refusing()
        self.black_hole = BlackHole()
        self.servers: List[Server] = [self.healthy, self.failing, self.refusing, self.black_hole]
        self.urls = [s.url for s in self.servers]

    def close(self) -> None:
        for server in self.servers:
            server.close()

    @staticmethod
    def from_threads(send: Callable[[], str], requests: int, workers: int) -> List[str]:
        """Calls ``send`` ``requests`` times from ``workers`` threads; what each call returned, in the
        order they ended."""
        seen: List[str] = []
        lock = threading.Lock()

        def worker() -> None:
            for _ in range(requests // workers):
                answer = send()
                with lock:
                    seen.append(answer)

        threads = [threading.Thread(target=worker) for _ in range(workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        return seen

    def check(self, name: str, balancer: Any, seen: List[str], workers: int) -> None:
        """Checks a run over the fleet: ``seen`` says which server each request reached (``healthy``,
        ``failing``, ``refusing``, ``black_hole``, told by what the client got back), ``workers`` how many
        callers sent them at once. Prints each server's share."""
        counts = Counter(seen)
        shares = ", ".join(f"{k} {counts[k]} ({100 * counts[k] / len(seen):.2f} %)" for k in sorted(counts))
        print(f"\n{name}: {len(seen)} requests: {shares}")
        stats = balancer.stats()
        # Every lease conserved, and each outcome exactly what the client saw.
        assert stats.in_flight == 0
        assert stats.acquired == len(seen) == stats.released_total
        assert stats.released_stale == 0
        assert stats.by_outcome == (
            counts["healthy"],
            counts["failing"] + counts["refusing"],
            counts["black_hole"],
            0,
            0,
            0,
        )
        assert self.healthy.requests == counts["healthy"]
        assert self.failing.requests == counts["failing"]
        # The broken servers get a few requests at the start (one each, or one per caller that chose
        # them before the first answer came back), then none (today's default never probes them
        # again; one that does, within seconds, stays well under the 5 % allowed here).
        for broken in ("failing", "refusing", "black_hole"):
            assert 1 <= counts[broken] <= max(workers, len(seen) // 20), (broken, counts)
