"""A periodic board's period boards, some of them not loaded yet.

A ledger's open (:mod:`rankengine.ledger.ledger`) reads every view's
snapshot, and a periodic view keeps its closed periods (``keep``) beside
the open one: a weekly view holds last week's final standings, a daily one
yesterday's.  Those boards take no more writes, and a game server reads
them rarely (last week's winners, once), so the open does not build them:
it checks their snapshot files (every frame's checksums, the header and the
trailer) and leaves an :class:`Unloaded` in their place, which loads the
board on the first read of it.

:class:`PeriodBoards` is the ``period name -> board`` map of such a
periodic board: a ``dict`` whose reads (``[name]``, ``get``, ``pop``,
``values``, ``items``, ``setdefault``) load an unloaded board first, under
the map's lock, and put the board in its place, so every caller sees
boards only.  What must not load -- the invariant check, a compaction that
copies the period's snapshot file as it is, dropping a period nobody needs
any more -- reads :meth:`PeriodBoards.peek` (the board or the
:class:`Unloaded`).  Only closed periods are left unloaded: a write never
reaches them (a late write is refused or dropped before it is routed to a
board), so the file stays their exact state.

Invariant: every unloaded period is closed in its periodic board, and its
file is the one its :class:`Unloaded` names (:meth:`PeriodBoards.check`).

>>> from rankengine.board.leaderboard import Leaderboard
>>> loads = []
>>> def load(path):
...     loads.append(path)
...     board = Leaderboard()
...     board.set("ann", 5)
...     return board
>>> boards = PeriodBoards({"1970-01-02": Leaderboard()})
>>> boards["1970-01-01"] = Unloaded("views/daily/s1-00000.snap", load)
>>> boards.unloaded(), loads
(['1970-01-01'], [])
>>> boards["1970-01-01"].items(), loads, boards.unloaded()
([('ann', 5)], ['views/daily/s1-00000.snap'], [])
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import Any, Final

from rankengine.board.leaderboard import Leaderboard

__all__ = ["PeriodBoards", "Unloaded", "is_unloaded"]

_MISSING: Final = object()


class Unloaded:
    """A period board not loaded yet: ``load(path)`` builds it from the
    snapshot file at ``path`` (a compaction that copies the file moves
    ``path`` to the copy).

    Runtime complexity: O(1); :meth:`load` O(N) for the board's N members
    """

    __slots__ = ("_board", "_lock", "load_from", "path")

    def __init__(self, path: str, load_from: Callable[[str], Leaderboard]) -> None:
        self.path = path
        self.load_from = load_from
        # a load and a move to a copy wait for each other: a load reads the
        # file it started with while the compaction that copied it may
        # remove it next
        self._lock = threading.Lock()
        #: the board once loaded (a read that waited for a preload's load
        #: of it takes that board instead of reading the file again)
        self._board: Leaderboard | None = None

    def load(self) -> Leaderboard:
        """The board, read from :attr:`path` (once: a second call returns
        the same board; a load that failed is tried again)."""
        with self._lock:
            if self._board is None:
                self._board = self.load_from(self.path)
            return self._board

    def move(self, copy: Callable[[str, str], object], path: str) -> None:
        """``copy(self.path, path)`` (the caller's copy of the file), then
        load from ``path`` from here on."""
        with self._lock:
            copy(self.path, path)
            self.path = path

    def __repr__(self) -> str:
        return f"Unloaded({os.path.basename(self.path)!r})"


def is_unloaded(board: object) -> bool:
    """True for a period board that is not loaded yet.

    >>> is_unloaded(Unloaded("x.snap", lambda _path: Leaderboard())), is_unloaded(None)
    (True, False)
    """
    return type(board) is Unloaded


class PeriodBoards(dict[str, Leaderboard]):
    """``period name -> board``, loading an :class:`Unloaded` on its first
    read (see the module docstring).

    A periodic board holds a plain ``dict`` unless a ledger's open gives
    it unloaded periods: only then do its look-ups pay for this class's
    Python-level methods (about 0.1 us each).

    Runtime complexity: O(1) per look-up, plus the load of an unloaded board
    """

    def __init__(self, boards: Iterable[tuple[str, Any]] | dict[str, Any] = ()) -> None:
        super().__init__(boards)
        self._load_lock = threading.RLock()

    def _loaded(self, name: str, value: Any) -> Leaderboard:
        """The board of ``name``, loading it if ``value`` is unloaded."""
        if type(value) is not Unloaded:
            return value  # type: ignore[no-any-return]
        with self._load_lock:  # one load, whichever thread reads first
            value = dict.get(self, name)
            if type(value) is Unloaded:
                value = value.load()
                dict.__setitem__(self, name, value)
            return value  # type: ignore[no-any-return]

    def __getitem__(self, name: str) -> Leaderboard:
        return self._loaded(name, dict.__getitem__(self, name))

    def get(self, name: str, default: Any = None) -> Any:
        value = dict.get(self, name, _MISSING)
        return default if value is _MISSING else self._loaded(name, value)

    def pop(self, name: str, default: Any = _MISSING) -> Any:
        value = self[name] if name in self or default is _MISSING else default
        if name in self:
            dict.__delitem__(self, name)
        return value

    def setdefault(self, name: str, default: Any = None) -> Any:
        if name in self:
            return self[name]
        dict.__setitem__(self, name, default)
        return default

    def values(self) -> list[Leaderboard]:  # type: ignore[override]
        return [self[name] for name in list(self)]

    def items(self) -> list[tuple[str, Leaderboard]]:  # type: ignore[override]
        return [(name, self[name]) for name in list(self)]

    def popitem(self) -> tuple[str, Leaderboard]:
        raise TypeError("PeriodBoards does not pop an arbitrary period")

    def copy(self) -> dict[str, Leaderboard]:
        """A plain dict of every board (each loaded)."""
        return dict(self.items())

    def load_aside(self, name: str, guard: AbstractContextManager[Any]) -> bool:
        """Load the period ``name`` if it is unloaded, reading its file
        while holding neither ``guard`` (the owner's lock, which every
        read, write and drop of a period holds) nor the map's lock, then
        put the board in its place under both: reads and writes of the
        other periods go on during the load, and a read of this one waits
        for it (:meth:`Unloaded.load` runs once).  A period dropped or
        loaded meanwhile is left as it is.  True when this call put the
        board in place; the load's error is raised (the period stays
        unloaded, and its next read raises the same).

        Runtime complexity: O(N) for the period's N members; O(1) when it
        is loaded already

        >>> boards = PeriodBoards({"1970-01-01": Unloaded("x.snap", lambda _p: Leaderboard())})
        >>> lock = threading.RLock()
        >>> boards.load_aside("1970-01-01", lock), boards.unloaded()
        (True, [])
        >>> boards.load_aside("1970-01-01", lock), boards.load_aside("1970-01-09", lock)
        (False, False)
        """
        with guard:
            value: Any = dict.get(self, name)
        if type(value) is not Unloaded:
            return False
        board = value.load()
        with guard, self._load_lock:
            if dict.get(self, name) is not value:
                return False  # dropped, or a read put it in place
            dict.__setitem__(self, name, board)
            return True

    def peek(self, name: str) -> Leaderboard | Unloaded | None:
        """The board of ``name`` or its :class:`Unloaded`, without loading
        (None when the period is not held).

        Runtime complexity: O(1)
        """
        return dict.get(self, name)

    def unloaded(self) -> list[str]:
        """The names of the periods not loaded yet.

        Runtime complexity: O(P) for P periods held
        """
        return [name for name, value in dict.items(self) if is_unloaded(value)]

    def check(self, closed: set[str]) -> None:
        """Every unloaded period is closed (takes no writes) and its file
        exists; raise ``AssertionError`` otherwise.

        Runtime complexity: O(P) for P periods held
        """
        for name, value in dict.items(self):
            if is_unloaded(value):
                assert isinstance(value, Unloaded)
                assert name in closed, f"period {name} is not loaded but not closed"
                assert os.path.isfile(value.path), f"{name}: no file {value.path}"
