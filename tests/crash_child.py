"""Child process for tests/test_crash.py: write to a durable board until killed.

Usage: ``python tests/crash_child.py DIR SEED OPS [COMPACT_EVERY [FSYNC [BLOB [BATCH [BG]]]]]``

Opens ``DIR`` with ``fsync=FSYNC`` (default ``"always"``) and performs ``OPS`` pseudo-random
writes (seeded, so the parent can regenerate them).  Before each write it
prints ``intent I`` and after the write returns ``ack I SEQ``, flushing
stdout each time: every ``ack`` line is an acknowledged write that must
survive a SIGKILL.  Every ``COMPACT_EVERY`` writes it compacts (so kills
land inside compactions too); the ``RANKENGINE_CRASH_AT`` environment
variable makes it kill itself at a named compaction step.  With ``BLOB``
> 0, every ``set`` carries metadata of about that many bytes, so that a
kill often lands in the middle of copying a record into the log.  With
``BATCH`` > 0, the batch writes are ``set_many`` and ``incr_many`` calls of
``BATCH`` members each (one record of hundreds of kilobytes, written with
``write()`` under every policy), so that kills land inside them.  With
``BG`` = 1, each compaction runs on a thread while the writes go
on, and its log rotation waits at its first step until writes have landed
in the new segment (one under ``"always"``, whose writes then wait for the
rotation, eight otherwise), so that a kill at a rotation step finds records
the manifest does not name yet.  It prints ``done`` and exits normally if
nobody kills it.
"""

from __future__ import annotations

import random
import sys
import threading
import time
from typing import Any

from rankengine import Leaderboard
from rankengine.durable import rotation


def operation(rng: random.Random, i: int, blob: int = 0, batch: int = 0) -> tuple[str, Any]:
    """The ``i``-th write of a seeded history (rng advanced in order)."""
    member = f"m{rng.randrange(40)}"
    kind = rng.random()
    if kind < 0.45:
        return ("incr", (member, rng.choice([1, 2, 0.5, 0.1, -0.3, 1e-9])))
    if kind < 0.75:
        meta: dict[str, Any] = {"i": i}
        if blob:
            meta["blob"] = str(i % 10) * blob
        return ("set", (member, rng.choice([0, 1, 2.5, 10, rng.random()]), meta))
    if kind < 0.85:
        return ("remove", (member,))
    if batch:
        # a pool of 4 * batch members: a batch adds some and changes others
        pairs = [(f"b{rng.randrange(4 * batch)}", rng.randrange(1, 5)) for _ in range(batch)]
        return ("incr_many" if i % 2 else "set_many", (pairs,))
    return ("set_many", ([(f"m{rng.randrange(40)}", rng.randrange(5)) for _ in range(3)],))


def apply(board: Leaderboard, op: tuple[str, Any]) -> None:
    """Perform ``op`` on ``board``."""
    name, args = op
    if name == "incr":
        board.incr(*args)
    elif name == "set":
        board.set(args[0], args[1], meta=args[2])
    elif name == "remove":
        board.remove(*args)
    elif name == "incr_many":
        board.incr_many(*args)
    else:
        board.set_many(*args)


def main(argv: list[str]) -> None:
    directory, seed, ops = argv[0], int(argv[1]), int(argv[2])
    compact_every = int(argv[3]) if len(argv) > 3 else 0
    fsync = argv[4] if len(argv) > 4 else "always"
    blob = int(argv[5]) if len(argv) > 5 else 0
    batch = int(argv[6]) if len(argv) > 6 else 0
    background = len(argv) > 7 and argv[7] == "1"
    rng = random.Random(seed)
    board = Leaderboard.open(directory, fsync=fsync, compact_min_bytes=None)
    if background:
        landed = 1 if fsync == "always" else 8

        def wait_for_writes(step: str, running: rotation.Rotation) -> None:
            if step == rotation.ROTATION_STEPS[0]:
                deadline = time.monotonic() + 30
                while board.last_seq < running.seq + landed and time.monotonic() < deadline:  # type: ignore[attr-defined]
                    time.sleep(0.001)

        rotation.hooks.append(wait_for_writes)
    compactions = []
    out = sys.stdout
    for i in range(ops):
        op = operation(rng, i, blob, batch)
        out.write(f"intent {i}\n")
        out.flush()
        apply(board, op)
        out.write(f"ack {i} {board.last_seq}\n")  # type: ignore[attr-defined]
        out.flush()
        if compact_every and (i + 1) % compact_every == 0:
            if background:
                compactions.append(threading.Thread(target=board.compact))  # type: ignore[attr-defined]
                compactions[-1].start()
            else:
                board.compact()  # type: ignore[attr-defined]
    for compaction in compactions:
        compaction.join()
    board.close()  # type: ignore[attr-defined]
    out.write("done\n")
    out.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
