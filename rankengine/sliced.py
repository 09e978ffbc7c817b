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
the index protocol's ``count_less``, ``entry`` and ``iter_range``.

Everything after the last slice (correcting, building the columns) runs
without the lock, in units of at most :data:`SLICE_SECONDS` with the GIL
let go between them (``pause``), so that the serving thread waits for a
unit at most, not for the whole O(N) pass.

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

import time
from bisect import bisect_left
from collections.abc import Callable
from itertools import islice
from typing import Any, Final

from rankengine.changes import DEL, META, PUT, Change
from rankengine.core import BoardCore

__all__ = ["SLICE_SECONDS", "SlicedExport"]

#: Longest a slice (or an unlocked unit of work) runs: an operation that
#: arrives meanwhile waits at most this long.  0.2 ms keeps a waiting call's
#: delay near a write's own cost; the price is ~5,000 slices per million
#: members, each finding its start in O(log N).
SLICE_SECONDS: Final = 0.0002
#: Entries read between two looks at the clock.
SLICE_STEP: Final = 64
#: Captured changes replayed, or rows rebuilt, between two looks at the clock.
UNIT_STEP: Final = 512

_GONE: Final = object()


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
        #: the rows read, slice by slice: ``(primary, tie, member)``
        self.slices: list[list[tuple[Any, Any, Any]]] = []
        #: metadata of the rows read, per slice: row number -> metadata
        self.slice_metas: list[dict[int, Any]] = []
        #: the key of the last row read (None before the first slice)
        self.after: tuple[Any, Any] | None = None
        self.captured: list[list[Change]] = []
        self.replayed = 0  # captured lists replayed so far
        #: member -> its last PUT change, or _GONE after a DEL
        self.final: dict[Any, Any] = {}
        #: member -> metadata at the end (None: none)
        self.final_meta: dict[Any, Any] = {}
        self.finished = False

    # ------------------------------------------------------------------
    # Under the board's lock
    # ------------------------------------------------------------------
    def capture(self, changes: list[Change]) -> None:
        """Record a logged change list (the board's lock is held)."""
        self.captured.append(changes)

    def step(self, *, whole: bool = False) -> bool:
        """Read the next slice (the caller holds the board's lock); True once
        the slice reached the end of the board.  ``whole`` reads to the end.

        Runtime complexity: O(log N + slice)
        """
        index = self.board._index
        n = len(index)
        if self.after is None:
            pos = 0
        else:
            pos = index.count_less(*self.after)
            if pos < n:
                primary, tie, _ = index.entry(pos)
                if (primary, tie) == self.after:
                    pos += 1  # read already (it has not moved)
        rows: list[tuple[Any, Any, Any]] = []
        it = index.iter_range(pos, n)
        clock = time.perf_counter
        deadline = clock() + self.slice_seconds
        step = self.entries
        while True:
            part = list(islice(it, step))
            rows += part
            if len(part) < step:
                done = True
                break
            if not whole and clock() >= deadline:
                done = pos + len(rows) >= n
                break
        if rows:
            meta = self.board._meta
            self.slices.append(rows)
            self.slice_metas.append(
                {j: meta[row[2]] for j, row in enumerate(rows) if row[2] in meta} if meta else {}
            )
            self.after = (rows[-1][0], rows[-1][1])
        return done

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
        stop = len(captured)
        clock = time.perf_counter
        deadline = clock() + self.slice_seconds
        for k in range(self.replayed, stop):
            for change in captured[k]:
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
            if pause is not None and clock() >= deadline:
                pause()
                deadline = clock() + self.slice_seconds

    def columns(
        self, pause: Callable[[], None] = _no_pause
    ) -> tuple[list[Any], list[Any], list[Any], dict[int, Any]]:
        """``(members, scores, clocks, metas)`` in ascending index order, as
        ``BoardCore._export_columns`` gives them, of the board at
        :meth:`finish`; ``pause`` runs between units of work.

        Runtime complexity: O(N + k log k)
        """
        if not self.finished:
            raise RuntimeError("columns() before finish()")
        board = self.board
        codec = board._codec
        scalar = codec.columns is None
        first = board._first
        desc = board._desc
        final, final_meta = self.final, self.final_meta
        # the members written meanwhile, as index rows, each put with the
        # slice whose key range holds it (a sort per slice, not one of all)
        bounds = [_key(rows[-1]) for rows in self.slices]
        placed: list[list[tuple[Any, Any, Any]]] = [[] for _ in range(max(len(bounds), 1))]
        last = len(placed) - 1
        clock = time.perf_counter
        deadline = clock() + self.slice_seconds
        for done, (member, change) in enumerate(final.items()):
            if change is not _GONE:
                score, tick = change[2], change[3]
                primary = score if scalar else codec.primary(score)
                tie = (-tick if desc else tick) if first else member
                row = (primary, tie, member)
                placed[min(bisect_left(bounds, _key(row)), last)].append(row)
            if done % UNIT_STEP == 0 and clock() >= deadline:
                pause()
                deadline = clock() + self.slice_seconds
        members: list[Any] = []
        primaries: list[Any] = []
        ties: list[Any] = []
        metas: dict[int, Any] = {}
        for read, slice_meta, extra in zip(
            self.slices or [[]], self.slice_metas or [{}], placed, strict=True
        ):
            base = len(members)
            rows = read
            if final or final_meta:
                # (row, its number in the slice, or None for an added row)
                kept: list[tuple[tuple[Any, Any, Any], int | None]] = [
                    (row, j) for j, row in enumerate(rows) if row[2] not in final
                ]
                if extra:
                    kept += [(row, None) for row in extra]
                    kept.sort(key=_key_of_kept)
                for k, (row, j) in enumerate(kept):
                    data = final_meta.get(row[2], _GONE)
                    if data is _GONE:
                        data = None if j is None else slice_meta.get(j)
                    if data is not None:
                        metas[base + k] = data
                rows = [row for row, _ in kept]
            elif slice_meta:
                metas.update((base + j, data) for j, data in slice_meta.items())
            if rows:
                p, t, m = zip(*rows, strict=True)
                primaries += p
                ties += t
                members += m
            if clock() >= deadline:
                pause()
                deadline = clock() + self.slice_seconds
        scores = primaries if scalar else [codec.score(p) for p in primaries]
        clocks = ties if first else [0] * len(members)
        return members, scores, clocks, metas


def _key(row: tuple[Any, Any, Any]) -> tuple[Any, Any]:
    return (row[0], row[1])


def _key_of_kept(item: tuple[tuple[Any, Any, Any], int | None]) -> tuple[Any, Any]:
    return (item[0][0], item[0][1])
