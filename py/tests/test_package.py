"""The package itself: what it exports, its typing files, its version, and the awaitable a lease's async
entry returns."""

from __future__ import annotations

import importlib.resources
import re
import sys
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


def test_the_package_under_test_is_installed() -> None:
    # The suite tests an installed package (`pip install ./py` in `cargo xtask py`, the wheel in a fresh
    # venv in `cargo xtask wheel --test`), never the source tree: the package and its native module both
    # come from this interpreter's environment.
    prefix = Path(sys.prefix).resolve()
    source = Path(__file__).resolve().parents[1] / "python"
    for module in (weir, weir._weir):
        assert module.__file__ is not None
        where = Path(module.__file__).resolve()
        assert where.is_relative_to(prefix) and not where.is_relative_to(source), where


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
    b = weir.Balancer(["n"], weir.Config(seed=1))
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


# Every public class's constructor, as help() and inspect show it: the real defaults, checked against
# what the class does when they are omitted.
CONSTRUCTORS = {
    "Config": ({}, {"algorithm": None, "limit": None, "max_waiters": 1024, "seed": None}),
    "LowestScore": ({}, {"success_half_life": 1.0, "failure_half_life": 30.0, "penalty": 10.0, "probe_fraction": 0.0,
                     "forgiveness": 0.0, "probe_after": 0.0, "slow_ratio": 0.0}),
    "Weighted": ({}, {"health": None, "draw": "cascade", "weight_exponent": 3.0, "floor": 0.0001}),
    "Buckets": ({}, {"count": 6, "width": 5.0, "decay": 3.0}),
    "Ewma": ({}, {"half_life": 32}),
    "Log10": ({}, {"k": 1}),
    "Sqrt": ({}, {"min": 4}),
    "Percentile": ({"percentile": 0.5}, {"capacity": 10}),
    "Fixed": ({}, {"limit": 100}),
    "Aimd": ({}, {"initial_limit": 20, "timeout": 5.0}),
    "Vegas": ({}, {"max_limit": 1000, "increase": "log10"}),
    "Gradient": ({}, {"initial_limit": 50, "probe_interval": 1000}),
    "Gradient2": ({}, {"queue_size": 4, "long_window": 600}),
    "Ciad": ({}, {"max_limit": 1_000_000, "fast_start": False}),
    "Knee": ({}, {"initial_limit": 20, "max_limit": 1000, "knee": 2.0, "hold": 1.75, "armed_for": 60.0}),
    "Windowed": ({}, {"min_samples": 10, "min_rtt_threshold": 0.0001}),
    "CpuSampler": ({}, {"root": None}),
    "Shedder": ({}, {"window": 5.0, "buckets": 50, "cpu_threshold": 900, "cool_off": 1.0}),
    "Throttle": ({}, {"window": 120.0, "k": 2.0, "retry_ratio": 0.1}),
    "Backoff": ({}, {"initial": 0.5, "max": 900.0, "jitter": "proportional", "jitter_max": 120.0}),
    "Balancer": ({}, {"nodes": (), "config": None, "capacity": None}),
}


@pytest.mark.parametrize("name", sorted(CONSTRUCTORS))
def test_help_shows_the_real_defaults_under_the_module_weir(name: str) -> None:
    import inspect

    cls = getattr(weir, name)
    assert cls.__module__ == "weir"
    if sys.version_info < (3, 10) and name != "Balancer":
        # The abi3 module's classes get their text signature from CPython 3.10 on (pyo3's limit).
        with pytest.raises(ValueError, match="no signature found"):
            inspect.signature(cls)
        return
    params = inspect.signature(cls).parameters
    required, some = CONSTRUCTORS[name]
    for key, value in some.items():
        assert params[key].default == value, (key, params[key])
    # The defaults shown are the defaults: passing every one of them builds the same thing.
    shown = {k: p.default for k, p in params.items() if p.default is not inspect.Parameter.empty}
    if name == "CpuSampler":
        return  # no CPU statistics on every system; its one default is None
    if name in ("Shedder", "Throttle", "Backoff", "Balancer"):
        plain, spelled = cls(**required), cls(**required, **shown)
        compared = 0
        for attr in ("window", "buckets", "cpu_threshold", "cool_off", "k", "max_rejection", "retry_ratio",
                     "initial", "max", "capacity", "classify"):
            if hasattr(plain, attr):
                assert getattr(plain, attr) == getattr(spelled, attr), attr
                compared += 1
        assert compared >= 2
        if name == "Balancer":
            # The same configuration but for the seed, which each draws at random.
            assert plain.config == weir.Config(seed=plain.config.seed)
            assert spelled.config == weir.Config(seed=spelled.config.seed)
        if name == "Backoff":
            # The same draws give the same delays: the multipliers, threshold and jitter are the defaults too.
            steps = [True] * 12 + [False] * 40
            rng_a, rng_b = weir.Rng(1), weir.Rng(1)
            assert [plain.step(f, rng=rng_a) for f in steps] == [spelled.step(f, rng=rng_b) for f in steps]
        return
    assert cls(**required) == cls(**required, **shown)


def test_help_points_at_weir_not_the_native_module() -> None:
    import pydoc

    for cls in (weir.Balancer, weir.Lease, weir.Fixed, weir.Backoff, weir.Shedder):
        text = pydoc.render_doc(cls, renderer=pydoc.plaintext)
        assert f"in module weir\n" in text, text[:200]
        assert "see weir._weir" not in text and "see ``weir._weir" not in text
    text = pydoc.render_doc(weir.Balancer, renderer=pydoc.plaintext)
    assert "config: 'Optional[Config]' = None" in text and "capacity: 'Optional[int]' = None" in text
    assert weir.Balancer[str] is not weir.Balancer and weir.Balancer[str].__origin__ is weir.Balancer
    assert weir.Lease[int].__args__ == (int,)
