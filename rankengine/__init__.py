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

from rankengine.leaderboard import Entry, Leaderboard

if TYPE_CHECKING:
    from rankengine.calendars import Calendar, Cron, Daily, Every, Hourly, Monthly, Period, Weekly
    from rankengine.decay import DecayedLeaderboard
    from rankengine.durable import DurableLeaderboard
    from rankengine.eventlog import CorruptionError, LogError, RecordTooLargeError, TornTailError
    from rankengine.packed import PackedScore
    from rankengine.periodic import LateEventError, PeriodicLeaderboard
    from rankengine.redis_board import RedisLeaderboard
    from rankengine.sharded import ShardedLeaderboard
    from rankengine.sketch import CountMinSketch
    from rankengine.skiplist import SkipList
    from rankengine.sortedlist import SortedListIndex
    from rankengine.topk import TopItem, TopK, merge_topk
    from rankengine.trending import PartitionedTopK, TumblingWindows
    from rankengine.window import SlidingWindowLeaderboard

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
    "Calendar": "rankengine.calendars",
    "Cron": "rankengine.calendars",
    "Daily": "rankengine.calendars",
    "Every": "rankengine.calendars",
    "Hourly": "rankengine.calendars",
    "Monthly": "rankengine.calendars",
    "Period": "rankengine.calendars",
    "Weekly": "rankengine.calendars",
    "DecayedLeaderboard": "rankengine.decay",
    "DurableLeaderboard": "rankengine.durable",
    "CorruptionError": "rankengine.eventlog",
    "LogError": "rankengine.eventlog",
    "RecordTooLargeError": "rankengine.eventlog",
    "TornTailError": "rankengine.eventlog",
    "PackedScore": "rankengine.packed",
    "LateEventError": "rankengine.periodic",
    "PeriodicLeaderboard": "rankengine.periodic",
    "RedisLeaderboard": "rankengine.redis_board",
    "ShardedLeaderboard": "rankengine.sharded",
    "CountMinSketch": "rankengine.sketch",
    "SkipList": "rankengine.skiplist",
    "SortedListIndex": "rankengine.sortedlist",
    "TopK": "rankengine.topk",
    "TopItem": "rankengine.topk",
    "merge_topk": "rankengine.topk",
    "PartitionedTopK": "rankengine.trending",
    "TumblingWindows": "rankengine.trending",
    "SlidingWindowLeaderboard": "rankengine.window",
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
