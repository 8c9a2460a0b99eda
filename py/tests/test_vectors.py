"""The shared decision traces give exactly the same decisions through Python as through Rust and C."""

from __future__ import annotations

from pathlib import Path

import pytest

from vectors import VECTORS, Mismatch, replay

FILES = sorted(VECTORS.glob("*.trace"))


def test_all_trace_files_are_found() -> None:
    assert len(FILES) >= 11


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_trace_replays_exactly(path: Path) -> None:
    assert replay(path) > 0


def test_a_changed_answer_is_caught(tmp_path: Path) -> None:
    # The replay can fail: the same file with one acquire's answer changed is refused at that line.
    src = (VECTORS / "edges-decay.trace").read_text().split("\n")
    i = next(i for i, line in enumerate(src) if line.startswith("acquire ") and line.split(" ")[-1].isdigit())
    parts = src[i].split(" ")
    parts[-1] = str(int(parts[-1]) + 1)
    src[i] = " ".join(parts)
    bad = tmp_path / "bad.trace"
    bad.write_text("\n".join(src))
    with pytest.raises(Mismatch, match=f"bad.trace:{i + 1}: acquire"):
        replay(bad)
