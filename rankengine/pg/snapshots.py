"""Local snapshots of a follower's views: a restart loads them, then catches up.

A process's views over the PostgreSQL store live in memory; without
snapshots a process that starts replays the whole events table.  Given a
local directory, a :class:`~rankengine.pg.follower.Follower` keeps one
snapshot file per view there, ``<view>.snap``, in the snapshot format of
:mod:`rankengine.durable.snapshot` (checksummed frames, a trailer that
proves the file complete, written as ``.tmp``, fsynced, renamed, directory
fsynced), whose header names the store sequence number the view reflects
(``seq``: every event up to it is in the board, none after it).  On start,
each view added to the follower loads its snapshot and takes its ``seq`` as
its position; :meth:`Follower.catch_up
<rankengine.pg.follower.Follower.catch_up>` then reads from the lowest
position, and each view skips what it reflects already (idempotent by
sequence number), so the views end as if everything had been replayed.

A snapshot that is missing, damaged, written for another board (kind,
order, tie rule) or ahead of the store (a store dropped and made again) is
not loaded: the view is built from the store, with a :class:`SnapshotWarning`.

What can be snapshotted: a follower's view whose board is an exact
:class:`~rankengine.Leaderboard` with a scalar score and no time axis (no
``StreamClock``); and every view of a :class:`~rankengine.pg.ledger.PgLedger`
(:meth:`ViewSnapshots.save_parts`): the ledger's views export their state
as *parts* (a board and a small header each: a periodic view's periods,
open or closed, and its "now"; a window's buckets; a keyed view's boards
by key), the same parts a local :class:`~rankengine.ledger.ledger.Ledger`
snapshots, so every kind the ledger keeps is snapshotted.  A ledger view's
snapshot is several files: its parts (``<view>.<seq>-<n>.part.snap``),
then an index (``<view>.ledger.snap``, written last, atomically) naming
them, the seq, the ledger's time and the view's settings; a crash before
the index is renamed leaves the old index and the old parts (new parts
left behind are removed by the next save).

>>> import tempfile
>>> from rankengine import Leaderboard
>>> from rankengine.pg.follower import BoardView
>>> from rankengine.pg.events import StoreEvent
>>> with tempfile.TemporaryDirectory() as tmp:
...     files = ViewSnapshots(tmp)
...     view = BoardView("all", Leaderboard())
...     _ = view.apply([StoreEvent(1, "incr", "ann", 5, 0, None)])
...     _ = files.save(view)
...     again = BoardView("all", Leaderboard())
...     files.load(again, head=1), again.position, again.board.items()
(True, 1, [('ann', 5)])
"""

from __future__ import annotations

import os
import re
import warnings
from typing import Any, Final, NamedTuple

from rankengine.board.leaderboard import Leaderboard
from rankengine.durable.options import make_directory
from rankengine.durable.records import CorruptionError
from rankengine.durable.snapshot import Snapshot, read_snapshot, write_snapshot_columns

__all__ = [
    "LEDGER_SUFFIX",
    "PART_SUFFIX",
    "SNAPSHOT_SUFFIX",
    "LoadedParts",
    "SnapshotWarning",
    "ViewSnapshots",
    "can_snapshot",
]

#: A view's snapshot file is ``<view name><SNAPSHOT_SUFFIX>``.
SNAPSHOT_SUFFIX: Final = ".snap"
#: A ledger view's index file is ``<view name><LEDGER_SUFFIX>``.
LEDGER_SUFFIX: Final = ".ledger.snap"
#: A ledger view's part files end so (``<view>.<seq>-<n>.part.snap``).
PART_SUFFIX: Final = ".part.snap"
#: View names that make a safe file name (no separator, no dot first).
_SAFE_NAME: Final = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,199}")


class SnapshotWarning(UserWarning):
    """A view's snapshot was not loaded; the view is built from the store."""


def can_snapshot(view: Any) -> bool:
    """Whether ``view`` is a board view whose board a snapshot can hold: an
    exact :class:`~rankengine.Leaderboard` with a scalar score, no clock.

    Runtime complexity: O(1)
    """
    board = getattr(view, "board", None)
    return (
        isinstance(board, Leaderboard)
        and isinstance(board.order, str)
        and getattr(view, "clock", None) is None
        and not getattr(view, "timed", False)
    )


class LoadedParts(NamedTuple):
    """A ledger view's snapshot as read back: its seq, the ledger's time
    then (ms), the view's refusals, and ``(key, part header, snapshot or
    None)`` per part."""

    seq: int
    ledger_ms: int
    refused: int
    parts: list[tuple[Any, dict[str, Any], Snapshot | None]]


def _config(board: Leaderboard) -> dict[str, Any]:
    return {"kind": type(board).__name__, "order": board.order, "tie_break": board.tie_break}


class ViewSnapshots:
    """The snapshot files of one process's views, in ``directory``.

    :param directory: a local directory (made if missing); one per process.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = os.fspath(directory)
        if not os.path.isdir(self.directory):
            make_directory(self.directory)

    def path(self, name: str) -> str:
        """The snapshot file of view ``name``."""
        if not _SAFE_NAME.fullmatch(name):
            raise ValueError(
                f"view name {name!r} cannot name a snapshot file "
                "(letters, digits, '_', '.', '-'; not starting with '.' or '-')"
            )
        return os.path.join(self.directory, name + SNAPSHOT_SUFFIX)

    def save(self, view: Any) -> int:
        """Write ``view``'s snapshot (its board as of ``view.position``),
        atomically; return its size in bytes.  The caller holds what keeps
        the view still (the follower's lock).

        Runtime complexity: O(N) for N members (columnar, in C)
        """
        if not can_snapshot(view):
            raise ValueError(f"view {view.name!r}: only an exact scalar board without a clock")
        path = self.path(view.name)
        view.flush()
        board: Leaderboard = view.board
        with board._lock:
            header = {
                "seq": view.position,
                "clock": board.clock,
                "view": view.name,
                "refused": view.refused,
                "config": _config(board),
            }
            columns = board._export_columns()
        return write_snapshot_columns(path, header, columns)

    def load(self, view: Any, *, head: int) -> bool:
        """Load ``view``'s snapshot into its empty board and set its
        position; False (the view untouched, a :class:`SnapshotWarning`
        issued) when there is none, or it is damaged, for another board,
        or past ``head`` (the store's highest sequence number).

        Runtime complexity: O(N) for N members (a columnar bulk load)
        """
        path = self.path(view.name)
        board: Leaderboard = view.board
        if not can_snapshot(view) or len(board) or view.position:
            raise ValueError(f"view {view.name!r}: a snapshot loads into an empty exact board")
        try:
            snap = read_snapshot(path)
            problem = None
            if snap.header.get("view") != view.name:
                problem = f"it is of view {snap.header.get('view')!r}"
            elif snap.header.get("config") != _config(board):
                problem = f"it was written for a board {snap.header.get('config')!r}"
            elif snap.seq > head:
                problem = f"it reflects seq {snap.seq}, past the store's last ({head})"
        except FileNotFoundError:
            problem = "there is none"
        except (CorruptionError, OSError) as exc:
            problem = f"it is damaged ({exc})"
        if problem is not None:
            warnings.warn(
                f"view {view.name!r}: snapshot not loaded, {problem}; "
                "building the view from the store",
                SnapshotWarning,
                # past load, Follower.load_snapshot and add_view: the caller's add
                stacklevel=5,
            )
            return False
        board._restore_columns(
            *snap.columns(), int(snap.header["clock"]), negated=snap.negated_clocks
        )
        view.position = snap.seq
        refused = snap.header.get("refused", 0)
        view.refused = refused if type(refused) is int else 0
        return True

    # -- a ledger's views (several parts per view) ---------------------------------
    def save_parts(
        self,
        name: str,
        spec: dict[str, Any],
        seq: int,
        ledger_ms: int,
        parts: list[tuple[Any, tuple[dict[str, Any], Any]]],
        *,
        refused: int = 0,
    ) -> int:
        """Write a ledger view's snapshot: each part ``(key, (header, board
        or None))`` to a file, then the index naming them (atomically, last),
        then remove the parts no index names; return the bytes written.

        Runtime complexity: O(N) for N members over the parts
        """
        index = self.path(name)[: -len(SNAPSHOT_SUFFIX)] + LEDGER_SUFFIX
        files: list[list[Any]] = []
        size = 0
        for n, (key, (part, board)) in enumerate(parts):
            file = f"{name}.{seq:020d}-{n:05d}{PART_SUFFIX}"
            header = {
                "seq": seq,
                "clock": 0 if board is None else board.clock,
                "view": name,
                "key": key,
                "part": part,
                "board": board is not None,
            }
            columns: Any = ([], [], [], {}) if board is None else board._export_columns()
            size += write_snapshot_columns(os.path.join(self.directory, file), header, columns)
            files.append([key, file])
        header = {
            "seq": seq,
            "clock": 0,
            "view": name,
            "spec": spec,
            "ledger_ms": ledger_ms,
            "refused": refused,
            "parts": files,
        }
        size += write_snapshot_columns(index, header, ([], [], [], {}))
        keep = {file for _, file in files}
        for file in os.listdir(self.directory):
            if file.startswith(name + ".") and file.endswith(PART_SUFFIX) and file not in keep:
                os.remove(os.path.join(self.directory, file))
        return size

    def load_parts(
        self, name: str, spec: dict[str, Any], *, head: int, columns: int | None = None
    ) -> LoadedParts | None:
        """A ledger view's snapshot, or None (with a :class:`SnapshotWarning`)
        when there is none, or it is damaged, of other settings, or past
        ``head``.  ``columns``: a composite board's score width.

        Runtime complexity: O(N) for N members over the parts
        """
        index = self.path(name)[: -len(SNAPSHOT_SUFFIX)] + LEDGER_SUFFIX
        problem = None
        loaded = None
        try:
            snap = read_snapshot(index)
            header = snap.header
            if header.get("view") != name:
                problem = f"it is of view {header.get('view')!r}"
            elif header.get("spec") != spec:
                problem = f"it was written for a view {header.get('spec')!r}"
            elif snap.seq > head:
                problem = f"it reflects seq {snap.seq}, past the store's last ({head})"
            else:
                parts = []
                for key, file in header["parts"]:
                    part = read_snapshot(os.path.join(self.directory, file), columns=columns)
                    board = part if part.header.get("board") else None
                    parts.append((key, dict(part.header.get("part") or {}), board))
                refused = header.get("refused", 0)
                loaded = LoadedParts(
                    snap.seq,
                    int(header.get("ledger_ms", 0)),
                    refused if type(refused) is int else 0,
                    parts,
                )
        except FileNotFoundError:
            problem = "there is none"
        except (CorruptionError, OSError, KeyError, TypeError, ValueError) as exc:
            problem = f"it is damaged ({exc})"
        if problem is not None:
            self.warn(name, problem)
            return None
        return loaded

    @staticmethod
    def warn(name: str, problem: str) -> None:
        """Say that view ``name``'s snapshot was not loaded, and why."""
        warnings.warn(
            f"view {name!r}: snapshot not loaded, {problem}; building the view from the store",
            SnapshotWarning,
            stacklevel=4,
        )
