"""Micro-benchmarks of :class:`rankengine.index.skiplist.SkipList` and two peers.

Run from the repository root (the project's pytest options disable timing by
default, so each benchmark then runs once, as a smoke test)::

    python -m pytest bench/test_skiplist_micro.py --benchmark-enable

Every round performs ``BATCH`` operations on an index of ``N`` entries, so
ops/s = ``BATCH / mean``.  Mutating rounds are undone by an untimed setup
before the next round, so every round starts from the same structure.  The
peers, in the same groups:

* ``pyskiplist``: ``pyskiplist.SkipList`` keyed by ``(primary, tie)``;
* ``sortedlist``: a ``sortedcontainers.SortedList`` of ``(primary, tie,
  member)`` tuples (rank = ``bisect_left``, move = remove + add).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest
from sortedcontainers import SortedList

from rankengine.index.skiplist import SkipList

N = 100_000
BATCH = 1_000
ROUNDS = 20
SCORES = 1_000_000  # about one entry per ten scores

Key = tuple[int, int]


def _keys(seed: int, count: int, first_tie: int) -> list[Key]:
    rng = random.Random(seed)
    return [(rng.randrange(SCORES), first_tie + i) for i in range(count)]


_rng = random.Random(3)
BASE = sorted(_keys(1, N, 0))
FRESH = _keys(2, BATCH, N)  # absent keys, for inserts
SAMPLE = _rng.sample(BASE, BATCH)  # present keys, for queries and moves
FAR = [(_rng.randrange(SCORES), N + BATCH + i) for i in range(BATCH)]
NEAR = [(p + _rng.randint(1, 100), N + 2 * BATCH + i) for i, (p, _) in enumerate(SAMPLE)]


@pytest.fixture(scope="module")
def skiplist() -> SkipList:
    sl = SkipList(random.Random(0))
    sl.build([(p, t, t) for p, t in BASE])
    return sl


@pytest.fixture(scope="module")
def peer_pyskiplist() -> Any:
    pyskiplist = pytest.importorskip("pyskiplist")
    sl = pyskiplist.SkipList()
    for key in BASE:
        sl.insert(key, key[1])
    return sl


@pytest.fixture(scope="module")
def peer_sortedlist() -> SortedList:
    return SortedList((p, t, t) for p, t in BASE)


def _rounds(benchmark: Any, run: Callable[[], None], undo: Callable[[], None] | None) -> None:
    """Time ``run`` for ROUNDS rounds; ``undo`` (untimed) restores the state."""
    done = [False]

    def setup() -> None:
        if done[0] and undo is not None:
            undo()
        done[0] = True

    benchmark.pedantic(run, setup=setup, rounds=ROUNDS, iterations=1)
    if undo is not None:
        undo()


# ----------------------------------------------------------------------
# insert
# ----------------------------------------------------------------------
@pytest.mark.benchmark(group="insert")
def test_insert_skiplist(benchmark: Any, skiplist: SkipList) -> None:
    """Insert BATCH absent keys."""

    def run() -> None:
        for p, t in FRESH:
            skiplist.insert(p, t, t)

    def undo() -> None:
        for p, t in FRESH:
            skiplist.remove(p, t)

    _rounds(benchmark, run, undo)
    skiplist._check()


@pytest.mark.benchmark(group="insert")
def test_insert_pyskiplist(benchmark: Any, peer_pyskiplist: Any) -> None:
    """Insert BATCH absent keys into pyskiplist."""

    def run() -> None:
        for key in FRESH:
            peer_pyskiplist.insert(key, key[1])

    def undo() -> None:
        for key in FRESH:
            peer_pyskiplist.remove(key)

    _rounds(benchmark, run, undo)


@pytest.mark.benchmark(group="insert")
def test_insert_sortedlist(benchmark: Any, peer_sortedlist: SortedList) -> None:
    """Add BATCH absent entries to a SortedList."""

    def run() -> None:
        for p, t in FRESH:
            peer_sortedlist.add((p, t, t))

    def undo() -> None:
        for p, t in FRESH:
            peer_sortedlist.remove((p, t, t))

    _rounds(benchmark, run, undo)


# ----------------------------------------------------------------------
# position (rank)
# ----------------------------------------------------------------------
@pytest.mark.benchmark(group="position")
def test_position_skiplist(benchmark: Any, skiplist: SkipList) -> None:
    """Rank of BATCH present keys."""

    def run() -> None:
        for p, t in SAMPLE:
            skiplist.position(p, t)

    _rounds(benchmark, run, None)


@pytest.mark.benchmark(group="position")
def test_position_pyskiplist(benchmark: Any, peer_pyskiplist: Any) -> None:
    """Rank of BATCH present keys in pyskiplist."""

    def run() -> None:
        for key in SAMPLE:
            peer_pyskiplist.index(key)

    _rounds(benchmark, run, None)


@pytest.mark.benchmark(group="position")
def test_position_sortedlist(benchmark: Any, peer_sortedlist: SortedList) -> None:
    """Rank of BATCH present keys in a SortedList (bisect_left)."""

    def run() -> None:
        for key in SAMPLE:
            peer_sortedlist.bisect_left(key)

    _rounds(benchmark, run, None)


# ----------------------------------------------------------------------
# move: near (score + 1..100) and far (a random new score)
# ----------------------------------------------------------------------
@pytest.mark.benchmark(group="move-near")
def test_move_near_skiplist(benchmark: Any, skiplist: SkipList) -> None:
    """Re-key BATCH entries by a small score increase."""
    _move_skiplist(benchmark, skiplist, NEAR)


@pytest.mark.benchmark(group="move-near")
def test_move_near_pyskiplist(benchmark: Any, peer_pyskiplist: Any) -> None:
    """Remove + insert in pyskiplist, small score increase."""
    _move_pyskiplist(benchmark, peer_pyskiplist, NEAR)


@pytest.mark.benchmark(group="move-near")
def test_move_near_sortedlist(benchmark: Any, peer_sortedlist: SortedList) -> None:
    """Remove + add in a SortedList, small score increase."""
    _move_sortedlist(benchmark, peer_sortedlist, NEAR)


@pytest.mark.benchmark(group="move-far")
def test_move_far_skiplist(benchmark: Any, skiplist: SkipList) -> None:
    """Re-key BATCH entries to random scores."""
    _move_skiplist(benchmark, skiplist, FAR)


@pytest.mark.benchmark(group="move-far")
def test_move_far_pyskiplist(benchmark: Any, peer_pyskiplist: Any) -> None:
    """Remove + insert in pyskiplist, random scores."""
    _move_pyskiplist(benchmark, peer_pyskiplist, FAR)


@pytest.mark.benchmark(group="move-far")
def test_move_far_sortedlist(benchmark: Any, peer_sortedlist: SortedList) -> None:
    """Remove + add in a SortedList, random scores."""
    _move_sortedlist(benchmark, peer_sortedlist, FAR)


def _move_skiplist(benchmark: Any, sl: SkipList, targets: list[Key]) -> None:
    pairs = list(zip(SAMPLE, targets, strict=True))

    def run() -> None:
        for (p, t), (q, u) in pairs:
            sl.move(p, t, q, u)

    def undo() -> None:
        for (p, t), (q, u) in pairs:
            sl.move(q, u, p, t)

    _rounds(benchmark, run, undo)
    sl._check()


def _move_pyskiplist(benchmark: Any, sl: Any, targets: list[Key]) -> None:
    pairs = list(zip(SAMPLE, targets, strict=True))

    def run() -> None:
        for old, new in pairs:
            sl.remove(old)
            sl.insert(new, new[1])

    def undo() -> None:
        for old, new in pairs:
            sl.remove(new)
            sl.insert(old, old[1])

    _rounds(benchmark, run, undo)


def _move_sortedlist(benchmark: Any, sl: SortedList, targets: list[Key]) -> None:
    pairs = list(zip(SAMPLE, targets, strict=True))

    def run() -> None:
        for (p, t), (q, u) in pairs:
            sl.remove((p, t, t))
            sl.add((q, u, t))

    def undo() -> None:
        for (p, t), (q, u) in pairs:
            sl.remove((q, u, t))
            sl.add((p, t, t))

    _rounds(benchmark, run, undo)


# ----------------------------------------------------------------------
# entry (select) and build
# ----------------------------------------------------------------------
@pytest.mark.benchmark(group="entry")
def test_entry_skiplist(benchmark: Any, skiplist: SkipList) -> None:
    """The entry at BATCH random positions."""
    positions = random.Random(6).sample(range(N), BATCH)

    def run() -> None:
        for i in positions:
            skiplist.entry(i)

    _rounds(benchmark, run, None)


@pytest.mark.benchmark(group="build")
def test_build_skiplist(benchmark: Any) -> None:
    """Bulk load N sorted entries (ops/s here = N / mean)."""
    entries = [(p, t, t) for p, t in BASE]
    sl = SkipList(random.Random(0))
    benchmark.pedantic(sl.build, args=(entries,), rounds=5, iterations=1)
    assert len(sl) == N
