"""Periodic boards: one leaderboard per time period ("this week", "today").

A :class:`PeriodicLeaderboard` routes every write to the board of the period
its timestamp falls in, keeps the last few periods queryable, archives older
ones to a file and drops them from memory, and calls a callback with the
final standings when a period closes.  Reads never merge anything: a period
*is* one :class:`~rankengine.Leaderboard`.

Time is cut into periods by a calendar (see :mod:`rankengine.timed.calendars`:
hourly, daily, ISO weekly, monthly, fixed length or cron; all arithmetic in
UTC plus an optional fixed offset).

>>> calendar("weekly").period_of(1_798_761_600).name   # 2027-01-01T00:00Z
'2026-W53'

Open, closed, late
------------------
A period is *open* from its start until ``end + grace`` (``grace`` seconds
of allowed lateness, default 0), then *closed*: its standings are final, the
``on_close`` callback runs once with its board, and it stays queryable while
it is among the ``keep`` periods before the current one.  After that it is
archived (if an ``archive`` directory is given) and dropped from memory.

A write goes to the period of *its own* timestamp when that period is open.
A write for a closed period is late and follows ``late``: ``"reject"``
raises :class:`LateEventError` (the default), ``"drop"`` ignores it and
counts it in :attr:`PeriodicLeaderboard.late_dropped` (bad input still
raises, as it would on time), ``"current"`` counts
it in the current period (but a pop or a removal by rank or score, which
picks its members by the closed period's final standings, raises
:class:`LateEventError` under ``"current"`` too).  A write for a period that has not started yet is
refused with ``ValueError``.  The board's "now" is the injectable ``clock``
and never moves backwards.  A write its period's board refuses (bad member,
score, ``when`` or metadata) changes nothing: no board is left behind for
a period nobody wrote to.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias, TypeVar

from rankengine.board.checks import check_flag
from rankengine.board.copying import Uncopyable
from rankengine.board.leaderboard import Leaderboard
from rankengine.board.routing import routed
from rankengine.board.scoring import Member
from rankengine.durable.board import (
    BOARD_SETTINGS,
    DurableLeaderboard,
    FsyncPolicy,
    check_fsync,
    check_options,
    make_directory,
    pop_log_options,
)
from rankengine.durable.kinds import PERIODIC, as_ledger_view, refuse_other_kind
from rankengine.durable.manifest import DirectoryLock
from rankengine.durable.records import crash_point
from rankengine.timed.archive import (
    ARCHIVE_SUFFIX,
    period_file_name,
    read_archive,
    write_archive,
)
from rankengine.timed.calendars import (
    Calendar,
    Cron,
    Daily,
    Every,
    Hourly,
    Monthly,
    Period,
    Weekly,
    calendar,
    check_time,
)
from rankengine.timed.detached import AfterLock
from rankengine.timed.dropping import PeriodDropping
from rankengine.timed.forget import PeriodicForgetting
from rankengine.timed.lazy import PeriodBoards, is_unloaded
from rankengine.timed.period_writes import LateEventError, PeriodWrites
from rankengine.timed.store import PeriodDirectories, close_all

__all__ = [
    "Calendar",
    "Cron",
    "Daily",
    "Every",
    "Hourly",
    "LateEventError",
    "LatePolicy",
    "Monthly",
    "Period",
    "PeriodicLeaderboard",
    "Weekly",
    "calendar",
    "read_archive",
    "write_archive",
]

LatePolicy: TypeAlias = Literal["reject", "drop", "current"]
_R = TypeVar("_R")
_LATE_POLICIES: Final = ("reject", "drop", "current")
#: Constructor options that :meth:`PeriodicLeaderboard.open` refuses: a
#: durable board archives to ``<path>/archive`` and opens its own boards.
_OPEN_OWNS: Final = ("archive", "board_factory")


def _in_period(method: Callable[..., _R]) -> Callable[..., _R]:
    """``method`` of the board contract, read in a period: a periodic
    board's read (see :func:`~rankengine.board.routing.routed`).

    >>> PeriodicLeaderboard.top.__doc__.splitlines()[0]
    ':meth:`Leaderboard.top` in a period (default: the current one).'
    """
    return routed(
        method,
        keyword="period",
        route="board",
        annotation="Period | str | None",
        about=f":meth:`Leaderboard.{method.__name__}` in a period (default: the current one).",
    )


# ----------------------------------------------------------------------
# The periodic board
# ----------------------------------------------------------------------
class PeriodicLeaderboard(PeriodWrites, PeriodicForgetting, PeriodDropping, Uncopyable):
    """A leaderboard per period of a calendar, with retention, archive and
    close callbacks.  See the module docstring for the time and late rules.

    :param cal: a :class:`Calendar`, a calendar name or a cron expression.
    :param keep: closed periods kept queryable behind the current one.
    :param grace: seconds after a period's end during which writes for it
        are still accepted (allowed lateness); it closes after that.
    :param late: what a write for a closed period does:
        ``"reject"``, ``"drop"`` or ``"current"``.
    :param clock: returns "now" in POSIX seconds (injectable for tests).
    :param on_close: called as ``on_close(period, board)`` once per period,
        in period order, when it closes; ``board`` holds the final standings
        (read it, don't write it).  If it raises, the error reaches the caller
        and the call is retried at the next call (at-least-once).  It runs
        on the thread whose call closed the period, holding the periodic
        board's lock: it may read ``board`` and the periodic board, but
        must not wait for another thread that uses the periodic board
        (that thread waits for the lock, so both would wait forever); hand
        slow work (prizes over the network) to a queue instead.
    :param archive: a directory: a dropped period is written there as
        ``<name>.rkarchive`` (see :func:`write_archive`) before leaving memory,
        by the call that dropped it once it has released the board's lock.
    :param board_factory: builds the board of a new period, e.g. a durable
        ``lambda p: Leaderboard.open(root / p.name)``; default
        ``Leaderboard(**board_config)``.
    :param board_config: settings for the default boards (``order``, ...).

    Every call first *advances*: it reads the clock, creates the current
    period's board, closes periods whose grace ran out (callbacks), and
    archives/drops closed periods that fell out of ``keep``.  :meth:`tick`
    does only that, for a scheduler.

    Copying: ``copy.copy``, ``copy.deepcopy`` and pickling raise
    :class:`TypeError`.  The board runs on a clock function and callbacks
    (``on_close`` would fire twice for one period) and may own an archive or
    root directory; copy a period's standings instead:
    ``board.board(period).copy()`` is an independent :class:`Leaderboard`.

    >>> now = [1_798_416_000.0]                  # Monday 2026-12-28 00:00Z
    >>> closed = []
    >>> weekly = PeriodicLeaderboard("weekly", clock=lambda: now[0],
    ...                              on_close=lambda p, b: closed.append((p.name, b.items())))
    >>> weekly.incr("ann", 30), weekly.incr("bob", 10)
    (30, 10)
    >>> weekly.current.name, [e.member for e in weekly.top()]
    ('2026-W53', ['ann', 'bob'])
    >>> now[0] += 7 * 86400                      # a week later
    >>> weekly.incr("bob", 5)
    5
    >>> closed
    [('2026-W53', [('ann', 30), ('bob', 10)])]
    >>> weekly.top(period="2026-W53")[0].member, weekly.current.name
    ('ann', '2027-W01')
    """

    _copy_advice = (
        "it runs on a clock and callbacks and may own a directory; copy a period's "
        "standings instead: board.board().copy() (or board.board(period).copy())"
    )
    #: False in a ledger's view between its events (ledger/adapters.py): a
    #: read does not make the current period's board (a replay would not).
    _advance_makes_current = True
    #: While it is not made, the horizon is "now" (the next event's advance
    #: makes it; a write never skips routing) and reads before this time
    #: have nothing to do.
    _unmade_end = -math.inf

    def __init__(
        self,
        cal: Calendar | str,
        *,
        keep: int = 1,
        grace: float = 0.0,
        late: LatePolicy = "reject",
        clock: Callable[[], float] = time.time,
        on_close: Callable[[Period, Leaderboard], None] | None = None,
        archive: str | os.PathLike[str] | None = None,
        board_factory: Callable[[Period], Leaderboard] | None = None,
        **board_config: Any,
    ) -> None:
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 0:
            raise ValueError(f"keep must be an int >= 0, not {keep!r}")
        grace = check_time(grace, "grace")
        if grace < 0:
            raise ValueError(f"grace must be >= 0, not {grace!r}")
        if late not in _LATE_POLICIES:
            raise ValueError(f"late must be one of {_LATE_POLICIES}, not {late!r}")
        # settings only (open() gives the log options to the boards it opens):
        # a misspelt or bad one is refused here, not at the first write
        check_options(board_config, BOARD_SETTINGS, "PeriodicLeaderboard")
        Leaderboard(**board_config)
        self._calendar = calendar(cal)
        self._keep = keep
        self._grace = grace
        self._late: LatePolicy = late
        self._clock = clock
        self._on_close = on_close
        self._archive = None if archive is None else Path(archive)
        if self._archive is not None:
            self._archive.mkdir(parents=True, exist_ok=True)
        #: the settings of the boards it makes; open() adds the log options
        #: of the durable ones, which the empty detached board of an
        #: unwritten period does not take (it reads _plain_config)
        self._board_config = board_config
        self._plain_config = dict(board_config)
        self._factory = board_factory or (lambda _period: Leaderboard(**board_config))
        self._boards: dict[str, Leaderboard] = {}
        self._periods: dict[str, Period] = {}
        self._closed: set[str] = set()
        self._now = -math.inf
        #: before this time, advancing has nothing to do (see _advance)
        self._horizon = -math.inf
        self._late_dropped = 0
        #: periods that a tick() which raised had closed, oldest first: the
        #: next tick() returns them (see tick)
        self._unreported: list[Period] = []
        #: True while an on_close callback runs: a read it makes through this
        #: board must not advance again (it would close the same period again)
        self._closing = False
        #: Dropped periods whose archive is being written, oldest first, with
        #: the thread that writes it (None after a failed try: any thread);
        #: reads answer from them meanwhile.  Guarded by _detached_lock only.
        self._detached: dict[str, tuple[Period, Leaderboard, int | None]] = {}
        self._detached_lock = threading.Lock()
        #: Held while detached periods are archived (never waits for _lock).
        self._archiver = threading.Lock()
        # Lock order: this lock, then _archiver, then a period board's lock.
        # A window over these buckets takes its own lock before this one
        # (see window.py); the hooks below run under this lock and take none.
        # A dropped period's archive is written after the outermost release
        # of this lock (see _drop and rankengine.timed.detached).
        self._lock = AfterLock(after=self._write_detached, pending=self._archive_due)
        #: True after close() closed durable period boards: the board then
        #: stays as it was (no new period boards, no closing or dropping).
        self._shut = False
        #: Called as ``hook(period, members, moved)`` after each write (the
        #: sliding window marks those members for its next refresh; ``moved``
        #: is False when the write moved no score).
        self._write_hook: Callable[[Period, Iterable[Member], bool], None] | None = None
        #: Called as ``hook(period, board)`` just before a period leaves memory.
        self._drop_hook: Callable[[Period, Leaderboard], None] | None = None
        #: The directory store of a durable board (see :meth:`open`), or None.
        self._store: PeriodDirectories | None = None
        #: The durable board's lock on its root directory, held until close().
        self._root_lock: DirectoryLock | None = None

    # ------------------------------------------------------------------
    # Time and periods
    # ------------------------------------------------------------------
    @property
    def calendar(self) -> Calendar:
        """The calendar that cuts time into periods."""
        return self._calendar

    @property
    def keep(self) -> int:
        """How many closed periods stay queryable behind the current one."""
        return self._keep

    @property
    def late_dropped(self) -> int:
        """Late writes ignored under ``late="drop"``."""
        return self._late_dropped

    @property
    def current(self) -> Period:
        """The period holding "now" (after advancing)."""
        with self._lock:
            return self._calendar.period_of(self._advance())

    def now(self) -> float:
        """The board's time: the clock, never less than a time already seen."""
        with self._lock:
            return self._advance()

    def period_of(self, t: float) -> Period:
        """The period a write at time ``t`` belongs to (by the calendar alone)."""
        return self._calendar.period_of(t)

    def periods(self) -> list[Period]:
        """Periods held in memory, oldest first (the current one last; a
        ledger's view holds it once one of its events reached it).

        Runtime complexity: O(P log P) for P periods held
        """
        with self._lock:
            self._advance()
            return sorted(self._periods.values(), key=lambda p: p.start)

    def is_open(self, period: Period | str) -> bool:
        """True while writes for ``period`` are accepted: from its start
        until ``end + grace`` (a period that has not started is not open).

        >>> board = PeriodicLeaderboard("daily", grace=60, clock=lambda: 86_430.0)
        >>> board.is_open("1970-01-01"), board.is_open("1970-01-02"), board.is_open("1970-01-03")
        (True, True, False)
        """
        with self._lock:
            now = self._advance()
            target = self._resolve(period)
            return target.start <= now < target.end + self._grace

    def tick(self) -> list[Period]:
        """Advance to "now": run due close callbacks and archive old periods.

        If a callback (or a durable board's closed marker) raises, the error
        reaches the caller, and the periods this call had closed before it
        are returned by the next ``tick()``, ahead of those it closes: every
        period a ``tick()`` closes is in one ``tick()``'s return value.
        Periods that other calls close are in none.

        :return: the periods that closed during this call (and during a
            ``tick()`` before it that raised), oldest first.

        Runtime complexity: O(P log P) for P periods held, plus the callbacks
        and archives due

        >>> now = [0.0]
        >>> board = PeriodicLeaderboard("daily", clock=lambda: now[0])
        >>> board.tick()
        []
        >>> now[0] = 86_400.0
        >>> [p.name for p in board.tick()]
        ['1970-01-01']
        """
        with self._lock:
            # periods that a tick() which raised had closed: reported now
            closed, self._unreported = self._unreported, []
            try:
                self._advance(closed)
            except BaseException:
                self._unreported = closed
                raise
            return closed

    # ------------------------------------------------------------------
    # Reads
    # ------------------------------------------------------------------
    def board(self, period: Period | str | None = None) -> Leaderboard:
        """The board of a period held in memory (default: the current one).

        Writes should go through this object (they are routed and checked);
        a period nobody wrote to and that was never current gives a new,
        empty, detached board, if it is within ``keep`` or still open (in
        its grace: a write to it would be accepted).

        :raises KeyError: the period is neither held, nor within ``keep``,
            nor open (it was archived: see :meth:`load_archived`).
        """
        with self._lock:
            now = self._advance()
            target = self._calendar.period_of(now) if period is None else self._resolve(period)
            board = self._boards.get(target.name)
            if board is not None:
                return board
            with self._detached_lock:
                detached = self._detached.get(target.name)
            if detached is not None and self._archive is not None:
                return detached[1]  # its archive is being written (without: gone)
            current = self._calendar.period_of(now)
            # an open period not held has had no write yet (a period leaves
            # memory only once closed, and closes only after its grace)
            is_open = target.start <= now < target.end + self._grace
            if is_open or self._oldest_kept(current) <= target.start <= current.start:
                return Leaderboard(**self._plain_config)
            raise KeyError(self._not_held(target, current))

    def _not_held(self, target: Period, current: Period) -> str:
        """Why ``target`` is not held, and how to read it if it can be read."""
        name = target.name
        if target.start > current.start:
            return f"period {name} has not started yet (the current period is {current.name})"
        gone = f"period {name} is not held in memory (older than keep={self._keep} periods)"
        if self._archive is None:
            return f"{gone} and this board has no archive (pass archive= to keep dropped periods)"
        path = self._archive / (period_file_name(name) + ARCHIVE_SUFFIX)
        if path.exists():
            return f"{gone}; it was archived: read it with board.load_archived({name!r})"
        return f"{gone} and there is no archive of it (board.archived() lists the archived ones)"

    # Every read of the board contract, in a period: the period's board
    # answers it (see rankengine.board.routing.routed), so each keeps the
    # contract's signature, docstring and errors, plus ``period=``.
    score = _in_period(Leaderboard.score)
    rank = _in_period(Leaderboard.rank)
    entry = _in_period(Leaderboard.entry)
    entries = _in_period(Leaderboard.entries)
    at = _in_period(Leaderboard.at)
    rank_for_score = _in_period(Leaderboard.rank_for_score)
    percentile = _in_period(Leaderboard.percentile)
    score_at_percentile = _in_period(Leaderboard.score_at_percentile)
    meta = _in_period(Leaderboard.meta)
    top = _in_period(Leaderboard.top)
    by_rank = _in_period(Leaderboard.by_rank)
    page = _in_period(Leaderboard.page)
    pages = _in_period(Leaderboard.pages)
    around = _in_period(Leaderboard.around)
    by_score = _in_period(Leaderboard.by_score)
    count = _in_period(Leaderboard.count)
    items = _in_period(Leaderboard.items)

    def unloaded(self) -> list[str]:
        """Closed periods not loaded yet (a ledger's open leaves them so:
        :mod:`rankengine.timed.lazy`); O(P) for P periods held."""
        with self._lock:
            boards = self._boards
            return boards.unloaded() if type(boards) is PeriodBoards else []

    def load_unloaded(self, name: str) -> bool:
        """Load the closed period ``name`` if it is unloaded, without
        holding this board's lock while its file is read (see
        :meth:`PeriodBoards.load_aside <rankengine.timed.lazy.PeriodBoards.load_aside>`);
        O(N) for its N members."""
        boards = self._boards
        return type(boards) is PeriodBoards and boards.load_aside(name, self._lock)

    def archived(self) -> list[str]:
        """Names of the periods in the archive directory, oldest first."""
        if self._archive is None:
            return []
        names = [
            p.name[: -len(ARCHIVE_SUFFIX)].replace("_", ":")
            for p in self._archive.glob("*" + ARCHIVE_SUFFIX)
            if not p.name.startswith(".")
        ]
        return sorted(names, key=lambda name: self._calendar.parse(name).start)

    def load_archived(self, period: Period | str) -> Leaderboard:
        """The final board of an archived period, read back from its file.

        :raises KeyError: no archive file for it.

        Runtime complexity: O(N)
        """
        if self._archive is None:
            raise KeyError("this board has no archive directory")
        name = period.name if isinstance(period, Period) else period
        path = self._archive / (period_file_name(name) + ARCHIVE_SUFFIX)
        if not path.exists():
            raise KeyError(f"no archive of period {name}")
        return read_archive(path)[1]

    # ------------------------------------------------------------------
    # Durable storage
    # ------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        cal: Calendar | str,
        *,
        fsync: FsyncPolicy = "everysec",
        clock: Callable[[], float] = time.time,
        preload: bool = False,
        **options: Any,
    ) -> PeriodicLeaderboard:
        """Open (or create) a durable periodic board in directory ``path``.

        Layout: ``periods/<name>/`` holds one durable board (event log) per
        period in memory, so replay rebuilds each period from its own
        records: period membership is the directory, not a recomputation.
        ``closed/<name>`` marks a period whose ``on_close`` ran (so reopening
        does not run it again), and ``archive/<name>.rkarchive`` holds
        dropped periods.  Records are stamped with ``clock``.  ``options``
        are the constructor's (``keep``, ``grace``, ``late``, ``on_close``,
        board settings) but ``archive`` and ``board_factory`` (the archive is
        ``path/archive``, the boards durable ones: either raises
        ``TypeError``); pass the same calendar and options on reopen.

        Crash rules: a crash after a callback but before its marker runs the
        callback again on reopen (at-least-once); a crash after archiving
        but before deleting the period's directory archives it again
        (the same bytes, atomically replaced); a crash while deleting it
        leaves a hidden ``periods/.dropped-<name>`` that reopening removes,
        as it removes the closed marker of a period whose directory is gone
        and an archive's temporary file (a crash while writing it).
        One process at a time: opening takes ``path/LOCK`` (as a board
        directory does) before it reads or cleans up anything, and holds it
        until :meth:`close`, so a second writer gets
        :class:`~rankengine.durable.records.LogError` ("already open for writing")
        and never removes a file this one is writing.
        Reopening never moves "now" back: it starts from the latest time
        the files prove was reached (a held period's start, a closed or
        archived period's ``end + grace``), so a closed period stays closed
        even if the new process's clock reads earlier.

        ``preload``: on a one-view ledger (:mod:`rankengine.ledger.timeview`),
        load its closed periods on a background thread once open, as
        ``Ledger.open(path, preload=True)`` does (default False: each loads
        on first read); this layout loads every period at the open.
        """
        check_fsync(fsync)  # before anything is created or locked
        check_flag(preload, "preload")
        given = dict(options, calendar=cal, clock=clock, fsync=fsync, preload=preload)
        if (view := as_ledger_view(path, "periodic", given)) is not None:  # a one-view ledger
            return view  # type: ignore[no-any-return]
        # the store makes the period boards and keeps the archive under
        # path: these would be taken (the archive directory even made) and
        # then ignored
        for name in _OPEN_OWNS:
            if name in options:
                raise TypeError(f"open() got an unexpected keyword argument {name!r}")
        log_options = pop_log_options(options)
        board = cls(cal, clock=clock, **options)  # refuses anything else unknown
        board._board_config = {**board._board_config, **log_options}
        board._attach(Path(path), fsync)
        return board

    def compact(self) -> dict[str, int]:
        """Compact the durable board of every period held (a snapshot each:
        see :meth:`DurableLeaderboard.compact
        <rankengine.durable.board.DurableLeaderboard.compact>`),
        and return ``{period name: the sequence number its snapshot
        covers}``; ``{}`` in memory and after :meth:`close`.  Boards compact
        themselves as their logs grow; this is for a snapshot on demand
        (before a deploy, say).  Writes wait while it runs.

        Runtime complexity: O(N) for N members over the periods held
        """
        with self._lock:
            return {
                name: board.compact()
                for name, board in self._boards.items()
                if isinstance(board, DurableLeaderboard) and not board.closed
            }

    def close(self) -> None:
        """Close every durable period board (flushing its log) and release
        the root directory; no-op in memory.

        After it, reads keep working on the periods held, and every write
        raises, a write for a period with no board yet too (it would open a
        new durable board behind the close).  Time still moves for reads,
        but no period is closed, archived or dropped any more.  If a
        board's close raises (its final fsync failed), the other boards are
        closed all the same and the root released, then the first such error
        is raised.
        """
        with self._lock:
            self._drain_detached()
            closable = any(hasattr(board, "close") for board in self._boards.values())
            self._shut = self._shut or self._store is not None or closable
            try:
                close_all(self._boards.values())
            finally:
                if self._root_lock is not None:
                    self._root_lock.release()
                    self._root_lock = None

    def __enter__(self) -> PeriodicLeaderboard:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _attach(self, root: Path, fsync: FsyncPolicy) -> None:
        """Lock ``root``, store periods under it and load the ones already
        there.  If that fails, the boards it opened are closed and the root
        is released (a failed open leaves nothing locked)."""
        # another kind's directory (a plain board's, a ledger's) is refused
        # before anything is created in it
        refuse_other_kind(str(root), PERIODIC)
        make_directory(str(root))  # new entries fsynced into their parents
        # before any cleanup or read of the root: a second process must not
        # remove the temporary files of the one writing here
        lock = DirectoryLock(str(root))
        try:
            self._load(root, fsync)
        except BaseException as exc:
            try:
                close_all(self._boards.values())
            except Exception as also:  # (the first error is the news)
                exc.add_note(f"closing the boards opened also failed: {also}")
            finally:
                lock.release()
            raise
        self._root_lock = lock

    def _load(self, root: Path, fsync: FsyncPolicy) -> None:
        """The part of :meth:`_attach` done under the root's lock."""
        store = PeriodDirectories(root, fsync, self._clock, self._board_config)
        self._archive = root / "archive"
        self._archive.mkdir(parents=True, exist_ok=True)
        self._factory = store.open_board
        # "now" never moves backwards, across a reopen too: what is on disk
        # says how far the last process got (a held period had started, a
        # closed or archived one was past its grace), and a clock reading
        # less than that must not reopen a closed period to writes.
        seen = -math.inf
        for name, closed in store.existing():
            period = self._calendar.parse(name)
            self._boards[name] = store.open_board(period)
            self._periods[name] = period
            seen = max(seen, period.start)
            if closed:
                self._closed.add(name)
                seen = max(seen, period.end + self._grace)
        for name in self.archived():
            seen = max(seen, self._calendar.parse(name).end + self._grace)
        self._now = max(self._now, seen)
        self._store = store
        self._horizon = -math.inf

    # ------------------------------------------------------------------
    # Internals
    # ------------------------------------------------------------------
    def _resolve(self, period: Period | str) -> Period:
        """The period of this calendar given as a :class:`Period` or its name.

        A ``Period`` must be one of this calendar's, bounds included: one
        of another calendar (a day given to a weekly board), or a name with
        other bounds, would read the board of its name or judge openness by
        bounds no period of this board has.
        """
        if isinstance(period, Period):
            # a held period is one of the calendar's: no parse (a cron
            # calendar's scans days) on the common read of one
            held = self._periods.get(period.name)
            if held != period and self._calendar.parse(period.name) != period:
                raise ValueError(f"{period!r} is not a period of {self._calendar!r}")
            return period
        if isinstance(period, str):
            return self._calendar.parse(period)
        raise TypeError(f"period must be a Period or a name, not {period!r}")

    def _oldest_kept(self, current: Period) -> int:
        """The start of the oldest period kept queryable behind ``current``:
        ``keep`` periods back, or the calendar's first period (in year 1)
        when there are fewer before it."""
        oldest = current
        for _ in range(self._keep):
            try:
                oldest = self._calendar.previous(oldest)
            except ValueError:  # no period before the first one of year 1
                break
        return oldest.start

    def _advance(self, closed: list[Period] | None = None) -> float:
        """Read the clock; create the current period; close and drop old ones
        (appending the periods it closes to ``closed``).

        Fast path: nothing can happen before ``_horizon`` (the current
        period's end, or the earliest ``end + grace`` of an unclosed period),
        so until then a call costs one clock read and one comparison.
        """
        now = max(self._now, check_time(self._clock(), "clock()"))
        if now < self._horizon:  # within the current period: a time the calendar holds
            self._now = now
            return now
        if now < self._unmade_end and not self._advance_makes_current:
            self._now = now  # (a read, the current period not made: nothing is due yet)
            return now
        # before "now" moves: a reading beyond the calendar's range raises
        # here and changes nothing, instead of leaving a "now" that every
        # later call would fail on
        current = self._calendar.period_of(now)
        self._now = now
        if self._shut or self._closing:
            return now
        if self._advance_makes_current:
            self._ensure(current)
            self._unmade_end = -math.inf
        for period in sorted(self._periods.values(), key=lambda p: p.start):
            if period.name not in self._closed and now >= period.end + self._grace:
                if self._on_close is not None:
                    # the callback may read this board (same thread, the lock
                    # is re-entrant): those reads must not advance again
                    self._closing = True
                    try:
                        self._on_close(period, self._boards[period.name])
                    finally:
                        self._closing = False
                crash_point("after_close_callback")
                self._closed.add(period.name)
                # closed from here on: reported even if its marker fails
                if closed is not None:
                    closed.append(period)
                if self._store is not None:
                    self._store.mark_closed(period)
                    crash_point("after_close_marker")
        oldest = self._oldest_kept(current)
        # oldest first, as they closed (not in the order of the set of
        # names, which changes from run to run with the hashes of strings)
        done = sorted(
            (self._periods[n] for n in self._closed if self._periods[n].start < oldest),
            key=lambda p: p.start,
        )
        for period in done:
            self._drop(period)
        self._horizon = min(
            [current.end]
            + [p.end + self._grace for n, p in self._periods.items() if n not in self._closed]
        )
        if current.name not in self._periods:  # (not made: see _unmade_end)
            self._horizon, self._unmade_end = now, self._horizon
        return now

    def _ensure(self, period: Period) -> Leaderboard:
        board = self._boards.get(period.name)
        if board is None:
            if self._shut:
                where = "" if self._store is None else f" at {self._store.periods.parent}"
                raise ValueError(
                    f"the durable periodic board{where} is closed: no board for period "
                    f"{period.name} may be opened"
                )
            board = self._factory(period)
            self._boards[period.name] = board
            self._periods[period.name] = period
            self._horizon = min(self._horizon, period.end + self._grace)
        return board

    def _drop(self, period: Period) -> None:
        """Take a closed period out of the held ones, into ``_detached``:
        its archive is written, its files deleted and its board freed by
        :meth:`_write_detached` once this lock is released (reads answer
        from the detached board until its archive is on disk).

        Runtime complexity: O(1) plus the drop hook
        """
        boards = self._boards
        if (
            type(boards) is PeriodBoards
            and is_unloaded(boards.peek(period.name))
            and self._drop_hook is None
            and self._archive is None
            and self._store is None
        ):
            # never read and nothing to archive: freed without loading it
            dict.__delitem__(boards, period.name)
            del self._periods[period.name]
            self._closed.discard(period.name)
            return
        board = boards[period.name]
        if self._drop_hook is not None:
            self._drop_hook(period, board)
        with self._detached_lock:
            self._detached[period.name] = (period, board, threading.get_ident())
        del self._boards[period.name]
        del self._periods[period.name]
        self._closed.discard(period.name)

    def _discard(self, period: Period) -> None:
        """Undo a period board nothing was written to (see :meth:`_routed`):
        out of memory, and a durable one's directory deleted the way a
        dropped period's is (crash-safely, see :meth:`PeriodDirectories.release`).
        Its horizon is left as it is: an early horizon only costs one slow
        pass of :meth:`_advance`, which recomputes it."""
        board = self._boards.pop(period.name)
        del self._periods[period.name]
        self._closed.discard(period.name)
        if self._store is not None:
            self._store.release(period, board)

    def _check(self) -> None:
        """Verify the invariants of the periods and of every held board."""
        with self._lock:
            assert self._boards.keys() == self._periods.keys(), "boards and periods out of step"
            assert self._closed <= self._periods.keys(), "closed flag for a period not held"
            if type(self._boards) is PeriodBoards:
                self._boards.check(self._closed)  # every unloaded period closed, its file there
            for name, period in self._periods.items():
                # every held period is a real period of the calendar, under its own name
                assert self._calendar.period_of(period.start) == period, period
                assert period.name == name
                # closed periods really are past their grace
                if name in self._closed:
                    assert self._now >= period.end + self._grace, (period, self._now)
                # (a period not loaded yet is checked without loading it:
                # PeriodBoards.check below)
                if type(self._boards) is PeriodBoards and is_unloaded(self._boards.peek(name)):
                    continue
                self._boards[name]._check()
            with self._detached_lock:
                detached = dict(self._detached)
            for name, (_period, board, _owner) in detached.items():
                assert name not in self._periods, f"{name} both held and detached"
                board._check()
            starts = sorted(p.start for p in self._periods.values())
            ends = sorted(p.end for p in self._periods.values())
            # periods never overlap
            assert all(e <= s for e, s in zip(ends, starts[1:], strict=False)), (
                "overlapping periods"
            )
            # (-inf horizon: just reopened, the first call advances; close() stops advancing)
            if self._now > -math.inf and self._horizon > -math.inf and not self._shut:
                current = self._calendar.period_of(self._now)
                held = current.name in self._periods or not self._advance_makes_current
                assert held, "current period not held"
                oldest = self._oldest_kept(current)
                # a close callback that raised stops the advance before the
                # drops: until its retry, a period is due and not closed,
                # and closed periods out of keep may still be held
                due = any(
                    name not in self._closed and self._now >= period.end + self._grace
                    for name, period in self._periods.items()
                )
                for name in self._closed:
                    assert due or self._periods[name].start >= oldest, (
                        f"{name} should have been dropped"
                    )
                # the fast path of _advance is sound: nothing is due before the horizon
                for name, period in self._periods.items():
                    if name not in self._closed:
                        assert self._horizon <= period.end + self._grace, (name, self._horizon)
                assert self._horizon <= current.end

    def __repr__(self) -> str:
        # a durable board names its directory first, as open() takes it, and
        # says when close() has shut it, as a durable board's repr does
        where = "" if self._store is None else f"{str(self._store.periods.parent)!r}, "
        return (
            f"PeriodicLeaderboard({where}{self._calendar!r}, keep={self._keep}, "
            f"grace={self._grace}, periods={len(self._periods)}"
            f"{', closed' if self._shut else ''})"
        )
