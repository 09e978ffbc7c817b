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

How to read this module
-----------------------
A node is one flat Python list whose slots have names
(:mod:`rankengine.index.skipnode`): ``x[FORWARD[i]]`` is Redis's
``x->level[i].forward``, ``x[SPAN[i]]`` its ``x->level[i].span``,
``x[BACKWARD]`` its ``x->backward``.  :class:`SkipList` is then read top to
bottom in the order of ``t_zset.c``: 1. search (``update[]``, ``rank[]``),
2. insert (``zslInsert``), 3. delete (``zslDeleteNode``), 4. update a key
(``zslUpdateScore``), 5. rank and select (``zslGetRank``,
``zslGetElementByRank``); then the bulk load and the checks.  The extras
rankengine adds -- finger searches and look-ups by member in runs of equal
scores -- live in :mod:`rankengine.index.skiplist_extras`, which the class
inherits.

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
   and reads next to the node the last rank query found start from it
   (a finger, see :mod:`rankengine.index.skiplist_extras`).
7. A re-key that must relink keeps the node and its height: it is
   unlinked and linked again at its new place.  Redis's ``zslUpdateScore``
   deletes the node and calls ``zslInsert``, which makes a new node with a
   new random height.  A re-key to a larger key finds the new place by a
   finger search from the old ``update[]`` nodes, and unlinks and relinks in
   one pass (``_move_ahead``, in the extras).
8. A node is one flat Python list, not a struct (see
   :mod:`rankengine.index.skipnode`).
9. A board keeps a member's tie only when the member sits deep in a run of
   equal scores (see :mod:`rankengine.index.protocol`), so the list also finds a
   node by primary and member (``tie_of``, ``position_of``, ``move_member``,
   in the extras); and ``insert`` and ``move`` report whether the node
   landed near that end.

Invariant (checked by :meth:`SkipList._check`)::

    keys strictly increase along level 0, and
    span(x, i) == rank(x.forward[i]) - rank(x)     (rank(nil) == length)
"""

from __future__ import annotations

import itertools
import operator
import random
from collections.abc import Iterable, Iterator
from typing import Any, Final

from rankengine.index.collector import collector_paused
from rankengine.index.protocol import DuplicateKeyError, Entry3
from rankengine.index.skiplist_extras import FINGER_REACH, SkipListExtras
from rankengine.index.skipnode import (
    BACKWARD,
    FORWARD,
    LEVELS,
    LINKS_AT,
    MAX_LEVEL,
    MEMBER,
    PRIMARY,
    SPAN,
    TIE,
    Node,
    new_node,
    node_entry,
    node_forwards,
    node_height,
    node_spans,
)

__all__ = [
    "MAX_LEVEL",
    "P",
    "SkipList",
    "node_entry",
    "node_forwards",
    "node_height",
    "node_spans",
]

#: Probability that a node on level ``i`` also joins level ``i + 1``.  Redis's
#: choice: a node carries 1 / (1 - P) ~ 1.33 links on average (against 2 at
#: P = 1/2), while a search still visits at most ~ (1 / P) nodes per level.
P: Final = 0.25

# The getters of columns() (made once).
_GET_PRIMARY = operator.itemgetter(PRIMARY)
_GET_TIE = operator.itemgetter(TIE)
_GET_MEMBER = operator.itemgetter(MEMBER)


class SkipList(SkipListExtras):
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
        self._update: list[Node] = []
        self._rank: list[int] = [0] * max_level
        # The same pair for the new place of a node that move() shifts ahead
        # (the finger search of the extras).
        self._new_update: list[Node] = []
        self._new_rank: list[int] = [0] * max_level
        # The last node a rank query found and its rank (or None), for
        # iter_range; see position.  Every link or unlink clears it.  (Like
        # update[], it assumes the caller does not read while it writes:
        # the board holds one lock for both.)
        self._finger: tuple[Node, int] | None = None
        #: The header node: no entry, ``max_level`` links, rank 0.
        self.header: Node = new_node(None, None, None, max_level)
        #: The last node on level 0, or ``None`` when empty.
        self.tail: Node | None = None
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
        level0 = FORWARD[0]
        x = self.header[level0]
        while x is not None:
            yield (x[PRIMARY], x[TIE], x[MEMBER])
            x = x[level0]

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
        self.header = new_node(None, None, None, m)
        self._update = [self.header] * m
        self._new_update = [self.header] * m
        self._finger = None
        self.tail = None
        self.length = 0
        self.level = 1

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
    # 1. Search: update[] and rank[]
    # ------------------------------------------------------------------
    #
    # Every search loop has the same shape: ``for i, forward, span in
    # LEVELS[self.level]`` visits the levels from the top down, with the slot
    # numbers of level i's link (see skipnode), so that ``x[forward]`` reads
    # as Redis's ``x->level[i].forward`` and ``x[span]`` as
    # ``x->level[i].span``.  "The next key is smaller than (p, t)" is
    # written out as
    #
    #     (q := y[PRIMARY]) < p or (q == p and y[TIE] < t)
    #
    # which reads the tie only when the primaries are equal.

    def _search_update(self, p: Any, t: Any) -> Node:
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
        for i, forward, _ in LEVELS[self.level]:
            y = x[forward]
            while y is not None and ((q := y[PRIMARY]) < p or (q == p and y[TIE] < t)):
                x = y
                y = x[forward]
            update[i] = x
        return x

    def _search_update_rank(self, p: Any, t: Any) -> Node:
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
        for i, forward, span in LEVELS[self.level]:
            y = x[forward]
            while y is not None and ((q := y[PRIMARY]) < p or (q == p and y[TIE] < t)):
                r += x[span]
                x = y
                y = x[forward]
            update[i] = x
            rank[i] = r
        return x

    # ------------------------------------------------------------------
    # 2. Insert (Redis zslInsert)
    # ------------------------------------------------------------------

    def insert(self, primary: Any, tie: Any, member: Any) -> bool | None:
        """Add the entry ``(primary, tie, member)``.

        Search for the insert point while recording ``update[]`` and
        ``rank[]``, draw a height, then link the new node on each of its
        levels, fixing the spans.  Returns whether the node lies near the
        oldest end of its run (``_near``, in the extras), or None while
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
        :raises DuplicateKeyError: if the key is already present (nothing changes).
        """
        nxt = self._search_update_rank(primary, tie)[FORWARD[0]]
        if nxt is not None and nxt[PRIMARY] == primary and nxt[TIE] == tie:
            raise DuplicateKeyError(f"key {(primary, tie)!r} is already present")
        x = new_node(primary, tie, member, self._random_level())
        self._link(x)
        return self._near(x)

    def _link(self, x: Node) -> None:
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
        height = (len(x) - LINKS_AT) >> 1  # node_height(x), inlined: a hot path
        level = self.level
        if height > level:
            # New levels: the header's link there jumps the whole list
            # (length level-0 steps to nil); the loop below splits it.
            header = self.header
            length = self.length
            for i in range(level, height):
                rank[i] = 0
                update[i] = header
                header[SPAN[i]] = length
            self.level = height
        r0 = rank[0]
        for i in range(height):
            forward = FORWARD[i]
            span = SPAN[i]
            u = update[i]
            d = r0 - rank[i]
            x[forward] = u[forward]
            u[forward] = x
            # X inherits the part of u's old link beyond the insert point:
            # u's old span minus the d steps from u to update[0].
            x[span] = u[span] - d
            # u now stops at X, which is d steps to update[0] plus one.
            u[span] = d + 1
        for i in range(height, self.level):
            # Above X's height the link from update[i] passes over X: one
            # more level-0 step.
            update[i][SPAN[i]] += 1
        # Level 0 is doubly linked; the first node has no backward node.
        u0 = update[0]
        x[BACKWARD] = None if u0 is self.header else u0
        nxt = x[FORWARD[0]]
        if nxt is None:
            self.tail = x
        else:
            nxt[BACKWARD] = x
        self.length += 1
        self._finger = None  # ranks after x have changed

    # ------------------------------------------------------------------
    # 3. Delete (Redis zslDelete, zslDeleteNode)
    # ------------------------------------------------------------------

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
        x = self._search_update(primary, tie)[FORWARD[0]]
        if x is None or x[PRIMARY] != primary or x[TIE] != tie:
            raise KeyError((primary, tie))
        self._unlink(x)

    def _unlink(self, x: Node) -> None:
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
        height = (len(x) - LINKS_AT) >> 1  # node_height(x), inlined: a hot path
        for i in range(height):
            forward = FORWARD[i]
            span = SPAN[i]
            u = update[i]
            # u now jumps to where X jumped: its own span plus X's, minus
            # the one step that landed on X.
            u[span] += x[span] - 1
            u[forward] = x[forward]
        for i in range(height, self.level):
            # Links above X's height skipped over X: one step fewer.
            update[i][SPAN[i]] -= 1
        nxt = x[FORWARD[0]]
        if nxt is None:
            self.tail = x[BACKWARD]
        else:
            nxt[BACKWARD] = x[BACKWARD]
        # Drop levels that are now empty (level stays at least 1).
        header = self.header
        while self.level > 1 and header[FORWARD[self.level - 1]] is None:
            self.level -= 1
        self.length -= 1
        self._finger = None  # ranks after x have changed

    # ------------------------------------------------------------------
    # 4. Update a key (Redis zslUpdateScore)
    # ------------------------------------------------------------------

    def move(self, primary: Any, tie: Any, new_primary: Any, new_tie: Any) -> bool | None:
        """Re-key an entry (a score change), keeping its member.

        If the new key still sorts strictly between the entry's level-0
        neighbours the node is changed in place (no links or spans change);
        otherwise it is unlinked and relinked at its new place, reusing the
        node object and its height.  A move to a larger key finds its new
        place by a finger search from the old one (``_move_ahead``, in the
        extras), so a small increment costs one search from the header, not
        two.  Returns whether the node now lies near the oldest end of its
        run, as :meth:`insert` does.

        Runtime complexity: O(log N)

        >>> sl = SkipList(random.Random(0))
        >>> sl.build([(10, 0, "x"), (20, 0, "y"), (30, 0, "z")])
        >>> sl.move(20, 0, 1, 0)
        >>> list(sl)
        [(1, 0, 'y'), (10, 0, 'x'), (30, 0, 'z')]

        :raises KeyError: if the old key is absent.
        :raises DuplicateKeyError: if the new key is already present (nothing changes).
        """
        # The search records ranks too: the finger search of a move ahead
        # needs them.
        x = self._search_update_rank(primary, tie)[FORWARD[0]]
        if x is None or x[PRIMARY] != primary or x[TIE] != tie:
            raise KeyError((primary, tie))
        return self._move_node(x, new_primary, new_tie)

    def _move_node(self, x: Node, new_primary: Any, new_tie: Any) -> bool | None:
        """The body of :meth:`move` once ``update[]`` and ``rank[]`` hold
        the search for node ``x``.

        Runtime complexity: O(log N)
        """
        primary = x[PRIMARY]
        tie = x[TIE]
        if self._rekey_in_place(x, new_primary, new_tie):
            # Fast path (Redis zslUpdateScore): the node stays between its
            # neighbours, so only its key changed; see _rekey_in_place.
            pass
        elif primary < new_primary or (primary == new_primary and tie < new_tie):
            # To a larger key (a score increment on a descending board): a
            # finger search from the old place, then one fused pass (extras).
            self._move_ahead(x, new_primary, new_tie)
        else:
            # Otherwise: unlink with the update[] of the search above, search
            # for the new place from the header and relink the same node,
            # which keeps its height (drawn independently of its key).
            self._unlink(x)
            nxt = self._search_update_rank(new_primary, new_tie)[FORWARD[0]]
            if nxt is not None and nxt[PRIMARY] == new_primary and nxt[TIE] == new_tie:
                # Put the node back where it was before reporting the clash.
                self._search_update_rank(primary, tie)
                self._link(x)
                raise DuplicateKeyError(f"key {(new_primary, new_tie)!r} is already present")
            x[PRIMARY] = new_primary
            x[TIE] = new_tie
            self._link(x)
        return self._near(x)

    def _rekey_in_place(self, x: Node, p: Any, t: Any) -> bool:
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
        prev = x[BACKWARD]
        nxt = x[FORWARD[0]]
        if (prev is None or (q := prev[PRIMARY]) < p or (q == p and prev[TIE] < t)) and (
            nxt is None or p < (q := nxt[PRIMARY]) or (p == q and t < nxt[TIE])
        ):
            x[PRIMARY] = p
            x[TIE] = t
            return True
        return False

    # ------------------------------------------------------------------
    # 5. Rank and select (Redis zslGetRank, zslGetElementByRank)
    # ------------------------------------------------------------------

    def position(self, primary: Any, tie: Any) -> int:
        """0-based position of the present key ``(primary, tie)``.

        Walk down from the top summing the spans crossed while the next key
        is smaller; the sum is the number of smaller entries (the node's
        1-based rank minus one: the one place the rank becomes 0-based).

        Runtime complexity: O(log N)

        >>> sl = SkipList(random.Random(0))
        >>> sl.build([(1, 0, "a"), (1, 1, "b"), (2, 0, "c")])
        >>> sl.position(1, 1)
        1

        :raises KeyError: if the key is absent.
        """
        # Speed: this walk is _count_below's, inlined (one call less).
        p = primary
        t = tie
        x = self.header
        r = 0
        for _, forward, span in LEVELS[self.level]:
            y = x[forward]
            while y is not None and ((q := y[PRIMARY]) < p or (q == p and y[TIE] < t)):
                r += x[span]
                x = y
                y = x[forward]
        y = x[FORWARD[0]]
        if y is None or y[PRIMARY] != primary or y[TIE] != tie:
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

    def _count_below(self, p: Any, t: Any) -> int:
        """Number of entries whose key is < ``(p, t)``: walk down from the
        top summing the spans crossed while the next key is smaller.
        """
        x = self.header
        r = 0
        for _, forward, span in LEVELS[self.level]:
            y = x[forward]
            while y is not None and ((q := y[PRIMARY]) < p or (q == p and y[TIE] < t)):
                r += x[span]
                x = y
                y = x[forward]
        return r

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
        for _, forward, span in LEVELS[self.level]:
            y = x[forward]
            while y is not None and (y[PRIMARY] <= primary if inclusive else y[PRIMARY] < primary):
                r += x[span]
                x = y
                y = x[forward]
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
        return (x[PRIMARY], x[TIE], x[MEMBER])

    def _node_at(self, rank: int) -> Node:
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
        the node the last rank query found (see :meth:`position` and
        :mod:`rankengine.index.skiplist_extras`) is reached from that node
        along level 0: "my rank, then my neighbours" costs one search, not
        two.  (Measured at N = 10**6: finding the node 9 ranks before a
        just-ranked one took ~3 us this way, ~9.5 us from the header.)
        """
        tail = self.tail
        if rank == self.length and tail is not None:
            return tail
        x = self.header
        first: Node | None = x[FORWARD[0]]
        if rank == 1 and first is not None:
            return first
        finger = self._finger
        if finger is not None and -FINGER_REACH <= rank - finger[1] <= FINGER_REACH:
            x, r = finger
            while r < rank:
                x = x[FORWARD[0]]
                r += 1
            while r > rank:
                x = x[BACKWARD]
                r -= 1
            return x
        traversed = 0
        for _, forward, span in LEVELS[self.level]:
            y = x[forward]
            while y is not None and traversed + x[span] <= rank:
                traversed += x[span]
                x = y
                y = x[forward]
            if traversed == rank:
                return x
        raise AssertionError("unreachable: rank in range but not found")

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
            return self._iter_walk(self._node_at(stop), stop - start, BACKWARD)
        return self._iter_walk(self._node_at(start + 1), stop - start, FORWARD[0])

    @staticmethod
    def _iter_walk(x: Node | None, count: int, direction: int) -> Iterator[Entry3]:
        """``count`` entries from node ``x`` on, following slot
        ``direction`` (``FORWARD[0]`` or ``BACKWARD``)."""
        while count and x is not None:
            yield (x[PRIMARY], x[TIE], x[MEMBER])
            x = x[direction]
            count -= 1

    # ------------------------------------------------------------------
    # Bulk load and columns (snapshots)
    # ------------------------------------------------------------------

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
        try:
            with collector_paused():
                self._bulk_load(entries)
        except BaseException:
            # A row that is not a triple, or an input that raises, stops the
            # load half-way: nodes are linked from the header but length,
            # tail and the last spans are not set yet.  Leave an empty list
            # rather than a broken one (SortedListIndex does the same).
            self.clear()
            raise

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
        last: list[Node] = [header] * max_level
        last_rank = [0] * max_level
        # Speed: the coin is hoisted into a local, and the common height-1
        # node (3 in 4) takes a branch with no inner loop.  Level-0 spans are
        # always 1 except the last one, fixed below, so level 0 needs no
        # last[] bookkeeping.  The level draw is _random_level's, inlined:
        # one coin decides height 1 or more.  Nodes are written as list
        # displays in slot order (see skipnode): primary, tie, member,
        # backward, then a (forward, span) pair per level.
        level0 = FORWARD[0]
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
                prev[level0] = node
            else:
                height = 2
                while height < max_level and coin() < P:
                    height += 1
                node = [primary, tie, member, prev] + [None, 1] * height
                prev[level0] = node
                for i in range(1, height):
                    q = last[i]
                    q[FORWARD[i]] = node
                    # q (rank last_rank[i]) now links to this node (rank n).
                    q[SPAN[i]] = n - last_rank[i]
                    last[i] = node
                    last_rank[i] = n
                top = max(top, height)
            prev = node
        if n == 0:
            return
        header[level0][BACKWARD] = None  # the first node was given the header as prev
        header[SPAN[0]] = 1  # the header was built with span 0
        self.tail = prev
        self.length = n
        self.level = top
        # Level 0: the last node's link to nil has no steps left.
        prev[SPAN[0]] = 0
        for i in range(1, top):
            # The last node on level i is n - last_rank[i] steps from the end.
            last[i][SPAN[i]] = n - last_rank[i]

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
        nodes: list[Node] = []
        append = nodes.append
        level0 = FORWARD[0]
        x = self.header[level0]
        while x is not None:  # _nodes(), inlined: a generator step costs more
            append(x)
            x = x[level0]
        return (
            list(map(_GET_PRIMARY, nodes)),
            list(map(_GET_TIE, nodes)),
            list(map(_GET_MEMBER, nodes)),
        )

    # ------------------------------------------------------------------
    # Introspection for tests, debugging and visualisers
    # ------------------------------------------------------------------

    def _nodes(self) -> Iterator[Node]:
        """Every node on level 0, in order."""
        level0 = FORWARD[0]
        x = self.header[level0]
        while x is not None:
            yield x
            x = x[level0]

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
            yield (x[PRIMARY], x[TIE], x[MEMBER], node_spans(x))

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
        labels = ["H"] + [f"{x[PRIMARY]!r}/{x[TIE]!r}" for x in nodes[1:]]
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
                fwd = x[FORWARD[i]]
                target = index.get(id(fwd), len(nodes)) if fwd is not None else len(nodes)
                stop_col = col[target] if target < len(nodes) else end
                for c in range(col[k], stop_col):
                    row[c] = "-"
                text = "o" + str(x[SPAN[i]])
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
            assert (a[PRIMARY], a[TIE]) < (b[PRIMARY], b[TIE]), (
                f"level 0 order: {node_entry(a)!r} !< {node_entry(b)!r}"
            )

        # Node shape: a list of LINKS_AT + 2 * height slots (a forward link
        # and a span per level), and no height exceeds max_level.
        for x in nodes:
            assert type(x) is list and len(x) >= LINKS_AT + 2 and (len(x) - LINKS_AT) % 2 == 0, (
                f"bad node {x[:LINKS_AT]!r}"
            )
            h = node_height(x)
            assert 1 <= h <= self.max_level, f"{node_entry(x)!r}: height {h} > {self.max_level}"
        assert node_height(header) == self.max_level, "header must have max_level links"
        assert header[:LINKS_AT] == [None] * LINKS_AT, "header must hold no entry"

        # level is the highest used level (at least 1), and the header has
        # no links above it.
        top = max((node_height(x) for x in nodes), default=1)
        assert self.level == top, f"level {self.level} but tallest node has height {top}"
        for i in range(self.level, self.max_level):
            assert header[FORWARD[i]] is None, f"header links on unused level {i}"

        # rank[x] = 1-based position; the header is rank 0 and nil is
        # rank length (a link to nil spans the steps left to the end).
        rank = {id(x): k for k, x in enumerate(nodes, 1)}
        rank[id(header)] = 0
        rank[id(None)] = length

        for i in range(self.level):
            forward = FORWARD[i]
            span = SPAN[i]
            # Level i links, from the header, visit exactly the nodes of
            # height > i, in increasing key order (the level-0 order).
            chain = []
            link = header[forward]
            while link is not None:
                chain.append(link)
                link = link[forward]
            expected = [x for x in nodes if node_height(x) > i]
            assert len(chain) == len(expected) and all(
                a is b for a, b in zip(chain, expected, strict=True)
            ), f"level {i} does not visit the nodes of height > {i} in order"

            # Each span is the real level-0 distance to the link's target.
            total = 0
            for x in [header, *chain]:
                real = rank[id(x[forward])] - rank[id(x)]
                assert x[span] == real, (
                    f"level {i}: span of {node_entry(x)!r} is {x[span]}, real distance {real}"
                )
                total += x[span]

            # The spans along the level add up to length.
            assert total == length, f"level {i}: spans sum to {total}, length is {length}"

        # Backward pointers mirror level 0: None for the first node, else
        # the previous node.
        prev = None
        for x in nodes:
            assert x[BACKWARD] is prev, f"backward of {node_entry(x)!r} is not its predecessor"
            prev = x

        # tail is the last node (None when empty).
        assert self.tail is prev, "tail is not the last node"

        # The finger, if set, names a node on the list and its true rank.
        if self._finger is not None:
            x, r = self._finger
            assert rank.get(id(x)) == r, f"finger rank {r} is not the rank of {node_entry(x)!r}"
