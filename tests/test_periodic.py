"""Periodic boards: calendars, period boundaries, late events, rollover,
retention, archive files and close callbacks."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankengine import Entry, Leaderboard
from rankengine.board.changes import Change
from rankengine.durable.manifest import read_manifest
from rankengine.timed import archive as archive_module
from rankengine.timed import store as store_module
from rankengine.timed.periodic import (
    Calendar,
    Cron,
    Daily,
    Every,
    Hourly,
    LateEventError,
    Monthly,
    Period,
    PeriodicLeaderboard,
    Weekly,
    calendar,
    read_archive,
    write_archive,
)

DAY = 86_400
HOUR = 3_600


def ts(text: str) -> int:
    """POSIX seconds of an ISO UTC time."""
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp())


def just_before(t: float) -> float:
    return math.nextafter(t, -math.inf)


class FakeClock:
    def __init__(self, t: float) -> None:
        self.t = float(t)

    def __call__(self) -> float:
        return self.t


# ----------------------------------------------------------------------
# Calendars
# ----------------------------------------------------------------------
def test_end_of_day_boundary_is_exact_even_for_floats() -> None:
    cal = Daily()
    midnight = ts("2026-11-30T00:00:00")
    assert cal.period_of(midnight).name == "2026-11-30"
    assert cal.period_of(just_before(midnight)).name == "2026-11-29"
    assert cal.period_of(midnight - 0.001).name == "2026-11-29"
    p = cal.period_of(midnight)
    assert (p.start, p.end) == (midnight, midnight + DAY)


def test_hourly_names_and_bounds() -> None:
    cal = Hourly()
    p = cal.period_of(ts("2026-11-30T07:59:59") + 0.5)
    assert p == Period("2026-11-30T07", ts("2026-11-30T07:00:00"), ts("2026-11-30T08:00:00"))
    assert cal.next(p).name == "2026-11-30T08"


@pytest.mark.parametrize(
    ("day", "week"),
    [
        ("2026-12-31", "2026-W53"),  # 2026 starts on a Thursday: it has 53 ISO weeks
        ("2027-01-01", "2026-W53"),  # ...and week 53 runs into 2027
        ("2027-01-03", "2026-W53"),  # Sunday: still week 53
        ("2027-01-04", "2027-W01"),  # Monday: week 1 of 2027
        ("2021-01-03", "2020-W53"),
        ("2024-12-30", "2025-W01"),  # a Monday in December that is week 1 of the next year
        ("2026-08-12", "2026-W33"),
    ],
)
def test_iso_week_names_use_the_iso_week_year(day: str, week: str) -> None:
    cal = Weekly()
    p = cal.period_of(ts(day + "T12:00:00"))
    assert p.name == week
    assert datetime.fromtimestamp(p.start, UTC).weekday() == 0  # Monday
    assert p.end - p.start == 7 * DAY
    assert cal.parse(week) == p


@pytest.mark.parametrize(
    ("last_second", "month", "following"),
    [
        ("2026-01-31T23:59:59", "2026-01", "2026-02"),
        ("2026-02-28T23:59:59", "2026-02", "2026-03"),
        ("2028-02-29T23:59:59", "2028-02", "2028-03"),  # leap year
        ("2026-04-30T23:59:59", "2026-04", "2026-05"),
        ("2026-12-31T23:59:59", "2026-12", "2027-01"),  # year change
    ],
)
def test_month_ends(last_second: str, month: str, following: str) -> None:
    cal = Monthly()
    t = ts(last_second)
    assert cal.period_of(t).name == month
    assert cal.period_of(t + 0.999999).name == month
    assert cal.period_of(t + 1).name == following
    assert cal.period_of(t).end == t + 1


def test_dst_does_not_matter_every_day_is_86400_seconds() -> None:
    # 2026 has DST changes on Mar 8 / Mar 29 / Oct 25 / Nov 1 in various zones:
    # none of them show, because periods are cut in UTC (+ a fixed offset).
    for offset in (0, -5 * HOUR, 5 * HOUR + 30 * 60):
        cal = Daily(utc_offset=offset)
        p = cal.period_of(ts("2026-01-01T12:00:00"))
        for _ in range(365):
            assert p.end - p.start == DAY
            nxt = cal.next(p)
            assert nxt.start == p.end
            p = nxt


def test_fixed_utc_offset_moves_midnight() -> None:
    india = Daily(utc_offset=timedelta(hours=5, minutes=30))
    # local midnight of 2026-11-30 in UTC+05:30 is 18:30 UTC the day before
    assert india.period_of(ts("2026-11-29T18:30:00")).name == "2026-11-30"
    assert india.period_of(ts("2026-11-29T18:29:59")).name == "2026-11-29"
    new_york_winter = calendar("weekly", utc_offset=-5 * HOUR)
    monday = new_york_winter.parse("2026-W49")
    assert monday.start == ts("2026-11-30T05:00:00")


def test_bad_offsets_and_specs() -> None:
    with pytest.raises(ValueError, match="whole minutes"):
        Daily(utc_offset=30)
    with pytest.raises(ValueError, match="whole minutes"):
        Daily(utc_offset=25 * HOUR)
    with pytest.raises(TypeError):
        calendar(7)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="finite"):
        Daily().period_of(math.nan)
    with pytest.raises(ValueError, match="not a period name"):
        Weekly().parse("2026-W54")
    with pytest.raises(ValueError, match="not a period name"):
        Daily().parse("2026-11")


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_non_finite_offsets_and_lengths_are_refused_clearly(value: float) -> None:
    with pytest.raises(ValueError, match="utc_offset must be whole minutes"):
        Daily(utc_offset=value)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="length must be a positive whole number"):
        Every(value)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["fortnightly", "Weekley", "@fortnightly", "yearly"])
def test_an_unknown_calendar_name_lists_the_names(name: str) -> None:
    """A one-word spec that is no calendar name is reported as an unknown
    name, with the names there are, not as a cron expression short of fields."""
    with pytest.raises(ValueError, match="unknown calendar") as caught:
        calendar(name)
    message = str(caught.value)
    assert repr(name) in message and "'weekly'" in message and "@yearly" in message
    assert "5 fields" not in message
    with pytest.raises(ValueError, match="unknown calendar"):
        PeriodicLeaderboard(name, clock=lambda: 0.0)


@pytest.mark.parametrize(
    ("cron", "twin"),
    [("0 * * * *", Hourly()), ("0 0 * * *", Daily()), ("0 0 * * 1", Weekly()),
     ("@monthly", Monthly()), ("@hourly", Hourly())],
)  # fmt: skip
def test_cron_boundaries_match_the_named_calendars(cron: str, twin: Calendar) -> None:
    cal = Cron(cron)
    t = ts("2026-12-20T10:17:00")
    for _ in range(40):
        p, q = cal.period_of(t), twin.period_of(t)
        assert (p.start, p.end) == (q.start, q.end)
        t = p.end + 1234.5


def test_cron_features() -> None:
    quarter = Cron("*/15 * * * *")
    assert quarter.period_of(ts("2026-11-30T07:44:59")).name == "2026-11-30T07:30"
    weekdays = Cron("30 9 * * MON-FRI")
    friday = weekdays.period_of(ts("2026-12-04T10:00:00"))  # a Friday
    assert weekdays.next(friday).name == "2026-12-07T09:30"  # ...then Monday
    # both day fields restricted: a day matches if either does (13th OR Friday)
    either = Cron("0 0 13 * 5")
    starts = []
    p = either.period_of(ts("2026-11-01T00:00:00"))
    for _ in range(6):
        p = either.next(p)
        starts.append(p.name[:10])
    assert starts == ["2026-11-06", "2026-11-13", "2026-11-20", "2026-11-27", "2026-12-04",
                      "2026-12-11"]  # fmt: skip
    leap = Cron("0 0 29 2 *")  # only in leap years; 2100 is not one
    p = leap.period_of(ts("2097-01-01T00:00:00"))
    assert (p.name, leap.next(p).name) == ("2096-02-29T00:00", "2104-02-29T00:00")
    assert Cron("0 0 * * 7").period_of(ts("2026-12-02T00:00:00")).name == "2026-11-29T00:00"
    assert Cron("0 12 * * *", utc_offset=HOUR).period_of(ts("2026-11-30T11:30:00")).name == (
        "2026-11-30T12:00"
    )


def test_cron_fires_found_however_far_apart() -> None:
    """A restricted day of month with a ``*/n`` weekday must match both (as
    in Vixie cron): 29 February on a Sunday comes every 28 years, and 40
    (2088 -> 2128) across a century that is not a leap year.  Such schedules
    fire, and the times between two fires have their period."""
    feb29_sunday = Cron("0 0 29 2 */7")  # "*/7" is 0 and 7: Sunday
    assert feb29_sunday.period_of(ts("2030-01-01T00:00:00")).name == "2004-02-29T00:00"
    p = feb29_sunday.period_of(ts("2100-06-01T00:00:00"))
    assert (p.name, feb29_sunday.next(p).name) == ("2088-02-29T00:00", "2128-02-29T00:00")
    with pytest.raises(ValueError, match="never fires"):
        Cron("0 0 30 2 */2")


@pytest.mark.parametrize(
    "bad",
    ["0 0 31 2 *", "* * *", "61 * * * *", "*/0 * * * *", "x * * * *", "5-1 * * * *",
     "5/ * * * *", "*/ * * * *", "1-5/ * * * *", "*/x * * * *", "0 0 * * MON/"],
)  # fmt: skip
def test_cron_rejects_bad_expressions(bad: str) -> None:
    with pytest.raises(ValueError):
        Cron(bad)


CALENDARS = [
    Hourly(),
    Daily(),
    Daily(utc_offset=-7 * HOUR),
    Weekly(),
    Weekly(utc_offset=9 * HOUR),
    Monthly(),
    Monthly(utc_offset=-HOUR),
    Every(6 * HOUR, origin=1234),
    Every(timedelta(days=14), origin=ts("2026-01-01T00:00:00")),
    Cron("*/20 3-5 * * *"),
    Cron("0 12 * * FRI"),
    Cron("@yearly", utc_offset=2 * HOUR),
]


@settings(max_examples=300, deadline=None)
@given(
    cal=st.sampled_from(CALENDARS),
    t=st.floats(min_value=-1e9, max_value=4e9, allow_nan=False) | st.integers(0, 4 * 10**9),
)
def test_calendar_laws(cal: Calendar, t: float) -> None:
    p = cal.period_of(t)
    assert p.start <= t < p.end
    assert cal.parse(p.name) == p
    assert cal.next(p).start == p.end
    assert cal.previous(p).end == p.start
    assert cal.period_of(p.start) == p
    assert cal.period_of(just_before(p.end)) == p
    assert cal.period_of(p.end) != p


@pytest.mark.parametrize("cal", CALENDARS)
@pytest.mark.parametrize("day", ["0001-03-01", "0068-09-03", "0999-12-31"])
def test_names_have_four_digit_years_and_parse_back_in_early_years(cal: Calendar, day: str) -> None:
    p = cal.period_of(ts(day + "T12:34:56"))
    assert re.match(r"\d{4}-", p.name), p.name  # ISO 8601, as Daily and Weekly name them
    assert cal.parse(p.name) == p


# ----------------------------------------------------------------------
# The periodic board
# ----------------------------------------------------------------------
def daily_board(clock: FakeClock, **options: Any) -> PeriodicLeaderboard:
    return PeriodicLeaderboard("daily", clock=clock, **options)


def test_writes_go_to_the_period_of_their_timestamp() -> None:
    clock = FakeClock(ts("2026-11-30T12:00:00"))
    board = daily_board(clock, grace=DAY)
    board.incr("ann", 5)  # now -> 2026-11-30
    board.incr("ann", 7, t=ts("2026-11-29T23:59:59"))  # within grace -> yesterday
    board.set("bob", 3, t=ts("2026-11-30T00:00:00"))
    assert board.score("ann") == 5
    assert board.score("ann", period="2026-11-29") == 7
    assert [p.name for p in board.periods()] == ["2026-11-29", "2026-11-30"]
    assert board.rank("bob") == 2
    assert board.entry("ann").rank == 1  # type: ignore[union-attr]
    assert [e.member for e in board.around("bob", 1, 1)] == ["ann", "bob"]
    assert board.set_many({"cid": 1, "dee": 2}) == 2
    assert board.incr_many([("cid", 1)]) == {"cid": 2}
    assert board.remove("dee") and not board.remove("dee")
    board._check()


def test_rollover_calls_back_with_final_standings_in_order() -> None:
    clock = FakeClock(ts("2026-11-30T12:00:00"))
    seen: list[tuple[str, list[tuple[Any, Any]]]] = []
    board = daily_board(clock, keep=5, on_close=lambda p, b: seen.append((p.name, b.items())))
    board.incr("ann", 1)
    clock.t += DAY
    board.incr("bob", 2)
    clock.t += DAY
    board.incr("cid", 3)
    assert seen == [("2026-11-30", [("ann", 1)]), ("2026-12-01", [("bob", 2)])]
    clock.t += 10 * DAY  # a long idle gap: no boards, no callbacks for the idle days
    assert board.tick() == [board.calendar.parse("2026-12-02")]
    assert [name for name, _ in seen] == ["2026-11-30", "2026-12-01", "2026-12-02"]
    assert board.tick() == []  # at most once per period
    board._check()


def test_a_callback_may_read_the_periodic_board_and_runs_once() -> None:
    clock = FakeClock(ts("2026-11-30T12:00:00"))
    seen: list[tuple[str, list[Any], str]] = []

    def prizes(period: Period, final: Leaderboard) -> None:
        # the documented use: read the standings through the periodic board
        seen.append((period.name, board.top(3, period=period), board.current.name))

    board = daily_board(clock, on_close=prizes)
    board.incr("ann", 1)
    clock.t += DAY
    board.incr("bob", 2)
    assert seen == [("2026-11-30", [("ann", 1, 1, None)], "2026-12-01")]
    assert board.tick() == []
    board._check()


def test_callback_fires_exactly_at_end_plus_grace() -> None:
    clock = FakeClock(ts("2026-11-30T23:00:00"))
    closed: list[str] = []
    board = daily_board(clock, grace=600, on_close=lambda p, b: closed.append(p.name))
    board.incr("ann", 1)
    clock.t = ts("2026-12-01T00:09:59")
    board.tick()
    assert closed == []
    board.incr("ann", 1, t=ts("2026-11-30T23:59:00"))  # late but within grace
    clock.t = ts("2026-12-01T00:10:00")
    board.tick()
    assert closed == ["2026-11-30"]
    assert board.score("ann", period="2026-11-30") == 2


def test_late_events_policies() -> None:
    yesterday = ts("2026-11-29T18:00:00")
    clock = FakeClock(ts("2026-11-30T12:00:00"))
    strict = daily_board(clock)
    strict.tick()
    with pytest.raises(LateEventError, match="2026-11-29") as info:
        strict.incr("ann", 1, t=yesterday)
    assert info.value.period.name == "2026-11-29"
    assert isinstance(info.value, ValueError)

    dropping = daily_board(clock, late="drop")
    assert dropping.incr("ann", 1, t=yesterday) is None
    assert dropping.set("ann", 1, t=yesterday) is False
    assert dropping.set_many({"ann": 1}, t=yesterday) == 0
    assert dropping.incr_many({"ann": 1}, t=yesterday) == {}
    assert dropping.remove("ann", t=yesterday) is False
    assert dropping.late_dropped == 5
    assert dropping.top() == []

    current = daily_board(clock, late="current")
    assert current.incr("ann", 4, t=yesterday) == 4
    assert current.score("ann") == 4


def test_a_period_that_closed_stays_closed_even_if_retained() -> None:
    clock = FakeClock(ts("2026-11-30T12:00:00"))
    board = daily_board(clock, keep=3)
    board.incr("ann", 1)
    clock.t += DAY
    assert not board.is_open("2026-11-30")
    assert board.is_open("2026-12-01")
    with pytest.raises(LateEventError):
        board.incr("ann", 1, t=ts("2026-11-30T13:00:00"))
    assert board.score("ann", period="2026-11-30") == 1


def test_future_periods_are_refused_but_future_times_in_the_current_one_are_fine() -> None:
    clock = FakeClock(ts("2026-11-30T12:00:00"))
    board = daily_board(clock)
    assert board.incr("ann", 1, t=ts("2026-11-30T20:00:00")) == 1
    with pytest.raises(ValueError, match="starts after now"):
        board.incr("ann", 1, t=ts("2026-12-01T00:00:00"))
    with pytest.raises(ValueError, match="finite"):
        board.incr("ann", 1, t=math.inf)


def test_clock_never_moves_backwards() -> None:
    clock = FakeClock(ts("2026-11-30T12:00:00"))
    board = daily_board(clock)
    board.incr("ann", 1)
    clock.t -= 2 * DAY
    assert board.now() == ts("2026-11-30T12:00:00")
    assert board.current.name == "2026-11-30"
    board.incr("ann", 1)
    assert board.score("ann") == 2


@pytest.mark.parametrize("bad", [1e20, 10**20, 1.8e12 * 1000])
def test_a_clock_reading_beyond_the_calendar_is_refused_and_changes_nothing(bad: float) -> None:
    clock = FakeClock(ts("2026-11-30T12:00:00"))
    board = daily_board(clock)
    board.incr("ann", 1)
    good = clock.t
    clock.t = bad
    with pytest.raises(ValueError, match="outside the calendar"):
        board.incr("bob", 1)
    clock.t = good + 60  # the clock recovers: so does the board
    assert board.incr("bob", 2) == 2
    assert board.now() == good + 60
    assert [p.name for p in board.periods()] == ["2026-11-30"]
    assert board.top() == [("bob", 2, 1, None), ("ann", 1, 2, None)]
    board._check()


def test_a_period_that_has_not_started_is_not_open() -> None:
    clock = FakeClock(ts("2026-11-30T12:00:00"))
    board = daily_board(clock, grace=HOUR)
    assert board.is_open("2026-11-30")
    assert not board.is_open("2026-12-01")  # a write for it is refused
    with pytest.raises(ValueError, match="starts after now"):
        board.incr("ann", 1, t=ts("2026-12-01T00:00:00"))
    clock.t = ts("2026-12-01T00:30:00")
    assert board.is_open("2026-11-30") and board.is_open("2026-12-01")


def test_retention_archive_and_reload(tmp_path: Path) -> None:
    clock = FakeClock(ts("2026-12-28T09:00:00"))
    dropped: list[str] = []
    board = PeriodicLeaderboard(
        "weekly", keep=1, clock=clock, archive=tmp_path / "archive", tie_break="first"
    )
    board._drop_hook = lambda p, b: dropped.append(p.name)
    board.set_many({"ann": 10, "bob": 10, "cid": 7})
    board.set("dee", 12, meta={"name": "Dee"})
    week53 = board.board().items()
    clock.t += 7 * DAY
    board.incr("ann", 1)
    assert [p.name for p in board.periods()] == ["2026-W53", "2027-W01"]
    assert board.archived() == []
    clock.t += 7 * DAY
    board.tick()
    assert [p.name for p in board.periods()] == ["2027-W01", "2027-W02"]
    assert dropped == ["2026-W53"]
    assert board.archived() == ["2026-W53"]
    with pytest.raises(KeyError, match="not held"):
        board.board("2026-W53")
    old = board.load_archived("2026-W53")
    assert old.items() == week53
    assert [e.member for e in old.top()] == ["dee", "ann", "bob", "cid"]  # ties kept
    assert old.meta("dee") == {"name": "Dee"}
    old._check()
    # a retained period that nobody wrote to reads as empty
    assert board.top(period="2027-W02") == []
    with pytest.raises(KeyError):
        board.load_archived("2027-W01")
    board._check()


def test_archive_file_is_checked(tmp_path: Path) -> None:
    lb = Leaderboard(order=("desc", "asc"))
    lb.set_many({"ann": (3, 20), "bob": (3, 10)})
    lb.set_meta("bob", {"team": [1, 2]})
    path = tmp_path / "p.rkarchive"
    period = Period("2026-11-30", 1, 2)
    write_archive(path, period, lb)
    got_period, got = read_archive(path, backend="skiplist")
    assert got_period == period
    assert got.items() == lb.items() and got.meta("bob") == {"team": [1, 2]}
    got._check()
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="damaged"):
        read_archive(path)
    path.write_bytes(b"not an archive at all")
    with pytest.raises(ValueError, match="not a rankengine archive"):
        read_archive(path)
    path.write_bytes(b"x")
    with pytest.raises(ValueError, match="too short"):
        read_archive(path)


@pytest.mark.parametrize("backend", ["skiplist", "sortedlist"])
def test_an_archive_keeps_ints_past_64_bits(tmp_path: Path, backend: str) -> None:
    # the event log stores any int; the archive of the same period must too
    lb = Leaderboard(backend=backend)
    lb.set_many({"ann": 2**100, "bob": -(2**70), "cid": 5})
    lb.set_meta("cid", {"prize": 2**80, "inner": {"nested": [-(2**90)]}})
    path = tmp_path / "p.rkarchive"
    write_archive(path, Period("2026-11-30", 1, 2), lb)
    _, got = read_archive(path, backend=backend)
    assert got.items() == lb.items()
    assert got.meta("cid") == {"prize": 2**80, "inner": {"nested": [-(2**90)]}}
    got._check()


def test_archive_names_with_colons(tmp_path: Path) -> None:
    clock = FakeClock(ts("2026-11-30T07:10:00"))
    board = PeriodicLeaderboard("*/30 * * * *", keep=0, clock=clock, archive=tmp_path)
    board.incr("ann", 1)
    clock.t += 3600
    board.tick()
    assert board.archived() == ["2026-11-30T07:00"]
    assert board.load_archived("2026-11-30T07:00").items() == [("ann", 1)]


def test_a_failing_callback_is_retried() -> None:
    clock = FakeClock(ts("2026-11-30T12:00:00"))
    calls: list[str] = []

    def flaky(period: Period, board: Leaderboard) -> None:
        calls.append(period.name)
        if len(calls) <= 2:
            raise RuntimeError("reward service down")

    board = daily_board(clock, keep=0, on_close=flaky)
    board.incr("ann", 1)
    clock.t += DAY
    with pytest.raises(RuntimeError):
        board.tick()
    assert "2026-11-30" in board._periods  # not closed, so not dropped
    with pytest.raises(RuntimeError):  # any call retries it
        board.incr("ann", 1)
    assert board.tick() == [board.calendar.parse("2026-11-30")]
    assert calls == ["2026-11-30"] * 3
    with pytest.raises(KeyError):
        board.board("2026-11-30")
    assert board.score("ann") is None  # the failed write never happened


def test_a_callback_that_raises_leaves_a_board_that_checks_until_the_retry() -> None:
    # 2026-11-30 closed (its callback ran) and is kept; then a jump of two
    # days, and 2026-12-01's callback raises before anything is dropped:
    # 2026-11-30, closed and now out of keep, is still held until the retry
    # finishes the advance, and _check() must accept that state
    clock = FakeClock(ts("2026-11-30T12:00:00"))
    failures = [1]

    def flaky(period: Period, board: Leaderboard) -> None:
        if period.name == "2026-12-01" and failures:
            failures.pop()
            raise RuntimeError("reward service down")

    board = daily_board(clock, keep=1, on_close=flaky)
    board.incr("ann", 1)
    clock.t += DAY
    board.incr("bob", 1)
    clock.t += 2 * DAY
    with pytest.raises(RuntimeError):
        board.tick()
    assert "2026-11-30" in board._closed and "2026-12-01" not in board._closed
    board._check()
    assert [p.name for p in board.tick()] == ["2026-12-01"]
    assert [p.name for p in board.periods()] == ["2026-12-03"]
    board._check()


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="keep"):
        PeriodicLeaderboard("daily", keep=-1)
    with pytest.raises(ValueError, match="grace"):
        PeriodicLeaderboard("daily", grace=-1)
    with pytest.raises(ValueError, match="late"):
        PeriodicLeaderboard("daily", late="later")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        PeriodicLeaderboard("daily").board(3)  # type: ignore[arg-type]
    assert "keep=1" in repr(PeriodicLeaderboard("daily"))


def test_board_settings_are_checked_when_the_board_is_made() -> None:
    # They were checked only when the first period's board was built: the
    # constructor accepted order="up" and the first write or read raised.
    with pytest.raises(ValueError, match="order must be"):
        PeriodicLeaderboard("daily", order="up")
    with pytest.raises(ValueError, match="backend must be"):
        PeriodicLeaderboard("daily", backend="btree")


def test_an_empty_past_period_of_a_durable_board_opened_with_log_options_reads_as_empty(
    tmp_path: Path,
) -> None:
    # The empty detached board of a period nobody wrote to was built with
    # every option given to open(), and a log option such as retain_log or
    # on_torn_tail made it raise TypeError.
    clock = lambda: ts("2026-12-01T01:00:00")  # noqa: E731
    with PeriodicLeaderboard.open(
        tmp_path,
        "daily",
        clock=clock,
        fsync="never",
        retain_log=True,
        on_torn_tail="refuse",
        order="asc",
    ) as board:
        assert board.top(period="2026-11-30") == []
        assert board.rank("ann", period="2026-11-30") is None
        assert board.board("2026-11-30").order == "asc"
        board.incr("ann", 2)
        assert board.top() == [Entry("ann", 2, 1, None)]


def test_repr_of_a_durable_board_names_its_directory_and_whether_it_is_closed(
    tmp_path: Path,
) -> None:
    board = PeriodicLeaderboard.open(tmp_path, "daily", fsync="never")
    assert repr(board) == (
        f"PeriodicLeaderboard({str(tmp_path)!r}, Daily(utc_offset=0), keep=1, grace=0.0, periods=0)"
    )
    board.incr("ann", 1)
    board.close()
    assert repr(board).endswith(", periods=1, closed)")
    assert repr(PeriodicLeaderboard("daily")).startswith("PeriodicLeaderboard(Daily(")


class LoggedBoards:
    """A board factory that records every change of every period the way an
    event log does, so that replay can be checked without a disk."""

    def __init__(self) -> None:
        self.logs: dict[str, list[list[Change]]] = {}

    def __call__(self, period: Period) -> Leaderboard:
        board = Leaderboard()
        log = self.logs.setdefault(period.name, [])
        board._listener = log.append
        return board

    def replay(self) -> dict[str, Leaderboard]:
        out = {}
        for name, records in self.logs.items():
            board = Leaderboard()
            for changes in records:
                board._apply(changes)
            out[name] = board
        return out


@settings(max_examples=40, deadline=None)
@given(
    events=st.lists(
        st.tuples(
            st.sampled_from(["ann", "bob", "cid"]),
            st.integers(-5, 20),
            st.integers(0, 4 * DAY),  # time step before the event
            st.integers(0, 2 * DAY),  # how far back the event's timestamp lies
        ),
        max_size=40,
    )
)
def test_replay_reproduces_period_membership(events: list[tuple[str, int, int, int]]) -> None:
    clock = FakeClock(ts("2026-11-30T00:00:00"))
    boards = LoggedBoards()
    live = PeriodicLeaderboard("daily", keep=3, grace=DAY, late="drop", clock=clock,
                               board_factory=boards)  # fmt: skip
    expected: dict[str, dict[str, int]] = {}
    for member, delta, step, back in events:
        clock.t += step
        t = clock.t - back
        period = Daily().period_of(t)
        accepted = clock.t < period.end + DAY
        live.incr(member, delta, t=t)
        if accepted:
            per = expected.setdefault(period.name, {})
            per[member] = per.get(member, 0) + delta
        live._check()
    replayed = boards.replay()
    for period in live.periods():
        got = dict(replayed[period.name].items()) if period.name in replayed else {}
        assert got == expected.get(period.name, {})
        assert got == dict(live.board(period).items())


def test_weekly_event_live_ops_story(tmp_path: Path) -> None:
    """A weekly event that resets Friday noon UTC, prizes for the top 3."""
    clock = FakeClock(ts("2026-12-25T12:00:00"))
    prizes: dict[str, list[str]] = {}
    event = PeriodicLeaderboard(
        "0 12 * * FRI",
        keep=2,
        grace=300,
        clock=clock,
        archive=tmp_path,
        on_close=lambda p, b: prizes.__setitem__(p.name, [e.member for e in b.top(3)]),
    )
    for i, member in enumerate(["ann", "bob", "cid", "dee"]):
        clock.t += HOUR
        event.incr(member, 100 - i)
    clock.t = ts("2027-01-01T12:04:00")  # a minute after... still in grace
    event.incr("dee", 50, t=ts("2027-01-01T11:59:59"))
    event.incr("eve", 1)
    assert prizes == {}
    clock.t = ts("2027-01-01T12:05:00")
    event.tick()
    assert prizes == {"2026-12-25T12:00": ["dee", "ann", "bob"]}
    assert event.current.name == "2027-01-01T12:00"
    assert date.fromisoformat(event.current.name[:10]).weekday() == 4


def test_durable_periods_reopen_with_membership_and_closed_state(tmp_path: Path) -> None:
    clock = FakeClock(ts("2026-11-30T12:00:00"))
    closed: list[str] = []
    options: dict[str, Any] = {
        "keep": 1,
        "grace": HOUR,
        "on_close": lambda p, b: closed.append(p.name),
        "fsync": "never",
        "clock": clock,
    }
    with PeriodicLeaderboard.open(tmp_path, "daily", **options) as board:
        board.incr("ann", 5)
        board.set("bob", 7, meta={"name": "Bob"})
        clock.t = ts("2026-12-01T00:30:00")
        board.incr("ann", 1, t=ts("2026-11-30T23:30:00"))  # late, within grace
        board.incr("cid", 2)
        clock.t += 2 * HOUR
        board.tick()
        assert closed == ["2026-11-30"]
        before = {p.name: board.board(p).items() for p in board.periods()}
    assert before == {"2026-11-30": [("bob", 7), ("ann", 6)], "2026-12-01": [("cid", 2)]}
    with PeriodicLeaderboard.open(tmp_path, "daily", **options) as again:
        assert {p.name: again.board(p).items() for p in again.periods()} == before
        assert again.board("2026-11-30").meta("bob") == {"name": "Bob"}
        assert closed == ["2026-11-30"]  # the marker stops a second callback
        assert not again.is_open("2026-11-30")
        again._check()
        clock.t += DAY
        again.incr("dee", 1)
        assert closed == ["2026-11-30", "2026-12-01"]
        assert again.archived() == ["2026-11-30"]
        assert sorted(p.name for p in (tmp_path / "periods").iterdir()) == [
            "2026-12-01",
            "2026-12-02",
        ]
    with PeriodicLeaderboard.open(tmp_path, "daily", **options) as third:
        assert third.load_archived("2026-11-30").items() == before["2026-11-30"]
        assert [p.name for p in third.periods()] == ["2026-12-01", "2026-12-02"]
        assert closed == ["2026-11-30", "2026-12-01"]


class _Killed(BaseException):
    """Stands for the process dying (nothing after it runs)."""


@pytest.mark.parametrize("first", ["MANIFEST", "log-00000000000000000001.seg"])
def test_a_crash_while_deleting_a_dropped_period_does_not_stop_a_reopen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, first: str
) -> None:
    clock = FakeClock(ts("2026-11-30T12:00:00"))
    options: dict[str, Any] = {"keep": 0, "fsync": "never", "clock": clock}
    board = PeriodicLeaderboard.open(tmp_path, "daily", **options)
    board.incr("ann", 5)
    clock.t += DAY

    def killed_midway(path: Any, *args: Any, **kwargs: Any) -> None:
        (Path(path) / first).unlink()  # the directory was half deleted
        raise _Killed

    monkeypatch.setattr("rankengine.timed.store.shutil.rmtree", killed_midway)
    with pytest.raises(_Killed):
        board.incr("bob", 1)  # drops 2026-11-30: archived, then deleted
    monkeypatch.undo()
    board.close()
    with PeriodicLeaderboard.open(tmp_path, "daily", **options) as again:
        assert [p.name for p in again.periods()] == ["2026-12-01"]
        assert again.load_archived("2026-11-30").items() == [("ann", 5)]
        assert sorted(p.name for p in (tmp_path / "periods").iterdir()) == ["2026-12-01"]


def test_durable_cron_period_names_survive_reopen(tmp_path: Path) -> None:
    clock = FakeClock(ts("2026-11-30T07:10:00"))
    with PeriodicLeaderboard.open(tmp_path, "*/30 * * * *", clock=clock, fsync="never") as b:
        b.incr("ann", 1)
    with PeriodicLeaderboard.open(tmp_path, "*/30 * * * *", clock=clock, fsync="never") as b:
        assert [p.name for p in b.periods()] == ["2026-11-30T07:00"]
        assert b.score("ann") == 1


def test_closed_markers_are_made_durable_with_a_directory_fsync(
    tmp_path: Path, periodic_fsyncs: list[tuple[str, list[str]]]
) -> None:
    """A marker's directory entry reaches the disk only with an fsync of its
    directory; without it a power cut could run ``on_close`` twice."""
    calls = periodic_fsyncs
    clock = FakeClock(ts("2026-11-30T12:00:00"))
    with PeriodicLeaderboard.open(tmp_path, "daily", keep=1, fsync="never", clock=clock) as board:
        board.incr("ann", 5)
        clock.t += DAY
        board.tick()
        assert not board.is_open("2026-11-30")
    assert (str(tmp_path / "closed"), ["2026-11-30"]) in calls
    # and the new closed/ directory's own entry, before any marker is in it
    assert any(path == str(tmp_path) and "closed" in names for path, names in calls)


def test_an_archive_is_durable_before_its_period_is_deleted(
    tmp_path: Path, periodic_fsyncs: list[tuple[str, list[str]]]
) -> None:
    """The period's directory is deleted after archiving; the archive's
    directory entry must be on disk first, or a power cut loses the period."""
    calls = periodic_fsyncs
    clock = FakeClock(ts("2026-11-30T12:00:00"))
    with PeriodicLeaderboard.open(tmp_path, "daily", keep=0, fsync="never", clock=clock) as board:
        board.incr("ann", 5)
        clock.t += DAY
        board.incr("bob", 1)  # drops 2026-11-30: archived, then deleted
    archived = (str(tmp_path / "archive"), ["2026-11-30.rkarchive"])
    dropped = next(i for i, (path, _) in enumerate(calls) if path == str(tmp_path / "periods"))
    assert archived in calls[:dropped]


def test_a_reopened_board_never_writes_to_a_period_it_closed(tmp_path: Path) -> None:
    """Reopening must not forget how far time went: a closed period (its
    callback ran, its marker is on disk) stays closed even when the next
    process's clock reads a little earlier, and nothing is written to it."""
    clock = FakeClock(ts("2026-11-30T12:00:00"))
    closed: list[str] = []
    options: dict[str, Any] = {
        "keep": 1,
        "fsync": "never",
        "clock": clock,
        "on_close": lambda p, b: closed.append(p.name),
    }
    with PeriodicLeaderboard.open(tmp_path, "daily", **options) as board:
        board.incr("ann", 5)
        clock.t = ts("2026-12-01T00:00:10")
        board.tick()
    assert closed == ["2026-11-30"]
    clock.t = ts("2026-11-30T23:59:00")  # this process's clock is a minute behind
    with PeriodicLeaderboard.open(tmp_path, "daily", **options) as again:
        again._check()
        assert not again.is_open("2026-11-30")
        assert again.now() >= ts("2026-12-01T00:00:00")
        again.incr("bob", 1)
        assert again.board("2026-11-30").items() == [("ann", 5)]  # final standings kept
        assert again.board("2026-12-01").items() == [("bob", 1)]
        again._check()
    assert closed == ["2026-11-30"]


def test_a_crash_after_deleting_a_dropped_period_leaves_no_closed_marker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed after a dropped period's directory is gone but before its
    closed marker is: the reopen removes the marker of a period it no longer
    holds (it would otherwise stay in ``closed/`` for ever)."""
    clock = FakeClock(ts("2026-11-30T12:00:00"))
    options: dict[str, Any] = {"keep": 0, "fsync": "never", "clock": clock}
    board = PeriodicLeaderboard.open(tmp_path, "daily", **options)
    board.incr("ann", 5)
    clock.t += DAY
    real = store_module.shutil.rmtree

    def killed_after(path: Any, *args: Any, **kwargs: Any) -> None:
        real(path)
        raise _Killed

    monkeypatch.setattr("rankengine.timed.store.shutil.rmtree", killed_after)
    with pytest.raises(_Killed):
        board.incr("bob", 1)  # drops 2026-11-30: archived, deleted, then the marker
    monkeypatch.undo()
    board.close()
    assert (tmp_path / "closed" / "2026-11-30").exists()
    with PeriodicLeaderboard.open(tmp_path, "daily", **options) as again:
        assert [p.name for p in again.periods()] == ["2026-12-01"]
        assert again.load_archived("2026-11-30").items() == [("ann", 5)]
        again._check()
    assert not list((tmp_path / "closed").iterdir())


def test_a_crash_while_archiving_leaves_no_temporary_file(tmp_path: Path) -> None:
    """A kill while an archive is written under its temporary name (the
    cleanup of :func:`write_archive` never runs) leaves
    ``archive/.tmp-*.rkarchive``: the reopen removes it."""
    clock = FakeClock(ts("2026-11-30T12:00:00"))
    options: dict[str, Any] = {"keep": 0, "fsync": "never", "clock": clock}
    with PeriodicLeaderboard.open(tmp_path, "daily", **options) as board:
        board.incr("ann", 5)
    stray = tmp_path / "archive" / ".tmp-k1ll3d.rkarchive"
    stray.write_bytes(archive_module.ARCHIVE_MAGIC)  # cut short by the kill
    clock.t += DAY
    with PeriodicLeaderboard.open(tmp_path, "daily", **options) as again:
        assert not stray.exists()
        again.incr("bob", 1)  # drops 2026-11-30: archived for real
        assert again.load_archived("2026-11-30").items() == [("ann", 5)]
    assert [p.name for p in (tmp_path / "archive").iterdir()] == ["2026-11-30.rkarchive"]


# ----------------------------------------------------------------------
# Model-based: a periodic board against buckets keyed by calendar.period_of(t)
# ----------------------------------------------------------------------
periodic_actions = st.lists(
    st.tuples(
        st.sampled_from(["incr", "incr", "set", "tick", "read"]),
        st.sampled_from(["ann", "bob", "cid"]),
        st.integers(-5, 20),
        st.integers(-2 * HOUR, 4 * HOUR),  # clock step before the action (backwards too)
        st.integers(-HOUR, 3 * HOUR),  # how far back the event's time lies (ahead if < 0)
    ),
    max_size=40,
)


@settings(max_examples=120, deadline=None)
@given(
    actions=periodic_actions,
    keep=st.integers(0, 2),
    grace=st.sampled_from([0, 600, HOUR + 1]),
    late=st.sampled_from(["reject", "drop", "current"]),
    archive=st.booleans(),
)
def test_periodic_board_matches_a_model_of_buckets_by_period(
    actions: list[tuple[str, str, int, int, int]],
    keep: int,
    grace: int,
    late: Any,
    archive: bool,
) -> None:
    import tempfile

    cal = Hourly()
    start = ts("2026-11-30T10:00:00")
    clock = FakeClock(start)
    closed: list[tuple[str, dict[str, int]]] = []
    with tempfile.TemporaryDirectory() as directory:
        board = PeriodicLeaderboard(
            cal,
            keep=keep,
            grace=grace,
            late=late,
            clock=clock,
            # read through the periodic board, as the docs allow
            on_close=lambda p, b: closed.append(
                (p.name, {e.member: e.score for e in board.top(10, period=p)})
            ),
            archive=directory if archive else None,
        )
        model: dict[str, dict[str, int]] = {}  # period name -> member -> score
        held: dict[str, Period] = {}  # periods the board has had a board for
        now = -math.inf
        dropped = 0
        for op, member, value, step, back in actions:
            clock.t += step
            now = max(now, clock.t)
            current = cal.period_of(now)
            t = clock.t - back
            if op in ("incr", "set"):
                period = cal.period_of(t)
                call = board.incr if op == "incr" else board.set
                if period.start > now:
                    with pytest.raises(ValueError, match="starts after now"):
                        call(member, value, t=t)
                    target = None
                elif now < period.end + grace and period.name not in {n for n, _ in closed}:
                    target = period
                elif late == "reject":
                    with pytest.raises(LateEventError):
                        call(member, value, t=t)
                    target = None
                elif late == "drop":
                    assert call(member, value, t=t) in (None, False)
                    dropped += 1
                    target = None
                else:
                    target = current
                if target is not None:
                    call(member, value, t=t)
                    bucket = model.setdefault(target.name, {})
                    bucket[member] = (bucket.get(member, 0) if op == "incr" else 0) + value
                    held[target.name] = target
            elif op == "tick":
                board.tick()
            else:
                assert board.now() == now
            held[current.name] = current
            # callbacks: once per held period whose grace ran out, in period order,
            # with its final standings
            due = sorted((p for p in held.values() if now >= p.end + grace), key=lambda p: p.start)
            assert [name for name, _ in closed] == [p.name for p in due]
            for name, standings in closed:
                assert standings == model.get(name, {})
            assert board.late_dropped == dropped
            # reads: every period still held, current and past, equals its bucket
            oldest = cal.shift(current, -keep).start
            for name, period in held.items():
                if period.start >= oldest or now < period.end + grace:
                    assert dict(board.board(name).items()) == model.get(name, {}), name
                elif archive:  # closed and beyond keep: archived with its final standings
                    assert dict(board.load_archived(name).items()) == model.get(name, {})
                else:
                    with pytest.raises(KeyError):
                        board.board(name)
            board._check()
        if archive:
            gone = {n for n, p in held.items() if p.start < oldest and now >= p.end + grace}
            assert set(board.archived()) == gone


# ----------------------------------------------------------------------
# A refused write leaves nothing behind
# ----------------------------------------------------------------------
def _raising_pairs() -> Any:
    yield "ann", 1
    raise ValueError("the caller's iterable failed")


def _raising_members() -> Any:
    yield "ann"
    raise ValueError("the caller's iterable failed")


#: (label, write) pairs: each write is refused by the period board's own
#: validation (or while its arguments are read), not by routing.
REFUSED_WRITES: list[tuple[str, Any]] = [
    ("set bad member", lambda b, t: b.set(["x"], 1, t=t)),
    ("set NaN score", lambda b, t: b.set("ann", math.nan, t=t)),
    ("set bad when", lambda b, t: b.set("ann", 1, t=t, when="bogus")),
    ("set bad meta value", lambda b, t: b.set("ann", 1, t=t, meta={"k": object()})),
    ("set meta not a dict", lambda b, t: b.set("ann", 1, t=t, meta=[1])),
    ("incr bad member", lambda b, t: b.incr(["x"], 1, t=t)),
    ("incr NaN delta", lambda b, t: b.incr("ann", math.nan, t=t)),
    ("incr str delta", lambda b, t: b.incr("ann", "1", t=t)),
    ("incr bad when", lambda b, t: b.incr("ann", 1, t=t, when="bogus")),
    ("set_many one bad member", lambda b, t: b.set_many([("ann", 1), (["x"], 2)], t=t)),
    ("set_many one NaN", lambda b, t: b.set_many({"ann": 1, "bob": math.nan}, t=t)),
    ("set_many bad when", lambda b, t: b.set_many({"ann": 1}, t=t, when="bogus")),
    ("set_many not pairs", lambda b, t: b.set_many([("ann",)], t=t)),
    ("set_many not iterable", lambda b, t: b.set_many(5, t=t)),
    ("set_many iterable fails", lambda b, t: b.set_many(_raising_pairs(), t=t)),
    ("incr_many one NaN", lambda b, t: b.incr_many([("ann", 1), ("bob", math.nan)], t=t)),
    ("incr_many one bad member", lambda b, t: b.incr_many([("ann", 1), (["x"], 1)], t=t)),
    ("incr_many iterable fails", lambda b, t: b.incr_many(_raising_pairs(), t=t)),
    ("remove bad member", lambda b, t: b.remove(["x"], t=t)),
    ("set_meta absent member", lambda b, t: b.set_meta("zed", {"k": 1}, t=t)),
    ("set_meta bad meta", lambda b, t: b.set_meta("cid", {"k": object()}, t=t)),
    ("remove_many one bad member", lambda b, t: b.remove_many(["cid", ["x"]], t=t)),
    ("remove_many iterable fails", lambda b, t: b.remove_many(_raising_members(), t=t)),
    ("pop_best negative", lambda b, t: b.pop_best(-1, t=t)),
    ("pop_worst not an int", lambda b, t: b.pop_worst(1.5, t=t)),
    ("remove_by_rank zero", lambda b, t: b.remove_by_rank(0, -1, t=t)),
    ("remove_by_score NaN", lambda b, t: b.remove_by_score(None, math.nan, t=t)),
    ("keep_top negative", lambda b, t: b.keep_top(-1, t=t)),
]


def _listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def _daily_in_grace(
    root: Path, durable: bool, on_close: Callable[[Any, Any], None]
) -> tuple[PeriodicLeaderboard, FakeClock, dict[str, Any]]:
    """A daily board (in memory, or durable at ``root``) at 00:30 on
    2026-12-01 with an hour of grace, keeping one closed period; the board,
    its clock and the options to reopen it with."""
    clock = FakeClock(ts("2026-12-01T00:30:00"))
    options: dict[str, Any] = {"keep": 1, "grace": HOUR, "on_close": on_close, "clock": clock}
    if durable:
        board = PeriodicLeaderboard.open(root, "daily", fsync="never", **options)
    else:
        board = PeriodicLeaderboard("daily", **options)
    return board, clock, options


#: (label, write, what it returns) for writes that succeed but change
#: nothing: they leave no period behind either.
NO_OP_WRITES: list[tuple[str, Any, Any]] = [
    ("remove absent", lambda b, t: b.remove("zed", t=t), False),
    ("set when present", lambda b, t: b.set("zed", 1, t=t, when="present"), False),
    ("incr when present", lambda b, t: b.incr("zed", 1, t=t, when="present"), None),
    ("set_many empty", lambda b, t: b.set_many({}, t=t), 0),
    ("set_many when present", lambda b, t: b.set_many({"zed": 1}, t=t, when="present"), 0),
    ("incr_many empty", lambda b, t: b.incr_many([], t=t), {}),
    # the removals below find nothing on an empty board or on {cid: 2}
    ("remove_many absent", lambda b, t: b.remove_many(["zed"], t=t), 0),
    ("pop_best none", lambda b, t: b.pop_best(0, t=t), []),
    ("pop_worst none", lambda b, t: b.pop_worst(0, t=t), []),
    ("remove_by_rank past the end", lambda b, t: b.remove_by_rank(2, -1, t=t), 0),
    ("remove_by_score below all", lambda b, t: b.remove_by_score(None, 1, t=t), 0),
    ("keep_top all", lambda b, t: b.keep_top(1, t=t), 0),
]


@pytest.mark.parametrize("durable", [False, True], ids=["memory", "durable"])
@pytest.mark.parametrize("when", ["open past period", "now"])
@pytest.mark.parametrize(("label", "write"), REFUSED_WRITES, ids=[c[0] for c in REFUSED_WRITES])
def test_a_refused_write_leaves_no_period_behind(
    tmp_path: Path, durable: bool, when: str, label: str, write: Any
) -> None:
    def refused(board: PeriodicLeaderboard, t: float | None) -> None:
        with pytest.raises((TypeError, ValueError, KeyError)):
            write(board, t)

    _leaves_no_period_behind(tmp_path, durable, when, refused)


@pytest.mark.parametrize("durable", [False, True], ids=["memory", "durable"])
@pytest.mark.parametrize("when", ["open past period", "now"])
@pytest.mark.parametrize(
    ("write", "result"), [c[1:] for c in NO_OP_WRITES], ids=[c[0] for c in NO_OP_WRITES]
)
def test_a_write_that_changes_nothing_leaves_no_period_behind(
    tmp_path: Path, durable: bool, when: str, write: Any, result: Any
) -> None:
    def no_op(board: PeriodicLeaderboard, t: float | None) -> None:
        assert write(board, t) == result

    _leaves_no_period_behind(tmp_path, durable, when, no_op)


def _leaves_no_period_behind(
    tmp_path: Path, durable: bool, when: str, write: Callable[[Any, float | None], None]
) -> None:
    """``write(board, t)`` on a daily board in an hour of grace, with ``t``
    in the open past period that has no board yet or ``None`` (now), leaves
    the periods, the files and the close callbacks as they were."""
    # 00:30 on 2026-12-01 with an hour of grace: 2026-11-30 is still open,
    # but nobody wrote to it, so it has no board yet
    closed: list[str] = []
    root = tmp_path / "board"
    board, clock, options = _daily_in_grace(root, durable, lambda p, b: closed.append(p.name))
    board.incr("cid", 2)
    t = ts("2026-11-30T23:30:00") if when == "open past period" else None
    before = [p.name for p in board.periods()]
    assert before == ["2026-12-01"]
    listing = _listing(root) if durable else []

    write(board, t)

    assert [p.name for p in board.periods()] == before
    assert board.board().items() == [("cid", 2)]
    board._check()
    if durable:
        assert _listing(root) == listing
    clock.t = ts("2026-12-02T02:00:00")  # 2026-11-30 and 2026-12-01 are past their grace
    board.tick()
    assert closed == ["2026-12-01"]
    board._check()
    if durable:
        board.close()
        with PeriodicLeaderboard.open(root, "daily", fsync="never", **options) as again:
            assert [p.name for p in again.periods()] == ["2026-12-01", "2026-12-02"]
            assert "2026-11-30" not in again.archived()
            assert closed == ["2026-12-01"]
            again._check()


@pytest.mark.parametrize("durable", [False, True], ids=["memory", "durable"])
def test_a_write_after_a_refused_one_creates_the_period_as_usual(
    tmp_path: Path, durable: bool
) -> None:
    closed: list[tuple[str, list[tuple[Any, Any]]]] = []
    root = tmp_path / "board"
    board, clock, options = _daily_in_grace(
        root, durable, lambda p, b: closed.append((p.name, b.items()))
    )
    late = ts("2026-11-30T23:30:00")
    with pytest.raises(ValueError, match="NaN"):
        board.incr("ann", math.nan, t=late)
    assert board.incr("ann", 3, t=late) == 3
    assert [p.name for p in board.periods()] == ["2026-11-30", "2026-12-01"]
    board._check()
    clock.t = ts("2026-12-01T01:30:00")  # 2026-11-30 closes on time
    board.tick()
    assert closed == [("2026-11-30", [("ann", 3)])]
    board._check()
    if durable:
        board.close()
        with PeriodicLeaderboard.open(root, "daily", fsync="never", **options) as again:
            assert again.board("2026-11-30").items() == [("ann", 3)]
            assert not again.is_open("2026-11-30")
            again._check()
        assert [name for name, _ in closed] == ["2026-11-30"]


def test_a_monthly_board_runs_to_the_end_of_9999_and_refuses_the_clock_past_it() -> None:
    # December 9999 raised "outside the calendar's range": its end,
    # 10000-01-01, was computed as a date, which stops at 9999-12-31
    clock = FakeClock(ts("9999-12-31T23:59:59"))
    board = PeriodicLeaderboard("monthly", clock=clock)
    assert board.incr("ann", 1) == 1
    assert (board.current.name, board.current.end) == ("9999-12", ts("9999-12-31T23:59:59") + 1)
    clock.t += 1  # 10000-01-01: its month cannot be named
    with pytest.raises(ValueError, match="outside the calendar"):
        board.incr("bob", 1)
    clock.t -= 1  # the clock recovers: the refusal changed nothing
    assert board.incr("bob", 2) == 2
    assert [p.name for p in board.periods()] == ["9999-12"]
    assert board.top() == [("bob", 2, 1, None), ("ann", 1, 2, None)]
    board._check()


# ----------------------------------------------------------------------
# The read API of a period
# ----------------------------------------------------------------------
#: (name, read) pairs: each read of a period's board through the periodic
#: board, with options that change the answer (a style, metadata).
PERIOD_READS: list[tuple[str, Callable[[Any, dict[str, Any]], Any]]] = [
    ("top", lambda b, p: b.top(3, style="competition", with_meta=True, **p)),
    ("page", lambda b, p: b.page(2, 2, style="dense", with_meta=True, **p)),
    ("pages", lambda b, p: b.pages(2, **p)),
    ("by_rank", lambda b, p: b.by_rank(2, -2, style="competition", with_meta=True, **p)),
    (
        "by_score",
        lambda b, p: b.by_score(2, 9, max_inclusive=False, offset=1, limit=2, style="dense", **p),
    ),
    ("count", lambda b, p: b.count(2, 9, min_inclusive=False, **p)),
    ("at", lambda b, p: b.at(-1, style="competition", with_meta=True, **p)),
    ("entries", lambda b, p: b.entries(["bob", "zed", "ann"], style="dense", **p)),
    ("percentile", lambda b, p: b.percentile("bob", method="at_or_below", **p)),
    ("meta", lambda b, p: b.meta("ann", **p)),
    ("around", lambda b, p: b.around("bob", 1, 1, fill=True, with_meta=True, **p)),
    ("rank", lambda b, p: b.rank("bob", style="dense", **p)),
]


@pytest.mark.parametrize("durable", [False, True], ids=["memory", "durable"])
@pytest.mark.parametrize(("name", "read"), PERIOD_READS, ids=[c[0] for c in PERIOD_READS])
def test_reads_of_a_period_are_those_of_its_board(
    tmp_path: Path, durable: bool, name: str, read: Any
) -> None:
    board, _, _ = _daily_in_grace(tmp_path / "board", durable, lambda p, b: None)
    yesterday = ts("2026-11-30T23:00:00")
    scores = {"ann": 9, "bob": 5, "cid": 5, "dee": 2, "eve": 1}
    # yesterday in the reverse order, so that a read of the wrong period shows
    for t, day in ((None, "today"), (yesterday, "yesterday")):
        board.set_many({m: v if t is None else 10 - v for m, v in scores.items()}, t=t)
        board.set_meta("ann", {"name": f"Ann {day}"}, t=t)
    try:
        for period in (None, "2026-12-01", "2026-11-30"):
            given = {} if period is None else {"period": period}
            assert read(board, given) == read(board.board(period), {})
        assert read(board, {"period": "2026-11-30"}) != read(board, {}) or name == "pages"
        assert board.meta("ann", period="2026-11-30") == {"name": "Ann yesterday"}
        board._check()
    finally:
        if durable:
            board.close()


def test_set_meta_goes_to_the_period_of_its_time(tmp_path: Path) -> None:
    board, clock, _ = _daily_in_grace(tmp_path / "board", False, lambda p, b: None)
    yesterday = ts("2026-11-30T23:00:00")
    board.set("ann", 1, t=yesterday)
    board.set("ann", 2)
    board.set_meta("ann", {"day": "yesterday"}, t=yesterday)
    assert board.meta("ann", period="2026-11-30") == {"day": "yesterday"}
    assert board.meta("ann") is None
    board.set_meta("ann", {"day": "today"})
    assert board.meta("ann") == {"day": "today"}
    board.set_meta("ann", None, t=yesterday)
    assert board.meta("ann", period="2026-11-30") is None
    clock.t = ts("2026-12-01T02:00:00")  # yesterday is past its grace
    with pytest.raises(LateEventError):
        board.set_meta("ann", {"day": "late"}, t=yesterday)
    assert board.meta("ann", period="2026-11-30") is None
    board._check()


def test_compact_snapshots_every_period_held(tmp_path: Path) -> None:
    root = tmp_path / "board"
    board, _, options = _daily_in_grace(root, True, lambda p, b: None)
    yesterday = ts("2026-11-30T23:00:00")
    for i in range(5):
        board.incr(f"p{i}", i + 1, t=yesterday)
        board.incr(f"p{i}", 10 * i)
    before = {name: board.board(name).items() for name in ("2026-11-30", "2026-12-01")}
    seqs = {name: board.board(name).last_seq for name in before}

    assert board.compact() == seqs
    for name, seq in seqs.items():
        snapshots = read_manifest(str(root / "periods" / name)).snapshots
        assert [s for _, s in snapshots] == [seq]
    board.close()
    assert board.compact() == {}  # closed: nothing to compact

    with PeriodicLeaderboard.open(root, "daily", fsync="never", **options) as again:
        assert {name: again.board(name).items() for name in before} == before
        again._check()
    assert PeriodicLeaderboard("daily").compact() == {}  # in memory


# ----------------------------------------------------------------------
# Review of the periodic board's edges
# ----------------------------------------------------------------------
#: 0001-01-01T00:00Z, the start of the first period of every fixed calendar
#: (it was a Monday, so ISO week 0001-W01 starts there too)
YEAR_ONE = -62_135_596_800


@pytest.mark.parametrize("spec", ["hourly", "daily", "weekly", "monthly"])
def test_the_first_period_of_the_calendar_is_served_with_keep(spec: str) -> None:
    # keep=1 looked one period back from the current one; from the first
    # period of year 1 there is none, and every call raised "outside the
    # calendar's range" although the docs serve every period of years 1..9999
    clock = FakeClock(YEAR_ONE + 100)
    board = PeriodicLeaderboard(spec, keep=1, clock=clock)
    first = board.calendar.period_of(YEAR_ONE)
    assert board.incr("ann", 2) == 2
    assert board.current == first
    assert board.top() == [("ann", 2, 1, None)]
    assert board.top(period=first.name) == [("ann", 2, 1, None)]
    board._check()
    clock.t = first.end  # the second period: the first is kept behind it
    assert board.incr("bob", 1) == 1
    assert [p.name for p in board.periods()] == [first.name, board.current.name]
    assert board.score("ann", period=first) == 2
    board._check()


def test_a_period_of_another_calendar_is_refused_not_read_by_its_name() -> None:
    clock = FakeClock(ts("2026-12-02T12:00:00"))  # a Wednesday of 2026-W49
    weekly = PeriodicLeaderboard("weekly", clock=clock)
    weekly.incr("ann", 1)
    week = weekly.current
    today = Daily().period_of(clock.t)  # a day, not a week of this board
    forged = Period(week.name, week.start, week.start + DAY)  # the right name, wrong bounds
    for bad in (today, forged):
        with pytest.raises(ValueError, match="not a period"):
            weekly.top(period=bad)
        with pytest.raises(ValueError, match="not a period"):
            weekly.board(bad)
        with pytest.raises(ValueError, match="not a period"):
            weekly.is_open(bad)
    # the real period, as a Period or by name, reads as before
    assert weekly.top(period=week) == weekly.top(period=week.name) == [("ann", 1, 1, None)]
    assert weekly.is_open(week)
    weekly._check()


#: (name, write, error): a write with bad input, given its time ``t``, and
#: the error a board gives for that input whenever it comes.
BAD_WRITES: list[tuple[str, Callable[[PeriodicLeaderboard, float], Any], type[Exception]]] = [
    ("set score", lambda b, t: b.set("ann", "x", t=t), TypeError),
    ("set when", lambda b, t: b.set("ann", 1, when="sometimes", t=t), ValueError),  # type: ignore[arg-type]
    ("set meta", lambda b, t: b.set("ann", 1, meta={"k": object()}, t=t), TypeError),
    ("incr member", lambda b, t: b.incr(["ann"], 1, t=t), TypeError),  # type: ignore[arg-type]
    ("set_many", lambda b, t: b.set_many([("ann", 1), ("bob", math.nan)], t=t), ValueError),
    ("incr_many", lambda b, t: b.incr_many({"ann": "x"}, t=t), TypeError),  # type: ignore[dict-item]
    ("remove", lambda b, t: b.remove(1.5, t=t), TypeError),  # type: ignore[arg-type]
    ("set_meta meta", lambda b, t: b.set_meta("ann", {"k": object()}, t=t), TypeError),
    ("set_meta member", lambda b, t: b.set_meta(2.5, None, t=t), TypeError),  # type: ignore[arg-type]
]


@pytest.mark.parametrize(("name", "write", "error"), BAD_WRITES, ids=[w[0] for w in BAD_WRITES])
def test_a_late_write_with_bad_input_is_refused_not_dropped(
    name: str, write: Callable[[PeriodicLeaderboard, float], Any], error: type[Exception]
) -> None:
    # late="drop" ignored a late write before looking at it: a bad one
    # returned as a good one does and counted in late_dropped, while the
    # same call on time raised
    clock = FakeClock(ts("2026-12-01T12:00:00"))
    board = daily_board(clock, late="drop")
    board.set("ann", 5, meta={"k": 1})
    yesterday = ts("2026-11-30T12:00:00")
    with pytest.raises(error):
        write(board, clock.t)  # on time
    with pytest.raises(error):
        write(board, yesterday)  # late: the same refusal
    assert board.late_dropped == 0
    assert [p.name for p in board.periods()] == ["2026-12-01"]
    assert board.top(with_meta=True) == [("ann", 5, 1, {"k": 1})]
    # a good late write is still dropped and counted
    assert board.set("ann", 7, t=yesterday) is False
    assert board.set_meta("ann", {"k": 2}, t=yesterday) is None
    assert board.late_dropped == 2
    assert board.top(with_meta=True) == [("ann", 5, 1, {"k": 1})]
    board._check()


def test_periods_that_fall_out_of_keep_together_are_dropped_oldest_first() -> None:
    # they were dropped in the order of a set of names (the order of their
    # hashes, which changes from run to run): archives, the drop hook and a
    # sliding window's tie order among members whose buckets slid out
    # together followed it
    from rankengine.timed.window import SlidingWindowLeaderboard

    spans = 8
    clock = FakeClock(ts("2026-11-30T00:00:00"))
    board = PeriodicLeaderboard("hourly", keep=spans, clock=clock)
    dropped: list[str] = []
    board._drop_hook = lambda period, _: dropped.append(period.name)
    window = SlidingWindowLeaderboard("hourly", spans + 1, clock=clock)
    for i in range(spans):  # one member an hour
        board.incr(f"m{i}", i + 1)
        window.incr(f"m{i}", i + 1)
        clock.t += HOUR
    held = [p.name for p in board.periods()][:spans]
    for i in range(spans):  # then the same points for all of them
        window.incr(f"m{i}", 100)
    window.refresh()
    clock.t += spans * HOUR  # the first eight hours fall out together
    board.tick()
    window.refresh()
    assert dropped == held
    # equal sums (100 each): the buckets that slid out, oldest first
    assert [e.member for e in window.top(spans)] == [f"m{i}" for i in range(spans)]
    board._check()


def test_an_open_period_nobody_wrote_to_reads_as_empty_beyond_keep() -> None:
    # with keep=0 and a grace longer than a period, the hour before last is
    # still open to writes; read before any write it raised KeyError ("not
    # held in memory") although a write to it would be accepted
    clock = FakeClock(ts("2026-11-30T10:30:00"))
    board = PeriodicLeaderboard("hourly", keep=0, grace=2 * HOUR, clock=clock)
    board.incr("ann", 1)  # the board starts at 10:30: 09:00-10:00 was never held
    assert board.is_open("2026-11-30T09")
    assert board.top(period="2026-11-30T09") == []
    assert board.count(period="2026-11-30T09") == 0
    assert board.incr("bob", 2, t=ts("2026-11-30T09:15:00")) == 2  # the write it reads
    assert board.top(period="2026-11-30T09") == [("bob", 2, 1, None)]
    clock.t = ts("2026-11-30T12:00:00")  # 09:00 closes (and is dropped: keep=0)
    with pytest.raises(KeyError):
        board.top(period="2026-11-30T09")
    with pytest.raises(KeyError):
        board.top(period="2026-11-30T08")  # closed before the board began
    board._check()


# ----------------------------------------------------------------------
# Parity of writes with Leaderboard: removals by members, pops, pruning
# ----------------------------------------------------------------------
#: (name, the write on a Leaderboard given its keyword arguments): each
#: write that removes members, called the same way on the periodic board
#: (with ``t=``) and on a plain board.
REMOVALS: list[tuple[str, Callable[[Any, dict[str, Any]], Any]]] = [
    ("remove_many", lambda b, kw: b.remove_many(["bob", "zed", "ann", "bob"], **kw)),
    ("remove_many none", lambda b, kw: b.remove_many([], **kw)),
    ("pop_best", lambda b, kw: b.pop_best(2, **kw)),
    ("pop_best meta", lambda b, kw: b.pop_best(with_meta=True, **kw)),
    ("pop_best all", lambda b, kw: b.pop_best(99, **kw)),
    ("pop_worst", lambda b, kw: b.pop_worst(2, with_meta=True, **kw)),
    ("pop_worst none", lambda b, kw: b.pop_worst(0, **kw)),
    ("remove_by_rank", lambda b, kw: b.remove_by_rank(2, -2, **kw)),
    ("remove_by_rank clamped", lambda b, kw: b.remove_by_rank(-99, 2, **kw)),
    ("remove_by_rank empty", lambda b, kw: b.remove_by_rank(3, 2, **kw)),
    ("remove_by_score", lambda b, kw: b.remove_by_score(2, 5, max_inclusive=False, **kw)),
    ("remove_by_score open", lambda b, kw: b.remove_by_score(None, 5, **kw)),
    ("remove_by_score none", lambda b, kw: b.remove_by_score(100, None, **kw)),
    ("keep_top", lambda b, kw: b.keep_top(2, **kw)),
    ("keep_top zero", lambda b, kw: b.keep_top(0, **kw)),
    ("keep_top all", lambda b, kw: b.keep_top(9, **kw)),
]

#: A board's rows for the removals: ties (bob and cid), metadata, a float.
ROWS: dict[str, Any] = {"ann": 9, "bob": 5, "cid": 5, "dee": 2.5, "eve": 1}


def _plain_with_rows() -> Leaderboard:
    plain = Leaderboard()
    plain.set_many(ROWS)
    plain.set_meta("ann", {"name": "Ann"})
    plain.set_meta("eve", {"name": "Eve"})
    return plain


@pytest.mark.parametrize("durable", [False, True], ids=["memory", "durable"])
@pytest.mark.parametrize("when", ["now", "open past period"])
@pytest.mark.parametrize(("name", "write"), REMOVALS, ids=[c[0] for c in REMOVALS])
def test_removals_act_on_the_period_of_their_time_as_on_a_leaderboard(
    tmp_path: Path, durable: bool, when: str, name: str, write: Any
) -> None:
    board, _, options = _daily_in_grace(tmp_path / "board", durable, lambda p, b: None)
    yesterday = ts("2026-11-30T23:00:00")  # in its grace: open
    try:
        for t in (None, yesterday):  # the same rows in both periods
            board.set_many(ROWS, t=t)
            board.set_meta("ann", {"name": "Ann"}, t=t)
            board.set_meta("eve", {"name": "Eve"}, t=t)
        t = yesterday if when == "open past period" else None
        other = "2026-12-01" if when == "open past period" else "2026-11-30"
        plain = _plain_with_rows()
        assert write(board, {"t": t}) == write(plain, {})
        target = "2026-11-30" if t is not None else "2026-12-01"
        assert board.board(target).items() == plain.items()
        assert board.top(9, period=target, with_meta=True) == plain.top(9, with_meta=True)
        # the other period is untouched
        assert board.top(9, period=other, with_meta=True) == _plain_with_rows().top(
            9, with_meta=True
        )
        board._check()
    finally:
        if durable:
            board.close()
    if durable:  # the removals were logged: a reopen has them
        with PeriodicLeaderboard.open(
            tmp_path / "board", "daily", fsync="never", **options
        ) as again:
            assert again.board(target).items() == plain.items()


#: (name, write, error): each removal with bad arguments, and what a
#: Leaderboard raises for them.
BAD_REMOVALS: list[tuple[str, Callable[[Any, dict[str, Any]], Any], type[Exception]]] = [
    ("remove_many bad member", lambda b, kw: b.remove_many(["ann", ["x"]], **kw), TypeError),
    ("remove_many a str", lambda b, kw: b.remove_many("ann", **kw), TypeError),
    ("remove_many fails", lambda b, kw: b.remove_many(_raising_members(), **kw), ValueError),
    ("pop_best negative", lambda b, kw: b.pop_best(-1, **kw), ValueError),
    ("pop_best float", lambda b, kw: b.pop_best(1.0, **kw), TypeError),
    ("pop_worst bool", lambda b, kw: b.pop_worst(True, **kw), TypeError),
    ("remove_by_rank zero", lambda b, kw: b.remove_by_rank(0, 2, **kw), ValueError),
    ("remove_by_rank str", lambda b, kw: b.remove_by_rank(1, "2", **kw), TypeError),
    ("remove_by_score NaN", lambda b, kw: b.remove_by_score(math.nan, 5, **kw), ValueError),
    ("remove_by_score str", lambda b, kw: b.remove_by_score("1", None, **kw), TypeError),
    (
        "remove_by_score flag",
        lambda b, kw: b.remove_by_score(1, 5, min_inclusive=1, **kw),
        TypeError,
    ),
    ("keep_top negative", lambda b, kw: b.keep_top(-1, **kw), ValueError),
    ("keep_top None", lambda b, kw: b.keep_top(None, **kw), TypeError),
]


@pytest.mark.parametrize("late", ["reject", "drop", "current"])
@pytest.mark.parametrize(("name", "write", "error"), BAD_REMOVALS, ids=[c[0] for c in BAD_REMOVALS])
def test_a_removal_with_bad_arguments_changes_nothing_on_time_or_late(
    name: str, write: Any, error: type[Exception], late: Any
) -> None:
    plain = _plain_with_rows()
    with pytest.raises(error):
        write(plain, {})  # the plain board's own refusal
    assert plain.items() == _plain_with_rows().items()
    clock = FakeClock(ts("2026-12-01T12:00:00"))
    board = daily_board(clock, late=late, keep=1)
    board.set_many(ROWS)
    yesterday = ts("2026-11-30T12:00:00")  # closed before the board began
    with pytest.raises(error):
        write(board, {})
    for t in (clock.t, ts("2026-12-01T00:00:00")):
        with pytest.raises(error):
            write(board, {"t": t})
    # late: refused as late (reject; current, for a removal that picks its
    # members by the standings), or refused as on time (drop; current, for
    # remove_many)
    as_late = late == "reject" or (late == "current" and not name.startswith("remove_many"))
    with pytest.raises(LateEventError if as_late else error):
        write(board, {"t": yesterday})
    assert board.board().items() == plain.items()
    assert [p.name for p in board.periods()] == ["2026-12-01"]
    assert board.late_dropped == 0
    board._check()


@pytest.mark.parametrize(("name", "write"), REMOVALS, ids=[c[0] for c in REMOVALS])
def test_a_removal_for_a_closed_period_follows_the_late_policy(name: str, write: Any) -> None:
    # a closed period's standings are final: no removal touches them.  Under
    # late="current" a removal by member acts on the current period (as
    # remove and every other write do); one that picks its members by the
    # standings (a pop, by rank or score, keep_top) is refused as late: it
    # would pick them by the current period's standings, so a pop for last
    # week would pay out this week's best.
    clock = FakeClock(ts("2026-11-30T12:00:00"))
    boards = {late: daily_board(clock, late=late, keep=1) for late in ("reject", "drop", "current")}
    for board in boards.values():
        board.set_many(ROWS)
        board.set_meta("ann", {"name": "Ann"})
        board.set_meta("eve", {"name": "Eve"})
    clock.t += DAY  # 2026-11-30 closed, kept behind 2026-12-01
    for board in boards.values():
        board.set_many({"ann": 1, "fay": 7})
    yesterday = ts("2026-11-30T18:00:00")
    today = Leaderboard()
    today.set_many({"ann": 1, "fay": 7})
    final = _plain_with_rows().items()

    with pytest.raises(LateEventError, match="2026-11-30"):
        write(boards["reject"], {"t": yesterday})

    nothing = write(Leaderboard(), {})  # what the write gives on an empty board
    assert write(boards["drop"], {"t": yesterday}) == nothing
    assert boards["drop"].late_dropped == 1

    if name.startswith("remove_many"):
        assert write(boards["current"], {"t": yesterday}) == write(today, {})
    else:
        with pytest.raises(LateEventError, match="2026-11-30"):
            write(boards["current"], {"t": yesterday})
        assert boards["current"].board().items() == [("fay", 7), ("ann", 1)]
    assert boards["current"].board().items() == today.items()

    for late, board in boards.items():
        assert board.board("2026-11-30").items() == final, late
        if late != "current":
            assert board.board().items() == [("fay", 7), ("ann", 1)], late
        board._check()


def test_removals_mark_the_members_they_removed_for_a_sliding_window() -> None:
    # a window over the buckets recomputes the members a write to a bucket
    # touched: a removal by rank or score must say which members it removed
    from rankengine.timed.window import SlidingWindowLeaderboard

    clock = FakeClock(ts("2026-11-30T10:00:00"))
    window = SlidingWindowLeaderboard("hourly", 2, clock=clock, tie_break="member")
    window.buckets.set_many(ROWS)
    clock.t += HOUR  # the hour before stays in the window
    window.buckets.set_many(ROWS)
    window.refresh()
    assert window.score("ann") == 18
    buckets = window.buckets
    assert buckets.remove_many(["ann"]) == 1
    # bob and cid tie: Redis order, by member reversed on a descending board
    assert [e.member for e in buckets.pop_best()] == ["cid"]
    assert [e.member for e in buckets.pop_worst()] == ["eve"]
    assert buckets.remove_by_rank(-1, -1) == 1  # dee
    assert buckets.remove_by_score(5, 5) == 1  # bob
    buckets.set_many({"fay": 3, "gus": 2})
    assert buckets.keep_top(1) == 1  # gus
    window.refresh()
    window._check()  # every member holds its window sum
    # the hour before is whole; this hour holds fay only
    assert dict(window.items()) == {**ROWS, "fay": 3}


# ----------------------------------------------------------------------
# tick() reports every period it closed, a call that raised too
# ----------------------------------------------------------------------
def _two_days_due(on_close: Callable[[Period, Leaderboard], None], **options: Any) -> Any:
    """A daily board with a day of grace, written on 2026-11-30 and
    2026-12-01, its clock at 2026-12-03 when both are due to close in one
    call; the board and the two periods."""
    clock = FakeClock(ts("2026-11-30T12:00:00"))
    board = PeriodicLeaderboard("daily", grace=DAY, keep=3, clock=clock, on_close=on_close)
    board.incr("ann", 1)
    clock.t += DAY
    board.incr("bob", 2)
    clock.t += 2 * DAY
    return board, board.calendar.parse("2026-11-30"), board.calendar.parse("2026-12-01")


def test_a_tick_that_raises_reports_the_periods_it_closed_at_the_next_tick() -> None:
    # the first period closed, then the second one's callback raised: the
    # tick's list of closed periods was lost with the error, and the first
    # period (closed, so not closed again) was in no tick's return value
    calls: list[str] = []

    def flaky(period: Period, board: Leaderboard) -> None:
        calls.append(period.name)
        if period.name == "2026-12-01" and calls.count(period.name) == 1:
            raise RuntimeError("reward service down")

    board, first, second = _two_days_due(flaky)
    with pytest.raises(RuntimeError):
        board.tick()
    # (no call that advances here: it would retry the second callback)
    assert first.name in board._closed and second.name not in board._closed
    assert board.tick() == [first, second]  # oldest first, as they closed
    assert board.tick() == []  # each reported once
    assert calls == ["2026-11-30", "2026-12-01", "2026-12-01"]
    board._check()


def test_periods_a_raising_tick_closed_wait_for_the_next_tick_not_another_call() -> None:
    # another call that closes periods reports none (only tick() does); the
    # periods a raising tick closed stay due to the next tick
    failures = [1]

    def flaky(period: Period, board: Leaderboard) -> None:
        if period.name == "2026-12-01" and failures:
            failures.pop()
            raise RuntimeError("reward service down")

    board, first, second = _two_days_due(flaky)
    with pytest.raises(RuntimeError):
        board.tick()
    assert board.incr("cid", 3) == 3  # closes the second period
    assert second.name in board._closed
    assert board.tick() == [first]
    assert board.tick() == []
    board._check()


def test_a_period_whose_closed_marker_fails_is_still_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the callback ran and the period counts as closed, then writing its
    # marker raised: the period was appended to the tick's list only after
    # the marker, so no tick reported it
    clock = FakeClock(ts("2026-11-30T12:00:00"))
    board = PeriodicLeaderboard.open(tmp_path, "daily", keep=1, clock=clock, fsync="never")
    board.incr("ann", 1)
    store = board._store
    assert store is not None
    mark_closed = store.mark_closed
    broken = [OSError("disk full")]

    def failing(period: Period) -> None:
        if broken:
            raise broken.pop()
        mark_closed(period)

    monkeypatch.setattr(store, "mark_closed", failing)
    clock.t += DAY
    with pytest.raises(OSError, match="disk full"):
        board.tick()
    assert board.tick() == [board.calendar.parse("2026-11-30")]
    assert board.tick() == []
    board._check()
    board.close()
