"""Where a board is kept: open one on disk, or connect one to Redis.

:class:`~rankengine.Leaderboard` is the in-memory board; it knows nothing of
the packages built on it.  These two functions are the doors to them:

* :func:`open_board` -- a durable board in a directory: every change is
  logged before it is acknowledged, and the board is rebuilt from the log
  (:mod:`rankengine.durable`);
* :func:`connect_board` -- the same API on a real Redis sorted set
  (:mod:`rankengine.redis`, ``pip install 'rankengine[redis]'``).

``Leaderboard.open(path, ...)`` and ``Leaderboard.connect(redis, name, ...)``
are the same calls under their older names, attached to the class by the
package root.

>>> import tempfile, rankengine
>>> with tempfile.TemporaryDirectory() as tmp:
...     with rankengine.open_board(tmp, fsync="always") as board:
...         board.incr("ann", 5)
...     with rankengine.open_board(tmp) as again:
...         again.score("ann")
5
5
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Literal

from rankengine.board.leaderboard import Leaderboard
from rankengine.durable.board import DurableLeaderboard, DurableOptions, open_board_as
from rankengine.durable.kinds import BOARD, LEDGER, what_is_in
from rankengine.ledger.oneview import LedgerBoard
from rankengine.redis.board import RedisLeaderboard
from rankengine.redis.handle import RedisOptions

if TYPE_CHECKING:
    from typing import Unpack

__all__ = ["BoardFormat", "connect_board", "open_board"]

#: The on-disk formats of a durable board: its own log, or a one-view ledger.
BoardFormat = Literal["log", "ledger"]


def open_board(
    path: str | os.PathLike[str],
    *,
    format: BoardFormat | None = None,
    **options: Unpack[DurableOptions],
) -> DurableLeaderboard | LedgerBoard:
    """Open (or create) the durable board stored in directory ``path``.

    The options are those of :class:`~rankengine.durable.DurableLeaderboard`:
    the board's settings (``order``, ``tie_break``, ``rank_style``,
    ``backend``), the ``fsync`` policy, compaction thresholds and what
    happens to a torn tail.

    A directory that holds a ledger with one board view (``rankengine
    migrate`` made it, or ``format="ledger"`` created it) opens as a
    :class:`~rankengine.ledger.oneview.LedgerBoard`: the same API, each
    write an event of the ledger.  ``format`` chooses the format of a
    *new* directory: ``"log"`` (the default: the durable board's own log,
    the faster write path, see ``docs/ledger.md``) or ``"ledger"``; asked
    of an existing directory of the other format it is an error.

    Runtime complexity: O(S + R) for a snapshot of S members and R records
    logged after it.
    """
    if format not in (None, "log", "ledger"):
        raise ValueError(f"format must be 'log' or 'ledger', not {format!r}")
    found = what_is_in(os.fspath(path))
    if found == LEDGER or (found is None and format == "ledger"):
        if format == "log":
            raise ValueError(f"{os.fspath(path)} holds a ledger, not a board's log (format='log')")
        return LedgerBoard.open(path, **options)
    if found == BOARD and format == "ledger":
        raise ValueError(
            f"{os.fspath(path)} holds a board's log, not a ledger (format='ledger'): "
            "`rankengine migrate DIR` converts it"
        )
    return open_board_as(Leaderboard, path, **options)


def connect_board(redis: Any, name: str, **options: Unpack[RedisOptions]) -> RedisLeaderboard:
    """A board with this API stored in a Redis sorted set.

    ``redis`` is a redis-py client (``Redis`` or ``RedisCluster``) or a URL;
    ``name`` names the board's keys.  The options (key prefix, packed
    scores, an event log to rebuild from) are those of
    :class:`~rankengine.redis.RedisLeaderboard`.

    Runtime complexity: O(1) round trips to open.
    """
    return RedisLeaderboard(redis, name, **options)
