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
takes the frames of one read chunk (about a thousand records), decodes
them with one msgpack ``Unpacker`` (no per-record call set-up) and runs
them through one tight loop that checks each such record as
:func:`~rankengine.durable.records.decode_record` would and folds it with
one dict store.  The first record that is anything else -- another shape,
a check that fails, outside the window asked for -- and the rest of the
chunk go through :meth:`Fold.add`, one record at a time, which also finds
and reports the exact record that is wrong.  (Checking a chunk a column at
a time with C-level passes -- ``zip``, ``map``, ``set`` -- was measured
too: slower, ~7-10 us a record against ~3.5 us, as every pass walks the
chunk's objects again.)  Measured: ``bench/replay.py``.

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
from rankengine.durable.records import CorruptionError, Event, decode_ext, decode_record

__all__ = ["Fold"]

#: What a member may be in a record (the decoder admits no other type).
_MEMBER_TYPES: Final = frozenset((str, bytes, int))
#: A chunk's payloads go to one Unpacker: never cap what it may hold below
#: what one read chunk holds (the frames were length-checked already).
_UNPACKER_BUFFER: Final = 1 << 31
#: No limit on seq or time (Python ints compare with it).
_NO_LIMIT: Final = float("inf")
# The fields of a PUT change.
_MEMBER_OF: Final = operator.itemgetter(1)
_SCORE_OF: Final = operator.itemgetter(2)
_CLOCK_OF: Final = operator.itemgetter(3)


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
        #: the board before the tail (not changed until :meth:`finish`)
        self.before = board._primary
        #: member -> its last PUT change since its last DEL
        self.puts: dict[Any, Any] = {}
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
            self.puts[member] = (PUT, member, self.check_score(change[2]), change[3])
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

        Runtime complexity: O(len(frames))
        """
        taken = 0
        if self.scalar and not self.by_member:
            taken = self._add_puts(frames, after, until_seq, until_ms)
        for at, payload in itertools.islice(frames, taken, None):
            if until_seq is not None and self.last_seq >= until_seq:
                return taken  # (not reading on: damage past it is no matter)
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
                taken += 1
                continue
            if (until_seq is not None and event.seq > until_seq) or (
                until_ms is not None and event.time_ms > until_ms
            ):
                return taken
            self.add(event, path, at)
            taken += 1
        return taken

    def _add_puts(
        self,
        frames: list[tuple[int, bytes]],
        after: int,
        until_seq: int | None,
        until_ms: int | None,
    ) -> int:
        """The fast path of :meth:`add_batch` (scalar scores, ties by time):
        fold the one-PUT records at the start of ``frames`` that are valid,
        next in sequence and inside the window; return how many.

        The checks are :func:`decode_record`'s and :meth:`add`'s, written
        out: ``is`` tests on types (a bool is no int here), every value
        compared as the slow path compares it.  Each payload must hold
        exactly one value: where the Unpacker stands after each record is
        compared with where its payload ends.
        """
        payloads = [payload for _, payload in frames]
        unpacker = msgpack.Unpacker(
            raw=False,
            use_list=True,
            strict_map_key=True,
            ext_hook=decode_ext,
            max_buffer_size=_UNPACKER_BUFFER,
        )
        unpacker.feed(b"".join(payloads))
        ends = list(itertools.accumulate(map(len, payloads)))
        tell = unpacker.tell
        puts = self.puts
        top = self.clock
        expect = self.last_seq + 1
        last_ms = self.last_ms
        max_seq = _NO_LIMIT if until_seq is None else until_seq
        max_ms = _NO_LIMIT if until_ms is None else until_ms
        member_types = _MEMBER_TYPES
        n = 0
        if expect <= after:
            return 0  # records before the snapshot: the slow path skips them
        try:
            for raw in unpacker:
                # (unpacking raises on a wrong count; the type tests below
                # catch a str, bytes or map of the right length)
                seq, time_ms, changes = raw
                (put,) = changes
                kind, member, score, clock = put
                if (
                    seq != expect
                    or type(seq) is not int
                    or seq > max_seq
                    or type(time_ms) is not int
                    or time_ms < 0
                    or time_ms > max_ms
                    or type(changes) is not list
                    or type(put) is not list
                    or kind != PUT
                    or type(kind) is not int
                    or type(clock) is not int
                    or clock < 0
                    or type(member) not in member_types
                    or tell() != ends[n]
                ):
                    break
                kind_of_score = type(score)
                if kind_of_score is not int and (kind_of_score is not float or score != score):
                    break  # not a number, or a NaN
                puts[member] = put
                if clock > top:  # noqa: PLR1730 - a compare, not a max() call, per record
                    top = clock
                last_ms = time_ms
                expect += 1
                n += 1
        except (ValueError, TypeError, msgpack.UnpackException):
            pass  # not msgpack, or another shape: the slow path says where and why
        self.clock = top
        if n:
            self.last_seq = expect - 1
            self.last_ms = last_ms
            self.records += n
        return n

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
            board._apply([(PUT, p[1], p[2], p[3]) for p in sorted(puts.values(), key=_CLOCK_OF)])
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
        puts = list(self.puts.values())
        members = list(map(_MEMBER_OF, puts))
        scores = list(map(_SCORE_OF, puts))
        if self.by_member:
            # (members of one type, which the checks ensured, sort in C)
            order = sorted(range(len(members)), key=members.__getitem__)
            clocks = [0] * len(members)  # (unused: the members are the ties)
        else:
            clocks = list(map(_CLOCK_OF, puts))
            # newest first among equal scores on a descending board
            order = sorted(range(len(clocks)), key=clocks.__getitem__, reverse=board._desc)
        # Then by score, stably: two sorts on plain int or float keys (which
        # CPython compares without the generic path) beat one sort of
        # (score, tie) tuples.
        order.sort(key=scores.__getitem__)
        members = list(map(members.__getitem__, order))
        scores = list(map(scores.__getitem__, order))
        if not self.by_member:
            clocks = list(map(clocks.__getitem__, order))
        del puts, order
        metas = {member: data for member, data in self.metas.items() if data is not None}
        board._restore_columns(
            members,
            scores,
            clocks,
            metas,
            max(board._clock, self.clock),
        )
