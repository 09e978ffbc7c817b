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
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Protocol, TypeAlias

__all__ = ["Entry3", "OrderedIndex"]

#: One stored entry: ``(primary, tie, member)``.
Entry3: TypeAlias = tuple[Any, Any, Any]


class OrderedIndex(Protocol):
    """What the board needs from an ordered index.  All methods are O(log N)
    except the iterators (O(log N) to start, O(1) amortised per entry),
    :meth:`build` (O(N)) and :meth:`_check` (O(N)).
    """

    def __len__(self) -> int:
        """Number of entries."""
        ...

    def insert(self, primary: Any, tie: Any, member: Any) -> None:
        """Add an entry.  The key ``(primary, tie)`` must not be present."""
        ...

    def remove(self, primary: Any, tie: Any) -> None:
        """Remove the entry with this key.  It must be present."""
        ...

    def move(self, primary: Any, tie: Any, new_primary: Any, new_tie: Any) -> None:
        """Re-key an entry (a score change), keeping its member.

        The old key must be present and the new key absent.  When the new key
        still sorts strictly between the entry's neighbours the entry is
        changed in place (Redis ``zslUpdateScore``); otherwise it is moved.
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
