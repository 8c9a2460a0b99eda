"""The README's Python examples run as written (as its Rust examples run as doc tests): the HTTP example
against a local server, the by-hand form against a balancer."""

from __future__ import annotations

import http.server
import re
import threading
from pathlib import Path
from typing import Any, Dict, List

import weir

README = Path(__file__).resolve().parents[2] / "README.md"


def python_blocks() -> List[str]:
    text = README.read_text()
    section = text[text.index("## Use it from Python") :]
    section = section[: section.index("\n## ", 1)]
    return re.findall(r"```python\n(.*?)```", section, re.S)


class Ok(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.send_response(200)
        self.send_header("Content-Length", "5")
        self.end_headers()
        self.wfile.write(b"hello")

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


def test_the_http_example_runs() -> None:
    first = python_blocks()[0]
    servers = [http.server.ThreadingHTTPServer(("127.0.0.1", 0), Ok) for _ in range(3)]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    urls = iter(f"http://127.0.0.1:{s.server_address[1]}" for s in servers)
    try:
        code = re.sub(r'"http://10\.0\.0\.\d+:8080"', lambda _: repr(next(urls)), first)
        assert code != first
        scope: Dict[str, Any] = {}
        exec(compile(code, "README.md", "exec"), scope)
        assert [scope["get"]("/") for _ in range(5)] == [b"hello"] * 5
        assert scope["backends"].stats().released(weir.Outcome.SUCCESS) == 5
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()


def test_the_by_hand_example_runs() -> None:
    second = python_blocks()[1]
    calls: List[Any] = []

    def call(node: Any) -> bool:
        calls.append(node)
        return False

    scope: Dict[str, Any] = {"backends": weir.Balancer(["a"], seed=1), "call": call}
    exec(compile(second, "README.md", "exec"), scope)
    assert calls == ["a"]
    assert scope["backends"].stats().released(weir.Outcome.FAILURE) == 1
