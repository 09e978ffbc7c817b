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
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from rankengine.board.leaderboard import Entry, Leaderboard

if TYPE_CHECKING:
    from rankengine.board.packed import PackedScore
    from rankengine.durable.board import DurableLeaderboard
    from rankengine.durable.eventlog import (
        CorruptionError,
        LogError,
        RecordTooLargeError,
        TornTailError,
    )
    from rankengine.index.skiplist import SkipList
    from rankengine.index.sortedlist import SortedListIndex
    from rankengine.redis.board import RedisLeaderboard
    from rankengine.sharded.board import ShardedLeaderboard
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
    from rankengine.trending.sketch import CountMinSketch
    from rankengine.trending.topk import TopItem, TopK, merge_topk
    from rankengine.trending.windows import PartitionedTopK, TumblingWindows

__all__ = [
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
    "merge_topk",
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
    "CorruptionError": "rankengine.durable.eventlog",
    "LogError": "rankengine.durable.eventlog",
    "RecordTooLargeError": "rankengine.durable.eventlog",
    "TornTailError": "rankengine.durable.eventlog",
    "PackedScore": "rankengine.board.packed",
    "LateEventError": "rankengine.timed.periodic",
    "PeriodicLeaderboard": "rankengine.timed.periodic",
    "RedisLeaderboard": "rankengine.redis.board",
    "ShardedLeaderboard": "rankengine.sharded.board",
    "CountMinSketch": "rankengine.trending.sketch",
    "SkipList": "rankengine.index.skiplist",
    "SortedListIndex": "rankengine.index.sortedlist",
    "TopK": "rankengine.trending.topk",
    "TopItem": "rankengine.trending.topk",
    "merge_topk": "rankengine.trending.topk",
    "PartitionedTopK": "rankengine.trending.windows",
    "TumblingWindows": "rankengine.trending.windows",
    "SlidingWindowLeaderboard": "rankengine.timed.window",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'rankengine' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
