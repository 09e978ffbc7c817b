"""The writes of the board contract, stated once: :class:`BoardWrites`.

The companion of :class:`~rankengine.board.contract.BoardAPI` (the reads,
pops and prunes): each public write -- ``set``, ``incr``, ``set_many``,
``incr_many``, ``remove``, ``remove_many``, ``set_meta``, ``clear`` -- with
its docstring, its argument checks in the order every kind checks them, and
one call of a *primitive* the kind supplies (listed in
:data:`WRITE_PRIMITIVES`) with the arguments already checked::

    set(member, score, when=, meta=)                 public, here
      under the board's lock:
      member, then score, then when, then meta       checks, here
      -> self._set_checked(member, value, when, meta)  primitive, each kind

A member is checked by the kind's ``_check_member`` (it knows which members
its ties can compare) and a score or delta by its codec (``_codec.check``:
scalar or composite); ``when``, metadata and member lists by the rules of
:mod:`rankengine.board.checks` and :mod:`rankengine.board.scoring`.  Every
check raises before anything is written, so a refused write changes nothing.

Hot path: the in-memory board answers ``set`` and ``incr`` with fused bodies
of its own (the checks and the primitive inlined, as it does for ``rank``),
held to the same behaviour by the conformance suite; their docstrings are
these (``inspect.getdoc`` and ``help()`` find them here).  A batch's pairs
are checked by its primitive, since a kind may bulk-load a batch before (or
instead of) checking it pair by pair.

>>> from rankengine import Leaderboard
>>> isinstance(Leaderboard(), BoardWrites), WRITE_PRIMITIVES[:2]
(True, ('_set_checked', '_incr_checked'))
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from typing import Any, Final, overload

from rankengine.board.checks import WHENS, check_members, check_when, member_list
from rankengine.board.contract import When
from rankengine.board.scoring import Member, Score, ScoreCodec, check_meta

__all__ = ["WRITE_PRIMITIVES", "BoardWrites"]

#: The primitives a kind supplies to :class:`BoardWrites`, each called under
#: the board's lock with checked arguments (a member as ``_check_member``
#: returns it, a score or delta as the codec returns it, ``when`` one of
#: :data:`~rankengine.board.checks.WHENS`, metadata as
#: :func:`~rankengine.board.scoring.check_meta` returns it or None, a member
#: list a ``list``), except the pairs of a batch, which the primitive checks.
WRITE_PRIMITIVES: Final = (
    "_set_checked",
    "_incr_checked",
    "_set_pairs",
    "_incr_pairs",
    "_remove_member",
    "_remove_members",
    "_set_meta_checked",
    "_clear_all",
)


class BoardWrites:
    """The public writes of every exact board kind: docstrings and argument
    checks here, the work in the kind's primitives (see
    :data:`WRITE_PRIMITIVES`).

    A kind inherits from it and supplies ``_lock`` (a re-entrant lock held
    for the whole write), ``_codec`` (its score codec), ``_check_member``
    and the primitives.  A kind whose writes are atomic elsewhere (the
    Redis board: one script on the server) replaces ``_write_guard``, what
    a write holds, with a context that takes no lock.
    """

    __slots__ = ()

    _lock: Any
    _codec: ScoreCodec

    @property
    def _write_guard(self) -> AbstractContextManager[Any]:
        """What a write holds while it checks and applies: the board's lock."""
        return self._lock  # type: ignore[no-any-return]

    def set(
        self,
        member: Member,
        score: Score,
        *,
        when: When | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> bool:
        """Set ``member``'s score, optionally only under a condition.

        ``when`` (Redis ``ZADD`` flags): ``"new"`` only adds (NX),
        ``"present"`` only updates (XX), ``"better"``/``"worse"`` update only
        if the new score ranks ahead of/behind the old one and always add a new
        member (GT/LT; ``"better"`` is the "keep best" rule).  ``meta``, if
        given, replaces the member's metadata when the write happens.

        Setting the score a member already has changes nothing: it keeps its
        place among ties.

        Runtime complexity: O(log N) (Redis: one round trip; sharded: one shard)

        :return: True if the board changed.

        >>> from rankengine import Leaderboard
        >>> board = Leaderboard()
        >>> board.set("ann", 10), board.set("ann", 5, when="better"), board["ann"]
        (True, False, 10)
        """
        with self._write_guard:
            member = self._check_member(member)
            value = self._codec.check(score)
            if when not in WHENS:
                check_when(when)
            clean = None if meta is None else check_meta(meta)
            return self._set_checked(member, value, when, clean)

    @overload
    def incr(self, member: Member, delta: Score = 1, *, when: None = None) -> Score: ...
    @overload
    def incr(self, member: Member, delta: Score = 1, *, when: When) -> Score | None: ...
    def incr(self, member: Member, delta: Score = 1, *, when: When | None = None) -> Score | None:
        """Add ``delta`` to ``member``'s score (a missing member starts at 0).

        ``when`` works as in :meth:`set` and is checked against the resulting
        score.  An increment that would give NaN (``inf + -inf``) raises and
        changes nothing.  An increment of 0 changes nothing: when the sum
        equals the old score (``5 + 0.0``, ``0 + -0.0``), the board keeps the
        score it holds, as :meth:`set` of an equal score does, and returns it
        (``5``, not ``5.0``), so the result is always the stored score.
        Exact for every score on every kind (on Redis the server adds
        doubles when the sum is exact; otherwise the client adds the exact
        values and commits them with a compare-and-set).

        Runtime complexity: O(log N) (Redis: one round trip, three on the
        exact path; sharded: one shard)

        :return: the new score, or None when ``when`` blocked the write.

        >>> from rankengine import Leaderboard
        >>> board = Leaderboard()
        >>> board.incr("ann", 5), board.incr("ann", 2.5), board.incr("bob", 1, when="present")
        (5, 7.5, None)
        """
        with self._write_guard:
            member = self._check_member(member)
            step = self._codec.check(delta, "delta")
            if when not in WHENS:
                check_when(when)
            return self._incr_checked(member, step, when)

    def set_many(
        self,
        items: Mapping[Member, Score] | Iterable[tuple[Member, Score]],
        *,
        when: When | None = None,
    ) -> int:
        """Set many scores in one call; all are validated before any is applied.

        Pairs are applied in order, as consecutive :meth:`set` calls would be
        (a member given twice ends with the last score, and its tie clock is
        that of its last change).  Much faster than a loop: one lock, one log
        record, and a bulk rebuild of the index when the batch is large.

        Runtime complexity: O(k log N), or O((N + k) log(N + k)) in C when
        rebuilding (Redis: one atomic script, one round trip; sharded: one
        read and one write per shard).

        :return: the number of members whose score changed or who were added.

        >>> from rankengine import Leaderboard
        >>> board = Leaderboard()
        >>> board.set_many([("ann", 3), ("bob", 5), ("ann", 4)])
        2
        >>> board.set_many({"bob": "x"})
        Traceback (most recent call last):
        ...
        TypeError: the batch's item at index 0 (member 'bob'): score must be an int ... not str; ...
        """
        with self._write_guard:
            if when not in WHENS:
                check_when(when)
            return self._set_pairs(items, when)

    def incr_many(
        self, items: Mapping[Member, Score] | Iterable[tuple[Member, Score]]
    ) -> dict[Member, Score]:
        """Increment many members in one call; all are validated first.

        A member given twice gets both increments.  If any increment would
        produce NaN, nothing changes.

        Runtime complexity: O(k log N) (Redis: one atomic script, one round
        trip, three on the exact path; sharded: one read and one write per
        shard)

        :return: each member's new score.

        >>> from rankengine import Leaderboard
        >>> board = Leaderboard()
        >>> board.incr_many([("ann", 3), ("bob", 5), ("ann", 4)])
        {'ann': 7, 'bob': 5}
        """
        with self._write_guard:
            return self._incr_pairs(items)

    def remove(self, member: Member) -> bool:
        """Remove a member and its metadata.

        Runtime complexity: O(log N) (Redis: one round trip)

        :return: True if it was present.

        >>> from rankengine import Leaderboard
        >>> board = Leaderboard()
        >>> board.set("ann", 1)
        True
        >>> board.remove("ann"), board.remove("ann"), len(board)
        (True, False, 0)
        """
        with self._write_guard:
            return self._remove_member(self._check_member(member))

    def remove_many(self, members: Iterable[Member]) -> int:
        """Remove several members in one call; return how many were present.

        All are checked before any is removed; a member given twice counts
        once.  A bare ``str`` is refused, not read as a list of one-letter
        members.

        Runtime complexity: O(k log N) (Redis: one round trip; sharded: one
        call per shard touched)

        >>> from rankengine import Leaderboard
        >>> board = Leaderboard()
        >>> board.set_many({"ann": 1, "bob": 2})
        2
        >>> board.remove_many(["ann", "zed", "ann"]), board.items()
        (1, [('bob', 2)])
        """
        wanted = member_list(members)
        with self._write_guard:
            return self._remove_members(check_members(self._check_member, wanted))

    def set_meta(self, member: Member, meta: Mapping[str, Any] | None) -> None:
        """Replace (or with ``None`` remove) a present member's metadata;
        ``KeyError`` when the member is absent.

        Runtime complexity: O(size of meta) (Redis: one round trip)

        >>> from rankengine import Leaderboard
        >>> board = Leaderboard()
        >>> board.set("ann", 1, meta={"name": "Ann"})
        True
        >>> board.meta("ann")
        {'name': 'Ann'}
        """
        with self._write_guard:
            member = self._check_member(member)
            clean = None if meta is None else check_meta(meta)
            self._set_meta_checked(member, clean)

    def clear(self) -> None:
        """Remove every member (and all metadata).

        The log (if any) records one removal per member, but the board drops
        its state at once: the index is emptied, not searched for each member.
        The logical clock keeps its value.

        Runtime complexity: O(N) (Redis: one round trip)

        >>> from rankengine import Leaderboard
        >>> board = Leaderboard()
        >>> board.set_many({"ann": 1, "bob": 2})
        2
        >>> board.clear(), len(board), board.clock
        (None, 0, 2)
        """
        with self._write_guard:
            self._clear_all()

    # ------------------------------------------------------------------
    # What each kind supplies: its member check and the primitives (see
    # WRITE_PRIMITIVES); each returns what its public method returns
    # ------------------------------------------------------------------
    def _check_member(self, member: object) -> Member:
        raise NotImplementedError

    def _set_checked(
        self, member: Member, score: Score, when: When | None, meta: dict[str, Any] | None
    ) -> bool:
        raise NotImplementedError

    def _incr_checked(self, member: Member, delta: Score, when: When | None) -> Score | None:
        raise NotImplementedError

    def _set_pairs(
        self, items: Mapping[Member, Score] | Iterable[tuple[Member, Score]], when: When | None
    ) -> int:
        raise NotImplementedError

    def _incr_pairs(
        self, items: Mapping[Member, Score] | Iterable[tuple[Member, Score]]
    ) -> dict[Member, Score]:
        raise NotImplementedError

    def _remove_member(self, member: Member) -> bool:
        raise NotImplementedError

    def _remove_members(self, members: list[Any]) -> int:
        raise NotImplementedError

    def _set_meta_checked(self, member: Member, meta: dict[str, Any] | None) -> None:
        raise NotImplementedError

    def _clear_all(self) -> None:
        raise NotImplementedError
