"""Sliding windows: the materialised window equals a brute-force union of
the raw events after every refresh, and reads between refreshes are stale
in exactly the documented way."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankengine import Leaderboard
from rankengine.timed.periodic import Daily, Every, Hourly, LateEventError, Period
from rankengine.timed.window import SlidingWindowLeaderboard

HOUR = 3_600
START = 1_796_032_800  # 2026-11-30T10:00Z


class FakeClock:
    def __init__(self, t: float) -> None:
        self.t = float(t)

    def __call__(self) -> float:
        return self.t


def brute_force(events: list[tuple[str, Any, Any, float]], window: list[Period]) -> dict[Any, Any]:
    """Replay the raw accepted events into one dict per bucket, then add the
    buckets of the window oldest first (the union's rules)."""
    per_bucket: dict[str, dict[Any, Any]] = {}
    for op, member, value, t in events:
        bucket = per_bucket.setdefault(HOURLY.period_of(t).name, {})
        if op == "incr":
            bucket[member] = bucket.get(member, 0) + value
        elif op == "set":
            bucket[member] = value
        else:
            bucket.pop(member, None)
    totals: dict[Any, Any] = {}
    for period in window:
        for member, value in per_bucket.get(period.name, {}).items():
            if member in totals:
                total = totals[member] + value
                totals[member] = 0.0 if total != total else total
            else:
                totals[member] = value
    return totals


HOURLY = Hourly()

scores = st.integers(-50, 100) | st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
actions = st.lists(
    st.tuples(
        st.sampled_from(["incr", "incr", "incr", "set", "remove", "refresh", "refresh"]),
        st.sampled_from(["ann", "bob", "cid", "dee", "eve"]),
        scores,
        st.integers(0, 3 * HOUR),  # clock step before the action
        st.integers(0, 2 * HOUR),  # how far back the event's timestamp lies
    ),
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(actions=actions, size=st.integers(1, 4), grace=st.sampled_from([0, HOUR]))
def test_window_equals_brute_force_union_after_every_refresh(
    actions: list[tuple[str, str, Any, int, int]], size: int, grace: int
) -> None:
    clock = FakeClock(START)
    window = SlidingWindowLeaderboard(
        "hourly", size, grace=grace, late="drop", clock=clock, tie_break="member"
    )
    accepted: list[tuple[str, Any, Any, float]] = []
    for op, member, value, step, back in actions:
        clock.t += step
        if op == "refresh":
            window.refresh()
            expected = brute_force(accepted, window.window())
            assert dict(window.items()) == expected
            # ranks agree with a sort of the brute-force totals
            ranked = sorted(expected.items(), key=lambda kv: (-kv[1], [-ord(c) for c in kv[0]]))
            assert window.items() == ranked
            assert [p.name for p in window.window()] == [
                HOURLY.period_of(clock.t - i * HOUR).name for i in reversed(range(size))
            ]
            window._check()
            continue
        t = clock.t - back
        if clock.t >= HOURLY.period_of(t).end + grace:  # late: dropped by policy
            before = window.buckets.late_dropped
            getattr(window, op)(member, *(() if op == "remove" else (value,)), t=t)
            assert window.buckets.late_dropped == before + 1
            continue
        getattr(window, op)(member, *(() if op == "remove" else (value,)), t=t)
        accepted.append((op, member, value, t))
        window._check()


def test_reads_are_stale_until_refreshed_on_schedule() -> None:
    clock = FakeClock(START)
    window = SlidingWindowLeaderboard("hourly", 24, refresh_every=60, clock=clock)
    window.incr("ann", 5)
    assert window.top() == [(("ann", 5, 1, None))]  # first read: due (never refreshed)
    window.incr("bob", 9)
    clock.t += 59
    assert window.score("bob") is None  # stale: refreshed 59 s ago
    assert window.staleness() == 59
    assert window.bucket().score("bob") == 9  # buckets are always current
    clock.t += 1
    assert window.score("bob") == 9 and window.rank("bob") == 1
    assert window.as_of == clock.t
    assert window.last_touched == 1  # only bob was recomputed


def test_explicit_refresh_only_and_bucket_expiry() -> None:
    clock = FakeClock(START)
    window = SlidingWindowLeaderboard("hourly", 2, clock=clock)
    window.incr("ann", 5)
    clock.t += HOUR
    window.incr("ann", 1)
    window.incr("bob", 2)
    assert window.top() == []  # never refreshed
    assert window.refresh() == 2
    assert window.items() == [("ann", 6), ("bob", 2)]
    assert len(window) == 2 and "ann" in window
    clock.t += HOUR  # the first hour slides out, but nobody refreshed yet
    assert window.score("ann") == 6
    assert window.refresh() == 1  # ann: the only member of the bucket that left
    assert window.items() == [("bob", 2), ("ann", 1)]
    clock.t += 2 * HOUR
    assert window.refresh() == 2
    assert window.items() == []
    window._check()


def test_reads_and_writes_delegate() -> None:
    clock = FakeClock(START)
    window = SlidingWindowLeaderboard("daily", 7, refresh_every=0, clock=clock)
    assert window.set_many({"ann": 3, "bob": 4, "cid": 1}) == 3
    assert window.incr_many({"cid": 5}) == {"cid": 6}
    assert window.set("dee", 2, meta={"n": 1})
    assert window.remove("dee")
    assert [e.member for e in window.top(2)] == ["cid", "bob"]
    assert window.entry("bob").rank == 2  # type: ignore[union-attr]
    assert [e.member for e in window.around("bob", 1, 1)] == ["cid", "bob", "ann"]
    assert [e.member for e in window.page(2, 2)] == ["ann"]
    assert isinstance(window.board, Leaderboard)
    assert window.buckets.keep == 6
    assert "SlidingWindowLeaderboard(Daily" in repr(window)
    with pytest.raises(LateEventError):
        window.incr("ann", 1, t=START - 86400)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="buckets"):
        SlidingWindowLeaderboard("hourly", 0)
    with pytest.raises(ValueError, match="refresh_every"):
        SlidingWindowLeaderboard("hourly", 3, refresh_every=-1)
    with pytest.raises(TypeError, match="composite"):
        SlidingWindowLeaderboard("hourly", 3, order=("desc", "asc"))


def test_infinities_follow_the_union_rule() -> None:
    clock = FakeClock(START)
    window = SlidingWindowLeaderboard("hourly", 2, clock=clock)
    window.set("ann", math.inf)
    clock.t += HOUR
    window.set("ann", -math.inf)
    window.refresh()
    assert window.score("ann") == 0.0
    assert (
        window.score("ann") == Leaderboard.union([window.bucket(p) for p in window.window()])["ann"]
    )


def test_a_sum_beyond_the_float_range_raises_and_keeps_the_window() -> None:
    # 10**400 in one bucket and 0.5 in the next have no float sum: the
    # refresh names the member and changes nothing, and the members it could
    # not sum are still due, so a later refresh recomputes them
    clock = FakeClock(START)
    window = SlidingWindowLeaderboard("hourly", 2, clock=clock)
    window.set("ann", 1)
    window.refresh()
    window.set("ann", 10**400)
    window.set("bob", 2)
    clock.t += HOUR
    window.set("ann", 0.5)
    as_of, items = window.as_of, window.board.items()
    with pytest.raises(OverflowError, match=r"sum of the scores of 'ann'.*float range"):
        window.refresh()
    assert (window.as_of, window.board.items()) == (as_of, items)
    window.set("ann", 1)  # the bucket holds an int again: the sum exists
    window.refresh()
    assert dict(window.board.items()) == {"ann": 10**400 + 1, "bob": 2}
    window._check()


def test_old_buckets_are_archived(tmp_path: Path) -> None:
    clock = FakeClock(START)
    window = SlidingWindowLeaderboard(Every(HOUR), 2, clock=clock, archive=tmp_path)
    window.incr("ann", 1)
    clock.t += 3 * HOUR
    window.refresh()
    assert window.buckets.archived() == ["2026-11-30T10:00:00"]
    assert window.items() == []


def test_daily_window_of_a_week() -> None:
    clock = FakeClock(START)
    week = SlidingWindowLeaderboard(Daily(), 7, clock=clock)
    for day in range(10):
        week.incr("ann", day)
        week.incr("bob", 10 - day)
        clock.t += 86400
    clock.t -= 86400
    week.refresh()
    assert week.score("ann") == sum(range(3, 10))
    assert week.score("bob") == sum(10 - d for d in range(3, 10))


def test_durable_window_reopens_to_the_same_totals(tmp_path: Path) -> None:
    clock = FakeClock(START)
    with SlidingWindowLeaderboard.open(tmp_path, "hourly", 3, clock=clock, fsync="never") as w:
        for i in range(6):
            w.incr("ann", i + 1)
            w.incr("bob", 2)
            clock.t += HOUR
        clock.t -= HOUR
        w.refresh()
        totals = w.items()
    assert totals == [("ann", 4 + 5 + 6), ("bob", 6)]
    with SlidingWindowLeaderboard.open(tmp_path, "hourly", 3, clock=clock, fsync="never") as w:
        assert w.items() == totals
        assert w.as_of == clock.t
        w._check()
        assert len(w.buckets.archived()) == 3  # hours that slid out were archived


def test_metadata_comes_from_the_newest_bucket_that_has_some() -> None:
    clock = FakeClock(START)
    window = SlidingWindowLeaderboard("hourly", 3, clock=clock)
    window.set("ann", 1, meta={"name": "Ann"})
    clock.t += HOUR
    window.incr("ann", 1)
    window.set("bob", 1, meta={"name": "Bob"})
    window.refresh()
    assert window.board.meta("ann") == {"name": "Ann"}
    clock.t += HOUR
    window.set("ann", 5, meta={"name": "Ann the Great"})
    window.refresh()
    assert [e.meta for e in window.top(with_meta=True)] == [{"name": "Ann the Great"},
                                                             {"name": "Bob"}]  # fmt: skip
    clock.t += 3 * HOUR  # the buckets with metadata slide out
    window.incr("bob", 1)
    window.refresh()
    assert window.board.meta("bob") is None and "ann" not in window


def test_metadata_set_on_a_bucket_reaches_the_window_at_the_next_refresh() -> None:
    # buckets.set_meta changed the bucket but did not mark the member: the
    # window kept the old metadata until the member was written again
    clock = FakeClock(START)
    window = SlidingWindowLeaderboard("hourly", 2, clock=clock)
    window.set("ann", 1, meta={"name": "Ann"})
    window.set("bob", 2)
    window.refresh()
    window.buckets.set_meta("ann", {"name": "Ann B."})
    window.buckets.set_meta("bob", {"name": "Bob"})
    assert window.refresh() == 2
    assert window.board.meta("ann") == {"name": "Ann B."}
    assert window.board.meta("bob") == {"name": "Bob"}
    window.buckets.set_meta("ann", None)  # removing it reaches the window too
    assert window.refresh() == 1
    assert window.board.meta("ann") is None
    window._check()


def test_check_catches_window_metadata_out_of_step_with_the_buckets() -> None:
    # _check() verified the sums only, so a window showing stale metadata
    # (the bug above) passed it
    clock = FakeClock(START)
    window = SlidingWindowLeaderboard("hourly", 2, clock=clock)
    window.set("ann", 1, meta={"name": "Ann"})
    clock.t += HOUR
    window.set("ann", 2, meta={"name": "Ann B."})  # the newest bucket's wins
    window.refresh()
    window._check()
    assert window.board.meta("ann") == {"name": "Ann B."}
    window._board._meta["ann"] = {"name": "Ann"}  # the older bucket's: stale
    with pytest.raises(AssertionError, match="metadata"):
        window._check()


def test_a_refused_set_meta_on_a_bucket_marks_nothing() -> None:
    clock = FakeClock(START)
    window = SlidingWindowLeaderboard("hourly", 2, clock=clock)
    window.set("ann", 1, meta={"name": "Ann"})
    window.refresh()
    with pytest.raises(KeyError):
        window.buckets.set_meta("zed", {"name": "Zed"})  # absent from the bucket
    with pytest.raises(TypeError):
        window.buckets.set_meta("ann", {"when": 1j})  # not metadata
    with pytest.raises(LateEventError):
        window.buckets.set_meta("ann", {"name": "Late"}, t=START - HOUR)  # a closed hour
    assert window.bucket().meta("ann") == {"name": "Ann"}
    assert window.refresh() == 0  # nothing to recompute
    assert "zed" not in window and window.board.meta("ann") == {"name": "Ann"}
    window._check()


def test_set_meta_goes_to_the_bucket_of_t_and_the_newest_metadata_wins() -> None:
    clock = FakeClock(START)
    window = SlidingWindowLeaderboard("hourly", 3, grace=HOUR, clock=clock)
    window.set_many({"ann": 1, "bob": 2})
    clock.t += HOUR
    window.set_many({"ann": 3, "bob": 4})
    assert window.set_meta("ann", {"name": "Ann"}) is None  # this hour's bucket
    # bob in the hour before (open: within its grace); no newer bucket has any
    window.set_meta("bob", {"name": "Bob"}, t=START)
    assert window.bucket().meta("ann") == {"name": "Ann"} and window.bucket().meta("bob") is None
    assert window.bucket(HOURLY.period_of(START)).meta("bob") == {"name": "Bob"}
    assert window.refresh() == 2
    assert window.top(with_meta=True) == [
        ("bob", 6, 1, {"name": "Bob"}),
        ("ann", 4, 2, {"name": "Ann"}),
    ]
    # the older bucket's metadata does not hide the newer one's
    window.set_meta("ann", {"name": "Old Ann"}, t=START)
    window.refresh()
    assert window.board.meta("ann") == {"name": "Ann"}
    # removed from the newest bucket: the older one's shows
    window.set_meta("ann", None)
    window.refresh()
    assert window.board.meta("ann") == {"name": "Old Ann"}
    window._check()


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda w: w.set_meta("zed", {"n": 1}), KeyError),  # in no bucket
        (lambda w: w.set_meta("bob", {"n": 1}), KeyError),  # not in this hour's bucket
        (lambda w: w.set_meta("ann", {"n": 1j}), TypeError),
        (lambda w: w.set_meta(["ann"], {"n": 1}), TypeError),
        (lambda w: w.set_meta("ann", {"n": 1}, t=START - HOUR), LateEventError),
        (lambda w: w.set_meta("ann", {"n": 1}, t=START + 2 * HOUR), ValueError),  # not begun
        (lambda w: w.remove_many(["ann", ["bob"]]), TypeError),
        (lambda w: w.remove_many(["ann", 1.5]), TypeError),
        (lambda w: w.remove_many(["ann"], t=START - HOUR), LateEventError),
        (lambda w: w.remove_many(["ann"], t=math.nan), ValueError),
    ],
)
def test_refused_set_meta_and_remove_many_change_nothing(call: Any, error: type) -> None:
    clock = FakeClock(START)
    window = SlidingWindowLeaderboard("hourly", 3, clock=clock)
    window.set("bob", 5)
    clock.t += HOUR
    window.set("ann", 2, meta={"n": 0})
    window.refresh()
    before = (window.top(with_meta=True), window.bucket().items(), window.buckets.periods())
    with pytest.raises(error):
        call(window)
    assert window.refresh() == 0  # nothing marked for a recompute
    after = (window.top(with_meta=True), window.bucket().items(), window.buckets.periods())
    assert after == before and window.bucket().meta("ann") == {"n": 0}
    window._check()


def test_remove_many_removes_from_the_bucket_of_t_and_other_buckets_still_count() -> None:
    clock = FakeClock(START)
    window = SlidingWindowLeaderboard("hourly", 3, grace=HOUR, clock=clock, tie_break="member")
    window.set_many({"ann": 1, "bob": 2, "cid": 3})
    clock.t += HOUR
    window.set_many({"ann": 10, "bob": 20, "dee": 40})
    window.refresh()
    assert window.items() == [("dee", 40), ("bob", 22), ("ann", 11), ("cid", 3)]
    # this hour: ann and dee go, zed was never there
    assert window.remove_many(["ann", "dee", "zed"]) == 2
    assert window.items() == [("dee", 40), ("bob", 22), ("ann", 11), ("cid", 3)]  # stale
    assert window.refresh() == 3
    assert window.items() == [("bob", 22), ("cid", 3), ("ann", 1)]  # ann's older hour counts
    # the hour before (still open): ann and cid leave it, and the window
    assert window.remove_many(iter(["ann", "cid"]), t=START) == 2
    window.refresh()
    assert window.items() == [("bob", 22)]
    assert window.remove_many([]) == 0
    window._check()


@settings(max_examples=100, deadline=None)
@given(
    steps=st.lists(
        st.tuples(
            st.sampled_from(["incr", "incr", "remove", "read", "read"]),
            st.sampled_from(["ann", "bob", "cid"]),
            st.integers(1, 9) | st.floats(0.1, 10.0),
            st.integers(-HOUR, 2 * HOUR),  # clock step (backwards too)
        ),
        max_size=40,
    ),
    size=st.integers(1, 3),
    refresh_every=st.sampled_from([0, 60, HOUR, 3 * HOUR]),
)
def test_reads_show_the_window_as_of_the_last_refresh_due_on_schedule(
    steps: list[tuple[str, str, Any, int]], size: int, refresh_every: int
) -> None:
    """A model of staleness: a read refreshes when the window is at least
    ``refresh_every`` old, and otherwise shows the sums over the buckets of
    the last refresh as they were then (writes since missing, buckets that
    slid out since still counted)."""
    clock = FakeClock(START)
    window = SlidingWindowLeaderboard(
        "hourly", size, refresh_every=refresh_every, clock=clock, tie_break="member"
    )
    accepted: list[tuple[str, Any, Any, float]] = []
    now = -math.inf
    as_of = -math.inf
    shown: dict[Any, Any] = {}
    for op, member, value, step in steps:
        clock.t += step
        now = max(now, clock.t)  # the board's now never moves back
        if op == "read":
            if now - as_of >= refresh_every:
                as_of = now
                periods = [HOURLY.period_of(now - i * HOUR) for i in reversed(range(size))]
                shown = brute_force(accepted, periods)
            assert dict(window.items()) == shown
            assert window.as_of == as_of
            assert window.staleness() == now - as_of
        elif op == "incr":
            window.incr(member, value)
            accepted.append((op, member, value, now))
        else:
            window.remove(member)
            accepted.append((op, member, value, now))
    window._check()


def test_ties_in_the_window_rank_in_the_order_the_writes_reached_them() -> None:
    """On a first-to-reach board (the default), members with equal sums
    rank in the order of the writes that gave them those sums, as in a
    bucket; not in the iteration order of a set, which changes with the
    hash seed from one run to the next."""
    clock = FakeClock(START)
    window = SlidingWindowLeaderboard("hourly", 2, clock=clock)
    names = ["ann", "bob", "cid", "dee", "eve", "fay", "gus", "hal"]
    for member in names:
        window.incr(member, 5)
    window.incr("ann", 1)
    window.incr("ann", -1)  # back to 5, reached last
    window.refresh()
    expected = [*names[1:], "ann"]
    assert [m for m, _ in window.items()] == expected
    assert [m for m, _ in window.bucket().items()] == expected
    clock.t += HOUR
    window.incr_many({"hal": 5, "gus": 5})  # a batch in its own order
    window.incr("dee", 5)
    window.refresh()
    assert [e.member for e in window.top(3)] == ["hal", "gus", "dee"]


window_ops = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "incr",
                "incr_many",
                "set",
                "set_many",
                "meta",
                "set_meta",
                "remove",
                "remove_many",
                "refresh",
            ]
        ),
        st.sampled_from(["ann", "bob", "cid"]),
        st.integers(-5, 9),
        st.sampled_from([0, 0, 600, HOUR, 2 * HOUR, 5 * HOUR]),  # clock step
        st.sampled_from([0, 0, HOUR // 2, HOUR, 2 * HOUR]),  # how far back the event lies
    ),
    max_size=30,
)


@settings(max_examples=60, deadline=None)
@given(
    ops=window_ops,
    size=st.integers(1, 3),
    policy=st.tuples(
        st.sampled_from([0, HOUR // 2, 2 * HOUR]), st.sampled_from(["reject", "drop", "current"])
    ),
    durable=st.booleans(),
)
def test_sums_and_metadata_equal_a_model_of_buckets_under_every_late_policy_and_reopen(
    tmp_path_factory: pytest.TempPathFactory,
    ops: list[tuple[str, str, int, int, int]],
    size: int,
    policy: tuple[int, Any],
    durable: bool,
) -> None:
    """Per-bucket dicts of scores and metadata, written where the late
    policy says (rejected, dropped, or the current bucket); after each
    refresh, and after a reopen of a durable window, the window holds each
    member's sum over the last ``size`` buckets and its newest metadata."""
    grace, late = policy
    clock = FakeClock(START)
    path = tmp_path_factory.mktemp("window")
    options: dict[str, Any] = {"grace": grace, "late": late, "tie_break": "member"}

    def make() -> SlidingWindowLeaderboard:
        if durable:
            return SlidingWindowLeaderboard.open(
                path, "hourly", size, clock=clock, fsync="never", **options
            )
        return SlidingWindowLeaderboard("hourly", size, clock=clock, **options)

    window = make()
    scores: dict[str, dict[str, int]] = {}
    metas: dict[str, dict[str, Any]] = {}
    now = float(START)
    try:
        for op, member, value, step, back in ops:
            clock.t += step
            now = max(now, clock.t)
            if op == "refresh":
                window.refresh()
                if durable:
                    before = window.top(with_meta=True)
                    window.close()
                    window = make()
                    assert window.top(with_meta=True) == before
                periods = [HOURLY.period_of(now - i * HOUR).name for i in reversed(range(size))]
                assert [p.name for p in window.window()] == periods
                totals: dict[str, int] = {}
                newest: dict[str, Any] = {}
                for name in periods:
                    for m, score in scores.get(name, {}).items():
                        totals[m] = totals.get(m, 0) + score
                    newest.update(metas.get(name, {}))
                assert dict(window.board.items()) == totals
                assert {m: window.board.meta(m) for m in totals} == {
                    m: newest.get(m) for m in totals
                }
                window._check()
                continue
            t = now - back
            period = HOURLY.period_of(t)
            name = period.name
            if now >= period.end + grace:  # closed: late
                if late == "reject":
                    with pytest.raises(LateEventError):
                        window.remove(member, t=t)
                    continue
                if late == "drop":
                    dropped = window.buckets.late_dropped
                    window.incr(member, value, t=t)
                    assert window.buckets.late_dropped == dropped + 1
                    continue
                name = HOURLY.period_of(now).name
            bucket = scores.setdefault(name, {})
            bucket_meta = metas.setdefault(name, {})
            if op == "incr":
                window.incr(member, value, t=t)
                bucket[member] = bucket.get(member, 0) + value
            elif op == "incr_many":
                window.incr_many({member: value}, t=t)
                bucket[member] = bucket.get(member, 0) + value
            elif op == "set":
                window.set(member, value, t=t)
                bucket[member] = value
            elif op == "set_many":
                window.set_many([(member, value)], t=t)
                bucket[member] = value
            elif op == "meta":
                window.set(member, value, t=t, meta={"v": value})
                bucket[member] = value
                bucket_meta[member] = {"v": value}
            elif op == "set_meta":
                meta = None if value < 0 else {"v": value}
                if member not in bucket:
                    with pytest.raises(KeyError):
                        window.set_meta(member, meta, t=t)
                    continue
                window.set_meta(member, meta, t=t)
                if meta is None:
                    bucket_meta.pop(member, None)
                else:
                    bucket_meta[member] = meta
            elif op == "remove_many":
                assert window.remove_many([member, "zed"], t=t) == (member in bucket)
                bucket.pop(member, None)
                bucket_meta.pop(member, None)
            else:
                window.remove(member, t=t)
                bucket.pop(member, None)
                bucket_meta.pop(member, None)
    finally:
        window.close()


def test_compact_snapshots_the_buckets(tmp_path: Path) -> None:
    clock = FakeClock(START)
    options: dict[str, Any] = {"clock": clock, "fsync": "never"}
    with SlidingWindowLeaderboard.open(tmp_path, "hourly", 3, **options) as window:
        window.incr("ann", 5)
        clock.t += HOUR
        window.incr("bob", 7)
        window.incr("ann", 1)
        window.refresh()
        sums = window.board.items()
        assert window.compact() == {
            "2026-11-30T10": window.bucket("2026-11-30T10").last_seq,
            "2026-11-30T11": window.bucket("2026-11-30T11").last_seq,
        }
    assert window.compact() == {}  # closed
    with SlidingWindowLeaderboard.open(tmp_path, "hourly", 3, **options) as again:
        assert again.board.items() == sums == [("bob", 7), ("ann", 6)]
    assert SlidingWindowLeaderboard("hourly", 3).compact() == {}  # in memory


# ----------------------------------------------------------------------
# The periodic board's review, mirrored in the window
# ----------------------------------------------------------------------
#: 0001-01-01T00:00Z, the start of the first period of every fixed calendar
#: (a Monday: ISO week 0001-W01 starts there too)
YEAR_ONE = -62_135_596_800


@pytest.mark.parametrize("spec", ["hourly", "daily", "weekly", "monthly"])
def test_the_first_period_of_the_calendar_is_served_with_several_buckets(spec: str) -> None:
    # refresh() stepped back buckets - 1 periods with Calendar.previous and
    # raised in the calendar's first period, which the docs serve
    clock = FakeClock(YEAR_ONE + 100)
    window = SlidingWindowLeaderboard(spec, 3, clock=clock)
    first = window.buckets.calendar.period_of(YEAR_ONE)
    window.incr("ann", 2)
    assert window.refresh() == 1
    assert window.top() == [("ann", 2, 1, None)]
    assert window.window() == [first]  # no bucket before the first one
    window._check()
    clock.t = first.end  # the second period: both buckets summed
    window.incr("ann", 3)
    window.incr("bob", 1)
    window.refresh()
    assert window.window() == [first, window.buckets.current]
    assert window.top() == [("ann", 5, 1, None), ("bob", 1, 2, None)]
    window._check()
    # in the fourth period the window is the second to the fourth: the
    # first bucket (ann's 2) has slid out, the second still counts
    second = window.buckets.current
    clock.t = window.buckets.calendar.shift(first, 3).start
    window.refresh()
    assert window.window()[0] == second
    assert window.top() == [("ann", 3, 1, None), ("bob", 1, 2, None)]
    window._check()


def test_meta_reads_a_members_metadata_in_the_window() -> None:
    # the window could be given metadata (set(..., meta=), set_meta) but had
    # no meta(member) to read it back, unlike every other board
    clock = FakeClock(START)
    window = SlidingWindowLeaderboard("hourly", 2, clock=clock)
    window.set("ann", 1, meta={"name": "Ann", "tags": ["a"]})
    clock.t += HOUR
    window.set("ann", 2)  # the newest bucket has none: the older one's shows
    window.refresh()
    assert window.meta("ann") == {"name": "Ann", "tags": ["a"]}
    window.set_meta("ann", {"name": "Ann C."})  # now the newest bucket's wins
    window.refresh()
    assert window.meta("ann") == {"name": "Ann C."}
    got = window.meta("ann")
    assert got is not None
    got["name"] = "changed"  # a copy
    assert window.meta("ann") == {"name": "Ann C."}
    assert window.meta("bob") is None
    window._check()


#: The window's reads that take ``with_meta=``, each called with ``kw``
#: on the window or on a plain board holding the window's sums.
_WINDOW_META_READS: dict[str, Any] = {
    "top": lambda b, **kw: b.top(5, **kw),
    "entry": lambda b, **kw: [b.entry("bob", **kw)],
    "page": lambda b, **kw: b.page(1, 2, **kw),
    "page-2": lambda b, **kw: b.page(2, 1, style="dense", **kw),
    "around": lambda b, **kw: b.around("bob", 1, 1, **kw),
    "around-fill": lambda b, **kw: b.around("ann", 0, 2, fill=True, **kw),
}


@pytest.mark.parametrize("read", list(_WINDOW_META_READS))
def test_window_reads_return_the_metadata_on_request(read: str) -> None:
    # page and around took no with_meta=, unlike top and entry
    clock = FakeClock(START)
    window = SlidingWindowLeaderboard("hourly", 2, clock=clock)
    window.set("ann", 5, meta={"name": "Ann", "tags": ["a"]})
    window.set("bob", 3)
    clock.t += HOUR
    window.set("bob", 1)
    window.set("cid", 2)
    window.set_meta("bob", {"name": "Bob"})  # the newest bucket's
    window.refresh()
    plain = Leaderboard()
    plain.set("ann", 5, meta={"name": "Ann", "tags": ["a"]})
    plain.set("bob", 4, meta={"name": "Bob"})
    plain.set("cid", 2)
    call = _WINDOW_META_READS[read]
    got = call(window, with_meta=True)
    assert got == call(plain, with_meta=True)
    assert any(e.meta is not None for e in got)
    assert {e.member: e.meta for e in got} == {
        e.member: {"ann": {"name": "Ann", "tags": ["a"]}, "bob": {"name": "Bob"}}.get(e.member)
        for e in got
    }
    for e in got:  # copies: changing them changes nothing
        if e.meta is not None:
            e.meta["name"] = "changed"
            e.meta.setdefault("tags", []).append("b")
    assert call(window, with_meta=True) == call(plain, with_meta=True)
    assert call(window) == [e._replace(meta=None) for e in call(plain, with_meta=True)]
    assert call(window, with_meta=False) == call(window)
    window._check()


@pytest.mark.parametrize("read", list(_WINDOW_META_READS))
@pytest.mark.parametrize("value", ["no", 1, None])
def test_a_bad_with_meta_is_refused_before_a_due_refresh(read: str, value: Any) -> None:
    clock = FakeClock(START)
    window = SlidingWindowLeaderboard("hourly", 2, refresh_every=0, clock=clock)
    window.set("ann", 5, meta={"name": "Ann"})
    window.set_many({"bob": 3, "cid": 2})
    as_of = window.as_of
    with pytest.raises(TypeError, match=rf"^with_meta must be a bool, not {type(value).__name__}"):
        _WINDOW_META_READS[read](window, with_meta=value)
    assert window.as_of == as_of  # no refresh ran
    assert window._board.items() == []
    window._check()
