"""Dropped periods: archived, released and freed after the board's lock.

A periodic board drops a closed period in two steps (see
:class:`~rankengine.timed.detached.AfterLock`): under its lock it only
*detaches* the period's board; once the lock is released, the thread that
detached it writes its archive, deletes its files and frees its board.
The methods here are that second step, a part of
:class:`~rankengine.timed.periodic.PeriodicLeaderboard`.

The board is freed in pieces (:func:`~rankengine.board.release.release_in_pieces`)
when nothing else holds it: freed at once, a board of 1,000,000 members
stalls every thread for 0.1-1 s while the interpreter frees it (one C
call that keeps the GIL), and a skip list's nodes, which link both ways,
wait for a full collection of the cycle collector.  A board that someone
still holds (a reader's reference to the period, a sliding window that
has yet to read the bucket) is left to its last holder.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rankengine.board.leaderboard import Leaderboard
from rankengine.board.release import release_in_pieces, unshared
from rankengine.durable.records import crash_point
from rankengine.timed.archive import ARCHIVE_SUFFIX, period_file_name, write_archive
from rankengine.timed.calendars import Period

__all__ = ["PeriodDropping"]


class PeriodDropping:
    """Archive, release and free the periods a periodic board detached
    (a mixin of :class:`~rankengine.timed.periodic.PeriodicLeaderboard`)."""

    # What the mixin uses of the periodic board (set by its __init__).
    _detached: dict[str, tuple[Period, Leaderboard, int | None]]
    _detached_lock: threading.Lock
    _archiver: threading.Lock
    _archive: Path | None
    _store: Any

    def _archive_due(self) -> bool:
        """Whether the calling thread has detached periods to archive.

        Runtime complexity: O(1) with no period detached, else O(detached)"""
        if not self._detached:
            return False
        me = threading.get_ident()
        with self._detached_lock:
            return any(owner in (me, None) for _, _, owner in self._detached.values())

    def _write_detached(self) -> None:
        """Archive and release the periods this thread detached (and those
        whose archive failed), oldest first.  Runs after the outermost
        release of the board's lock (see :class:`AfterLock`), so a close's
        archive is written by the call that closed it, not by a reader.

        Runtime complexity: O(N) per period for N members
        """
        me = threading.get_ident()
        with self._archiver:
            self._archive_detached(lambda owner: owner in (me, None))

    def _drain_detached(self) -> None:
        """Under the board's lock: archive and release every detached period,
        after waiting for one being archived (before close() or forget())."""
        with self._archiver:
            self._archive_detached(lambda owner: True)

    def _archive_detached(self, mine: Callable[[int | None], bool]) -> None:
        """Under ``_archiver``: archive each detached period whose owner is
        ``mine`` (durable before its own files are deleted), forget it, then
        release its files.  If the archive fails, the period stays detached
        (still readable) and the next thread to release the lock tries again.
        """
        while True:
            with self._detached_lock:
                due = [name for name, (_, _, owner) in self._detached.items() if mine(owner)]
                if not due:
                    return
                name = due[0]
                period, board, _ = self._detached[name]
            try:
                if self._archive is not None:
                    path = self._archive / (period_file_name(period.name) + ARCHIVE_SUFFIX)
                    write_archive(path, period, board)
                    crash_point("after_archive")
            except BaseException:
                with self._detached_lock:
                    self._detached[name] = (period, board, None)
                raise
            # archived: readers read the archive from here on, and a failed
            # release is not tried again (a reopen finishes it, see store.py)
            with self._detached_lock:
                del self._detached[name]
            if self._store is not None:
                self._store.release(period, board)
            del period
            if unshared(board):
                # the last reference: freed here, outside the board's lock,
                # in pieces (at once, 10^6 members hold the GIL 0.1-1 s)
                release_in_pieces(board)
            del board
