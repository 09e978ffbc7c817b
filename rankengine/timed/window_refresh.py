"""A sliding window's refresh in lock holds of about a millisecond.

(What a refresh computes, and why it recomputes sums instead of adding
and subtracting buckets: :mod:`rankengine.timed.window`.)  A refresh used
to hold the window's lock from start to end: at 1,000,000 members a first
refresh held it for 6-8 s, a refresh after 1% of the members were written
0.3-0.6 s, and one where every member slid out 14-17 s, because it removed
them one by one (``bench/bulk_holds.py``, a loaded 2-core machine).  A
game's frame is 16.7 ms.  Now a refresh runs in five steps::

    1 take     lock     O(B)       roll the buckets over; pick the window's
                                   buckets; take the members due and the
                                   buckets that slid out
    2 sum      no lock  O(T * B)   each touched member's sum, or its absence
    3 correct  no lock  rounds     members written meanwhile are summed again,
                                   until at most CORRECT_UNDER_LOCK are left
    4 apply    lock     see below  the last of them summed under the lock
                                   (exact: no write runs), then the changes
    5 free     no lock  pieces     the old state, and the buckets that slid
                                   out when nobody else holds them

Step 4 has two ways:

* **few changes** (fewer than ``SWAP_FRACTION`` of the window's members):
  written into the window board in *slices*, each a complete ``set_many``
  or ``remove_many`` of at most :data:`APPLY_SLICE_SECONDS` under the lock;
  the slice size adapts to the time the last one took.
* **many changes** (a first refresh, a slide-out that empties most of the
  window): the new state is *built off the lock* -- the old board's
  columns copied in bulk without the members that left, then one
  ``set_many`` of the new sums, which a board bulk-loads -- and handed
  to the window board in O(1) (:func:`~rankengine.board.release.adopt_state`).
  A slide-out that empties the window copies nothing at all.

What other threads see meanwhile: writes go to the buckets as always
(they wait at most one slice); reads see the window board as the last
refresh left it until step 4.  While slices are applied, each member of
the window shows either its sum as of the last refresh or its sum as of
this one (never a mix, never a half-written board: every slice is a
complete board write, so the board's ``_check()`` holds between slices);
the window's ``_check()`` counts the members of a refresh in progress as
due.  After a swap every member shows the new sums at once.

Why step 2 may read the buckets without the lock: only the buckets'
``dict.get`` is used there, one atomic step each, so a sum is of values
the buckets held; a member written while it was being summed was marked
due by that write (the write and its mark are one step under the lock),
so step 3 or 4 sums it again, and step 4's last round runs under the
lock, where no write runs.  The sums are then exact as of step 4.  A
bucket boundary crossed during the refresh (a write opened the next
bucket, outside this refresh's window) leaves the members summed again
in steps 3 and 4 due for the next refresh.

Ties on a first-to-reach board come out as before: the new sums are
written in the order the members became due, and a member summed again
because it was written during the refresh moves to the end, as a write
after the refresh's start would.

>>> plan = Plan()
>>> plan.put("ann", 3); plan.put("bob", 2); plan.drop("cy"); plan.put("ann", 5)
>>> list(plan.updates.items()), list(plan.gone), len(plan)
([('bob', 2), ('ann', 5)], ['cy'], 3)
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from array import array
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, Final

from rankengine.board.combine import aggregate_scores
from rankengine.board.leaderboard import Leaderboard
from rankengine.board.release import (
    adopt_state,
    empty_map_in_pieces,
    release_in_pieces,
    unshared,
)
from rankengine.index.teardown import PIECE
from rankengine.timed.calendars import Period

if TYPE_CHECKING:
    from rankengine.timed.detached import AfterLock
    from rankengine.timed.periodic import PeriodicLeaderboard

__all__ = [
    "APPLY_SLICE_SECONDS",
    "CORRECT_ROUNDS",
    "CORRECT_UNDER_LOCK",
    "SWAP_FRACTION",
    "Plan",
    "WindowRefresh",
]

#: Longest a slice of step 4 holds the lock: well under a 16.7 ms frame, and
#: long enough that a slice writes a few dozen members (a write costs
#: 10-40 us at 10^6 members) rather than paying a lock hand-over per member.
APPLY_SLICE_SECONDS: Final = 0.001
#: The first slice's size, in members; later slices double or halve it
#: against :data:`APPLY_SLICE_SECONDS`.
FIRST_SLICE: Final = 32
#: The largest slice, in members (a bound on the doubling).
MAX_SLICE: Final = 1 << 16
#: Members summed again inside the last hold of step 4: each costs B
#: look-ups and a share of one write, so 256 of them take well under a
#: millisecond.  More than that are summed again off the lock first.
CORRECT_UNDER_LOCK: Final = 256
#: Rounds of step 3 before step 4 takes what is left whatever its size
#: (under writes faster than a round, the rounds would not end).
CORRECT_ROUNDS: Final = 8
#: Changes of at least this fraction of the window's members are applied
#: by a swap: a bulk copy of the old board costs ~0.2-1 us a member, an
#: incremental write 10-40 us, so the copy wins well before this point;
#: below it the slices do work proportional to the change alone.
SWAP_FRACTION: Final = 0.125

_MISSING: Final = object()


class Plan:
    """The changes one refresh makes to the window board: new sums in the
    order to write them, the members that left, and the metadata of the
    members whose metadata was read.

    Runtime complexity: O(1) per member
    """

    __slots__ = ("gone", "metas", "updates")

    def __init__(self) -> None:
        self.updates: dict[Any, Any] = {}
        self.gone: dict[Any, None] = {}
        self.metas: dict[Any, dict[str, Any] | None] = {}

    def put(self, member: Any, total: Any) -> None:
        """``member``'s new sum, written after every sum put before it."""
        self.gone.pop(member, None)
        self.updates.pop(member, None)
        self.updates[member] = total

    def drop(self, member: Any) -> None:
        """``member`` is in none of the window's buckets."""
        self.updates.pop(member, None)
        self.metas.pop(member, None)
        self.gone[member] = None

    def merge(self, later: Plan) -> None:
        """The changes of ``later`` after these (its members move to the end)."""
        for member, total in later.updates.items():
            self.put(member, total)
        for member in later.gone:
            self.drop(member)
        self.metas.update(later.metas)

    def __len__(self) -> int:
        return len(self.updates) + len(self.gone)


def sum_into(
    plan: Plan,
    members: Iterable[Any],
    scores: list[dict[Any, Any]],
    metas: list[dict[Any, dict[str, Any]]] | None,
) -> None:
    """Put each member's sum over the buckets' ``scores`` (oldest bucket
    first, added as :meth:`Leaderboard.union` adds) into ``plan``, or drop
    it when no bucket has it; with ``metas`` (the buckets' metadata maps,
    newest first), also its newest metadata.  Reads each map with one
    ``get`` per member (see the module docstring).

    Runtime complexity: O(T * B) for T members and B buckets
    """
    put, drop, found = plan.put, plan.drop, plan.metas
    for member in members:
        total: Any = _MISSING
        for bucket in scores:
            value = bucket.get(member, _MISSING)
            if value is _MISSING:
                continue
            # the first value, then added as union() adds
            total = value if total is _MISSING else aggregate_scores("sum", total, value, member)
        if total is _MISSING:
            drop(member)
            continue
        put(member, total)
        if metas is not None:
            data = None
            for bucket_meta in metas:
                data = bucket_meta.get(member)
                if data is not None:
                    break
            found[member] = data


def write_plan(board: Leaderboard, plan: Plan, *, removals: bool = True) -> None:
    """Write ``plan`` into ``board``: the new sums (one ``set_many``), the
    metadata read, then (with ``removals``) the removals.

    Runtime complexity: O(k log N) for k changes, or O(N) when the board
    bulk-loads them
    """
    if plan.updates:
        board.set_many(plan.updates)  # a map: no pair tuples for the collector to scan
        for member, data in plan.metas.items():
            if member in plan.updates:
                board.set_meta(member, data)
    if removals and plan.gone:
        board.remove_many(list(plan.gone))


def built_board(old: Leaderboard, plan: Plan, config: dict[str, Any]) -> Leaderboard:
    """A new board holding what ``old`` holds after ``write_plan(old, plan)``,
    built without writing ``old``: its members that stay are copied in
    bulk (whole columns, C-level), then ``plan`` is written.  ``old`` must
    not change meanwhile (only a refresh writes a window board); its
    lock is not taken, so its readers go on.

    Runtime complexity: O(N + k log k) for N members and k changes
    """
    new = Leaderboard(**config)
    gone = plan.gone
    # (a slide-out that empties the window keeps nobody: nothing to copy)
    everyone = len(gone) >= len(old._primary) and _all_in(old._primary, gone)
    if old._primary and not everyone:
        members, scores, clocks, rows = old._export_columns()
        metas = {members[i]: data for i, data in rows.items()}
        if gone:
            keep = [member not in gone for member in members]
            members = list(itertools.compress(members, keep))
            scores = _compressed(scores, keep)
            clocks = _compressed(clocks, keep)
            metas = {m: data for m, data in metas.items() if m not in gone}
        if members:
            new._restore_columns(
                members, scores, clocks, metas, old._clock, negated=old._first and old._desc
            )
    new._clock = old._clock
    if not new._primary and load_in_pieces(new, plan.updates):
        for member, data in plan.metas.items():  # (members of plan.updates only)
            new.set_meta(member, data)
        plan.updates = {}  # the board's own map now
        return new
    write_plan(new, plan, removals=False)  # the members that left were not copied
    return new


def load_in_pieces(board: Leaderboard, sums: dict[Any, Any]) -> bool:
    """``board.set_many(sums)`` into the empty first-to-reach ``board``,
    the same state (member ``i`` of ``sums`` gets clock ``clock + i + 1``),
    with the interpreter's lock let go every :data:`PIECE` members: the
    rows are sorted a piece at a time and merged (``heapq.merge``, stable),
    where ``set_many``'s bulk load sorts them in one C call (~1 s at
    10^6, a stall of every thread).  ``sums`` becomes the board's own map.
    The sums are trusted: window sums of scores the buckets accepted.
    False (nothing done) when the board is not empty or not first-to-reach.

    Runtime complexity: O(N log N), in pieces
    """
    n = len(sums)
    if board._primary or not (board._scalar and board._first) or n < 2:
        return False
    members = list(sums)
    scores = list(sums.values())
    clock = board._clock
    # Ascending index order is (score, tie): a stable sort of the row
    # numbers by score keeps batch order among equal scores, right for an
    # ascending board (tie = clock); a descending board (tie = -clock)
    # wants the newest first, so it sorts the row numbers in reverse.
    rows = range(n - 1, -1, -1) if board._desc else range(n)
    key = scores.__getitem__
    runs = []
    for lo in range(0, n, PIECE):
        runs.append(sorted(rows[lo : lo + PIECE], key=key))
        time.sleep(0)
    order = array("q", heapq.merge(*runs, key=key))  # a Python loop: the GIL comes and goes
    del runs
    in_members: list[Any] = []
    in_scores: list[Any] = []
    # the ties as the index keeps them (-clock on a descending board), so
    # that the load takes the column as it is instead of negating it in C
    ties = array("q")
    sign, base = (-1, -(clock + 1)) if board._desc else (1, clock + 1)
    for lo in range(0, n, PIECE):
        piece = order[lo : lo + PIECE]
        in_members += map(members.__getitem__, piece)
        in_scores += map(scores.__getitem__, piece)
        ties.extend(base + sign * c for c in piece)
        time.sleep(0)
    del members, scores, order
    board._restore_columns(
        in_members, in_scores, ties, {}, clock + n, by_member=sums, negated=board._desc
    )
    return True


def _compressed(column: Any, keep: list[bool]) -> Any:
    kept = itertools.compress(column, keep)
    return array(column.typecode, kept) if type(column) is array else list(kept)


def member_chunks(board: Leaderboard) -> Iterator[list[Any]]:
    """``board``'s members in rank order, best first, :data:`PIECE` at a
    time, each piece read under the board's lock (the board must not
    change between pieces: a bucket that slid out, or one read under the
    window's lock).  Pieces, not one list: a list of 10^6 members is
    scanned whole by every young collection of the cycle collector that
    runs while it lives (one C call: a stall of every thread).

    Runtime complexity: O(N + (N / PIECE) log N)
    """
    n = len(board._primary)
    for lo in range(0, n, PIECE):
        hi = min(n, lo + PIECE)
        with board._lock:
            columns = board._position_columns(lo, hi)
            if columns is None:
                yield [m for _, _, m in board._iter_positions(lo, hi, best_first=True)]
            else:
                yield list(columns[1])


def _all_in(keys: Iterable[Any], container: dict[Any, Any]) -> bool:
    """``all(k in container for k in keys)``, :data:`PIECE` keys between
    two hand-overs of the GIL."""
    it = iter(keys)
    while piece := list(itertools.islice(it, PIECE)):
        if not all(map(container.__contains__, piece)):
            return False
        time.sleep(0)
    return True


class WindowRefresh:
    """The refresh of :class:`~rankengine.timed.window.SlidingWindowLeaderboard`
    (see the module docstring); a base of it, not used on its own."""

    # The state the refresh reads and replaces; the window's __init__ sets it.
    _lock: AfterLock
    _buckets: PeriodicLeaderboard
    _board: Leaderboard
    _board_config: dict[str, Any]
    _size: int
    #: members due, in the order their sums changed
    _dirty: dict[Any, None]
    #: buckets that slid out since the last refresh took them
    _slid: list[Leaderboard]
    #: what the refresh in progress took (due until it has applied them)
    _taken: dict[Any, None]
    _taken_boards: list[Leaderboard]
    _window: list[Period]
    _as_of: float
    _last_touched: int
    #: held by the refresh in progress (one at a time)
    _refreshing: threading.RLock

    def _window_at(self, now: float) -> list[Period]:
        """The buckets a window refreshed at ``now`` sums, oldest first."""
        cal = self._buckets.calendar
        window = [cal.period_of(now)]
        for _ in range(self._size - 1):
            try:
                window.append(cal.previous(window[-1]))
            except ValueError:  # no bucket before the calendar's first (year 1)
                break
        window.reverse()
        return window

    def _slid_out(self, board: Leaderboard) -> None:
        # no write of the member's: one already due keeps its place, the
        # others follow in the bucket's order
        for chunk in member_chunks(board):
            self._dirty.update(dict.fromkeys(chunk))

    def _refresh(self) -> int:
        """Steps 1-5 of the module docstring; the caller holds ``_refreshing``."""
        # 1 take
        with self._lock:
            now = self._buckets.now()  # rolls buckets over; dropped ones go to _slid
            window = self._window_at(now)
            names = {p.name for p in window}
            held = self._buckets._boards
            for period in self._window:
                if period.name not in names and period.name in held:
                    # slid out but still held (a grace longer than a bucket):
                    # it may still be written, so its members are read here
                    self._slid_out(held[period.name])
            taken, self._dirty = self._dirty, {}
            slid, self._slid = self._slid, []
            self._taken, self._taken_boards = taken, slid
            scores, metas = self._bucket_maps(window)
            with_meta = any(metas) or bool(self._board._meta)
        del held
        try:
            # 2 sum
            touched = taken  # (_check reads it under the lock: one C call at a time)
            for board in slid:
                for chunk in member_chunks(board):
                    touched.update(dict.fromkeys(chunk))
                    time.sleep(0)
            plan = Plan()
            sum_into(plan, touched, scores, metas if with_meta else None)
            # 3 correct (and build, when the change is large)
            old = self._board
            new = built_board(old, plan, self._board_config) if _swap(plan, old) else None
            again: dict[Any, None] = {}  # members summed again
            for _ in range(CORRECT_ROUNDS):
                with self._lock:
                    if len(self._dirty) <= CORRECT_UNDER_LOCK:
                        break
                    fresh, self._dirty = self._dirty, {}
                    self._taken.update(fresh)  # (= touched)
                    scores, metas = self._bucket_maps(window)
                again.update(fresh)
                self._correct(plan, new, fresh, scores, metas)
            # 4 apply: the last members due, summed under the lock
            with self._lock:
                fresh, self._dirty = self._dirty, {}
                self._taken.update(fresh)
                again.update(fresh)
                scores, metas = self._bucket_maps(window)
                self._correct(plan, new, fresh, scores, metas)
                if self._buckets._now >= window[-1].end:
                    # a write opened the next bucket, which this window does
                    # not sum: the members summed again stay due
                    self._dirty.update(again)
                self._window = window
                self._as_of = now
                self._last_touched = len(touched)  # every member summed, once
                if new is not None:
                    adopt_state(old, new)  # O(1): readers see the new sums at once
                    self._taken, self._taken_boards = {}, []
        except BaseException:
            with self._lock:  # nothing applied: every member taken is due again
                later = self._dirty
                self._dirty = dict(self._taken)
                for member in later:
                    self._dirty.pop(member, None)
                    self._dirty[member] = None
                self._slid[:0] = self._taken_boards
                self._taken, self._taken_boards = {}, []
            raise
        if new is None:
            try:
                self._apply_in_slices(old, plan)
            except BaseException:
                with self._lock:  # the members not written yet are due again
                    self._dirty.update(self._taken)
                    self._slid[:0] = self._taken_boards
                    self._taken, self._taken_boards = {}, []
                raise
        else:
            release_in_pieces(new)  # 5 free: the old state, off the lock
        del new, old
        for done in (plan.updates, plan.gone, plan.metas, touched, taken):
            empty_map_in_pieces(done)  # freed at once, 10^6 items hold the GIL for ~50 ms
        self._release(slid)
        return self._last_touched

    def _bucket_maps(
        self, window: list[Period]
    ) -> tuple[list[dict[Any, Any]], list[dict[Any, dict[str, Any]]]]:
        """Under the lock: the score maps of the buckets of ``window`` that
        are held, oldest first, and their metadata maps, newest first.
        Taken again for every round of sums: a bucket's bulk load into an
        empty board replaces its maps, and a bucket may be made meanwhile
        (a late write within its grace)."""
        held = self._buckets._boards
        boards = [held[p.name] for p in window if p.name in held]
        return [b._primary for b in boards], [b._meta for b in reversed(boards)]

    def _correct(
        self,
        plan: Plan,
        new: Leaderboard | None,
        fresh: dict[Any, None],
        scores: list[dict[Any, Any]],
        metas: list[dict[Any, dict[str, Any]]],
    ) -> None:
        """Sum ``fresh`` again into ``plan``, or write the sums into the
        board being built."""
        if not fresh:
            return
        part = Plan()
        sum_into(part, fresh, scores, metas)
        if new is None:
            plan.merge(part)
        else:
            write_plan(new, part)

    def _apply_in_slices(self, board: Leaderboard, plan: Plan) -> None:
        """Write ``plan`` into ``board`` in slices of at most about
        :data:`APPLY_SLICE_SECONDS`, each under the window's lock."""
        updates = list(plan.updates.items())
        gone = list(plan.gone)
        metas = plan.metas
        size = FIRST_SLICE
        i = j = 0
        while True:
            with self._lock, board._lock:
                if i >= len(updates) and j >= len(gone):
                    self._taken, self._taken_boards = {}, []
                    return
                start = time.perf_counter()
                if i < len(updates):
                    chunk = updates[i : i + size]
                    i += len(chunk)
                    board.set_many(chunk)
                    for member, _ in chunk:
                        if member in metas:
                            board.set_meta(member, metas[member])
                else:
                    done = gone[j : j + size]
                    j += len(done)
                    board.remove_many(done)
                spent = time.perf_counter() - start
            if spent < APPLY_SLICE_SECONDS / 2:
                size = min(size * 2, MAX_SLICE)
            elif spent > APPLY_SLICE_SECONDS:
                size = max(size // 2, 1)
            time.sleep(0)  # a waiting thread takes the lock (and the GIL) here

    def _release(self, slid: list[Leaderboard]) -> None:
        """Free the buckets that slid out, in pieces, when this refresh
        held the last reference (else their last holder frees them)."""
        while slid:
            board = slid.pop()
            if unshared(board):
                release_in_pieces(board)
            del board


def _swap(plan: Plan, old: Leaderboard) -> bool:
    """Whether ``plan`` is applied by building a new state (see the module
    docstring)."""
    return bool(plan) and len(plan) >= SWAP_FRACTION * len(old._primary)
