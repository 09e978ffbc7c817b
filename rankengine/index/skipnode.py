"""The skip-list node: one flat Python list with named slots.

Redis writes a node as a C struct and reads it as ``x->ele``,
``x->backward``, ``x->level[i].forward`` and ``x->level[i].span``.  Here a
node is one Python list, laid out as::

    slot   0        1    2       3          4           5        6           7
         [ primary, tie, member, backward,  forward_0,  span_0,  forward_1,  span_1,  ... ]
           PRIMARY  TIE  MEMBER  BACKWARD   FORWARD[0]  SPAN[0]  FORWARD[1]  SPAN[1]

so the skip list reads a node through these names::

    Redis (t_zset.c)            rankengine
    x->score, x->ele            x[PRIMARY], x[TIE], x[MEMBER]
    x->backward                 x[BACKWARD]
    x->level[i].forward         x[FORWARD[i]]
    x->level[i].span            x[SPAN[i]]

``FORWARD`` and ``SPAN`` are tuples of slot numbers (``FORWARD[i] ==
4 + 2 * i``, ``SPAN[i] == FORWARD[i] + 1``); a search loop takes both with
its level from ``LEVELS`` and then indexes the node with them, which costs
what the slot arithmetic it replaces cost (measured A/B with
``bench/ab_index.py``, see the commits that introduced the names).  A node's height is
``(len(x) - 4) // 2`` (:func:`node_height`); ``backward`` is the previous
node on level 0 (``None`` for the first node).  The header is a node with no
entry and ``MAX_LEVEL``-many links (or the list's ``max_level``).

Why one list and not a class with ``entry``, ``forward``, ``span`` and
``backward`` attributes (the previous layout, four objects per entry: the
node, its entry tuple, its forward list and its span list):

* memory: one list of 4 + 2 * height slots is ~110 bytes per entry at
  P = 1/4, against ~260 for the four objects (tracemalloc, N = 10**6);
* speed: a step of a search reads the next node's key and its next link
  from the same item array, instead of hopping node -> forward list and
  node -> entry tuple.  At N = 10**6 most of those hops are cache misses
  (a search step costs ~110 ns at N = 1,000 and ~450 ns at N = 10**6);
  ``Leaderboard.rank`` of random members went from ~33 us to ~16 us.

The price: keys are compared in two steps (primary, then tie on equal
primaries) in Python instead of one C tuple comparison, and reads build
the ``(primary, tie, member)`` tuple they hand out.

The accessor functions below copy what they read; they serve the readers
that are not hot (``_check``, the tests, the teaching pictures in
:mod:`rankengine.teach.viz`).

>>> x = new_node(10, 0, "ann", 2)
>>> x[PRIMARY], x[MEMBER], x[FORWARD[1]], x[SPAN[1]]
(10, 'ann', None, 0)
>>> node_height(x), node_entry(x)
(2, (10, 0, 'ann'))
>>> LEVELS[3]
((2, 8, 9), (1, 6, 7), (0, 4, 5))
"""

from __future__ import annotations

from typing import Any, Final, TypeAlias

from rankengine.index.protocol import Entry3

__all__ = [
    "BACKWARD",
    "FORWARD",
    "LEVELS",
    "LINKS_AT",
    "MAX_LEVEL",
    "MEMBER",
    "PRIMARY",
    "SPAN",
    "TIE",
    "Node",
    "new_node",
    "node_entry",
    "node_forwards",
    "node_height",
    "node_spans",
]

#: The highest level a node may reach.  With ``P = 1/4`` a list needs about
#: ``log4(N)`` levels, so 32 levels are enough for 4**32 = 2**64 elements.
MAX_LEVEL: Final = 32

#: A node (see the module documentation for its slots).
Node: TypeAlias = list[Any]

#: The key's first half: the score.
PRIMARY: Final = 0
#: The key's second half: the tie-break (a clock or the member).
TIE: Final = 1
#: The value stored with the key.
MEMBER: Final = 2
#: The previous node on level 0 (None for the first node and the header).
BACKWARD: Final = 3
#: ``FORWARD[i]``: the slot of the node's level-``i`` forward link.
FORWARD: Final = tuple(4 + 2 * i for i in range(MAX_LEVEL))
#: ``SPAN[i]``: the slot of that link's span (level-0 steps it jumps).
SPAN: Final = tuple(5 + 2 * i for i in range(MAX_LEVEL))
#: Slots before the links: a node of height h has ``LINKS_AT + 2 * h`` slots.
LINKS_AT: Final = 4
#: ``LEVELS[n]``: the levels of an ``n``-level list from the top down, each
#: as ``(i, FORWARD[i], SPAN[i])``.  A search runs ``for i, forward, span in
#: LEVELS[level]`` (Redis: ``for (i = zsl->level-1; i >= 0; i--)``) and then
#: reads ``x[forward]`` and ``x[span]``: the two slot numbers come with the
#: level, not from arithmetic or look-ups in every step (measured: this keeps
#: a search's bytecode as short as the slot arithmetic it replaces).
LEVELS: Final = tuple(
    tuple((i, FORWARD[i], SPAN[i]) for i in range(n - 1, -1, -1)) for n in range(MAX_LEVEL + 1)
)


def new_node(primary: Any, tie: Any, member: Any, height: int) -> Node:
    """A node of ``height`` levels, not linked yet (every span 0)."""
    # Concatenation sizes the list exactly; a ``[..., *links]`` display
    # over-allocates (~10 bytes per entry more, measured).
    return [primary, tie, member, None] + [None, 0] * height


def node_height(x: Node) -> int:
    """Number of levels node ``x`` (or the header) has links on."""
    return (len(x) - LINKS_AT) >> 1


def node_forwards(x: Node) -> list[Node | None]:
    """Node ``x``'s forward links, level 0 first (a copy)."""
    return x[FORWARD[0] :: 2]


def node_spans(x: Node) -> list[int]:
    """Node ``x``'s spans, level 0 first (a copy)."""
    return x[SPAN[0] :: 2]


def node_entry(x: Node) -> Entry3:
    """Node ``x``'s ``(primary, tie, member)``."""
    return (x[PRIMARY], x[TIE], x[MEMBER])
