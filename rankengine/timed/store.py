"""Where a durable periodic board keeps its periods: one directory each.

::

    root/
      periods/<period>/     each period's durable board
      closed/<period>       an empty marker: the period's on_close has run
      archive/              the dropped periods' archive files (archive.py)

:class:`PeriodDirectories` opens the period boards, marks periods closed and
deletes dropped ones crash-safely (a rename to a hidden name first, so a
crash mid-delete leaves a leftover the next open removes, never a
half-deleted board).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Final

from rankengine.board.leaderboard import Leaderboard
from rankengine.durable.board import (
    FsyncPolicy,
    open_board_as,
)
from rankengine.durable.forget import finish_forget
from rankengine.durable.records import crash_point
from rankengine.durable.snapshot import fsync_dir
from rankengine.timed.archive import ARCHIVE_SUFFIX, ARCHIVE_TMP, period_file_name
from rankengine.timed.calendars import (
    Period,
)

__all__ = ["PeriodDirectories", "close_all"]


#: Prefix of a dropped period's directory while it is being deleted.
_DROPPED: Final = ".dropped-"


class PeriodDirectories:
    """Where a durable :class:`PeriodicLeaderboard` keeps its periods."""

    def __init__(
        self, root: Path, fsync: FsyncPolicy, clock: Callable[[], float], config: dict[str, Any]
    ) -> None:
        self.periods = root / "periods"
        self.closed = root / "closed"
        created = False
        for directory in (self.periods, self.closed):
            if not directory.is_dir():
                directory.mkdir(parents=True, exist_ok=True)
                created = True
        if created:  # the new directories' entries, so markers have a durable home
            fsync_dir(str(root))
        finish_forget(str(root), nested=True)  # a crash during a forget: finish or undo it first
        for leftover in self.periods.glob(f"{_DROPPED}*"):  # a crash while deleting
            shutil.rmtree(leftover)
        # a crash after a dropped period's files went but before its marker did
        held = {p.name for p in self.periods.iterdir() if p.is_dir()}
        for marker in self.closed.iterdir():
            if marker.name not in held:
                marker.unlink()
        # a crash while writing an archive (write_archive's temporary file)
        for leftover in (root / "archive").glob(f"{ARCHIVE_TMP}*{ARCHIVE_SUFFIX}"):
            leftover.unlink()
        self.fsync = fsync
        self.clock = clock
        self.config = config

    def existing(self) -> list[tuple[str, bool]]:
        """``(period name, closed?)`` for every period directory found."""
        return [
            (p.name.replace("_", ":"), (self.closed / p.name).exists())
            for p in sorted(self.periods.iterdir())
            if p.is_dir() and not p.name.startswith(".")
        ]

    def open_board(self, period: Period) -> Leaderboard:
        return open_board_as(
            Leaderboard,
            self.periods / period_file_name(period.name),
            fsync=self.fsync,
            now=lambda: int(self.clock() * 1000),
            **self.config,
        )

    def mark_closed(self, period: Period) -> None:
        """Record that ``period``'s ``on_close`` ran: an empty marker file,
        durable once its directory is fsynced (without that, a power cut
        can lose the new entry and the callback would run again).

        Runtime complexity: two fsyncs
        """
        marker = self.closed / period_file_name(period.name)
        with open(marker, "wb") as handle:
            os.fsync(handle.fileno())
        fsync_dir(str(self.closed))

    def release(self, period: Period, board: Leaderboard) -> None:
        """After archiving (or to undo a period board a refused write
        created): close the period's board and delete its files.

        The directory is first renamed to a hidden name (one atomic step), so
        a crash while deleting it leaves a leftover that the next open
        removes, never a half-deleted board that would refuse to open.
        """
        close = getattr(board, "close", None)
        if close is not None:
            close()
        name = period_file_name(period.name)
        doomed = self.periods / f"{_DROPPED}{name}"
        os.replace(self.periods / name, doomed)
        fsync_dir(str(self.periods))
        crash_point("after_drop_rename")
        shutil.rmtree(doomed)
        crash_point("after_period_removal")
        (self.closed / name).unlink(missing_ok=True)


def close_all(boards: Iterable[Leaderboard]) -> None:
    """Close every board that can be closed (a durable one), even when one's
    close raises; then raise the first such error.

    Runtime complexity: O(number of boards), plus each close

    >>> close_all([Leaderboard()])  # nothing to close in memory
    """
    error: BaseException | None = None
    for board in boards:
        close = getattr(board, "close", None)
        if close is None:
            continue
        try:
            close()
        except BaseException as exc:
            error = error or exc
    if error is not None:
        raise error
