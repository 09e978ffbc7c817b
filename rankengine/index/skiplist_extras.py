"""The skip list's extras: finger searches and runs of equal scores.

:mod:`rankengine.index.skiplist` holds the core a student reads in one
sitting -- search, insert, delete, update in place, rank -- as Redis's
``t_zset.c`` has it.  This module holds what rankengine adds on top, for
speed and for the board's tie map; :class:`~rankengine.index.skiplist.SkipList`
inherits it (:class:`SkipListExtras` is a mixin with no state of its own).
Nothing here is needed to understand how a skip list with spans works.

Finger searches
---------------

A *finger* is a place in the list already found, from which a second search
starts instead of starting at the header.

* :meth:`SkipListExtras._move_ahead`: a score change to a larger key searches
  for the new place from the old ``update[]`` nodes (:meth:`_search_ahead`)
  and unlinks and relinks the node in one pass.  Redis's ``zslUpdateScore``
  deletes the node and inserts a new one from the header instead.
* The node the last rank query found (``SkipList._finger``, set by
  ``position`` and :meth:`position_of`): reads of the ranks around it walk
  from it along level 0 (``SkipList._node_at``, within ``FINGER_REACH``).

Runs of equal scores
--------------------

A first-to-reach board keeps a member's tie only when the member sits deep
in a run of equal primaries (see :mod:`rankengine.index.protocol`), so the
list also finds a node by its primary and member: one search to the
*oldest end* of the run, then a few steps along level 0
(:meth:`SkipListExtras.tie_of`, :meth:`SkipListExtras.position_of`,
:meth:`SkipListExtras.move_member`); and ``insert`` and ``move`` report
whether the node landed near that end (:meth:`SkipListExtras._near`).

The node slots (``x[FORWARD[i]]`` for ``x->level[i].forward``, ...) are
those of :mod:`rankengine.index.skipnode`.

>>> import random
>>> from rankengine.index.skiplist import SkipList
>>> sl = SkipList(random.Random(0))
>>> sl.oldest_last = True
>>> sl.build([(1, 0, "a"), (2, -7, "b"), (2, -3, "c")])
>>> sl.tie_of(2, "b"), sl.position_of(2, "c")
((-7, 1), 2)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from rankengine.index.protocol import RUN_SCAN_LIMIT, DuplicateKeyError
from rankengine.index.skipnode import (
    BACKWARD,
    FORWARD,
    LEVELS,
    LINKS_AT,
    MEMBER,
    PRIMARY,
    SPAN,
    TIE,
    Node,
    node_height,
)

__all__ = ["FINGER_REACH", "SkipListExtras"]

#: How far (in ranks) a read may walk along level 0 from the node the last
#: rank query found instead of searching from the header (see
#: ``SkipList._node_at``).  A level-0 step costs about as much as one step of
#: a search, and a search from the header makes ~40 of them at N = 10**6.
FINGER_REACH: Final = 32


class SkipListExtras:
    """Finger searches and run-of-ties look-ups, mixed into ``SkipList``.

    The attributes and core methods it uses are the skip list's (declared
    here for the type checker only).
    """

    if not TYPE_CHECKING:
        # No state of its own: SkipList's __slots__ hold it.  (Hidden from
        # the type checker, which would check the assignments below
        # against this empty tuple instead of SkipList's.)
        __slots__ = ()

    # The skip list's state (see SkipList.__init__).
    header: Node
    tail: Node | None
    length: int
    level: int
    oldest_last: bool | None
    _update: list[Node]
    _rank: list[int]
    _new_update: list[Node]
    _new_rank: list[int]
    _finger: tuple[Node, int] | None
    # The core's methods these extras call.
    _move_node: Callable[[Node, Any, Any], bool | None]

    # ------------------------------------------------------------------
    # Finger search: a move to a larger key
    # ------------------------------------------------------------------

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
        for i, forward, span in LEVELS[self.level]:
            if rank[i] > r:
                # The old predecessor on this level is ahead of where the
                # level above stopped: start there.
                x = update[i]
                r = rank[i]
            y = x[forward]
            while y is not None and ((q := y[PRIMARY]) < p or (q == p and y[TIE] < t)):
                r += x[span]
                x = y
                y = x[forward]
            new_update[i] = x
            new_rank[i] = r

    def _move_ahead(self, x: Node, p: Any, t: Any) -> None:
        """Move node ``x`` to the larger key ``(p, t)``: ``_unlink`` and
        ``_link`` fused, level by level, after one finger search.

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

        :raises DuplicateKeyError: if ``(p, t)`` is present (nothing changes).
        """
        self._search_ahead(p, t)
        update = self._update
        rank = self._rank
        new_update = self._new_update
        new_rank = self._new_rank
        level0 = FORWARD[0]
        w0 = new_update[0]
        # x's level-0 successor in the list without x.
        nxt = x[level0] if w0 is x else w0[level0]
        if nxt is not None and nxt[PRIMARY] == p and nxt[TIE] == t:
            raise DuplicateKeyError(f"key {(p, t)!r} is already present")
        # Not in place (move() checked), so w0 is after x: one rank lower
        # once x is out.
        r0 = new_rank[0] - 1
        x[level0][BACKWARD] = x[BACKWARD]  # x's old successor steps back
        height = (len(x) - LINKS_AT) >> 1  # node_height(x), inlined: a hot path
        for i in range(height):
            forward = FORWARD[i]
            span = SPAN[i]
            u = update[i]
            w = new_update[i]
            if w is x:
                w = u  # x stays after update[i] on this level
                d = r0 - rank[i]
            else:
                d = r0 - (new_rank[i] - 1)
            # Unlink (see _unlink) ...
            u[span] += x[span] - 1
            u[forward] = x[forward]
            # ... and link after w (see _link).
            x[forward] = w[forward]
            w[forward] = x
            x[span] = w[span] - d
            w[span] = d + 1
        for i in range(height, self.level):
            u = update[i]
            w = new_update[i]
            if w is not u:
                u[SPAN[i]] -= 1
                w[SPAN[i]] += 1
        x[BACKWARD] = w0
        nxt = x[level0]
        if nxt is None:
            self.tail = x
        else:
            nxt[BACKWARD] = x
        x[PRIMARY] = p
        x[TIE] = t
        self._finger = None  # ranks between the two places have changed

    # ------------------------------------------------------------------
    # Runs of equal primaries: find a node by primary and member
    # ------------------------------------------------------------------

    def _near(self, x: Node) -> bool | None:
        """Does node ``x`` lie fewer than ``RUN_SCAN_LIMIT`` nodes from the
        oldest end of its run of equal primaries?

        Walk level 0 towards the oldest end (``forward`` when the oldest
        node is last, ``backward`` when it is first) until the primary
        changes; usually the first step does.  None while
        :attr:`oldest_last` is None.

        Runtime complexity: O(RUN_SCAN_LIMIT)

        >>> import random
        >>> from rankengine.index.skiplist import SkipList
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
        p = x[PRIMARY]
        towards_oldest = FORWARD[0] if last else BACKWARD
        for _ in range(RUN_SCAN_LIMIT):
            x = x[towards_oldest]
            if x is None or x[PRIMARY] != p:
                return True
        return False

    def tie_of(self, primary: Any, member: Any) -> tuple[Any, int]:
        """``(tie, distance)`` of the node holding ``member`` among those with
        ``primary``; ``distance`` is the number of nodes of the run between
        it and the run's oldest end (see :mod:`rankengine.index.protocol`).

        For a board that did not keep a member's tie; :meth:`_find` explains
        the search.

        Runtime complexity: O(log N) plus the nodes walked past

        >>> import random
        >>> from rankengine.index.skiplist import SkipList
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
        return x[TIE], distance

    def position_of(self, primary: Any, member: Any) -> int:
        """0-based position of the node holding ``member`` among those with
        ``primary``: :meth:`tie_of` and ``position`` in one search.

        Runtime complexity: O(log N) plus the nodes walked past

        >>> import random
        >>> from rankengine.index.skiplist import SkipList
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

    def _find(self, primary: Any, member: Any) -> tuple[Node, int, int]:
        """``(node, rank, distance)`` of the node holding ``member`` among
        those with ``primary`` (``rank`` 1-based), found from the oldest end
        of the run.

        One search, comparing primaries only and summing spans as
        ``position`` does, stops at the run's oldest end: its last node
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
            for _, forward, span in LEVELS[self.level]:
                y = x[forward]
                while y is not None and y[PRIMARY] <= primary:
                    r += x[span]
                    x = y
                    y = x[forward]
            y = None if x is self.header else x  # the run's last node, rank r
            into_run = BACKWARD
            step = -1
        else:
            for _, forward, span in LEVELS[self.level]:
                y = x[forward]
                while y is not None and y[PRIMARY] < primary:
                    r += x[span]
                    x = y
                    y = x[forward]
            y = x[FORWARD[0]]  # the run's first node
            r += 1
            into_run = FORWARD[0]
            step = 1
        distance = 0
        while y is not None and y[PRIMARY] == primary:
            if y[MEMBER] == member:
                return y, r, distance
            y = y[into_run]
            r += step
            distance += 1
        raise KeyError((primary, member))

    def move_member(self, primary: Any, member: Any, new_primary: Any, new_tie: Any) -> bool | None:
        """``move`` for an entry known by its primary and member, not its
        tie (for a board that did not keep the member's tie).

        The search (:meth:`_search_run_end`) stops at the oldest end of the
        run of ``primary``, recording ``update[]`` and ``rank[]`` as for a
        key.  When that node does not hold ``member``, level 0 is walked into
        the run to the member's node and ``update[]`` is corrected for it
        (:meth:`_seek_member`), a few steps.  Either way the node is then
        moved as ``move`` moves it: this costs what a move by key costs.

        Runtime complexity: O(log N) plus the nodes walked past

        >>> import random
        >>> from rankengine.index.skiplist import SkipList
        >>> sl = SkipList(random.Random(0))
        >>> sl.oldest_last = True
        >>> sl.build([(1, 0, "a"), (2, -7, "b"), (2, -3, "c")])
        >>> sl.move_member(2, "c", 5, -8), sl.move_member(2, "b", 1, -9)
        (True, True)
        >>> list(sl)
        [(1, -9, 'b'), (1, 0, 'a'), (5, -8, 'c')]

        :raises KeyError: if no node with ``primary`` holds ``member``.
        :raises DuplicateKeyError: if the new key is already present (nothing changes).
        """
        x = self._search_run_end(primary)
        if x is None or x[PRIMARY] != primary:
            raise KeyError((primary, member))
        if x[MEMBER] != member:
            x = self._seek_member(x, member)
        return self._move_node(x, new_primary, new_tie)

    def _search_run_end(self, p: Any) -> Node | None:
        """Fill ``update[i]`` and ``rank[i]`` for the node at the oldest end
        of the run of primary ``p`` and return that node: the level-0
        successor of ``update[0]`` (check that it holds ``p``).

        Oldest first (ascending board), that is the run's first node, and the
        walk is ``_search_update_rank``'s comparing primaries only.
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
        level0 = FORWARD[0]
        x = self.header
        r = 0
        last = self.oldest_last
        for i, forward, span in LEVELS[self.level]:
            y = x[forward]
            if last:
                while y is not None and (
                    (q := y[PRIMARY]) < p
                    or (q == p and (z := y[level0]) is not None and z[PRIMARY] == p)
                ):
                    r += x[span]
                    x = y
                    y = x[forward]
            else:
                while y is not None and y[PRIMARY] < p:
                    r += x[span]
                    x = y
                    y = x[forward]
            update[i] = x
            rank[i] = r
        return x[level0]  # type: ignore[no-any-return]

    def _seek_member(self, end: Node, member: Any) -> Node:
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
        primary = end[PRIMARY]
        x = end
        rank = self._rank
        r = rank[0] + 1  # the rank of ``end``
        if not self.oldest_last:
            while x[MEMBER] != member:
                x = x[FORWARD[0]]
                if x is None or x[PRIMARY] != primary:
                    raise KeyError((primary, member))
            self._search_ahead(x[PRIMARY], x[TIE])
            # adopt the finger search's arrays (both pairs are scratch space)
            self._update, self._new_update = self._new_update, self._update
            self._rank, self._new_rank = self._new_rank, self._rank
            return x
        while x[MEMBER] != member:
            x = x[BACKWARD]
            r -= 1
            if x is None or x[PRIMARY] != primary:
                raise KeyError((primary, member))
        update = self._update
        if len(x) == LINKS_AT + 2 and (self.level == 1 or rank[1] < r):
            # The usual case, kept short: X has height 1 and no tall node lies
            # between it and ``end``, so only update[0] changes.
            prev = x[BACKWARD]
            update[0] = self.header if prev is None else prev
            rank[0] = r - 1
            return x
        y = x
        ry = r
        for i in range(self.level):
            if rank[i] < r:
                break  # update[i] (and every one above) is before x already
            while y is x or node_height(y) <= i:
                prev = y[BACKWARD]
                if prev is None:
                    y = self.header  # as tall as any level
                    ry = 0
                else:
                    y = prev
                    ry -= 1
            update[i] = y
            rank[i] = ry
        return x
