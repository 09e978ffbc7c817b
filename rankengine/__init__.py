"""rankengine: a pure-Python, in-memory ranking engine.

Every score change keeps the order correct, so "top 10", "what is my rank"
and "who is around me" are O(log N) reads, never a sort and never a scan.

>>> from rankengine import Leaderboard
>>> board = Leaderboard()
>>> board.set_many({"ann": 120, "bob": 80, "cid": 95})
3
>>> [(e.rank, e.member, e.score) for e in board.top(3)]
[(1, 'ann', 120), (2, 'cid', 95), (3, 'bob', 80)]

The core (``Leaderboard``, ``Entry``) is imported eagerly; every other name
is imported on first use, so ``import rankengine`` stays cheap and the
optional Redis client is needed only by the Redis board.

The packages, from the bottom up (each imports only those below it; see
``docs/architecture.md``): ``index`` (ordered indexes), ``board`` (the
in-memory board), ``durable`` (event log, snapshots, durable board),
``timed`` (periodic, window, decayed boards), ``trending`` (approximate
top-K), ``redis`` and ``sharded`` (boards on Redis and over shards),
``ledger`` (one event stream, many views), ``teach`` (pictures and
narration) and ``cli`` (the command line).
"""

from __future__ import annotations

import functools
import importlib
from typing import TYPE_CHECKING, Any

from rankengine.board.core import BoardCore
from rankengine.board.hooks import set_ledger_view_opener
from rankengine.board.leaderboard import Entry, Leaderboard
from rankengine.index.skiplist import SkipList

if TYPE_CHECKING:
    from rankengine.board.packed import PackedScore
    from rankengine.durable.board import DurableLeaderboard
    from rankengine.durable.marks import AcknowledgedLossError
    from rankengine.durable.records import (
        CorruptionError,
        LogError,
        RecordTooLargeError,
        TornTailError,
    )
    from rankengine.index.sortedlist import SortedListIndex
    from rankengine.ledger.aio import AsyncLedger
    from rankengine.ledger.ledger import Ledger
    from rankengine.redis.board import RedisLeaderboard
    from rankengine.sharded.board import ShardedLeaderboard
    from rankengine.stores import connect_board, open_board
    from rankengine.timed.calendars import (
        Calendar,
        Cron,
        Daily,
        Every,
        Hourly,
        Monthly,
        Period,
        Weekly,
    )
    from rankengine.timed.decay import DecayedLeaderboard
    from rankengine.timed.periodic import LateEventError, PeriodicLeaderboard
    from rankengine.timed.window import SlidingWindowLeaderboard
    from rankengine.trending.merge import merge_topk
    from rankengine.trending.partitions import PartitionedTopK
    from rankengine.trending.sketch import CountMinSketch
    from rankengine.trending.topk import TopItem, TopK
    from rankengine.trending.windows import TumblingWindows

__all__ = [
    "AcknowledgedLossError",
    "AsyncLedger",
    "Calendar",
    "CorruptionError",
    "CountMinSketch",
    "Cron",
    "Daily",
    "DecayedLeaderboard",
    "DurableLeaderboard",
    "Entry",
    "Every",
    "Hourly",
    "LateEventError",
    "Leaderboard",
    "Ledger",
    "LedgerBoard",
    "LogError",
    "Monthly",
    "PackedScore",
    "PartitionedTopK",
    "Period",
    "PeriodicLeaderboard",
    "RecordTooLargeError",
    "RedisLeaderboard",
    "ShardedLeaderboard",
    "SkipList",
    "SlidingWindowLeaderboard",
    "SortedListIndex",
    "TopItem",
    "TopK",
    "TornTailError",
    "TumblingWindows",
    "Weekly",
    "connect_board",
    "merge_topk",
    "open_board",
]

__version__ = "0.1.0"

#: Where each lazily imported name lives.
_LAZY: dict[str, str] = {
    "Calendar": "rankengine.timed.calendars",
    "Cron": "rankengine.timed.calendars",
    "Daily": "rankengine.timed.calendars",
    "Every": "rankengine.timed.calendars",
    "Hourly": "rankengine.timed.calendars",
    "Monthly": "rankengine.timed.calendars",
    "Period": "rankengine.timed.calendars",
    "Weekly": "rankengine.timed.calendars",
    "DecayedLeaderboard": "rankengine.timed.decay",
    "DurableLeaderboard": "rankengine.durable.board",
    "CorruptionError": "rankengine.durable.records",
    "AcknowledgedLossError": "rankengine.durable.marks",
    "LogError": "rankengine.durable.records",
    "RecordTooLargeError": "rankengine.durable.records",
    "TornTailError": "rankengine.durable.records",
    "PackedScore": "rankengine.board.packed",
    "LateEventError": "rankengine.timed.periodic",
    "Ledger": "rankengine.ledger.ledger",
    "LedgerBoard": "rankengine.ledger.oneview",
    "AsyncLedger": "rankengine.ledger.aio",
    "PeriodicLeaderboard": "rankengine.timed.periodic",
    "RedisLeaderboard": "rankengine.redis.board",
    "ShardedLeaderboard": "rankengine.sharded.board",
    "CountMinSketch": "rankengine.trending.sketch",
    "SkipList": "rankengine.index.skiplist",
    "SortedListIndex": "rankengine.index.sortedlist",
    "TopK": "rankengine.trending.topk",
    "TopItem": "rankengine.trending.topk",
    "merge_topk": "rankengine.trending.merge",
    "PartitionedTopK": "rankengine.trending.partitions",
    "TumblingWindows": "rankengine.trending.windows",
    "SlidingWindowLeaderboard": "rankengine.timed.window",
    "open_board": "rankengine.stores",
    "connect_board": "rankengine.stores",
}


class _StoreAlias:
    """``Leaderboard.open`` and ``Leaderboard.connect``: the older spellings
    of :func:`open_board` and :func:`connect_board`, resolved here in the
    package root so that the board package never imports the durable and
    Redis packages built on it.  ``MyBoard.open(path)`` on a subclass opens
    a durable ``MyBoard``, as it always has."""

    def __init__(self, target: str) -> None:
        self._target = target

    def __get__(self, obj: object, owner: type[Leaderboard]) -> Any:
        if self._target == "connect":
            return __getattr__("connect_board")
        if owner is Leaderboard:  # (a ledger directory opens as a LedgerBoard too)
            return __getattr__("open_board")
        durable = importlib.import_module("rankengine.durable.board")
        return functools.partial(durable.open_board_as, owner)


def _open_ledger_view(directory: str, kind: str, options: dict[str, Any]) -> Any:
    """``PeriodicLeaderboard.open`` on a ledger directory: its one view as a
    board (registered here, in the root, for the reason the aliases below
    are: the ledger is built on the time boards, which must not import it)."""
    timeview = importlib.import_module("rankengine.ledger.timeview")
    return timeview.open_time_view(directory, kind, options)


set_ledger_view_opener(_open_ledger_view)
Leaderboard.open = _StoreAlias("open")  # type: ignore[assignment]
Leaderboard.connect = _StoreAlias("connect")  # type: ignore[assignment]


def _repr_html_(self: Any) -> str:
    """How a notebook (Jupyter) shows a skip list or an in-process board:
    the skip list's SVG picture while it is small, else a summary or the
    best entries (:func:`rankengine.teach.notebook.html_of`).  Attached
    here, in the package root, for the reason the aliases above are: the
    pictures are built on the index and board packages, which must not
    import them."""
    notebook = importlib.import_module("rankengine.teach.notebook")
    return str(notebook.html_of(self))


BoardCore._repr_html_ = _repr_html_  # type: ignore[attr-defined]
SkipList._repr_html_ = _repr_html_  # type: ignore[attr-defined]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'rankengine' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
