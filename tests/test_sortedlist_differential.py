"""SortedListIndex against the plain-list ListIndex, on the rarely reached paths.

A Hypothesis state machine drives a ``SortedListIndex`` with a tiny load (4
or 5, so blocks split and merge every few writes) and ``tests/listindex.py``
with the same operations, calls ``_check()`` after every step and compares
every answer, with value types (5 and 5.0, 0.0 and -0.0 differ here):

* column kinds change under it: an int column receives a float, an int
  beyond int64, -0.0, an infinity; a column falls back to lists and chooses
  again after ``clear()``, after being emptied, or on ``build`` /
  ``build_columns`` (from lists or from the ``array`` columns of
  :meth:`~SortedListIndex.columns`);
* runs of equal primaries deeper than ``RUN_SCAN_LIMIT`` that cross block
  boundaries, read by ``tie_of``, ``position_of`` and ``move_member`` from
  either end, and counted at their edges by ``count_less`` and
  ``count_primary``;
* ``columns_between`` and ``iter_range`` in both directions, with ends at
  block edges;
* enough blocks (a bulk load) that far moves make the cached offsets stale
  and bursts of look-ups rebuild them, next to short moves that patch them.

``tests/test_sortedlist.py`` has the general machines (one value kind per
run); this one mixes the kinds inside a run.
"""

from __future__ import annotations

import math
from array import array
from itertools import accumulate
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)
from listindex import ListIndex

from rankengine.index.protocol import RUN_SCAN_LIMIT
from rankengine.index.sortedlist import SortedListIndex

BIG = 2**63  # one past int64
#: Scalar primaries: a few small ints (ties are common), the int64 edges and
#: beyond, floats equal to ints, signed zeros, infinities.
SCALARS = st.one_of(
    st.integers(-2, 3),
    st.integers(-2, 3),
    st.sampled_from([BIG - 1, -BIG, BIG, -BIG - 1, 2**70]),
    st.sampled_from([0.0, -0.0, 1.0, 2.5, -1.5, math.inf, -math.inf, 9.3e18]),
)
INT_SCALARS = st.one_of(st.integers(-2, 3), st.integers(-2, 3), st.integers(-2, 3), SCALARS)
TUPLES = st.tuples(st.integers(0, 2), st.sampled_from([0, 1, 0.0, -0.0, 1.5, BIG, math.inf]))
#: Clock ties, now and then one that does not fit an int64 column.
INT_TIES = st.one_of(
    st.integers(-12, 12), st.integers(-12, 12), st.sampled_from([BIG, -BIG - 1, 0.5])
)
STR_TIES = st.integers(0, 40).map(lambda k: f"t{k:02d}")


def exact(value: Any) -> Any:
    """A value with its type and sign, for comparisons that tell 5 from 5.0
    and 0.0 from -0.0."""
    if isinstance(value, (tuple, list)):
        return tuple(exact(v) for v in value)
    if isinstance(value, float):
        return ("f", value, math.copysign(1.0, value))
    if isinstance(value, int):
        return ("i", value)
    return value


class Differential(RuleBasedStateMachine):
    """SortedListIndex (tiny load) and ListIndex, side by side."""

    def __init__(self) -> None:
        super().__init__()
        self.index = SortedListIndex(load=4)
        self.ref = ListIndex()
        self.primaries: st.SearchStrategy[Any] = SCALARS
        self.tie_values: st.SearchStrategy[Any] = INT_TIES
        self.tuples = False
        self.str_ties = False
        self.counter = 0

    @initialize(
        load=st.sampled_from([4, 5, 5, 12]),
        oldest_last=st.sampled_from([None, False, True]),
        kind=st.sampled_from(["int", "mixed", "tuple"]),
        str_ties=st.booleans(),
    )
    def setup(self, load: int, oldest_last: bool | None, kind: str, str_ties: bool) -> None:
        self.index = SortedListIndex(load=load)
        self.index.oldest_last = oldest_last
        self.primaries = {"int": INT_SCALARS, "mixed": SCALARS, "tuple": TUPLES}[kind]
        self.tie_values = STR_TIES if str_ties else INT_TIES
        self.tuples = kind == "tuple"
        self.str_ties = str_ties

    # -- helpers ------------------------------------------------------------

    def _member(self) -> str:
        self.counter += 1
        return f"m{self.counter}"

    def _rows(self) -> list[tuple[Any, Any, Any]]:
        return list(self.ref.iter_range(0, len(self.ref)))

    def _has(self, primary: Any, tie: Any) -> bool:
        i = self.ref.count_less(primary, tie)
        return i < len(self.ref) and self.ref.keys[i] == (primary, tie)

    def _distance(self, primary: Any, member: Any) -> int:
        """Entries of the run of ``primary`` between ``member`` and the
        run's oldest end (the first entry unless ``oldest_last``)."""
        run = [m for p, _, m in self._rows() if p == primary]
        k = run.index(member)
        return len(run) - 1 - k if self.index.oldest_last else k

    def _check_near(self, primary: Any, member: Any, near: bool | None) -> None:
        if self.index.oldest_last is None:
            assert near is None
            return
        assert near is True or near is False
        distance = self._distance(primary, member)
        if near:  # False may be conservative; True must be right
            assert distance < RUN_SCAN_LIMIT
        # Exact when the slot RUN_SCAN_LIMIT entries towards the oldest end
        # lies in the entry's block (it was in view before any split or merge).
        i, b, _ = self.index._find(primary, member)
        c = b + RUN_SCAN_LIMIT if self.index.oldest_last else b - RUN_SCAN_LIMIT
        if 0 <= c < len(self.index._lists[i]):
            assert near == (distance < RUN_SCAN_LIMIT)

    def _edges(self) -> list[int]:
        """Positions where the index's blocks start (and its length)."""
        return list(accumulate(map(len, self.index._lists), initial=0))

    def _position(self, data: st.DataObject, *, inclusive_end: bool) -> int:
        """A position, often a block edge or next to one."""
        n = len(self.ref) + (1 if inclusive_end else 0)
        edges = [e + d for e in self._edges() for d in (-1, 0, 1) if 0 <= e + d < n]
        if edges and data.draw(st.booleans()):
            return data.draw(st.sampled_from(edges))
        return data.draw(st.integers(0, n - 1))

    def _near_key(self, data: st.DataObject) -> tuple[Any, Any]:
        """A key, often one already present or beside one (a run's edge)."""
        rows = self._rows()
        if rows and data.draw(st.booleans()):
            p, t, _ = data.draw(st.sampled_from(rows))
            if isinstance(t, int) and data.draw(st.booleans()):
                t += data.draw(st.sampled_from([-1, 1]))
            return p, t
        return data.draw(self.primaries), data.draw(self.tie_values)

    def _insert(self, primary: Any, tie: Any) -> None:
        if self._has(primary, tie):
            with pytest.raises(KeyError):
                self.index.insert(primary, tie, "dup")
            return
        member = self._member()
        near = self.index.insert(primary, tie, member)
        self.ref.insert(primary, tie, member)
        self._check_near(primary, member, near)

    def _move_checked(self, p: Any, t: Any, m: Any, new: tuple[Any, Any], *, by: str) -> None:
        if new == (p, t):
            return  # outside the contract (the new key must be absent)

        def move() -> bool | None:
            if by == "key":
                return self.index.move(p, t, *new)
            return self.index.move_member(p, m, *new)

        if self._has(*new):
            with pytest.raises(KeyError):
                move()
            return
        near = move()
        self.ref.move(p, t, *new)
        self._check_near(new[0], m, near)

    # -- writes -------------------------------------------------------------

    @rule(data=st.data())
    def insert(self, data: st.DataObject) -> None:
        self._insert(data.draw(self.primaries), data.draw(self.tie_values))

    @rule(data=st.data(), count=st.integers(2, 24), descending=st.booleans())
    def insert_run(self, data: st.DataObject, count: int, descending: bool) -> None:
        """One primary, many ties: a run deeper than RUN_SCAN_LIMIT across
        blocks, filled from either end."""
        primary = data.draw(self.primaries)
        base = data.draw(self.tie_values)
        for k in range(count):
            if isinstance(base, str):
                tie: Any = f"{base}{k:02d}" if not descending else f"{base}{99 - k:02d}"
            else:
                tie = base + (-k if descending else k)
            self._insert(primary, tie)

    @precondition(lambda self: len(self.ref))
    @rule(data=st.data())
    def remove(self, data: st.DataObject) -> None:
        p, t, _ = data.draw(st.sampled_from(self._rows()))
        self.index.remove(p, t)
        self.ref.remove(p, t)

    @precondition(lambda self: len(self.ref))
    @rule(data=st.data(), count=st.integers(1, 12))
    def remove_block(self, data: st.DataObject, count: int) -> None:
        """Remove a stretch of neighbours: blocks empty out and merge."""
        start = self._position(data, inclusive_end=False)
        for p, t, _ in self._rows()[start : start + count]:
            self.index.remove(p, t)
            self.ref.remove(p, t)
            self.index._check()

    @precondition(lambda self: len(self.ref))
    @rule(data=st.data(), by=st.sampled_from(["key", "member"]))
    def move_far(self, data: st.DataObject, by: str) -> None:
        p, t, m = data.draw(st.sampled_from(self._rows()))
        self._move_checked(p, t, m, self._near_key(data), by=by)

    @precondition(lambda self: len(self.ref))
    @rule(data=st.data(), by=st.sampled_from(["key", "member"]))
    def move_near(self, data: st.DataObject, by: str) -> None:
        """To a neighbour's primary (within or just across a block), with a
        tie before, inside or after its run."""
        rows = self._rows()
        i = self._position(data, inclusive_end=False)
        j = min(len(rows) - 1, max(0, i + data.draw(st.integers(-3, 3))))
        p, t, m = rows[i]
        tie = data.draw(st.one_of(self.tie_values, st.just(rows[j][1])))
        if isinstance(tie, int) and not isinstance(rows[j][1], str):
            tie += data.draw(st.sampled_from([-1, 0, 1]))
        self._move_checked(p, t, m, (rows[j][0], tie), by=by)

    @precondition(lambda self: len(self.ref))
    @rule(data=st.data())
    def move_into_run_end(self, data: st.DataObject) -> None:
        """Move an entry to the newest end of an existing run (a score
        change with a fresh clock), from anywhere."""
        rows = self._rows()
        p, t, m = data.draw(st.sampled_from(rows))
        q = data.draw(st.sampled_from(rows))[0]
        run = [tt for pp, tt, _ in rows if pp == q]
        if not all(isinstance(x, int) for x in run):
            return
        newest = min(run) - 1 if self.index.oldest_last else max(run) + 1
        self._move_checked(p, t, m, (q, newest), by="member")

    @precondition(lambda self: len(self.ref) > 1)
    @rule(data=st.data(), up=st.booleans(), by=st.sampled_from(["key", "member"]))
    def move_across(self, data: st.DataObject, up: bool, by: str) -> None:
        """From one end to the other, past many blocks: with exact offsets
        (after a few look-ups) the far move makes them stale instead of
        patching them."""
        rows = self._rows()
        for k in range(data.draw(st.integers(0, 10))):
            p, t, _ = rows[k * (len(rows) - 1) // 10]
            assert self.index.position(p, t) == self.ref.position(p, t)
        p, t, m = rows[0] if up else rows[-1]
        q, u, _ = rows[-1] if up else rows[0]
        if isinstance(u, int):
            u += 1 if up else -1
        self._move_checked(p, t, m, (q, u), by=by)

    @rule()
    def clear(self) -> None:
        self.index.clear()
        self.ref.clear()

    @rule(data=st.data(), how=st.sampled_from(["triples", "lists", "columns", "tuple-gen", "own"]))
    def rebuild(self, data: st.DataObject, how: str) -> None:
        """Bulk-load the current contents (or a subset) again."""
        rows = self._rows()
        if rows and data.draw(st.booleans()):
            lo = data.draw(st.integers(0, len(rows)))
            rows = rows[lo:]
        if how == "triples":
            self.index.build(rows)
        elif how == "tuple-gen":
            self.index.build(iter(rows))
        elif how == "own":
            # Its own entries, read lazily while it rebuilds.
            self.index.build(self.index.iter_range(len(self.ref) - len(rows), len(self.ref)))
        elif how == "lists":
            self.index.build_columns(
                [p for p, _, _ in rows], [t for _, t, _ in rows], [m for _, _, m in rows]
            )
        else:
            # The index's own columns (arrays while typed), cut to the rows.
            ps, ts, ms = self.index.columns()
            cut = len(ps) - len(rows)
            self.index.build_columns(ps[cut:], ts[cut:], ms[cut:])
        self.ref.build(rows)

    @rule(
        n=st.integers(20, 90), step=st.sampled_from([1, 2]), kind=st.sampled_from(["q", "d", "i"])
    )
    def bulk(self, n: int, step: int, kind: str) -> None:
        """Many blocks at once (offsets become worth caching), from array
        columns where the values allow (an ``array('i')`` is not a column
        kind: it is read as ints); later writes then mix other kinds in."""
        values = [k // step for k in range(n)]
        ps: Any = array(kind, values)
        if self.tuples:
            ps = [(2 * v // n, v) for v in ps]
        ts: Any = array("q", [k % step for k in range(n)])
        if self.str_ties:
            ts = [f"t{k % step:02d}" for k in range(n)]
        ms = [self._member() for _ in range(n)]
        self.index.build_columns(ps, ts, ms)
        self.ref.build(zip(list(ps), list(ts), ms, strict=True))

    @rule(oldest_last=st.sampled_from([None, False, True]))
    def set_oldest_last(self, oldest_last: bool | None) -> None:
        self.index.oldest_last = oldest_last

    # -- reads --------------------------------------------------------------

    @precondition(lambda self: len(self.ref))
    @rule(data=st.data())
    def find_by_member(self, data: st.DataObject) -> None:
        p, t, m = data.draw(st.sampled_from(self._rows()))
        tie, distance = self.index.tie_of(p, m)
        assert exact(tie) == exact(t)
        assert distance == self._distance(p, m)
        assert self.index.position_of(p, m) == self.ref.position(p, t)
        # The same primary as another type that compares equal (1 and 1.0).
        if isinstance(p, (int, float)) and abs(p) < 2**53:
            twin: Any = float(p) if isinstance(p, int) else int(p) if p.is_integer() else p
            assert self.index.tie_of(twin, m)[1] == distance
            assert self.index.position_of(twin, m) == self.ref.position(p, t)
        with pytest.raises(KeyError):
            self.index.tie_of(p, "nobody")
        with pytest.raises(KeyError):
            self.index.position_of(data.draw(self.primaries), "nobody")

    @rule(data=st.data(), inclusive=st.booleans())
    def counts(self, data: st.DataObject, inclusive: bool) -> None:
        p, t = self._near_key(data)
        assert self.index.count_less(p, t) == self.ref.count_less(p, t)
        got = self.index.count_primary(p, inclusive=inclusive)
        assert got == self.ref.count_primary(p, inclusive=inclusive)

    @precondition(lambda self: len(self.ref))
    @rule(data=st.data(), burst=st.integers(1, 20))
    def lookups(self, data: st.DataObject, burst: int) -> None:
        """Bursts of positional reads: enough tree walks rebuild stale offsets."""
        rows = self._rows()
        for _ in range(burst):
            k = self._position(data, inclusive_end=False)
            assert exact(self.index.entry(k)) == exact(rows[k])
            p, t, _ = rows[k]
            assert self.index.position(p, t) == k
            self.index._check()

    @rule(data=st.data(), reverse=st.booleans(), columnar=st.booleans())
    def ranges(self, data: st.DataObject, reverse: bool, columnar: bool) -> None:
        start = self._position(data, inclusive_end=True)
        stop = data.draw(st.sampled_from([e for e in self._edges() if e >= start] + [start]))
        if data.draw(st.booleans()):
            stop = data.draw(st.integers(start, len(self.ref)))
        want = self._rows()[start:stop]
        if reverse:
            want.reverse()
        if columnar:
            ps, ms = self.index.columns_between(start, stop, reverse=reverse)
            assert type(ps) is list
            assert type(ms) is list
            assert exact(ps) == exact([p for p, _, _ in want])
            assert ms == [m for _, _, m in want]
        else:
            got = list(self.index.iter_range(start, stop, reverse=reverse))
            assert exact(got) == exact(want)

    @invariant()
    def same(self) -> None:
        self.index._check()
        assert len(self.index) == len(self.ref)
        ps, ts, ms = self.index.columns()
        assert exact(list(ps)) == exact([p for p, _ in self.ref.keys])
        assert exact(list(ts)) == exact([t for _, t in self.ref.keys])
        assert ms == self.ref.members


TestDifferential = Differential.TestCase
TestDifferential.settings = settings(
    max_examples=60,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
