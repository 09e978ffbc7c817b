"""Where a durable board keeps its log's state: slots, not the instance dictionary.

A :class:`~rankengine.durable.board.DurableLeaderboard` is a
:class:`~rankengine.Leaderboard` (22 attributes: settings, index, maps,
caches, lock) plus the state of its log: the directory and its lock, the
active segment's writer, the sequence number and clock of the last record,
the fsync and compaction threads and their locks (36 attributes).  They
live in the slots of :class:`LogState`, a base class of the durable board,
so that the instance dictionary holds the Leaderboard's attributes alone.

Why it matters: CPython 3.11 and later keep an instance's attributes in a
compact layout shared by every instance of the class, and specialize
``self.x`` and ``self.method()`` on that layout, only while the class has
at most 30 attribute names.  With all 58 in the dictionary, every attribute
and method look-up of every read and write of a durable board took the
slow, unspecialized path.  Measured with ``bench/write_cost.py``
(instructions per operation of the latency mix, 100,000 members): the
durable board's reads and writes, its log aside, cost ~500 instructions an
operation (1.6%) more than the same board in memory before, the same after;
its log ~600 less.

The slots are assigned by the board's ``__init__`` (read one before then
and it raises :class:`AttributeError`, as an unset attribute does); the
names are listed here once.  The price: a Leaderboard subclass that
declares ``__slots__`` of its own cannot be opened as a durable board (two
bases with slots cannot be combined); the open says so.

Runtime complexity: O(1) per attribute access (slot descriptors).

>>> import tempfile
>>> from rankengine import Leaderboard
>>> with tempfile.TemporaryDirectory() as tmp:
...     with Leaderboard.open(tmp) as board:
...         print(len(vars(board)) <= SHARED_KEYS_LIMIT, "_writer" in vars(board))
True False
"""

from __future__ import annotations

from typing import Final

__all__ = ["SHARED_KEYS_LIMIT", "LogState"]

#: Most attribute names for which CPython (3.11+) shares an instance layout
#: among a class's instances and specializes look-ups on it
#: (``SHARED_KEYS_MAX_SIZE`` in Objects/dictobject.c).
SHARED_KEYS_LIMIT: Final = 30


class LogState:
    """The slots of a durable board's log state (see the module docstring);
    :class:`~rankengine.durable.board.DurableLeaderboard` assigns them."""

    __slots__ = (
        "_acks",
        "_active_first",
        "_capture",
        "_checkpoints",
        "_close_lock",
        "_closed",
        "_compact_after",
        "_compact_lock",
        "_compact_min",
        "_compact_ratio",
        "_compactor",
        "_dirlock",
        "_dirty",
        "_failure",
        "_flusher",
        "_framer",
        "_last_ms",
        "_manifest",
        "_mode",
        "_now",
        "_pid",
        "_policy",
        "_released",
        "_retain",
        "_rotation",
        "_seq",
        "_snapshot_size",
        "_stop",
        "_sync_cond",
        "_sync_each",
        "_sync_lock",
        "_sync_started",
        "_writer",
        "_writer_class",
        "path",
        "recovery_notes",
    )
