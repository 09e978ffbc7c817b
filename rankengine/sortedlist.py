"""An ordered index on ``sortedcontainers``: the speed backend.

:class:`SortedListIndex` implements :class:`~rankengine.index.OrderedIndex`
with the *list of lists* design of ``sortedcontainers.SortedList``, taken one
step further for leaderboard keys.

Layout
------

An entry ``(primary, tie, member)`` is not stored as a tuple.  It is spread
over three parallel lists of lists ("blocks") that always have the same
shape::

    _lists    [[10, 10, 12],   [12, 15, 20],   [31, 40]]    primaries
    _ties     [[ 3,  7,  1],   [ 4,  2,  9],   [ 5,  6]]    ties
    _members  [['a','b','c'],  ['d','e','f'],  ['g','h']]   members
    _maxes    [12,             20,             40]          last primary of each block

``_lists``, ``_maxes`` and the positional index belong to a private
``sortedcontainers.SortedList`` that holds the primaries and nothing else.  It
is a valid ``SortedList`` in its own right (ties and members merely ride
along), so the index reuses its positional tree (``_index``, ``_offset``,
``_loc``, ``_pos``, ``_build_index``), its ``bisect_left``/``bisect_right``
and its ``_check``.  Only the operations that must keep the three lists in
lockstep (insert, delete, split, merge, move) are written here.

Why it is fast
--------------

* **Plain primaries in ``bisect``.**  ``bisect`` on a list of ``float`` or
  ``int`` runs a C loop of cheap number comparisons.  The naive recipe
  compares ``(-score, member)`` tuples, which costs a tuple comparison, an
  extra pointer chase per probe and a string comparison whenever scores tie.
  Ties are only compared inside a run of equal primaries: the first probe
  ``ties[i][a] == tie`` settles the common case of a primary held by one
  entry.
* **In-block move.**  A score change usually moves an entry by a few
  positions.  When the new primary still lies inside the same block (between
  the previous block's maximum and this block's maximum) the entry is moved
  inside that block with ``del`` + ``insert`` (two ``memmove`` calls per list)
  and nothing else is touched: block sizes do not change, so the positional
  index stays valid and no tree walk is needed.  When it even keeps its slot
  (it stays between its two neighbours, Redis' ``zslUpdateScore`` case) the
  two keys are overwritten in place.
* **Cross-block move as one transfer.**  Otherwise the entry leaves block ``i``
  and joins block ``j``.  Unless that splits or merges a block, the
  positional tree gets ``-1`` on leaf ``i`` and ``+1`` on leaf ``j``; both
  walks climb in lockstep and stop where they meet, because above the common
  ancestor the two changes cancel.  For neighbouring blocks that is one or two
  levels instead of two full walks to the root.
* **No per-entry objects.**  Three pointers per entry (24 bytes, plus list
  over-allocation); no tuple per entry (a 3-tuple would add 64 bytes).
* **Bulk load.**  :meth:`SortedListIndex.build` transposes the entries with
  ``zip`` and cuts the three columns into blocks with slices: no comparison at
  all, C speed.

Invariants (verified by :meth:`SortedListIndex._check`)::

    keys (primary, tie) strictly increase, within and across blocks
    _maxes[i] == _lists[i][-1]
    _lists, _ties and _members have the same shape
    no block is empty; no block is longer than 2 * load; when there is more
    than one block, none is shorter than load // 2
    the positional tree, when built, agrees with the block lengths
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator
from itertools import chain, pairwise
from operator import itemgetter
from typing import Any, Final, Protocol

from sortedcontainers import SortedList  # type: ignore[import-untyped, unused-ignore]

from rankengine.index import Entry3

__all__ = ["DEFAULT_LOAD", "SortedListIndex"]

#: Target block length.  Blocks hold between ``load // 2`` and ``2 * load``
#: entries.  Measured at N = 1,000,000 on the mixed game-server workload
#: (80% small score increments, 10% top-10, 10% rank look-ups): 250 -> 2.1 µs,
#: 500 -> 1.9 µs, 1000 -> 1.9 µs, 2000 -> 2.0 µs per operation.  A larger
#: block keeps more moves inside one block and makes the positional tree
#: shallower; a smaller block makes each ``insert``/``del`` cheaper.  1000 is
#: on the flat bottom and is also sortedcontainers' own default.
DEFAULT_LOAD: Final = 1000

#: The smallest accepted load: ``sortedcontainers`` asserts ``load >= 4`` and
#: a block must keep at least two entries after a removal.
MIN_LOAD: Final = 4

#: How many characters of internal state an assertion message shows.
_DUMP_LIMIT: Final = 2000

_last = itemgetter(-1)


class _PrimaryList(Protocol):
    """The ``sortedcontainers.SortedList`` internals this module relies on.

    ``sortedcontainers`` ships no type information; this protocol names the
    attributes and helpers used, so mypy checks their use.
    """

    _lists: list[list[Any]]
    _maxes: list[Any]
    _index: list[int]
    _offset: int
    _len: int
    _load: int

    def _loc(self, pos: int, idx: int) -> int: ...

    def _pos(self, idx: int) -> tuple[int, int]: ...

    def _check(self) -> None: ...

    def bisect_left(self, value: Any) -> int: ...

    def bisect_right(self, value: Any) -> int: ...

    def clear(self) -> None: ...


class SortedListIndex:
    """An :class:`~rankengine.index.OrderedIndex` on a list of lists.

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

    __slots__ = ("_half", "_index", "_lists", "_load", "_maxes", "_members", "_sl", "_ties")

    def __init__(self, *, load: int = DEFAULT_LOAD) -> None:
        if load < MIN_LOAD:
            raise ValueError(f"load must be >= {MIN_LOAD}, got {load}")
        sl: _PrimaryList = SortedList()
        sl._load = load
        self._sl = sl
        # Aliases of the SortedList's own lists (always mutated in place, by
        # it and by us): one attribute look-up instead of two on hot paths.
        self._lists = sl._lists
        self._maxes = sl._maxes
        self._index = sl._index
        self._ties: list[list[Any]] = []
        self._members: list[list[Any]] = []
        self._load = load
        self._half = load >> 1

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

    def _locate_position(self, position: int) -> tuple[int, int]:
        """``(block, offset)`` of a 0-based position in ``0 <= position < len``.

        The two ends (top-N and bottom-N queries) are answered from the first
        and last block lengths without touching the positional tree.
        """
        lists = self._lists
        first = len(lists[0])
        if position < first:
            return 0, position
        last_start = self._sl._len - len(lists[-1])
        if position >= last_start:
            return len(lists) - 1, position - last_start
        return self._sl._pos(position)

    # ------------------------------------------------------------------
    # Structure maintenance
    # ------------------------------------------------------------------

    def _grow_index(self, i: int, delta: int) -> None:
        """Add ``delta`` to leaf ``i`` of the positional tree and its ancestors.

        Walk from the leaf to the root, as ``SortedList._expand`` does (see
        ``SortedList._loc`` for the tree layout).
        """
        index = self._index
        if index:
            child = self._sl._offset + i
            while child:
                index[child] += delta
                child = (child - 1) >> 1
            index[0] += delta

    def _transfer_index(self, i: int, j: int) -> None:
        """Move one entry's count from leaf ``i`` to leaf ``j`` of the positional tree.

        All leaves sit on the bottom row, so the two walks climb in lockstep.
        They meet at the lowest common ancestor; from there up, ``-1`` and
        ``+1`` cancel and nothing changes::

                     14              <- unchanged
                  5      9          <- meet here (i, j share this parent
                3   2  4   5           only when adjacent under it)
                    i  j
            leaf i: 2 -> 1, node 5 -> 4;  leaf j: 4 -> 5, node 9 -> 10

        Measured: a move between neighbouring blocks costs 1-3 steps here
        instead of two walks of ~11 steps at 1,000 blocks.
        """
        index = self._index
        if index:
            offset = self._sl._offset
            x = offset + i
            y = offset + j
            while x != y:
                index[x] -= 1
                index[y] += 1
                x = (x - 1) >> 1
                y = (y - 1) >> 1

    def _split(self, i: int) -> None:
        """Cut block ``i`` (longer than ``2 * load``) in two halves."""
        lists = self._lists
        ties = self._ties
        members = self._members
        maxes = self._maxes
        ps = lists[i]
        ts = ties[i]
        ms = members[i]
        half = len(ps) >> 1
        lists.insert(i + 1, ps[half:])
        ties.insert(i + 1, ts[half:])
        members.insert(i + 1, ms[half:])
        del ps[half:]
        del ts[half:]
        del ms[half:]
        maxes[i] = ps[-1]
        maxes.insert(i + 1, lists[i + 1][-1])
        # Block numbers shifted: rebuild the tree lazily on next use.
        del self._index[:]

    def _merge(self, i: int) -> None:
        """Join block ``i`` (down to ``load // 2``) with a neighbour."""
        if not i:
            i = 1
        prev = i - 1
        lists = self._lists
        ties = self._ties
        members = self._members
        lists[prev].extend(lists[i])
        ties[prev].extend(ties[i])
        members[prev].extend(members[i])
        del lists[i]
        del ties[i]
        del members[i]
        maxes = self._maxes
        maxes[prev] = lists[prev][-1]
        del maxes[i]
        del self._index[:]
        if len(lists[prev]) > self._load << 1:
            self._split(prev)

    def _delete(self, i: int, a: int) -> Any:
        """Remove the entry at ``(i, a)``, rebalance, and return its member."""
        ps = self._lists[i]
        member = self._members[i].pop(a)
        del ps[a]
        del self._ties[i][a]
        self._sl._len -= 1
        if len(ps) > self._half:
            self._maxes[i] = ps[-1]
            self._grow_index(i, -1)
        elif len(self._lists) > 1:
            self._merge(i)
        elif ps:
            self._maxes[0] = ps[-1]
            del self._index[:]
        else:
            self.clear()
        return member

    # ------------------------------------------------------------------
    # Mutation
    # ------------------------------------------------------------------

    def insert(self, primary: Any, tie: Any, member: Any) -> None:
        """Add an entry.

        The key ``(primary, tie)`` must not be present.

        Runtime complexity: O(log N)

        >>> index = SortedListIndex()
        >>> index.insert(5, "b", "b")
        >>> index.insert(5, "a", "a")
        >>> index.entry(0)
        (5, 'a', 'a')

        :param primary: the score part of the key
        :param tie: the tie-break part of the key
        :param member: the payload stored with the key
        :raises KeyError: if the key is already present
        """
        maxes = self._maxes
        if not maxes:
            self._lists.append([primary])
            self._ties.append([tie])
            self._members.append([member])
            maxes.append(primary)
            self._sl._len = 1
            del self._index[:]
            return
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
        if a < len(ps) and ps[a] == primary:
            hi = bisect_right(ps, primary, a)
            a = bisect_left(ts, tie, a, hi)
            if a < hi and ts[a] == tie:
                raise KeyError((primary, tie))
        ps.insert(a, primary)
        ts.insert(a, tie)
        self._members[i].insert(a, member)
        self._sl._len += 1
        maxes[i] = ps[-1]
        if len(ps) > self._load << 1:
            self._split(i)
        else:
            self._grow_index(i, 1)

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

    def move(self, primary: Any, tie: Any, new_primary: Any, new_tie: Any) -> None:
        """Re-key an entry (a score change), keeping its member.

        The old key must be present and the new key absent.  This is the hot
        path of a leaderboard: ``ZINCRBY``.  Three cases, cheapest first:

        1. The new key keeps the entry between its neighbours: the two keys
           are overwritten in place (Redis' ``zslUpdateScore``).
        2. The new key stays inside the same block: the entry is moved within
           that block.  Block sizes do not change, so ``_maxes`` is the only
           bookkeeping and the positional tree is not touched.
        3. Otherwise the entry leaves its block for another one; the tree is
           updated by one short transfer unless a block splits or merges.

        Runtime complexity: O(log N)

        >>> index = SortedListIndex()
        >>> index.build([(1, 0, "a"), (2, 0, "b"), (3, 0, "c")])
        >>> index.move(1, 0, 2.5, 0)
        >>> [m for _, _, m in index.iter_range(0, 3)]
        ['b', 'a', 'c']

        :raises KeyError: if the old key is absent or the new key is present
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
        # Fast test for "same block": primaries strictly inside the block's
        # range.  Two number comparisons instead of a bisect over _maxes;
        # equal primaries (ties) take the general test below.
        if new_primary < maxes[i] and (not i or maxes[i - 1] < new_primary):
            j = i
        else:
            j = self._block_for(new_primary, new_tie)
            if j == len(maxes):
                j -= 1
        if j == i:
            b = bisect_left(ps, new_primary)
            if b < len(ps) and ps[b] == new_primary:
                hi = bisect_right(ps, new_primary, b)
                b = bisect_left(ts, new_tie, b, hi)
                if b < hi and ts[b] == new_tie:
                    if b == a:  # the new key is the old key: nothing to do
                        return
                    raise KeyError((new_primary, new_tie))
            # ``b`` was found with the entry still at ``a``; once it leaves,
            # later slots shift down by one.
            if b > a:
                b -= 1
            if b == a:
                # Case 1: still between its neighbours.
                ps[a] = new_primary
                ts[a] = new_tie
            else:
                # Case 2: ``del`` + ``insert`` is two memmoves per list; measured
                # faster than rebuilding the shifted run with slice assignment
                # (which allocates a temporary list).
                del ps[a]
                ps.insert(b, new_primary)
                del ts[a]
                ts.insert(b, new_tie)
                ms = self._members[i]
                ms.insert(b, ms.pop(a))
            maxes[i] = ps[-1]
            return
        # Case 3: another block.
        qs = self._lists[j]
        qt = self._ties[j]
        b = bisect_left(qs, new_primary)
        if b < len(qs) and qs[b] == new_primary:
            hi = bisect_right(qs, new_primary, b)
            b = bisect_left(qt, new_tie, b, hi)
            if b < hi and qt[b] == new_tie:
                raise KeyError((new_primary, new_tie))
        member = self._members[i].pop(a)
        del ps[a]
        del ts[a]
        qs.insert(b, new_primary)
        qt.insert(b, new_tie)
        self._members[j].insert(b, member)
        maxes[i] = ps[-1]  # more than one block, so ``ps`` keeps >= 2 entries
        maxes[j] = qs[-1]
        if len(qs) > self._load << 1 or len(ps) <= self._half:
            if len(qs) > self._load << 1:
                self._split(j)
                if i > j:
                    i += 1
            if len(ps) <= self._half:
                self._merge(i)
        else:
            self._transfer_index(i, j)

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

    def build(self, entries: Iterable[Entry3]) -> None:
        """Replace the contents with ``entries``, already sorted by unique key.

        Bulk load for snapshot recovery: the entries are transposed into three
        columns with ``zip`` and each column is cut into blocks of nearly equal
        length (between ``load // 2`` and ``load``) with slices.  No key is
        compared, so the order is trusted; :meth:`_check` verifies it.

        Runtime complexity: O(N)

        >>> index = SortedListIndex(load=4)
        >>> index.build((k, 0, str(k)) for k in range(10))
        >>> [len(block) for block in index._lists]
        [3, 3, 4]
        >>> index.entry(7)
        (7, 0, '7')

        :param entries: ``(primary, tie, member)`` triples in ascending key order
        """
        self.clear()
        columns = list(zip(*entries, strict=True))
        if not columns:
            return
        primaries, ties, members = columns
        n = len(primaries)
        blocks = -(-n // self._load)
        bounds = [k * n // blocks for k in range(blocks + 1)]
        spans = list(pairwise(bounds))
        self._lists.extend([list(primaries[lo:hi]) for lo, hi in spans])
        self._ties.extend([list(ties[lo:hi]) for lo, hi in spans])
        self._members.extend([list(members[lo:hi]) for lo, hi in spans])
        self._maxes.extend([primaries[hi - 1] for _, hi in spans])
        self._sl._len = n

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
        return self._sl._loc(i, a)

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
        return self._sl._loc(i, self._offset_in(i, primary, tie))

    def count_primary(self, primary: Any, *, inclusive: bool) -> int:
        """Number of entries whose primary is < (or <=) ``primary``.

        Ties are ignored, so this counts whole runs of equal primaries; it is
        ``SortedList.bisect_left``/``bisect_right`` on the primaries.

        Runtime complexity: O(log N)

        >>> index = SortedListIndex()
        >>> index.build([(1, 0, "a"), (2, 0, "b"), (2, 1, "c"), (3, 0, "d")])
        >>> index.count_primary(2, inclusive=False), index.count_primary(2, inclusive=True)
        (1, 3)

        :param inclusive: count entries equal to ``primary`` as well
        """
        if inclusive:
            return self._sl.bisect_right(primary)
        return self._sl.bisect_left(primary)

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
        count = stop - start
        if count <= 0:
            return iter(())
        if not 0 <= start < stop <= self._sl._len:
            raise IndexError(f"range {start}:{stop} out of 0:{self._sl._len}")
        if reverse:
            i, b = self._locate_position(stop - 1)
            b += 1
            if b >= count:
                a = b - count
                return zip(
                    reversed(self._lists[i][a:b]),
                    reversed(self._ties[i][a:b]),
                    reversed(self._members[i][a:b]),
                    strict=False,
                )
            return self._iter_backward(i, b, count)
        i, a = self._locate_position(start)
        b = a + count
        if b <= len(self._lists[i]):
            return zip(self._lists[i][a:b], self._ties[i][a:b], self._members[i][a:b], strict=False)
        return self._iter_forward(i, a, count)

    def _iter_forward(self, i: int, a: int, count: int) -> Iterator[Entry3]:
        """``count`` entries from ``(i, a)`` on, block by block."""
        lists = self._lists
        ties = self._ties
        members = self._members
        while count > 0:
            b = min(len(lists[i]), a + count)
            yield from zip(lists[i][a:b], ties[i][a:b], members[i][a:b], strict=False)
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
            yield from zip(
                reversed(lists[i][a:b]),
                reversed(ties[i][a:b]),
                reversed(members[i][a:b]),
                strict=False,
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
            f"load={self._load} len={self._sl._len} maxes={self._maxes!r}\n"
            f"lists={self._lists!r}\nties={self._ties!r}\nmembers={self._members!r}\n"
            f"index={self._index!r} offset={self._sl._offset}"
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
            # The three parallel lists have the same shape.
            assert len(ties) == len(members) == len(lists), "block counts differ"
            for i, ps in enumerate(lists):
                assert len(ties[i]) == len(members[i]) == len(ps), f"block {i}: lengths differ"

            # The total length is the sum of the block lengths.
            assert self._sl._len == sum(map(len, lists)), "len disagrees with blocks"

            # No block is empty, none too long, none too short (when several).
            double = self._load << 1
            for i, ps in enumerate(lists):
                assert ps, f"block {i} is empty"
                assert len(ps) <= double, f"block {i} longer than 2 * load"
                if len(lists) > 1:
                    assert len(ps) >= self._half, f"block {i} shorter than load // 2"

            # _maxes holds the last primary of each block.
            assert len(maxes) == len(lists), "_maxes has the wrong length"
            for i, ps in enumerate(lists):
                assert maxes[i] == ps[-1], f"_maxes[{i}] is stale"

            # Keys strictly increase within and across blocks.
            keys = list(zip(chain.from_iterable(lists), chain.from_iterable(ties), strict=True))
            for k in range(1, len(keys)):
                assert keys[k - 1] < keys[k], f"keys out of order at position {k}"

            # The positional tree, when built, agrees with the block lengths:
            # leaves are the lengths, each branch is the sum of its children
            # (the layout of SortedList._build_index).
            index = self._index
            if index:
                offset = self._sl._offset
                assert len(index) == offset + len(lists), "tree has the wrong size"
                assert index[0] == self._sl._len, "tree root is not len"
                for i, ps in enumerate(lists):
                    assert index[offset + i] == len(ps), f"tree leaf {i} is stale"
                for node in range(offset):
                    children = index[2 * node + 1 : 2 * node + 3]
                    assert index[node] == sum(children), f"tree node {node} is stale"
        except AssertionError as error:
            raise AssertionError(f"{error}\n{self._dump()}") from error
