"""An ordered index on ``sortedcontainers``: the speed backend.

:class:`SortedListIndex` implements :class:`~rankengine.index.protocol.OrderedIndex`
with the *list of lists* design of ``sortedcontainers.SortedList``, taken one
step further for leaderboard keys.

Layout
------

An entry ``(primary, tie, member)`` is not stored as a tuple.  It is spread
over three parallel lists of blocks ("columns") that always have the same
shape::

    _lists    [[10, 10, 12],   [12, 15, 20],   [31, 40]]    primaries
    _ties     [[ 3,  7,  1],   [ 4,  2,  9],   [ 5,  6]]    ties
    _members  [['a','b','c'],  ['d','e','f'],  ['g','h']]   members
    _maxes    [12,             20,             40]          last primary of each block

``_lists`` and ``_maxes`` belong to a private ``sortedcontainers.SortedList``
that holds the primaries and nothing else.  It is a valid ``SortedList`` in
its own right (ties and members merely ride along), so the index reuses its
load factor and block bounds.  Only the operations that must keep the
columns in lockstep (insert, delete, split, merge, move) are written here.
Positions come from a list of block lengths and a cache of block offsets
(:mod:`rankengine.index.blockoffsets`), not from ``SortedList``'s positional
tree, which every split or merge discarded and the next look-up rebuilt
(0.4-0.8 ms at 1,000,000 entries); the tree is never built.  A split fills
an old spare list (:mod:`rankengine.index.spares`), so that the young
collections do not walk its references.

Typed columns
-------------

While every primary is an ``int`` that fits in 64 bits, the primary blocks are
``array('q')``; while every primary is a ``float``, ``array('d')``; otherwise
plain lists.  The ties column is chosen the same way (a logical clock is an
``int``; a member used as tie makes it a list).  The first value that does not
fit turns that column into lists for good (O(N), once); an emptied index
chooses again.  Values read back have the type they were stored with, since a
typed column only ever holds one type.

Why it is fast
--------------

At a million entries the cost of a look-up is memory latency, not Python
bytecode: every probe of a ``bisect`` on a list of objects loads the pointer
and then the object it points to, each a likely cache miss.

* **Unboxed keys in ``bisect``.**  A probe into an ``array`` reads the number
  in place: one cache line instead of two, and the last few probes share a
  line.  Measured at N = 1,000,000 (random lookups in 1,000 blocks of 1,000):
  a block ``bisect`` costs 1.6 µs on ``array('q')`` against 3.3 µs on a list
  of ``int`` objects; ``move`` is 1.15-1.3x faster than with list columns.
  The naive recipe is worse still: each probe compares a ``(-score, member)``
  tuple (pointer, tuple, number and, on equal scores, a string).
* **Ties only inside runs.**  Ties are compared only within a run of equal
  primaries; the first probe ``ties[i][a] == tie`` settles the common case of
  a primary held by one entry.
* **In-block move.**  A score change usually moves an entry by a few
  positions.  When the new primary still lies inside the same block (between
  the previous block's maximum and this block's maximum) the entry is moved
  within that block (``del`` + ``insert`` on each column) and nothing else is
  touched: block sizes do not change, so the block lengths and the cached
  offsets stay valid.  When it even keeps its slot (it stays between its two
  neighbours, Redis' ``zslUpdateScore`` case) the two keys are overwritten in
  place.  Measured at N = 1,000,000: ``move`` 1.8x faster than the same index
  doing ``remove`` + ``insert``.  The new slot is searched only on the side
  the entry moves to, near the old one, in lines already cached (~10% of a
  ``move``).
* **Cross-block move as one transfer.**  Otherwise the entry leaves block ``i``
  and joins block ``j``.  Unless that splits or merges a block, the block
  lengths get ``-1`` at ``i`` and ``+1`` at ``j``, and the offsets in
  between are patched instead of dropped when the blocks are near (measured
  with the positional tree of before: 10-15% of ``move``, 25% of
  ``position``).
* **Cached block offsets.**  ``position`` needs the number of entries before
  the entry's block.  A positional tree answers with a walk from leaf to root
  (~11 Python steps at 1,000 blocks); an array of block offsets answers in
  one.  In-block moves leave the offsets exact, short cross-block moves patch
  a few, splits and merges insert or delete a slot; an insert or remove keeps
  the offsets before its block exact and those after it behind a shared lag,
  so only the blocks between two such writes are recomputed, from the list of
  block lengths, when a look-up lands there (see
  :mod:`rankengine.index.blockoffsets`).
* **No per-entry objects.**  Typed columns take 8 bytes per value, lists 8
  bytes per pointer (the objects are shared with the board's own map); no
  tuple per entry.  Measured at N = 1,000,000: 25 bytes per entry for the
  index (member strings not counted), against 104 for the naive recipe's
  ``SortedList`` with its ``(-score, member)`` tuples and negated scores.
* **Bulk load.**  :meth:`SortedListIndex.build` cuts the sorted entries
  into runs and turns each run into one block per column at C speed, with no
  comparison: 0.8 s for 1,000,000 entries, against 2.1-2.7 s for the naive
  recipe's ``SortedList`` constructor.

Measured against the naive recipe
---------------------------------

``dict`` plus ``SortedList`` of ``(-score, member)``, where an increment is
``remove`` + ``add``; scores uniform in ``0 .. N``, increments of 1..100,
ties from a clock; index alone with a minimal member map (no board), default
load; microseconds per operation, naive / index, best of three runs on a
loaded 2-core VM, so ratios matter more than times::

                       N = 100,000            N = 1,000,000
    move               8.3 / 4.9 = 1.7x       14.1 / 7.4 = 1.9x
    position           4.3 / 2.0 = 2.2x        8.1 / 3.3 = 2.5x
    iter_range (10)    1.6 / 2.4 = 0.7x        1.8 / 2.5 = 0.7x
    insert             4.6 / 3.5 = 1.3x        8.1 / 6.5 = 1.2x
    remove             4.3 / 2.9 = 1.5x        8.2 / 5.1 = 1.6x
    mixed 80/10/10     7.9 / 4.3 = 1.9x       15.2 / 6.0 = 2.5x

``iter_range`` loses: the naive ``islice`` hands out tuples it already has,
while the index builds each ``(primary, tie, member)`` (and, from a typed
column, each number).  With 100 members per score the move runs cross
blocks and the ratio drops to about 1.4x.

Invariants (verified by :meth:`SortedListIndex._check`)::

    keys (primary, tie) strictly increase, within and across blocks
    _maxes[i] == _lists[i][-1]
    the three columns have the same shape
    every block of a column has the column's type (array code or list)
    no block is empty; no block is longer than 2 * load; when there is more
    than one block, none is shorter than load // 2
    the block lengths and offsets agree with the blocks (see
    rankengine.index.blockoffsets); the positional tree is never built
    the spare lists are empty and none is a block
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain, pairwise
from operator import itemgetter
from typing import Any, Final, TypeAlias

from sortedcontainers import SortedList  # type: ignore[import-untyped, unused-ignore]

from rankengine.index.blockoffsets import BlockOffsets, PrimaryList
from rankengine.index.protocol import RUN_SCAN_LIMIT, DuplicateKeyError, Entry3
from rankengine.index.spares import SpareLists

__all__ = ["DEFAULT_LOAD", "MIN_LOAD", "SortedListIndex"]

#: Target block length.  Blocks hold between ``load // 2`` and ``2 * load``
#: entries.  A larger block keeps more moves inside one block; a smaller one
#: makes each ``insert``/``del`` (a memmove of the block's tail, three columns)
#: cheaper.  Measured at N = 1,000,000, increments of 1..100: ``move`` 7.4 µs
#: at 500 against 8.1 µs at 1000 (uniform scores) and 11.4-12.6 against 13.5
#: (100 members per score); 250 and 2000 were no better; the mixed workload
#: and look-ups were level from 500 to 2000.  (sortedcontainers' default,
#: 1000, suits a list of objects, where a block move is a pointer memmove
#: too but the bisect costs more per probe.)
DEFAULT_LOAD: Final = 500

#: The smallest accepted load: a block must keep at least two entries after a
#: removal (``sortedcontainers`` itself asserts ``load >= 4``).
MIN_LOAD: Final = 4

#: The range of ``array('q')``: ints outside it turn the column into lists.
_INT64_MIN: Final = -(1 << 63)
_INT64_MAX: Final = (1 << 63) - 1

#: Array type code per column kind; a kind missing here means plain lists.
_TYPECODES: Final[dict[type, str]] = {int: "q", float: "d"}
_KIND_OF_TYPECODE: Final[dict[str, type]] = {"q": int, "d": float}


#: How many characters of internal state an assertion message shows.
_DUMP_LIMIT: Final = 2000

#: One block of one column: a typed array or a list.
Column: TypeAlias = "array[Any] | list[Any]"

_first = itemgetter(0)
_second = itemgetter(1)
_third = itemgetter(2)
_last = itemgetter(-1)


def _kind_of(value: Any) -> type:
    """The column kind for a first value: ``int``, ``float`` or ``object`` (lists)."""
    kind = type(value)
    if kind is int:
        return int if _INT64_MIN <= value <= _INT64_MAX else object
    return float if kind is float else object


def _append_block(column: list[Column], kind: type | None, values: Column) -> type:
    """Append ``values`` to ``column`` as a new block; return the column's kind.

    ``kind`` is the kind of the blocks already there (None: no block yet).  A
    value that does not fit turns the whole column into lists.
    """
    if type(values) is array:  # a typed column's slice: its kind is its typecode
        own = _KIND_OF_TYPECODE.get(values.typecode)
        if own is not None and (kind is None or kind is own):
            column.append(values)
            return own
        values = values.tolist()
    types = set(map(type, values))
    if kind is None:
        kind = next(iter(types)) if len(types) == 1 and types <= {int, float} else object
    elif kind is not object and types != {kind}:
        kind = object
        column[:] = [list(block) for block in column]
    if kind is object:
        column.append(values)
        return kind
    try:
        column.append(array(_TYPECODES[kind], values))
    except OverflowError:  # an int beyond int64
        column[:] = [list(block) for block in column]
        column.append(values)
        return object
    return kind


def _empty_column(kind: type | None) -> Column:
    """An empty whole column of ``kind``: an ``array`` for typed kinds (blocks
    are then appended by memory copy), else a list."""
    code = _TYPECODES.get(kind) if kind is not None else None
    return [] if code is None else array(code)


def _fits(value: Any, kind: Any) -> bool:
    """Can a column of ``kind`` hold ``value``?  (Mirrors the inline tests.)"""
    if kind is object:
        return True
    return type(value) is kind and (kind is not int or _INT64_MIN <= value <= _INT64_MAX)


def _block(kind: type | None, values: Iterable[Any]) -> Column:
    """A new block of a column of ``kind`` holding ``values``."""
    code = _TYPECODES.get(kind) if kind is not None else None
    return list(values) if code is None else array(code, values)


class SortedListIndex(BlockOffsets):
    """An :class:`~rankengine.index.protocol.OrderedIndex` on a list of blocks.

    Entries ``(primary, tie, member)`` are kept in ascending order of the key
    ``(primary, tie)``; keys are unique.  See the module documentation for
    the layout and why it is fast.

    >>> index = SortedListIndex()
    >>> index.insert(30, 1, "ann")
    >>> index.insert(10, 2, "bob")
    >>> index.insert(30, 0, "cid")
    >>> list(index.iter_range(0, len(index)))
    [(10, 2, 'bob'), (30, 0, 'cid'), (30, 1, 'ann')]
    >>> index.move(10, 2, 40, 2)
    >>> index.position(40, 2)
    2

    :param load: target block length (a small value such as 4 forces splits
        and merges in tests)
    """

    __slots__ = (
        "_half",
        "_index",
        "_lists",
        "_load",
        "_maxes",
        "_members",
        "_ptype",
        "_sl",
        "_spares",
        "_ties",
        "_ttype",
        "oldest_last",
    )

    def __init__(self, *, load: int = DEFAULT_LOAD) -> None:
        if load < MIN_LOAD:
            raise ValueError(f"load must be >= {MIN_LOAD}, got {load}")
        sl: PrimaryList = SortedList()
        sl._load = load
        self._sl = sl
        # Aliases of the SortedList's own lists (always mutated in place, by
        # it and by us): one attribute look-up instead of two on hot paths.
        self._lists = sl._lists
        self._maxes = sl._maxes
        self._index = sl._index
        self._ties: list[Column] = []
        self._members: list[list[Any]] = []
        # Column kinds: int / float (typed arrays), object (lists), or None
        # while the index is empty and no kind has been chosen.
        self._ptype: type | None = None
        self._ttype: type | None = None
        self._init_offsets()
        self._spares = SpareLists()
        self._load = load
        self._half = load >> 1
        #: Which end of a run of equal primaries is the oldest (see
        #: :mod:`rankengine.index.protocol`): True for the last entry, False for the
        #: first, None (the default) when no one asks; ``insert`` and
        #: ``move`` then return None.
        self.oldest_last: bool | None = None

    def __len__(self) -> int:
        """Number of entries.

        Runtime complexity: O(1)

        >>> len(SortedListIndex())
        0
        """
        return self._sl._len

    def __repr__(self) -> str:
        return f"{type(self).__name__}(len={len(self)}, blocks={len(self._lists)})"

    # ------------------------------------------------------------------
    # Column kinds
    # ------------------------------------------------------------------

    def _admit(self, primary: Any, tie: Any) -> None:
        """Make the columns able to store ``primary`` and ``tie``.

        An empty index chooses each column's kind from these values; a typed
        column that cannot hold its value becomes lists, once and for all.

        Runtime complexity: O(1), or O(N) when a column turns into lists.
        """
        if not self._lists:
            self._ptype = self._ttype = None
        if self._ptype is None:
            self._ptype = _kind_of(primary)
            self._set_maxes(_block(self._ptype, ()))
        elif not _fits(primary, self._ptype):
            self._lists[:] = [list(block) for block in self._lists]
            self._ptype = object
            self._set_maxes(list(self._maxes))
        if self._ttype is None:
            self._ttype = _kind_of(tie)
        elif not _fits(tie, self._ttype):
            self._ties[:] = [list(block) for block in self._ties]
            self._ttype = object

    def _set_maxes(self, maxes: Column) -> None:
        """Replace ``_maxes`` (it has the primary column's kind), here and in the SortedList."""
        self._sl._maxes = self._maxes = maxes

    # ------------------------------------------------------------------
    # Locating keys
    # ------------------------------------------------------------------

    def _tied_block(self, i: int, primary: Any, tie: Any) -> int:
        """Block for a key whose primary equals ``_maxes[i]``.

        A run of equal primaries may span several blocks, so the primary alone
        cannot choose one.  The blocks ``i .. j-1`` all end with ``primary``;
        their last ties ascend, so bisect them by tie::

            _maxes     ...   7 |  7  |  7  |  9 ...
            last tie   ...   2 |  5  |  8  |  . ...
                             i             j
            tie 6 -> the block whose last tie is 8 (the first that is >= 6)

        The result may be ``j``: the key sorts after the whole run in blocks
        ``i .. j-1`` and belongs at the start of block ``j``, which can hold
        the rest of the run.  ``j == len(_maxes)`` means "after every entry".
        """
        j = bisect_right(self._maxes, primary, i)
        return bisect_left(self._ties, tie, i, j, key=_last)

    def _block_for(self, primary: Any, tie: Any) -> int:
        """First block whose last key is >= ``(primary, tie)``, or the block count."""
        maxes = self._maxes
        i = bisect_left(maxes, primary)
        if i < len(maxes) and maxes[i] == primary:
            i = self._tied_block(i, primary, tie)
        return i

    def _locate(self, primary: Any, tie: Any) -> tuple[int, int]:
        """``(block, offset)`` of the present key, or ``KeyError``."""
        maxes = self._maxes
        i = bisect_left(maxes, primary)
        try:
            if maxes[i] == primary:
                i = self._tied_block(i, primary, tie)
            ps = self._lists[i]
        except IndexError:
            raise KeyError((primary, tie)) from None
        ts = self._ties[i]
        # ps[-1] >= primary, so ``a`` is a valid offset: the first entry whose
        # primary is >= ``primary``.  Usually it already is the key.
        a = bisect_left(ps, primary)
        if ts[a] != tie or ps[a] != primary:
            hi = bisect_right(ps, primary, a)
            a = bisect_left(ts, tie, a, hi)
            if a == hi or ts[a] != tie:
                raise KeyError((primary, tie))
        return i, a

    def _offset_in(self, i: int, primary: Any, tie: Any) -> int:
        """Insertion offset of ``(primary, tie)`` in block ``i`` (``bisect_left``)."""
        ps = self._lists[i]
        a = bisect_left(ps, primary)
        if a < len(ps) and ps[a] == primary:
            a = bisect_left(self._ties[i], tie, a, bisect_right(ps, primary, a))
        return a

    def _split(self, i: int) -> None:
        """Cut block ``i`` (longer than ``2 * load``) in two halves.

        The second half of a list column (members, and a column that holds
        objects) goes into an old spare list, not a new one (see
        :mod:`rankengine.index.spares`): the young collections then have no
        hundreds of references to walk.  Array blocks are no containers.
        """
        lists, ties, members = self._lists, self._ties, self._members
        ps, ts, ms = lists[i], ties[i], members[i]
        half = len(ps) >> 1
        blocks = len(lists) + 1
        take = self._spares.take
        lists.insert(i + 1, take(ps, half, blocks) if type(ps) is list else ps[half:])
        ties.insert(i + 1, take(ts, half, blocks) if type(ts) is list else ts[half:])
        members.insert(i + 1, take(ms, half, blocks))
        del ps[half:], ts[half:], ms[half:]
        self._maxes[i] = ps[-1]
        self._maxes.insert(i + 1, lists[i + 1][-1])
        self._split_offsets(i, half)

    def _merge(self, i: int) -> None:
        """Join block ``i`` (down to ``load // 2``) with a neighbour.

        Its emptied list blocks go back to the spares (old, used first).
        """
        if not i:
            i = 1
        prev = i - 1
        lists, ties, members = self._lists, self._ties, self._members
        # Arrays of one column share a type code, so they extend each other.
        lists[prev].extend(lists[i])
        ties[prev].extend(ties[i])
        members[prev].extend(members[i])
        blocks = len(lists) - 1
        give = self._spares.give
        for column in (lists, ties, members):
            block = column.pop(i)
            if type(block) is list:
                give(block, blocks)
        self._maxes[prev] = lists[prev][-1]
        del self._maxes[i]
        self._merge_offsets(i)
        if len(lists[prev]) > self._load << 1:
            self._split(prev)

    def _delete(self, i: int, a: int) -> None:
        """Remove the entry at ``(i, a)`` and rebalance."""
        ps = self._lists[i]
        del ps[a]
        del self._ties[i][a]
        del self._members[i][a]
        self._sl._len -= 1
        if len(ps) > self._half:
            self._maxes[i] = ps[-1]
            self._resized(i, -1)
        elif len(self._lists) > 1:
            self._resized(i, -1)
            self._merge(i)
        elif ps:
            self._maxes[0] = ps[-1]
            self._resized(0, -1)
        else:
            self.clear()

    def _near(self, i: int, b: int, primary: Any) -> bool | None:
        """Does the entry at ``(i, b)`` lie fewer than ``RUN_SCAN_LIMIT``
        entries from the oldest end of its run of ``primary``?

        One look at the entry ``RUN_SCAN_LIMIT`` slots towards the oldest end
        (K = ``RUN_SCAN_LIMIT``; oldest last, a descending board)::

            ps   ... 7  7  7  9  9 ...        b: the entry, c = b + K
                     b        c               ps[c] != 7: fewer than K entries
                                              of the run follow b, so it is near

        When slot ``c`` lies in the next (or, oldest first, the previous)
        block, that block's slot is read instead, unless the run ends in
        this block; when it lies beyond that block too, the answer is a
        conservative False.  None while :attr:`oldest_last` is None.

        Runtime complexity: O(1)

        >>> index = SortedListIndex()
        >>> index.oldest_last = True
        >>> index.build([(5, k, str(k)) for k in range(10)] + [(6, 0, "x")])
        >>> index._near(0, 1, 5), index._near(0, 2, 5), index._near(0, 10, 6)
        (False, True, True)
        """
        last = self.oldest_last
        if last is None:
            return None
        lists = self._lists
        ps = lists[i]
        near: bool
        if last:
            c = b + RUN_SCAN_LIMIT
            if c < len(ps):
                near = ps[c] != primary
            elif ps[-1] != primary or i + 1 == len(lists):
                near = True  # the run ends in this block
            else:
                c -= len(ps)
                ps = lists[i + 1]
                near = c < len(ps) and ps[c] != primary
            return near
        c = b - RUN_SCAN_LIMIT
        if c >= 0:
            near = ps[c] != primary
        elif ps[0] != primary or not i:
            near = True  # the run starts in this block
        else:
            ps = lists[i - 1]
            c += len(ps)
            near = c >= 0 and ps[c] != primary
        return near

    # ------------------------------------------------------------------
    # Mutation
    # ------------------------------------------------------------------

    def insert(self, primary: Any, tie: Any, member: Any) -> bool | None:
        """Add an entry.

        The key ``(primary, tie)`` must not be present.  Returns whether
        the entry lies near the oldest end of its run (see :meth:`_near`),
        or None while :attr:`oldest_last` is None.

        Runtime complexity: O(log N)

        >>> index = SortedListIndex()
        >>> index.insert(5, "b", "b")
        >>> index.insert(5, "a", "a")
        >>> index.entry(0)
        (5, 'a', 'a')

        :param primary: the score part of the key
        :param tie: the tie-break part of the key
        :param member: the payload stored with the key
        :raises DuplicateKeyError: if the key is already present (a ``KeyError``)
        """
        if not (_fits(primary, self._ptype) and _fits(tie, self._ttype)):
            self._admit(primary, tie)
        maxes = self._maxes
        if not maxes:
            self._lists.append(_block(self._ptype, (primary,)))
            self._ties.append(_block(self._ttype, (tie,)))
            self._members.append([member])
            maxes.append(primary)
            self._sl._len = 1
            self._first_block()
            return None if self.oldest_last is None else True
        i = bisect_left(maxes, primary)
        if i == len(maxes):
            i -= 1
        elif maxes[i] == primary:
            i = self._tied_block(i, primary, tie)
            if i == len(maxes):
                i -= 1
        ps = self._lists[i]
        ts = self._ties[i]
        a = bisect_left(ps, primary)
        if a < len(ps) and ps[a] == primary and not tie < ts[a]:  # (a newest tie: first, as in
            hi = bisect_right(ps, primary, a)  # _move_at, or last in its run: one comparison)
            a = hi if ts[hi - 1] < tie else bisect_left(ts, tie, a, hi)
            if a < hi and ts[a] == tie:
                raise DuplicateKeyError(f"key {(primary, tie)!r} is already present")
        ps.insert(a, primary)
        ts.insert(a, tie)
        self._members[i].insert(a, member)
        self._sl._len += 1
        maxes[i] = ps[-1]
        near = self._near(i, a, primary)
        self._resized(i, 1)
        if len(ps) > self._load << 1:
            self._split(i)
        return near

    def remove(self, primary: Any, tie: Any) -> None:
        """Remove the entry with this key.

        Runtime complexity: O(log N)

        >>> index = SortedListIndex()
        >>> index.build([(1, 0, "a"), (2, 0, "b")])
        >>> index.remove(1, 0)
        >>> list(index.iter_range(0, len(index)))
        [(2, 0, 'b')]

        :raises KeyError: if the key is not present
        """
        i, a = self._locate(primary, tie)
        self._delete(i, a)

    def move(self, primary: Any, tie: Any, new_primary: Any, new_tie: Any) -> bool | None:
        """Re-key an entry (a score change), keeping its member.

        The old key must be present and the new key absent.  This is the hot
        path of a leaderboard: ``ZINCRBY``.  Returns whether the entry now
        lies near the oldest end of its run, as :meth:`insert` does.  Three
        cases, cheapest first:

        1. The new key keeps the entry between its neighbours: the two keys
           are overwritten in place (Redis' ``zslUpdateScore``).
        2. The new key stays inside the same block: the entry is moved within
           that block.  Block sizes do not change, so ``_maxes`` is the only
           bookkeeping and the block lengths and offsets are not touched.
        3. Otherwise the entry leaves its block for another one; the block
           lengths and offsets are updated by one transfer unless a block
           splits or merges.

        Runtime complexity: O(log N)

        >>> index = SortedListIndex()
        >>> index.build([(1, 0, "a"), (2, 0, "b"), (3, 0, "c")])
        >>> index.move(1, 0, 2.5, 0)
        >>> [m for _, _, m in index.iter_range(0, 3)]
        ['b', 'a', 'c']

        :raises KeyError: if the old key is absent
        :raises DuplicateKeyError: if the new key is present (a ``KeyError``)
        """
        maxes = self._maxes
        i = bisect_left(maxes, primary)
        try:
            if maxes[i] == primary:
                i = self._tied_block(i, primary, tie)
            ps = self._lists[i]
        except IndexError:
            raise KeyError((primary, tie)) from None
        ts = self._ties[i]
        a = bisect_left(ps, primary)
        if ts[a] != tie or ps[a] != primary:
            hi = bisect_right(ps, primary, a)
            a = bisect_left(ts, tie, a, hi)
            if a == hi or ts[a] != tie:
                raise KeyError((primary, tie))
        return self._move_at(i, a, new_primary, new_tie)

    def move_member(self, primary: Any, member: Any, new_primary: Any, new_tie: Any) -> bool | None:
        """:meth:`move` for an entry known by its primary and member, not its
        tie: the entry is found as :meth:`tie_of` finds it, from the oldest
        end of its run (for a board that did not keep the member's tie).

        Runtime complexity: O(log N) plus the entries scanned past

        >>> index = SortedListIndex()
        >>> index.oldest_last = True
        >>> index.build([(1, 0, "a"), (2, -7, "b"), (2, -3, "c")])
        >>> index.move_member(2, "c", 5, -8)
        True
        >>> list(index.iter_range(0, 3))
        [(1, 0, 'a'), (2, -7, 'b'), (5, -8, 'c')]

        :raises KeyError: if no entry with ``primary`` holds ``member``
        :raises DuplicateKeyError: if the new key is present (a ``KeyError``)
        """
        # _find's first probe inlined, as in position_of: a call less on the
        # hot path of an increment.
        maxes = self._maxes
        if self.oldest_last:
            i = bisect_right(maxes, primary)
            if i < len(maxes):
                ps = self._lists[i]
                a = bisect_right(ps, primary) - 1
                if a >= 0 and ps[a] == primary and self._members[i][a] == member:
                    return self._move_at(i, a, new_primary, new_tie)
        else:
            i = bisect_left(maxes, primary)
            if i < len(maxes):
                ps = self._lists[i]
                a = bisect_left(ps, primary)
                if ps[a] == primary and self._members[i][a] == member:
                    return self._move_at(i, a, new_primary, new_tie)
        i, a, _ = self._find(primary, member)
        return self._move_at(i, a, new_primary, new_tie)

    def _move_at(self, i: int, a: int, new_primary: Any, new_tie: Any) -> bool | None:
        """The body of :meth:`move` once the entry is found at ``(i, a)``.

        Runtime complexity: O(log N)
        """
        # The new values must fit the column kinds.  This is _fits() inlined
        # (two calls would cost more than the tests): a typed column needs
        # the value's type to be its own, an int64 column the value in range.
        # (A column that turns into lists keeps its blocks' shapes, so
        # ``(i, a)`` still names the entry.)
        pkind: Any = self._ptype
        tkind: Any = self._ttype
        if (
            (type(new_primary) is not pkind and pkind is not object)
            or (pkind is int and not _INT64_MIN <= new_primary <= _INT64_MAX)
            or (type(new_tie) is not tkind and tkind is not object)
            or (tkind is int and not _INT64_MIN <= new_tie <= _INT64_MAX)
        ):
            self._admit(new_primary, new_tie)
        maxes = self._maxes
        ps = self._lists[i]
        ts = self._ties[i]
        primary = ps[a]
        # Fast test for "same block": primaries strictly inside the block's
        # range.  Two number comparisons instead of a bisect over _maxes;
        # equal primaries (ties) take the general test.
        if new_primary < maxes[i] and (not i or maxes[i - 1] < new_primary):
            j = i
        else:
            j = self._block_for(new_primary, new_tie)
            if j == len(maxes):
                j -= 1
        if j == i:
            # Search only the side of ``a`` the primary moves to: fewer
            # probes, all near ``a`` and so already in cache.
            if primary < new_primary:
                b = bisect_left(ps, new_primary, a + 1)
            elif new_primary < primary:
                b = bisect_left(ps, new_primary, 0, a)
            else:
                b = bisect_left(ps, new_primary)
            # Landing on a run of equal primaries: place by tie.  A clock tie
            # makes the moved entry the newest, so it usually goes first in
            # the run (descending board, tie = -clock) or last (ascending,
            # tie = clock); one comparison each saves the tie bisect.
            if b < len(ps) and ps[b] == new_primary and not new_tie < ts[b]:
                hi = bisect_right(ps, new_primary, b)
                if ts[hi - 1] < new_tie:
                    b = hi
                else:
                    b = bisect_left(ts, new_tie, b, hi)
                    if ts[b] == new_tie:
                        if b == a:
                            # The new key equals the old one (5 and 5.0, 0
                            # and -0.0): the entry keeps its place and takes
                            # the new values, as every backend does.
                            ps[a] = new_primary
                            ts[a] = new_tie
                            maxes[i] = ps[-1]
                            return self._near(i, a, new_primary)
                        key = (new_primary, new_tie)
                        raise DuplicateKeyError(f"key {key!r} is already present")
            # ``b`` is the slot with the entry still at ``a``.
            if a <= b <= a + 1:
                # Case 1: still between its neighbours.
                ps[a] = new_primary
                ts[a] = new_tie
                b = a
            else:
                if b > a:
                    # Case 2 up: the entries a+1 .. b-1 slide down one slot.
                    b -= 1
                # Case 2: one delete and one insert per column (memmove).
                # Measured against sliding only the run between ``a`` and
                # ``b`` with slice assignment: no slower on the typed columns,
                # and 20% faster on the member list, where a slice copy updates
                # the reference count of every member in the run (a cache miss
                # each).
                del ps[a]
                ps.insert(b, new_primary)
                del ts[a]
                ts.insert(b, new_tie)
                ms = self._members[i]
                ms.insert(b, ms.pop(a))
            maxes[i] = ps[-1]
            # _near's common case inlined (the slot it reads is in this block):
            # a call less on the hot path.
            last = self.oldest_last
            if last is not None:
                c = b + RUN_SCAN_LIMIT if last else b - RUN_SCAN_LIMIT
                if 0 <= c < len(ps):
                    near: bool = ps[c] != new_primary
                    return near
            return self._near(i, b, new_primary)
        # Case 3: another block.
        qs = self._lists[j]
        qt = self._ties[j]
        b = bisect_left(qs, new_primary)
        if b < len(qs) and qs[b] == new_primary and not new_tie < qt[b]:
            hi = bisect_right(qs, new_primary, b)
            b = bisect_left(qt, new_tie, b, hi)
            if b < hi and qt[b] == new_tie:
                raise DuplicateKeyError(f"key {(new_primary, new_tie)!r} is already present")
        del ps[a]
        del ts[a]
        qs.insert(b, new_primary)
        qt.insert(b, new_tie)
        self._members[j].insert(b, self._members[i].pop(a))
        maxes[i] = ps[-1]  # more than one block, so ``ps`` keeps >= 2 entries
        maxes[j] = qs[-1]
        landed = self._near(j, b, new_primary)  # before a split or merge renumbers blocks
        double = self._load << 1
        self._transfer(i, j)
        if len(qs) > double:
            self._split(j)
            if i > j:
                i += 1
        if len(ps) <= self._half:
            self._merge(i)
        return landed

    def clear(self) -> None:
        """Remove every entry.

        Runtime complexity: O(N)

        >>> index = SortedListIndex()
        >>> index.insert(1, 1, "a")
        >>> index.clear()
        >>> len(index)
        0
        """
        self._sl.clear()
        del self._ties[:]
        del self._members[:]
        self._ptype = self._ttype = None
        self._clear_offsets()

    def build(self, entries: Iterable[Entry3]) -> None:
        """Replace the contents with ``entries``, already sorted by unique key.

        Bulk load for snapshot recovery: the entries are cut into runs of
        nearly equal length (between ``load // 2`` and ``load``), and each run
        becomes one block of each column (``map(itemgetter(k), run)``).  No
        key is compared, so the order is trusted; :meth:`_check` verifies it.

        Measured at N = 1,000,000: 0.75 s.  Transposing everything at once
        with ``zip(*entries)`` took 2.9 s: it keeps N tuple iterators alive,
        reads memory out of order and sets off full garbage collections.

        Runtime complexity: O(N)

        >>> index = SortedListIndex(load=4)
        >>> index.build((k, 0, str(k)) for k in range(10))
        >>> [len(block) for block in index._lists]
        [3, 3, 4]
        >>> index.entry(7)
        (7, 0, '7')

        :param entries: ``(primary, tie, member)`` triples in ascending key order
        :raises ValueError: if a row is not a triple; the index is then left
            empty (so it is if reading ``entries`` raises)
        """
        # Read the entries before clearing: they may be this index's own,
        # read lazily (``build(index.iter_range(...))``).  An input that
        # raises leaves the index empty, as a ragged row does (and as the
        # skip list does: one rule for every backend).
        try:
            rows = entries if isinstance(entries, Sequence) else list(entries)
        finally:
            self.clear()
        n = len(rows)
        if not n:
            return
        lists = self._lists
        ties = self._ties
        pkind: type | None = None
        tkind: type | None = None
        blocks = -(-n // self._load)
        for lo, hi in pairwise([k * n // blocks for k in range(blocks + 1)]):
            run = rows[lo:hi]
            if set(map(len, run)) != {3}:
                self.clear()
                raise ValueError("entries must be (primary, tie, member) triples")
            pkind = _append_block(lists, pkind, list(map(_first, run)))
            tkind = _append_block(ties, tkind, list(map(_second, run)))
            self._members.append(list(map(_third, run)))
        self._ptype = pkind
        self._ttype = tkind
        self._set_maxes(_block(pkind, [block[-1] for block in lists]))
        self._sl._len = n
        self._reset_offsets()
        self._spares.stock(len(lists))

    def build_columns(self, primaries: Column, ties: Column, members: list[Any]) -> None:
        """:meth:`build` from three whole columns of equal length (no triples).

        Snapshot recovery has its rows as columns already; slicing each column
        into blocks skips a million tuples and three million ``itemgetter``
        calls (measured at N = 1,000,000: 0.16-0.26 s instead of 0.67-0.85 s for
        ``build(zip(...))``).  ``array`` columns (a snapshot's typed columns)
        are sliced into blocks by memory copy, with no type pass.

        Runtime complexity: O(N)

        >>> index = SortedListIndex(load=4)
        >>> index.build_columns([1, 2, 3, 4, 5], [0, 0, 0, 0, 0], list("abcde"))
        >>> [len(block) for block in index._lists], index.entry(3)
        ([2, 3], (4, 0, 'd'))

        :param primaries: the primaries in ascending key order
        :param ties: the ties, row by row
        :param members: the members, row by row
        """
        n = len(primaries)
        if len(ties) != n or len(members) != n:
            raise ValueError("columns differ in length")
        self.clear()
        if not n:
            return
        lists = self._lists
        ties_column = self._ties
        pkind: type | None = None
        tkind: type | None = None
        blocks = -(-n // self._load)
        for lo, hi in pairwise([k * n // blocks for k in range(blocks + 1)]):
            pkind = _append_block(lists, pkind, primaries[lo:hi])
            tkind = _append_block(ties_column, tkind, ties[lo:hi])
            self._members.append(members[lo:hi])
        self._ptype = pkind
        self._ttype = tkind
        self._set_maxes(_block(pkind, [block[-1] for block in lists]))
        self._sl._len = n
        self._reset_offsets()
        self._spares.stock(len(lists))

    def tie_of(self, primary: Any, member: Any) -> tuple[Any, int]:
        """``(tie, distance)`` of the entry holding ``member`` among those with
        ``primary``; ``distance`` is the number of entries of the run between
        it and the run's oldest end (see :mod:`rankengine.index.protocol`).

        For a board that did not keep a member's tie (see
        ``BoardCore._find_tie``); :meth:`_find` explains the search.

        Runtime complexity: O(log N) plus the entries scanned past

        >>> index = SortedListIndex()
        >>> index.build([(1, 0, "a"), (2, 4, "b"), (2, 9, "c")])
        >>> index.tie_of(2, "c"), index.tie_of(1, "a")
        ((9, 1), (0, 0))
        >>> index.oldest_last = True
        >>> index.tie_of(2, "c")
        (9, 0)

        :raises KeyError: if no entry with ``primary`` holds ``member``
        """
        i, a, distance = self._find(primary, member)
        return self._ties[i][a], distance

    def position_of(self, primary: Any, member: Any) -> int:
        """0-based position of the entry holding ``member`` among those with
        ``primary``: :meth:`tie_of` and :meth:`position` in one search.

        Runtime complexity: O(log N) plus the entries scanned past

        >>> index = SortedListIndex()
        >>> index.oldest_last = False
        >>> index.build([(1, 0, "a"), (2, 4, "b"), (2, 9, "c")])
        >>> index.position_of(2, "c")
        2

        :raises KeyError: if no entry with ``primary`` holds ``member``
        """
        # _find's first probe inlined: the member is usually alone in its run
        # (a call less on a board's hottest read, ``rank``); else _find.
        maxes = self._maxes
        if self.oldest_last:
            i = bisect_right(maxes, primary)
            if i < len(maxes):
                ps = self._lists[i]
                a = bisect_right(ps, primary) - 1
                if a >= 0 and ps[a] == primary and self._members[i][a] == member:
                    return (self._offsets[i] if i < self._valid else self._offset_of(i)) + a
        else:
            i = bisect_left(maxes, primary)
            if i < len(maxes):
                ps = self._lists[i]
                a = bisect_left(ps, primary)
                if ps[a] == primary and self._members[i][a] == member:
                    return (self._offsets[i] if i < self._valid else self._offset_of(i)) + a
        i, a, _ = self._find(primary, member)
        if i < self._valid:
            return self._offsets[i] + a
        return self._offset_of(i) + a

    def _find(self, primary: Any, member: Any) -> tuple[int, int, int]:
        """``(block, offset, distance)`` of the entry holding ``member`` among
        those with ``primary``, found from the oldest end of the run.

        Two bisects find the run's oldest end -- its last entry when
        :attr:`oldest_last` is true, else its first -- where the member
        usually is (a run is usually one entry); otherwise the run is
        scanned from there, block by block.  A member that arrived near the
        oldest end is found within ``RUN_SCAN_LIMIT`` steps.

        Runtime complexity: O(log N) plus the entries scanned past

        :raises KeyError: if no entry with ``primary`` holds ``member``
        """
        maxes = self._maxes
        lists = self._lists
        members = self._members
        distance = 0
        if self.oldest_last:
            # The run's last entry: in the first block whose maximum is above
            # ``primary``, or at the end of the block before.
            i = bisect_right(maxes, primary)
            b = bisect_right(lists[i], primary) if i < len(maxes) else 0
            if not b:
                i -= 1
                b = len(lists[i]) if i >= 0 else 0
            while i >= 0:
                ps = lists[i]
                ms = members[i]
                a = b - 1
                while a >= 0 and ps[a] == primary:
                    if ms[a] == member:
                        return i, a, distance
                    a -= 1
                    distance += 1
                if a >= 0:
                    break  # the run started inside this block
                i -= 1
                b = len(lists[i]) if i >= 0 else 0
            raise KeyError((primary, member))
        i = bisect_left(maxes, primary)
        a = bisect_left(lists[i], primary) if i < len(maxes) else 0
        while i < len(lists):
            ps = lists[i]
            ms = members[i]
            while a < len(ps) and ps[a] == primary:
                if ms[a] == member:
                    return i, a, distance
                a += 1
                distance += 1
            if a < len(ps):
                break  # the run ended inside this block
            i += 1
            a = 0
        raise KeyError((primary, member))

    def columns_between(
        self, start: int, stop: int, *, reverse: bool = False
    ) -> tuple[list[Any], list[Any]]:
        """``(primaries, members)`` of positions ``start <= p < stop`` as two
        lists, ascending (or descending when ``reverse`` is true).

        The columnar twin of :meth:`iter_range` for reads that build rows:
        a slice per block instead of a tuple per entry, so the board can make
        its rows with one C-level ``map`` (measured: a page of 25 rows at
        N = 1,000,000 is built 1.3x faster than from the triples).

        Runtime complexity: O(log N + (stop - start))

        >>> index = SortedListIndex(load=4)
        >>> index.build((k, 0, chr(97 + k)) for k in range(12))
        >>> index.columns_between(2, 7)
        ([2, 3, 4, 5, 6], ['c', 'd', 'e', 'f', 'g'])
        >>> index.columns_between(9, 12, reverse=True)
        ([11, 10, 9], ['l', 'k', 'j'])
        """
        length = self._sl._len
        if not 0 <= start <= stop <= length:
            raise IndexError(f"range {start}:{stop} out of 0:{length}")
        primaries: list[Any] = []
        members: list[Any] = []
        left = stop - start
        if not left:
            return primaries, members
        i, a = self._locate_position(start)
        lists = self._lists
        member_blocks = self._members
        while left:
            b = min(len(lists[i]), a + left)
            primaries += lists[i][a:b]
            members += member_blocks[i][a:b]
            left -= b - a
            i += 1
            a = 0
        if reverse:
            primaries.reverse()
            members.reverse()
        return primaries, members

    def columns_range(self, start: int, stop: int) -> tuple[list[Any], list[Any], list[Any]]:
        """``(primaries, ties, members)`` of positions ``start <= p < stop``
        as three lists, ascending: a slice per block, no tuple per entry.

        A snapshot of a live board reads it this way, a slice at a time
        between writes (see :mod:`rankengine.durable.sliced`); holding no object
        per entry keeps the garbage collector out of it.

        Runtime complexity: O(log N + (stop - start))

        >>> index = SortedListIndex(load=4)
        >>> index.build((k, 10 + k, chr(97 + k)) for k in range(12))
        >>> index.columns_range(6, 9)
        ([6, 7, 8], [16, 17, 18], ['g', 'h', 'i'])
        """
        length = self._sl._len
        if not 0 <= start <= stop <= length:
            raise IndexError(f"range {start}:{stop} out of 0:{length}")
        primaries: list[Any] = []
        ties: list[Any] = []
        members: list[Any] = []
        left = stop - start
        if not left:
            return primaries, ties, members
        i, a = self._locate_position(start)
        lists, tie_blocks, member_blocks = self._lists, self._ties, self._members
        while left:
            b = min(len(lists[i]), a + left)
            block = lists[i][a:b]
            primaries += block.tolist() if type(block) is array else block
            block = tie_blocks[i][a:b]
            ties += block.tolist() if type(block) is array else block
            members += member_blocks[i][a:b]
            left -= b - a
            i += 1
            a = 0
        return primaries, ties, members

    def columns(self) -> tuple[Column, Column, list[Any]]:
        """``(primaries, ties, members)``: every entry as three columns, in
        ascending key order (the inverse of :meth:`build_columns`).

        Snapshot writing reads the board this way: concatenating the blocks is
        C work, where walking the entries one by one is Python work per row.
        Typed columns come back as ``array`` (one memory copy per block).

        Runtime complexity: O(N)

        >>> index = SortedListIndex()
        >>> index.build([(1, 0, "a"), (2, 5, "b")])
        >>> index.columns()
        (array('q', [1, 2]), array('q', [0, 5]), ['a', 'b'])
        """
        primaries: Any = _empty_column(self._ptype)
        ties: Any = _empty_column(self._ttype)
        members: list[Any] = []
        for block in self._lists:
            primaries += block
        for block in self._ties:
            ties += block
        for block in self._members:
            members += block
        return primaries, ties, members

    # ------------------------------------------------------------------
    # Queries
    # ------------------------------------------------------------------

    def position(self, primary: Any, tie: Any) -> int:
        """0-based position of the present key ``(primary, tie)``.

        Runtime complexity: O(log N)

        >>> index = SortedListIndex()
        >>> index.build([(1, 0, "a"), (2, 0, "b"), (2, 1, "c")])
        >>> index.position(2, 1)
        2

        :raises KeyError: if the key is not present
        """
        i, a = self._locate(primary, tie)
        if i < self._valid:
            return self._offsets[i] + a
        return self._offset_of(i) + a

    def count_less(self, primary: Any, tie: Any) -> int:
        """Number of entries whose key is < ``(primary, tie)``.

        The key may be absent: this is its ``bisect_left`` position.

        Runtime complexity: O(log N)

        >>> index = SortedListIndex()
        >>> index.build([(1, 0, "a"), (2, 0, "b"), (2, 5, "c")])
        >>> index.count_less(2, 3), index.count_less(9, 0), index.count_less(0, 0)
        (2, 3, 0)
        """
        i = self._block_for(primary, tie)
        if i == len(self._maxes):
            return self._sl._len
        return self._offset_of(i) + self._offset_in(i, primary, tie)

    def count_primary(self, primary: Any, *, inclusive: bool) -> int:
        """Number of entries whose primary is < (or <=) ``primary``.

        Ties are ignored, so this counts whole runs of equal primaries: it is
        ``bisect_left`` (or ``bisect_right``) on the primaries alone.

        Runtime complexity: O(log N)

        >>> index = SortedListIndex()
        >>> index.build([(1, 0, "a"), (2, 0, "b"), (2, 1, "c"), (3, 0, "d")])
        >>> index.count_primary(2, inclusive=False), index.count_primary(2, inclusive=True)
        (1, 3)

        :param inclusive: count entries equal to ``primary`` as well
        """
        search = bisect_right if inclusive else bisect_left
        maxes = self._maxes
        i = search(maxes, primary)
        if i == len(maxes):
            return self._sl._len
        return self._offset_of(i) + search(self._lists[i], primary)

    def entry(self, position: int) -> Entry3:
        """The entry at a 0-based ``position`` (``0 <= position < len``).

        Runtime complexity: O(log N)

        >>> index = SortedListIndex()
        >>> index.build([(1, 0, "a"), (2, 0, "b")])
        >>> index.entry(1)
        (2, 0, 'b')

        :raises IndexError: if ``position`` is out of range
        """
        if not 0 <= position < self._sl._len:
            raise IndexError(f"position {position} out of range")
        i, a = self._locate_position(position)
        return self._lists[i][a], self._ties[i][a], self._members[i][a]

    def iter_range(self, start: int, stop: int, *, reverse: bool = False) -> Iterator[Entry3]:
        """Entries at positions ``start <= p < stop``.

        Ascending, or descending from ``stop - 1`` down to ``start`` when
        ``reverse`` is true.  The caller clamps ``0 <= start <= stop <= len``.
        A range inside one block (every top-10 query) is three slices zipped
        together in C; longer ranges walk the blocks lazily.  Do not mutate the
        index while iterating.

        Runtime complexity: O(log N) to start, O(1) amortised per entry

        >>> index = SortedListIndex(load=4)
        >>> index.build((k, 0, chr(97 + k)) for k in range(12))
        >>> [m for _, _, m in index.iter_range(2, 7)]
        ['c', 'd', 'e', 'f', 'g']
        >>> [m for _, _, m in index.iter_range(9, 12, reverse=True)]
        ['l', 'k', 'j']
        """
        length = self._sl._len
        if not 0 <= start <= stop <= length:
            raise IndexError(f"range {start}:{stop} out of 0:{length}")
        if start == stop:
            return iter(())
        lists = self._lists
        if reverse:
            # The top of a descending board: the end of the last block.
            last = len(lists[-1])
            b = stop - length + last
            if b >= stop - start:
                i = len(lists) - 1
            else:
                i, b = self._locate_position(stop - 1)
                b += 1
            a = b - (stop - start)
            if a >= 0:
                # One block: extended slices copy the window already reversed.
                lo = a - 1 if a else None
                return zip(
                    lists[i][b - 1 : lo : -1],
                    self._ties[i][b - 1 : lo : -1],
                    self._members[i][b - 1 : lo : -1],
                    strict=True,
                )
            return self._iter_backward(i, b, stop - start)
        if start < len(lists[0]):
            i, a = 0, start
        else:
            i, a = self._locate_position(start)
        b = a + (stop - start)
        if b <= len(lists[i]):
            return zip(lists[i][a:b], self._ties[i][a:b], self._members[i][a:b], strict=True)
        return self._iter_forward(i, a, stop - start)

    def _iter_forward(self, i: int, a: int, count: int) -> Iterator[Entry3]:
        """``count`` entries from ``(i, a)`` on, block by block."""
        lists = self._lists
        ties = self._ties
        members = self._members
        while count > 0:
            b = min(len(lists[i]), a + count)
            yield from zip(lists[i][a:b], ties[i][a:b], members[i][a:b], strict=True)
            count -= b - a
            i += 1
            a = 0

    def _iter_backward(self, i: int, b: int, count: int) -> Iterator[Entry3]:
        """``count`` entries backwards from the one before ``(i, b)``."""
        lists = self._lists
        ties = self._ties
        members = self._members
        while count > 0:
            a = max(0, b - count)
            lo = a - 1 if a else None
            yield from zip(
                lists[i][b - 1 : lo : -1],
                ties[i][b - 1 : lo : -1],
                members[i][b - 1 : lo : -1],
                strict=True,
            )
            count -= b - a
            i -= 1
            b = len(lists[i])

    # ------------------------------------------------------------------
    # Invariants
    # ------------------------------------------------------------------

    def _dump(self) -> str:
        """The internal state, truncated, for assertion messages."""
        state = (
            f"load={self._load} len={self._sl._len} kinds={self._ptype}/{self._ttype}\n"
            f"maxes={self._maxes!r}\n"
            f"lists={self._lists!r}\nties={self._ties!r}\nmembers={self._members!r}\n"
            f"lens={self._lens!r}\n"
            f"offsets={self._offsets.tolist()!r} valid={self._valid} "
            f"from={self._from} lag={self._lag}"
        )
        if len(state) > _DUMP_LIMIT:
            state = state[:_DUMP_LIMIT] + "... (truncated)"
        return state

    def _check(self) -> None:
        """Verify every invariant; raise ``AssertionError`` describing the first broken one.

        Runtime complexity: O(N)

        >>> index = SortedListIndex(load=4)
        >>> index.build((k, 0, k) for k in range(20))
        >>> index._check()
        """
        lists = self._lists
        ties = self._ties
        members = self._members
        maxes = self._maxes
        try:
            # The three columns have the same shape.
            assert len(ties) == len(members) == len(lists), "block counts differ"
            for i, ps in enumerate(lists):
                assert len(ties[i]) == len(members[i]) == len(ps), f"block {i}: lengths differ"

            # Every block has its column's kind: an array of the column's type
            # code, or a list; an empty index has not chosen kinds yet.
            for name, column, kind in (("primary", lists, self._ptype), ("tie", ties, self._ttype)):
                code = _TYPECODES.get(kind) if kind is not None else None
                for i, block in enumerate(column):
                    if code is None:
                        assert type(block) is list, f"{name} block {i} is not a list"
                    else:
                        assert isinstance(block, array), f"{name} block {i} is not an array"
                        assert block.typecode == code, f"{name} block {i} has the wrong code"
            for i, ms in enumerate(members):
                assert type(ms) is list, f"member block {i} is not a list"

            # The total length is the sum of the block lengths.
            assert self._sl._len == sum(map(len, lists)), "len disagrees with blocks"

            # No block is empty, none too long, none too short (when several).
            double = self._load << 1
            for i, ps in enumerate(lists):
                assert ps, f"block {i} is empty"
                assert len(ps) <= double, f"block {i} longer than 2 * load"
                if len(lists) > 1:
                    assert len(ps) >= self._half, f"block {i} shorter than load // 2"

            # _maxes holds the last primary of each block, in a container of
            # the primary column's kind, shared with the SortedList.
            assert len(maxes) == len(lists), "_maxes has the wrong length"
            assert maxes is self._sl._maxes, "_maxes is not the SortedList's"
            if lists:
                assert type(maxes) is type(lists[0]), "_maxes has the wrong kind"
                if isinstance(maxes, array):
                    assert maxes.typecode == getattr(lists[0], "typecode", None), "_maxes code"
            for i, ps in enumerate(lists):
                assert maxes[i] == ps[-1], f"_maxes[{i}] is stale"

            # Keys strictly increase within and across blocks.
            keys = list(zip(chain.from_iterable(lists), chain.from_iterable(ties), strict=True))
            for k in range(1, len(keys)):
                assert keys[k - 1] < keys[k], f"keys out of order at position {k}"

            self._check_positions()
            self._spares._check(chain(lists, ties, members))
        except AssertionError as error:
            raise AssertionError(f"{error}\n{self._dump()}") from error
