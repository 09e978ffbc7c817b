"""An indexable skip list in the Redis tradition: the exact ordered index.

What it is
----------
A skip list (William Pugh, "Skip Lists: A Probabilistic Alternative to
Balanced Trees", 1990) is a sorted linked list with express lanes.  Every
node sits on level 0, the plain sorted list.  When a node is created it draws
a height: with probability ``P`` it also joins level 1, with probability
``P`` again level 2, and so on.  Level ``i`` is therefore a sorted list of
about ``N * P**i`` nodes, and a search starts on the highest level, runs
forward while the next node is still smaller than the target, then drops one
level and repeats.  Each level cuts the remaining distance by ``1 / P`` on
average, so a search visits O(log N) nodes, with no rebalancing ever::

    level 2   H ---------------------------> 40 -----------------> nil
    level 1   H -----------> 20 -----------> 40 -----> 50 -------> nil
    level 0   H ---> 10 ---> 20 ---> 30 ---> 40 -----> 50 -> 60 -> nil

How spans give rank
-------------------
Every link also stores its *span*: how many level-0 steps it jumps.  The
header ``H`` stands at rank 0 and the i-th node at rank i (1-based, as in
Redis).  Summing the spans of the links a search crosses gives the rank of
the node it stops on, so rank (:meth:`SkipList.position`) and its inverse,
the node at a rank (:meth:`SkipList.entry`), are both O(log N)::

    level 2   H -------------4-------------> 40 ---------2---------> nil
    level 1   H -----2-----> 20 -----2-----> 40 -1-> 50 -----1-----> nil
    level 0   H -1-> 10 -1-> 20 -1-> 30 -1-> 40 -1-> 50 -1-> 60 -0-> nil

    rank of 50:  H -4-> 40 (level 2), then 40 -1-> 50 (level 1)  =  5

A link to ``nil`` has a span too: the number of level-0 steps left to the end
of the list.  So along every level the spans add up to ``length``, and the
last node's level-0 span is 0.  Insert and delete keep every span exact by
recording, per level, the last node before the change (``update[i]``) and,
for an insert, its rank (``rank[i]``): the spans that change are all on
those nodes and on the new one.

Where this departs from Pugh
----------------------------
Like Redis's ``t_zset.c`` (whose design, not code, this follows):

1. Links carry spans, which makes the list indexable (rank and
   select in O(log N)).
2. Level 0 is doubly linked: each node has a ``backward`` pointer, so a
   range can be walked in descending order, and the list keeps a ``tail``.
3. Keys need not be unique in their first half.  Pugh's list maps unique
   keys to values; here many entries may share a *primary* (a score), and the
   entry's *tie* (a logical clock or the member) breaks the tie, so the full
   key ``(primary, tie)`` is unique.  Redis does the same with
   ``(score, member bytes)``.
4. A re-key (a score change) that leaves the node between its two level-0
   neighbours is done in place, without unlinking (Redis
   ``zslUpdateScore``).

And where it departs from Redis:

5. :meth:`SkipList.build` bulk-loads sorted entries in O(N) by appending at
   the end of every level, for fast snapshot recovery.
6. Reads at either end of the list (top-k) start at the first node or the
   tail without a walk (Redis does this in ZRANGE, not in its rank lookup),
   and reads next to the node the last rank query found start from it.
7. A re-key that must relink keeps the node and its height: it is
   unlinked and linked again at its new place.  Redis's ``zslUpdateScore``
   deletes the node and calls ``zslInsert``, which makes a new node with a
   new random height.  A re-key to a larger key finds the new place by a
   finger search from the old ``update[]`` nodes, and unlinks and relinks in
   one pass.
8. A node is one flat Python list, not a struct (see ``_Node`` below).
9. A board keeps a member's tie only when the member sits deep in a run of
   equal scores (see :mod:`rankengine.index.protocol`), so the list also finds a
   node by primary and member: one search to the oldest end of the run,
   then a few steps along level 0 (:meth:`SkipList.tie_of`,
   :meth:`SkipList.position_of`, :meth:`SkipList.move_member`); and
   ``insert`` and ``move`` report whether the node landed near that end.

Invariant (checked by :meth:`SkipList._check`)::

    keys strictly increase along level 0, and
    span(x, i) == rank(x.forward[i]) - rank(x)     (rank(nil) == length)
"""

from __future__ import annotations

import gc
import itertools
import operator
import random
from collections.abc import Iterable, Iterator
from typing import Any

from rankengine.index.protocol import RUN_SCAN_LIMIT, Entry3

__all__ = [
    "MAX_LEVEL",
    "P",
    "SkipList",
    "node_entry",
    "node_forwards",
    "node_height",
    "node_spans",
]

#: The highest level a node may reach.  With ``P = 1/4`` a list needs about
#: ``log4(N)`` levels, so 32 levels are enough for 4**32 = 2**64 elements.
MAX_LEVEL = 32

#: Probability that a node on level ``i`` also joins level ``i + 1``.  Redis's
#: choice: a node carries 1 / (1 - P) ~ 1.33 links on average (against 2 at
#: P = 1/2), while a search still visits at most ~ (1 / P) nodes per level.
P = 0.25

#: How far (in ranks) a read may walk along level 0 from the node the last
#: rank query found instead of searching from the header (see
#: ``SkipList._node_at``).  A level-0 step costs about as much as one step of
#: a search, and a search from the header makes ~40 of them at N = 10**6.
FINGER_REACH = 32


#: A node is one flat Python list (``_Node`` below), laid out as::
#:
#:     [primary, tie, member, backward, forward_0, span_0, forward_1, span_1, ...]
#:      0        1    2       3         4          5       4 + 2i     5 + 2i
#:
#: ``forward_i`` and ``span_i`` describe the link on level ``i`` (the node's
#: height is ``(len(node) - 4) // 2``) and ``backward`` is the previous node
#: on level 0 (``None`` for the first node).  The header is a node with no
#: entry and ``max_level`` links.  The code indexes with the literal slot
#: numbers (``x[4]`` is the level-0 forward link, ``x[3]`` the backward
#: one): a named constant would cost a global look-up in every search step.
#: The helpers below serve the readers (``_check``, the tests, ``viz``).
#:
#: Why one list and not a class with ``entry``, ``forward``, ``span`` and
#: ``backward`` attributes (the previous layout, four objects per entry: the
#: node, its entry tuple, its forward list and its span list):
#:
#: * memory: one list of 4 + 2 * height slots is ~110 bytes per entry at
#:   P = 1/4, against ~260 for the four objects (tracemalloc, N = 10**6);
#: * speed: a step of a search reads the next node's key and its next link
#:   from the same item array, instead of hopping node -> forward list and
#:   node -> entry tuple.  At N = 10**6 most of those hops are cache misses
#:   (a search step costs ~110 ns at N = 1,000 and ~450 ns at N = 10**6);
#:   ``Leaderboard.rank`` of random members went from ~33 us to ~16 us.
#:
#: The price: keys are compared in two steps (primary, then tie on equal
#: primaries) in Python instead of one C tuple comparison, and reads build
#: the ``(primary, tie, member)`` tuple they hand out.
_Node = list[Any]

# The getters of columns() (made once).
_PRIMARY = operator.itemgetter(0)
_TIE = operator.itemgetter(1)
_MEMBER = operator.itemgetter(2)


def _fwd(i: int) -> int:
    """Slot of a node's level-``i`` forward link (its span is the next slot)."""
    return 4 + 2 * i


def node_height(x: _Node) -> int:
    """Number of levels node ``x`` (or the header) has links on."""
    return (len(x) - 4) >> 1


def node_forwards(x: _Node) -> list[_Node | None]:
    """Node ``x``'s forward links, level 0 first (a copy)."""
    return x[4::2]


def node_spans(x: _Node) -> list[int]:
    """Node ``x``'s spans, level 0 first (a copy)."""
    return x[5::2]


def node_entry(x: _Node) -> Entry3:
    """Node ``x``'s ``(primary, tie, member)``."""
    return (x[0], x[1], x[2])


def _new_node(primary: Any, tie: Any, member: Any, height: int) -> _Node:
    """A node of ``height`` levels, not linked yet."""
    # Concatenation sizes the list exactly; a ``[..., *links]`` display
    # over-allocates (~10 bytes per entry more, measured).
    return [primary, tie, member, None] + [None, 0] * height


class SkipList:
    """An indexable skip list of ``(primary, tie, member)`` entries.

    Implements :class:`rankengine.index.protocol.OrderedIndex`.  Entries are kept in
    ascending order of the key ``(primary, tie)``; positions are 0-based.

    :param rng: the random source for node heights; pass a seeded
        ``random.Random`` to get reproducible shapes.
    :param max_level: the most levels a node may have (1 to ``MAX_LEVEL``); a
        small value forces tall, crowded levels in stress tests.

    >>> sl = SkipList(random.Random(7))
    >>> sl.insert(30, 0, "carol")
    >>> sl.insert(10, 1, "alice")
    >>> sl.insert(10, 0, "bob")
    >>> list(sl.iter_range(0, len(sl)))
    [(10, 0, 'bob'), (10, 1, 'alice'), (30, 0, 'carol')]
    >>> sl.position(30, 0)
    2
    """

    __slots__ = (
        "_finger",
        "_new_rank",
        "_new_update",
        "_random",
        "_rank",
        "_update",
        "header",
        "length",
        "level",
        "max_level",
        "oldest_last",
        "tail",
    )

    def __init__(self, rng: random.Random | None = None, *, max_level: int = MAX_LEVEL) -> None:
        if not 1 <= max_level <= MAX_LEVEL:
            raise ValueError(f"max_level must be between 1 and {MAX_LEVEL}, got {max_level}")
        if rng is None:
            rng = random.Random()
        #: Upper bound on node heights.
        self.max_level: int = max_level
        # The coin for the level draw (the bound method, looked up once).
        self._random = rng.random
        # Scratch arrays for insert / delete, allocated once (like the C stack
        # arrays of Redis): making two 32-slot lists per operation instead
        # costs ~200 ns more (measured 256 ns against 52 ns).
        self._update: list[_Node] = []
        self._rank: list[int] = [0] * max_level
        # The same pair for the new place of a node that move() shifts ahead.
        self._new_update: list[_Node] = []
        self._new_rank: list[int] = [0] * max_level
        # The last node a rank query found and its rank (or None), for
        # iter_range; see position.  Every link or unlink clears it.  (Like
        # update[], it assumes the caller does not read while it writes:
        # the board holds one lock for both.)
        self._finger: tuple[_Node, int] | None = None
        #: The header node: no entry, ``max_level`` links, rank 0.
        self.header: _Node = _new_node(None, None, None, max_level)
        #: The last node on level 0, or ``None`` when empty.
        self.tail: _Node | None = None
        #: Number of entries.
        self.length: int = 0
        #: Number of levels in use (at least 1).
        self.level: int = 1
        #: Which end of a run of equal primaries is the oldest (see
        #: :mod:`rankengine.index.protocol`): True for the last node, False for the
        #: first, None (the default) when no one asks; ``insert`` and
        #: ``move`` then return None.
        self.oldest_last: bool | None = None
        self.clear()

    # ------------------------------------------------------------------
    # Small public surface
    # ------------------------------------------------------------------

    def __len__(self) -> int:
        """Number of entries.

        Runtime complexity: O(1)

        >>> len(SkipList())
        0
        """
        return self.length

    def __iter__(self) -> Iterator[Entry3]:
        """Iterate over all entries in ascending key order.

        Runtime complexity: O(1) per entry

        >>> sl = SkipList(random.Random(1))
        >>> sl.build([(1, 0, "a"), (2, 0, "b")])
        >>> list(sl)
        [(1, 0, 'a'), (2, 0, 'b')]
        """
        x = self.header[4]
        while x is not None:
            yield (x[0], x[1], x[2])
            x = x[4]

    def __repr__(self) -> str:
        """Show the first entries and the shape.

        >>> sl = SkipList(random.Random(3))
        >>> sl.build([(1, 0, "a"), (2, 0, "b")])
        >>> sl
        SkipList([(1, 0, 'a'), (2, 0, 'b')], length=2, level=...)
        """
        shown = 8
        head = [node_entry(x) for x, _ in zip(self._nodes(), range(shown), strict=False)]
        body = ", ".join(repr(e) for e in head)
        if self.length > shown:
            body += ", ..."
        return f"SkipList([{body}], length={self.length}, level={self.level})"

    def clear(self) -> None:
        """Remove every entry.

        The old nodes link to each other both ways, so Python's cycle
        collector (not reference counting) reclaims them.

        Runtime complexity: O(max_level)

        >>> sl = SkipList()
        >>> sl.insert(1, 0, "a")
        >>> sl.clear()
        >>> len(sl), sl.level
        (0, 1)
        """
        m = self.max_level
        self.header = _new_node(None, None, None, m)
        self._update = [self.header] * m
        self._new_update = [self.header] * m
        self._finger = None
        self.tail = None
        self.length = 0
        self.level = 1

    # ------------------------------------------------------------------
    # Level draw
    # ------------------------------------------------------------------

    def _random_level(self) -> int:
        """Draw a node height: 1, then one more level with probability P
        each time, up to ``max_level`` (Redis ``zslRandomLevel``).

        Heights follow a geometric law: P(height > k) = P ** k, so level k
        holds about N * P ** k nodes.  (Counting trailing zero bit pairs of
        one ``getrandbits`` call gives the same law but measured slower,
        ~240 ns against ~110 ns, because 3 draws in 4 stop at the first coin.)

        >>> sl = SkipList(random.Random(0), max_level=4)
        >>> all(1 <= sl._random_level() <= 4 for _ in range(1000))
        True
        """
        level = 1
        coin = self._random
        while level < self.max_level and coin() < P:
            level += 1
        return level

    # ------------------------------------------------------------------
    # Private helpers: search, link, unlink, in-place re-key
    # ------------------------------------------------------------------
    #
    # The search loops all have the same shape.  ``f`` is the slot of the
    # level's forward link (``4 + 2 * i``) and ``f + 1`` its span; "the next
    # key is smaller than (p, t)" is written out as
    #
    #     (q := y[0]) < p or (q == p and y[1] < t)
    #
    # which reads the tie only when the primaries are equal.

    def _search_update(self, p: Any, t: Any) -> _Node:
        """Fill ``update[i]``, the last node before the key ``(p, t)`` on
        each level.

        Returns ``update[0]``; the node holding the key, if present, is its
        level-0 successor.  Used by delete, which needs no ranks.

        Searching for 30 (``*`` marks update[i])::

            level 2   H* ------------------------> 40
            level 1   H -----------> 20* --------> 40
            level 0   H ---> 10 ---> 20* --> 30 -> 40

        Level 2: 40 is not < 30, so update[2] = H.  Level 1: 20 < 30, step;
        40 is not, so update[1] = 20.  Level 0: 30 is not < 30, update[0] = 20.
        """
        update = self._update
        x = self.header
        for i in range(self.level - 1, -1, -1):
            f = 4 + 2 * i
            y = x[f]
            while y is not None and ((q := y[0]) < p or (q == p and y[1] < t)):
                x = y
                y = x[f]
            update[i] = x
        return x

    def _search_update_rank(self, p: Any, t: Any) -> _Node:
        """Fill ``update[i]`` and ``rank[i]``: the last node before the key
        ``(p, t)`` on each level and its rank (header = 0).  Returns
        ``update[0]``.

        The same walk as :meth:`_search_update`, adding the span of every
        link it crosses.  Inserting 35::

            level 1   H ----2----> 20* -----2----> 40     rank[1] = 2
            level 0   H -1> 10 -1> 20 -1-> 30* -1> 40     rank[0] = 3

        rank[0] is where the new node goes minus one: it becomes rank 4.
        """
        update = self._update
        rank = self._rank
        x = self.header
        r = 0
        for i in range(self.level - 1, -1, -1):
            f = 4 + 2 * i
            y = x[f]
            while y is not None and ((q := y[0]) < p or (q == p and y[1] < t)):
                r += x[f + 1]
                x = y
                y = x[f]
            update[i] = x
            rank[i] = r
        return x

    def _search_ahead(self, p: Any, t: Any) -> None:
        """Fill ``new_update[i]`` and ``new_rank[i]`` for a key ``(p, t)``
        that lies after the one ``update[]`` and ``rank[]`` hold: a finger
        search, used by :meth:`_move_ahead`.

        Every ``update[i]`` is a node on level ``i`` before the old key, so
        before the new one too: the walk on level ``i`` may start from it
        instead of from where the level above stopped, whichever is further
        (the higher rank).  For a small move (a score increment) most levels
        then cross no link at all, and the header's path is not walked
        again.  Moving X (25) to 45 (``*``: update[i], ``#``: new_update[i])::

            level 1   H ----2----> 20* -------3-------> 40# -1> 50
            level 0   H -1> 10 -1> 20* -1> X -1> 30 -1> 40# -1> 50

        Level 1 starts at 20 and steps to 40; level 0 starts at 40 (rank 5,
        ahead of 20 at rank 2) and stops there at once.  The node being
        moved is still linked, so a walk may stop on it (new_update[i] is X:
        X stays after update[i] on that level).
        """
        update = self._update
        rank = self._rank
        new_update = self._new_update
        new_rank = self._new_rank
        top = self.level - 1
        x = update[top]
        r = rank[top]
        for i in range(top, -1, -1):
            if rank[i] > r:
                # The old predecessor on this level is ahead of where the
                # level above stopped: start there.
                x = update[i]
                r = rank[i]
            f = 4 + 2 * i
            y = x[f]
            while y is not None and ((q := y[0]) < p or (q == p and y[1] < t)):
                r += x[f + 1]
                x = y
                y = x[f]
            new_update[i] = x
            new_rank[i] = r

    def _search_run_end(self, p: Any) -> _Node | None:
        """Fill ``update[i]`` and ``rank[i]`` for the node at the oldest end
        of the run of primary ``p`` and return that node: the level-0
        successor of ``update[0]`` (check that it holds ``p``).

        Oldest first (ascending board), that is the run's first node, and the
        walk is :meth:`_search_update_rank`'s comparing primaries only.
        Oldest last (descending board), it is the run's last node: the walk
        also crosses a node of the run whose level-0 successor is still in
        the run::

            level 1   H ------> 7a* --------------> 9
            level 0   H -> 5 -> 7a --> 7b* -> 7c -> 9     (7c: the oldest)

        On level 1, 7a is crossed (its successor 7b has primary 7), 9 is
        not; on level 0, 7b is crossed, 7c is not (its successor is 9).

        Runtime complexity: O(log N)
        """
        update = self._update
        rank = self._rank
        x = self.header
        r = 0
        last = self.oldest_last
        for i in range(self.level - 1, -1, -1):
            f = 4 + 2 * i
            y = x[f]
            if last:
                while y is not None and (
                    (q := y[0]) < p or (q == p and (z := y[4]) is not None and z[0] == p)
                ):
                    r += x[f + 1]
                    x = y
                    y = x[f]
            else:
                while y is not None and y[0] < p:
                    r += x[f + 1]
                    x = y
                    y = x[f]
            update[i] = x
            rank[i] = r
        return x[4]  # type: ignore[no-any-return]

    def _move_ahead(self, x: _Node, p: Any, t: Any) -> None:
        """Move node ``x`` to the larger key ``(p, t)``: :meth:`_unlink` and
        :meth:`_link` fused, level by level, after one finger search.

        Needs ``update[]`` and ``rank[]`` from a search for ``x``'s key.
        Spans are per level, so each level is fixed on its own.  On ``x``'s
        levels the link is cut after update[i] and remade after the new
        predecessor, exactly as the two would do (ranks after ``x``, counted
        with ``x`` still in place, are one too high).  Above ``x``'s height
        the unlink takes a step from update[i]'s span and the link gives one
        to new_update[i]: when both are the same node, as on most levels for
        a small move, nothing changes.  (Measured at N = 10**6, moves by
        +1..100, against unlink, a search from the header and link: ~22 us
        a move against ~26 us with scores below 10**7, ~28 us against
        ~34 us with scores below 10**6.)

        :raises ValueError: if ``(p, t)`` is present (nothing changes).
        """
        self._search_ahead(p, t)
        update = self._update
        rank = self._rank
        new_update = self._new_update
        new_rank = self._new_rank
        w0 = new_update[0]
        # x's level-0 successor in the list without x.
        nxt = x[4] if w0 is x else w0[4]
        if nxt is not None and nxt[0] == p and nxt[1] == t:
            raise ValueError(f"key {(p, t)!r} is already present")
        # Not in place (move() checked), so w0 is after x: one rank lower
        # once x is out.
        r0 = new_rank[0] - 1
        x[4][3] = x[3]  # x's old successor (w0 or before it) steps back
        for i in range((len(x) - 4) >> 1):
            f = 4 + 2 * i
            u = update[i]
            w = new_update[i]
            if w is x:
                w = u  # x stays after update[i] on this level
                d = r0 - rank[i]
            else:
                d = r0 - (new_rank[i] - 1)
            # Unlink (see _unlink) ...
            u[f + 1] += x[f + 1] - 1
            u[f] = x[f]
            # ... and link after w (see _link).
            x[f] = w[f]
            w[f] = x
            x[f + 1] = w[f + 1] - d
            w[f + 1] = d + 1
        for i in range((len(x) - 4) >> 1, self.level):
            u = update[i]
            w = new_update[i]
            if w is not u:
                u[5 + 2 * i] -= 1
                w[5 + 2 * i] += 1
        x[3] = w0
        nxt = x[4]
        if nxt is None:
            self.tail = x
        else:
            nxt[3] = x
        x[0] = p
        x[1] = t
        self._finger = None  # ranks between the two places have changed

    def _link(self, x: _Node) -> None:
        """Link node ``x`` after ``update[i]`` on each of its levels.

        Needs ``update[]`` and ``rank[]`` from :meth:`_search_update_rank`.
        Inserting X of height 2 between 20 and 30 (``d = rank[0] - rank[i]``
        is how far update[i] is behind update[0])::

            before                               after
            level 2   H --------4-------> 40     H -----------5----------> 40
            level 1   H -2> 20 ----2----> 40     H -2> 20 -1> X ----2----> 40
            level 0   H ... 20 -1> 30            H ... 20 -1> X -1> 30

        On level 1, update[1] = 20 and d = 0: 20 now stops at X (span
        d + 1 = 1) and X takes the rest of 20's old span (2 - d = 2).  On
        level 2, above X, the link H -> 40 just jumps over one more node.
        """
        update = self._update
        rank = self._rank
        height = (len(x) - 4) >> 1
        level = self.level
        if height > level:
            # New levels: the header's link there jumps the whole list
            # (length level-0 steps to nil); the loop below splits it.
            header = self.header
            length = self.length
            for i in range(level, height):
                rank[i] = 0
                update[i] = header
                header[5 + 2 * i] = length
            self.level = height
        r0 = rank[0]
        for i in range(height):
            u = update[i]
            f = 4 + 2 * i
            d = r0 - rank[i]
            x[f] = u[f]
            u[f] = x
            # X inherits the part of u's old link beyond the insert point:
            # u's old span minus the d steps from u to update[0].
            x[f + 1] = u[f + 1] - d
            # u now stops at X, which is d steps to update[0] plus one.
            u[f + 1] = d + 1
        for i in range(height, self.level):
            # Above X's height the link from update[i] passes over X: one
            # more level-0 step.
            update[i][5 + 2 * i] += 1
        # Level 0 is doubly linked; the first node has no backward node.
        u0 = update[0]
        x[3] = None if u0 is self.header else u0
        nxt = x[4]
        if nxt is None:
            self.tail = x
        else:
            nxt[3] = x
        self.length += 1
        self._finger = None  # ranks after x have changed

    def _unlink(self, x: _Node) -> None:
        """Unlink node ``x``, the level-0 successor of ``update[0]``.

        Needs ``update[]`` from a search for ``x``'s key.  Deleting X::

            before                                     after
            level 2   H -----------5----------> 40     H --------4-------> 40
            level 1   H -2> 20 -1> X ----2----> 40     H -2> 20 ----2----> 40
            level 0   H ... 20 -1> X -1> 30            H ... 20 -1> 30

        On X's levels update[i] takes over X's link: its span grows by X's
        span and loses the step into X (1 + 2 - 1 = 2).  Above X the link
        passes over one node fewer (5 - 1 = 4).
        """
        update = self._update
        height = (len(x) - 4) >> 1
        for i in range(height):
            u = update[i]
            f = 4 + 2 * i
            # u now jumps to where X jumped: its own span plus X's, minus
            # the one step that landed on X.
            u[f + 1] += x[f + 1] - 1
            u[f] = x[f]
        for i in range(height, self.level):
            # Links above X's height skipped over X: one step fewer.
            update[i][5 + 2 * i] -= 1
        nxt = x[4]
        if nxt is None:
            self.tail = x[3]
        else:
            nxt[3] = x[3]
        # Drop levels that are now empty (level stays at least 1).
        header = self.header
        while self.level > 1 and header[2 + 2 * self.level] is None:
            self.level -= 1
        self.length -= 1
        self._finger = None  # ranks after x have changed

    def _rekey_in_place(self, x: _Node, p: Any, t: Any) -> bool:
        """Give ``x`` the key ``(p, t)`` if it still fits between its neighbours.

        This is Redis's ``zslUpdateScore`` fast path, with full keys: Redis
        compares scores only (the new score strictly between the neighbours'
        scores), so a new score equal to a neighbour's always relinks there.
        If the new key sorts strictly between ``x``'s backward node and its
        level-0 forward node,
        the level-0 order is unchanged, and so is the order on every higher
        level (each is a sub-sequence of level 0).  Spans count nodes, not
        keys, so they do not change either: only the key is replaced::

            level 1   H -2> 20 ---------3---------> 40
            level 0   H ... 20 -1> X(25) -1> 30 -1> 40

            move 25 -> 27:  20 < 27 < 30, only X's key changes
            move 25 -> 35:  30 < 35, X must be unlinked and relinked

        Returns ``True`` when the fast path applied.
        """
        prev = x[3]
        nxt = x[4]
        if (prev is None or (q := prev[0]) < p or (q == p and prev[1] < t)) and (
            nxt is None or p < (q := nxt[0]) or (p == q and t < nxt[1])
        ):
            x[0] = p
            x[1] = t
            return True
        return False

    def _node_at(self, rank: int) -> _Node:
        """The node at 1-based ``rank`` (``1 <= rank <= length``).

        Walk down from the top, crossing a link whenever its span does not
        overshoot the target (Redis ``zslGetElementByRank``).  Finding rank 3::

            level 1   H ----2----> 20 ----2----> 40
            level 0   H -1> 10 -1> 20 -1> 30 -1> 40

        Level 1: 0 + 2 <= 3, cross to 20; 2 + 2 > 3, drop.  Level 0:
        2 + 1 <= 3, cross to 30; traversed == 3, found.

        Three shortcuts need no walk from the header.  The two ends (as in
        Redis's ZRANGE, which starts a reverse range at the tail): top-k
        reads at either end are O(k).  And a rank within ``FINGER_REACH`` of
        the node the last rank query found (see :meth:`position`) is reached
        from that node along level 0: "my rank, then my neighbours" costs one
        search, not two.  (Measured at N = 10**6: finding the node 9 ranks
        before a just-ranked one took ~3 us this way, ~9.5 us from the header.)
        """
        tail = self.tail
        if rank == self.length and tail is not None:
            return tail
        x = self.header
        first: _Node | None = x[4]
        if rank == 1 and first is not None:
            return first
        finger = self._finger
        if finger is not None and -FINGER_REACH <= rank - finger[1] <= FINGER_REACH:
            x, r = finger
            while r < rank:
                x = x[4]
                r += 1
            while r > rank:
                x = x[3]
                r -= 1
            return x
        traversed = 0
        for f in range(2 + 2 * self.level, 3, -2):
            y = x[f]
            while y is not None and traversed + x[f + 1] <= rank:
                traversed += x[f + 1]
                x = y
                y = x[f]
            if traversed == rank:
                return x
        raise AssertionError("unreachable: rank in range but not found")

    def _near(self, x: _Node) -> bool | None:
        """Does node ``x`` lie fewer than ``RUN_SCAN_LIMIT`` nodes from the
        oldest end of its run of equal primaries?

        Walk level 0 towards the oldest end (``forward`` when the oldest
        node is last, ``backward`` when it is first) until the primary
        changes; usually the first step does.  None while
        :attr:`oldest_last` is None.

        Runtime complexity: O(RUN_SCAN_LIMIT)

        >>> sl = SkipList(random.Random(0))
        >>> sl.oldest_last = True
        >>> sl.build([(7, -clock, clock) for clock in range(9, -1, -1)])  # oldest last
        >>> first, second, third = list(sl._nodes())[:3]
        >>> sl._near(first), sl._near(second), sl._near(third)
        (False, False, True)
        """
        last = self.oldest_last
        if last is None:
            return None
        p = x[0]
        slot = 4 if last else 3
        for _ in range(RUN_SCAN_LIMIT):
            x = x[slot]
            if x is None or x[0] != p:
                return True
        return False

    def _nodes(self) -> Iterator[_Node]:
        """Every node on level 0, in order."""
        x = self.header[4]
        while x is not None:
            yield x
            x = x[4]

    # ------------------------------------------------------------------
    # OrderedIndex: mutation
    # ------------------------------------------------------------------

    def insert(self, primary: Any, tie: Any, member: Any) -> bool | None:
        """Add the entry ``(primary, tie, member)``.

        Search for the insert point while recording ``update[]`` and
        ``rank[]``, draw a height, then link the new node on each of its
        levels, fixing the spans.  Returns whether the node lies near the
        oldest end of its run (see :meth:`_near`), or None while
        :attr:`oldest_last` is None.

        Runtime complexity: O(log N)

        >>> sl = SkipList(random.Random(0))
        >>> sl.insert(5, 0, "x")
        >>> sl.insert(5, -1, "y")
        >>> list(sl)
        [(5, -1, 'y'), (5, 0, 'x')]

        :param primary: the score part of the key.
        :param tie: the tie-break; ``(primary, tie)`` must not be present.
        :param member: the value stored with the key.
        :raises ValueError: if the key is already present.
        """
        nxt = self._search_update_rank(primary, tie)[4]
        if nxt is not None and nxt[0] == primary and nxt[1] == tie:
            raise ValueError(f"key {(primary, tie)!r} is already present")
        x = _new_node(primary, tie, member, self._random_level())
        self._link(x)
        return self._near(x)

    def remove(self, primary: Any, tie: Any) -> None:
        """Remove the entry with key ``(primary, tie)``.

        Runtime complexity: O(log N)

        >>> sl = SkipList(random.Random(0))
        >>> sl.build([(1, 0, "a"), (2, 0, "b")])
        >>> sl.remove(1, 0)
        >>> list(sl)
        [(2, 0, 'b')]

        :raises KeyError: if the key is absent.
        """
        x = self._search_update(primary, tie)[4]
        if x is None or x[0] != primary or x[1] != tie:
            raise KeyError((primary, tie))
        self._unlink(x)

    def move(self, primary: Any, tie: Any, new_primary: Any, new_tie: Any) -> bool | None:
        """Re-key an entry (a score change), keeping its member.

        If the new key still sorts strictly between the entry's level-0
        neighbours the node is changed in place (no links or spans change);
        otherwise it is unlinked and relinked at its new place, reusing the
        node object and its height.  A move to a larger key finds its new
        place by a finger search from the old one (:meth:`_move_ahead`), so
        a small increment costs one search from the header, not two.
        Returns whether the node now lies near the oldest end of its run,
        as :meth:`insert` does.

        Runtime complexity: O(log N)

        >>> sl = SkipList(random.Random(0))
        >>> sl.build([(10, 0, "x"), (20, 0, "y"), (30, 0, "z")])
        >>> sl.move(20, 0, 1, 0)
        >>> list(sl)
        [(1, 0, 'y'), (10, 0, 'x'), (30, 0, 'z')]

        :raises KeyError: if the old key is absent.
        :raises ValueError: if the new key is already present (nothing changes).
        """
        # The search records ranks too: the finger search below needs them.
        x = self._search_update_rank(primary, tie)[4]
        if x is None or x[0] != primary or x[1] != tie:
            raise KeyError((primary, tie))
        return self._move_node(x, new_primary, new_tie)

    def move_member(self, primary: Any, member: Any, new_primary: Any, new_tie: Any) -> bool | None:
        """:meth:`move` for an entry known by its primary and member, not its
        tie (for a board that did not keep the member's tie).

        The search (:meth:`_search_run_end`) stops at the oldest end of the
        run of ``primary``, recording ``update[]`` and ``rank[]`` as for a
        key.  When that node does not hold ``member``, level 0 is walked into
        the run to the member's node and ``update[]`` is corrected for it
        (:meth:`_seek_member`), a few steps.  Either way the node is then
        moved as :meth:`move` moves it: this costs what a move by key costs.

        Runtime complexity: O(log N) plus the nodes walked past

        >>> sl = SkipList(random.Random(0))
        >>> sl.oldest_last = True
        >>> sl.build([(1, 0, "a"), (2, -7, "b"), (2, -3, "c")])
        >>> sl.move_member(2, "c", 5, -8), sl.move_member(2, "b", 1, -9)
        (True, True)
        >>> list(sl)
        [(1, -9, 'b'), (1, 0, 'a'), (5, -8, 'c')]

        :raises KeyError: if no node with ``primary`` holds ``member``.
        :raises ValueError: if the new key is already present (nothing changes).
        """
        x = self._search_run_end(primary)
        if x is None or x[0] != primary:
            raise KeyError((primary, member))
        if x[2] != member:
            x = self._seek_member(x, member)
        return self._move_node(x, new_primary, new_tie)

    def _seek_member(self, end: _Node, member: Any) -> _Node:
        """The node holding ``member`` in the run whose oldest end is ``end``,
        with ``update[]`` and ``rank[]`` (filled for ``end`` by
        :meth:`_search_run_end`) corrected for it.

        Oldest first (ascending board) the node X lies after ``end``: a
        finger search (:meth:`_search_ahead`) from the ``update[]`` nodes
        finds X's predecessors, as a move ahead does.  Oldest last, X lies
        before ``end``: where ``update[i]`` is already before X it stays (no
        level-``i`` node lies between it and ``end``); the other levels (those
        of a tall node between X and ``end``, usually none above level 0)
        take the first node tall enough found walking back from X::

            level 1   H ------> 7a ----------> 7c* -------> 9
            level 0   H -> 5 -> 7a -> X(7b) -> 7c* -> 7d -> 9     (7d: the end)

            update[0] = update[1] = 7c (*) are not before X: walking back
            from X, 7a is the first node of height 2, so both become 7a.

        Runtime complexity: O(d) for a node d steps from ``end``, expected

        :raises KeyError: if no node of the run holds ``member``.
        """
        primary = end[0]
        x = end
        rank = self._rank
        r = rank[0] + 1  # the rank of ``end``
        if not self.oldest_last:
            while x[2] != member:
                x = x[4]
                if x is None or x[0] != primary:
                    raise KeyError((primary, member))
            self._search_ahead(x[0], x[1])
            # adopt the finger search's arrays (both pairs are scratch space)
            self._update, self._new_update = self._new_update, self._update
            self._rank, self._new_rank = self._new_rank, self._rank
            return x
        while x[2] != member:
            x = x[3]
            r -= 1
            if x is None or x[0] != primary:
                raise KeyError((primary, member))
        update = self._update
        if len(x) == 6 and (self.level == 1 or rank[1] < r):
            # The usual case, kept short: X has height 1 and no tall node lies
            # between it and ``end``, so only update[0] changes.
            prev = x[3]
            update[0] = self.header if prev is None else prev
            rank[0] = r - 1
            return x
        y = x
        ry = r
        for i in range(self.level):
            if rank[i] < r:
                break  # update[i] (and every one above) is before x already
            while y is x or (len(y) - 4) >> 1 <= i:
                prev = y[3]
                if prev is None:
                    y = self.header  # as tall as any level
                    ry = 0
                else:
                    y = prev
                    ry -= 1
            update[i] = y
            rank[i] = ry
        return x

    def _move_node(self, x: _Node, new_primary: Any, new_tie: Any) -> bool | None:
        """The body of :meth:`move` once ``update[]`` and ``rank[]`` hold
        the search for node ``x``.

        Runtime complexity: O(log N)
        """
        primary = x[0]
        tie = x[1]
        if self._rekey_in_place(x, new_primary, new_tie):
            # Fast path (Redis zslUpdateScore): the node stays between its
            # neighbours, so only its key changed; see _rekey_in_place.
            pass
        elif primary < new_primary or (primary == new_primary and tie < new_tie):
            # To a larger key (a score increment on a descending board): a
            # finger search from the old place, then one fused pass.
            self._move_ahead(x, new_primary, new_tie)
        else:
            # Otherwise: unlink with the update[] of the search above, search
            # for the new place from the header and relink the same node,
            # which keeps its height (drawn independently of its key).
            self._unlink(x)
            nxt = self._search_update_rank(new_primary, new_tie)[4]
            if nxt is not None and nxt[0] == new_primary and nxt[1] == new_tie:
                # Put the node back where it was before reporting the clash.
                self._search_update_rank(primary, tie)
                self._link(x)
                raise ValueError(f"key {(new_primary, new_tie)!r} is already present")
            x[0] = new_primary
            x[1] = new_tie
            self._link(x)
        return self._near(x)

    def build(self, entries: Iterable[Entry3]) -> None:
        """Replace the contents with ``entries``, sorted ascending by unique key.

        A bulk load with no search: every new node goes at the end of each
        level it reaches.  ``last[i]`` is the last node on level ``i`` so far
        and ``last_rank[i]`` its rank; linking node ``n`` (rank ``n``) after
        it sets that link's span to ``n - last_rank[i]``.  At the end the
        links to nil get the steps left to the end.  The order is trusted,
        not checked (call :meth:`_check` to verify).

        Runtime complexity: O(N)

        >>> sl = SkipList(random.Random(0))
        >>> sl.build([(1, 0, "a"), (1, 1, "b"), (2, 0, "c")])
        >>> sl.entry(1), sl.position(2, 0)
        ((1, 1, 'b'), 2)

        :param entries: ``(primary, tie, member)`` triples (tuples or
            lists) in ascending key order.
        :raises ValueError: if a row is not a triple; the list is then left
            empty (so it is if reading ``entries`` raises).
        """
        # Speed: a million entries make a million new lists (the nodes);
        # with the cycle collector on, its
        # passes re-scan them, and everything else alive, as they pile up.
        # Pausing it for the load took 1,000,000 entries (string members)
        # from ~7 s to ~1.2 s of CPU time.  The previous state is restored.
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            self._bulk_load(entries)
        except BaseException:
            # A row that is not a triple, or an input that raises, stops the
            # load half-way: nodes are linked from the header but length,
            # tail and the last spans are not set yet.  Leave an empty list
            # rather than a broken one (SortedListIndex does the same).
            self.clear()
            raise
        finally:
            if gc_was_enabled:
                gc.enable()

    def _bulk_load(self, entries: Iterable[Entry3]) -> None:
        """The body of :meth:`build`: append every entry at the end.

        Loading five entries whose heights are 1, 3, 1, 2, 1::

            level 2   H ------2-----> B --------------3-------------> nil
            level 1   H ------2-----> B ------2-----> D ------1-----> nil
            level 0   H --1-> A --1-> B --1-> C --1-> D --1-> E --0-> nil

            prev = E                      (last node on level 0)
            last[1:]      = [D, B]        (last node on levels 1 and 2)
            last_rank[1:] = [4, 2]        (their ranks)

        When D (rank 4) arrives it is linked after last[1] = B with span
        4 - last_rank[1] = 2.  When the input ends, each level's last link
        (to nil) gets the steps left: 5 - 5 = 0, 5 - 4 = 1, 5 - 2 = 3.
        """
        self.clear()
        header = self.header
        max_level = self.max_level
        last: list[_Node] = [header] * max_level
        last_rank = [0] * max_level
        # Speed: the coin is hoisted into a local, and the common height-1
        # node (3 in 4) takes a branch with no inner loop.  Level-0 spans are
        # always 1 except the last one, fixed below, so level 0 needs no
        # last[] bookkeeping.  The level draw is _random_level's, inlined:
        # one coin decides height 1 or more.
        coin = self._random
        p_up = P if max_level > 1 else 0.0  # max_level 1: never climb
        prev = header
        n = 0
        top = 1
        for primary, tie, member in entries:
            n += 1
            if coin() >= p_up:
                # Height 1: only level 0, where every link is one step.
                node = [primary, tie, member, prev, None, 1]
                prev[4] = node
            else:
                height = 2
                while height < max_level and coin() < P:
                    height += 1
                node = [primary, tie, member, prev] + [None, 1] * height
                prev[4] = node
                for i in range(1, height):
                    q = last[i]
                    f = 4 + 2 * i
                    q[f] = node
                    # q (rank last_rank[i]) now links to this node (rank n).
                    q[f + 1] = n - last_rank[i]
                    last[i] = node
                    last_rank[i] = n
                top = max(top, height)
            prev = node
        if n == 0:
            return
        header[4][3] = None  # the first node was given the header as prev
        header[5] = 1  # the header was built with span 0
        self.tail = prev
        self.length = n
        self.level = top
        # Level 0: the last node's link to nil has no steps left.
        prev[5] = 0
        for i in range(1, top):
            # The last node on level i is n - last_rank[i] steps from the end.
            last[i][5 + 2 * i] = n - last_rank[i]

    def columns(self) -> tuple[list[Any], list[Any], list[Any]]:
        """``(primaries, ties, members)``: every entry as three columns, in
        ascending key order, for snapshot writing.

        One walk along level 0 collects the nodes; three ``map(itemgetter)``
        passes (C) read the columns out of them.  Measured at N = 1,000,000:
        0.31 s (0.06 s of it the walk), against 0.63 s for a tuple per entry
        from :meth:`iter_range` and three list comprehensions.

        Runtime complexity: O(N)

        >>> sl = SkipList(random.Random(0))
        >>> sl.build([(1, 0, "a"), (2, 5, "b")])
        >>> sl.columns()
        ([1, 2], [0, 5], ['a', 'b'])
        """
        nodes: list[_Node] = []
        append = nodes.append
        x = self.header[4]
        while x is not None:
            append(x)
            x = x[4]
        return (
            list(map(_PRIMARY, nodes)),
            list(map(_TIE, nodes)),
            list(map(_MEMBER, nodes)),
        )

    # ------------------------------------------------------------------
    # OrderedIndex: queries
    # ------------------------------------------------------------------

    def position(self, primary: Any, tie: Any) -> int:
        """0-based position of the present key ``(primary, tie)``.

        Walk down from the top summing the spans crossed while the next key
        is smaller; the sum is the number of smaller entries.

        Runtime complexity: O(log N)

        >>> sl = SkipList(random.Random(0))
        >>> sl.build([(1, 0, "a"), (1, 1, "b"), (2, 0, "c")])
        >>> sl.position(1, 1)
        1

        :raises KeyError: if the key is absent.
        """
        # Speed: this walk is _count_below's, inlined (one call less), and
        # it loops over the forward slots f (level i's is 4 + 2 * i) rather
        # than over levels.
        p = primary
        t = tie
        x = self.header
        r = 0
        for f in range(2 + 2 * self.level, 3, -2):
            y = x[f]
            while y is not None and ((q := y[0]) < p or (q == p and y[1] < t)):
                r += x[f + 1]
                x = y
                y = x[f]
        y = x[4]
        if y is None or y[0] != primary or y[1] != tie:
            raise KeyError((primary, tie))
        # Remember the node and its 1-based rank: a read of the ranks around
        # it (Leaderboard.around) starts there; see _node_at.
        self._finger = (y, r + 1)
        return r

    def count_less(self, primary: Any, tie: Any) -> int:
        """Number of entries whose key is < ``(primary, tie)``.

        The key may be absent: the result is where it would be inserted.

        Runtime complexity: O(log N)

        >>> sl = SkipList(random.Random(0))
        >>> sl.build([(1, 0, "a"), (1, 2, "b"), (2, 0, "c")])
        >>> sl.count_less(1, 1), sl.count_less(9, 0)
        (1, 3)
        """
        return self._count_below(primary, tie)

    def count_primary(self, primary: Any, *, inclusive: bool) -> int:
        """Number of entries whose primary is < ``primary``, or <= with
        ``inclusive=True``, whatever their tie.

        The walk compares primaries only.

        Runtime complexity: O(log N)

        >>> sl = SkipList(random.Random(0))
        >>> sl.build([(1, 0, "a"), (2, 0, "b"), (2, 1, "c"), (3, 0, "d")])
        >>> sl.count_primary(2, inclusive=False), sl.count_primary(2, inclusive=True)
        (1, 3)
        """
        x = self.header
        r = 0
        for f in range(2 + 2 * self.level, 3, -2):
            y = x[f]
            while y is not None and (y[0] <= primary if inclusive else y[0] < primary):
                r += x[f + 1]
                x = y
                y = x[f]
        return r

    def tie_of(self, primary: Any, member: Any) -> tuple[Any, int]:
        """``(tie, distance)`` of the node holding ``member`` among those with
        ``primary``; ``distance`` is the number of nodes of the run between
        it and the run's oldest end (see :mod:`rankengine.index.protocol`).

        For a board that did not keep a member's tie; :meth:`_find` explains
        the search.

        Runtime complexity: O(log N) plus the nodes walked past

        >>> sl = SkipList(random.Random(0))
        >>> sl.build([(1, 0, "a"), (2, 4, "b"), (2, 9, "c")])
        >>> sl.tie_of(2, "c"), sl.tie_of(1, "a")
        ((9, 1), (0, 0))
        >>> sl.oldest_last = True
        >>> sl.tie_of(2, "c")
        (9, 0)

        :raises KeyError: if no node with ``primary`` holds ``member``.
        """
        x, _, distance = self._find(primary, member)
        return x[1], distance

    def position_of(self, primary: Any, member: Any) -> int:
        """0-based position of the node holding ``member`` among those with
        ``primary``: :meth:`tie_of` and :meth:`position` in one search.

        Runtime complexity: O(log N) plus the nodes walked past

        >>> sl = SkipList(random.Random(0))
        >>> sl.oldest_last = True
        >>> sl.build([(1, 0, "a"), (2, 4, "b"), (2, 9, "c")])
        >>> sl.position_of(2, "b")
        1

        :raises KeyError: if no node with ``primary`` holds ``member``.
        """
        x, r, _ = self._find(primary, member)
        self._finger = (x, r)  # as position() leaves it, for reads around x
        return r - 1

    def _find(self, primary: Any, member: Any) -> tuple[_Node, int, int]:
        """``(node, rank, distance)`` of the node holding ``member`` among
        those with ``primary`` (``rank`` 1-based), found from the oldest end
        of the run.

        One search, comparing primaries only and summing spans as
        :meth:`position` does, stops at the run's oldest end: its last node
        when :attr:`oldest_last` is true (cross links while the next primary
        is <= ``primary``), else the node before its first (cross while it
        is <).  Then level 0 is walked into the run (``backward`` or
        ``forward``) until the member turns up, usually at once: a member
        that arrived near the oldest end is found within ``RUN_SCAN_LIMIT``
        steps.

        Runtime complexity: O(log N) plus the nodes walked past

        :raises KeyError: if no node with ``primary`` holds ``member``.
        """
        x = self.header
        r = 0
        if self.oldest_last:
            for f in range(2 + 2 * self.level, 3, -2):
                y = x[f]
                while y is not None and y[0] <= primary:
                    r += x[f + 1]
                    x = y
                    y = x[f]
            y = None if x is self.header else x  # the run's last node, rank r
            slot = 3  # walk backward
            step = -1
        else:
            for f in range(2 + 2 * self.level, 3, -2):
                y = x[f]
                while y is not None and y[0] < primary:
                    r += x[f + 1]
                    x = y
                    y = x[f]
            y = x[4]  # the run's first node
            r += 1
            slot = 4  # walk forward
            step = 1
        distance = 0
        while y is not None and y[0] == primary:
            if y[2] == member:
                return y, r, distance
            y = y[slot]
            r += step
            distance += 1
        raise KeyError((primary, member))

    def _count_below(self, p: Any, t: Any) -> int:
        """Number of entries whose key is < ``(p, t)``: walk down from the
        top summing the spans crossed while the next key is smaller.
        """
        x = self.header
        r = 0
        for f in range(2 + 2 * self.level, 3, -2):
            y = x[f]
            while y is not None and ((q := y[0]) < p or (q == p and y[1] < t)):
                r += x[f + 1]
                x = y
                y = x[f]
        return r

    def entry(self, position: int) -> Entry3:
        """The entry at 0-based ``position``.

        Walk by spans (see :meth:`_node_at`): O(log N), no level-0 scan.

        Runtime complexity: O(log N)

        >>> sl = SkipList(random.Random(0))
        >>> sl.build([(1, 0, "a"), (2, 0, "b")])
        >>> sl.entry(1)
        (2, 0, 'b')

        :raises IndexError: unless ``0 <= position < len``.
        """
        if not 0 <= position < self.length:
            raise IndexError(f"position {position} out of range for length {self.length}")
        x = self._node_at(position + 1)
        return (x[0], x[1], x[2])

    def iter_range(self, start: int, stop: int, *, reverse: bool = False) -> Iterator[Entry3]:
        """Entries at positions ``start <= p < stop``, ascending, or descending
        from ``stop - 1`` to ``start`` with ``reverse=True``.

        The first node is found by spans in O(log N) (or from a finger, see
        :meth:`_node_at`); the walk then follows level-0 ``forward`` (or
        ``backward``) pointers.  The caller clamps the
        bounds to ``0 <= start <= stop <= len``.

        Runtime complexity: O(log N + stop - start)

        >>> sl = SkipList(random.Random(0))
        >>> sl.build([(i, 0, chr(97 + i)) for i in range(5)])
        >>> [m for _, _, m in sl.iter_range(1, 4)]
        ['b', 'c', 'd']
        >>> [m for _, _, m in sl.iter_range(1, 4, reverse=True)]
        ['d', 'c', 'b']
        """
        if start >= stop:
            return iter(())
        if reverse:
            return self._iter_backward(self._node_at(stop), stop - start)
        return self._iter_forward(self._node_at(start + 1), stop - start)

    @staticmethod
    def _iter_forward(x: _Node | None, count: int) -> Iterator[Entry3]:
        while count and x is not None:
            yield (x[0], x[1], x[2])
            x = x[4]
            count -= 1

    @staticmethod
    def _iter_backward(x: _Node | None, count: int) -> Iterator[Entry3]:
        while count and x is not None:
            yield (x[0], x[1], x[2])
            x = x[3]
            count -= 1

    # ------------------------------------------------------------------
    # Introspection for tests, debugging and visualisers
    # ------------------------------------------------------------------

    def levels(self, *, include_header: bool = False) -> Iterator[tuple[Any, Any, Any, list[int]]]:
        """Iterate over the nodes as ``(primary, tie, member, spans)``.

        ``len(spans)`` is the node's height and ``spans[i]`` the number of
        level-0 steps its level-``i`` link jumps (for the last link on a
        level: the steps left to the end of the list).  With
        ``include_header=True`` the first item is the header,
        ``(None, None, None, spans)`` with ``level`` spans.  The span lists
        are copies.  Meant for visualisers and tests.

        Runtime complexity: O(N) for the whole iteration

        >>> sl = SkipList(random.Random(0), max_level=1)
        >>> sl.build([(1, 0, "a"), (2, 0, "b")])
        >>> list(sl.levels(include_header=True))
        [(None, None, None, [1]), (1, 0, 'a', [1]), (2, 0, 'b', [0])]
        """
        if include_header:
            yield (None, None, None, node_spans(self.header)[: self.level])
        for x in self._nodes():
            yield (x[0], x[1], x[2], node_spans(x))

    def render(self, max_nodes: int = 24) -> str:
        """Draw the levels and spans as text, one row per level.

        Each ``o`` is a node on that level, followed by the span of its link
        in the row; ``|`` is the end of the list.  Only the first
        ``max_nodes`` nodes are drawn.

        Runtime complexity: O(N) up to ``max_nodes``

        >>> sl = SkipList(random.Random(4), max_level=3)
        >>> sl.build([(1, 0, "a"), (2, 0, "b"), (3, 0, "c"), (4, 0, "d")])
        >>> print(sl.render())
        L2  o1--o2--------o1--------|
        L1  o1--o2--------o1--------|
        L0  o1--o1---o1---o1---o0---|
            H   1/0  2/0  3/0  4/0

        Here the header's level-2 link jumps one step to ``1/0``, which jumps
        two to ``3/0``, which has one step left to the end.
        """
        nodes = [self.header]
        for x, _ in zip(self._nodes(), range(max_nodes), strict=False):
            nodes.append(x)
        truncated = self.length > max_nodes
        labels = ["H"] + [f"{x[0]!r}/{x[1]!r}" for x in nodes[1:]]
        # Column of each node: wide enough for its label and a span number.
        width = [max(len(lab), len(str(self.length)) + 1) + 2 for lab in labels]
        col = [0]
        for w in width:
            col.append(col[-1] + w)
        end = col[-1]
        index = {id(x): k for k, x in enumerate(nodes)}
        rows = []
        for i in range(self.level - 1, -1, -1):
            row = [" "] * (end + 1)
            for k, x in enumerate(nodes):
                if node_height(x) <= i:
                    continue
                fwd = x[_fwd(i)]
                target = index.get(id(fwd), len(nodes)) if fwd is not None else len(nodes)
                stop_col = col[target] if target < len(nodes) else end
                for c in range(col[k], stop_col):
                    row[c] = "-"
                text = "o" + str(x[_fwd(i) + 1])
                row[col[k] : col[k] + len(text)] = text
            row[end] = "|"
            rows.append(f"L{i:<2} " + "".join(row).rstrip())
        rows.append(
            ("    " + "".join(lab.ljust(w) for lab, w in zip(labels, width, strict=True))).rstrip()
        )
        if truncated:
            rows.append(f"    ... {self.length - max_nodes} more nodes not drawn")
        return "\n".join(rows)

    def _check(self) -> None:
        """Verify every invariant; raise ``AssertionError`` with a dump.

        Runtime complexity: O(N * level)

        >>> sl = SkipList(random.Random(0))
        >>> sl.build([(1, 0, "a"), (2, 0, "b")])
        >>> sl._check()
        """
        try:
            self._check_invariants()
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{self!r}\n{self.render()}") from None

    def _check_invariants(self) -> None:
        header = self.header
        nodes = list(self._nodes())
        length = self.length

        # The count of level-0 nodes is the recorded length.
        assert len(nodes) == length, f"length {length} but {len(nodes)} nodes on level 0"

        # Keys strictly increase along level 0 (this also rules out
        # duplicate keys).
        for a, b in itertools.pairwise(nodes):
            assert (a[0], a[1]) < (b[0], b[1]), (
                f"level 0 order: {node_entry(a)!r} !< {node_entry(b)!r}"
            )

        # Node shape: a list of 4 + 2 * height slots (a forward link and a
        # span per level), and no height exceeds max_level.
        for x in nodes:
            assert type(x) is list and len(x) >= 6 and len(x) % 2 == 0, f"bad node {x[:4]!r}"
            h = node_height(x)
            assert 1 <= h <= self.max_level, f"{node_entry(x)!r}: height {h} > {self.max_level}"
        assert node_height(header) == self.max_level, "header must have max_level links"
        assert header[:4] == [None, None, None, None], "header must hold no entry"

        # level is the highest used level (at least 1), and the header has
        # no links above it.
        top = max((node_height(x) for x in nodes), default=1)
        assert self.level == top, f"level {self.level} but tallest node has height {top}"
        for i in range(self.level, self.max_level):
            assert header[_fwd(i)] is None, f"header links on unused level {i}"

        # rank[x] = 1-based position; the header is rank 0 and nil is
        # rank length (a link to nil spans the steps left to the end).
        rank = {id(x): k for k, x in enumerate(nodes, 1)}
        rank[id(header)] = 0
        rank[id(None)] = length

        for i in range(self.level):
            f = _fwd(i)
            # Level i links, from the header, visit exactly the nodes of
            # height > i, in increasing key order (the level-0 order).
            chain = []
            link = header[f]
            while link is not None:
                chain.append(link)
                link = link[f]
            expected = [x for x in nodes if node_height(x) > i]
            assert len(chain) == len(expected) and all(
                a is b for a, b in zip(chain, expected, strict=True)
            ), f"level {i} does not visit the nodes of height > {i} in order"

            # Each span is the real level-0 distance to the link's target.
            total = 0
            for x in [header, *chain]:
                real = rank[id(x[f])] - rank[id(x)]
                assert x[f + 1] == real, (
                    f"level {i}: span of {node_entry(x)!r} is {x[f + 1]}, real distance {real}"
                )
                total += x[f + 1]

            # The spans along the level add up to length.
            assert total == length, f"level {i}: spans sum to {total}, length is {length}"

        # Backward pointers mirror level 0: None for the first node, else
        # the previous node.
        prev = None
        for x in nodes:
            assert x[3] is prev, f"backward of {node_entry(x)!r} is not its predecessor"
            prev = x

        # tail is the last node (None when empty).
        assert self.tail is prev, "tail is not the last node"

        # The finger, if set, names a node on the list and its true rank.
        if self._finger is not None:
            x, r = self._finger
            assert rank.get(id(x)) == r, f"finger rank {r} is not the rank of {node_entry(x)!r}"
