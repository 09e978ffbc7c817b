"""Whole-state moves of an exact board: snapshot export and restore, copies,
and the bulk rebuild of the index.

:class:`BulkLoad` is the part of :class:`~rankengine.board.core.BoardCore`
that moves a board's whole state at once rather than one change at a time:

* ``_export`` / ``_restore``: every member as rows, and a board rebuilt from
  them (a snapshot's rows, an archived period, a Redis board's log);
* ``_export_columns`` / ``_restore_columns``: the same as whole columns in
  ascending index order, where every step is a C-level bulk operation (what
  makes snapshot writing and recovery fast);
* ``_copy_state`` / ``_load_state``: the columns of ``copy()`` and pickling;
* ``_rebuild_with`` / ``_rebuild_index``: a batch write that touches a large
  part of the board, applied by one sort and an O(N) bulk load.

Each rebuilds the tie map with :func:`deep_ties` (only the members deep in
a run of equal scores keep their tie; see :mod:`rankengine.index.protocol`),
straight into the shards of a :class:`~rankengine.board.tiemap.TieMap`.
The state it reads and replaces is declared here and owned by ``BoardCore``.

>>> from rankengine.board.core import BoardCore
>>> core = BoardCore()
>>> core._commit([(0, "ann", 10, 1), (0, "bob", 20, 2)])
>>> [row[:3] for row in core._export()]
[('ann', 10, 1), ('bob', 20, 2)]
"""

from __future__ import annotations

import itertools
import operator
import threading
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from sortedcontainers import SortedList

from rankengine.board.changes import Change
from rankengine.board.scoring import Member, Score, ScoreCodec, check_meta
from rankengine.board.tiemap import TIE_SHARD_MASK, VACANT_SHARD, TieMap
from rankengine.index.collector import collector_paused
from rankengine.index.protocol import RUN_SCAN_LIMIT, OrderedIndex

__all__ = ["BulkLoad", "LoadedColumns", "deep_ties", "merge_rows"]

#: Snapshot export finds the rows of members with metadata one by one
#: (O(log N) each) while fewer than 1 in this many members have metadata,
#: else by one scan of the member column (O(N) at ~50 ns per member).
_META_SCAN_FACTOR: Final = 20


class LoadedColumns(NamedTuple):
    """What :meth:`BulkLoad._restore_columns` worked out from whole columns,
    kept so that a second board restored from the very same rows (views
    whose snapshots hold the same chunks, see
    :func:`rankengine.ledger.front.restored_board`) copies the maps and
    skips the order check, the list of primaries and the tie scan
    (:meth:`BulkLoad._restore_loaded`).  The columns themselves are not
    kept: holding a list of a million rows per view until an open ends
    costs fresh memory (page faults) in opens where no view matches.
    """

    #: ``(descending, tie_break, clocks negated)``: the boards (of scalar
    #: scores) whose load this fits
    settings: tuple[bool, str, bool]
    #: the tie map of the rows (:func:`deep_ties`), a copy of the first board's
    deep: TieMap
    #: the first board's member map (copied by each later board)
    by_member: dict[Any, Any]
    metas: dict[Any, dict[str, Any]]


class BulkLoad:
    """Export, restore, copy and bulk-rebuild the whole state of a board.

    A base of :class:`~rankengine.board.core.BoardCore`, not used on its own.
    """

    # The state these methods read and replace; BoardCore.__init__ sets it.
    _codec: ScoreCodec
    _desc: bool
    _first: bool
    _tie_break: str
    _index: OrderedIndex
    _primary: dict[Any, Any]
    _tie: TieMap
    _meta: dict[Any, dict[str, Any]]
    _clock: int
    _member_type: type | None
    _counts: dict[Any, int] | None
    _distinct: SortedList | None
    _top: list[Any] | None
    _lock: threading.RLock

    if TYPE_CHECKING:  # defined by BoardCore

        def _tie_of(self, member: Any) -> Any: ...
        def _ensure_dense(self) -> dict[Any, int]: ...

    def _export(self) -> Iterator[tuple[Member, Score, int, dict[str, Any] | None]]:
        """Every member as ``(member, score, clock, meta)`` in ascending index
        order (the order :meth:`_restore` bulk-loads without sorting).

        Call it under the board's lock and consume it before writing.  On a
        ``tie_break="member"`` board the clock of every member is 0.
        """
        score = self._codec.score
        first = self._tie_break == "first"
        meta = self._meta
        for primary, tie, member in self._index.iter_range(0, len(self._index)):
            clock = abs(tie) if first else 0
            yield member, score(primary), clock, meta.get(member)

    def _restore(
        self, rows: Iterable[tuple[Member, Score, int, dict[str, Any] | None]], clock: int
    ) -> None:
        """Replace the whole state with ``rows`` (as :meth:`_export` yields them)
        and set the logical clock; bulk-builds the index in O(N) when the rows
        arrive in index order (else sorts them first).  Rows are trusted: they
        come from a checksummed snapshot.
        """
        with self._lock:
            codec = self._codec
            first = self._tie_break == "first"
            desc = self._desc
            primaries: dict[Any, Any] = {}
            ties = TieMap()
            metas: dict[Any, dict[str, Any]] = {}
            index_rows: list[tuple[Any, Any, Any]] = []
            for member, value, member_clock, data in rows:
                primary = codec.primary(tuple(value) if isinstance(value, list) else value)
                tie: Any = (-member_clock if desc else member_clock) if first else member
                primaries[member] = primary
                if data is not None:
                    metas[member] = data
                index_rows.append((primary, tie, member))
            if any(_key_of_row(a) >= _key_of_row(b) for a, b in itertools.pairwise(index_rows)):
                index_rows.sort(key=_key_of_row)
            if first:
                ties = deep_ties(*_row_columns(index_rows), oldest_last=desc)
            self._primary, self._tie, self._meta = primaries, ties, metas
            self._clock = clock
            self._member_type = type(index_rows[0][2]) if index_rows else None
            self._index.build(index_rows)
            self._counts = None
            self._distinct = None
            self._top = None

    def _restore_columns(
        self,
        members: list[Any],
        scores: Sequence[Any],
        clocks: Sequence[int],
        metas: dict[Any, dict[str, Any]],
        clock: int,
        *,
        by_member: dict[Any, Any] | None = None,
        negated: bool = False,
    ) -> LoadedColumns | None:
        """Columnar :meth:`_restore`: whole columns in ascending index order.

        ``by_member`` is the ``member -> score`` map of the same rows when the
        caller has built it already (scalar boards only; it is kept as the
        board's map).  ``negated`` says the clocks come negated (a snapshot
        of a descending board stores them as its index keeps them).

        Snapshot recovery of a million members spends its time in per-row
        Python work; here every step is a C-level bulk operation (``dict(zip())``,
        ``map``, a sort of already sorted data), which is what makes recovery
        competitive with Redis's RDB load.  Scores and clocks may be ``array``
        columns (a snapshot's typed columns): they reach the index's blocks
        by memory copy.  Rows that are out of order or repeat a member fall
        back to :meth:`_restore`, which sorts.

        Returns what a board of scalar scores worked out
        (:class:`LoadedColumns`: another board of the same settings restores
        the same rows from it with :meth:`_restore_loaded`), else None (also
        when the rows took the general path).

        Runtime complexity: O(N)
        """
        with self._lock:
            codec = self._codec
            if codec.columns is None:
                primaries = scores
            else:
                primaries = [codec.primary(tuple(s)) for s in scores]
            first = self._tie_break == "first"
            ties = self._ties_column(members, clocks, negated)
            # (the list of primaries: iterating an array would make an int
            # object per entry, and the map and the order check share these)
            listed = primaries.tolist() if type(primaries) is array else primaries
            if by_member is None:
                by_member = dict(zip(members, listed, strict=True))
            # Non-decreasing primaries, checked in C: Timsort finds one run in
            # a sorted list (N - 1 comparisons, specialised for ints and
            # floats), and list equality compares pointers first.  Measured
            # at N = 1,000,000: 0.05 s, against 0.3 s for all(map(le, ...)).
            ordered = listed == sorted(listed)
            if len(by_member) != len(members) or not ordered:
                plain = map(abs, clocks) if negated else clocks
                rows = zip(members, scores, plain, (metas.get(m) for m in members), strict=True)
                self._restore(rows, clock)
                return None
            deep = deep_ties(listed, ties, members, oldest_last=self._desc) if first else TieMap()
            self._install_columns(
                by_member,
                deep,
                dict(metas),
                clock,
                primaries=primaries,
                ties=ties,
                members=members,
                listed=listed,
            )
            if codec.columns is not None:
                return None
            # (a copy of the tie map: this board's own is written to by its writes)
            return LoadedColumns(
                (self._desc, self._tie_break, negated), deep.copy(), by_member, metas
            )

    def _restore_loaded(
        self,
        loaded: LoadedColumns,
        members: list[Any],
        scores: Sequence[Any],
        clocks: Sequence[int],
        clock: int,
    ) -> bool:
        """Replace the whole state with the rows another board of the same
        settings was just restored from (its :meth:`_restore_columns`
        returned ``loaded``), given again as columns: the member map and the
        tie map are copied (a C-level copy of each hash table), and the
        order check, the list of primaries and the tie scan are not done
        again.  False, and nothing changed, when this board's settings
        differ (or the map copied is not as long as the columns).

        The caller vouches that the columns are the very same rows (a
        ledger's open: :meth:`~rankengine.durable.snapshot.Snapshot.same_rows`)
        and that the other board was not written to since (its member map
        is the one copied; the open restores every view, then replays the
        log's tail).  This board shares no mutable object with the other:
        the maps and the metadata are copies, and the index slices the
        columns into blocks of its own.

        Runtime complexity: O(N)

        >>> from rankengine.board.core import BoardCore
        >>> one, two = BoardCore(), BoardCore()
        >>> columns = (["bob", "ann"], [5, 9], [2, 1])
        >>> loaded = one._restore_columns(*columns, {}, 2)
        >>> two._restore_loaded(loaded, *columns, 2), two._export_columns()[0]
        (True, ['bob', 'ann'])
        >>> two._commit([(0, "cid", 1, 3)])
        >>> "cid" in two._primary, "cid" in one._primary
        (True, False)
        """
        with self._lock:
            negated = loaded.settings[2]
            if (
                loaded.settings != (self._desc, self._tie_break, negated)
                or self._codec.columns is not None
            ):
                return False
            by_member = loaded.by_member.copy()
            if len(by_member) != len(members):  # (not the same rows: a caller's mistake)
                return False
            ties = self._ties_column(members, clocks, negated)
            # (each board keeps metadata objects of its own)
            metas = {member: check_meta(data) for member, data in loaded.metas.items()}
            deep = loaded.deep.copy()
            self._install_columns(
                by_member, deep, metas, clock, primaries=scores, ties=ties, members=members
            )
            return True

    def _ties_column(
        self, members: list[Any], clocks: Sequence[int], negated: bool
    ) -> Sequence[Any]:
        """The index's tie column of rows with these members and clocks
        (``negated``: the clocks come negated).

        Runtime complexity: O(1), or O(N) in C when the clocks are negated
        """
        if self._tie_break != "first":
            return members
        if negated == self._desc:  # stored as the index keeps them
            return clocks
        if type(clocks) is array:
            return array(clocks.typecode, map(operator.neg, clocks))
        return list(map(operator.neg, clocks))

    def _install_columns(
        self,
        by_member: dict[Any, Any],
        deep: TieMap,
        metas: dict[Any, dict[str, Any]],
        clock: int,
        *,
        primaries: Sequence[Any],
        ties: Sequence[Any],
        members: list[Any],
        listed: Sequence[Any] | None = None,
    ) -> None:
        """Make the state these columns (checked: in order, no member
        twice) with these maps, each the board's own; ``listed``: the
        primaries as a list, if made already.

        Runtime complexity: O(N) (the index's bulk build)
        """
        self._primary = by_member
        self._tie = deep
        self._meta = metas
        self._clock = clock
        self._member_type = type(members[0]) if members else None
        build_columns = getattr(self._index, "build_columns", None)
        if build_columns is not None:
            build_columns(primaries, ties, members)
        else:
            # (the list the member map was made from, if any: its nodes and
            # the map then share one int object per score)
            if listed is None:
                listed = primaries.tolist() if type(primaries) is array else primaries
            self._index.build(zip(listed, ties, members, strict=True))
        self._counts = None
        self._distinct = None
        self._top = None

    def _export_columns(
        self,
    ) -> tuple[list[Any], Sequence[Any], Sequence[int], dict[int, dict[str, Any]]]:
        """Every member as columns ``(members, scores, clocks, metas)`` in
        ascending index order; ``metas`` maps a row number to its metadata.
        On a descending ``tie_break="first"`` board the clocks come negated,
        as the index keeps them (the snapshot writer records it).

        The columnar twin of :meth:`_export`, for snapshot writing: with an
        index that offers ``columns()`` every step is a C-level bulk copy
        (measured at N = 1,000,000 on the sortedlist backend: 0.15 s against
        0.5 s for the row generator, whose rows also need
        transposing before msgpack).  Call it under the board's lock.
        """
        columns = getattr(self._index, "columns", None)
        if columns is not None:
            primaries, ties, members = columns()
        else:
            rows = list(self._index.iter_range(0, len(self._index)))
            primaries = [row[0] for row in rows]
            ties = [row[1] for row in rows]
            members = [row[2] for row in rows]
            del rows
        # The index's ties are the clocks (negated on a descending board; the
        # snapshot writer records that, and recovery wants them so); a board
        # that breaks ties by member has all-zero clocks.
        clocks: Sequence[int] = ties if self._first else array("q", bytes(8 * len(members)))
        if self._codec.columns is None:
            scores = primaries
        else:
            scores = list(map(self._codec.score, primaries))
        meta = self._meta
        metas: dict[int, dict[str, Any]] = {}
        if len(meta) * _META_SCAN_FACTOR < len(members):
            # few members carry metadata: find each one's row in O(log N)
            position = self._index.position
            primary = self._primary
            metas = {position(primary[m], self._tie_of(m)): data for m, data in meta.items()}
        elif meta:
            metas = {i: meta[m] for i, m in enumerate(members) if m in meta}
        return members, scores, clocks, metas

    def _copy_state(self, *, copy_meta: bool) -> dict[str, Any]:
        """The whole state as columns, for ``copy()`` and pickling: members,
        scores and clocks in ascending index order (:meth:`_export_columns`),
        metadata by member, and the logical clock.  No lock, no caches.

        ``copy_meta`` deep-copies the metadata as reads do (a copy must not
        share it); a pickler copies it anyway.  :meth:`_load_state` is the
        inverse.

        Runtime complexity: O(N + size of metadata)

        >>> from rankengine.board.core import BoardCore
        >>> core = BoardCore()
        >>> core._commit([(0, "ann", 10, 1), (0, "bob", 10, 2)])
        >>> state = core._copy_state(copy_meta=True)
        >>> list(state["members"]), state["clock"]
        (['bob', 'ann'], 2)
        """
        with self._lock:
            members, scores, clocks, rows = self._export_columns()
            if copy_meta:
                metas = {members[i]: check_meta(data) for i, data in rows.items()}
            else:
                metas = {members[i]: data for i, data in rows.items()}
            return {
                "members": members,
                "scores": scores,
                "clocks": clocks,
                # as _export_columns gives them: negated on a descending
                # first-to-reach board, as its index keeps them
                "negated": self._first and self._desc,
                "metas": metas,
                "clock": self._clock,
            }

    def _load_state(self, state: dict[str, Any]) -> None:
        """Replace the whole state with one :meth:`_copy_state` returned
        (from a board with the same settings), by the columnar bulk load.

        Runtime complexity: O(N)

        >>> from rankengine.board.core import BoardCore
        >>> core = BoardCore()
        >>> core._commit([(0, "ann", 10, 1), (0, "bob", 10, 2)])
        >>> twin = BoardCore()
        >>> twin._load_state(core._copy_state(copy_meta=True))
        >>> twin._rank_of(member="ann", primary=10, style="unique"), twin.clock
        (1, 2)
        """
        self._restore_columns(
            list(state["members"]),
            state["scores"],
            state["clocks"],
            state["metas"],
            int(state["clock"]),
            negated=bool(state["negated"]),
        )

    def _rebuild_with(self, puts: list[Change]) -> None:
        """Apply many PUTs by merging them into the index's rows and
        bulk-loading it."""
        moved: dict[Any, tuple[Any, Any]] = {}  # member -> its new key
        first, desc, primary_of = self._first, self._desc, self._codec.primary
        for _, member, score, clock in puts:
            if not self._primary:  # first member of an empty board fixes the type
                self._member_type = type(member)
            primary = primary_of(score)
            self._primary[member] = primary
            moved[member] = (primary, (-clock if desc else clock) if first else member)
            self._clock = max(self._clock, clock)
        self._rebuild_index(moved)

    def _rebuild_index(self, moved: dict[Any, tuple[Any, Any]]) -> None:
        """Rebuild the index with the members of ``moved`` at their new keys
        (``member -> (primary, tie)``; the others keep theirs).

        The index's rows are already in key order, so nothing of them is
        sorted again: the moved members are dropped from the index's
        columns (C-level ``compress``), only their new rows are sorted, and
        :func:`merge_rows` puts them in place; the columns go to the
        index's ``build_columns`` (no row tuples).  An index without
        columns (the skip list) does the same with rows: they are compared
        as whole tuples, never through a key function (``(primary, tie)``
        is unique, so the member is never reached), and Timsort merges the
        two sorted runs in O(N).  Before, every row was re-keyed from the
        member map and all were sorted through a key function: measured at
        N = 1,000,000 with 5% moved (sorted list, loaded machine), 4.4-5.0 s
        of CPU, against 2.3 s now (see ``docs/performance.md``).

        Runtime complexity: O(N + k log k) for k moved members
        """
        # A bulk load: the collector would rescan the growing heap while the
        # new columns are made (measured at N = 1,000,000, 5% moved: 3.0-3.4
        # s of CPU with it, 2.3 s without), as for recovery.
        with collector_paused():
            self._rebuild_rows(moved)
        self._top = None
        if self._counts is not None:
            self._counts = None
            self._distinct = None
            self._ensure_dense()

    def _rebuild_rows(self, moved: dict[Any, tuple[Any, Any]]) -> None:
        """:meth:`_rebuild_index`'s index and tie map."""
        index = self._index
        columns = getattr(index, "columns", None)
        build_columns = getattr(index, "build_columns", None)
        if columns is not None and build_columns is not None:
            # (no row tuples: the index's columns are cut and merged as columns)
            primaries, ties, members = columns()
            if moved:
                stays = list(map(operator.not_, map(moved.__contains__, members)))
                primaries = list(itertools.compress(primaries, stays))
                ties = list(itertools.compress(ties, stays))
                members = list(itertools.compress(members, stays))
                rows = sorted((key[0], key[1], member) for member, key in moved.items())
                primaries, ties, members = merge_rows(primaries, ties, members, rows)
            build_columns(primaries, ties, members)
            if self._first:
                self._tie = deep_ties(primaries, ties, members, oldest_last=self._desc)
        else:
            rows = list(index.iter_range(0, len(index)))
            if moved:
                rows = [row for row in rows if row[2] not in moved]
                rows += sorted((key[0], key[1], member) for member, key in moved.items())
                rows.sort()
            index.build(rows)
            if self._first:
                self._tie = deep_ties(*_row_columns(rows), oldest_last=self._desc)


def deep_ties(
    primaries: Sequence[Any], ties: Sequence[Any], members: Sequence[Any], *, oldest_last: bool
) -> TieMap:
    """The tie map of a board loaded from whole columns in ascending index
    order: only the members that lie ``RUN_SCAN_LIMIT`` (K) or more entries
    from the oldest end of their run of equal primaries (the last entry of
    the run when ``oldest_last``, else the first; see :mod:`rankengine.index.protocol`).

    Row ``i`` is that deep when row ``i + K`` holds the same primary (oldest
    last), or row ``i - K`` does (oldest first).  Such a row lies in a run
    of at least K + 1 equal primaries, and any K + 1 consecutive rows hold
    two rows ``S = K // 2`` apart at multiples of S::

        rows      i ........................ i + K   (one run, K = 8)
        sampled        j=4·t ...... j + S            (S = 4: both inside)

    so a first pass compares only every S-th primary with the next one
    sampled (C-level: a slice and ``map(eq)``, a quarter of the rows), and
    only the rows around a sampled pair that matched are looked at one by
    one (rows ``j + S - K .. j`` oldest last, ``j + S .. j + K`` oldest
    first).  Columns with many long runs (more than one sampled pair in
    :data:`_FULL_SCAN_SHARE` matches) take one C-level pass over every row
    instead.  Measured at N = 1,000,000 on a snapshot's column with no long
    run: 0.013 s against 0.041 s for the full pass (min of 5, load average
    ~6).  The columns may be lists or arrays.  Any other member's tie is
    read from the index on demand (:meth:`BoardCore._find_tie`).

    Runtime complexity: O(N / S) in C, plus O(K) per sampled match (or O(N)
    in C when long runs are common)

    >>> primaries = [3] + [5] * 10
    >>> sorted(deep_ties(primaries, range(11), "xabcdefghij", oldest_last=True).items())
    [('a', 1), ('b', 2)]
    >>> sorted(deep_ties(primaries, range(11), "xabcdefghij", oldest_last=False).items())
    [('i', 9), ('j', 10)]
    """
    k, step = RUN_SCAN_LIMIT, _SAMPLE_STEP
    n = len(primaries)
    sampled = primaries[::step]
    matched = map(operator.eq, sampled, itertools.islice(sampled, 1, None))
    hits = list(itertools.compress(itertools.count(0, step), matched))
    if len(hits) * _FULL_SCAN_SHARE > len(sampled):
        return _deep_ties_scan(primaries, ties, members, oldest_last=oldest_last)
    deep = TieMap()  # (each entry straight into its shard)
    checked = 0  # rows below it were looked at for an earlier match
    offset = k if oldest_last else -k
    for j in hits:
        if oldest_last:  # (row i + K must exist)
            first, last = j + step - k, min(j, n - 1 - k)
        else:  # (row i - K must exist)
            first, last = max(j + step, k), j + k
        for i in range(max(first, checked), min(last, n - 1) + 1):
            if primaries[i] == primaries[i + offset]:
                deep[members[i]] = ties[i]
        checked = max(checked, last + 1)
    return deep


#: Rows between two primaries of :func:`deep_ties`'s sampled pass: at most
#: half of ``RUN_SCAN_LIMIT``, so that any run deep enough to matter holds
#: two sampled rows.
_SAMPLE_STEP: Final = max(1, RUN_SCAN_LIMIT // 2)
#: :func:`deep_ties` looks at the rows around each matching sampled pair in
#: Python (~K/2 rows each); past one match in this many pairs, one C-level
#: pass over every row is cheaper.
_FULL_SCAN_SHARE: Final = 4


def _deep_ties_scan(
    primaries: Sequence[Any], ties: Sequence[Any], members: Sequence[Any], *, oldest_last: bool
) -> TieMap:
    """:func:`deep_ties` by one pass over every row: the primary column
    compared with itself shifted by K (``map(eq)``), and ``compress`` picks
    the numbers of the deep rows, so ordinary members cost no Python step.

    Runtime complexity: O(N), in C

    >>> sorted(_deep_ties_scan([3] + [5] * 10, range(11), "xabcdefghij", oldest_last=True).items())
    [('a', 1), ('b', 2)]
    """
    deep = map(operator.eq, primaries, itertools.islice(primaries, RUN_SCAN_LIMIT, None))
    start = 0 if oldest_last else RUN_SCAN_LIMIT
    # The row numbers of the deep rows, then a read of each: measured at
    # N = 1,000,000 with few long runs, 0.03 s against 0.16 s for picking
    # the members and ties with compress (every tie of an array column
    # became an int object on the way).  Each entry goes straight into its
    # shard.  With every row deep (10^6 entries) that takes 0.98-1.07 s,
    # against 0.59-0.66 s for the one dict before: 256 dicts growing at
    # once cost about twice one dict's growth, whatever drives the loop
    # (maps of C calls to dict.__setitem__ measured 1.0-1.3 s).
    out = TieMap()
    shards = out.shards
    for i in itertools.compress(itertools.count(start), deep):
        member = members[i]
        shard = shards[hash(member) & TIE_SHARD_MASK]
        if shard is VACANT_SHARD:
            out[member] = ties[i]  # the slot's first entry (see tiemap)
        else:
            shard[member] = ties[i]
    return out


def merge_rows(
    primaries: Sequence[Any],
    ties: Sequence[Any],
    members: Sequence[Any],
    rows: list[tuple[Any, Any, Any]],
) -> tuple[list[Any], list[Any], list[Any]]:
    """The columns (in key order) with ``rows`` (sorted, keys not in the
    columns) put in their places: a binary search per row for where it
    goes (its primary, then its tie inside the run of that primary), and
    the stretches of the columns between two such places copied whole.
    The board's batch rebuild and the sliced export
    (:mod:`rankengine.durable.sliced`) both merge with it.

    Runtime complexity: O(N + k log N) for k rows, the O(N) part in C

    >>> merge_rows([1, 3, 3], [0, 1, 5], ["a", "b", "c"], [(0, 9, "y"), (3, 2, "x")])
    ([0, 1, 3, 3, 3], [9, 0, 1, 2, 5], ['y', 'a', 'b', 'x', 'c'])
    """
    out_p: list[Any] = []
    out_t: list[Any] = []
    out_m: list[Any] = []
    lo, n = 0, len(primaries)
    for primary, tie, member in rows:
        i = bisect_left(primaries, primary, lo)
        if i < n and primaries[i] == primary:  # inside a run: by tie
            i = bisect_left(ties, tie, i, bisect_right(primaries, primary, i))
        out_p += primaries[lo:i]
        out_t += ties[lo:i]
        out_m += members[lo:i]
        out_p.append(primary)
        out_t.append(tie)
        out_m.append(member)
        lo = i
    out_p += primaries[lo:]
    out_t += ties[lo:]
    out_m += members[lo:]
    return out_p, out_t, out_m


def _row_columns(rows: list[tuple[Any, Any, Any]]) -> tuple[list[Any], list[Any], list[Any]]:
    """``(primaries, ties, members)`` of ``(primary, tie, member)`` rows."""
    return (
        list(map(operator.itemgetter(0), rows)),
        list(map(operator.itemgetter(1), rows)),
        list(map(operator.itemgetter(2), rows)),
    )


def _key_of_row(row: tuple[Any, Any, Any]) -> tuple[Any, Any]:
    return (row[0], row[1])
