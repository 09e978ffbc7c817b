"""SkipList against the plain-list ListIndex, one operation at a time.

A Hypothesis state machine drives both indexes with the same writes and
reads, and after every step checks ``SkipList._check()`` and that the two
hold the same entries (forward, backward from the tail, with the types of
the primaries: ``0``, ``0.0`` and ``-0.0`` are equal keys but not the same
value).  It aims at the paths ordinary tests rarely reach:

* node heights are forced: a scripted coin makes the next node as tall as
  the rule asks (1, ``max_level``, anything between), so the tallest node
  may be removed or moved and the list's level must shrink or stay;
* the finger (the node the last rank query found) is set by ``position``
  and ``position_of`` and then left to go stale through inserts, removes,
  in-place and relinking moves, ``clear`` and ``build``, while reads near it
  (``entry``, ``iter_range`` both ways) must stay right;
* runs of one primary longer than ``RUN_SCAN_LIMIT``, read and moved by
  member (``tie_of``, ``position_of``, ``move_member``) with either oldest
  end, and the near-the-oldest-end answers of ``insert`` and ``move``;
* primaries that are equal across types (``0``, ``0.0``, ``-0.0``; ``2**53``
  and ``2.0**53``), big ints, infinities, and composite (tuple) primaries.
"""

from __future__ import annotations

import math
import random
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from listindex import ListIndex

from rankengine.index.protocol import RUN_SCAN_LIMIT
from rankengine.index.skiplist import MAX_LEVEL, P, SkipList

INF = math.inf
BIG = 2**53
SCALARS = [0, 0.0, -0.0, 1, 1.0, 2, 0.5, -1, BIG, BIG + 1, float(BIG), 2**70, INF, -INF]


class ScriptedCoin(random.Random):
    """A random source whose next draws can be dictated: ``heights`` queues
    the coins that make the next nodes that tall; with nothing queued it
    falls back on its own seeded draws."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.queue: list[float] = []

    def random(self) -> float:
        if self.queue:
            return self.queue.pop(0)
        return super().random()

    def heights(self, heights: list[int], max_level: int, *, bulk: bool = False) -> None:
        """Queue the coins for nodes of these heights (in the order drawn).

        One coin per level climbed (below P), then one that stops the climb
        (unless the node reaches ``max_level``).  A bulk load draws its
        first coin even when ``max_level`` is 1.
        """
        self.queue.clear()
        for h in heights:
            if bulk and max_level == 1:
                self.queue.append(0.99)
                continue
            self.queue.extend([P / 2] * (h - 1))
            if h < max_level:
                self.queue.append(0.99)


def show(entries: Any) -> list[str]:
    """Entries with the types of their values (``repr`` tells 0, 0.0, -0.0 apart)."""
    return [repr(tuple(e)) for e in entries]


PRIMARY_KIND = st.sampled_from(["scalar", "tuple"])
IDX = st.integers(0, 10**6)
DELTA = st.integers(-40, 40)
TIES = st.integers(-12, 12)


class SkipListMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.sl = SkipList()
        self.ref = ListIndex()
        self.coin = ScriptedCoin(0)
        self.max_level = MAX_LEVEL
        self.kind = "scalar"
        self.members: dict[Any, tuple[Any, Any]] = {}  # member -> key in ref
        self.next_member = 0

    # -- set-up ---------------------------------------------------------

    @initialize(
        max_level=st.sampled_from([1, 2, 3, 4, MAX_LEVEL]),
        kind=PRIMARY_KIND,
        oldest_last=st.sampled_from([None, False, True]),
        seed=st.integers(0, 2**16),
    )
    def setup(self, max_level: int, kind: str, oldest_last: bool | None, seed: int) -> None:
        self.max_level = max_level
        self.kind = kind
        self.coin = ScriptedCoin(seed)
        self.sl = SkipList(self.coin, max_level=max_level)
        self.sl.oldest_last = oldest_last

    # -- strategies that depend on the machine ----------------------------

    def primary(self, data: st.DataObject) -> Any:
        scalars = st.sampled_from(SCALARS)
        if self.kind == "tuple":
            return data.draw(st.tuples(st.sampled_from([0, 0.0, -0.0, 1, BIG, INF]), scalars))
        return data.draw(scalars)

    def height(self, data: st.DataObject) -> int:
        m = self.max_level
        # Mostly short nodes (as the coin makes them), with tall and
        # max_level ones common enough to matter.
        low = min(2, m)
        return data.draw(
            st.one_of(st.just(1), st.just(1), st.just(low), st.just(m), st.integers(1, m))
        )

    def key_at(self, idx: int) -> tuple[Any, Any]:
        return self.ref.keys[idx % len(self.ref)]

    def new_member(self) -> str:
        self.next_member += 1
        return f"m{self.next_member}"

    def distance(self, primary: Any, member: Any) -> tuple[Any, int]:
        """(tie, distance from the oldest end) of ``member`` in the run of ``primary``."""
        run = [
            (t, m)
            for (p, t), m in zip(self.ref.keys, self.ref.members, strict=True)
            if p == primary
        ]
        k = [m for _, m in run].index(member)
        if self.sl.oldest_last:
            return run[k][0], len(run) - 1 - k
        return run[k][0], k

    def near(self, primary: Any, member: Any) -> bool | None:
        if self.sl.oldest_last is None:
            return None
        return self.distance(primary, member)[1] < RUN_SCAN_LIMIT

    def present(self, primary: Any, tie: Any) -> bool:
        return self.ref.count_less(primary, tie) < len(self.ref) and self.ref.keys[
            self.ref.count_less(primary, tie)
        ] == (primary, tie)

    def forget(self, primary: Any, tie: Any) -> None:
        member = self.ref.members[self.ref.position(primary, tie)]
        del self.members[member]

    # -- writes ---------------------------------------------------------

    @rule(data=st.data(), tie=TIES)
    def insert(self, data: st.DataObject, tie: int) -> None:
        primary = self.primary(data)
        self.coin.heights([self.height(data)], self.max_level)
        member = self.new_member()
        if self.present(primary, tie):
            try:
                self.sl.insert(primary, tie, member)
            except ValueError:
                return
            raise AssertionError("insert of a present key did not raise")
        got = self.sl.insert(primary, tie, member)
        assert self.coin.queue == [], "the node did not take the scripted height"
        self.ref.insert(primary, tie, member)
        self.members[member] = (primary, tie)
        assert got == self.near(primary, member)

    @rule(data=st.data(), count=st.integers(RUN_SCAN_LIMIT, RUN_SCAN_LIMIT + 6))
    def crowd(self, data: st.DataObject, count: int) -> None:
        """Pile entries onto one primary: a run deeper than RUN_SCAN_LIMIT."""
        primary = self.primary(data)
        ties = data.draw(st.lists(st.integers(-200, 200), min_size=count, max_size=count))
        for tie in ties:
            if self.present(primary, tie):
                continue
            self.coin.heights([self.height(data)], self.max_level)
            member = self.new_member()
            got = self.sl.insert(primary, tie, member)
            self.ref.insert(primary, tie, member)
            self.members[member] = (primary, tie)
            assert got == self.near(primary, member)

    @precondition(lambda self: len(self.ref) > 0)
    @rule(idx=IDX, data=st.data())
    def write_clash(self, idx: int, data: st.DataObject) -> None:
        """Insert a present key, move an absent one or an absent member:
        each raises and changes nothing."""
        primary, tie = self.key_at(idx)
        calls = [
            (ValueError, lambda: self.sl.insert(primary, tie, "nobody")),
            (KeyError, lambda: self.sl.move(primary, tie - 0.5, primary, tie + 0.5)),
            (KeyError, lambda: self.sl.move_member(primary, "nobody", primary, tie + 0.5)),
        ]
        error, call = data.draw(st.sampled_from(calls))
        try:
            call()
        except error:
            return
        raise AssertionError(f"expected {error.__name__}")

    @precondition(lambda self: len(self.ref) > 0)
    @rule(idx=IDX)
    def remove(self, idx: int) -> None:
        primary, tie = self.key_at(idx)
        self.forget(primary, tie)
        self.sl.remove(primary, tie)
        self.ref.remove(primary, tie)

    @precondition(lambda self: len(self.ref) > 0)
    @rule(end=st.sampled_from([0, -1]))
    def remove_end(self, end: int) -> None:
        """Remove the first or the last node (the tail and backward links)."""
        primary, tie = self.ref.keys[end]
        self.forget(primary, tie)
        self.sl.remove(primary, tie)
        self.ref.remove(primary, tie)

    @precondition(lambda self: len(self.ref) > 0)
    @rule()
    def remove_tallest(self) -> None:
        """Remove the first node of the top level: the level may shrink."""
        x = self.sl.header[4 + 2 * (self.sl.level - 1)]
        primary, tie = x[0], x[1]
        self.forget(primary, tie)
        self.sl.remove(primary, tie)
        self.ref.remove(primary, tie)

    @rule(data=st.data(), tie=TIES)
    def remove_absent(self, data: st.DataObject, tie: int) -> None:
        primary = self.primary(data)
        if self.present(primary, tie):
            return
        try:
            self.sl.remove(primary, tie)
        except KeyError:
            return
        raise AssertionError("remove of an absent key did not raise")

    def _move(
        self, primary: Any, tie: Any, new_primary: Any, new_tie: Any, by_member: bool
    ) -> None:
        member = self.ref.members[self.ref.position(primary, tie)]
        if self.present(new_primary, new_tie) and (new_primary, new_tie) != (primary, tie):
            try:
                if by_member:
                    self.sl.move_member(primary, member, new_primary, new_tie)
                else:
                    self.sl.move(primary, tie, new_primary, new_tie)
            except ValueError:
                return
            raise AssertionError("move onto a present key did not raise")
        if by_member:
            got = self.sl.move_member(primary, member, new_primary, new_tie)
        else:
            got = self.sl.move(primary, tie, new_primary, new_tie)
        self.ref.move(primary, tie, new_primary, new_tie)
        self.members[member] = (new_primary, new_tie)
        assert got == self.near(new_primary, member)

    @precondition(lambda self: len(self.ref) > 0)
    @rule(data=st.data(), idx=IDX, tie=TIES, by_member=st.booleans())
    def move_anywhere(self, data: st.DataObject, idx: int, tie: int, by_member: bool) -> None:
        primary, old_tie = self.key_at(idx)
        self._move(primary, old_tie, self.primary(data), tie, by_member)

    @precondition(lambda self: len(self.ref) > 0)
    @rule(idx=IDX, to=IDX, side=st.sampled_from([-1, 0, 1]), by_member=st.booleans())
    def move_next_to(self, idx: int, to: int, side: int, by_member: bool) -> None:
        """Move onto a neighbour's key, or just past it: in place, clash, relink."""
        primary, tie = self.key_at(idx)
        p2, t2 = self.key_at(to)
        self._move(primary, tie, p2, t2 + side, by_member)

    @precondition(lambda self: len(self.ref) > 1)
    @rule(
        idx=IDX,
        steps=st.integers(-6, 6).filter(bool),
        side=st.sampled_from([-1, 1]),
        by_member=st.booleans(),
    )
    def move_by(self, idx: int, steps: int, side: int, by_member: bool) -> None:
        """Move a few positions back or ahead (the finger search of a move
        ahead starts some levels at the old update[i])."""
        at = idx % len(self.ref)
        primary, tie = self.ref.keys[at]
        p2, t2 = self.ref.keys[max(0, min(len(self.ref) - 1, at + steps))]
        self._move(primary, tie, p2, t2 + side, by_member)

    @precondition(lambda self: len(self.ref) > 0)
    @rule(idx=IDX, step=st.integers(-3, 3), by_member=st.booleans())
    def move_tie(self, idx: int, step: int, by_member: bool) -> None:
        """Keep the primary, shift the tie: moves within a run."""
        primary, tie = self.key_at(idx)
        self._move(primary, tie, primary, tie + step, by_member)

    @precondition(lambda self: len(self.ref) > 0)
    @rule(data=st.data(), tie=TIES, by_member=st.booleans())
    def move_tallest(self, data: st.DataObject, tie: int, by_member: bool) -> None:
        """Move the first node of the top level."""
        x = self.sl.header[4 + 2 * (self.sl.level - 1)]
        self._move(x[0], x[1], self.primary(data), tie, by_member)

    @rule()
    def clear(self) -> None:
        self.sl.clear()
        self.ref.clear()
        self.members.clear()

    @rule(data=st.data(), n=st.integers(0, 30))
    def build(self, data: st.DataObject, n: int) -> None:
        ties = data.draw(st.lists(st.integers(-40, 40), min_size=n, max_size=n))
        entries: dict[tuple[Any, Any], str] = {}
        for tie in ties:
            primary = self.primary(data)
            if (primary, tie) not in entries:  # equal keys (0 and 0.0) collapse
                entries[(primary, tie)] = self.new_member()
        rows = sorted(((p, t, m) for (p, t), m in entries.items()), key=lambda e: (e[0], e[1]))
        self.coin.heights([self.height(data) for _ in rows], self.max_level, bulk=True)
        self.sl.build(rows)
        assert self.coin.queue == [], "the nodes did not take the scripted heights"
        self.ref.build(rows)
        self.members = {m: (p, t) for p, t, m in rows}

    @rule(n=st.integers(0, 5))
    def build_fails(self, n: int) -> None:
        """A bulk load stopped by a row that is not a triple leaves the list empty."""
        rows: list[tuple[Any, ...]] = [(k, 0, self.new_member()) for k in range(n)]
        rows.append((n, 0))
        try:
            self.sl.build(rows)
        except ValueError:
            self.ref.clear()
            self.members.clear()
            return
        raise AssertionError("build of a ragged row did not raise")

    # -- reads ----------------------------------------------------------

    @precondition(lambda self: len(self.ref) > 0)
    @rule(idx=IDX, delta=DELTA, width=st.integers(0, 6), reverse=st.booleans())
    def position_then_near(self, idx: int, delta: int, width: int, reverse: bool) -> None:
        """Rank a key (setting the finger), then read around it."""
        primary, tie = self.key_at(idx)
        pos = self.sl.position(primary, tie)
        assert pos == self.ref.position(primary, tie)
        self._read_near(pos + delta, width, reverse)

    @precondition(lambda self: len(self.ref) > 0)
    @rule(idx=IDX, delta=DELTA, width=st.integers(0, 6), reverse=st.booleans())
    def position_of_then_near(self, idx: int, delta: int, width: int, reverse: bool) -> None:
        primary, tie = self.key_at(idx)
        member = self.ref.members[self.ref.position(primary, tie)]
        pos = self.sl.position_of(primary, member)
        assert pos == self.ref.position(primary, tie)
        self._read_near(pos + delta, width, reverse)

    def _read_near(self, at: int, width: int, reverse: bool) -> None:
        n = len(self.ref)
        at = max(0, min(n - 1, at))
        assert show([self.sl.entry(at)]) == show([self.ref.entry(at)])
        start, stop = max(0, at - width), min(n, at + width + 1)
        assert show(self.sl.iter_range(start, stop, reverse=reverse)) == show(
            self.ref.iter_range(start, stop, reverse=reverse)
        )

    @rule(delta=DELTA, width=st.integers(0, 6), reverse=st.booleans())
    def read_near_finger(self, delta: int, width: int, reverse: bool) -> None:
        """Read near wherever the finger was left (maybe stale)."""
        if not len(self.ref):
            assert list(self.sl.iter_range(0, 0)) == []
            return
        finger = self.sl._finger
        at = (finger[1] - 1 if finger is not None else 0) + delta
        self._read_near(at, width, reverse)

    @rule(data=st.data(), tie=TIES, inclusive=st.booleans())
    def counts(self, data: st.DataObject, tie: int, inclusive: bool) -> None:
        primary = self.primary(data)
        assert self.sl.count_less(primary, tie) == self.ref.count_less(primary, tie)
        assert self.sl.count_primary(primary, inclusive=inclusive) == self.ref.count_primary(
            primary, inclusive=inclusive
        )

    @precondition(lambda self: len(self.ref) > 0)
    @rule(idx=IDX)
    def by_member(self, idx: int) -> None:
        primary, tie = self.key_at(idx)
        member = self.ref.members[self.ref.position(primary, tie)]
        assert self.sl.tie_of(primary, member) == self.distance(primary, member)
        assert self.sl.position_of(primary, member) == self.ref.position(primary, tie)

    @rule(data=st.data())
    def by_member_absent(self, data: st.DataObject) -> None:
        primary = self.primary(data)
        for call in (self.sl.tie_of, self.sl.position_of):
            try:
                call(primary, "nobody")
            except KeyError:
                continue
            raise AssertionError(f"{call.__name__} of an absent member did not raise")

    @rule(a=IDX, b=IDX, reverse=st.booleans())
    def iter_range(self, a: int, b: int, reverse: bool) -> None:
        n = len(self.ref)
        start, stop = sorted((a % (n + 1), b % (n + 1)))
        assert show(self.sl.iter_range(start, stop, reverse=reverse)) == show(
            self.ref.iter_range(start, stop, reverse=reverse)
        )

    @rule()
    def columns(self) -> None:
        primaries, ties, members = self.sl.columns()
        assert show(zip(primaries, ties, members, strict=True)) == show(
            self.ref.iter_range(0, len(self.ref))
        )

    # -- after every step -------------------------------------------------

    @invariant()
    def same(self) -> None:
        self.sl._check()
        assert len(self.sl) == len(self.ref)
        assert show(self.sl) == show(self.ref.iter_range(0, len(self.ref)))
        backward = []
        x = self.sl.tail
        while x is not None:
            backward.append((x[0], x[1], x[2]))
            x = x[3]
        assert show(backward[::-1]) == show(self.ref.iter_range(0, len(self.ref)))
        assert self.members == dict(zip(self.ref.members, self.ref.keys, strict=True))


TestSkipListMachine = SkipListMachine.TestCase
TestSkipListMachine.settings = settings(
    max_examples=100,
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
