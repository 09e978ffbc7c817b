"""The tie clock of a Redis board against an in-process board's.

Both tick once per score change, so after the same calls they hold the
same clock, and a Redis board finds nothing to report against an
in-process twin (``verify``).  The one exception is an in-process batch
that is *staged* (``rankengine.board.staged``: a large ``set_many`` or
``incr_many`` applied beside the board): on a first-to-reach board its
pair ``i`` takes the clock ``c0 + CLOCK_ROOM + i + 1``, so the board's
clock moves by ``CLOCK_ROOM`` plus the batch's pairs, where the Redis board
moves by its score changes.  Clocks only order ties, and no read shows a
clock, so every answer still agrees: items, ranks, and the order of every
tie reached after the batch (see docs/redis.md, "The tie clock").

The Hypothesis test runs one random sequence of calls on three boards:
an in-process board whose batches are staged when Hypothesis says so (the
size thresholds lowered for that call), a twin that never stages, and a
Redis board; the deterministic test below stages a batch of the real size.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from outcomes import apply, exact
from redis_service import redis_board

import rankengine
from rankengine import Leaderboard
from rankengine.board import staged
from rankengine.board.staged import CLOCK_ROOM, STAGED_MIN_PAIRS

pytestmark = pytest.mark.redis

CONFIGS = [
    {"order": order, "tie_break": tie_break}
    for order in ("desc", "asc")
    for tie_break in ("first", "member")
]
#: few members and few scores: many ties, members met twice in a batch
members = st.sampled_from(["a", "b", "c", "d", "e", "f", "g"])
#: 1 and 1.0 are one score (a no-op that keeps the stored score)
scores = st.sampled_from([-1, 0, 1, 2, 3, 1.0, 2.5])
steps = st.sampled_from([-1, 0, 0, 1, 2, 0.0, 0.5])
whens = st.sampled_from([None, None, None, "new", "present", "better", "worse"])
stage = st.booleans()
operations = st.lists(
    st.one_of(
        st.tuples(st.just("set"), members, scores, whens),
        st.tuples(st.just("incr"), members, steps, st.just(None)),
        st.tuples(st.just("set_many"), st.lists(st.tuples(members, scores), max_size=8), whens),
        st.tuples(st.just("incr_many"), st.lists(st.tuples(members, steps), max_size=8)),
        st.tuples(st.just("remove"), members),
    ).flatmap(lambda op: st.tuples(st.just(op), stage)),
    min_size=1,
    max_size=16,
)


def order_of(board: Any) -> Any:
    """What a reader sees: every member with its score (and its type) in
    rank order, ties in their tie order, and each member's unique rank."""
    items = board.items()
    return exact((items, [board.rank(member) for member, _ in items]))


def apply_staged(board: Leaderboard, op: tuple[Any, ...]) -> Any:
    """``op`` on ``board`` with every batch staged (the thresholds lowered,
    as tests/test_staged_batch.py does)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(staged, "STAGED_MIN_PAIRS", 1)
        patch.setattr(staged, "STAGED_SHARE", 10**9)
        return apply(board, op)


@pytest.mark.parametrize("config", CONFIGS, ids=[f"{c['order']}-{c['tie_break']}" for c in CONFIGS])
def test_clocks_agree_unless_a_batch_is_staged(config: dict[str, Any]) -> None:
    @given(ops=operations)
    @settings(
        max_examples=40,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    def run(ops: list[tuple[tuple[Any, ...], bool]]) -> None:
        mixed = Leaderboard(**config)  # batches staged when the op says so
        plain = Leaderboard(**config)  # never staged
        remote = redis_board(**config)
        gap = 0  # how far the staged batches moved mixed's clock past plain's
        for i, (op, staging) in enumerate(ops):
            batch = op[0] in ("set_many", "incr_many")
            staged_now = staging and batch and len(mixed) > 0 and len(op[1]) > 0
            ticks = plain.clock
            want = apply(plain, op)
            ticks = plain.clock - ticks  # the score changes of this call
            got = apply_staged(mixed, op) if staging and batch else apply(mixed, op)
            assert got == want, (i, op)
            assert apply(remote, op) == want, (i, op)
            if staged_now and config["tie_break"] == "first":
                # pair j of the batch has clock c0 + CLOCK_ROOM + j + 1
                gap += CLOCK_ROOM + len(op[1]) - ticks
            seen = order_of(plain)
            assert order_of(mixed) == seen, (i, op)
            assert order_of(remote) == seen, (i, op)
            # one tick per score change on both: the same clock, and the
            # same rows (tie clocks included), except for the staged gap
            assert remote.clock == plain.clock, (i, op)
            assert mixed.clock == plain.clock + gap, (i, op)
            assert remote.verify(plain) == [], (i, op)
        # a member written after the sequence, at each score held: it ties
        # behind every holder (first-to-reach) on all three boards
        for value in sorted({score for _, score in plain.items()}):
            for board in (plain, mixed, remote):
                board.set("late", value)
            seen = order_of(plain)
            assert order_of(mixed) == seen
            assert order_of(remote) == seen
            for board in (plain, mixed, remote):
                board.remove("late")
        # the staged board copied into Redis: its clocks, the same order,
        # and the same order again after more writes on both
        copy = redis_board(**config)
        copy.rebuild(mixed)
        assert copy.clock == mixed.clock
        assert copy.verify(mixed) == []
        for member, value in [("a", 1), ("b", 1), ("late", 1), ("c", 2), ("a", 2)]:
            copy.set(member, value)
            mixed.set(member, value)
            assert order_of(copy) == order_of(mixed)
        for board in (mixed, plain, remote, copy):
            board._check()

    run()


def test_a_staged_batch_of_the_real_size(tmp_path: Path) -> None:
    """With the real thresholds: N members, then an ``incr_many`` of N
    pairs (members met twice, zero steps, new members) is staged in process
    and is one call on Redis.  The clocks then differ by exactly
    ``CLOCK_ROOM`` plus the pairs that changed no score; every answer
    agrees, and so do the ties reached after the batch.  A durable board
    (its batch one log record, never staged) keeps Redis's clock."""
    n = STAGED_MIN_PAIRS  # (and the batch is as large as the board: staged)
    rnd = random.Random(26)
    local, twin, remote = Leaderboard(), Leaderboard(), redis_board()
    durable = rankengine.open_board(tmp_path, fsync="never")
    start = [(f"p{i}", rnd.randrange(50)) for i in range(n)]
    batch = [(f"p{rnd.randrange(n + n // 8)}", rnd.choice([0, 1, 2, 0.0])) for _ in range(n)]
    for board in (local, twin, remote, durable):
        board.set_many(start)
    assert local.clock == remote.clock == n  # an empty board is filled densely
    before = twin.clock
    results = [board.incr_many(batch) for board in (local, remote, durable)]
    assert durable.clock == remote.clock
    assert remote.verify(durable) == []
    durable.close()
    for i in range(0, len(batch), 100):  # the twin: the same calls, each too small to stage
        twin.incr_many(batch[i : i + 100])
    ticks = twin.clock - before
    assert 0 < ticks < len(batch)
    assert results[0] == results[1] == results[2]
    assert remote.clock == twin.clock
    assert local.clock - remote.clock == CLOCK_ROOM + len(batch) - ticks
    assert order_of(local) == order_of(remote) == order_of(twin)
    # members reaching equal scores after the batch: each one a tie with
    # batch members, ranked last among them on every board
    for member, value in [("p1", 7), ("p2", 7), ("new", 7), ("p1", 8), ("p3", 8)]:
        for board in (local, twin, remote):
            board.set(member, value)
        assert order_of(local) == order_of(remote) == order_of(twin)
    assert remote.verify(twin) == []
    assert remote.verify(local) != []  # the tie clocks differ (not the order)
    for board in (local, twin, remote):
        board._check()
