"""Child process for tests/test_crash_time.py: write to a durable time-based
board (periodic, decayed or sliding window) until killed.

Usage: ``python tests/crash_time_child.py KIND DIR SEED OPS [ARM_AT STEP]``

``KIND`` is ``periodic``, ``decayed`` or ``window``.  The board's clock is
simulated: write ``i`` happens at :func:`moment` ``(i)``, so periods roll
over and re-bases happen every few writes.  Before each write the child
prints ``intent I`` and after it ``ack I``, flushing stdout each time:
every ``ack`` line is an acknowledged write that must survive a SIGKILL.
A periodic board's ``on_close`` prints ``closed NAME ITEMS`` (the repr of
the final standings) before it returns.  Once write ``ARM_AT`` is
acknowledged, the child sets ``RANKENGINE_CRASH_AT=STEP``, so it kills
itself at the next time it reaches that named step (not at the first
board's creation).  It prints ``done`` and exits normally if nobody kills it.
"""

from __future__ import annotations

import os
import random
import sys
from collections.abc import Callable
from typing import Any

from rankengine import Leaderboard
from rankengine.durable.eventlog import CRASH_ENV
from rankengine.timed.calendars import Every
from rankengine.timed.decay import DecayedLeaderboard
from rankengine.timed.periodic import PeriodicLeaderboard
from rankengine.timed.window import SlidingWindowLeaderboard

#: Simulated time of write 0 and the seconds between writes: with
#: 60-second periods a period rolls over every 8 or 9 writes.
START = 1_800_000_000.0
STEP = 7.0
PERIOD = Every(60)
#: A decayed board re-bases when a write is 2 tau (20 s) past its base:
#: every third write.
TAU = 10.0
REBASE_AFTER = 2.0
KEEP = 1
BUCKETS = 3


def moment(i: int) -> float:
    """The simulated time of write ``i``."""
    return START + STEP * i


def operation(rng: random.Random, i: int) -> tuple[str, Any]:
    """The ``i``-th write of a seeded history (rng advanced in order)."""
    member = f"m{rng.randrange(12)}"
    kind = rng.random()
    if kind < 0.5:
        return ("incr", (member, rng.choice([1, 2, 5, 0.5])))
    if kind < 0.75:
        return ("set", (member, rng.randrange(20), {"i": i}))
    if kind < 0.85:
        return ("remove", (member,))
    return ("set_many", ([(f"m{rng.randrange(12)}", rng.randrange(5)) for _ in range(3)],))


def apply(board: Any, op: tuple[str, Any]) -> None:
    """Perform ``op`` on a periodic, sliding window or decayed ``board``."""
    name, args = op
    if isinstance(board, DecayedLeaderboard):
        if name == "incr":
            board.add(*args)
        elif name == "set":
            board.set(args[0], args[1])
        elif name == "remove":
            board.remove(*args)
        else:
            board.add_many(*args)
        return
    if name == "incr":
        board.incr(*args)
    elif name == "set":
        board.set(args[0], args[1], meta=args[2])
    elif name == "remove":
        board.remove(*args)
    else:
        board.set_many(*args)


def open_board(
    kind: str,
    directory: str,
    clock: Callable[[], float],
    *,
    fsync: str = "always",
    on_close: Callable[[Any, Leaderboard], None] | None = None,
) -> Any:
    """Open the durable board of ``kind`` in ``directory`` (as the child does)."""
    if kind == "periodic":
        return PeriodicLeaderboard.open(
            directory, PERIOD, keep=KEEP, clock=clock, fsync=fsync, on_close=on_close
        )
    if kind == "window":
        return SlidingWindowLeaderboard.open(directory, PERIOD, BUCKETS, clock=clock, fsync=fsync)
    assert kind == "decayed", kind
    return DecayedLeaderboard.open(
        directory, tau=TAU, clock=clock, fsync=fsync, rebase_after=REBASE_AFTER
    )


def memory_board(
    kind: str, clock: Callable[[], float], archive: str | None = None, **kw: Any
) -> Any:
    """The in-memory twin of :func:`open_board` (the reference of the checks)."""
    if kind == "periodic":
        return PeriodicLeaderboard(PERIOD, keep=KEEP, clock=clock, archive=archive, **kw)
    if kind == "window":
        return SlidingWindowLeaderboard(PERIOD, BUCKETS, clock=clock, archive=archive)
    return DecayedLeaderboard(tau=TAU, clock=clock, t0=START, rebase_after=REBASE_AFTER)


def main(argv: list[str]) -> None:
    kind, directory, seed, ops = argv[0], argv[1], int(argv[2]), int(argv[3])
    arm_at = int(argv[4]) if len(argv) > 4 else -1
    step = argv[5] if len(argv) > 5 else ""
    out = sys.stdout
    now = [moment(0)]

    def closed(period: Any, board: Leaderboard) -> None:
        out.write(f"closed {period.name} {board.items()!r}\n")
        out.flush()

    rng = random.Random(seed)
    board = open_board(kind, directory, lambda: now[0], on_close=closed)
    for i in range(ops):
        op = operation(rng, i)
        now[0] = moment(i)
        out.write(f"intent {i}\n")
        out.flush()
        apply(board, op)
        out.write(f"ack {i}\n")
        out.flush()
        if i == arm_at:
            os.environ[CRASH_ENV] = step
    board.close()
    out.write("done\n")
    out.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
