"""A Redis board's own event log: attaching it, verifying and rebuilding
Redis from it.

A :class:`~rankengine.redis.board.RedisLeaderboard` given ``log=`` writes
each change Redis applied to a durable event log (the log is the truth, see
:mod:`rankengine.durable`).  :class:`LoggedBoard` attaches or adopts the
log, compares Redis with it (:meth:`LoggedBoard.verify`), and makes Redis the
log's state again (:meth:`LoggedBoard.rebuild`) by the fewest changes, in
chunks of :data:`RESTORE_CHUNK` per script.

>>> have = [("ann", 5, 1, None)]
>>> _changes_between(have, [("ann", 6, 1, None)]) == [(DEL, "ann"), (PUT, "ann", 6, 1)]
True
>>> _same_score(0.0, -0.0), _same_score(1, 1.0), _same_score((1, 2), (1, 2))
(False, False, True)
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator
from typing import Any, Final

from rankengine.board.changes import DEL, META, PUT, Change
from rankengine.board.leaderboard import Leaderboard
from rankengine.board.scoring import (
    Member,
    Score,
    check_meta,
    same_meta,
)
from rankengine.durable.board import FsyncPolicy, open_board_as
from rankengine.redis.codec import (
    MAXCLOCK,
    decode_member,
    decode_meta,
    encode_meta,
)
from rankengine.redis.decode import ReplyDecoding
from rankengine.redis.handle import (
    MISSING,
    _flag,
)

__all__ = [
    "RESTORE_CHUNK",
    "LoggedBoard",
]

#: Changes per COMMIT script when restoring a whole board (a script blocks
#: the server while it runs: about 10 ms per 2000 members).
RESTORE_CHUNK: Final = 2000


def _same_score(a: Any, b: Any) -> bool:
    """Are two scores the same, types and the sign of zero included?"""
    if isinstance(a, tuple) or isinstance(b, tuple):
        return (
            isinstance(a, tuple)
            and isinstance(b, tuple)
            and len(a) == len(b)
            and all(map(_same_score, a, b))
        )
    if type(a) is not type(b) or a != b:
        return False
    return type(a) is not float or math.copysign(1.0, a) == math.copysign(1.0, b)


def _changes_between(
    have: list[tuple[Member, Score, int, dict[str, Any] | None]],
    want: list[tuple[Member, Score, int, dict[str, Any] | None]],
) -> list[Change]:
    """Changes that turn a board holding the rows ``have`` into one holding
    ``want`` (rows as ``_export`` yields them): a member whose score or clock
    differs is removed and put again (so two members never share a clock on
    the way), and metadata follows.

    Runtime complexity: O(N) for N rows in all.
    """
    current = {row[0]: row for row in have}
    target = {row[0]: row for row in want}
    removed: list[Change] = []
    put: list[Change] = []
    metas: list[Change] = []
    for member, (_, score, clock, _) in current.items():
        row = target.get(member)
        if row is None or row[2] != clock or not _same_score(row[1], score):
            removed.append((DEL, member))
    gone = {change[1] for change in removed}
    for member, (_, score, clock, meta) in target.items():
        if member not in current or member in gone:
            put.append((PUT, member, score, clock))
            if meta is not None:
                metas.append((META, member, meta))
        elif not same_meta(current[member][3], meta):
            metas.append((META, member, meta))
    return removed + put + metas


def _clock_mark(
    have: list[tuple[Member, Score, int, dict[str, Any] | None]],
    want: list[tuple[Member, Score, int, dict[str, Any] | None]],
    clock: int,
    logged: int,
) -> list[Change]:
    """The changes of :func:`_changes_between` that also bring a log's clock
    (now ``logged``) up to ``clock``; empty when there is no need, or no
    member to carry it.

    A log's clock is the largest tie clock it holds (see the log format):
    there is no change for the clock alone.  So one member is put with
    ``clock`` and removed again, then put back as ``want`` has it (with its
    metadata), all in the one logged write.  ``clock`` is past every clock
    of ``want`` and of the log's board, so no two members share it on the way.

    Runtime complexity: O(N) for N rows in all.
    """
    if clock <= logged or not (want or have):
        return []
    member, score, _, _ = want[0] if want else have[0]
    rest = [row for row in have if row[0] != member]
    return [(PUT, member, score, clock), (DEL, member), *_changes_between(rest, want)]


class LoggedBoard(ReplyDecoding):
    """Durability of a Redis board: its event log, verify() and rebuild()."""

    # ------------------------------------------------------------------
    # Durability: the event log, verification, rebuild
    # ------------------------------------------------------------------
    def _attach_log(self, log: str | os.PathLike[str], fsync: FsyncPolicy) -> None:
        # Not rank_style: it is each handle's default, not the board's, and
        # a log directory refuses a style other than the one it stored.
        durable = open_board_as(
            Leaderboard, log, fsync=fsync, order=self._order, tie_break=self._tie_break
        )
        try:
            self._adopt_log(durable, self._init())
        except BaseException:
            # A board that failed to open leaves its log closed (unlocked),
            # free to be opened again.
            self._log = self._listener = None
            durable.close()
            raise

    def _adopt_log(self, durable: Leaderboard, writes: int) -> None:
        self._log = durable
        self._listener = self._log_changes
        logged = int(getattr(durable, "last_seq", 0))
        if writes > logged:
            raise ValueError(
                f"Redis board {self._name!r} has {writes} writes but its log only {logged}: "
                "another process writes to it, or the log is not this board's"
            )
        self.recovered = writes < logged
        if self.recovered:
            self.rebuild()

    def _log_changes(self, changes: list[Change]) -> None:
        log = self._log
        with log._lock:
            log._commit(changes)

    def verify(self, source: Any = None) -> list[str]:
        """Differences between the board in Redis and ``source`` (default: the
        log); an empty list means they agree, scores, ties, metadata and clock.

        Runtime complexity: O(N), two round trips.
        """
        source = self._log if source is None else source
        if source is None:
            raise ValueError("verify() needs a log (or a board to compare with)")
        with source._lock:
            want = list(source._export())
            want_clock = source.clock
        got = list(self._export())
        notes: list[str] = []
        if got != want:
            have = {row[0]: row for row in got}
            wanted = {row[0]: row for row in want}
            for member in wanted.keys() | have.keys():
                if wanted.get(member) != have.get(member):
                    notes.append(
                        f"{member!r}: Redis has {have.get(member)}, log {wanted.get(member)}"
                    )
            if not notes:
                notes.append("same members, different order")
        clock = self.clock
        if clock != want_clock:
            notes.append(f"clock: Redis {clock}, log {want_clock}")
        return sorted(notes)

    def rebuild(self, source: Any = None) -> int:
        """Replace the board in Redis with ``source``'s state: the event log by
        default, or any in-process board (for instance
        ``rankengine.durable.board.rebuild(path)``).  Returns the number of members.

        This is the recovery for a Redis that lost data (restarted without
        persistence, or a failover that lost the last replicated writes).
        Readers may see a partial board while it runs.

        On a board with an event log, the log is the board's truth: a
        ``source`` other than the log is first written to the log, as one
        write of the changes that turn the log's board into ``source``'s
        (every row is checked before anything is written), and Redis is then
        rebuilt from the log.  So the write counter stays in step with the
        log, and the rebuilt contents survive the next write and a reopen.

        The logical clock becomes at least the source's, so later writes
        order after everything the source had seen, even writes of members
        it has since removed.  An unlogged board takes the source's clock:
        it is a copy (its write counter counts the rebuild as one write; a
        durable source's ``last_seq`` is not copied).  A logged board's
        clock is the log's, which never goes back: the larger of the log's
        and the source's.  The rebuild's logged write records it (the log
        holds no clock of its own, only its changes': one member is put with
        the clock and put back as the source has it), so it survives a
        reopen; only an empty source copied onto an empty logged board has
        no member to carry it, and keeps the log's clock.

        ``source`` must have this board's ``order`` and ``tie_break`` (a
        ``ValueError`` otherwise, before anything changes): its rows are
        copied as they are, tie clocks included, never converted.

        Runtime complexity: O(N log N), about N / 2000 round trips.
        """
        source = self._log if source is None else source
        if source is None:
            raise ValueError("rebuild() needs a log (or a board to copy)")
        for setting, mine in (("order", self._order), ("tie_break", self._tie_break)):
            theirs = getattr(source, setting)
            if theirs != mine:
                raise ValueError(
                    f"rebuild() needs a source with this board's {setting} ({mine!r}), "
                    f"not {theirs!r}: its rows would not rank as this board ranks them"
                )
        if source is self._log:
            # A logged write holds this board's lock, then the log's: the same here.
            with self._lock, source._lock:
                rows = list(source._export())
                self._restore(rows, int(source.clock), writes=self._log.last_seq)
                return len(rows)
        # Any other source is copied under its own lock alone, released before
        # this board's is taken: holding both would take them in the opposite
        # order to a rebuild the other way (a.rebuild(b) on one thread while
        # b.rebuild(a) runs on another), and the two would wait for each other.
        with source._lock:
            rows = list(source._export())
            clock = int(source.clock)
        with self._lock:
            rows = self._checked_rows(rows, clock)  # before Redis (or the log) changes
            if self._log is None:
                # An unlogged board becomes a copy of the source, clock
                # included, but not its place in a log: the write counter
                # (read only when a log is attached) counts this board's own
                # writes, the rebuild as one.  A durable source's last_seq
                # would let a later attach of that source's log take Redis
                # for in step after both went on by as many writes.
                self._restore(rows, clock, writes=max(self.writes, 0) + 1)
                return len(rows)
            log = self._log
            with self._writing(), log._lock:
                have = list(log._export())
                self._notify(
                    _clock_mark(have, rows, clock, log.clock) or _changes_between(have, rows)
                )
                self._restore(list(log._export()), log.clock, writes=log.last_seq)
        return len(rows)

    def apply_at(self, changes: list[Change], *, after: int, seq: int) -> bool:
        """Apply explicit changes (as :meth:`_commit`) and set the write
        counter to ``seq``, in one script, only if the counter is ``after``:
        False (nothing written) otherwise.

        This is how an applier that feeds the board from an event store
        (:mod:`rankengine.pg`) keeps its place *in Redis, with the board*:
        the counter names the last event applied, and moves in the same
        atomic script as the changes, so an event applied again after a
        crash or by a second applier is refused, never counted twice.  Only
        an unlogged board: a logged one's counter belongs to its log.

        Runtime complexity: O(k log N) on the server for k changes, one round trip.
        """
        if self._log is not None:
            raise ValueError("apply_at() is for a board without an event log")
        ops: list[Any] = ["G", int(after)]
        for change in changes:
            if change[0] == PUT:
                value = self._codec.check(change[2])
                ops.extend(("P", self._member(change[1]), *self._format.encode(value), change[3]))
            elif change[0] == DEL:
                ops.extend(("D", self._member(change[1])))
            else:
                data = change[2]
                ops.extend(("M", self._member(change[1]), _flag(data is not None)))
                ops.append(b"" if data is None else encode_meta(check_meta(data)))
        ops.extend(("W", int(seq)))
        with self._writing():
            if not int(self._run("COMMIT", self._clock_floor, *ops)[0]):
                return False
            self._notify(changes)
        return True

    def rebuild_at(self, source: Leaderboard, seq: int) -> int:
        """:meth:`rebuild` from the in-process board ``source``, leaving the
        write counter at ``seq`` (the event-store position ``source``
        reflects; see :meth:`apply_at`).  While it runs, and after one cut
        short, the counter is -1, which no applier takes for its place.

        Runtime complexity: O(N log N), about N / 2000 round trips.
        """
        if self._log is not None:
            raise ValueError("rebuild_at() is for a board without an event log")
        for setting, mine in (("order", self._order), ("tie_break", self._tie_break)):
            if getattr(source, setting) != mine:
                raise ValueError(f"rebuild_at() needs a source with this board's {setting}")
        with source._lock:
            rows = list(source._export())
            clock = int(source.clock)
        with self._lock:
            rows = self._checked_rows(rows, clock)
            self._restore(rows, clock, writes=int(seq))
        return len(rows)

    def _checked_rows(
        self, rows: list[tuple[Member, Score, int, dict[str, Any] | None]], clock: int
    ) -> list[tuple[Member, Score, int, dict[str, Any] | None]]:
        """Rows of another board (whose clock is ``clock``), each checked as a
        write to this board would be (member, score, metadata, a tie clock
        Redis can hold); raises on the first bad one."""
        out = []
        tags: set[bytes] = set()
        if clock > MAXCLOCK:  # every member's clock is at most the board's
            raise ValueError(
                f"the source's tie clock {clock} is past 2**53 - 1, the largest a Redis board holds"
            )
        for member, score, member_clock, meta in rows:
            tags.add(self._member(member)[:1])
            value = self._codec.check(tuple(score) if isinstance(score, list) else score)
            self._format.encode(value)  # refuse what cannot be stored
            out.append((member, value, member_clock, None if meta is None else check_meta(meta)))
        if not self._first and len(tags) > 1:
            raise TypeError(
                "this board breaks ties by member: the source's members are of "
                f"{len(tags)} types, which would not compare"
            )
        return out

    def _export(self) -> Iterator[tuple[Member, Score, int, dict[str, Any] | None]]:
        """Every member as ``(member, score, clock, meta)`` in ascending index
        order, as :meth:`Leaderboard._export <rankengine.Leaderboard._export>`."""
        pipe = self._client.pipeline(transaction=False)
        pipe.zrange(self._keys[0], 0, -1, withscores=True, score_cast_func=bytes)
        pipe.hgetall(self._keys[1])
        pipe.hgetall(self._keys[2])
        elements, kinds, metas = pipe.execute()
        for element, text in elements:
            ok, clock, key = self._split_element(element)
            kind = kinds[key].split(b":", 1)[0]
            data = metas.get(key)
            yield (
                decode_member(key),
                self._format.decode(text, ok, kind),
                clock if self._first else 0,
                None if data is None else decode_meta(data),
            )

    def _restore(
        self,
        rows: Iterable[tuple[Member, Score, int, dict[str, Any] | None]],
        clock: int,
        *,
        writes: int | None = None,
    ) -> None:
        """Replace the whole board with ``rows`` (as :meth:`_export` yields them)."""
        self._restoring = True
        try:
            self._restore_rows(rows, clock, writes)
        finally:
            self._restoring = False

    def _restore_rows(
        self,
        rows: Iterable[tuple[Member, Score, int, dict[str, Any] | None]],
        clock: int,
        writes: int | None,
    ) -> None:
        # Until the last chunk is in, the write counter is -1, which matches
        # no log: a restore cut short (a crash, a lost connection, Redis out
        # of memory) is redone by the guard or on open, never taken for a
        # board in step with its log.
        unfinished: tuple[Any, ...] = () if writes is None else ("W", -1)
        if writes is not None:
            self._client.hset(self._keys[5], "writes", -1)
        self._client.delete(*self._keys[:5])
        self._client.hdel(self._keys[5], "inexact", "clock", "dense")
        ops: list[Any] = []
        for member, score, member_clock, meta in rows:
            value = self._codec.check(tuple(score) if isinstance(score, list) else score)
            ops.extend(("P", self._member(member), *self._format.encode(value), member_clock))
            if meta is not None:
                ops.extend(("M", self._member(member), "1", encode_meta(meta)))
            if len(ops) >= 6 * RESTORE_CHUNK:
                self._run("COMMIT", 0, *ops, *unfinished)
                ops = []
        ops.extend(("C", clock))
        if writes is not None:
            ops.extend(("W", writes))
        self._run("COMMIT", 0, *ops)

    def _commit(self, changes: list[Change], expect: Iterable[tuple[Member, Any]] = ()) -> bool:
        """Apply explicit changes (``PUT`` with its own clock, ``DEL``,
        ``META``) in one script, after checking ``expect``: ``(member, score
        or MISSING)`` pairs the board must hold.  False (nothing written)
        when a precondition failed.  Used by sharded batches and replay."""
        ops: list[Any] = []
        for member, expected in expect:
            if expected is MISSING:
                ops.extend(("X", self._member(member), "", "", ""))
            else:
                ops.extend(("X", self._member(member), *self._format.encode(expected)))
        for change in changes:
            if change[0] == PUT:
                value = self._codec.check(change[2])
                ops.extend(("P", self._member(change[1]), *self._format.encode(value), change[3]))
            elif change[0] == DEL:
                ops.extend(("D", self._member(change[1])))
            else:
                data = change[2]
                ops.extend(("M", self._member(change[1]), _flag(data is not None)))
                ops.append(b"" if data is None else encode_meta(check_meta(data)))
        with self._writing():
            if not int(self._run("COMMIT", self._clock_floor, *ops)[0]):
                return False
            self._notify(changes)
        return True
