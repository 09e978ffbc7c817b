"""The block offsets of :class:`~rankengine.index.sortedlist.SortedListIndex`:
from a position to its block, and from a block to the entries before it.

A list of blocks answers "which block holds position ``p``" and "how many
entries precede block ``i``" from the block lengths.  Two structures keep
them: the positional tree of ``sortedcontainers.SortedList`` (``_index``:
block lengths at the leaves, sums above; a walk from leaf to root) and, in
front of it, an ``array('q')`` of cached block offsets, exact before
``_valid``, exact once ``_lag`` is added from ``_from`` on; the blocks in
between (the gap) are summed or left to the tree (see
:meth:`BlockOffsets._offset_of`).

:class:`BlockOffsets` is a base of ``SortedListIndex`` that holds this
bookkeeping and nothing else: the index calls :meth:`~BlockOffsets._resized`
and :meth:`~BlockOffsets._transfer` when block lengths change and reads
positions through :meth:`~BlockOffsets._locate_position` and
:meth:`~BlockOffsets._offset_of`.

Invariants (verified by :meth:`BlockOffsets._check_positions`)::

    the positional tree, when built, agrees with the block lengths
    len(_offsets) == number of blocks; _valid <= _from
    _offsets[k] == entries before block k, for k < _valid
    _offsets[k] + _lag == entries before block k, for k >= _from
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from itertools import accumulate, islice
from typing import Any, Final, Protocol

__all__ = [
    "GAP_SCAN",
    "PATCH_LIMIT",
    "REBUILD_MIN",
    "REBUILD_SHIFT",
    "BlockOffsets",
    "PrimaryList",
]

#: A cross-block move shifts the offsets of the blocks between its source and
#: destination by one; up to this many are patched in place (one Python step
#: each), a farther move invalidates them instead.
PATCH_LIMIT: Final = 8

#: A gap of stale offsets this narrow (blocks) is summed (``len`` of each,
#: ~3 µs for 64) instead of walked in the positional tree, which every split
#: drops (a rebuild at 2,000 blocks: ~0.3 ms), and splits happen in the gap.
GAP_SCAN: Final = 64

#: Position look-ups answered by the tree walk, while the offsets are stale,
#: before the stale offsets are recomputed: ``max(REBUILD_MIN, blocks >>
#: REBUILD_SHIFT)``.  Recomputing is C-speed, ~15 ns a block against ~1 µs a
#: walk, so a rebuild costs about as much as 1/64 of a walk per block.
REBUILD_MIN: Final = 8
REBUILD_SHIFT: Final = 6


class PrimaryList(Protocol):
    """The ``sortedcontainers.SortedList`` internals this module relies on.

    ``sortedcontainers`` ships no type information; this protocol names the
    attributes and helpers used, so mypy checks their use.
    """

    _lists: list[Any]
    _maxes: Any
    _index: list[int]
    _offset: int
    _len: int
    _load: int

    def _loc(self, pos: int, idx: int) -> int: ...

    def _pos(self, idx: int) -> tuple[int, int]: ...

    def clear(self) -> None: ...


class BlockOffsets:
    """Block offsets and the positional tree of a list of blocks (a base class).

    The subclass owns the blocks (``_lists``) and the ``SortedList`` whose
    tree and length are read here (``_sl``, ``_index``); this class owns
    ``_offsets``, ``_valid``, ``_from``, ``_lag`` and ``_walks``.

    Runtime complexity: O(1) per cached look-up, O(log B) per tree walk,
    O(B) per recomputation (B blocks)
    """

    __slots__ = ("_from", "_lag", "_offsets", "_valid", "_walks")

    _lists: list[Any]
    _index: list[int]
    _sl: PrimaryList

    def _init_offsets(self) -> None:
        """No block yet: no offset."""
        # Block offsets (see _offset_of): exact for k < _valid, once _lag is
        # added for k >= _from; _walks counts tree walks since.
        self._offsets = array("q")
        self._valid = self._from = self._lag = self._walks = 0

    def _clear_offsets(self) -> None:
        """Every block is gone."""
        del self._offsets[:]
        self._valid = self._from = self._lag = self._walks = 0

    def _locate_position(self, position: int) -> tuple[int, int]:
        """``(block, offset)`` of a 0-based position in ``0 <= position < len``.

        The two ends (top-N and bottom-N queries) are answered from the first
        and last block lengths; otherwise a ``bisect`` of the block offsets
        when they are all exact, or the descent of the positional tree.
        """
        lists = self._lists
        if position < len(lists[0]):
            return 0, position
        last_start = self._sl._len - len(lists[-1])
        if position >= last_start:
            return len(lists) - 1, position - last_start
        offsets = self._offsets
        valid = self._valid
        if valid != len(lists):
            if self._from < len(lists) and position - self._lag >= offsets[self._from]:
                shifted = position - self._lag  # past the gap: the lagged blocks
                i = bisect_right(offsets, shifted, self._from) - 1
                return i, shifted - offsets[i]
            i = bisect_right(offsets, position, 0, valid) - 1
            if valid and position - offsets[i] < len(lists[i]):
                return i, position - offsets[i]
            if self._from - valid <= GAP_SCAN:  # a narrow gap: sum its blocks
                gap = map(len, lists[valid : self._from])
                ends = list(accumulate(gap, initial=self._gap_start()))
                i = bisect_right(ends, position) - 1
                return valid + i, position - ends[i]
            # A wide gap: walk; enough walks pay for a rebuild (see _offset_of).
            self._walks += 1
            if self._walks < max(REBUILD_MIN, len(lists) >> REBUILD_SHIFT):
                return self._sl._pos(position)
            self._rebuild_offsets()
        i = bisect_right(offsets, position) - 1
        return i, position - offsets[i]

    def _offset_of(self, i: int) -> int:
        """Number of entries before block ``i``.

        The positional tree answers in O(log B) Python steps (a walk from
        leaf to root, ``SortedList._loc``); a cached offset answers in one.
        In-block moves leave the offsets exact, short cross-block moves
        patch them, splits and merges insert or delete a slot.  An insert or
        remove in block ``i`` shifts the later blocks: the offsets before it
        stay exact (``_valid``), those after it keep their values behind a
        shared lag (``_from``, ``_lag``); writes in two blocks leave a gap::

            blocks      [ 3 ]   [ 2 ]   [ 4 ]   [ 5 ]   [ 1 ]
            _offsets      0       3       5       9      14     _valid = _from = 5
            insert into block 1:  _valid = 2, _from = 2, _lag = 1
            insert into block 2:  _from = 3, _lag = 2 (block 2 in the gap)

        A narrow gap (``GAP_SCAN``) is summed; a game's new players join at
        the bottom, so it stays there and narrow (before, ``bench/
        tail_causes.py`` at 10^6 recomputed the offsets 50-215 times a
        second, ~0.2 ms each).  A wide one is left to the tree walk, and
        after enough walks (``REBUILD_MIN``, ``REBUILD_SHIFT``) recomputed.
        Measured at N = 1,000,000 (2,000 blocks): ``position`` 4.6 µs with
        the cached offsets against 5.6 µs with the walk alone.
        """
        if i < self._valid:
            return self._offsets[i]
        if i >= self._from:
            return self._offsets[i] + self._lag
        if self._from - self._valid <= GAP_SCAN:
            return self._gap_start() + sum(map(len, islice(self._lists, self._valid, i)))
        self._walks += 1
        if self._walks >= max(REBUILD_MIN, len(self._lists) >> REBUILD_SHIFT):
            self._rebuild_offsets()
            return self._offsets[i]
        return self._sl._loc(i, 0)

    def _gap_start(self) -> int:
        """Entries before the first block of the gap (block ``_valid``)."""
        valid = self._valid
        return self._offsets[valid - 1] + len(self._lists[valid - 1]) if valid else 0

    def _rebuild_offsets(self) -> None:
        """Recompute the stale offsets (blocks ``_valid`` and later)."""
        lists = self._lists
        if self._valid == len(lists):
            return
        offsets = self._offsets
        valid = self._valid
        start = offsets[valid - 1] + len(lists[valid - 1]) if valid else 0
        del offsets[valid:]
        offsets.extend(accumulate(map(len, islice(lists, valid, len(lists) - 1)), initial=start))
        self._valid = self._from = len(lists)
        self._walks = self._lag = 0

    def _resized(self, i: int, delta: int) -> None:
        """Block ``i`` grew (or shrank) by ``delta``: update the tree and offsets.

        The tree gets ``delta`` on leaf ``i`` and its ancestors, a walk from
        the leaf to the root as ``SortedList._expand`` does (see
        ``SortedList._loc`` for the tree layout).  The offsets after block
        ``i`` shift by ``delta``: the lag's (see ``_offset_of``).
        """
        valid = self._valid
        if i + 1 < valid:
            if valid == self._from and (not self._lag or valid == len(self._lists)):
                self._from, self._lag = i + 1, 0  # the exact ones after i: lagged
            self._valid = i + 1
        if self._from <= i:
            self._from = i + 1  # (blocks _from .. i: the gap)
        self._lag += delta
        index = self._index
        if index:
            child = self._sl._offset + i
            while child:
                index[child] += delta
                child = (child - 1) >> 1
            index[0] += delta

    def _transfer(self, i: int, j: int) -> None:
        """One entry went from block ``i`` to block ``j``: update the tree and offsets.

        In the positional tree, all leaves sit on the bottom row, so the two
        walks climb in lockstep.  They meet at the lowest common ancestor;
        from there up, ``-1`` and ``+1`` cancel and nothing changes::

                     14              <- unchanged
                  5      9          <- unchanged above the meeting point
                3   2  4   5
                    i  j
            leaf i: 2 -> 1, node 5 -> 4;  leaf j: 4 -> 5, node 9 -> 10

        A move between neighbouring blocks costs 1-3 steps here instead of two
        walks of ~11 steps each at 1,000 blocks.

        The offsets of the blocks after the lower of ``i`` and ``j`` up to the
        higher one shift by one entry: patched when there are few of them
        (``PATCH_LIMIT``), made stale otherwise.
        """
        if i < j:
            lo, hi, delta = i + 1, j + 1, -1
        else:
            lo, hi, delta = j + 1, i + 1, 1
        if hi - lo > PATCH_LIMIT:
            self._valid = min(self._valid, lo)
            self._from = max(self._from, hi)
        else:  # (a slot in the gap is patched too: harmless)
            offsets = self._offsets
            for k in range(lo, hi):
                offsets[k] += delta
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

    def _check_positions(self) -> None:
        """Assert that the tree and the offsets agree with the block lengths.

        Runtime complexity: O(N)
        """
        lists = self._lists
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

        # One offset per block: exact before _valid, from _from on with _lag.
        offsets = self._offsets
        assert len(offsets) == len(lists), "not one offset per block"
        assert 0 <= self._valid <= self._from <= len(lists), "_valid or _from out of range"
        total = 0
        for i, ps in enumerate(lists):
            lag = 0 if i < self._valid else self._lag if i >= self._from else None
            assert lag is None or offsets[i] + lag == total, f"offset of block {i} is stale"
            total += len(ps)
