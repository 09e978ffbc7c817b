"""A ledger's views restored from their snapshots: the first half of an open.

Every view registered in a ledger's manifest is made empty from its spec,
then given its snapshot's parts (each board by the columnar load; a
periodic view's closed period left unloaded, loaded on its first read);
a view whose snapshot does not load is emptied, with a note, so that the
replay rebuilds it from the log.  The replay of the records after the
snapshots is :func:`~rankengine.ledger.fold.replay_log`.

Two callers: :class:`~rankengine.ledger.ledger.Ledger`'s open, and the
child process that rebuilds the views' snapshots at a seq from the log
(:mod:`rankengine.ledger.replayed`), which reads the same files the same
way, without the directory's lock.

Runtime complexity: O(N) over the rows of the snapshots loaded

>>> views, start = restore_views("nowhere", {"views": {}, "snapshots": {}}, [])
>>> views, start
({}, {0: 0})
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from typing import Any

from rankengine.board.bulk import LoadedColumns
from rankengine.durable.records import CorruptionError, RecoveryWarning
from rankengine.durable.snapshot import SharedChunks, Snapshot
from rankengine.ledger.front import closed_period, deferred_board, restored_board
from rankengine.ledger.storage import (
    VIEWS_DIR,
    read_view_parts,
    refuse_migrated,
    snapshot_clock,
    snapshot_entry,
)
from rankengine.ledger.views import View
from rankengine.timed.lazy import Unloaded

__all__ = ["restore_views"]


def restore_views(
    directory: str, config: Mapping[str, Any], notes: list[str]
) -> tuple[dict[str, View], dict[int, int]]:
    """The views ``config`` registers (``config["views"]``), each restored
    from its snapshot (``config["snapshots"]``) in ``directory``, and the
    ledger's clock at each snapshot's seq (``{seq: ms}``, ``{0: 0}`` at
    least).  A view whose snapshot does not load is left empty at seq 0
    (warned of, and noted in ``notes``); a migrated one raises
    :class:`~rankengine.durable.records.LogError` instead.

    Runtime complexity: O(N) over the rows of the snapshots loaded
    """
    snapshots: Mapping[str, Any] = config.get("snapshots", {})
    start_ms: dict[int, int] = {0: 0}
    views: dict[str, View] = {}
    # Views whose snapshots hold the same rows (the boards of a young
    # ledger, views that see every event) decode them once and restore
    # from one another's maps (see front.restored_board).
    shared = SharedChunks()
    restored: list[tuple[Snapshot, LoadedColumns]] = []
    for name, spec in config.get("views", {}).items():
        view = View.from_spec(name, spec)
        views[name] = view
        entry = snapshots.get(name)
        if entry is None:
            continue
        seq, listed, clock = snapshot_entry(entry)
        try:
            board = view.template.board
            columns = board._codec.columns if hasattr(board, "_codec") else None
            defer = closed_period if view.kind == "periodic" else None
            where = os.path.join(directory, VIEWS_DIR, name)
            snaps = read_view_parts(where, listed, columns, shared, defer)
            parts = []
            for snap in snaps:
                board = None
                if snap.deferred:  # a closed period: loaded on its first read
                    board = Unloaded(snap.path, deferred_board(view, columns))
                elif snap.header.get("board"):
                    board = restored_board(view, snap, restored)
                parts.append((snap.header.get("key"), (snap.header.get("part", {}), board)))
            view.restore(parts)
            view.seq = seq
            ms = snapshot_clock(clock, snaps)  # (None: an old entry, and no part)
            if ms is not None:
                start_ms[seq] = ms
            view.time_ms = start_ms.get(seq, 0)
        except (CorruptionError, OSError, KeyError, TypeError, ValueError) as exc:
            refuse_migrated(config, name, f"its snapshot does not load ({exc})")
            note = f"view {name!r}: its snapshot does not load ({exc}); rebuilding it from the log"
            notes.append(note)
            warnings.warn(note, RecoveryWarning, stacklevel=4)
            view.reset()
            view.time_ms = 0
    return views, start_ms
