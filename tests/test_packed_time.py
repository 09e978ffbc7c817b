"""Packed scores tied to time windows: a period of a calendar gives the
packing window, packed doubles rank exactly like the engine's exact
composite key, and the 2**53 guard fires before precision is lost."""

from __future__ import annotations

import struct
from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankengine import Leaderboard
from rankengine.board.packed import EXACT_LIMIT, PackedScore
from rankengine.timed.periodic import (
    Calendar,
    Daily,
    Every,
    Monthly,
    Period,
    PeriodicLeaderboard,
    Weekly,
)

WEEK_53 = Weekly().parse("2026-W53")


def packer_for(period: Period, resolution: float = 1.0, **kw: Any) -> PackedScore:
    return PackedScore(period.start, period.end - period.start, resolution=resolution, **kw)


@pytest.mark.parametrize(
    ("cal", "resolution", "bits"),
    [
        (Daily(), 1.0, 17),  # 86,400 s -> 17 bits, scores up to 2**36
        (Weekly(), 1.0, 20),
        (Weekly(), 0.001, 30),  # millisecond ties in a week
        (Monthly(), 1.0, 22),  # 31 days
        (Every(90 * 86400), 0.001, 33),  # a 90-day season at 1 ms
    ],
)
def test_bits_follow_the_window_length(cal: Calendar, resolution: float, bits: int) -> None:
    period = cal.period_of(1_798_761_600)
    packer = packer_for(period, resolution)
    assert packer.bits == bits
    assert packer.max_score == (EXACT_LIMIT - packer.max_tick) >> bits
    # the last instant of the period still packs
    last = period.end - resolution
    assert packer.unpack(packer.pack(packer.max_score, last))[0] == packer.max_score
    # times before the period, or past the last tick the bits can hold, do not
    # (the periodic board routes later events to the next period's packer)
    with pytest.raises(ValueError, match="outside the window"):
        packer.pack(1, period.start - resolution)
    with pytest.raises(ValueError, match="outside the window"):
        packer.pack(1, period.start + (packer.max_tick + 10) * resolution)


events = st.lists(
    st.tuples(
        st.integers(0, 30),  # member id
        st.integers(-(10**6), 10**6),  # score
        st.integers(0, 7 * 86400 - 1),  # seconds into week 53
    ),
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(events=events, descending=st.booleans())
def test_packed_doubles_rank_like_the_exact_composite_key(
    events: list[tuple[int, int, int]], descending: bool
) -> None:
    packer = packer_for(WEEK_53, descending=descending)
    direction = "desc" if descending else "asc"
    exact = Leaderboard(order=(direction, "asc"), tie_break="member")  # (score, earlier time)
    packed = Leaderboard(order=direction, tie_break="member")
    for member, score, offset in events:
        t = WEEK_53.start + offset
        exact.set(member, (score, t))
        value = float(packer.pack(score, t))
        assert value == packer.pack(score, t)  # the double holds it exactly
        packed.set(member, value)
    assert [m for m, _ in packed.items()] == [m for m, _ in exact.items()]
    for (m1, p), (m2, (score, t)) in zip(packed.items(), exact.items(), strict=True):
        assert m1 == m2 and packer.unpack(p) == (score, float(t))


def test_first_to_reach_matches_packed_time_when_events_arrive_in_order() -> None:
    """The engine's own tie-break ("first", a logical clock) gives the same
    order as packed time, without any 2**53 limit, when writes arrive in
    time order."""
    packer = packer_for(WEEK_53)
    engine = Leaderboard()  # tie_break="first"
    packed = Leaderboard(tie_break="member")
    for i, (member, score) in enumerate([("ann", 50), ("bob", 70), ("cid", 50), ("dee", 70)]):
        t = WEEK_53.start + 60 * i
        engine.set(member, score)
        packed.set(member, float(packer.pack(score, t)))
    assert list(engine) == list(packed) == ["bob", "dee", "ann", "cid"]
    engine.set("eve", 2**80)  # the exact key has no 2**53 ceiling
    assert engine.top(1)[0].member == "eve"
    with pytest.raises(ValueError, match="2\\*\\*53"):
        packer.pack(2**80, WEEK_53.start)


def test_round_trip_through_a_wire_double() -> None:
    """What a store with double scores (Redis ZADD, a REAL column, msgpack
    float 64) holds comes back as the same score and tick."""
    packer = packer_for(WEEK_53, resolution=0.001)
    t = WEEK_53.start + 3 * 86400 + 0.25
    for score in (0, 1, -1, packer.max_score, packer.min_score, 123_456):
        wire = msgpack.unpackb(msgpack.packb(float(packer.pack(score, t))))
        (double,) = struct.unpack(">d", struct.pack(">d", wire))
        assert packer.unpack(double) == (score, t)


def test_guard_fires_before_neighbouring_packed_values_collapse() -> None:
    packer = packer_for(Monthly().parse("2026-12"), resolution=0.001)  # 32 bits of time
    assert packer.bits == 32 and packer.max_score == 2**21 - 1
    start = packer.window_start
    a = packer.pack(packer.max_score, start)
    b = a - 1  # the next tick: the largest packable values are still distinct doubles
    assert packer.unpack(float(b)) == (packer.max_score, start + 0.001)
    assert float(a) != float(b)
    with pytest.raises(ValueError, match="2\\*\\*53") as info:
        packer.pack(packer.max_score + 1, start)
    assert str(packer.max_score) in str(info.value)  # the error names the limit
    # what the guard prevents: past 2**53, a millisecond apart collapse to one double
    over_a = ((packer.max_score * 4 + 1) << packer.bits) + packer.max_tick
    over_b = over_a - 1
    assert over_a > EXACT_LIMIT and float(over_a) == float(over_b)


def test_packed_scores_on_a_periodic_board_keep_best_earliest_wins() -> None:
    """A weekly "best run" board whose scores go to a double-only store:
    each period gets its own packer (the window is the period)."""
    now = [WEEK_53.start + 3600.0]
    weekly = PeriodicLeaderboard("weekly", clock=lambda: now[0])
    exact = PeriodicLeaderboard("weekly", clock=lambda: now[0], order=("desc", "asc"))
    runs = [("ann", 300), ("bob", 300), ("ann", 250), ("cid", 310), ("bob", 320)]
    for member, score in runs:
        now[0] += 600
        period = weekly.current
        packer = packer_for(period)
        weekly.set(member, float(packer.pack(score, now[0])), when="better")
        exact.set(member, (score, now[0]), when="better")
    order = [e.member for e in weekly.top()]
    assert order == [e.member for e in exact.top()] == ["bob", "cid", "ann"]
    best = packer_for(weekly.current).unpack(weekly.top(1)[0].score)
    assert best == (320, WEEK_53.start + 3600.0 + 5 * 600)
