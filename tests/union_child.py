"""Child process for tests/test_crash.py: a durable union, killed part-way.

Usage: ``python tests/union_child.py DIR``

Builds :func:`inputs` in memory, prints ``ready``, writes their union
(every member with metadata) to a new durable board in ``DIR`` under
``fsync="always"``, prints ``ack``, closes it and prints ``done``.  The
parent kills it somewhere in between and checks that the result holds the
whole union or nothing.
"""

from __future__ import annotations

import sys

from rankengine import Leaderboard
from rankengine.durable.board import DurableLeaderboard

#: Members of each input: enough that a union logged as a record per
#: member's metadata takes a while under fsync="always", so a kill lands
#: inside it.
MEMBERS = 2000


def inputs() -> list[Leaderboard]:
    """Two boards with half their members shared, each member with metadata."""
    a, b = Leaderboard(), Leaderboard()
    a.set_many({f"m{i}": i % 97 for i in range(MEMBERS)})
    b.set_many({f"m{i}": i % 89 for i in range(MEMBERS // 2, MEMBERS + MEMBERS // 2)})
    for board, name in ((a, "a"), (b, "b")):
        for member, _ in board.items():
            board.set_meta(member, {"from": name, "member": member})
    return [a, b]


def main(argv: list[str]) -> None:
    boards = inputs()
    out = sys.stdout
    out.write("ready\n")
    out.flush()
    result = DurableLeaderboard.union(boards, path=argv[0], fsync="always")
    out.write("ack\n")
    out.flush()
    result.close()  # type: ignore[attr-defined]
    out.write("done\n")
    out.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
