"""A varied board history and the newest snapshot's bytes, shared by the
tests of snapshots written by another process (``test_forked.py``: a
forked child; ``test_replayed.py``: a fresh process that replays the log).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rankengine.durable.manifest import read_manifest

#: Members in the boards of the failure tests: enough for the child to run a while.
MEMBERS = 20_000


def fill(board: Any, n: int = MEMBERS) -> dict[str, float]:
    """Write a varied history (sets, increments, removals, metadata) and
    return the scores it leaves."""
    model: dict[str, float] = {f"m{i}": (i * 7919) % 1000 for i in range(n)}
    board.set_many(list(model.items()))
    for i in range(0, n, 7):
        board.incr(f"m{i}", 1.5)
        model[f"m{i}"] += 1.5
    for i in range(0, n, 11):
        board.remove(f"m{i}")
        del model[f"m{i}"]
    for i in range(1, n, 13):
        board.set(f"m{i}", i, meta={"i": i})
        model[f"m{i}"] = i
    return model


def snapshot_bytes(directory: Path) -> bytes:
    """The bytes of the snapshot the directory's manifest names last."""
    name, _ = read_manifest(str(directory)).snapshots[-1]
    return (directory / name).read_bytes()
