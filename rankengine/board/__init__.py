"""The exact board: one Pythonic API over an ordered index.

Owns :class:`Leaderboard` and everything its API is made of: the state and
checks (``core``, ``scoring``, ``checks``), whole-state moves (``bulk``),
the reads (``reads``), the change records a write produces (``changes``),
copies (``copying``), union and intersection (``combine``) and packed
(score, time) keys (``packed``).

May import: :mod:`rankengine.index` only.  Nothing here knows about disks,
Redis or time.
"""

from __future__ import annotations

from rankengine.board.leaderboard import Entry, Leaderboard, RankStyle, TieBreak, When
from rankengine.board.packed import PackedScore

__all__ = [
    "Entry",
    "Leaderboard",
    "PackedScore",
    "RankStyle",
    "TieBreak",
    "When",
]
