"""The Python examples of the repository's README (its quick start), of py/README.md and of py/CONTRACT.md
run as written (as the Rust examples run as doc tests), against local servers: each block's placeholder
backends (10.0.0.x) are replaced by servers on 127.0.0.1 before it runs, and nothing else is changed."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

import weir
from servers import HttpServer

ROOT = Path(__file__).resolve().parents[2]
PLACEHOLDER = re.compile(r'"http://10\.0\.0\.\d+:8080"')


def python_blocks(path: Path, section: str = "") -> List[str]:
    text = path.read_text()
    if section:
        text = text[text.index(section) :]
        text = text[: text.index("\n## ", 1)]
    return re.findall(r"```python\n(.*?)```", text, re.S)


def block(blocks: List[str], *needles: str) -> str:
    """The one block that holds every needle."""
    found = [b for b in blocks if all(n in b for n in needles)]
    assert len(found) == 1, (needles, len(found))
    return found[0]


ROOT_BLOCKS = python_blocks(ROOT / "README.md", "### Python")
PY_BLOCKS = python_blocks(ROOT / "py" / "README.md")
CONTRACT_BLOCKS = python_blocks(ROOT / "py" / "CONTRACT.md")


@pytest.fixture
def servers() -> Iterator[List[HttpServer]]:
    started = [HttpServer() for _ in range(3)]
    try:
        yield started
    finally:
        for server in started:
            server.close()


def run(code: str, servers: List[HttpServer], scope: Dict[str, Any]) -> Dict[str, Any]:
    """Runs a README block with its placeholder backends replaced by `servers`."""
    urls = iter(repr(s.url) for s in servers * 3)
    local = PLACEHOLDER.sub(lambda _: next(urls), code)
    assert "10.0.0." not in local
    exec(compile(local, "README.md", "exec"), scope)
    return scope


def test_the_root_httpx_example_runs(servers: List[HttpServer]) -> None:
    scope = run(block(ROOT_BLOCKS, "weir.httpx.Transport"), servers, {})
    scope["users"].close()
    assert scope["r"].json()["path"] == "/api/users?id=3"
    assert sum(s.requests for s in servers) == 1


def test_the_contract_by_hand_http_example_runs(servers: List[HttpServer]) -> None:
    scope = run(block(CONTRACT_BLOCKS, "urllib.request.urlopen", "def get("), servers, {})
    assert all(scope["get"]("/x").startswith(b'{"method": "GET"') for _ in range(5))
    assert scope["backends"].stats().released(weir.Outcome.SUCCESS) == 5


def test_the_contract_lease_by_hand_example_runs() -> None:
    calls: List[Any] = []

    def call(node: Any) -> bool:
        calls.append(node)
        return False

    scope: Dict[str, Any] = {"backends": weir.Balancer(["a"], weir.Config(seed=1)), "call": call}
    exec(compile(block(CONTRACT_BLOCKS, "try_acquire"), "CONTRACT.md", "exec"), scope)
    assert calls == ["a"]
    assert scope["backends"].stats().released(weir.Outcome.FAILURE) == 1


def test_the_py_readme_httpx_examples_run(
    servers: List[HttpServer], capsys: pytest.CaptureFixture[str]
) -> None:
    scope = run(block(PY_BLOCKS, "weir.httpx.Transport", "users"), servers, {})
    scope["users"].close()
    assert scope["r"].json()["path"] == "/api/users?id=3"
    run(block(PY_BLOCKS, "weir.httpx.AsyncTransport"), servers, {})
    assert capsys.readouterr().out.startswith("200 Stats(acquired=1,")


def test_the_py_readme_retry_example_runs() -> None:
    """One backend of three answers 500: the GET that meets it is answered by another; the POST is sent
    once, wherever it goes."""
    servers = [HttpServer(500), HttpServer(), HttpServer()]
    try:
        scope = run(block(PY_BLOCKS, "retry_budget=budget"), servers, {})
        scope["orders"].close()
        assert scope["order"].status_code == 200
        assert scope["order"].json()["path"] == "/api/orders/7"
        assert scope["created"].status_code in (200, 500)
        retries = scope["budget"].stats()["retries"]
        assert scope["budget"].stats()["requests"] == 2
        assert sum(s.requests for s in servers) == 2 + retries
        assert retries == servers[0].requests - (scope["created"].status_code == 500)
    finally:
        for server in servers:
            server.close()


def test_the_py_readme_requests_example_runs(servers: List[HttpServer]) -> None:
    scope = run(block(PY_BLOCKS, "weir.requests.Adapter"), servers, {})
    scope["session"].close()
    assert scope["r"].json()["path"] == "/api/users?id=3"
    assert scope["r"].url == "http://users/api/users?id=3"


def test_the_py_readme_balancer_examples_run() -> None:
    def run_query(node: str, sql: str) -> List[str]:
        if node == "db-2:5432":
            raise TimeoutError
        return [node, sql]

    scope = run(block(PY_BLOCKS, "backends.acquire("), [], {"run_query": run_query})
    answers = []
    for _ in range(20):
        try:
            answers.append(scope["query"]("select 1"))
        except TimeoutError:
            pass
    stats = scope["backends"].stats()
    assert stats.released(weir.Outcome.SUCCESS) == len(answers) and stats.released_total == 20
    assert stats.released(weir.Outcome.DROPPED) == 20 - len(answers) >= 1

    scope = run(block(PY_BLOCKS, "classify=classify"), [], {})
    backends = scope["backends"]
    with pytest.raises(scope["QuotaExceeded"]):
        with backends.acquire():
            raise scope["QuotaExceeded"]
    with pytest.raises(ConnectionResetError):
        with backends.acquire():
            raise ConnectionResetError
    assert backends.stats().by_outcome == (0, 1, 0, 0, 1, 0)


def test_the_py_readme_metrics_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    run(block(PY_BLOCKS, "weir.prometheus.Collector"), [], {})
    assert 'weir_node_in_flight{service="orders",node="db-2"} 0\n' in capsys.readouterr().out


def test_the_contract_configuration_example_runs() -> None:
    scope = run(block(CONTRACT_BLOCKS, "weir.Config.cascade("), [], {})
    backends, cascade = scope["backends"], scope["cascade"]
    # The spelled-out configuration is the default one, and the preset the cascade with its seed.
    assert backends.config == weir.Balancer(["db-1"], weir.Config(seed=backends.config.seed)).config
    assert scope["config"] == weir.Config() and sorted(backends) == ["db-1", "db-2"]
    assert cascade.config == weir.Config(algorithm=weir.Weighted(), limit=weir.Fixed(100), seed=7)


def test_the_contract_health_check_example_runs() -> None:
    # Two backends, one answering 503: both fail a call and are avoided; each check names the one quiet
    # longest, and its answer forgives the healthy one and keeps the other out.
    servers = [HttpServer(), HttpServer(503)]
    try:
        scope = run(block(CONTRACT_BLOCKS, "due_check"), servers, {})
        # The example's own checker waits a tenth of its 5 s period before its first check: stopped here.
        scope["stop"].set()
        backends = scope["backends"]
        good, bad = (s.url for s in servers)
        assert sorted(backends) == sorted([good, bad])
        first, second = backends.acquire(), backends.acquire()
        assert {first.node, second.node} == {good, bad}
        first.failed()
        second.failed()
        failures = backends.node(bad).failures
        assert backends.due_check(3600.0) is None
        scope["check"](0.0)
        scope["check"](0.0)
        assert [s.requests for s in servers] == [1, 1]
        assert backends.node(good).penalty == 0.0
        assert backends.node(bad).failures > failures
        # The failed check dated the bad node's failures anew: it is not due within a period.
        scope["check"](3600.0)
        assert [s.requests for s in servers] == [1, 1]
    finally:
        for server in servers:
            server.close()


def test_every_python_block_of_these_pages_is_run() -> None:
    """Each block is one that a test above runs, so a new block needs a test."""
    run_by_tests = {
        block(ROOT_BLOCKS, "weir.httpx.Transport"),
        block(CONTRACT_BLOCKS, "urllib.request.urlopen", "def get("),
        block(CONTRACT_BLOCKS, "due_check"),
        block(CONTRACT_BLOCKS, "try_acquire"),
        block(CONTRACT_BLOCKS, "weir.Config.cascade("),
        block(PY_BLOCKS, "weir.httpx.Transport", "users"),
        block(PY_BLOCKS, "retry_budget=budget"),
        block(PY_BLOCKS, "weir.httpx.AsyncTransport"),
        block(PY_BLOCKS, "weir.requests.Adapter"),
        block(PY_BLOCKS, "backends.acquire("),
        block(PY_BLOCKS, "classify=classify"),
        block(PY_BLOCKS, "weir.prometheus.Collector"),
    }
    assert set(ROOT_BLOCKS + CONTRACT_BLOCKS + PY_BLOCKS) == run_by_tests
