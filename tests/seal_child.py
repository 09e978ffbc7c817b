"""Child process for tests/test_seal.py and tests/test_truncation_sweep.py.

Usage: ``python tests/seal_child.py DIR MODE N1 N2``

Opens ``DIR`` with ``fsync="everysec"`` and makes the writes of
:func:`operation` 0, 1, 2, ..., printing ``ack I SEQ`` after each returns
(flushed: every ``ack`` line is an acknowledged write).  ``MODE``:

``checkpoint``
    ``N1`` writes; then it waits for the fsync thread's high-water
    checkpoint to cover them (prints ``marked SEQ``) and stops further
    checkpoints; ``N2`` more writes; ``ready``; then it sleeps until killed.
``close``
    ``N1`` writes, then ``close()`` (the seal), then ``done``.

``RANKENGINE_CRASH_AT`` makes it kill itself at a named step (a seal, a
checkpoint).  :func:`expected_board` is the board after the first N writes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from rankengine import Leaderboard
from rankengine.durable.manifest import read_manifest

ROOT = Path(__file__).resolve().parent.parent


def operation(board: Leaderboard, i: int) -> None:
    """The ``i``-th write: increments, sets with metadata, removals, batches."""
    member = f"m{i % 7}"
    if i % 5 == 4:
        board.set_many({f"m{(i + j) % 9}": i + j for j in range(3)})
    elif i % 11 == 10:
        board.remove(member)
    elif i % 3 == 0:
        board.set(member, i * 0.5, meta={"i": i})
    else:
        board.incr(member, i + 1)


def expected_board(n: int) -> Leaderboard:
    """The board after writes 0 .. n-1."""
    board = Leaderboard()
    for i in range(n):
        operation(board, i)
    return board


class SealChild:
    """A running seal_child.py whose stdout is drained by a thread."""

    def __init__(
        self, directory: Path, mode: str, n1: int, n2: int = 0, crash_at: str | None = None
    ) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        env.pop("RANKENGINE_CRASH_AT", None)
        if crash_at:
            env["RANKENGINE_CRASH_AT"] = crash_at
        argv = [sys.executable, __file__, str(directory), mode, str(n1), str(n2)]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, env=env, text=True)
        self.lines: list[str] = []
        self.seen = threading.Condition()
        self.reader = threading.Thread(target=self._drain, daemon=True)
        self.reader.start()

    def _drain(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self.seen:
                self.lines.append(line)
                self.seen.notify_all()
        with self.seen:
            self.lines.append("")  # the end
            self.seen.notify_all()

    def wait_for(self, word: str, timeout: float = 60) -> bool:
        """Wait until the child prints a line starting with ``word``."""
        with self.seen:
            return self.seen.wait_for(
                lambda: (
                    any(line.startswith(word) for line in self.lines)
                    or (bool(self.lines) and self.lines[-1] == "")
                ),
                timeout,
            ) and any(line.startswith(word) for line in self.lines)

    def finish(self) -> int:
        code = self.proc.wait(timeout=60)
        self.reader.join(timeout=10)
        return code

    def acked(self) -> int:
        """How many writes were acknowledged (complete ``ack`` lines)."""
        return sum(1 for line in self.lines if line.startswith("ack ") and line.endswith("\n"))


def main(argv: list[str]) -> None:
    directory, mode, n1, n2 = argv[0], argv[1], int(argv[2]), int(argv[3])
    board = Leaderboard.open(directory, fsync="everysec", compact_min_bytes=None)
    board._checkpoints.interval = 0.0  # type: ignore[attr-defined]
    out = sys.stdout
    i = 0
    for i in range(n1):
        operation(board, i)
        out.write(f"ack {i} {board.last_seq}\n")  # type: ignore[attr-defined]
        out.flush()
    if mode == "close":
        board.close()  # type: ignore[attr-defined]
        out.write("done\n")
        out.flush()
        return
    target = board.last_seq  # type: ignore[attr-defined]
    deadline = time.monotonic() + 30
    while read_manifest(directory).durable_seq < target and time.monotonic() < deadline:
        time.sleep(0.02)
    board._checkpoints.interval = float("inf")  # type: ignore[attr-defined]
    out.write(f"marked {read_manifest(directory).durable_seq}\n")
    out.flush()
    for i in range(n1, n1 + n2):
        operation(board, i)
        out.write(f"ack {i} {board.last_seq}\n")  # type: ignore[attr-defined]
        out.flush()
    out.write("ready\n")
    out.flush()
    time.sleep(600)


if __name__ == "__main__":
    main(sys.argv[1:])
