"""A joining process's catch-up, folded by PostgreSQL: one row per member, not per event.

A process that starts with empty boards must apply every event in the
table.  Reading and decoding each event in Python is bounded at roughly
165,000 events a second on a small machine (measured; ``bench/fleet.py``),
whatever the board then does with it.  For a view that takes every event
(no route, no clock) on an exact scalar board, PostgreSQL can do the
per-event work itself on the typed rows (:mod:`rankengine.pg.schema`):

1. **The range.**  From the view's position to the store's head as read
   first (commits are visible in ``seq`` order, so no event below it can
   appear later), cut before the first *payload* row (a float, a ``meta``,
   an event of a shape the columns do not hold: a partial index finds it):
   those rows are applied by the ordinary path afterwards.
2. **One GROUP BY** over the typed rows in range (split into
   :data:`FOLD_PARTS` parts by a hash of the member, aggregated at once by
   as many server processes), per member: the sum of
   the values, how many events, whether all were ``incr``, and the sequence
   number of its *last change*::

       last = max(seq) FILTER (WHERE value <> 0), or min(seq) if none

   For a member with increments only, starting absent (the board is
   empty), every increment by a non-zero integer changes its score, and an
   increment by zero changes it only when it makes the member present (the
   first event); so this is exactly the event after which one-by-one
   application last gave the member a new tie clock.
3. **The other members** (a ``set`` or ``remove`` among their events, or a
   sum beyond 64 bits) are rare in a game's stream; their events are read
   back in ``seq`` order and replayed in Python by the board's rule (a
   change is a new score, or a member that was absent; a ``remove`` makes
   it absent), which gives their final score and last change.
4. **The board**, empty, is loaded with one ``set_many`` of the members
   present at the end, in the order of their last changes: the board gives
   each member of a ``set_many`` a tie clock in the order of the pairs, so
   ties fall as one event at a time would have left them (the absolute
   clock numbers differ, which no read shows).

What it costs: one aggregate over the range on the server (a hash table of
the members: :data:`FOLD_WORK_MEM` keeps it in memory), one row per member
over the wire, one bulk load.  ``tests/test_pg_catchup.py`` checks it
against one-by-one application on random streams with many ties.

>>> replay_members([(1, 0, "a", 5), (2, 0, "b", 5), (3, 1, "a", 5), (4, 2, "b", None)])
{'a': (5, 1)}
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from operator import itemgetter
from typing import Any, Final, NamedTuple

from rankengine.pg.columns import INT64_MAX, INT64_MIN
from rankengine.pg.schema import OP_CODES
from rankengine.pg.store import EventStore

__all__ = ["FOLD_PARTS", "FOLD_WORK_MEM", "Folded", "fold_in_sql", "replay_members"]

#: The members are split into this many parts (by a hash of the name, a
#: power of two), each aggregated by its own server process at once: a
#: server with several cores (and a machine shared with other jobs) works
#: on them side by side (measured, 400,000 events over 100,000 members on
#: the shared 2-core machine, best of 4, interleaved: 1 part 2.50 s, 2 parts
#: 2.25 s; again at a higher load 3.15, 2.69, and 4 parts 2.66 s).
FOLD_PARTS: Final = 2
#: ``work_mem`` for the fold's session: the GROUP BY's hash table of
#: members (measured: ~28 MB for 100,000 members) stays in memory instead
#: of spilling to disk in batches (PostgreSQL's default is 4 MB).
FOLD_WORK_MEM: Final = "256MB"

_INCR: Final = OP_CODES["incr"]
_SET: Final = OP_CODES["set"]
_ABSENT: Final = object()


class Folded(NamedTuple):
    """What PostgreSQL folded: the board's pairs in the order of their last
    changes, the range's last sequence number, and its event count."""

    pairs: list[tuple[str, int]]
    upto: int
    events: int


def replay_members(rows: Iterable[Sequence[Any]]) -> dict[str, tuple[int, int]]:
    """``member -> (final score, seq of its last change)`` of ``(seq, op,
    member, value)`` rows in ``seq`` order, every member starting absent;
    members absent at the end are left out.

    Runtime complexity: O(k) for k rows
    """
    state: dict[str, tuple[Any, int]] = {}
    absent = _ABSENT
    for seq, op, member, value in rows:
        current = state.get(member, (absent, 0))[0]
        if op == _INCR:
            new = (0 if current is absent else current) + value
        elif op == _SET:
            new = value
        else:  # remove
            state[member] = (absent, 0)
            continue
        if current is absent or new != current:
            state[member] = (new, seq)
    return {m: s for m, s in state.items() if s[0] is not absent}


def fold_in_sql(store: EventStore, after: int) -> Folded | None:
    """Fold the typed rows past ``after`` (see the module docstring) for a
    view with an empty board; None when there is nothing to fold (an
    earlier table version, no typed row before the next payload row).

    Runtime complexity: O(k) on the server for k events, O(m log m) here
    for m members, two or three round trips
    """
    if store.version < 2 and store.detect_version() < 2:
        return None
    t = store.table
    head = store.head()
    if head <= after:
        return None
    barrier = store.select(
        f"SELECT min(seq) FROM {t} WHERE seq > %s AND seq <= %s AND payload IS NOT NULL",
        (after, head),
    )[0][0]
    upto = head if barrier is None else int(barrier) - 1
    if upto <= after:
        return None
    parts = store.select_each(
        [
            (
                f"SELECT member, CASE WHEN bool_and(op = {_INCR})"
                f" AND sum(value) BETWEEN {INT64_MIN} AND {INT64_MAX} THEN sum(value)::int8 END,"
                " coalesce(max(seq) FILTER (WHERE value <> 0), min(seq)), count(*)::int8"
                f" FROM {t} WHERE seq > %s AND seq <= %s AND hashtext(member) & %s = %s"
                " GROUP BY member ORDER BY 3",
                (after, upto, FOLD_PARTS - 1, part),
            )
            for part in range(FOLD_PARTS)
        ],
        setup=f"SET work_mem = '{FOLD_WORK_MEM}'",
    )
    rows = [row for part in parts for row in part]
    if FOLD_PARTS > 1:
        rows.sort(key=itemgetter(2))  # runs ordered by last change: a merge
    if not rows:
        return None
    # (every pass over the rows in C: ~1 us a member less than a loop)
    events = sum(map(itemgetter(3), rows))
    if None not in map(itemgetter(1), rows):  # increments only: the common stream
        return Folded(list(map(itemgetter(0, 1), rows)), upto, events)
    others = [row[0] for row in rows if row[1] is None]
    done = [(last, member, score) for member, score, last, _ in rows if score is not None]
    replayed = replay_members(
        store.select(
            f"SELECT seq, op, member, value FROM {t}"
            " WHERE seq > %s AND seq <= %s AND member = ANY(%s) ORDER BY seq",
            (after, upto, others),
        )
    )
    done.extend((last, member, score) for member, (score, last) in replayed.items())
    done.sort(key=itemgetter(0))  # the last changes: one per member, none equal
    return Folded([(member, score) for _, member, score in done], upto, events)
