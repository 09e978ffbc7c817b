"""Microbenchmarks of the :class:`~rankengine.Leaderboard` hot paths.

Not part of the pass/fail suite (``bench/`` is outside the test paths, and
the project's pytest options disable benchmarks).  Run them with::

    python -m pytest bench/test_micro_board.py --benchmark-enable
    python -m pytest bench/test_micro_board.py --benchmark-enable -k incr

Each benchmark is one public call on a board of ``N`` members (``player:<i>``,
seeded uniform scores), for both backends, next to the same call on the naive
``sortedcontainers`` recipe (``dict`` + ``SortedList`` of ``(-score, member)``)
so that one run shows the ratio.  Members come from a pre-drawn cycle so
that the random draw is not timed.
"""

from __future__ import annotations

import itertools
import random
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import peers

#: Board size: big enough that the positional trees have several levels.
N = 100_000
SEED = 7
SYSTEMS = ("rankengine-sortedlist", "rankengine-skiplist", "sortedcontainers-naive")


def _pairs() -> list[tuple[str, int]]:
    rng = random.Random(SEED)
    return [(m, rng.randrange(1_000_000)) for m in peers.members(N)]


@pytest.fixture(scope="module", params=SYSTEMS)
def system(request: pytest.FixtureRequest) -> Iterator[peers.System]:
    """A board of N members, shared by the benchmarks of one module run."""
    built = peers.make_system(request.param, None)
    built.build(_pairs())
    yield built
    built.close()


def _cycle(make: Callable[[random.Random], Any], count: int = 4096) -> Callable[[], Any]:
    rng = random.Random(SEED + 1)
    return itertools.cycle([make(rng) for _ in range(count)]).__next__


def _player(rng: random.Random) -> str:
    return f"player:{rng.randrange(N)}"


def test_incr_small_step(benchmark: Any, system: peers.System) -> None:
    """Increment a random player by 1..100: the game server's write."""
    nxt = _cycle(lambda rng: (_player(rng), rng.randint(1, 100)))
    incr = system.incr

    def step() -> None:
        member, delta = nxt()
        incr(member, delta)

    benchmark(step)


def test_incr_big_jump(benchmark: Any, system: peers.System) -> None:
    """Increment by up to 100,000: the entry moves far (cross-block / relink)."""
    nxt = _cycle(lambda rng: (_player(rng), rng.choice((-1, 1)) * rng.randint(10_000, 100_000)))
    incr = system.incr

    def step() -> None:
        member, delta = nxt()
        incr(member, delta)

    benchmark(step)


def test_rank(benchmark: Any, system: peers.System) -> None:
    """1-based rank of a random player."""
    nxt = _cycle(_player)
    rank = system.rank
    benchmark(lambda: rank(nxt()))


def test_top10(benchmark: Any, system: peers.System) -> None:
    """The best 10 rows."""
    top = system.top
    benchmark(top, 10)


def test_around(benchmark: Any, system: peers.System) -> None:
    """A random player with 10 rows above and 10 below."""
    nxt = _cycle(_player)
    around = system.around
    benchmark(lambda: around(nxt(), 10, 10))


def test_page(benchmark: Any, system: peers.System) -> None:
    """A random page of 25."""
    nxt = _cycle(lambda rng: rng.randrange(N // 25) + 1)
    page = system.page
    benchmark(lambda: page(nxt(), 25))


@pytest.mark.parametrize("name", SYSTEMS)
def test_bulk_load(benchmark: Any, name: str) -> None:
    """Build a board of N members from pairs (``set_many`` on an empty board)."""
    pairs = _pairs()

    def build() -> None:
        peers.make_system(name, None).build(pairs)

    benchmark.pedantic(build, rounds=3, iterations=1, warmup_rounds=1)
