"""Packed scores: round trips, ordering, and the 2**53 guard."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankengine.board.packed import EXACT_LIMIT, PackedScore

WEEK = 7 * 86400


@given(
    score=st.integers(min_value=-(2**32), max_value=2**32),
    t=st.integers(min_value=0, max_value=WEEK),
    descending=st.booleans(),
)
def test_round_trip_is_exact_through_a_double(score: int, t: int, descending: bool) -> None:
    packer = PackedScore(0, WEEK, descending=descending)
    packed = packer.pack(score, t)
    assert float(packed) == packed  # a double holds it exactly
    assert packer.unpack(float(packed)) == (score, float(t))


@given(
    a=st.tuples(st.integers(-1000, 1000), st.integers(0, WEEK)),
    b=st.tuples(st.integers(-1000, 1000), st.integers(0, WEEK)),
)
def test_packed_order_is_score_then_earlier_time(a: tuple[int, int], b: tuple[int, int]) -> None:
    packer = PackedScore(0, WEEK)
    pa, pb = float(packer.pack(*a)), float(packer.pack(*b))
    # descending board: higher score first, then earlier time first
    expected_a_first = (a[0], -a[1]) > (b[0], -b[1])
    assert (pa > pb) == expected_a_first or a == b


def test_guard_raises_before_precision_is_lost() -> None:
    packer = PackedScore(0, WEEK)
    top = packer.pack(packer.max_score, 0)
    assert top <= EXACT_LIMIT
    with pytest.raises(ValueError, match="2\\*\\*53"):
        packer.pack(packer.max_score + 1, 0)
    with pytest.raises(ValueError, match="2\\*\\*53"):
        packer.pack(packer.min_score - 1, WEEK)
    # one past the limit really would have collapsed: show that the guard is needed
    unsafe = ((packer.max_score + 1) << packer.bits) + packer.max_tick
    assert unsafe > EXACT_LIMIT


def test_bad_inputs() -> None:
    packer = PackedScore(1000, 60)
    with pytest.raises(ValueError, match="outside the window"):
        packer.pack(1, 999)
    with pytest.raises(TypeError, match="integer"):
        packer.pack(1.5, 1000)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="positive"):
        PackedScore(0, 0)
    with pytest.raises(ValueError, match="no room"):
        PackedScore(0, 2.0**60)


def test_epoch_scale_times_land_on_the_right_millisecond() -> None:
    start = 1_764_460_800.0  # 2025-11-30T00:00:00Z
    packer = PackedScore(start, 86_400, resolution=0.001)
    for ms in (1, 7, 999, 86_399_999):
        assert packer.ticks(start + ms / 1000) == ms


@given(
    score=st.one_of(
        st.integers(-(2**40), 2**40),
        st.floats(allow_nan=False),
        st.sampled_from([2**33, -(2**33) - 1]),
    ),
    t=st.one_of(st.integers(-10, 70), st.floats(allow_nan=False)),
    descending=st.booleans(),
)
def test_floor_is_the_last_packed_value_at_or_before_any_pair(
    score: int | float, t: int | float, descending: bool
) -> None:
    # 64 ticks of half a second from t = 3: scores 2**46 apart at most
    packer = PackedScore(3.0, 32.0, resolution=0.5, descending=descending)

    def key(s: int | float, time: int | float) -> tuple[int | float, int | float]:
        return (s, -time) if descending else (s, time)

    lowest = packer.min_score << packer.bits
    highest = (packer.max_score << packer.bits) + packer.max_tick
    below = packer.floor(score, t)
    if below is None:
        assert key(*packer.unpack(lowest)) > key(score, t)
        return
    assert lowest <= below <= highest
    assert key(*packer.unpack(below)) <= key(score, t)
    assert below == highest or key(*packer.unpack(below + 1)) > key(score, t)


@settings(max_examples=300, deadline=None)
@given(
    start=st.sampled_from([1_764_460_800.0, 1e9, 0.1, -3.25, 0.0]),
    resolution=st.sampled_from([1e-6, 1e-5, 1e-4, 0.001, 0.1, 0.25, 3.0]),
    tick=st.integers(0, 2**40),
    score=st.one_of(st.integers(-5, 5), st.sampled_from(["min", "max"])),
    descending=st.booleans(),
)
def test_every_time_unpack_gives_packs_back_to_its_tick(
    start: float, resolution: float, tick: int, score: int | str, descending: bool
) -> None:
    # Fine ticks at epoch-scale starts: start + tick * resolution is off by
    # a fraction of a tick, which must not move it to the previous tick.
    packer = PackedScore(start, 3600, resolution=resolution, descending=descending)
    tick = min(tick, packer.max_tick)
    points = {"min": packer.min_score, "max": packer.max_score}.get(score, score)
    assert isinstance(points, int)
    packed = (points << packer.bits) + (packer.max_tick - tick if descending else tick)
    back, t = packer.unpack(float(packed))
    assert back == points
    assert packer.ticks(t) == tick
    assert packer.pack(points, t) == packed


def test_microsecond_ticks_of_an_epoch_window() -> None:
    start = 1_764_460_800.0
    packer = PackedScore(start, 86_400, resolution=1e-6)
    for us in (1, 2, 6, 999_999):
        t = start + us * 1e-6
        assert packer.ticks(t) == us
        assert packer.unpack(packer.pack(7, t)) == (7, t)


@pytest.mark.parametrize(
    "t",
    [10**400, -(10**400), 2**1024, 1e308, -1e308],
    ids=["10**400", "-10**400", "2**1024", "1e308", "-1e308"],
)
def test_a_time_beyond_any_window_is_a_value_error(t: int | float) -> None:
    # (t - start) / resolution passes the float range: outside the window,
    # not an OverflowError from the arithmetic
    packer = PackedScore(1_764_460_800.0, 86_400, resolution=0.001)
    with pytest.raises(ValueError, match="outside the window"):
        packer.ticks(t)
    with pytest.raises(ValueError, match="outside the window"):
        packer.pack(1, t)


def test_an_int_score_too_long_to_print_is_described_by_its_size() -> None:
    packer = PackedScore(0, WEEK)
    with pytest.raises(ValueError, match=r"^score an int of 401 digits cannot be packed"):
        packer.pack(10**400, 0)


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((10**400, 60.0), "window_start must be a finite number"),
        ((0, 10**400), "window_length must be a finite number"),
        ((0, 1e300, 1e-10), "no room"),  # more ticks than a float counts
    ],
    ids=["start", "length", "ticks"],
)
def test_window_settings_beyond_the_float_range_are_value_errors(
    args: tuple[float, ...], match: str
) -> None:
    start, length, *resolution = args
    with pytest.raises(ValueError, match=match):
        PackedScore(start, length, resolution=resolution[0] if resolution else 1.0)


@pytest.mark.parametrize(
    ("score", "t", "error", "match"),
    [
        (float("nan"), 0, ValueError, "score must not be NaN"),
        (100, float("nan"), ValueError, "time must not be NaN"),
        (True, 0, TypeError, "score must be a number, not bool"),
        (100, False, TypeError, "time must be a number, not bool"),
        ("100", 0, TypeError, "score must be a number, not str"),
        (100, None, TypeError, "time must be a number, not NoneType"),
    ],
    ids=["nan-score", "nan-time", "bool-score", "bool-time", "str-score", "none-time"],
)
def test_floor_refuses_what_is_not_a_number(
    score: object, t: object, error: type[Exception], match: str
) -> None:
    # NaN compares false with everything: without a check, floor(nan, 0)
    # answered the lowest packed value and floor(100, nan) the last of 99
    # points, as if the pair sorted below them; a bool was taken for 0 or 1.
    packer = PackedScore(0, WEEK)
    with pytest.raises(error, match=match):
        packer.floor(score, t)  # type: ignore[arg-type]


@pytest.mark.parametrize("packed", [2**53 + 1, -(2**53) - 1, 10**30])
def test_unpack_refuses_an_int_no_pack_makes_as_it_refuses_the_float(packed: int) -> None:
    # a float beyond 2**53 was refused, the same value as an int unpacked
    # into a score pack() would never give
    day = PackedScore(0, 86400)
    with pytest.raises(ValueError, match="not an exact packed value"):
        day.unpack(packed)
    assert day.unpack(day.pack(day.max_score, 0.0)) == (day.max_score, 0.0)
    assert day.unpack(day.pack(day.min_score, 86399.0)) == (day.min_score, 86399.0)


@pytest.mark.parametrize("descending", ["no", 0, None, 1.0])
def test_descending_must_be_a_bool(descending: object) -> None:
    # "no" is truthy: it made a descending packing
    with pytest.raises(TypeError, match="descending must be True or False"):
        PackedScore(0, 86400, descending=descending)  # type: ignore[arg-type]
