"""Durability: the append-only event log, snapshots, and the durable board.

Owns the record format and errors (``records``), the segments
(``eventlog``), snapshots
(``snapshot``), the directory's manifest and lock (``manifest``), the
checks of ``rankengine verify`` (``verify``) and ``rankengine repair``
(``repair``), the durable board that logs every change before it is
acknowledged (``board``), what its open settles before loading
(``opening``), loading and replay (``recovery``), the replay folded into
each member's final state (``fold``), group commit (``commit``), the
writes that wait for it (``acks``) and the awaits of an event loop on it
(``loopacks``), reading the events back (``events``),
the marks of what was acknowledged (``marks``) and salvage of the records
past damage (``salvage``).

May import: :mod:`rankengine.board` and :mod:`rankengine.index`.
"""

from __future__ import annotations

from rankengine.durable.board import DurableLeaderboard, FsyncPolicy
from rankengine.durable.marks import AcknowledgedLossError
from rankengine.durable.records import CorruptionError, LogError, RecordTooLargeError, TornTailError

__all__ = [
    "AcknowledgedLossError",
    "CorruptionError",
    "DurableLeaderboard",
    "FsyncPolicy",
    "LogError",
    "RecordTooLargeError",
    "TornTailError",
]
