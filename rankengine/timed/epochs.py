"""The durable storage of a decayed board: one durable board per base time.

A durable :class:`~rankengine.timed.decay.DecayedLeaderboard` keeps its
stored scores in a durable board in ``root/epoch-<t0>``, ``t0`` written out
exactly (``repr`` of the float), so reopening replays the very same stored
scores under the very same base.  A re-base builds the next board under a
temporary name (``_STAGING``), closes it, renames it into place (atomic,
then the rename is fsynced), then renames the old one to a hidden
``_DOOMED`` name and deletes it; a crash at any point leaves either the old
or the new base, never a mix, and never a half-deleted ``epoch-*``
directory (an open removes the hidden leftovers, and an old base a finished
re-base had not yet deleted).

One process at a time: :func:`open_epochs` takes ``root/LOCK`` (as a board
directory does) before it reads or cleans up anything, and the decayed
board holds it until its ``close()``.  The decay itself (its settings and
arithmetic) is :mod:`rankengine.timed.decay`'s; this module knows only
that the board it is given swaps its stored board on a re-base.

>>> import tempfile
>>> from rankengine.timed.decay import DecayedLeaderboard
>>> with tempfile.TemporaryDirectory() as tmp:
...     with DecayedLeaderboard.open(tmp, tau=10.0, clock=lambda: 5.0) as hot:
...         _ = hot.add("ann", 1)
...         hot.rebase(7.0)
...     print(sorted(p.name for p in Path(tmp).iterdir()))
['LOCK', 'epoch-7.0']
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, Protocol, TypeVar

from rankengine.board.leaderboard import Leaderboard
from rankengine.durable.board import FsyncPolicy, make_directory, open_board_as
from rankengine.durable.kinds import DECAYED, refuse_other_kind
from rankengine.durable.manifest import DirectoryLock
from rankengine.durable.records import crash_point

__all__ = ["EpochBoard", "open_epochs"]

#: Directory name prefixes of a durable board: a re-base builds the next
#: base under ``_STAGING`` and renames the old one to ``_DOOMED`` before
#: deleting it; reopening removes both kinds of leftover (hidden names, so
#: no ``epoch-*`` directory is ever half built or half deleted).
_STAGING: Final = ".tmp-epoch-"
_DOOMED: Final = ".dropped-"


class EpochBoard(Protocol):
    """What :func:`open_epochs` needs of the board it opens: its base time,
    its stored board (swapped on a re-base), the hook a re-base calls, the
    root lock it holds until ``close()``, and ``close()``."""

    _board: Leaderboard
    _t0: float
    _rebase_hook: Callable[[Leaderboard, Leaderboard], None] | None
    _root_lock: DirectoryLock | None

    @property
    def t0(self) -> float: ...

    def close(self) -> None: ...


_B = TypeVar("_B", bound=EpochBoard)


def open_epochs(
    path: str | os.PathLike[str],
    build: Callable[[float | None, Callable[[float], Leaderboard]], _B],
    *,
    clock: Callable[[], float],
    fsync: FsyncPolicy,
    board_config: dict[str, Any],
) -> _B:
    """Open (or create) the epoch directories in ``path``: take its lock,
    and return ``build(t0, factory)`` -- ``t0`` the newest epoch's base
    (None when there is none yet), ``factory(base)`` the durable board of
    that base -- with its stored board in place and its re-base hook set.
    A failed open closes what it opened and releases the lock.

    Runtime complexity: O(replay) to open
    """
    root = Path(path)
    refuse_other_kind(str(root), DECAYED)  # before anything is created in another kind's
    make_directory(str(root))  # new entries fsynced into their parents
    # before any cleanup or read of the root: a second process must not
    # remove the next base the one writing here is building
    lock = DirectoryLock(str(root))
    opened: list[_B] = []
    try:
        board = _open_locked(
            root, opened, build, clock=clock, fsync=fsync, board_config=board_config
        )
    except BaseException:
        try:
            for partial in opened:
                partial.close()
        finally:
            lock.release()
        raise
    board._root_lock = lock
    return board


def _open_locked(
    root: Path,
    opened: list[_B],
    build: Callable[[float | None, Callable[[float], Leaderboard]], _B],
    *,
    clock: Callable[[], float],
    fsync: FsyncPolicy,
    board_config: dict[str, Any],
) -> _B:
    """The part of :func:`open_epochs` done under the root's lock (the board
    it builds is appended to ``opened`` as soon as it exists, so that a
    failure after that can close it)."""
    for leftover in [*root.glob(f"{_STAGING}*"), *root.glob(f"{_DOOMED}*")]:
        shutil.rmtree(leftover)
    epochs = sorted((float(p.name[len("epoch-") :]), p) for p in root.glob("epoch-*") if p.is_dir())
    for _, stale in epochs[:-1]:  # a finished re-base whose old base was not yet deleted
        shutil.rmtree(stale)
    t0 = epochs[-1][0] if epochs else None

    def millis() -> int:
        return int(clock() * 1000)

    def reopen(directory: Path) -> Leaderboard:
        return open_board_as(Leaderboard, directory, fsync=fsync, now=millis, **board_config)

    def factory(base: float) -> Leaderboard:
        final = root / f"epoch-{base!r}"
        return reopen(final if final.exists() else root / f"{_STAGING}{base!r}")

    board = build(t0, factory)
    opened.append(board)
    final = root / f"epoch-{board.t0!r}"
    if not final.exists():
        board._board = _promote(board._board, final, reopen)

    def switch(old: Leaderboard, fresh: Leaderboard) -> None:
        try:
            board._board = _promote(fresh, root / f"epoch-{board._t0!r}", reopen)
        finally:
            # (the old base is closed even when the new one could not be
            # installed: this board no longer serves it, and its files
            # stay, for the next open to choose)
            old.close()  # type: ignore[attr-defined]
        # hidden first (one atomic step), so that a crash while deleting
        # leaves a leftover the next open removes, never a half-deleted
        # epoch-* directory that looks like a damaged board
        doomed = root / f"{_DOOMED}{Path(old.path).name}"  # type: ignore[attr-defined]
        os.replace(old.path, doomed)  # type: ignore[attr-defined]
        crash_point("old_epoch_removal")
        shutil.rmtree(doomed)

    board._rebase_hook = switch
    return board


def _promote(
    staged: Leaderboard, final: Path, reopen: Callable[[Path], Leaderboard]
) -> Leaderboard:
    """Close a durable board built under its temporary name, rename it to
    ``final`` (the atomic step of a re-base), make the rename durable, and
    reopen it."""
    staged.close()  # type: ignore[attr-defined]
    crash_point("epoch_rename")
    os.replace(staged.path, final)  # type: ignore[attr-defined]
    fd = os.open(final.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    crash_point("after_epoch_rename")
    return reopen(final)
