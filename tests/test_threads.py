"""A board shared by threads ends as if their writes ran one after another.

Only writes whose final result does not depend on the interleaving are
mixed across threads (increments, which add up; keep-best sets, which keep
the maximum; sets of members a thread owns), so the expected state is the
model after applying every thread's writes serially.
"""

from __future__ import annotations

import math
import random
import threading
from collections.abc import Callable
from itertools import pairwise
from typing import Any

from model import Model
from threaded import busy_switching

from rankengine.timed.window import SlidingWindowLeaderboard

THREADS = 6
SHARED = [f"s{i}" for i in range(12)]


def run_threads(workers: list[Callable[[], None]]) -> None:
    barrier = threading.Barrier(len(workers))
    errors: list[BaseException] = []

    def run(work: Callable[[], None]) -> None:
        try:
            barrier.wait()
            work()
        except BaseException as exc:  # reported in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(w,)) for w in workers]
    with busy_switching():
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == []


def test_concurrent_increments_match_serial(make_board: Any) -> None:
    board = make_board(tie_break="member")
    deltas = [1, 2, 3, -1, -2, 2**60, -(2**60), 2**60 + 7]
    plans = []
    for t in range(THREADS):
        rng = random.Random(t)
        plan = []
        for _ in range(200):
            if rng.random() < 0.2:
                plan.append([(rng.choice(SHARED), rng.choice(deltas)) for _ in range(5)])
            else:
                plan.append([(rng.choice(SHARED), rng.choice(deltas))])
        plans.append(plan)

    def worker(plan: list[list[tuple[str, int]]]) -> Callable[[], None]:
        def work() -> None:
            for batch in plan:
                if len(batch) == 1:
                    board.incr(*batch[0])
                else:
                    board.incr_many(batch)

        return work

    run_threads([worker(p) for p in plans])
    model = Model(tie_break="member")
    for plan in plans:
        for batch in plan:
            model.incr_many(batch)
    board._check()
    assert board.items() == model.items()  # exact integer sums, beyond 2**53
    # every increment here changes a score, so the clock counts them all
    assert board.clock == model.clock == sum(len(b) for p in plans for b in p)


def test_concurrent_keep_best_and_owned_sets_match_serial(make_board: Any) -> None:
    board = make_board(tie_break="member")
    plans = []
    for t in range(THREADS):
        rng = random.Random(100 + t)
        plan: list[tuple[Any, ...]] = []
        for _ in range(200):
            roll = rng.random()
            if roll < 0.5:  # shared members: the best score wins whatever the order
                plan.append(("better", rng.choice(SHARED), rng.randint(0, 1000)))
            elif roll < 0.8:  # this thread's own members: its last write wins
                plan.append(("set", f"t{t}-{rng.randrange(10)}", rng.randint(0, 1000)))
            else:
                own = [(f"t{t}-{rng.randrange(10)}", rng.randint(0, 1000)) for _ in range(4)]
                plan.append(("many", own))
        plans.append(plan)

    def apply(target: Any, step: tuple[Any, ...]) -> None:
        if step[0] == "better":
            target.set(step[1], step[2], when="better")
        elif step[0] == "set":
            target.set(step[1], step[2])
        else:
            target.set_many(step[1])

    def worker(plan: list[tuple[Any, ...]]) -> Callable[[], None]:
        def work() -> None:
            for step in plan:
                apply(board, step)

        return work

    run_threads([worker(p) for p in plans])
    model = Model(tie_break="member")
    for plan in plans:
        for step in plan:
            apply(model, step)
    board._check()
    assert board.items() == model.items()


def test_reads_during_writes_are_consistent_snapshots(make_board: Any) -> None:
    board = make_board()
    board.set_many(dict.fromkeys(SHARED, 0))
    done = threading.Event()
    checked = [0]

    def writer(seed: int) -> Callable[[], None]:
        def work() -> None:
            rng = random.Random(seed)
            for _ in range(400):
                board.incr(rng.choice(SHARED), rng.choice([1, 2, 5, -3]))
                if rng.random() < 0.1:
                    board.set_meta(rng.choice(SHARED), {"seen": rng.randrange(9)})

        return work

    def reader() -> None:
        while True:  # at least one pass, however fast the writers are
            finished = done.is_set()
            top = board.top(len(SHARED), style="unique")
            assert [e.rank for e in top] == list(range(1, len(SHARED) + 1))
            assert all(a.score >= b.score for a, b in pairwise(top))
            comp = board.by_rank(1, -1, style="competition")
            assert all(
                (b.rank == a.rank) == (a.score == b.score) and b.rank >= a.rank
                for a, b in pairwise(comp)
            )
            items = board.items()
            assert sorted((s for _, s in items), reverse=True) == [s for _, s in items]
            assert sorted(m for m, _ in items) == sorted(SHARED)
            member = SHARED[checked[0] % len(SHARED)]
            window = board.around(member, 2, 2)
            assert member in [e.member for e in window]
            assert 0.0 <= board.percentile(member) <= 100.0
            checked[0] += 1
            if finished:
                return

    writers = [writer(s) for s in range(THREADS - 2)]
    writers_left = [len(writers)]
    lock = threading.Lock()

    def counted(work: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                work()
            finally:
                with lock:
                    writers_left[0] -= 1
                    if writers_left[0] == 0:
                        done.set()

        return run

    run_threads([counted(w) for w in writers] + [reader, reader])
    board._check()
    assert checked[0] > 0
    assert sorted(m for m, _ in board.items()) == sorted(SHARED)


def test_window_reads_never_see_a_half_done_refresh() -> None:
    """A refresh makes several writes to the window board (the new sums, the
    metadata, the removals); a read through the window in another thread
    sees the window before or after it, never in between."""
    now = [1_796_032_800.0]
    window = SlidingWindowLeaderboard("hourly", 1, clock=lambda: now[0])
    rng = random.Random(7)

    def state() -> list[tuple[Any, Any, Any]]:
        return [(e.member, e.score, e.meta) for e in window.top(25, with_meta=True)]

    refreshed = [state()]
    seen: list[list[tuple[Any, Any, Any]]] = []
    done = threading.Event()

    def reader() -> None:
        while not done.is_set():
            seen.append(state())

    def writer() -> None:
        try:
            for hour in range(120):
                now[0] += 3600  # the last hour slides out, its members leave the window
                members = [f"h{hour}-{i}" for i in range(30)]
                window.set_many([(m, rng.randint(1, 50)) for m in members])
                for m in members:
                    window.set(m, rng.randint(1, 50), meta={"hour": hour})
                window.refresh()
                refreshed.append(state())
        finally:
            done.set()

    run_threads([writer] + [reader] * (THREADS - 1))
    window._check()
    assert seen
    assert [s for s in seen if s not in refreshed] == []


def test_window_as_of_agrees_with_the_totals_a_reader_sees() -> None:
    """``as_of``, ``window()`` and ``last_touched`` describe the window board
    a reader sees: read in another thread while a refresh runs, they are
    those of the refresh before it or after it, together with the totals.
    (They were read without the lock that refresh() holds, so a reader could
    see the new totals with the old ``as_of``.)"""
    start = 1_796_032_800.0
    now = [start]
    window = SlidingWindowLeaderboard("hourly", 1, clock=lambda: now[0])
    board = window.board  # read directly, as the window's own reads do
    samples: list[tuple[float, Any, list[Any], int]] = []
    expected: dict[float, tuple[int, list[Any], int]] = {}  # as_of -> what goes with it
    done = threading.Event()

    def reader() -> None:
        while not done.is_set():
            before = window.as_of
            sample = (before, board.score("m"), window.window(), window.last_touched)
            if window.as_of == before and before != -math.inf:
                samples.append(sample)

    def writer() -> None:
        try:
            for hour in range(300):
                now[0] = start + 3600 * hour
                # the total of "m" over the one-hour window is the hour's number
                window.set_many([("m", hour), *((f"x{hour}-{i}", 1) for i in range(hour % 7))])
                window.refresh()
                expected[window.as_of] = (hour, window.window(), window.last_touched)
        finally:
            done.set()

    run_threads([writer] + [reader] * (THREADS - 1))
    window._check()
    assert samples
    # (as_of, what the reader saw with it, what goes with it) where they differ
    wrong = [(s[0], s[1:], expected[s[0]]) for s in samples if s[1:] != expected[s[0]]]
    assert wrong == []


def test_mixed_writes_keep_every_read_well_formed(make_or_sharded: Any) -> None:
    """Pops, pruning and removals (whose results depend on the interleaving)
    mixed with increments and conditional sets, while readers check that
    every answer is one a board could give: ranks consecutive, scores in
    order, the three rank styles agreeing with the scores, a page where
    its (clamped) number says, a present member's rank in range, the
    member among its neighbours.  The cached top and the dense counts are
    read all along, so a write that left either stale would show."""
    board = make_or_sharded()
    members = [f"m{i}" for i in range(30)]

    def writer(seed: int) -> Callable[[], None]:
        def work() -> None:
            rng = random.Random(seed)
            for _ in range(150):
                roll = rng.random()
                member = rng.choice(members)
                if roll < 0.35:
                    board.incr(member, rng.choice([1, 2, -1, 0.5]))
                elif roll < 0.5:
                    board.set_many({m: rng.randint(0, 9) for m in rng.sample(members, 5)})
                elif roll < 0.6:
                    board.remove(member)
                elif roll < 0.65:
                    board.pop_best(2)
                elif roll < 0.7:
                    board.keep_top(20)
                elif roll < 0.75:
                    board.remove_by_score(0, 1)
                else:
                    board.set(member, rng.randint(-5, 20), when="better")

        return work

    def reader(seed: int) -> Callable[[], None]:
        def work() -> None:
            rng = random.Random(seed)
            for _ in range(100):
                for style in ("unique", "competition", "dense"):
                    top = board.top(10, style=style)
                    assert all(a.score >= b.score for a, b in pairwise(top))
                    steps = [b.rank - a.rank for a, b in pairwise(top)]
                    same = [a.score == b.score for a, b in pairwise(top)]
                    if style == "unique":
                        assert [e.rank for e in top] == list(range(1, len(top) + 1))
                    elif style == "dense":
                        assert steps == [0 if s else 1 for s in same], top
                    else:
                        assert [step == 0 for step in steps] == same, top
                page = board.page(2, 5)  # page 1 while 5 members or fewer (clamped)
                first = page[0].rank if page else 1
                assert first in (1, 6) and len(page) <= 5
                assert [e.rank for e in page] == list(range(first, first + len(page)))
                items = board.items()
                assert [s for _, s in items] == sorted((s for _, s in items), reverse=True)
                member = rng.choice(members)
                entry = board.entry(member)
                assert entry is None or 1 <= entry.rank <= len(members)
                near = board.around(member, 2, 2)
                if near:
                    first = near[0].rank
                    assert [e.rank for e in near] == list(range(first, first + len(near)))
                    assert member in [e.member for e in near]

        return work

    run_threads([writer(1), writer(2), writer(3), reader(4), reader(5)])
    board._check()
    items = board.items()
    assert [s for _, s in items] == sorted((s for _, s in items), reverse=True)
