"""Ordered indexes: the structures a board keeps its order in.

Owns the :class:`OrderedIndex` protocol (``protocol``) and its two backends:
the skip list with span widths (``skiplist``, the teaching text, Redis's
design) and the ``sortedcontainers``-backed index (``sortedlist``, the speed
backend).

May import: nothing else in rankengine.
"""

from __future__ import annotations

from rankengine.index.protocol import PROTOCOL_METHODS, RUN_SCAN_LIMIT, Entry3, OrderedIndex
from rankengine.index.skiplist import SkipList
from rankengine.index.sortedlist import SortedListIndex

__all__ = [
    "PROTOCOL_METHODS",
    "RUN_SCAN_LIMIT",
    "Entry3",
    "OrderedIndex",
    "SkipList",
    "SortedListIndex",
]
