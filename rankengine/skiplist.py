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

    level 2   H ------------4--------------> 40 ----------2------> nil
    level 1   H ------2----> 20 -----2-----> 40 ----1--> 50 ---1-> nil
    level 0   H --1-> 10 -1> 20 --1> 30 --1> 40 ---1---> 50 -1> 60 -0-> nil

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
   ``zslUpdateScore``); otherwise the node is unlinked and relinked, keeping
   its height.

And where it departs from Redis:

5. :meth:`SkipList.build` bulk-loads sorted entries in O(N) by appending at
   the end of every level, for fast snapshot recovery.
6. Reads at either end of the list (top-k) start at the first node or the
   tail without a walk (Redis does this in ZRANGE, not in its rank lookup).

Invariant (checked by :meth:`SkipList._check`)::

    keys strictly increase along level 0, and
    span(x, i) == rank(x.forward[i]) - rank(x)     (rank(nil) == length)
"""

from __future__ import annotations

import gc
import itertools
import random
from collections.abc import Iterable, Iterator
from typing import Any

from rankengine.index import Entry3

__all__ = ["MAX_LEVEL", "P", "SkipList"]

#: The highest level a node may reach.  With ``P = 1/4`` a list needs about
#: ``log4(N)`` levels, so 32 levels are enough for 4**32 = 2**64 elements.
MAX_LEVEL = 32

#: Probability that a node on level ``i`` also joins level ``i + 1``.  Redis's
#: choice: a node carries 1 / (1 - P) ~ 1.33 links on average (against 2 at
#: P = 1/2), while a search still visits at most ~ (1 / P) nodes per level.
P = 0.25


class _Node:
    """One skip-list node.

    ``entry`` is the stored ``(primary, tie, member)`` tuple itself: keeping
    the tuple (instead of three fields) means a key comparison is one C-level
    tuple comparison, ``node.entry < (primary, tie)``, and :meth:`entry` and
    the iterators hand out the stored tuple without building a new one.  A
    3-tuple compares with the 2-tuple key exactly like its ``(primary, tie)``
    prefix, because keys are unique: when the prefixes are equal the shorter
    tuple counts as smaller, and the member is never compared.
    (Measured at N = 100,000: a rank query took ~12.5 us this way against
    ~15.5 us with ``primary`` and ``tie`` in two fields compared in Python.)

    ``forward[i]`` and ``span[i]`` describe the link on level ``i``;
    ``len(forward)`` is the node's height.  ``backward`` is the previous node
    on level 0 (``None`` for the first node).
    """

    __slots__ = ("backward", "entry", "forward", "span")

    def __init__(
        self,
        entry: Entry3,
        forward: list[_Node | None],
        span: list[int],
        backward: _Node | None,
    ) -> None:
        self.entry = entry
        self.forward = forward
        self.span = span
        self.backward = backward

    @property
    def primary(self) -> Any:
        """The entry's primary (its score)."""
        return self.entry[0]

    @property
    def tie(self) -> Any:
        """The entry's tie-break."""
        return self.entry[1]

    @property
    def member(self) -> Any:
        """The entry's member."""
        return self.entry[2]

    def __repr__(self) -> str:
        return f"_Node({self.entry!r}, height={len(self.forward)})"


class SkipList:
    """An indexable skip list of ``(primary, tie, member)`` entries.

    Implements :class:`rankengine.index.OrderedIndex`.  Entries are kept in
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
        "_random",
        "_rank",
        "_update",
        "header",
        "length",
        "level",
        "max_level",
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
        #: The header node: no entry, ``max_level`` links, rank 0.
        self.header: _Node = _Node((None, None, None), [], [], None)
        #: The last node on level 0, or ``None`` when empty.
        self.tail: _Node | None = None
        #: Number of entries.
        self.length: int = 0
        #: Number of levels in use (at least 1).
        self.level: int = 1
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
        x = self.header.forward[0]
        while x is not None:
            yield x.entry
            x = x.forward[0]

    def __repr__(self) -> str:
        """Show the first entries and the shape.

        >>> sl = SkipList(random.Random(3))
        >>> sl.build([(1, 0, "a"), (2, 0, "b")])
        >>> sl
        SkipList([(1, 0, 'a'), (2, 0, 'b')], length=2, level=...)
        """
        shown = 8
        head = [x.entry for x, _ in zip(self._nodes(), range(shown), strict=False)]
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
        self.header = _Node((None, None, None), [None] * m, [0] * m, None)
        self._update = [self.header] * m
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

    def _search_update(self, key: tuple[Any, Any]) -> _Node:
        """Fill ``update[i]``, the last node before ``key`` on each level.

        Returns ``update[0]``; the node holding ``key``, if present, is its
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
            fwd = x.forward[i]
            while fwd is not None and fwd.entry < key:
                x = fwd
                fwd = x.forward[i]
            update[i] = x
        return x

    def _search_update_rank(self, key: tuple[Any, Any]) -> _Node:
        """Fill ``update[i]`` and ``rank[i]``: the last node before ``key`` on
        each level and its rank (header = 0).  Returns ``update[0]``.

        The same walk as :meth:`_search_update`, adding the span of every
        link it crosses.  Inserting 35::

            level 1   H --2--> 20* -------2--------> 40     rank[1] = 2
            level 0   H -1> 10 -1> 20 -1> 30* --1--> 40     rank[0] = 3

        rank[0] is where the new node goes minus one: it becomes rank 4.
        """
        update = self._update
        rank = self._rank
        x = self.header
        r = 0
        for i in range(self.level - 1, -1, -1):
            fwd = x.forward[i]
            while fwd is not None and fwd.entry < key:
                r += x.span[i]
                x = fwd
                fwd = x.forward[i]
            update[i] = x
            rank[i] = r
        return x

    def _link(self, x: _Node) -> None:
        """Link node ``x`` after ``update[i]`` on each of its levels.

        Needs ``update[]`` and ``rank[]`` from :meth:`_search_update_rank`.
        Inserting X of height 2 between 20 and 30 (``d = rank[0] - rank[i]``
        is how far update[i] is behind update[0])::

            before                            after
            level 2   H ------4------> 40     H -------5--------> 40
            level 1   H --2--> 20 --2> 40     H --2--> 20 -1> X -2> 40
            level 0   H ... 20 -1> 30         H ... 20 -1> X -1> 30

        On level 1, update[1] = 20 and d = 0: 20 now stops at X (span
        d + 1 = 1) and X takes the rest of 20's old span (2 - d = 2).  On
        level 2, above X, the link H -> 40 just jumps over one more node.
        """
        update = self._update
        rank = self._rank
        height = len(x.forward)
        level = self.level
        if height > level:
            # New levels: the header's link there jumps the whole list
            # (length level-0 steps to nil); the loop below splits it.
            header = self.header
            length = self.length
            for i in range(level, height):
                rank[i] = 0
                update[i] = header
                header.span[i] = length
            self.level = height
        r0 = rank[0]
        xf = x.forward
        xs = x.span
        for i in range(height):
            u = update[i]
            d = r0 - rank[i]
            xf[i] = u.forward[i]
            u.forward[i] = x
            # X inherits the part of u's old link beyond the insert point:
            # u's old span minus the d steps from u to update[0].
            xs[i] = u.span[i] - d
            # u now stops at X, which is d steps to update[0] plus one.
            u.span[i] = d + 1
        for i in range(height, self.level):
            # Above X's height the link from update[i] passes over X: one
            # more level-0 step.
            update[i].span[i] += 1
        # Level 0 is doubly linked; the first node has no backward node.
        u0 = update[0]
        x.backward = None if u0 is self.header else u0
        nxt = xf[0]
        if nxt is None:
            self.tail = x
        else:
            nxt.backward = x
        self.length += 1

    def _unlink(self, x: _Node) -> None:
        """Unlink node ``x``, the level-0 successor of ``update[0]``.

        Needs ``update[]`` from a search for ``x``'s key.  Deleting X::

            before                                  after
            level 2   H ---------5--------> 40      H -------4-------> 40
            level 1   H --2--> 20 -1> X -2> 40      H --2--> 20 --2--> 40
            level 0   H ... 20 -1> X -1> 30         H ... 20 -1> 30

        On X's levels update[i] takes over X's link: its span grows by X's
        span and loses the step into X (1 + 2 - 1 = 2).  Above X the link
        passes over one node fewer (5 - 1 = 4).
        """
        update = self._update
        height = len(x.forward)
        xf = x.forward
        xs = x.span
        for i in range(height):
            u = update[i]
            # u now jumps to where X jumped: its own span plus X's, minus
            # the one step that landed on X.
            u.span[i] += xs[i] - 1
            u.forward[i] = xf[i]
        for i in range(height, self.level):
            # Links above X's height skipped over X: one step fewer.
            update[i].span[i] -= 1
        nxt = xf[0]
        if nxt is None:
            self.tail = x.backward
        else:
            nxt.backward = x.backward
        # Drop levels that are now empty (level stays at least 1).
        header_forward = self.header.forward
        while self.level > 1 and header_forward[self.level - 1] is None:
            self.level -= 1
        self.length -= 1

    def _rekey_in_place(self, x: _Node, new_key: tuple[Any, Any]) -> bool:
        """Give ``x`` the key ``new_key`` if it still fits between its neighbours.

        This is Redis's ``zslUpdateScore`` fast path.  If the new key sorts
        strictly between ``x.backward`` and ``x.forward[0]``, the level-0
        order is unchanged, and so is the order on every higher level (each
        is a sub-sequence of level 0).  Spans count nodes, not keys, so they
        do not change either: only the key is replaced::

            level 1   H --2--> 20 ---------2--------> 40
            level 0   H ... 20 -1> X(25) -1> 30 -1> 40

            move 25 -> 27:  20 < 27 < 30, only X's key changes
            move 25 -> 35:  30 < 35, X must be unlinked and relinked

        Returns ``True`` when the fast path applied.
        """
        prev = x.backward
        nxt = x.forward[0]
        # "prev.entry < new_key" is False when the keys are equal (the 3-tuple
        # is longer), so it is strict as written.  On the right the stored
        # tuple is cut to its key: a 2-tuple sorts before any longer tuple
        # with the same prefix, which would let an equal key through.
        if (prev is None or prev.entry < new_key) and (nxt is None or new_key < nxt.entry[:2]):
            x.entry = (new_key[0], new_key[1], x.entry[2])
            return True
        return False

    def _node_at(self, rank: int) -> _Node:
        """The node at 1-based ``rank`` (``1 <= rank <= length``).

        Walk down from the top, crossing a link whenever its span does not
        overshoot the target (Redis ``zslGetElementByRank``).  Finding rank 3::

            level 1   H --2--> 20 ------2------> 40
            level 0   H -1> 10 -1> 20 -1> 30 -1> 40

        Level 1: 0 + 2 <= 3, cross to 20; 2 + 2 > 3, drop.  Level 0:
        2 + 1 <= 3, cross to 30; traversed == 3, found.

        The two ends need no walk (as in Redis's ZRANGE, which starts a
        reverse range at the tail): top-k reads at either end are O(k).
        """
        tail = self.tail
        if rank == self.length and tail is not None:
            return tail
        first = self.header.forward[0]
        if rank == 1 and first is not None:
            return first
        x = self.header
        traversed = 0
        for i in range(self.level - 1, -1, -1):
            fwd = x.forward[i]
            while fwd is not None and traversed + x.span[i] <= rank:
                traversed += x.span[i]
                x = fwd
                fwd = x.forward[i]
            if traversed == rank:
                return x
        raise AssertionError("unreachable: rank in range but not found")

    def _nodes(self) -> Iterator[_Node]:
        """Every node on level 0, in order."""
        x = self.header.forward[0]
        while x is not None:
            yield x
            x = x.forward[0]

    # ------------------------------------------------------------------
    # OrderedIndex: mutation
    # ------------------------------------------------------------------

    def insert(self, primary: Any, tie: Any, member: Any) -> None:
        """Add the entry ``(primary, tie, member)``.

        Search for the insert point while recording ``update[]`` and
        ``rank[]``, draw a height, then link the new node on each of its
        levels, fixing the spans.

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
        u0 = self._search_update_rank((primary, tie))
        nxt = u0.forward[0]
        if nxt is not None and nxt.entry[0] == primary and nxt.entry[1] == tie:
            raise ValueError(f"key {(primary, tie)!r} is already present")
        height = self._random_level()
        self._link(_Node((primary, tie, member), [None] * height, [0] * height, None))

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
        x = self._search_update((primary, tie)).forward[0]
        if x is None or x.entry[0] != primary or x.entry[1] != tie:
            raise KeyError((primary, tie))
        self._unlink(x)

    def move(self, primary: Any, tie: Any, new_primary: Any, new_tie: Any) -> None:
        """Re-key an entry (a score change), keeping its member.

        If the new key still sorts strictly between the entry's level-0
        neighbours the node is changed in place (no links or spans change);
        otherwise it is unlinked and relinked at its new place, reusing the
        node object and its height.

        Runtime complexity: O(log N)

        >>> sl = SkipList(random.Random(0))
        >>> sl.build([(10, 0, "x"), (20, 0, "y"), (30, 0, "z")])
        >>> sl.move(20, 0, 1, 0)
        >>> list(sl)
        [(1, 0, 'y'), (10, 0, 'x'), (30, 0, 'z')]

        :raises KeyError: if the old key is absent.
        :raises ValueError: if the new key is already present (nothing changes).
        """
        x = self._search_update((primary, tie)).forward[0]
        if x is None or x.entry[0] != primary or x.entry[1] != tie:
            raise KeyError((primary, tie))
        new_key = (new_primary, new_tie)
        # Fast path (Redis zslUpdateScore): the node stays between its
        # neighbours, so only its key changes; see _rekey_in_place.
        if self._rekey_in_place(x, new_key):
            return
        # Slow path: unlink with the update[] of the search above, then
        # search again for the new place and relink the same node, which
        # keeps its height (drawn independently of its key).
        self._unlink(x)
        u0 = self._search_update_rank(new_key)
        nxt = u0.forward[0]
        if nxt is not None and nxt.entry[0] == new_primary and nxt.entry[1] == new_tie:
            # Put the node back where it was before reporting the clash.
            self._search_update_rank((primary, tie))
            self._link(x)
            raise ValueError(f"key {new_key!r} is already present")
        x.entry = (new_primary, new_tie, x.entry[2])
        self._link(x)

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

        :param entries: ``(primary, tie, member)`` tuples in ascending key
            order; lists are converted to tuples.
        """
        # Speed: a million entries make three million new container objects
        # (node, forward list, span list); with the cycle collector on, its
        # passes re-scan them, and everything else alive, as they pile up.
        # Pausing it for the load took 1,000,000 entries (string members)
        # from ~7 s to ~1.2 s of CPU time.  The previous state is restored.
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            self._bulk_load(entries)
        finally:
            if gc_was_enabled:
                gc.enable()

    def _bulk_load(self, entries: Iterable[Entry3]) -> None:
        """The body of :meth:`build`: append every entry at the end.

        Loading five entries whose heights are 1, 3, 1, 2, 1::

            level 2   H ------------2-----------> B ------------3-----------> nil
            level 1   H ------------2-----------> B ------2-----> D ----1---> nil
            level 0   H --1--> A --1--> B --1--> C --1--> D --1--> E --0--> nil

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
        # Speed: the coin and the node class are hoisted into locals, and
        # the common height-1 node (3 in 4) takes a branch with no inner
        # loop.  Level-0 spans are always 1 except the last one, fixed below,
        # so level 0 needs no last[] bookkeeping.  The level draw is
        # _random_level's, inlined: one coin decides height 1 or more.
        coin = self._random
        p_up = P if max_level > 1 else 0.0  # max_level 1: never climb
        node_cls = _Node
        prev = header
        n = 0
        top = 1
        for entry in entries:
            n += 1
            if type(entry) is not tuple:
                entry = tuple(entry)  # noqa: PLW2901 - normalise in place
            if coin() >= p_up:
                # Height 1: only level 0, where every link is one step.
                node = node_cls(entry, [None], [1], prev)
                prev.forward[0] = node
            else:
                height = 2
                while height < max_level and coin() < P:
                    height += 1
                node = node_cls(entry, [None] * height, [1] * height, prev)
                prev.forward[0] = node
                for i in range(1, height):
                    p = last[i]
                    p.forward[i] = node
                    # p (rank last_rank[i]) now links to this node (rank n).
                    p.span[i] = n - last_rank[i]
                    last[i] = node
                    last_rank[i] = n
                top = max(top, height)
            prev = node
        if n == 0:
            return
        first = header.forward[0]
        assert first is not None
        first.backward = None  # it was given the header as prev
        header.span[0] = 1  # the header was built with span 0
        self.tail = prev
        self.length = n
        self.level = top
        # Level 0: the last node's link to nil has no steps left.
        prev.span[0] = 0
        for i in range(1, top):
            # The last node on level i is n - last_rank[i] steps from the end.
            last[i].span[i] = n - last_rank[i]

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
        key = (primary, tie)
        x = self.header
        r = 0
        for i in range(self.level - 1, -1, -1):
            fwd = x.forward[i]
            while fwd is not None and fwd.entry < key:
                r += x.span[i]
                x = fwd
                fwd = x.forward[i]
        nxt = x.forward[0]
        if nxt is None or nxt.entry[0] != primary or nxt.entry[1] != tie:
            raise KeyError(key)
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
        return self._count_below((primary, tie))

    def count_primary(self, primary: Any, *, inclusive: bool) -> int:
        """Number of entries whose primary is < ``primary``, or <= with
        ``inclusive=True``, whatever their tie.

        The walk compares primaries only.  For the strict count it compares
        each entry with the 1-tuple ``(primary,)``: an entry with an equal
        primary is longer, hence greater, so the test is exactly
        ``entry_primary < primary`` in one tuple comparison.

        Runtime complexity: O(log N)

        >>> sl = SkipList(random.Random(0))
        >>> sl.build([(1, 0, "a"), (2, 0, "b"), (2, 1, "c"), (3, 0, "d")])
        >>> sl.count_primary(2, inclusive=False), sl.count_primary(2, inclusive=True)
        (1, 3)
        """
        if not inclusive:
            return self._count_below((primary,))
        x = self.header
        r = 0
        for i in range(self.level - 1, -1, -1):
            fwd = x.forward[i]
            while fwd is not None and fwd.entry[0] <= primary:
                r += x.span[i]
                x = fwd
                fwd = x.forward[i]
        return r

    def _count_below(self, key: tuple[Any, ...]) -> int:
        """Number of entries whose stored tuple is < ``key``: walk down from
        the top summing the spans crossed while the next entry is smaller.
        """
        x = self.header
        r = 0
        for i in range(self.level - 1, -1, -1):
            fwd = x.forward[i]
            while fwd is not None and fwd.entry < key:
                r += x.span[i]
                x = fwd
                fwd = x.forward[i]
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
        return self._node_at(position + 1).entry

    def iter_range(self, start: int, stop: int, *, reverse: bool = False) -> Iterator[Entry3]:
        """Entries at positions ``start <= p < stop``, ascending, or descending
        from ``stop - 1`` to ``start`` with ``reverse=True``.

        The first node is found by spans in O(log N); the walk then follows
        ``forward[0]`` (or ``backward``) pointers.  The caller clamps the
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
            yield x.entry
            x = x.forward[0]
            count -= 1

    @staticmethod
    def _iter_backward(x: _Node | None, count: int) -> Iterator[Entry3]:
        while count and x is not None:
            yield x.entry
            x = x.backward
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
            yield (None, None, None, self.header.span[: self.level])
        for x in self._nodes():
            p, t, m = x.entry
            yield (p, t, m, list(x.span))

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
        labels = ["H"] + [f"{x.entry[0]!r}/{x.entry[1]!r}" for x in nodes[1:]]
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
                if len(x.forward) <= i:
                    continue
                fwd = x.forward[i]
                target = index.get(id(fwd), len(nodes)) if fwd is not None else len(nodes)
                stop_col = col[target] if target < len(nodes) else end
                for c in range(col[k], stop_col):
                    row[c] = "-"
                text = "o" + str(x.span[i])
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
            assert a.entry[:2] < b.entry[:2], f"level 0 order: {a.entry!r} !< {b.entry!r}"

        # Node shape: entries are 3-tuples, forward and span have one slot
        # per level, and no height exceeds max_level.
        for x in nodes:
            assert type(x.entry) is tuple and len(x.entry) == 3, f"bad entry {x.entry!r}"
            h = len(x.forward)
            assert len(x.span) == h, f"{x!r}: {h} forward links but {len(x.span)} spans"
            assert 1 <= h <= self.max_level, f"{x!r}: height {h} > max_level {self.max_level}"
        assert len(header.forward) == self.max_level, "header must have max_level links"

        # level is the highest used level (at least 1), and the header has
        # no links above it.
        top = max((len(x.forward) for x in nodes), default=1)
        assert self.level == top, f"level {self.level} but tallest node has height {top}"
        for i in range(self.level, self.max_level):
            assert header.forward[i] is None, f"header links on unused level {i}"

        # rank[x] = 1-based position; the header is rank 0 and nil is
        # rank length (a link to nil spans the steps left to the end).
        rank = {id(x): k for k, x in enumerate(nodes, 1)}
        rank[id(header)] = 0
        rank[id(None)] = length

        for i in range(self.level):
            # Level i links, from the header, visit exactly the nodes of
            # height > i, in increasing key order (the level-0 order).
            chain = []
            link = header.forward[i]
            while link is not None:
                chain.append(link)
                link = link.forward[i]
            expected = [x for x in nodes if len(x.forward) > i]
            assert chain == expected, f"level {i} does not visit the nodes of height > {i} in order"

            # Each span is the real level-0 distance to the link's target.
            total = 0
            for x in [header, *chain]:
                fwd = x.forward[i]
                real = rank[id(fwd)] - rank[id(x)]
                assert x.span[i] == real, (
                    f"level {i}: span of {x.entry!r} is {x.span[i]}, real distance {real}"
                )
                total += x.span[i]

            # The spans along the level add up to length.
            assert total == length, f"level {i}: spans sum to {total}, length is {length}"

        # Backward pointers mirror level 0: None for the first node, else
        # the previous node.
        prev = None
        for x in nodes:
            assert x.backward is prev, f"backward of {x.entry!r} is not its predecessor"
            prev = x

        # tail is the last node (None when empty).
        assert self.tail is prev, f"tail is {self.tail!r}, last node is {prev!r}"
