"""Forgetting a member on boards made of several: periods and archives.

A durable periodic board (and a sliding window, whose buckets are one)
keeps one durable board per period in ``periods/<name>/`` and the dropped
periods as archive files in ``archive/``.  :func:`forget_in_boards` stages
every file of all of them that holds the member (segments and snapshots
through :class:`~rankengine.durable.forget.ForgetPlan`, archives here)
under **one** journal at the root, so a kill leaves the old history of
every period or the new one of every period, never some of each: the
root's open (:class:`~rankengine.timed.store.PeriodDirectories`) settles
the journal before any period board is read.

A decayed board keeps its stored scores in one durable board at a time,
whose own :meth:`~rankengine.durable.forget.Forgetting.forget` is enough.

>>> import tempfile
>>> from rankengine.timed.periodic import PeriodicLeaderboard
>>> with tempfile.TemporaryDirectory() as tmp:
...     now = [1_796_032_800.0]                        # 2026-11-30T10:00Z
...     with PeriodicLeaderboard.open(tmp, "hourly", keep=0, clock=lambda: now[0]) as board:
...         _ = board.incr("ann", 5); _ = board.incr("bob", 1)
...         now[0] += 7200                             # the 10:00 period is archived
...         _ = board.incr("ann", 2)
...         board.forget("ann")
...         board.load_archived("2026-11-30T10").items(), board.board().items()
Forgotten(present=True, records=1, rows=1, files=2)
([('bob', 1)], [])
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import msgpack

from rankengine.board.changes import DEL
from rankengine.board.leaderboard import Leaderboard
from rankengine.board.scoring import check_member
from rankengine.durable.board import DurableLeaderboard
from rankengine.durable.forget import FORGET_JOURNAL, ForgetPlan, Forgotten, finish_forget
from rankengine.durable.manifest import DirectoryLock
from rankengine.timed.archive import _HEADER, ARCHIVE_MAGIC, ARCHIVE_SUFFIX
from rankengine.timed.epochs import _DOOMED, _STAGING
from rankengine.timed.store import PeriodDirectories, close_all

__all__ = [
    "PeriodicForgetting",
    "forget_decayed_root",
    "forget_in_boards",
    "forget_periodic_root",
    "stage_archive",
]


def stage_archive(plan: ForgetPlan, path: str, member: Any) -> None:
    """Stage archive ``path`` without ``member``'s row, if it has one.

    The rows are rewritten as they were read (msgpack, the same settings
    and clock), so every other row is byte-for-byte what it was.

    :raises ValueError: the file is not an archive, or is damaged.

    Runtime complexity: O(size of the archive)
    """
    data = Path(path).read_bytes()
    if len(data) < _HEADER.size:
        raise ValueError(f"{path}: too short to be an archive")
    magic, length, crc = _HEADER.unpack_from(data)
    body = data[_HEADER.size :]
    if magic != ARCHIVE_MAGIC or len(body) != length or zlib.crc32(body) != crc:
        raise ValueError(f"{path}: not an archive, or damaged (magic, length or checksum)")
    payload = msgpack.unpackb(body, raw=False, strict_map_key=False, use_list=True)
    rows = payload["rows"]
    kept = [row for row in rows if not (type(row[0]) is type(member) and row[0] == member)]
    if len(kept) == len(rows):
        return
    payload["rows"] = kept
    new = msgpack.packb(payload, use_bin_type=True)
    plan.stage_bytes(path, _HEADER.pack(ARCHIVE_MAGIC, len(new), zlib.crc32(new)) + new)
    plan.rows += len(rows) - len(kept)


def _archives(directory: Path | None) -> list[str]:
    if directory is None or not directory.is_dir():
        return []
    return [str(p) for p in sorted(directory.glob("*" + ARCHIVE_SUFFIX))]


def forget_in_boards(
    root: str | None, boards: Iterable[Leaderboard], archives: Iterable[str], member: Any
) -> Forgotten:
    """Forget ``member`` on every board of ``boards`` and in every archive
    file of ``archives``, under one journal in ``root`` (None: no files,
    only boards in memory).

    Every durable board is held (its compaction lock, then its lock) from
    the first file staged to the last settled, so none is written
    meanwhile; a board in memory just loses the member.  A failure before
    the commit removes what was staged and changes nothing; one after it
    makes the durable boards refuse writes until reopened (the open
    finishes the forget).

    Runtime complexity: O(size of the boards' files and the archives)
    """
    boards = list(boards)
    durable = [b for b in boards if isinstance(b, DurableLeaderboard)]
    if durable and root is None:
        raise ValueError("durable boards need the root their journal goes to")
    plan = ForgetPlan(root or ".")
    present = False
    with contextlib.ExitStack() as held:
        for board in durable:
            held.enter_context(board._compact_lock)
            held.enter_context(board._lock)
        try:
            for board in durable:
                present = board._forget_stage(member, plan) or present
            for path in archives:
                stage_archive(plan, path, member)
        except BaseException:
            plan.discard()
            raise
        try:
            plan.commit()
        except BaseException as exc:
            if root is None or not os.path.exists(os.path.join(root, FORGET_JOURNAL)):
                plan.discard()
            else:  # committed, not applied: the next open finishes it
                for board in durable:
                    board._failure = exc
            raise
        for board in durable:
            board._forget_settle(member, plan)
    for plain in boards:
        if not isinstance(plain, DurableLeaderboard):
            with plain._lock:
                if member in plain._primary:
                    present = True
                    plain._apply([(DEL, member)])
    return Forgotten(present, plan.records, plan.rows, plan.files)


class PeriodicForgetting:
    """The :meth:`forget` of a :class:`~rankengine.timed.periodic.PeriodicLeaderboard`
    (a mixin)."""

    # What the mixin uses of the periodic board (annotations only).
    _lock: Any
    _boards: dict[str, Leaderboard]
    _archive: Path | None
    _store: Any
    _shut: bool
    #: waits until the periods being archived are archived (see periodic.py)
    _drain_detached: Callable[[], None]

    def forget(self, member: Any) -> Forgotten:
        """Remove ``member`` from every period held and every archived one,
        and from their history: each period's log and snapshots (as
        :meth:`DurableLeaderboard.forget
        <rankengine.durable.forget.Forgetting.forget>`) and each archive
        file, all switched at once under one journal in the root (in
        memory with an archive directory: the journal goes there).  A
        member on no board is still scrubbed from history; written again
        later, the member is a new member.

        Runtime complexity: O(size of the periods' files and the archives)

        :raises TypeError: ``member`` is not a str, bytes or int.
        :raises ValueError: the durable board is closed.
        """
        member = check_member(member)
        with self._lock:
            self._drain_detached()  # a period whose archive is being written
            if self._store is not None:
                if self._shut:
                    raise ValueError(
                        f"the durable periodic board at {self._store.periods.parent} is closed"
                    )
                root: str | None = str(self._store.periods.parent)
            elif self._archive is not None:
                root = str(self._archive)
                finish_forget(root, nested=True)  # (an earlier forget a crash interrupted)
            else:
                root = None
            return forget_in_boards(root, self._boards.values(), _archives(self._archive), member)


def _open_quietly(directory: Path) -> DurableLeaderboard:
    """A period's or an epoch's board, opened with its stored settings."""
    return DurableLeaderboard(directory, create=False, fsync="always", compact_min_bytes=None)


def forget_periodic_root(path: str | os.PathLike[str], member: Any) -> Forgotten:
    """Forget ``member`` in the directory of a durable periodic board or
    sliding window that no process has open (``rankengine forget ROOT``):
    take its lock, clear what a crash left (as its open does), and forget
    in every period held and every archive, under one journal.  No
    calendar is needed: the period boards are read as board directories.

    Runtime complexity: O(size of the periods' files and the archives)
    """
    root = Path(path)
    member = check_member(member)
    lock = DirectoryLock(str(root))
    try:
        store = PeriodDirectories(root, "always", time.time, {})
        boards = [
            _open_quietly(p)
            for p in sorted(store.periods.iterdir())
            if p.is_dir() and not p.name.startswith(".")
        ]
        try:
            return forget_in_boards(str(root), boards, _archives(root / "archive"), member)
        finally:
            close_all(boards)
    finally:
        lock.release()


def forget_decayed_root(path: str | os.PathLike[str], member: Any) -> Forgotten:
    """Forget ``member`` in the directory of a durable decayed board that
    no process has open: take its lock, clear what an interrupted re-base
    left (as its open does: the hidden leftovers, older bases), and forget
    in the stored board of the newest base.

    Runtime complexity: O(size of the board's files)
    """
    root = Path(path)
    member = check_member(member)
    lock = DirectoryLock(str(root))
    try:
        for leftover in [*root.glob(f"{_STAGING}*"), *root.glob(f"{_DOOMED}*")]:
            shutil.rmtree(leftover)
        epochs = sorted(
            (float(p.name[len("epoch-") :]), p) for p in root.glob("epoch-*") if p.is_dir()
        )
        for _, stale in epochs[:-1]:  # a finished re-base whose old base was not yet deleted
            shutil.rmtree(stale)
        if not epochs:
            return Forgotten(False, 0, 0, 0)
        with _open_quietly(epochs[-1][1]) as board:
            return board.forget(member)
    finally:
        lock.release()
