"""Replay by folding: the records after a snapshot, checked and reduced to
each member's final state, then applied to the board in one batch.

Invariant: after :meth:`Fold.finish`, the board is exactly what applying
every added record one by one would have made it -- every member's score,
tie clock ("who got there first"), metadata, and the board's logical clock
-- and every record was checked as that one-by-one replay would check it
(a record that would not apply raises
:class:`~rankengine.durable.records.CorruptionError`, naming its offset).

Why a fold is exact
-------------------
A record holds *results*, not requests (:mod:`rankengine.board.changes`):
``PUT`` carries the member's absolute score and its tie clock, ``DEL``
removes it, ``META`` replaces its metadata.  So a member's state after the
tail depends on its last changes only, and the members do not depend on
each other::

    records   PUT a 5 @7 | PUT b 3 @8 | PUT a 9 @9 | DEL b | META a {...}
    fold      a: score 9, clock 9, meta {...}     b: deleted
    applied   DEL b (if it was on the board) | PUT a 9 @9 | META a {...}

A ``DEL`` also drops the member's metadata, so a member deleted and put
back is deleted first.  Every change in this log format is about one
member -- a ``clear()`` is one ``DEL`` per member, a ``set_many`` one
``PUT`` each, a union or intersection builds a new board and logs nothing
here -- so no record is a *barrier* that the fold would have to stop at:
a record with many changes is folded change by change, in its order, and
the board's ``when=`` conditions were settled before the record was
written (a refused write logs nothing).  The puts go in as one batch,
which the board bulk-loads (sort, then an O(N) index build) when it
rewrites a large part of it.

Two speeds
----------
The common record is one ``PUT`` (``set``, ``incr``).  :meth:`Fold.add_batch`
takes the frames of one read chunk (about a thousand records) and runs
them through one tight loop that decodes each payload with one
``msgpack.unpackb`` call, checks the record as
:func:`~rankengine.durable.records.decode_record` would and folds it with
one dict store.  A record that is anything else -- another shape, a check
that fails, outside the window asked for -- goes through
:meth:`Fold.add` on its own, which also finds and reports the exact
record that is wrong, and the fast loop takes over again after it.
(Checking a chunk a column at a time with C-level passes -- ``zip``,
``map``, ``set`` -- was measured too, twice: slower, as every pass walks
the chunk's objects again.)  Measured: ``bench/replay.py``.

Where the time goes (400,000 increments over 100,000 players into an
empty board, CPU time on a shared machine, about 6 us a record in all):
reading the frames and checking their CRCs ~1.2 us a record, decoding
~0.9 us, the checks ~0.4 us, the dict store ~1.7 us (the member's earlier
state is cold in the cache by then: the store compares the stored key and
frees the replaced pair), then the sort and bulk load, ~6 us per member
(~1.5 us a record here).  The frame and the decoding are per record
whatever the fold does: with no fold at all, reading, checking and
decoding this log runs at ~600,000 records/s on that machine.

Runtime complexity: O(1) amortised per change; :meth:`Fold.finish` is a
batch write of the members touched (O(N log N) when it rebuilds the index).

>>> from rankengine.board.leaderboard import Leaderboard
>>> from rankengine.durable.records import Event
>>> board = Leaderboard()
>>> fold = Fold(board)  # (records from seq 1 on)
>>> fold.add(Event(1, 0, [(0, "ann", 5, 1)]), "log", 0)
>>> fold.add(Event(2, 0, [(0, "bob", 5, 2), (0, "ann", 7, 3)]), "log", 40)
>>> fold.add(Event(3, 0, [(1, "bob")]), "log", 80)
>>> fold.finish()
>>> board.items(), board.clock
([('ann', 7)], 3)
"""

from __future__ import annotations

import itertools
import operator
from typing import Any, Final

import msgpack

from rankengine.board.changes import DEL, META, PUT, Change
from rankengine.board.checks import check_comparable
from rankengine.board.leaderboard import Leaderboard
from rankengine.durable.records import CorruptionError, Event, decode_record

__all__ = ["Fold"]

#: What a member may be in a record (the decoder admits no other type).
_MEMBER_TYPES: Final = frozenset((str, bytes, int))
#: The longest the fast path waits (in records left to the slow path)
#: before trying again after it took nothing: a log of other records then
#: decodes at most one record in this many twice.
_FAST_RETRY_MAX: Final = 64
#: No limit on seq or time (Python ints compare with it).
_NO_LIMIT: Final = float("inf")
# The clock of a PUT change.
_CLOCK_OF: Final = operator.itemgetter(3)
# The fields of a ``(score, clock, member)`` row of :meth:`Fold._load_empty`.
_ROW_SCORE: Final = operator.itemgetter(0)
_ROW_CLOCK: Final = operator.itemgetter(1)
_ROW_MEMBER: Final = operator.itemgetter(2)


class Fold:
    """Records checked and folded into each member's final state, applied
    to ``board`` by :meth:`finish` (the board is not changed before it).

    The state: ``puts`` (member -> its last PUT since its last DEL; such a
    member is present), ``deleted`` (members of the board before the tail
    that a DEL removed; present again only when in ``puts``), ``metas``
    (member -> its last META since its last DEL) and the largest clock seen.

    Runtime complexity: O(1) amortised per change
    """

    def __init__(self, board: Leaderboard) -> None:
        self.board = board
        self.by_member = board._tie_break == "member"
        self.check_score = board._codec.check
        self.scalar = board._codec.columns is None
        #: whether one-PUT records take the fast path (scalar scores, ties
        #: by time: no per-member type check)
        self.fast = self.scalar and not self.by_member
        #: the board before the tail (not changed until :meth:`finish`)
        self.before = board._primary
        #: member -> ``(score, clock)`` of its last PUT since its last DEL
        self.puts: dict[Any, tuple[Any, int]] = {}
        #: members on the board before the tail that a DEL removed
        self.deleted: set[Any] = set()
        #: member -> its last META value since its last DEL
        self.metas: dict[Any, Any] = {}
        #: members present now (kept only where the type checks of a board
        #: that breaks ties by member need it)
        self.size = len(board._primary)
        self.member_type = board._member_type if board._primary else None
        self.clock = 0
        #: the last record read (folded, or skipped as at or before
        #: ``after``); the next must be ``last_seq + 1`` (a reader sets it at
        #: a segment's start)
        self.last_seq = 0
        #: the time of the last record folded, and how many were
        self.last_ms = 0
        self.records = 0

    def _present(self, member: Any) -> bool:
        return member in self.puts or (member in self.before and member not in self.deleted)

    # ------------------------------------------------------------------
    # One record at a time
    # ------------------------------------------------------------------
    def add(self, event: Event, path: str, at: int) -> None:
        """Check that ``event`` (read at offset ``at`` of ``path``) applies
        after the records before it, and fold its changes in;
        :class:`CorruptionError` if it does not apply (nothing folded).

        Runtime complexity: O(changes in the record)
        """
        # (the type checks see the board as of the event's start, as a
        # board applying it would: an event is one batch write, and on an
        # empty board its members must compare with each other, as a batch
        # write checks them: the first one fixes the type)
        held = self.member_type if self.size else None
        changes = event.changes
        try:
            # Every change is checked against the state it would meet before
            # any is folded, so a record that does not apply changes nothing.
            now: dict[Any, bool] = {}  # member -> present, within the record
            for change in changes:
                kind, member = change[0], change[1]
                if self.by_member:
                    if held is None:
                        held = type(member)
                    else:
                        check_comparable(member, held)
                here = now.get(member)
                if here is None:
                    here = self._present(member)
                if kind == PUT:
                    self.check_score(change[2])
                    now[member] = True
                elif not here:
                    raise ValueError(
                        f"{'DEL' if kind == DEL else 'META'} of absent member {member!r}"
                    )
                elif kind == DEL:
                    now[member] = False
        except (TypeError, ValueError) as exc:
            raise CorruptionError(path, at, f"record {event.seq} does not apply ({exc})") from None
        for change in changes:
            self._fold(change)
        self.last_seq, self.last_ms = event.seq, event.time_ms
        self.records += 1

    def _fold(self, change: Change) -> None:
        """Fold one checked change into the members' final states."""
        kind, member = change[0], change[1]
        if kind == PUT:
            if self.by_member and not self._present(member):
                if not self.size:
                    self.member_type = type(member)
                self.size += 1
            self.puts[member] = (self.check_score(change[2]), change[3])
            self.clock = max(self.clock, change[3])
        elif kind == DEL:
            self.size -= 1
            self.puts.pop(member, None)
            self.metas.pop(member, None)
            if member in self.before:
                self.deleted.add(member)
        else:
            assert kind == META
            self.metas[member] = change[2]

    # ------------------------------------------------------------------
    # A chunk at a time
    # ------------------------------------------------------------------
    def add_batch(
        self,
        frames: list[tuple[int, bytes]],
        path: str,
        *,
        after: int = 0,
        until_seq: int | None = None,
        until_ms: int | None = None,
    ) -> int:
        """Check and fold the records of ``frames`` (``(offset, payload)``,
        checksums already checked) that come after seq ``after`` and within
        ``until_seq`` / ``until_ms``; return how many were taken (fewer than
        given only when a record past ``until_*`` ends the replay there).

        Records must continue the sequence from :attr:`last_seq`.  Raises
        :class:`CorruptionError` at the first record that is not valid or
        does not apply; every record before it is folded.

        The one-PUT records go through :meth:`_add_puts`; each record it
        stops at goes through :meth:`add` on its own, and the fast path
        takes over again after it (a log of increments with a ``remove``
        now and then stays on the fast path; after a record it could not
        take at all it waits a few records, longer each time, so that a
        run of other records is not decoded by both paths).

        Runtime complexity: O(len(frames))
        """
        fast = self.fast
        count = len(frames)
        i = 0
        wait = backoff = 0  # slow records before the fast path tries again
        while i < count:
            if fast and not wait:
                taken = self._add_puts(frames, i, after, until_seq, until_ms)
                # (when it takes nothing it waits before trying again, twice
                # as long each time: a run of other records is not decoded
                # twice, one record in _FAST_RETRY_MAX at most)
                backoff = 0 if taken > i else min(2 * backoff or 1, _FAST_RETRY_MAX)
                wait, i = backoff, taken
                if i == count:
                    break
            elif wait:
                wait -= 1
            if until_seq is not None and self.last_seq >= until_seq:
                return i  # (not reading on: damage past it is no matter)
            at, payload = frames[i]
            try:
                event = decode_record(payload)
            except ValueError as exc:
                raise CorruptionError(path, at, f"bad record: {exc}") from None
            if event.seq != self.last_seq + 1:
                raise CorruptionError(
                    path, at, f"sequence jumps from {self.last_seq} to {event.seq}"
                )
            if event.seq <= after:
                self.last_seq = event.seq
                i += 1
                continue
            if (until_seq is not None and event.seq > until_seq) or (
                until_ms is not None and event.time_ms > until_ms
            ):
                return i
            self.add(event, path, at)
            i += 1
        return i

    def _add_puts(
        self,
        frames: list[tuple[int, bytes]],
        start: int,
        after: int,
        until_seq: int | None,
        until_ms: int | None,
    ) -> int:
        """The fast path of :meth:`add_batch` (scalar scores, ties by time):
        fold the one-PUT records from ``frames[start]`` on that are valid,
        next in sequence and inside the window; return the index of the
        first record it did not take (``len(frames)`` when it took them all).

        The checks are :func:`decode_record`'s and :meth:`add`'s, written
        out: ``is`` tests on types (a bool is no int here), every value
        compared as the slow path compares it.  Each payload is decoded on
        its own by ``msgpack.unpackb`` with its default options (which are
        the log's, but for extension types: an int past 64 bits comes back
        as an ``ExtType``, which the type tests send to the slow path), so
        a payload that holds more or less than one value raises.  The
        record's shape is checked by unpacking it: a map or a string in
        place of an array either fails to unpack or yields a key or a
        character where an int or a list must be, which the tests refuse.

        Speed (``bench/replay.py``, 400,000 increments over 100,000 players,
        shared machine): each member's state is stored as a new
        ``(score, clock)`` pair, so that the record's own objects are freed
        while they are still in the cache, and the pair a later record
        replaces is small; this and decoding each payload on its own
        (no joined buffer, no Unpacker position read per record) took the
        loop from ~3.5 us to ~2.9 us a record.
        """
        expect = self.last_seq + 1
        if expect <= after:
            return start  # records before the snapshot: the slow path skips them
        unpackb = msgpack.unpackb
        puts = self.puts
        top = self.clock
        last_ms = self.last_ms
        max_seq = _NO_LIMIT if until_seq is None else until_seq
        max_ms = _NO_LIMIT if until_ms is None else until_ms
        member_types = _MEMBER_TYPES
        first = expect
        try:
            for _, payload in itertools.islice(frames, start, None):
                seq, time_ms, changes = unpackb(payload)
                (put,) = changes
                kind, member, score, clock = put
                if (
                    seq != expect
                    or type(seq) is not int
                    or seq > max_seq
                    or type(time_ms) is not int
                    or time_ms < 0
                    or time_ms > max_ms
                    or type(put) is not list
                    or kind != PUT
                    or type(kind) is not int
                    or type(clock) is not int
                    or clock < 0
                    or type(member) not in member_types
                ):
                    break
                kind_of_score = type(score)
                if kind_of_score is not int and (kind_of_score is not float or score != score):
                    break  # not a number, or a NaN
                puts[member] = (score, clock)
                if clock > top:  # noqa: PLR1730 - a compare, not a max() call, per record
                    top = clock
                last_ms = time_ms
                expect += 1
        except Exception:  # msgpack raises several types: the slow path reports it
            pass
        n = expect - first
        if n:
            self.clock = top
            self.last_seq = expect - 1
            self.last_ms = last_ms
            self.records += n
        return start + n

    def add_puts(self, frames: list[tuple[int, bytes]], start: int = 0) -> int:
        """Fold the one-PUT records from ``frames[start]`` on that continue
        the sequence from :attr:`last_seq` (the fast path of
        :meth:`add_batch`, with no window: for a process folding a part of
        a segment, :mod:`rankengine.durable.parallel`); return the index of
        the first frame not taken.

        Only for scalar scores and ties by time (see :attr:`fast`).

        Runtime complexity: O(records taken)
        """
        assert self.fast
        return self._add_puts(frames, start, 0, None, None)

    def merge_puts(
        self,
        members: list[Any],
        scores: list[Any],
        clocks: list[int],
        *,
        first_seq: int,
        last_seq: int,
        last_ms: int,
        clock: int,
        records: int,
    ) -> bool:
        """Fold in what :meth:`add_puts` folded elsewhere from the records
        ``first_seq`` to ``last_seq``: each member's last ``(score, clock)``
        as three columns, the largest clock and the last record's time.
        False (nothing changed) unless ``first_seq`` continues the records
        folded here.

        One-PUT records compose: after any state, they only set each
        member's PUT (a member a DEL removed is present again, its
        metadata stays gone) and raise the clock, so the later part's
        puts replace the earlier's.

        Runtime complexity: O(members given)
        """
        if not self.fast or first_seq != self.last_seq + 1 or records != last_seq - first_seq + 1:
            return False
        self.puts.update(zip(members, zip(scores, clocks, strict=True), strict=True))
        self.clock = max(self.clock, clock)
        self.last_seq, self.last_ms = last_seq, last_ms
        self.records += records
        return True

    # ------------------------------------------------------------------
    # The net effect
    # ------------------------------------------------------------------
    def finish(self) -> None:
        """Apply the folded state to the board: the deletions, then every
        member's last PUT (oldest clock first), then its metadata.

        Runtime complexity: a batch write of the members touched
        """
        board = self.board
        puts = self.puts
        if not self.before and self.scalar and puts:
            self._load_empty()
            return
        if self.deleted:
            board._apply([(DEL, member) for member in self.deleted])
        if puts:
            # (oldest first, as the records put them: a member with an
            # older clock lands at the older end of its run of ties)
            changes: list[Change] = [(PUT, m, score, at) for m, (score, at) in puts.items()]
            changes.sort(key=_CLOCK_OF)
            board._apply(changes)
        metas: list[Change] = [(META, member, data) for member, data in self.metas.items()]
        if metas:
            board._apply(metas)
        board._clock = max(board._clock, self.clock)

    def _load_empty(self) -> None:
        """:meth:`finish` into an empty board with scalar scores: the
        members' final states are the whole board, so they go in as sorted
        columns through the board's bulk loader (the one snapshot loading
        uses), with no per-member Python work but the sort.

        The index keeps ``(score, tie)`` ascending, the tie being the clock
        (negated on a descending board: the newest first among equals) or
        the member; ties are unique.

        Runtime complexity: O(M log M) for the M members
        """
        board = self.board
        puts = self.puts
        rows = list(zip(*zip(*puts.values(), strict=True), puts, strict=True))
        if self.by_member:
            # (members of one type, which the checks ensured, sort in C)
            rows.sort(key=_ROW_MEMBER)
        else:
            # newest first among equal scores on a descending board
            rows.sort(key=_ROW_CLOCK, reverse=board._desc)
        # Then by score, stably: two sorts of the rows on plain int or float
        # keys (which CPython compares without the generic path) beat one
        # sort on (score, tie) tuples, and sorting the rows themselves beats
        # sorting row numbers and reading three columns through them
        # (measured at 100,000 members: ~0.3 s against ~0.55 s on a shared
        # machine, the objects being scattered over the heap by the replay).
        rows.sort(key=_ROW_SCORE)
        columns = list(zip(*rows, strict=True))
        del rows
        scores, members = list(columns[0]), list(columns[2])
        # (a board that breaks ties by member keeps no clocks)
        clocks = [0] * len(members) if self.by_member else list(columns[1])
        del columns
        metas = {member: data for member, data in self.metas.items() if data is not None}
        board._restore_columns(
            members,
            scores,
            clocks,
            metas,
            max(board._clock, self.clock),
        )
