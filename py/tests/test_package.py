"""The package itself: what it exports, its typing files, its version, and the awaitable a lease's async
entry returns."""

from __future__ import annotations

import importlib.resources
import re
from pathlib import Path

import pytest

import weir
import weir._weir


def test_everything_in_all_exists() -> None:
    for name in weir.__all__:
        assert hasattr(weir, name), name
    assert set(weir._weir.__all__) <= set(dir(weir._weir))


def test_typing_files_ship_with_the_package() -> None:
    files = importlib.resources.files("weir")
    assert files.joinpath("py.typed").is_file()
    stub = files.joinpath("_weir.pyi").read_text()
    # Every public class of the native module has a stub.
    for name in weir._weir.__all__:
        if name[0].isupper() and not name.isupper():
            assert re.search(rf"^class {name}\b", stub, re.M), name


def test_version_matches_the_crate() -> None:
    cargo = (Path(__file__).resolve().parents[1] / "Cargo.toml").read_text()
    version = re.search(r'^version = "([^"]+)"', cargo, re.M)
    assert version is not None and weir.__version__ == version.group(1)


def test_exception_tree() -> None:
    for exc in (
        weir.NoCapacity,
        weir.NoNodes,
        weir.LeaseError,
        weir.ClockMismatch,
        weir.DuplicateNode,
        weir.UnknownNode,
        weir.CapacityFull,
        weir.Overloaded,
        weir.Throttled,
        weir.RetryBudgetExhausted,
        weir.RetryError,
        weir.CpuUnavailable,
    ):
        assert issubclass(exc, weir.WeirError)
    assert issubclass(weir.WeirError, Exception)


def test_lease_async_entry_is_an_already_done_awaitable() -> None:
    b = weir.Balancer(["n"], seed=1)
    lease = b.acquire()
    ready = lease.__aenter__()
    assert iter(ready) is ready and ready.__await__() is ready
    with pytest.raises(StopIteration) as done:
        next(ready)
    assert done.value.value is lease
    with pytest.raises(StopIteration) as sent:
        ready.send(None)
    assert sent.value.value is lease
    lease.succeeded()
