"""A large batch applied beside the board, then swapped in: no long hold.

A ``set_many`` or ``incr_many`` of k pairs on a board of N members costs
O(k log N) one write at a time or O(N) rebuilt in bulk; at N = 1,000,000
either holds the board's lock for seconds (``bench/bulk_holds.py``), and
every read and write of a game server waits.  The contract still wants the
batch *atomic*: concurrent calls behave as if run one after another
(``docs/api.md``), so a reader sees all of the batch or none of it.

:func:`stage_batch` keeps both.  The batch is applied to a *shadow* board
built beside the live one, and the shadow's containers are exchanged with
the live board's in one short hold (:func:`~rankengine.board.release.adopt_state`)::

    1 copy    the live index read in key-ordered slices, each under the
              lock for at most SLICE_SECONDS; from the first slice on,
              every change list the board commits is *journalled* (the
              board's listener hook: no cost on the write path otherwise)
    2 build   off the lock: the copy, less every member the journal
              touched, plus the batch planned against it, bulk-loaded
              into the shadow (C work in units of at most UNIT_ROWS rows,
              so that no single call holds the interpreter for long)
    3 catch   off the lock: each member the journal touched is put in the
      up      shadow as its *last* journalled change left it (a change holds
              the absolute score and tie clock), and that member's pairs of
              the batch are planned again on top of it; the journal taken
              again, round after round, until few members are left
    4 swap    under the lock: the last few members caught up, then the
              containers exchanged; readers saw the old state until here
    5 free    off the lock: the old state freed in pieces

Why it is exact: a member no write touched kept its key all along, so it
lies in exactly one slice's key range and was copied once (the same
argument as the sliced snapshot export of the durable package); every member a
write touched is dropped from the copy and put back from its last change.
The batch takes effect at the swap, after every write the journal saw.

Tie clocks: the batch's changes must rank after the writes that ran during
steps 1-3 (they came first), yet the shadow is built before their clocks
are known.  So pair ``i`` of the batch gets the clock ``c0 + CLOCK_ROOM + i +
1``, where ``c0`` is the board's clock at the first slice: room for
:data:`CLOCK_ROOM` writes meanwhile (the swap checks it, and the batch is
applied under the lock instead if more came).  The board's clock therefore
jumps by ``CLOCK_ROOM`` at such a batch; clocks order ties, and only their
order is ever compared.  (A board that breaks ties by member keeps its
clock dense: its clocks order nothing.)

Falls back (returns ``None``: the caller applies the batch under the lock)
when the board has a listener (a durable board logs the batch as one
record), when its state was replaced meanwhile (``clear()``, a restore),
or when more than :data:`CLOCK_ROOM` writes arrived.

>>> from rankengine.board.core import BoardCore
>>> board = BoardCore()
>>> board._commit([(0, "ann", 10, 1), (0, "bob", 20, 2)])
>>> stage_batch(board, [("ann", 30), ("cy", 5)], None, increment=False)
(2, {'ann': 30, 'cy': 5})
>>> [row[:2] for row in board._export()], board.clock == 2 + CLOCK_ROOM + 2
([('cy', 5), ('bob', 20), ('ann', 30)], True)
"""

from __future__ import annotations

import heapq
import operator
import time
from array import array
from collections.abc import Callable
from itertools import compress
from typing import Any, Final

from rankengine.board.bulk import deep_ties, merge_rows
from rankengine.board.changes import META, PUT, Change
from rankengine.board.core import MISSING, BoardCore
from rankengine.board.release import adopt_state, empty_map_in_pieces, let_go, unshared
from rankengine.board.scoring import Score
from rankengine.board.tiemap import TieMap
from rankengine.index.collector import collector_paused
from rankengine.index.teardown import empty_in_pieces

__all__ = [
    "CLOCK_ROOM",
    "FINAL_FIXES",
    "SLICE_SECONDS",
    "STAGED_MIN_PAIRS",
    "STAGED_SHARE",
    "UNIT_ROWS",
    "stage_batch",
    "stages",
]

#: A batch is staged from this many pairs on (fewer: applied under the lock,
#: at ~5 us a pair, they hold it for less than a 16.7 ms frame) ...
STAGED_MIN_PAIRS: Final = 4096
#: ... when it also has at least 1/STAGED_SHARE as many pairs as the board
#: has members: staging costs O(N) (a copy and a bulk load), which a batch
#: this large would cost anyway (it is rebuilt in bulk from a quarter on).
STAGED_SHARE: Final = 32
#: Longest a slice of the copy holds the board's lock.
SLICE_SECONDS: Final = 0.001
#: Rows read between two looks at the clock in a slice.
SLICE_ROWS: Final = 512
#: Rows per C-level unit of work off the lock (a dict update, a filter, a
#: sort): each unit holds the interpreter ~1-2 ms at most (a dict update
#: of 16,384 rows held it 5 ms at N = 10^6, the table's cache misses).
#: Not cut: the resize of the shadow's member map as it grows, one C call
#: of 10-40 ms at 10^6 (Python has no way to size a dict in advance).
UNIT_ROWS: Final = 4096
#: Members caught up under the lock at the swap (~5 us each); with more
#: pending, another round runs off the lock first.
FINAL_FIXES: Final = 256
#: Rounds of catching up before the swap takes whatever is left.
MAX_ROUNDS: Final = 32
#: Clocks left between the board's clock and the batch's first: the most
#: writes that may run while a batch is staged.
CLOCK_ROOM: Final = 1 << 20


class _Declined(Exception):
    """The board's state was replaced, or too many writes came: not staged."""


class _Journal:
    """The listener a staged board has: every committed change list, in order."""

    def __init__(self) -> None:
        self.lists: list[list[Change]] = []

    def __call__(self, changes: list[Change]) -> None:
        self.lists.append(changes)

    def take(self) -> dict[Any, Change]:
        """Each member's last PUT or DEL since the last take (metadata is not
        the shadow's: the live map is kept)."""
        taken, self.lists = self.lists, []
        last: dict[Any, Change] = {}
        for changes in taken:
            for change in changes:
                if change[0] != META:
                    last[change[1]] = change
        return last


def stages(board: BoardCore, pairs: int) -> bool:
    """Whether a batch of ``pairs`` pairs on ``board`` is worth staging (see
    :data:`STAGED_MIN_PAIRS`, :data:`STAGED_SHARE`); the final word is
    :func:`stage_batch`'s.

    Runtime complexity: O(1)

    >>> from rankengine.board.core import BoardCore
    >>> stages(BoardCore(), 10**6), stages(BoardCore(), 10)
    (False, False)
    """
    n = len(board._primary)
    return (
        n > 0
        and board._listener is None
        and board._scalar
        and pairs >= STAGED_MIN_PAIRS
        and pairs * STAGED_SHARE >= n
    )


def stage_batch(
    board: BoardCore,
    pairs: list[tuple[Any, Score]],
    when: Any,
    *,
    increment: bool,
    pause: Callable[[], None] | None = None,
) -> tuple[int, dict[Any, Score]] | None:
    """Apply checked ``pairs`` (as ``set_many``, or ``incr_many`` when
    ``increment``) to ``board`` beside it and swap the result in (see the
    module docstring); hold the board's lock only in short pieces.

    :return: ``(members changed, {member: new score})`` as ``_apply_batch``
        returns them, or None when the batch was not applied (the caller
        applies it under the lock).

    Runtime complexity: O(N + k log k) for k pairs, in O(N / slice) holds of
    at most ``SLICE_SECONDS`` and one swap of ``FINAL_FIXES`` catch-ups
    """
    pause = pause or let_go
    journal = _Journal()
    shadow: BoardCore | None = None
    with board._lock:
        if board._listener is not None or not board._primary or not board._scalar:
            return None
        board._listener = journal
        index, primary, kind = board._index, board._primary, board._member_type
        clock0 = board._clock
    # The collector stays off while the batch is staged, as for any bulk
    # load (BulkLoad._rebuild_index): a collection would find nothing to
    # free, and one that ran inside a slice of the copy or the swap walked
    # the growing copy under the lock (holds of 10-85 ms at N = 10^6).
    with collector_paused():
        try:
            batch = _Batch(board, pairs, when, increment, clock0)
            columns, pending = _copy(board, journal, index, primary, pause)
            shadow = batch.build(columns, pending, kind)
            del columns
            rounds = 0
            while True:
                pause()
                batch.catch_up(shadow, pending)
                rounds += 1
                pause()
                with board._lock:
                    if (
                        board._index is not index
                        or board._primary is not primary
                        or board._member_type is not kind
                    ):
                        raise _Declined
                    pending = journal.take()
                    if len(pending) > FINAL_FIXES and rounds < MAX_ROUNDS:
                        continue
                    batch.catch_up(shadow, pending)
                    if batch.first and board._clock > batch.base:
                        raise _Declined
                    if batch.first:
                        shadow._clock = batch.base + len(pairs)
                    else:  # ties by member: the clock stays dense
                        shadow._clock = board._clock + batch.total_ticks
                    shadow._meta = board._meta  # metadata is the live board's
                    shadow._counts = shadow._distinct = None  # dense counts: rebuilt on use
                    board._listener = None
                    adopt_state(board, shadow)
                    shadow._meta = {}
                    break
        except BaseException as exc:  # nothing was swapped in: the shadow goes
            if shadow is not None:
                _free(shadow, pause)  # (a skip list's nodes are cycles: freed by hand)
            if isinstance(exc, _Declined):
                return None
            raise
        finally:
            with board._lock:
                if board._listener is journal:
                    board._listener = None
    assert shadow is not None
    _free(shadow, pause)
    return batch.count, batch.results()


def _copy(
    board: BoardCore,
    journal: _Journal,
    index: Any,
    primary: dict[Any, Any],
    pause: Callable[[], None],
) -> tuple[tuple[list[Any], list[Any], list[Any]], dict[Any, Change]]:
    """The live index as three columns read in key-ordered slices, and each
    member's last change journalled meanwhile (taken in the last slice)."""
    primaries: list[Any] = []
    ties: list[Any] = []
    members: list[Any] = []
    columns_range = getattr(index, "columns_range", None)
    last: tuple[Any, Any] | None = None
    while True:
        with board._lock:
            if board._index is not index or board._primary is not primary:
                raise _Declined
            n = len(index)
            start = 0
            if last is not None:
                start = index.count_less(*last)
                if start < n and index.entry(start)[:2] == last:
                    start += 1  # read in the last slice
            deadline = time.perf_counter() + SLICE_SECONDS
            while start < n:
                stop = min(n, start + SLICE_ROWS)
                if columns_range is not None:
                    p, t, m = columns_range(start, stop)
                else:
                    rows = list(index.iter_range(start, stop))
                    p = list(map(operator.itemgetter(0), rows))
                    t = list(map(operator.itemgetter(1), rows))
                    m = list(map(operator.itemgetter(2), rows))
                primaries += p
                ties += t
                members += m
                start = stop
                if time.perf_counter() >= deadline:
                    break
            if start >= n:
                return (primaries, ties, members), journal.take()
            last = (primaries[-1], ties[-1])
        pause()


class _Batch:
    """The pairs of one batch, their plan per member, and the shadow's build."""

    def __init__(
        self,
        board: BoardCore,
        pairs: list[tuple[Any, Score]],
        when: Any,
        increment: bool,
        clock0: int,
    ) -> None:
        self.board = board
        self.pairs = pairs
        self.when = when
        self.increment = increment
        self.first = board._first
        #: the clock before pair 0's; pair i's change gets base + i + 1
        self.base = clock0 + CLOCK_ROOM if self.first else clock0
        # The bookkeeping holds no container per member or pair (dicts of
        # plain values, an int array): the collector would otherwise walk
        # 10^5-10^6 small objects at every pass while the batch is staged
        # (measured: stalls of 0.2-0.6 s of every thread at N = 10^6).
        #: member -> its first pair; pair i -> the next pair of its member, or -1
        self.head: dict[Any, int] = {}
        self.link = array("q", [-1]) * len(pairs)
        tail: dict[Any, int] = {}
        for i, (member, _) in enumerate(pairs):
            j = tail.get(member)
            if j is None:
                self.head[member] = i
            else:
                self.link[j] = i
            tail[member] = i
        #: member -> what incr_many reports for it (absent: every pair blocked)
        self.reported: dict[Any, Any] = {}
        #: member -> the number of its last pair that changed its score
        self.changed: dict[Any, int] = {}
        #: member -> how many of its pairs changed its score (each one a
        #: tick of the clock, as a loop of single writes would make)
        self.ticks: dict[Any, int] = {}
        self.total_ticks = 0

    @property
    def count(self) -> int:
        """Members whose score the batch changes (``set_many``'s answer)."""
        return len(self.changed)

    def plan(self, member: Any, old: Any) -> tuple[Any, int | None]:
        """``member``'s pairs applied one after another to its score ``old``
        (MISSING: absent), as ``_apply_batch`` does: its score after them
        and the number of its last pair that changed it (None: none did)."""
        codec = self.board._codec
        changed: int | None = None
        ticks = 0
        result: Any = MISSING
        i = self.head[member]
        while i >= 0:
            value = self.pairs[i][1]
            step, i = i, self.link[i]
            if self.increment:
                new = codec.add(self.board._zero() if old is MISSING else old, value, member)
            else:
                new = value
                if self.when is not None and codec.blocks(
                    self.when, None if old is MISSING else old, new
                ):
                    continue
            if old is not MISSING and codec.primary(new) == codec.primary(old):
                result = old  # the same score: kept, and reported as held
                continue
            result = old = new
            changed = step
            ticks += 1
        if result is MISSING:
            self.reported.pop(member, None)
        else:
            self.reported[member] = result
        if changed is None:
            self.changed.pop(member, None)
        else:
            self.changed[member] = changed
        self.total_ticks += ticks - self.ticks.pop(member, 0)
        if ticks:
            self.ticks[member] = ticks
        return old, changed

    def results(self) -> dict[Any, Score]:
        """``{member: new score}`` in the batch's order of first mention."""
        reported = self.reported
        return {m: reported[m] for m in self.head if m in reported}

    def build(
        self, columns: tuple[list[Any], list[Any], list[Any]], skip: dict[Any, Change], kind: Any
    ) -> BoardCore:
        """The shadow: ``columns`` less the members of ``skip`` (the catch-up
        puts them back), with the batch planned on the copy's scores."""
        board = self.board
        primaries, ties, members = columns
        scores: dict[Any, Any] = {}
        for lo in range(0, len(members), UNIT_ROWS):
            hi = lo + UNIT_ROWS
            scores.update(zip(members[lo:hi], primaries[lo:hi], strict=True))
        for member in skip:
            scores.pop(member, None)
        moved: list[tuple[Any, Any, Any]] = []
        drop = set(skip)
        first, desc, base = self.first, board._desc, self.base
        primary_of = board._codec.primary
        for member in self.head:
            if member in skip:
                continue
            new, changed = self.plan(member, scores.get(member, MISSING))
            if changed is not None:
                clock = base + changed + 1
                tie = (-clock if desc else clock) if first else member
                moved.append((primary_of(new), tie, member))
                drop.add(member)
        kept = _without(primaries, ties, members, drop)
        if kept[2] is not members:
            _shrink(primaries, ties, members)  # (the copy's columns)
        rows = _sorted_in_units(moved)
        for new, _, member in moved:
            scores[member] = new
        _shrink(moved)
        primaries, ties, members = merge_rows(*kept, rows)
        _shrink(rows, *kept)
        shadow = BoardCore(**_settings(board))
        build_columns = getattr(shadow._index, "build_columns", None)
        if build_columns is not None:
            build_columns(primaries, ties, members)
        else:
            shadow._index.build(zip(primaries, ties, members, strict=True))
        shadow._primary = scores
        if first:
            shadow._tie = deep_ties(primaries, ties, members, oldest_last=desc)
        shadow._clock = base
        shadow._member_type = kind if kind is not None else type(self.pairs[0][0])
        _shrink(primaries, ties, members)
        return shadow

    def catch_up(self, shadow: BoardCore, last: dict[Any, Change]) -> None:
        """Put each member of ``last`` in ``shadow`` as its change left it,
        then its pairs of the batch on top."""
        first, base = self.first, self.base
        for member, change in last.items():
            state: tuple[Any, int] | None = (change[2], change[3]) if change[0] == PUT else None
            if first and state is not None and state[1] > base:
                raise _Declined  # more writes than CLOCK_ROOM: they would tie with the batch
            if member in self.head:
                new, changed = self.plan(member, MISSING if state is None else state[0])
                if changed is not None:
                    state = (new, base + changed + 1 if first else 0)
            try:
                if state is not None:
                    shadow._put(member, state[0], state[1])
                elif member in shadow._primary:
                    shadow._delete(member)
            except TypeError:
                # members that do not compare: the board was emptied and
                # refilled with another member type meanwhile
                raise _Declined from None


def _settings(board: BoardCore) -> dict[str, Any]:
    return {
        "order": board._order,
        "tie_break": board._tie_break,
        "rank_style": board._rank_style,
        "backend": board._backend,
    }


def _without(
    primaries: list[Any], ties: list[Any], members: list[Any], drop: set[Any]
) -> tuple[list[Any], list[Any], list[Any]]:
    """The columns less the rows of the members in ``drop``, in units."""
    if not drop:
        return primaries, ties, members
    out_p: list[Any] = []
    out_t: list[Any] = []
    out_m: list[Any] = []
    for lo in range(0, len(members), UNIT_ROWS):
        hi = lo + UNIT_ROWS
        stays = list(map(operator.not_, map(drop.__contains__, members[lo:hi])))
        out_p += compress(primaries[lo:hi], stays)
        out_t += compress(ties[lo:hi], stays)
        out_m += compress(members[lo:hi], stays)
    return out_p, out_t, out_m


def _shrink(*columns: list[Any]) -> None:
    """Empty each list a unit at a time (freeing 10^6 int objects in one
    call holds the interpreter for tens of milliseconds)."""
    for column in columns:
        while column:
            del column[-UNIT_ROWS:]


def _sorted_in_units(rows: list[tuple[Any, Any, Any]]) -> list[tuple[Any, Any, Any]]:
    """``sorted(rows)`` as sorted units merged (no one long C call)."""
    if len(rows) <= UNIT_ROWS:
        return sorted(rows)
    units = [sorted(rows[lo : lo + UNIT_ROWS]) for lo in range(0, len(rows), UNIT_ROWS)]
    return list(heapq.merge(*units))


def _free(shadow: BoardCore, pause: Callable[[], None]) -> None:
    """Free the old state (now the shadow's) in pieces, off the lock."""
    empty_in_pieces(shadow._index, pause)
    shadow._tie = TieMap()
    scores, shadow._primary = shadow._primary, {}
    # a lock-free read (score, len, in) may still hold the old map: then
    # reference counting frees it when that read is done
    if unshared(scores):
        empty_map_in_pieces(scores, pause)
