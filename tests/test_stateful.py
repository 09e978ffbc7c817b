"""Random operation sequences on every backend, checked against the model.

* A Hypothesis state machine per backend drives random writes and reads on a
  board and on ``tests/model.py`` side by side; each run draws the order
  (``desc``, ``asc`` or a composite), the tie-break and the default rank
  style, and a member type.  Scores come from a small set so that ties are
  common, with floats, infinities and ints beyond 2**53 mixed in.  A crowd
  of extra members piles onto one score (one by one or by ``set_many``) and
  leaves it by increments, so runs of equal scores grow deeper than
  ``RUN_SCAN_LIMIT`` and the tie map keeps some members.  After every step
  the board passes ``_check()``, matches the model exactly (items with
  score types, metadata, logical clock, backward reads), and every member
  missing from its tie map lies near the oldest end of its run.
* The Redis stress properties: after thousands of random adds, removals (20%)
  and re-scores, ``rank(at(i)) == i`` for every ``i``, and reading forward
  equals reading backward reversed (``at(-i)`` and a ``pop_worst`` sequence).
"""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
from conftest import BACKENDS, board_factory, missing_reason, untied_far_members
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from model import Model

INF = math.inf
BIG = 2**60

SCALARS = st.sampled_from([0, 1, 1, 2, 2, 3, 5, -1, 0.5, 2.0, INF, -INF, BIG, BIG + 1])
DELTAS = st.sampled_from([1, 1, 2, -1, 0, 0.5, INF, -INF, BIG])
PAIRS = st.tuples(SCALARS, SCALARS)  # a composite score, or its first column on a scalar board
DELTA_PAIRS = st.tuples(DELTAS, DELTAS)
BOUNDS = st.one_of(st.none(), PAIRS)
IDX = st.integers(0, 7)
STYLES = st.sampled_from([None, "unique", "dense", "competition"])
WHENS = st.sampled_from([None, None, "new", "present", "better", "worse"])
METAS = st.sampled_from([None, {"n": 1}, {"n": 2, "tags": ["a", "b"]}, {}])
RANKS = st.integers(-9, 9).filter(bool)
FLAGS = st.booleans()

ORDERS = ["desc", "asc", ("desc", "asc"), ("asc", "desc")]
POOLS = {
    "str": ["a", "b", "c", "d", "e", "f", "g", "h"],
    "int": [0, 1, 2, 3, -4, 5, 6, 70],
    "bytes": [b"a", b"b", b"c", b"d", b"e", b"f", b"g", b"h"],
    "mixed": ["a", 1, b"c", "d", 2, b"e", "g", 3],  # only where ties never compare members
}
#: The crowd: members beyond the pool (of the pool's type), enough for runs
#: of equal scores deeper than RUN_SCAN_LIMIT (8).
CROWD = 20
CROWDS = {
    "str": [f"c{k}" for k in range(CROWD)],
    "int": [100 + k for k in range(CROWD)],
    "bytes": [b"c%d" % k for k in range(CROWD)],
    "mixed": [f"c{k}" for k in range(CROWD)],
}
KS = st.integers(0, CROWD - 1)


def norm(value: Any) -> Any:
    """Board results as plain values: entries become ``(member, score, rank, meta)``."""
    if isinstance(value, list):
        return [norm(v) for v in value]
    if hasattr(value, "member") and hasattr(value, "rank"):
        return (value.member, value.score, value.rank, value.meta)
    return value


def exact(value: Any) -> Any:
    """Scores with their types (5 and 5.0, or 2**60 and 2.0**60, differ)."""
    if isinstance(value, (list, tuple)):
        return [exact(v) for v in value]
    if isinstance(value, (int, float)):
        return (type(value).__name__, value)
    return value


class LeaderboardMachine(RuleBasedStateMachine):
    backend = "reference"

    def __init__(self) -> None:
        super().__init__()
        self.board: Any = None
        self.model: Model = Model()
        self.pool: list[Any] = []
        self.crowd: list[Any] = []
        self.composite = False

    @initialize(data=st.data())
    def setup(self, data: Any) -> None:
        order = data.draw(st.sampled_from(ORDERS), label="order")
        tie_break = data.draw(st.sampled_from(["first", "member"]), label="tie_break")
        style = data.draw(st.sampled_from(["unique", "dense", "competition"]), label="style")
        kinds = ["str", "int", "bytes"] + (["mixed"] if tie_break == "first" else [])
        kind = data.draw(st.sampled_from(kinds), label="members")
        self.pool = POOLS[kind]
        self.crowd = CROWDS[kind]
        config = {"order": order, "tie_break": tie_break, "rank_style": style}
        self.board = board_factory(self.backend)(**config)
        self.model = Model(**config)
        self.composite = isinstance(order, tuple)

    # ------------------------------------------------------------------
    # helpers
    # ------------------------------------------------------------------
    def score(self, pair: tuple[Any, Any]) -> Any:
        return pair if self.composite else pair[0]

    def member(self, i: int) -> Any:
        return self.pool[i]

    def same(self, call: Any) -> Any:
        """Run ``call`` on the model and on the board: same result or same error."""
        try:
            want = call(self.model)
        except (ValueError, KeyError, IndexError) as exc:
            with pytest.raises(type(exc)):
                call(self.board)
            return None
        got = norm(call(self.board))
        assert got == want
        return got

    # ------------------------------------------------------------------
    # writes
    # ------------------------------------------------------------------
    @rule(i=IDX, pair=PAIRS, when=WHENS, meta=METAS)
    def set(self, i: int, pair: Any, when: Any, meta: Any) -> None:
        m, s = self.member(i), self.score(pair)
        self.same(lambda x: x.set(m, s, when=when, meta=meta))

    @rule(i=IDX, pair=DELTA_PAIRS, when=WHENS)
    def incr(self, i: int, pair: Any, when: Any) -> None:
        m, d = self.member(i), self.score(pair)
        self.same(lambda x: x.incr(m, d, when=when))

    @rule(items=st.lists(st.tuples(IDX, PAIRS), max_size=8), when=WHENS)
    def set_many(self, items: list[Any], when: Any) -> None:
        pairs = [(self.member(i), self.score(p)) for i, p in items]
        self.same(lambda x: x.set_many(pairs, when=when))

    @rule(items=st.lists(st.tuples(IDX, DELTA_PAIRS), max_size=8))
    def incr_many(self, items: list[Any]) -> None:
        pairs = [(self.member(i), self.score(p)) for i, p in items]
        self.same(lambda x: x.incr_many(pairs))

    @rule(i=IDX, pair=PAIRS)
    def setitem(self, i: int, pair: Any) -> None:
        """``board[m] = s`` is ``set(m, s)`` (metadata stays)."""
        m, s = self.member(i), self.score(pair)

        def write(x: Any) -> None:  # through self.same, so a durable run logs it
            if x is self.model:
                x.set(m, s)
            else:
                x[m] = s

        self.same(write)

    @rule(i=IDX)
    def delitem(self, i: int) -> None:
        """``del board[m]`` is ``remove(m)``; an absent member is a ``KeyError``."""
        m = self.member(i)

        def delete(x: Any) -> None:
            if x is self.model:
                if not x.remove(m):
                    raise KeyError(m)
            else:
                del x[m]

        self.same(delete)

    @rule(items=st.dictionaries(IDX, PAIRS, max_size=8), when=WHENS, increment=FLAGS)
    def batch_of_a_mapping(self, items: dict[int, Any], when: Any, increment: bool) -> None:
        """``set_many``/``incr_many`` given a mapping, not pairs."""
        mapping = {self.member(i): self.score(p) for i, p in items.items()}
        if increment:
            self.same(lambda x: x.incr_many(mapping))
        else:
            self.same(lambda x: x.set_many(mapping, when=when))

    @rule(pair=PAIRS, count=st.integers(1, CROWD), bulk=FLAGS)
    def crowd_onto(self, pair: Any, count: int, bulk: bool) -> None:
        """The first ``count`` crowd members onto one score: one by one, or by
        ``set_many`` (a bulk rebuild, or the columnar load into an empty board)."""
        s = self.score(pair)
        members = self.crowd[:count]
        if bulk:
            self.same(lambda x: x.set_many([(m, s) for m in members]))
        else:
            for m in members:
                self.same(lambda x, m=m: x.set(m, s))

    @rule(pair=PAIRS, count=st.integers(1, CROWD))
    def crowd_climb(self, pair: Any, count: int) -> None:
        """The first ``count`` crowd members reach one score by increments,
        one after another (the increment fast path builds the run)."""
        below, step = ((pair[0] - 1, pair[1]), (1, 0)) if self.composite else (pair[0] - 1, 1)
        for m in self.crowd[:count]:
            self.same(lambda x, m=m: x.set(m, below))
            self.same(lambda x, m=m: x.incr(m, step))

    @rule(k=KS, pair=DELTA_PAIRS)
    def crowd_incr(self, k: int, pair: Any) -> None:
        """A crowd member leaves its run (and may join another)."""
        m, d = self.crowd[k], self.score(pair)
        self.same(lambda x: x.incr(m, d))

    @rule(k=KS, pair=PAIRS)
    def crowd_set(self, k: int, pair: Any) -> None:
        m, s = self.crowd[k], self.score(pair)
        self.same(lambda x: x.set(m, s))

    @rule(k=KS)
    def crowd_remove(self, k: int) -> None:
        m = self.crowd[k]
        self.same(lambda x: x.remove(m))

    @rule(k=KS, style=STYLES)
    def crowd_reads(self, k: int, style: Any) -> None:
        m = self.crowd[k]
        self.same(lambda x: x.rank(m, style=style))
        self.same(lambda x: x.entry(m, style=style))
        self.same(lambda x: x.around(m, 2))

    @rule(i=IDX)
    def remove(self, i: int) -> None:
        m = self.member(i)
        self.same(lambda x: x.remove(m))

    @rule(ids=st.lists(IDX, max_size=4))
    def remove_many(self, ids: list[int]) -> None:
        ms = [self.member(i) for i in ids]
        self.same(lambda x: x.remove_many(ms))

    @rule(count=st.integers(0, 3), with_meta=FLAGS, best=FLAGS)
    def pop(self, count: int, with_meta: bool, best: bool) -> None:
        if best:
            self.same(lambda x: x.pop_best(count, with_meta=with_meta))
        else:
            self.same(lambda x: x.pop_worst(count, with_meta=with_meta))

    @rule(start=RANKS, stop=RANKS)
    def remove_by_rank(self, start: int, stop: int) -> None:
        self.same(lambda x: x.remove_by_rank(start, stop))

    @rule(low=BOUNDS, high=BOUNDS, low_inc=FLAGS, high_inc=FLAGS)
    def remove_by_score(self, low: Any, high: Any, low_inc: bool, high_inc: bool) -> None:
        lo = None if low is None else self.score(low)
        hi = None if high is None else self.score(high)
        self.same(
            lambda x: x.remove_by_score(lo, hi, min_inclusive=low_inc, max_inclusive=high_inc)
        )

    @rule(n=st.integers(0, 8))
    def keep_top(self, n: int) -> None:
        self.same(lambda x: x.keep_top(n))

    @rule(i=IDX, meta=METAS)
    def set_meta(self, i: int, meta: Any) -> None:
        m = self.member(i)
        self.same(lambda x: x.set_meta(m, meta))

    @rule()
    def clear(self) -> None:
        self.same(lambda x: x.clear())

    # ------------------------------------------------------------------
    # reads
    # ------------------------------------------------------------------
    @rule(i=IDX, style=STYLES, with_meta=FLAGS)
    def point_reads(self, i: int, style: Any, with_meta: bool) -> None:
        m = self.member(i)
        self.same(lambda x: x.rank(m, style=style))
        self.same(lambda x: x.entry(m, style=style, with_meta=with_meta))
        self.same(lambda x: x.score(m))
        self.same(lambda x: m in x)

    @rule(ids=st.lists(IDX, max_size=4), style=STYLES, with_meta=FLAGS)
    def entries(self, ids: list[int], style: Any, with_meta: bool) -> None:
        ms = [self.member(i) for i in ids]
        self.same(lambda x: x.entries(ms, style=style, with_meta=with_meta))

    @rule(rank=st.integers(-10, 10), style=STYLES, with_meta=FLAGS)
    def at(self, rank: int, style: Any, with_meta: bool) -> None:
        self.same(lambda x: x.at(rank, style=style, with_meta=with_meta))

    @rule(k=st.integers(0, 9), style=STYLES, with_meta=FLAGS)
    def top(self, k: int, style: Any, with_meta: bool) -> None:
        self.same(lambda x: x.top(k, style=style, with_meta=with_meta))

    @rule(start=RANKS, stop=RANKS, style=STYLES)
    def by_rank(self, start: int, stop: int, style: Any) -> None:
        self.same(lambda x: x.by_rank(start, stop, style=style))

    @rule(number=st.integers(-1, 5), size=st.integers(1, 4), style=STYLES, with_meta=FLAGS)
    def page(self, number: int, size: int, style: Any, with_meta: bool) -> None:
        self.same(lambda x: x.page(number, size, style=style, with_meta=with_meta))
        self.same(lambda x: x.pages(size))

    @rule(
        i=IDX,
        above=st.integers(0, 4),
        below=st.integers(0, 4),
        fill=FLAGS,
        style=STYLES,
        with_meta=FLAGS,
    )
    def around(
        self, *, i: int, above: int, below: int, fill: bool, style: Any, with_meta: bool
    ) -> None:
        m = self.member(i)
        self.same(lambda x: x.around(m, above, below, fill=fill, style=style, with_meta=with_meta))

    @rule(
        low=BOUNDS,
        high=BOUNDS,
        low_inc=FLAGS,
        high_inc=FLAGS,
        offset=st.integers(0, 4),
        limit=st.one_of(st.none(), st.integers(0, 5)),
        style=STYLES,
    )
    def by_score(
        self,
        *,
        low: Any,
        high: Any,
        low_inc: bool,
        high_inc: bool,
        offset: int,
        limit: Any,
        style: Any,
    ) -> None:
        lo = None if low is None else self.score(low)
        hi = None if high is None else self.score(high)
        flags = {"min_inclusive": low_inc, "max_inclusive": high_inc}
        self.same(lambda x: x.by_score(lo, hi, offset=offset, limit=limit, style=style, **flags))
        self.same(lambda x: x.count(lo, hi, **flags))

    @rule(i=IDX, method=st.sampled_from(["below", "at_or_below", "midpoint"]))
    def percentile(self, i: int, method: str) -> None:
        m = self.member(i)
        self.same(lambda x: x.percentile(m, method=method))

    @rule(p=st.sampled_from([0, 10, 25, 33.3, 50, 75, 90, 99.9, 100]))
    def score_at_percentile(self, p: float) -> None:
        self.same(lambda x: x.score_at_percentile(p))

    @rule(pair=PAIRS, style=STYLES)
    def rank_for_score(self, pair: Any, style: Any) -> None:
        s = self.score(pair)
        self.same(lambda x: x.rank_for_score(s, style=style))

    # ------------------------------------------------------------------
    # after every step
    # ------------------------------------------------------------------
    @invariant()
    def matches_model(self) -> None:
        board, model = self.board, self.model
        if board is None:
            return
        board._check()
        items = board.items()
        assert exact(items) == exact(model.items())
        assert list(board) == [m for m, _ in items]
        assert len(board) == len(model)
        assert board.clock == model.clock
        assert {m: board.meta(m) for m, _ in items} == {m: model.meta(m) for m, _ in items}
        # backward reads, reversed, are the forward order
        n = len(items)
        backward = [(e.member, e.score) for e in (board.at(-i) for i in range(1, n + 1))]
        assert backward[::-1] == items
        assert untied_far_members(board) == []


STATEFUL_SETTINGS = settings(
    max_examples=50,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def _machine_test(name: str) -> Any:
    machine = type(f"LeaderboardMachine_{name}", (LeaderboardMachine,), {"backend": name})
    test = machine.TestCase
    test.settings = STATEFUL_SETTINGS
    reason = missing_reason(name)
    if reason is not None:
        test = pytest.mark.skip(reason=reason)(test)
    return test


for _name in BACKENDS:
    globals()[f"TestStateful_{_name}"] = _machine_test(_name)


# ----------------------------------------------------------------------
# Redis stress properties
# ----------------------------------------------------------------------
def _churn(board: Any, model: Model, rng: random.Random, steps: int, names: int) -> None:
    """Random adds, re-scores (incl. increments) and removals (20%), many ties."""
    for step in range(steps):
        member = f"m{rng.randrange(names)}"
        roll = rng.random()
        if roll < 0.2:
            assert board.remove(member) == model.remove(member)
        elif roll < 0.3:
            delta = rng.choice([1, -1, 2, 0.5])
            assert board.incr(member, delta) == model.incr(member, delta)
        else:
            score = rng.choice([rng.randint(0, 20), rng.randint(0, 20), rng.uniform(0, 20)])
            assert board.set(member, score) == model.set(member, score)
        if step % 1000 == 999:
            board._check()


@pytest.mark.parametrize(("order", "tie_break"), [("desc", "first"), ("asc", "member")])
def test_rank_of_at_is_i_after_random_churn(make_board: Any, order: str, tie_break: str) -> None:
    rng = random.Random(f"{order}-{tie_break}")
    board = make_board(order=order, tie_break=tie_break)
    model = Model(order=order, tie_break=tie_break)
    # a bulk load first (a sorted build of the index), then churn on top of it
    start = [(f"m{i}", rng.randint(0, 20)) for i in range(2500)]
    assert board.set_many(start) == model.set_many(start)
    _churn(board, model, rng, steps=3000, names=3000)
    board._check()
    n = len(board)
    assert n > 2000  # the churn left a big board
    assert board.items() == model.items()
    for i in range(1, n + 1):
        entry = board.at(i)
        assert entry.rank == i
        assert board.rank(entry.member) == i


@pytest.mark.parametrize(("order", "tie_break"), [("desc", "member"), ("asc", "first")])
def test_forward_order_equals_reversed_backward_order(
    make_board: Any, order: str, tie_break: str
) -> None:
    rng = random.Random(f"backward-{order}-{tie_break}")
    board = make_board(order=order, tie_break=tie_break)
    model = Model(order=order, tie_break=tie_break)
    _churn(board, model, rng, steps=2500, names=1200)
    forward = board.items()
    assert forward == model.items()
    n = len(forward)
    # backward, a rank at a time from the bottom
    backward = [(e.member, e.score) for e in (board.at(-i) for i in range(1, n + 1))]
    assert backward[::-1] == forward
    # backward, in pages from the last one
    size = 37
    pages = [board.page(p, size) for p in range(board.pages(size), 0, -1)]
    assert [(e.member, e.score) for page in pages[::-1] for e in page] == forward
    # backward, popping the worst in random batches: ranks count down from n
    popped: list[Any] = []
    while len(board):
        popped.extend(board.pop_worst(rng.randint(1, 60)))
        if rng.random() < 0.1:
            board._check()
    board._check()
    assert [e.rank for e in popped] == list(range(n, 0, -1))
    assert [(e.member, e.score) for e in popped][::-1] == forward
