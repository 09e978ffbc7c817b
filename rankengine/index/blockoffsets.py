"""The block offsets of :class:`~rankengine.index.sortedlist.SortedListIndex`:
from a position to its block, and from a block to the entries before it.

A list of blocks answers "which block holds position ``p``" and "how many
entries precede block ``i``" from the block lengths.  Two sequences keep
them: ``_lens`` (a list of the block lengths, kept exact by every write)
and ``_offsets`` (``array('q')``, the entries before each block), a cache
that is exact before ``_valid`` and exact once ``_lag`` is added from
``_from`` on; the blocks in between (the gap) are recomputed from ``_lens``
when a look-up lands there (see :meth:`BlockOffsets._offset_of`)::

    blocks      [ 3 ]   [ 2 ]   [ 4 ]   [ 5 ]   [ 1 ]
    _lens         3       2       4       5       1
    _offsets      0       3       5       9      14     _valid = _from = 5
    insert into block 1:  _valid = 2, _from = 2, _lag = 1
    insert into block 2:  _from = 3, _lag = 2 (block 2 in the gap)

Why no positional tree
----------------------

``sortedcontainers.SortedList`` answers the same questions with a tree of
block lengths (``_index``: a walk from leaf to root) that every split or
merge discards and the next walk rebuilds in pure Python, reading the
length of every block (a cache miss each).  Measured at N = 1,000,000 in
the latency mix (2,000-2,500 blocks): 29 rebuilds in 1.68M operations,
median 0.37 ms, max 0.84 ms of CPU, each a pause of the operation that
triggered it.  The lengths list answers instead: summing or accumulating
it is C work on one list, no block is touched, and a split or
merge inserts or deletes one slot.  It costs one ``_lens[i] += delta`` per
insert or remove (two per move across blocks), where the tree cost a walk
of ~11 steps whenever it was built.  A list, not an ``array('q')``: CPython
3.11 specialises ``list[int] += int`` and not the array's item access;
counted by cachegrind in the latency mix at N = 1,000,000 (runs of
240,000 and 120,000 operations, the difference), 36,025 instructions an
operation with the tree, 36,209 with an array of lengths, 36,140 with a
list (+0.3%).

:class:`BlockOffsets` is a base of ``SortedListIndex`` that holds this
bookkeeping and nothing else: the index calls :meth:`~BlockOffsets._resized`,
:meth:`~BlockOffsets._transfer`, :meth:`~BlockOffsets._split_offsets` and
:meth:`~BlockOffsets._merge_offsets` when block lengths change, and reads
positions through :meth:`~BlockOffsets._locate_position` and
:meth:`~BlockOffsets._offset_of`.

Invariants (verified by :meth:`BlockOffsets._check_positions`)::

    len(_lens) == len(_offsets) == number of blocks
    _lens[k] == len(block k)
    _valid <= _from
    _offsets[k] == entries before block k, for k < _valid
    _offsets[k] + _lag == entries before block k, for k >= _from
    the sortedcontainers positional tree is never built
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from itertools import accumulate
from typing import Any, Final, Protocol

__all__ = [
    "FILL_CHUNK",
    "PATCH_LIMIT",
    "BlockOffsets",
    "PrimaryList",
]

#: A cross-block move shifts the offsets of the blocks between its source and
#: destination by one; up to this many are patched in place (one Python step
#: each), a farther move invalidates them instead.
PATCH_LIMIT: Final = 8

#: A position look-up that lands in the gap makes the offsets exact this many
#: blocks at a time from the start of the gap, until the position's block is
#: reached: the work follows the distance into the gap, not its width
#: (``accumulate`` into an array, ~40-60 ns a block on a loaded 2-core VM,
#: so a chunk is ~10-15 µs).
FILL_CHUNK: Final = 256


class PrimaryList(Protocol):
    """The ``sortedcontainers.SortedList`` internals the index relies on.

    ``sortedcontainers`` ships no type information; this protocol names the
    attributes used, so mypy checks their use.
    """

    _lists: list[Any]
    _maxes: Any
    _index: list[int]
    _len: int
    _load: int

    def clear(self) -> None: ...


class BlockOffsets:
    """Block lengths and cached block offsets of a list of blocks (a base class).

    The subclass owns the blocks (``_lists``) and the ``SortedList`` whose
    length is read here (``_sl``); this class owns ``_lens``, ``_offsets``,
    ``_valid``, ``_from`` and ``_lag``.

    Runtime complexity: O(1) per cached look-up; a look-up in the gap
    O(distance into the gap) at C speed; a split or merge O(B) memmove
    (B blocks)
    """

    __slots__ = ("_from", "_lag", "_lens", "_offsets", "_valid")

    _lists: list[Any]
    _index: list[int]
    _sl: PrimaryList

    def _init_offsets(self) -> None:
        """No block yet: no length, no offset."""
        self._lens: list[int] = []
        self._offsets = array("q")
        self._valid = self._from = self._lag = 0

    def _clear_offsets(self) -> None:
        """Every block is gone."""
        del self._lens[:]
        del self._offsets[:]
        self._valid = self._from = self._lag = 0

    def _first_block(self) -> None:
        """The first block, of one entry, was made."""
        self._lens.append(1)
        self._offsets.append(0)
        self._valid = self._from = 1
        self._lag = 0

    def _reset_offsets(self) -> None:
        """The blocks were made in bulk: read their lengths, compute every offset.

        Runtime complexity: O(B)
        """
        self._lens[:] = map(len, self._lists)
        self._valid = self._from = 0
        self._rebuild_offsets()

    def _locate_position(self, position: int) -> tuple[int, int]:
        """``(block, offset)`` of a 0-based position in ``0 <= position < len``.

        The two ends (top-N and bottom-N queries) are answered from the first
        and last block lengths; otherwise a ``bisect`` of the exact or the
        lagged offsets; a position in the gap makes the offsets exact from
        the start of the gap up to its block (:meth:`_fill`).
        """
        lens = self._lens
        if position < lens[0]:
            return 0, position
        last_start = self._sl._len - lens[-1]
        if position >= last_start:
            return len(lens) - 1, position - last_start
        offsets = self._offsets
        valid = self._valid
        if valid != len(lens):
            if self._from < len(lens) and position - self._lag >= offsets[self._from]:
                shifted = position - self._lag  # past the gap: the lagged blocks
                i = bisect_right(offsets, shifted, self._from) - 1
                return i, shifted - offsets[i]
            if not valid or position >= offsets[valid - 1] + lens[valid - 1]:
                # In the gap: fill chunk by chunk until the position is passed.
                while True:
                    stop = min(self._valid + FILL_CHUNK, self._from)
                    self._fill(stop)
                    if stop == self._from or position < offsets[stop - 1] + lens[stop - 1]:
                        break
            i = bisect_right(offsets, position, 0, self._valid) - 1
            return i, position - offsets[i]
        i = bisect_right(offsets, position) - 1
        return i, position - offsets[i]

    def _offset_of(self, i: int) -> int:
        """Number of entries before block ``i``.

        In-block moves leave the offsets exact, short cross-block moves
        patch them, splits and merges insert or delete a slot.  An insert or
        remove in block ``i`` shifts the later blocks: the offsets before it
        stay exact (``_valid``), those after it keep their values behind a
        shared lag (``_from``, ``_lag``); writes in two blocks leave a gap
        (see the module's picture).  A block in the gap is answered from
        ``_lens``, from the nearer end of the gap: from its start by making
        the offsets exact up to the block (they stay so), or from its end
        by a sum of the lengths in between (C speed, nothing kept).  A
        game's new players join at the bottom, so the gap usually stays
        there and narrow.
        """
        if i < self._valid:
            return self._offsets[i]
        if i >= self._from:
            return self._offsets[i] + self._lag
        end = self._from
        if i - self._valid <= end - i:
            self._fill(i + 1)
            return self._offsets[i]
        lens = self._lens
        after = self._offsets[end] + self._lag if end < len(lens) else self._sl._len
        return after - sum(lens[i:end])

    def _fill(self, stop: int) -> None:
        """Make the offsets of blocks ``_valid .. stop - 1`` exact (``stop <= _from``)."""
        valid = self._valid
        if stop <= valid:
            return
        offsets = self._offsets
        lens = self._lens
        start = offsets[valid - 1] + lens[valid - 1] if valid else 0
        offsets[valid:stop] = array("q", accumulate(lens[valid : stop - 1], initial=start))
        self._valid = stop

    def _rebuild_offsets(self) -> None:
        """Recompute the stale offsets (blocks ``_valid`` and later).

        Runtime complexity: O(B)
        """
        lens = self._lens
        if self._valid == len(lens):
            return
        self._from = len(lens)  # (the lagged blocks are recomputed too)
        self._fill(len(lens))
        self._lag = 0

    def _resized(self, i: int, delta: int) -> None:
        """Block ``i`` grew (or shrank) by ``delta``: update its length and the offsets.

        The offsets after block ``i`` shift by ``delta``: the lag's (see
        ``_offset_of``).
        """
        self._lens[i] += delta
        valid = self._valid
        if i + 1 < valid:
            if valid == self._from and (not self._lag or valid == len(self._lens)):
                self._from, self._lag = i + 1, 0  # the exact ones after i: lagged
            self._valid = i + 1
        if self._from <= i:
            self._from = i + 1  # (blocks _from .. i: the gap)
        self._lag += delta

    def _transfer(self, i: int, j: int) -> None:
        """One entry went from block ``i`` to block ``j``: update lengths and offsets.

        The offsets of the blocks after the lower of ``i`` and ``j`` up to the
        higher one shift by one entry: patched when there are few of them
        (``PATCH_LIMIT``), made stale otherwise.
        """
        lens = self._lens
        lens[i] -= 1
        lens[j] += 1
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

    def _split_offsets(self, i: int, half: int) -> None:
        """Block ``i`` was cut after ``half`` entries into ``i`` and ``i + 1``.

        The new block's offset (block ``i``'s plus ``half``) takes a slot, in
        block ``i``'s frame, or right after the exact blocks the lagged one
        (the lag goes on).
        """
        lens = self._lens
        lens.insert(i + 1, lens[i] - half)
        lens[i] = half
        offsets = self._offsets
        if i + 1 == self._valid == self._from:
            offsets.insert(i + 1, offsets[i] + half - self._lag)
        else:
            offsets.insert(i + 1, offsets[i] + half)
            self._valid += i < self._valid
            self._from += i < self._from

    def _merge_offsets(self, i: int) -> None:
        """Block ``i`` was appended to block ``i - 1``: its slots go."""
        lens = self._lens
        lens[i - 1] += lens[i]
        del lens[i]
        del self._offsets[i]  # block i's slot; i - 1 and the later ones keep theirs
        self._valid -= i < self._valid
        self._from -= i < self._from

    def _check_positions(self) -> None:
        """Assert that the lengths and the offsets agree with the blocks.

        Runtime complexity: O(N)
        """
        lists = self._lists
        # No positional tree: the lengths and offsets answer every look-up.
        assert not self._index, "the positional tree is built"

        # One length per block, exact.
        lens = self._lens
        assert len(lens) == len(lists), "not one length per block"
        for i, block in enumerate(lists):
            assert lens[i] == len(block), f"length of block {i} is stale"

        # One offset per block: exact before _valid, from _from on with _lag.
        offsets = self._offsets
        assert len(offsets) == len(lists), "not one offset per block"
        assert 0 <= self._valid <= self._from <= len(lists), "_valid or _from out of range"
        total = 0
        for i, ps in enumerate(lists):
            lag = 0 if i < self._valid else self._lag if i >= self._from else None
            assert lag is None or offsets[i] + lag == total, f"offset of block {i} is stale"
            total += len(ps)
