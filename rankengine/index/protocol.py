"""The ordered-index protocol that every exact backend implements.

A :class:`~rankengine.Leaderboard` keeps two things:

* a hash map ``member -> (score, tie)`` for O(1) score look-ups, and
* an *ordered index* of entries ``(primary, tie, member)``, sorted ascending
  by the key ``(primary, tie)``, which answers every positional question in
  O(log N).

The index is deliberately small and knows nothing about leaderboards: no
rank styles, no descending order, no validation.  It only keeps entries in
key order and counts them.  The board maps its public, 1-based ranks onto the
0-based positions of the index in exactly one place.

Invariant (every backend, checked by its ``_check()``)::

    keys are unique, and
    entry(i).key < entry(i + 1).key   for 0 <= i < len - 1

Terms used by every backend:

``primary``
    The part of the key that a score becomes: a number (``int`` or ``float``,
    never NaN) or, for composite scores, a tuple of numbers.  Entries that
    share a score share a primary.
``tie``
    The tie-break that makes keys unique: a logical clock (``int``) or the
    member itself.  Within one primary, ties are distinct.
``position``
    0-based index in ascending key order; ``count_less(key)`` is the
    position an absent key would take (``bisect_left``).

Keys are compared with Python's ``<`` on ``(primary, tie)`` tuples; a
backend may store the two halves apart (for instance in parallel lists) as
long as it answers as if it compared the tuples.

Runs of equal primaries, and the board's tie map
------------------------------------------------

A first-to-reach board (ties are logical clocks) keeps ``member -> tie`` only
for members that sit deep in a *run* of entries sharing their primary; any
other member's tie is read back from the index by scanning its run from the
*oldest end*, the end that holds the earliest clock.  Ties are ``-clock`` on
a descending board, so its runs hold the oldest entry last; they are
``clock`` on an ascending board, so the oldest entry comes first::

    descending board, one run of primary 7 (newest ... oldest):
        (7, -9, 'eve')  (7, -6, 'bob')  (7, -4, 'cid')  (7, -2, 'ann')
        distance:  3              2              1              0

A score change takes a new clock, so the entry lands at the newest end of
its new run, and later arrivals land beyond it: the entry's distance from
the oldest end (the number of run entries between them) can only shrink
while it keeps its score.  So a member that arrived at distance below
:data:`RUN_SCAN_LIMIT` is found by a scan of at most that many entries.

That is a performance property, not an invariant: entries given explicit
older clocks (a replay that is not in clock order) may land mid-run, and
the scan then goes on to the end of the run.  Correctness only needs the
tie map to agree with the index wherever it holds a member.

To let the board decide cheaply, an index may tell it where a new entry
landed.  It learns which end is the oldest from its ``oldest_last``
attribute (see the hooks below), and

``insert`` and ``move`` return
    True when the new entry lies fewer than :data:`RUN_SCAN_LIMIT` entries
    from the oldest end of its run (the board then forgets its tie), False
    when it may lie further (the board keeps it), or None when the index
    cannot tell (the board keeps it).  An index answers from the
    neighbours it has at hand; when that is not enough (the run crosses a
    block boundary, say) it answers False.

Optional hooks
--------------

:class:`OrderedIndex` is all a backend must have.  The board also looks for
the names below on the index (``getattr`` / ``hasattr``) and uses each one
that is present; when one is absent it falls back on the protocol, which
gives the same answers, only slower.  ``SortedListIndex`` has them all;
``SkipList`` has all but ``columns_between`` and ``build_columns``.  (A
test collects the names the package looks up and checks that each is
listed here and in the API reference.)

``oldest_last`` (attribute, ``bool | None``)
    Set by a ``tie_break="first"`` board right after it creates the index,
    only if the index already has it (None at first, as a class attribute
    or set in ``__init__``): True when the oldest entry of a run is its
    last (descending board), False when it is its first (ascending board).
    It stays None on a board that breaks ties by member.  Read by the index in ``insert`` and
    ``move`` to answer "near the oldest end?", and by the three look-ups by
    member below.  Cost: O(1).  An index without it (or while it is None)
    answers None from ``insert`` and ``move``, so the board keeps every
    member's tie in its map (one dict entry per member).
``tie_of(primary, member) -> (tie, distance)``
    The tie of the entry holding ``member`` among those with ``primary``,
    and ``distance``, the number of entries of that run between it and the
    run's oldest end (it is found by scanning from that end).  Raises
    ``KeyError`` if no such entry.  Cost: O(log N) plus the entries scanned
    past.  Without it: two :meth:`~OrderedIndex.count_primary` searches
    bound the run, and :meth:`~OrderedIndex.iter_range` reads it from the
    oldest end (three searches plus the scan).
``position_of(primary, member) -> int``
    The 0-based position of the entry ``tie_of`` finds, in the same
    search.  Raises ``KeyError`` if no such entry.  Cost: O(log N) plus the
    entries scanned past.  Without it: ``tie_of`` (or its fallback), then
    :meth:`~OrderedIndex.position` (two searches).
``move_member(primary, member, new_primary, new_tie) -> bool | None``
    :meth:`~OrderedIndex.move` for the entry ``tie_of`` finds, in the same
    search; returns what ``move`` returns.  Raises ``KeyError`` if no such
    entry, ``ValueError`` (changing nothing) if the new key is present.
    Cost: O(log N) plus the entries scanned past.  Without it: ``tie_of``
    (or its fallback), then ``move`` (two searches).
``columns() -> (primaries, ties, members)``
    Every entry as three sequences of equal length (lists, or ``array``
    columns), in ascending key order.  Used to write snapshots and, on a
    ``tie_break="first"`` board, to read every tie back before a bulk
    rebuild.  Cost: O(N), as bulk copies.  Without it:
    :meth:`~OrderedIndex.iter_range` over everything, a tuple per entry,
    then three list comprehensions (2-3x slower, measured at N = 10**6).
``columns_between(start, stop, *, reverse=False) -> (primaries, members)``
    The primaries and members at positions ``start <= p < stop`` as two
    lists, ascending, or descending with ``reverse=True``; the caller
    clamps ``0 <= start <= stop <= len``.  Used by the range reads that
    rank in unique style without metadata (top-k, pages, around a
    member).  Cost: O(log N + (stop - start)).  Without it:
    :meth:`~OrderedIndex.iter_range`, a tuple per entry.
``build_columns(primaries, ties, members) -> None``
    :meth:`~OrderedIndex.build` from three columns of equal length, already
    in ascending key order with unique keys (a snapshot being loaded).
    Cost: O(N).  Without it: ``build(zip(primaries, ties, members))``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Final, Protocol, TypeAlias

__all__ = ["PROTOCOL_METHODS", "RUN_SCAN_LIMIT", "Entry3", "OrderedIndex"]

#: A first-to-reach board keeps a member's tie only when the member arrived
#: at least this many entries from the oldest end of its run of equal
#: scores; any other member is found by a scan of fewer than this many
#: entries from that end.  Each step of the scan costs ~0.15 us, so at 8 the
#: longest scan adds about a third to the search that finds the run
#: (measured at N = 1,000,000, runs of 8: 3.8-5.0 us for the deepest member
#: against 3.1-3.7 us for the oldest on the sortedlist backend, 13-15 us
#: against 12-13 us on the skip list).  Runs deeper than 8 are rare unless
#: many members share a score: with scores drawn from a range as large as N
#: (Poisson runs of mean 1), about one member in a million is that deep.
RUN_SCAN_LIMIT: Final = 8

#: One stored entry: ``(primary, tie, member)``.
Entry3: TypeAlias = tuple[Any, Any, Any]


class OrderedIndex(Protocol):
    """What the board needs from an ordered index.  All methods are O(log N)
    except the iterators (O(log N) to start, O(1) amortised per entry),
    :meth:`build` (O(N)) and :meth:`_check` (O(N)).

    The board also uses the optional hooks of the module documentation
    ("Optional hooks") when an index has them.
    """

    def __len__(self) -> int:
        """Number of entries."""
        ...

    def insert(self, primary: Any, tie: Any, member: Any) -> bool | None:
        """Add an entry.  The key ``(primary, tie)`` must not be present.

        Returns whether the entry lies near the oldest end of its run (see
        the module documentation): True, False, or None for "cannot tell".
        """
        ...

    def remove(self, primary: Any, tie: Any) -> None:
        """Remove the entry with this key.  It must be present."""
        ...

    def move(self, primary: Any, tie: Any, new_primary: Any, new_tie: Any) -> bool | None:
        """Re-key an entry (a score change), keeping its member.

        The old key must be present and the new key absent.  When the new key
        still sorts strictly between the entry's neighbours the entry is
        changed in place (Redis ``zslUpdateScore``); otherwise it is moved.
        Returns whether the entry now lies near the oldest end of its run,
        as :meth:`insert` does.
        """
        ...

    def position(self, primary: Any, tie: Any) -> int:
        """0-based position of the present key ``(primary, tie)``."""
        ...

    def count_less(self, primary: Any, tie: Any) -> int:
        """Number of entries whose key is < ``(primary, tie)`` (key may be absent)."""
        ...

    def count_primary(self, primary: Any, *, inclusive: bool) -> int:
        """Number of entries whose primary is < ``primary`` (``inclusive=False``)
        or <= ``primary`` (``inclusive=True``), whatever their tie."""
        ...

    def entry(self, position: int) -> Entry3:
        """The entry at a 0-based ``position`` (``0 <= position < len``)."""
        ...

    def iter_range(self, start: int, stop: int, *, reverse: bool = False) -> Iterator[Entry3]:
        """Entries at positions ``start <= p < stop`` (already clamped by the
        caller to ``0 <= start <= stop <= len``), ascending, or descending from
        ``stop - 1`` down to ``start`` when ``reverse`` is true."""
        ...

    def clear(self) -> None:
        """Remove every entry."""
        ...

    def build(self, entries: Iterable[Entry3]) -> None:
        """Replace the contents with ``entries``, which are already sorted
        ascending by key with unique keys, in O(N) (bulk load, no per-entry
        search)."""
        ...

    def _check(self) -> None:
        """Verify every invariant; raise ``AssertionError`` describing the first
        broken one."""
        ...


#: The methods of :class:`OrderedIndex`, in the order it lists them.  The
#: board checks that an index made by a ``backend=`` factory has each one,
#: and raises ``TypeError`` naming those it lacks.
PROTOCOL_METHODS: Final = (
    "__len__",
    "insert",
    "remove",
    "move",
    "position",
    "count_less",
    "count_primary",
    "entry",
    "iter_range",
    "clear",
    "build",
    "_check",
)
