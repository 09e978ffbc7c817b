"""Durability: the append-only event log, snapshots, and the durable board.

Owns the record format and segments (``eventlog``), snapshots
(``snapshot``), the directory's manifest, lock, verify and repair
(``manifest``), and the durable board that logs every change before it is
acknowledged (``board``).

May import: :mod:`rankengine.board` and :mod:`rankengine.index`.
"""

from __future__ import annotations

from rankengine.durable.board import DurableLeaderboard, FsyncPolicy
from rankengine.durable.eventlog import (
    CorruptionError,
    LogError,
    RecordTooLargeError,
    TornTailError,
)

__all__ = [
    "CorruptionError",
    "DurableLeaderboard",
    "FsyncPolicy",
    "LogError",
    "RecordTooLargeError",
    "TornTailError",
]
