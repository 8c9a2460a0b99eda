"""Subsetting over Python objects, identical to the core's (and so to Rust's and C's)."""

from __future__ import annotations

import pytest

import weir


def test_deterministic_subset_matches_the_core() -> None:
    backends = [f"b{i}" for i in range(12)]
    # The core's documented example: 12 backends, subsets of 3, client 0 gets [5, 11, 6].
    assert weir.deterministic_subset(backends, 0, 3) == ["b5", "b11", "b6"]
    seen = sorted(b for c in range(4) for b in weir.deterministic_subset(backends, c, 3))
    assert seen == sorted(backends)  # each backend exactly once per round
    assert weir.shuffle(list(range(12)), 0) == [5, 11, 6, 7, 3, 1, 2, 9, 8, 0, 4, 10]
    objs = [object() for _ in range(5)]
    assert all(o in objs for o in weir.deterministic_subset(objs, 7, 2))


def test_random_subset() -> None:
    backends = list(range(10))
    s = weir.random_subset(backends, 3, rng=weir.Rng(1))
    assert len(s) == 3 and len(set(s)) == 3
    assert s == weir.random_subset(backends, 3, rng=weir.Rng(1))
    assert len(weir.random_subset(backends, 10)) == 10


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda: weir.deterministic_subset([], 0, 1), ValueError, "at least one backend"),
        (lambda: weir.deterministic_subset([1, 2], 0, 0), ValueError, "subset_size must be at least 1"),
        (lambda: weir.deterministic_subset([1, 2], 0, 3), ValueError, "subset_size 3 is larger than the 2"),
        (lambda: weir.deterministic_subset([1, 2], -1, 1), ValueError, "client_id must be between"),
        (lambda: weir.deterministic_subset("ab", 0, 1), TypeError, "not a str"),
        (lambda: weir.random_subset([1], 2), ValueError, "larger than"),
        (lambda: weir.shuffle([1], 1.5), TypeError, "seed must be an int"),
    ],
)
def test_validation(call: object, exc: type[Exception], match: str) -> None:
    with pytest.raises(exc, match=match):
        call()  # type: ignore[operator]
