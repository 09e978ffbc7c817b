"""A board read in slices between writes, exact at the end: what a snapshot
of a live durable board is made from.

A compaction used to copy the whole board under its lock: at N = 1,000,000
that stopped every write and read for ~0.2 s on the sorted list and ~2 s on
the skip list (a loaded 2-core VM), far longer than a game's 16.7 ms frame.
:class:`SlicedExport` reads the board instead in *key-ordered slices*, each
under the lock for at most :data:`SLICE_SECONDS`, while writes go on
between them; the writes made meanwhile are *captured* (the durable board's
listener hands each logged change list to :meth:`SlicedExport.capture`),
and the result is corrected with them into the board's exact state at the
sequence number of the last slice::

    slice 1   keys  ( -inf, k1]   under the lock at seq s0   (capture starts)
    slice 2   keys  (  k1, k2]    under the lock at seq s0 + a few
    ...
    last      keys  (  kn, +inf)  under the lock at seq s1   (capture stops)

Why that is exact at ``s1``: a member that no write touched between ``s0``
and ``s1`` kept its key all along, so it lies in exactly one slice's key
range and was read there, once.  Every member a write touched is dropped
from the slices (wherever it was read, once, twice or never) and put back
from its last captured change: a change holds the absolute score and tie
clock (see :mod:`rankengine.changes`), so the last one *is* the member's
state at ``s1``, or its removal.  Metadata likewise: the last ``META`` or
``DEL`` change wins; a member whose metadata no change touched keeps what
the board holds (read when its change is replayed; a later change of it
would be captured and win).

Against a copy-on-write view of the blocks (the other way to slice), this
costs the write path one test per write (is a capture running?) instead of
one per block mutation, and it works for both indexes alike: it only uses
the index protocol's ``count_less``, ``entry`` and ``iter_range`` (and the
sorted list's ``columns_range``, block slices instead of a walk).  Slices
are kept as columns, not as a tuple per row: a million long-lived tuples
made the collector run full collections of half a second in the middle of
the export (measured at N = 200,000 and 1,000,000).  The columns are tuples,
which the collector stops tracking at its first look; kept as lists, every
young collection read each kept row's header again, and those collections,
run inside slices, were a skip-list snapshot's longest lock holds (45-54 ms
of CPU at 10^6, against 2.7 ms now; see :meth:`SlicedExport.step`).

Everything after the last slice (correcting the slices) runs without the
lock, in units of at most :data:`SLICE_SECONDS` with the GIL let go
between them (``pause``), so that the serving thread waits for a unit at
most, not for the whole O(N) pass.  The result is handed over as pieces,
one per slice (:meth:`SlicedExport.pieces`), never joined into whole
columns: three lists of N items were one long call to build and one to
free, and every young collection of the collector, in any thread, read
them through (18-32 ms of CPU each at 10^6) until they were freed.

Runtime complexity: O(N + k log k) for N members and k captured changes,
in O(N / slice) lock holds of at most :data:`SLICE_SECONDS` each.

>>> from rankengine import Leaderboard
>>> board = Leaderboard()
>>> board.set_many([("ann", 5), ("bob", 7), ("cy", 1)])
3
>>> export = SlicedExport(board, slice_seconds=0.0, entries=1)
>>> with board._lock:
...     export.step()  # one entry: cy
False
>>> board._listener = export.capture  # (a durable board's log does this)
>>> _ = board.set("dee", 6), board.remove("bob"), board.incr("cy", 10)
>>> with board._lock:
...     while not export.step():
...         pass
...     export.finish()
>>> members, scores, clocks, metas = export.columns()
>>> list(zip(members, scores))
[('ann', 5), ('dee', 6), ('cy', 11)]
"""

from __future__ import annotations

import gc
import time
from bisect import bisect_left
from collections.abc import Callable, Sequence
from itertools import compress, islice
from typing import Any, Final

from rankengine.board.bulk import merge_rows
from rankengine.board.changes import DEL, META, PUT, Change
from rankengine.board.core import BoardCore
from rankengine.board.release import let_go
from rankengine.durable.snapshot import Piece

__all__ = ["REST_RATIO", "SLICE_SECONDS", "Pacer", "SlicedExport", "let_go"]

#: Longest a slice (or an unlocked unit of work) runs: an operation that
#: arrives meanwhile waits at most this long.  0.5 ms keeps a waiting call's
#: delay within a few writes' cost; a shorter slice costs more GIL hand-overs
#: (each one a wake-up of the other thread) and one O(log N) search for each
#: slice's start.
SLICE_SECONDS: Final = 0.0005
#: Entries read between two looks at the clock.
SLICE_STEP: Final = 256
#: Captured change lists replayed, or added rows placed, between two looks
#: at the clock.
UNIT_STEP: Final = 256
#: Rows kept in new tuples after which :meth:`SlicedExport.settle` makes a
#: young collection.  The collector stops tracking a tuple of atomic values
#: at its first look, but that look reads every item; left to the young
#: collections the writes set off, each read the tuples of a hundred slices
#: or more at once (18-32 ms of CPU at 10**6 on a sorted list, a stop for
#: every thread).  8 Ki rows (three tuples each) are ~0.5 ms of looking.
SETTLE_ROWS: Final = 8_192

_GONE: Final = object()

Columns3 = tuple[Sequence[Any], Sequence[Any], Sequence[Any]]


#: How long a compaction's thread stays off the GIL after each unit of its
#: unlocked work, as a multiple of the unit's CPU time: at 1, it takes at
#: most half of the interpreter's time from threads that want it.  Letting
#: go for a moment only (``sleep(0)``) was not enough: a serving thread that
#: lets go between calls (an event loop, a game tick's sleep) gave the GIL
#: back to the compaction after every call, for a whole unit each time, and
#: at half the sorted list's saturation rate it fell behind by seconds
#: while a snapshot ran.  The price: a snapshot takes about twice its CPU
#: time even on an idle board.
REST_RATIO: Final = 1.0


class Pacer:
    """The compaction thread's share of the GIL (see :data:`REST_RATIO`).

    ``pacer()`` is the ``pause`` of the unlocked steps: once
    :data:`SLICE_SECONDS` of the thread's CPU time ran since its last
    rest, it rests; :meth:`rest` rests now, for :data:`REST_RATIO` times the
    CPU time used since the last one.

    Runtime complexity: O(1) a call (one CPU-clock read)
    """

    __slots__ = ("due", "since")

    def __init__(self) -> None:
        self.since = time.thread_time()
        self.due = self.since + SLICE_SECONDS

    def __call__(self) -> None:
        if time.thread_time() >= self.due:
            self.rest()

    def rest(self) -> None:
        """Let go of the GIL for as long as the work since the last rest."""
        let_go((time.thread_time() - self.since) * REST_RATIO)
        self.since = time.thread_time()
        self.due = self.since + SLICE_SECONDS


def _no_pause() -> None:
    pass


class SlicedExport:
    """One export of ``board`` in slices (see the module docstring).

    The caller holds the board's lock around :meth:`step` and
    :meth:`finish`, calls :meth:`capture` with every change list the board
    logs from the first step to :meth:`finish`, and calls :meth:`columns`
    afterwards, without the lock.

    :param slice_seconds: the longest a slice runs (0: one batch of
        ``entries``)
    :param entries: entries read between two looks at the clock
    """

    def __init__(
        self,
        board: BoardCore,
        *,
        slice_seconds: float = SLICE_SECONDS,
        entries: int = SLICE_STEP,
    ) -> None:
        self.board = board
        self.slice_seconds = slice_seconds
        self.entries = entries
        #: the slices read: ``(primaries, ties, members)`` columns
        self.slices: list[Columns3] = []
        #: metadata of the members read, per slice: member -> metadata
        self.slice_metas: list[dict[Any, Any]] = []
        #: the key of the last row read (None before the first slice)
        self.after: tuple[Any, Any] | None = None
        self.captured: list[Change] = []
        self.replayed = 0  # captured changes replayed so far
        #: member -> its last PUT change, or _GONE after a DEL
        self.final: dict[Any, Any] = {}
        #: member -> metadata at the end (None: none)
        self.final_meta: dict[Any, Any] = {}
        self.finished = False
        #: rows put in tuples since the last young collection settle() made
        self.fresh = 0
        #: True once pieces() handed the slices over
        self.handed = False

    # ------------------------------------------------------------------
    # Under the board's lock
    # ------------------------------------------------------------------
    def capture(self, changes: list[Change]) -> None:
        """Record a logged change list (the board's lock is held).

        The changes are kept, not the list: a change is a tuple of atomic
        values, which the collector stops tracking, where a million kept
        lists would drive it to full collections.
        """
        self.captured += changes

    def step(self, *, whole: bool = False) -> bool:
        """Read the next slice (the caller holds the board's lock); True once
        the slice reached the end of the board.  ``whole`` reads to the end.

        Runtime complexity: O(log N + slice)
        """
        index = self.board._index
        n = len(index)
        pos = 0
        if self.after is not None:
            pos = index.count_less(*self.after)
            if pos < n:
                primary, tie, _ = index.entry(pos)
                if (primary, tie) == self.after:
                    pos += 1  # read already (it has not moved)
        primaries: list[Any] = []
        ties: list[Any] = []
        members: list[Any] = []
        columns_range = getattr(index, "columns_range", None)
        rows = None if columns_range is not None else index.iter_range(pos, n)
        clock = time.perf_counter
        deadline = clock() + self.slice_seconds
        at, step = pos, self.entries
        while at < n:
            stop = min(at + step, n)
            if columns_range is not None:
                p, t, m = columns_range(at, stop)
            else:
                p, t, m = zip(*islice(rows, stop - at), strict=True)  # type: ignore[arg-type]
            primaries += p
            ties += t
            members += m
            at = stop
            if not whole and clock() >= deadline:
                break
        if members:
            meta = self.board._meta
            # kept as tuples, not lists: the collector stops tracking a tuple
            # of atomic values at its first look, where a list of a slice's
            # rows stays tracked, and each young collection then reads every
            # row's header again, cold (see "the collector" above)
            self.slices.append((tuple(primaries), tuple(ties), tuple(members)))
            self.slice_metas.append({m: meta[m] for m in members if m in meta} if meta else {})
            self.after = (primaries[-1], ties[-1])
            if columns_range is None and gc.isenabled():
                # A walk's rows (a skip list's) lie all over the heap: the
                # collector's look at them now, while they are in the cache,
                # untracks the tuples above; left to a later young
                # collection, it read ~50,000 cold row headers at a time
                # (2-6 ms, inside whichever call made it run; 25-50 ms for a
                # gen-1 one at 10^6).  A sorted list's block slices showed no
                # such cost, and the extra collection made its slices longer.
                gc.collect(0)
            else:
                self.fresh += len(members)
        return at >= n

    def settle(self) -> None:
        """Make a young collection once :data:`SETTLE_ROWS` rows were put in
        new tuples since the last one (without the board's lock, between
        slices): the collector's first look at a tuple, which untracks it,
        then reads one slice's rows, not a hundred slices' at once.

        Runtime complexity: O(rows since the last one), in C
        """
        if self.fresh >= SETTLE_ROWS:
            self.fresh = 0
            if gc.isenabled():
                gc.collect(0)

    def finish(self) -> None:
        """Read the rest and stop: the export is the board's state now
        (the caller holds the board's lock and detaches :meth:`capture`)."""
        self.step(whole=True)
        self._replay(None)
        self.finished = True

    # ------------------------------------------------------------------
    # Without the lock
    # ------------------------------------------------------------------
    def replay(self, pause: Callable[[], None] = _no_pause) -> None:
        """Replay the changes captured so far into :attr:`final` (callable
        between slices, without the lock: it only reads what the lock
        holder appended before)."""
        self._replay(pause)

    def _replay(self, pause: Callable[[], None] | None) -> None:
        final, final_meta = self.final, self.final_meta
        meta_of = self.board._meta.get
        captured = self.captured
        clock = time.perf_counter
        deadline = clock() + self.slice_seconds
        for k in range(self.replayed, len(captured)):
            change = captured[k]
            member = change[1]
            kind = change[0]
            if kind == PUT:
                final[member] = change
                if member not in final_meta:
                    # its metadata as the board holds it now; a later
                    # change of it is captured and wins
                    final_meta[member] = meta_of(member)
            elif kind == DEL:
                final[member] = _GONE
                final_meta[member] = None
            elif kind == META:
                final_meta[member] = change[2]
            self.replayed = k + 1
            if pause is not None and k % UNIT_STEP == 0 and clock() >= deadline:
                pause()
                deadline = clock() + self.slice_seconds

    def columns(
        self, pause: Callable[[], None] = _no_pause
    ) -> tuple[list[Any], list[Any], list[Any], dict[int, Any]]:
        """``(members, scores, clocks, metas)`` in ascending index order, as
        ``BoardCore._export_columns`` gives them, of the board at
        :meth:`finish`: :meth:`pieces` joined into whole columns (once).

        Runtime complexity: O(N + k log k)
        """
        pieces, metas = self.pieces(pause)
        members: list[Any] = []
        scores: list[Any] = []
        clocks: list[Any] = []
        for piece in pieces:
            assert piece is not None
            m, s, c = piece
            members += m
            scores += s
            clocks += c
        return members, scores, clocks, metas

    def pieces(
        self, pause: Callable[[], None] = _no_pause
    ) -> tuple[list[Piece | None], dict[int, Any]]:
        """The board at :meth:`finish` as ``(members, scores, clocks)``
        pieces in ascending index order, a piece per slice, and the
        metadata by row number over all pieces, for
        :func:`~rankengine.durable.snapshot.write_snapshot_pieces`;
        ``pause`` runs between units of work.  Once only: the slices are
        handed over (and the captured changes freed) as it goes.

        Each piece is a slice corrected by the writes made meanwhile, as
        tuples.  Joining them into whole columns made three lists of N
        items, which every young collection of the collector then read
        through until they were freed (10-25 ms a collection at 10**6, a
        stop for every thread), and freeing them was one more long call;
        tuples of atomic values are untracked at the collector's first look
        (a piece's rows, once), and each piece is freed once it is written.

        Runtime complexity: O(N + k log k)
        """
        if not self.finished:
            raise RuntimeError("pieces() before finish()")
        if self.handed:
            raise RuntimeError("pieces() once only: the slices were handed over")
        self.handed = True
        board = self.board
        codec = board._codec
        scalar = codec.columns is None
        first, desc = board._first, board._desc
        final, final_meta = self.final, self.final_meta
        slices: list[Columns3 | None] = list(self.slices) or [((), (), ())]
        slice_metas = self.slice_metas or [{}]
        self.slices, self.slice_metas = [], []
        clock = time.perf_counter
        deadline = clock() + self.slice_seconds

        def due() -> None:
            nonlocal deadline
            if clock() >= deadline:
                pause()
                deadline = clock() + self.slice_seconds

        # the captured changes are all in `final` now: free them in units
        captured = self.captured
        while captured:
            del captured[-UNIT_STEP * 16 :]
            due()
        # each member written meanwhile goes, as an index row, with the slice
        # whose key range holds it (a small sort per slice, not one of all)
        bounds = [(s[0][-1], s[1][-1]) for s in slices if s is not None and s[0]]
        placed: list[list[tuple[Any, Any, Any]]] = [[] for _ in slices]
        last = len(placed) - 1
        for done, (member, change) in enumerate(final.items()):
            if change is not _GONE:
                score, tick = change[2], change[3]
                primary = score if scalar else codec.primary(score)
                tie = (-tick if desc else tick) if first else member
                placed[min(bisect_left(bounds, (primary, tie)), last)].append(
                    (primary, tie, member)
                )
            if done % UNIT_STEP == 0:
                due()
        with_meta = any(slice_metas) or any(v is not None for v in final_meta.values())
        pieces: list[Piece | None] = []
        metas: dict[int, Any] = {}
        rows = 0
        for k, slice_meta in enumerate(slice_metas):
            read, extra = slices[k], placed[k]
            slices[k] = None  # (handed over: the piece below is all that is kept)
            assert read is not None
            p, t, m = read
            read_p = p
            del read
            if final:
                keep = [member not in final for member in m]
                if not all(keep):
                    p = tuple(compress(p, keep))
                    t = tuple(compress(t, keep))
                    m = tuple(compress(m, keep))
            if extra:
                p, t, m = (tuple(column) for column in _merge(p, t, m, extra))
            if p is not read_p:
                self.fresh += len(m)
                self.settle()
            if with_meta:
                for j, member in enumerate(m):
                    data = final_meta.get(member, _GONE)
                    if data is _GONE:
                        data = slice_meta.get(member)
                    if data is not None:
                        metas[rows + j] = data
            rows += len(m)
            scores = p if scalar else tuple(codec.score(x) for x in p)
            pieces.append((m, scores, t if first else (0,) * len(m)))
            due()
        for written in (final, final_meta):  # (k entries: freed in units too)
            while written:
                for _ in range(min(len(written), UNIT_STEP * 16)):
                    written.popitem()
                due()
        return pieces, metas


def _merge(
    primaries: Sequence[Any],
    ties: Sequence[Any],
    members: Sequence[Any],
    extra: list[tuple[Any, Any, Any]],
) -> tuple[list[Any], list[Any], list[Any]]:
    """The columns with the rows of ``extra`` put in key order (the columns
    are in key order, no key repeats): ``extra`` sorted, then
    :func:`rankengine.board.bulk.merge_rows`.

    >>> _merge([1, 3, 3], [0, 1, 5], ["a", "b", "c"], [(3, 2, "x"), (0, 9, "y")])
    ([0, 1, 3, 3, 3], [9, 0, 1, 2, 5], ['y', 'a', 'b', 'x', 'c'])
    """
    extra.sort(key=_key)
    return merge_rows(primaries, ties, members, extra)


def _key(row: tuple[Any, Any, Any]) -> tuple[Any, Any]:
    return (row[0], row[1])
