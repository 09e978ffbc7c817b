"""Approximate trending: count-min sketch, heavy hitters, windows.

Owns the key hashing (``hashing``), the count-min sketch (``sketch``), the
heavy-hitter top-K (``topk``), its merge (``merge``) and its count for a
caller that has checked it (``direct``, a ledger's), and tumbling windows
and partitions (``windows``).

May import: :mod:`rankengine.board` (its shared checks) only.
"""

from __future__ import annotations

from rankengine.trending.merge import merge_topk
from rankengine.trending.partitions import PartitionedTopK
from rankengine.trending.sketch import CountMinSketch
from rankengine.trending.topk import TopItem, TopK
from rankengine.trending.windows import TumblingWindows

__all__ = [
    "CountMinSketch",
    "PartitionedTopK",
    "TopItem",
    "TopK",
    "TumblingWindows",
    "merge_topk",
]
