"""Microbenchmarks of :class:`~rankengine.index.sortedlist.SortedListIndex` hot paths.

Not part of the pass/fail suite (``bench/`` is outside the test paths, and
the project's pytest options disable benchmarks).  Run them with::

    python -m pytest bench/test_sortedlist_micro.py --benchmark-enable
    python -m pytest bench/test_sortedlist_micro.py --benchmark-enable -k move

Each benchmark is one operation on ``N`` entries, for the index and for the
naive recipe side by side (same group, so one table shows the ratio):

``index``
    :class:`SortedListIndex` plus the smallest board around it: a ``dict``
    ``member -> (primary, tie)``, ties from a logical clock (negated, as a
    descending first-come board stores them).
``naive``
    ``dict`` ``member -> score`` plus a ``sortedcontainers.SortedList`` of
    ``(-score, member)``; an increment removes the old tuple and adds the new.

Scores start uniform in ``0 .. N``; members come from a pre-drawn cycle so that
the random draw is not timed.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from sortedcontainers import SortedList

from rankengine.index.sortedlist import SortedListIndex

#: Entries: big enough that blocks and the positional tree are realistic.
N = 100_000
SEED = 11
SYSTEMS = ("index", "naive")


class IndexBoard:
    """The index and a member map, as the board drives it."""

    def __init__(self, scores: dict[str, int]) -> None:
        self.clock = 0
        self.key: dict[str, tuple[int, int]] = {}
        for member, score in scores.items():
            self.clock += 1
            self.key[member] = (score, -self.clock)
        self.index = SortedListIndex()
        self.index.build(sorted((p, t, m) for m, (p, t) in self.key.items()))

    def incr(self, member: str, delta: int) -> None:
        primary, tie = self.key[member]
        self.clock += 1
        new = (primary + delta, -self.clock)
        self.index.move(primary, tie, *new)
        self.key[member] = new

    def rank(self, member: str) -> int:
        return len(self.index) - self.index.position(*self.key[member])

    def top(self, k: int) -> list[Any]:
        n = len(self.index)
        return list(self.index.iter_range(n - k, n, reverse=True))

    def add(self, member: str, score: int) -> None:
        self.clock += 1
        self.key[member] = key = (score, -self.clock)
        self.index.insert(*key, member)

    def discard(self, member: str) -> None:
        self.index.remove(*self.key.pop(member))


class NaiveBoard:
    """``dict`` plus ``SortedList`` of ``(-score, member)``."""

    def __init__(self, scores: dict[str, int]) -> None:
        self.scores = dict(scores)
        self.order = SortedList((-s, m) for m, s in self.scores.items())

    def incr(self, member: str, delta: int) -> None:
        score = self.scores[member]
        self.order.remove((-score, member))
        score += delta
        self.scores[member] = score
        self.order.add((-score, member))

    def rank(self, member: str) -> int:
        return int(self.order.bisect_left((-self.scores[member], member))) + 1

    def top(self, k: int) -> list[Any]:
        return list(self.order.islice(0, k))

    def add(self, member: str, score: int) -> None:
        self.scores[member] = score
        self.order.add((-score, member))

    def discard(self, member: str) -> None:
        self.order.remove((-self.scores.pop(member), member))


Board = IndexBoard | NaiveBoard


def _scores() -> dict[str, int]:
    rng = random.Random(SEED)
    return {f"player:{i}": rng.randrange(N) for i in range(N)}


@pytest.fixture(scope="module", params=SYSTEMS)
def board(request: pytest.FixtureRequest) -> Iterator[Board]:
    """A board of N members, shared by the benchmarks of one module run."""
    scores = _scores()
    yield IndexBoard(scores) if request.param == "index" else NaiveBoard(scores)


def _cycle(make: Callable[[random.Random], Any], count: int = 4096) -> Callable[[], Any]:
    rng = random.Random(SEED + 1)
    return itertools.cycle([make(rng) for _ in range(count)]).__next__


def _player(rng: random.Random) -> str:
    return f"player:{rng.randrange(N)}"


@pytest.mark.benchmark(group="move")
def test_move_small_increment(benchmark: Any, board: Board) -> None:
    """Increment a random player by 1..100: ``move`` to a slightly larger primary."""
    nxt = _cycle(lambda rng: (_player(rng), rng.randint(1, 100)))
    incr = board.incr

    def step() -> None:
        incr(*nxt())

    benchmark(step)


@pytest.mark.benchmark(group="move-far")
def test_move_far(benchmark: Any, board: Board) -> None:
    """Increment by +-10,000..50,000: the entry changes block."""
    nxt = _cycle(lambda rng: (_player(rng), rng.choice((-1, 1)) * rng.randint(10_000, 50_000)))
    incr = board.incr

    def step() -> None:
        incr(*nxt())

    benchmark(step)


@pytest.mark.benchmark(group="position")
def test_position(benchmark: Any, board: Board) -> None:
    """Rank of a random player: ``position`` of a present key."""
    nxt = _cycle(_player)
    rank = board.rank
    benchmark(lambda: rank(nxt()))


@pytest.mark.benchmark(group="iter_range-10")
def test_top10(benchmark: Any, board: Board) -> None:
    """The best 10 rows: ``iter_range`` of 10 at the top end."""
    top = board.top
    benchmark(top, 10)


@pytest.mark.benchmark(group="insert")
def test_insert(benchmark: Any, board: Board) -> None:
    """Insert a new member at a random score (the previous one is removed untimed)."""
    fresh = itertools.count()
    nxt = _cycle(lambda rng: rng.randrange(N))
    added: list[str] = []

    def setup() -> tuple[tuple[str, int], dict[str, Any]]:
        if added:
            board.discard(added.pop())
        member = f"new:{next(fresh)}"
        added.append(member)
        return (member, nxt()), {}

    benchmark.pedantic(board.add, setup=setup, rounds=20_000, iterations=1, warmup_rounds=100)
    board.discard(added.pop())


@pytest.mark.parametrize("name", SYSTEMS)
@pytest.mark.benchmark(group="build")
def test_build(benchmark: Any, name: str) -> None:
    """Bulk load N sorted entries (index ``build``; naive ``SortedList`` constructor)."""
    rows = sorted((s, -i, m) for i, (m, s) in enumerate(_scores().items()))
    if name == "index":
        index = SortedListIndex()
        benchmark.pedantic(index.build, args=(rows,), rounds=5, iterations=1, warmup_rounds=1)
    else:
        pairs = [(-s, m) for s, _, m in rows]
        benchmark.pedantic(SortedList, args=(pairs,), rounds=5, iterations=1, warmup_rounds=1)
