"""A board's whole state moved in O(1), and an old state freed in pieces.

Two moves that let a large change reach a board without a long pause:

* :func:`adopt_state` gives a board the state of another one, built off
  its lock, by exchanging their containers (a few attribute assignments
  under the lock): readers see the old state until then, the new one
  after, never a mix.
* :func:`release_in_pieces` empties a board that nobody else holds a
  piece at a time (:func:`~rankengine.index.teardown.empty_in_pieces`
  for the index, ``popitem`` for the maps), letting other threads run
  between pieces.  Freeing a board of 1,000,000 members in one go holds
  the interpreter's global lock for 0.1-1 s (measured with
  ``bench/bulk_holds.py``), a stall of every thread.  In pieces, it still
  costs the calling thread that long: a thread that must not stall (an
  event loop's, see :mod:`rankengine.ledger.aio`) sets
  ``RELEASE.elsewhere`` while it writes, and the boards it would free go
  to one background thread instead (:func:`wait_released` waits for it).

:func:`unshared` tells whether the caller's reference is the only one, so
that a board someone still reads (a reader's reference to a dropped
period, a window that has yet to read the bucket) is left to ordinary
reference counting.

>>> from rankengine.board.leaderboard import Leaderboard
>>> live, built = Leaderboard(), Leaderboard()
>>> _ = live.set("ann", 1), built.set_many({"bob": 2, "cy": 3})
>>> adopt_state(live, built)
>>> live.items(), built.items()
([('cy', 3), ('bob', 2)], [('ann', 1)])
>>> release_in_pieces(built)
>>> len(built), len(live)
(0, 2)
"""

from __future__ import annotations

import queue
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, Final

from rankengine.board.core import BoardCore
from rankengine.board.tiemap import TieMap
from rankengine.index.teardown import PIECE, empty_in_pieces

__all__ = [
    "RELEASE",
    "RELEASER_NAME",
    "STATE_FIELDS",
    "adopt_state",
    "empty_map_in_pieces",
    "empty_ties_in_pieces",
    "let_go",
    "release_in_pieces",
    "unshared",
    "wait_released",
]

#: Everything :func:`adopt_state` exchanges: the containers of a board's
#: state, its index's bound look-ups, and the caches derived from them.
#: (Settings -- order, tie break, backend -- must already be equal.)
STATE_FIELDS: Final = (
    "_index",
    "_move_member",
    "_position_of",
    "_primary",
    "_tie",
    "_meta",
    "_clock",
    "_member_type",
    "_counts",
    "_distinct",
    "_top",
    "_top_floor",
)


def let_go(seconds: float = 0.0) -> None:
    """Let go of the GIL for ``seconds`` (a moment: 0) between two pieces of
    background work, so that a thread serving calls (an event loop, a game
    tick) waits for one piece at most: CPython hands the GIL over only
    every 5 ms otherwise.  The pause of every piecewise job here (frees,
    staged batches, compactions, preloads).

    Runtime complexity: O(1)
    """
    time.sleep(seconds)


class _Where(threading.local):
    """Per thread: whether :func:`release_in_pieces` hands its boards to
    the background thread (True) or frees them on the calling one."""

    elsewhere = False


#: Set ``RELEASE.elsewhere = True`` on a thread that must not spend O(N)
#: freeing a board (and back to False after): see the module docstring.
RELEASE: Final = _Where()

#: The name of the thread that frees the boards handed to it.
RELEASER_NAME: Final = "rankengine-release"

#: Boards handed over, and the thread that frees them (started on first use).
_handed: queue.Queue[tuple[BoardCore, Callable[[], None], int]] = queue.Queue()
_releaser: list[threading.Thread] = []
_releaser_lock = threading.Lock()


def _release_handed() -> None:
    while True:
        board, pause, piece = _handed.get()
        try:
            _release_now(board, pause, piece)
        finally:
            del board
            _handed.task_done()


def wait_released() -> None:
    """Return once every board handed to the background thread is freed.

    Runtime complexity: the frees still to do
    """
    _handed.join()


def adopt_state(board: BoardCore, source: BoardCore) -> None:
    """Give ``board`` the state of ``source`` and ``source`` the old state
    of ``board``, under ``board``'s lock.  ``source`` must have
    ``board``'s settings and be private to the caller (no lock is taken on
    it); free it afterwards with :func:`release_in_pieces`.

    Runtime complexity: O(1)
    """
    if (source._order, source._tie_break, source._backend) != (
        board._order,
        board._tie_break,
        board._backend,
    ):
        raise ValueError("adopt_state: the boards' settings differ")
    with board._lock:
        for name in STATE_FIELDS:
            mine = getattr(board, name)
            setattr(board, name, getattr(source, name))
            setattr(source, name, mine)


def release_in_pieces(
    board: BoardCore, pause: Callable[[], None] = let_go, *, piece: int = PIECE
) -> None:
    """Empty ``board`` (which nobody else uses) ``piece`` objects at a time,
    calling ``pause()`` between pieces.  It is an empty board afterwards,
    or, where ``RELEASE.elsewhere`` is set, once the background thread has
    freed it (:func:`wait_released`).

    Runtime complexity: O(N), in O(N / piece) pieces; O(1) where
    ``RELEASE.elsewhere`` is set
    """
    if RELEASE.elsewhere:
        if not _releaser:
            with _releaser_lock:
                if not _releaser:
                    thread = threading.Thread(
                        target=_release_handed, name=RELEASER_NAME, daemon=True
                    )
                    thread.start()
                    _releaser.append(thread)
        _handed.put((board, pause, piece))
        return
    _release_now(board, pause, piece)


def _release_now(board: BoardCore, pause: Callable[[], None], piece: int) -> None:
    empty_in_pieces(board._index, pause, piece=piece)
    for name in ("_primary", "_meta", "_counts"):
        mapping = getattr(board, name)
        if mapping:
            setattr(board, name, {} if name != "_counts" else None)
            empty_map_in_pieces(mapping, pause, piece=piece)
    ties = board._tie
    if ties:
        board._tie = TieMap()
        empty_ties_in_pieces(ties, pause, piece=piece)
    board._distinct = None
    board._top = None
    board._member_type = None


def empty_map_in_pieces(
    mapping: dict[Any, Any], pause: Callable[[], None] = let_go, *, piece: int = PIECE
) -> None:
    """Empty ``mapping`` ``piece`` items at a time, calling ``pause()``
    between pieces (a dict of 10^6 items freed at once holds the GIL for
    tens of milliseconds).

    Runtime complexity: O(N), in O(N / piece) pieces

    >>> big = dict.fromkeys(range(10))
    >>> empty_map_in_pieces(big, piece=4)
    >>> big
    {}
    """
    pop = mapping.popitem
    while mapping:
        for _ in range(min(piece, len(mapping))):
            pop()
        pause()


def empty_ties_in_pieces(
    ties: TieMap, pause: Callable[[], None] = let_go, *, piece: int = PIECE
) -> None:
    """Empty a tie map shard by shard, calling ``pause()`` each time
    ``piece`` entries or more were freed since the last pause (a shard
    larger than ``piece`` is emptied as :func:`empty_map_in_pieces` does).

    Runtime complexity: O(N + TIE_SHARDS), in O(N / piece) pieces

    >>> ties = TieMap((m, -m) for m in range(10))
    >>> empty_ties_in_pieces(ties, piece=4)
    >>> len(ties)
    0
    """
    freed = 0
    for shard in ties.shards:
        if len(shard) > piece:
            empty_map_in_pieces(shard, pause, piece=piece)
            continue
        freed += len(shard)
        shard.clear()
        if freed >= piece:
            pause()
            freed = 0


def _references(obj: object) -> int:
    return sys.getrefcount(obj)


def _probe(obj: object) -> int:
    return _references(obj)  # the call shape of unshared()


def _one_local() -> int:
    held = object()
    return _probe(held)


#: What :func:`_references` counts for an object its caller holds in one
#: local variable and nothing else (measured, not assumed: the count of
#: the call's own references differs between Python versions).
_ALONE: Final = _one_local()


def unshared(board: object) -> bool:
    """True when the caller's one local variable is the only reference to
    ``board`` (call it as ``unshared(board)`` with that variable).

    Runtime complexity: O(1)

    >>> mine = object()
    >>> unshared(mine)
    True
    >>> also = mine
    >>> unshared(mine)
    False
    """
    return _references(board) <= _ALONE
