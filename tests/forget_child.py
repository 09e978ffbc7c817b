"""Child process for tests/test_forget.py: forget a member, maybe get killed.

Usage: ``python tests/forget_child.py KIND DIR MEMBER [NOW]``

``KIND`` is ``board`` (a durable board directory), ``periodic`` (the root
of a durable hourly periodic board, opened with its clock fixed at ``NOW``
seconds) or ``decay`` (the root of a durable decayed board).  The
``RANKENGINE_CRASH_AT`` environment variable makes the process kill itself
at that step of the forget; without it the child prints ``done`` and exits.
"""

from __future__ import annotations

import sys

from rankengine import DecayedLeaderboard, Leaderboard, PeriodicLeaderboard


def main(argv: list[str]) -> None:
    kind, directory, member = argv[0], argv[1], argv[2]
    if kind == "board":
        with Leaderboard.open(directory, fsync="always", compact_min_bytes=None) as board:
            board.forget(member)  # type: ignore[attr-defined]
    elif kind == "periodic":
        now = float(argv[3])
        with PeriodicLeaderboard.open(directory, "hourly", keep=1, clock=lambda: now) as periodic:
            periodic.forget(member)
    else:
        now = float(argv[3])
        with DecayedLeaderboard.open(directory, tau=3600.0, clock=lambda: now) as hot:
            hot.forget(member)
    print("done", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
