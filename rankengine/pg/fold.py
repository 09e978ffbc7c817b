"""Applying many events to a board at once: fold them, then write each member once.

A joining process catches up on hundreds of thousands of events; one
:meth:`~rankengine.Leaderboard.incr` per event costs ~11 us (measured: ~90,000
a second), which alone would miss the catch-up target (200,000 events a
second).  A run of plain events (``incr``, ``set`` and ``remove`` with an int
or float, on a board with a scalar score) is folded instead: each member's
running score is computed in a dict, then the board is written once per
member (``remove_many`` for the members removed on the way, ``set_many`` for
the rest, in the order of each member's *last change*).

The result is the one that applying the events one by one gives, ties
included:

* a member's score is the same sums in the same order (floats round alike);
* an event that leaves a score unchanged (``incr`` by 0, a ``set`` to the
  value held) does not count as a change, as on the board, so it does not
  move the member among its ties;
* the board gives each member of a ``set_many`` a new tie clock in the order
  of the pairs, which is the order of the members' last changes: the same
  relative order as one write per event (the absolute clock numbers differ,
  which no read shows).

The common run, increments by non-zero integers, takes a shorter path: the
deltas are summed per member without reading the board (integer sums do
not depend on their grouping), then the final scores are written with one
``set_many`` (into an empty board it builds the index in bulk).  A catch-up
keeps summing across chunks (:func:`add_increments`) and writes once at the
end (:func:`write_increments`).  A present member whose score is a float,
or whose deltas sum to zero, sends the run to the general path.

What does not fold is applied one by one: metadata events (a barrier), a
value that is not an int or float, a board with composite scores or a time
axis, and the rare member whose score changes and comes back to where it
started within one run (one by one it gets a new tie clock; a fold would
see no change).

>>> from rankengine import Leaderboard
>>> from rankengine.pg.events import StoreEvent
>>> board = Leaderboard()
>>> events = [StoreEvent(i + 1, "incr", m, 5, 0, None) for i, m in enumerate("abab")]
>>> fold_into(board, events), board.items()
(0, [('a', 10), ('b', 10)])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from rankengine.board.leaderboard import Leaderboard
from rankengine.pg.events import INCR, REMOVE, SET, StoreEvent

__all__ = ["add_increments", "can_fold", "fold_into", "write_increments"]

_ABSENT: Final = object()
_PLAIN: Final = (int, float)


def can_fold(board: Any) -> bool:
    """Whether :func:`fold_into` may write ``board``: a
    :class:`~rankengine.Leaderboard` (or a subclass, such as a durable board)
    with a scalar score.

    Runtime complexity: O(1)
    """
    return isinstance(board, Leaderboard) and isinstance(board.order, str)


def fold_into(board: Leaderboard, events: Sequence[StoreEvent]) -> int | None:
    """Apply ``events`` (all ``incr``/``set``/``remove`` with plain numbers)
    to ``board`` as one fold; return how many changed nothing because the
    board refused them (an overflow, a NaN), or None when the run cannot be
    folded exactly (the board is unchanged then: apply one by one).

    Runtime complexity: O(k + m log N) for k events on m distinct members.
    """
    if _fold_int_increments(board, events):
        return 0
    score = board.score
    initial: dict[Any, Any] = {}
    running: dict[Any, Any] = {}
    #: members in the order of their last change (re-inserted on each change)
    changed: dict[Any, None] = {}
    removed: set[Any] = set()
    refused = 0
    for event in events:
        member, op, value = event.member, event.op, event.value
        if type(value) not in _PLAIN and op != REMOVE:
            return None
        if member in running:
            current = running[member]
        else:
            current = initial[member] = running[member] = score(member, _ABSENT)
        if op == INCR:
            try:
                new = (0 if current is _ABSENT else current) + value
            except OverflowError:
                refused += 1
                continue
            if new != new:  # inf + -inf: the board refuses it
                refused += 1
                continue
        elif op == SET:
            new = value
        elif op == REMOVE:
            if current is not _ABSENT:
                removed.add(member)
                running[member] = _ABSENT
                changed.pop(member, None)
                changed[member] = None
            continue
        else:
            return None
        if current is _ABSENT or new != current:
            running[member] = new
            changed.pop(member, None)
            changed[member] = None
    pairs = []
    for member in changed:
        final = running[member]
        if member not in removed and final is not _ABSENT and final == initial[member]:
            return None  # changed and back: one by one gives a new tie clock
        if final is not _ABSENT:
            pairs.append((member, final))
    if removed:
        board.remove_many(list(removed))
    if pairs:
        board.set_many(pairs)
    return refused


def add_increments(sums: dict[Any, int], events: Sequence[StoreEvent]) -> bool:
    """Add ``events``' deltas to ``sums`` (member -> summed delta, kept in the
    order of each member's last change) if every one is an increment by a
    non-zero int; False (``sums`` unchanged) otherwise.

    Runtime complexity: O(k) for k events
    """
    for event in events:
        value = event[3]
        if type(value) is not int or not value or event[1] != INCR:
            return False
    pop = sums.pop
    for event in events:
        member = event[2]
        sums[member] = pop(member, 0) + event[3]
    return True


def write_increments(board: Leaderboard, sums: dict[Any, int]) -> bool:
    """Write summed increments to ``board`` as one ``set_many`` of the final
    scores, in the order of the members' last changes; False (the board
    unchanged) when that would not be exact: a present member whose score is
    not an int (float sums depend on their grouping), or whose deltas sum to
    zero (one by one it gets a new tie clock; the fold would see no change).

    Runtime complexity: O(m log N) for m members (a bulk build into an empty board)
    """
    if not len(board):
        board.set_many(list(sums.items()))  # absent members: 0 + sum, exactly
        return True
    score = board.score
    pairs = []
    for member, delta in sums.items():
        held = score(member, _ABSENT)
        if held is _ABSENT:
            pairs.append((member, delta))
        elif type(held) is not int or not delta:
            return False
        else:
            pairs.append((member, held + delta))
    board.set_many(pairs)
    return True


def _fold_int_increments(board: Leaderboard, events: Sequence[StoreEvent]) -> bool:
    """The fast path: True if ``events`` were all increments by non-zero
    ints and are now applied; False (the board unchanged) otherwise."""
    sums: dict[Any, int] = {}
    return add_increments(sums, events) and write_increments(board, sums)
