"""Calendars under random inputs: random calendars of every kind, times
over the whole range, and malformed cron expressions."""

from __future__ import annotations

import itertools
import math
import re
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime, timedelta

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from rankengine.timed.calendars import (
    MAX_CRON_DAYS,
    Calendar,
    Cron,
    Daily,
    Every,
    Hourly,
    Monthly,
    Period,
    Weekly,
    calendar,
)

DAY = 86_400
#: The documented range, years 1..9999, as local POSIX seconds.
FIRST = -62_135_596_800  # 0001-01-01T00:00
LAST = 253_402_300_800  # 10000-01-01T00:00, the first second after it
#: UTC offsets: whole minutes strictly within +-24 h.
MAX_OFFSET = DAY - 60


@contextmanager
def fails_after(seconds: float) -> Iterator[None]:
    """Turn a hang into a test failure (where the platform has SIGALRM)."""
    if not hasattr(signal, "setitimer"):
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize(
    "cal",
    [Hourly(), Daily(utc_offset=-3600), Weekly(), Monthly(), Every(1, origin=7),
     Cron("0 0 * * *")],
    ids=repr,
)  # fmt: skip
@pytest.mark.parametrize(
    "t",
    [1e30, -1e30, 1e300, 10**30, -(10**30), 10**400],
    ids=["1e30", "-1e30", "1e300", "10**30", "-10**30", "10**400"],
)
def test_times_far_outside_the_range_are_refused_promptly(cal: Calendar, t: float) -> None:
    """A time far beyond years 1..9999 (a float of 1e30, a huge int) is
    refused with the documented ValueError, at once: it used to spin for
    hours fixing up a float guess of the period index one period at a
    time, and an int too large for a float raised OverflowError."""
    with fails_after(2), pytest.raises(ValueError, match="outside the calendar's range"):
        cal.period_of(t)


def test_a_far_origin_does_not_slow_every_down() -> None:
    """An origin beyond 2**53 is exact: the index of a period is found with
    integer arithmetic, not by stepping from a rounded float guess."""
    cal = Every(1, origin=10**30 + 1)
    with fails_after(2):
        assert cal.period_of(0.5).start == 0


# ----------------------------------------------------------------------
# Random calendars
# ----------------------------------------------------------------------
@dataclass(frozen=True)
class CronModel:
    """What a cron expression means, built alongside its text."""

    minutes: frozenset[int]
    hours: frozenset[int]
    doms: frozenset[int]
    months: frozenset[int]
    dows: frozenset[int]  # Sunday is 0
    dom_star: bool
    dow_star: bool

    def fires_on(self, d: date) -> bool:
        if d.month not in self.months:
            return False
        dom_ok = d.day in self.doms
        dow_ok = d.isoweekday() % 7 in self.dows
        return dom_ok and dow_ok if self.dom_star or self.dow_star else dom_ok or dow_ok

    def fires_at(self, local: int) -> bool:
        """Whether it fires at this local time (POSIX seconds plus offset)."""
        if local % 60:
            return False
        minute = local // 60 % 1440
        return (
            minute // 60 in self.hours
            and minute % 60 in self.minutes
            and self.fires_on(date(1970, 1, 1) + timedelta(days=local // DAY))
        )

    def ever_fires(self) -> bool:
        """Any day of month in any chosen month (29 February counts: leap
        years come) falls on every weekday in some year, so only the day
        fields combined with "and" can rule out every day."""
        if not (self.dom_star or self.dow_star):
            return True
        return any(d <= (29 if m == 2 else 30 if m in (4, 6, 9, 11) else 31)
                   for m in self.months for d in self.doms)  # fmt: skip


@dataclass(frozen=True)
class Case:
    """A calendar and what it should do, worked out independently."""

    cal: Calendar
    offset: int
    #: no period of the calendar is longer than this many seconds
    longest: int
    #: whether a local time (POSIX seconds plus the offset) starts a period
    starts_at: Callable[[int], bool]
    #: the local start of the period after the one starting at a local time
    following: Callable[[int], int]
    #: the name of the period starting at a local time
    name_of: Callable[[int], str]


def local_date(local: int) -> date:
    return date(1970, 1, 1) + timedelta(days=local // DAY)


def local_datetime(local: int) -> datetime:
    return datetime(1, 1, 1) + timedelta(seconds=local - FIRST)


def next_month(local: int) -> int:
    d = local_date(local)
    if (d.year, d.month) == (9999, 12):
        return LAST  # 10000-01-01, a date ``date`` cannot hold
    first = date(d.year + d.month // 12, d.month % 12 + 1, 1)
    return (first - date(1970, 1, 1)).days * DAY


def cron_day(local: int) -> date:
    """The day holding a local time, for a cron model: a day of year 10000
    (where the last period of 9999 may end) as the same day of 9600, which
    has the same month, day and weekday (400 years are 20,871 whole weeks)."""
    if local >= LAST:
        local -= 146_097 * DAY  # 400 * 365.2425 days
    return local_date(local)


def week_name(local: int) -> str:
    year, week, _ = local_date(local).isocalendar()
    return f"{year:04d}-W{week:02d}"


def next_fire(model: CronModel, local: int) -> int:
    """The first fire strictly after ``local``, by a plain scan."""
    day, second = divmod(local, DAY)
    todays = sorted(h * 3600 + m * 60 for h in model.hours for m in model.minutes)
    for i in range(MAX_CRON_DAYS + 1):
        if model.fires_on(cron_day((day + i) * DAY)):
            later = [x for x in todays if i or x > second]
            if later:
                return (day + i) * DAY + later[0]
    raise AssertionError("no fire found")


#: (lo, hi) of each cron field: minute, hour, day of month, month, day of week
CRON_RANGES = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 7)]
MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
DOWS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")


@st.composite
def offsets(draw: st.DrawFn) -> int:
    return draw(
        st.sampled_from(
            [0, 3600, -5 * 3600, 19_800, 20_700, -34_200, 45_900, MAX_OFFSET, -MAX_OFFSET, 60, -60]
        )
        | st.integers(-MAX_OFFSET // 60, MAX_OFFSET // 60).map(lambda m: m * 60)
    )


def offset_arg(draw: st.DrawFn, seconds: int) -> int | float | timedelta:
    """The offset as a user may pass it: seconds (int or whole float) or a timedelta."""
    forms: list[int | float | timedelta] = [seconds, float(seconds), timedelta(seconds=seconds)]
    return draw(st.sampled_from(forms))


def random_case(draw: st.DrawFn, name: str) -> str:
    return "".join(c.upper() if draw(st.booleans()) else c for c in name)


@st.composite
def cron_field(
    draw: st.DrawFn, lo: int, hi: int, names: tuple[str, ...] = (), name_base: int = 0
) -> tuple[str, set[int]]:
    """A random valid cron field and the values it allows."""

    def value(v: int) -> str:
        if 0 <= v - name_base < len(names) and draw(st.booleans()):
            return random_case(draw, names[v - name_base])
        return str(v)

    items: list[str] = []
    values: set[int] = set()
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["*", "*/n", "a", "a-b", "a-b/n", "a/n"]))
        a = draw(st.integers(lo, hi))
        b = draw(st.integers(a, hi))
        n = draw(st.integers(1, hi - lo + 2) | st.sampled_from([1, 2, 5, 15, 100]))
        if kind == "*":
            items.append("*")
            values.update(range(lo, hi + 1))
        elif kind == "*/n":
            items.append(f"*/{n}")
            values.update(range(lo, hi + 1, n))
        elif kind == "a":
            items.append(value(a))
            values.add(a)
        elif kind == "a-b":
            items.append(f"{value(a)}-{value(b)}")
            values.update(range(a, b + 1))
        elif kind == "a-b/n":
            items.append(f"{value(a)}-{value(b)}/{n}")
            values.update(range(a, b + 1, n))
        else:
            items.append(f"{value(a)}/{n}")
            values.update(range(a, hi + 1, n))
    return ",".join(items), values


MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


@st.composite
def cron_expressions(draw: st.DrawFn) -> tuple[str, CronModel]:
    if draw(st.integers(0, 9)) == 0:
        macro = draw(st.sampled_from(sorted(MACROS)))
        text = random_case(draw, macro)
        fields = [(f, _plain_values(f, i)) for i, f in enumerate(MACROS[macro].split())]
    else:
        names = [(), (), (), MONTHS, DOWS]
        bases = [0, 0, 0, 1, 0]
        fields = [
            draw(cron_field(lo, hi, names[i], bases[i])) for i, (lo, hi) in enumerate(CRON_RANGES)
        ]
        spaces = st.sampled_from([" ", "  ", "\t"])
        text = (
            draw(st.sampled_from(["", " "]))
            + "".join(f + draw(spaces) for f, _ in fields[:-1])
            + fields[-1][0]
        )
    model = CronModel(
        minutes=frozenset(fields[0][1]),
        hours=frozenset(fields[1][1]),
        doms=frozenset(fields[2][1]),
        months=frozenset(fields[3][1]),
        dows=frozenset(d % 7 for d in fields[4][1]),
        dom_star=fields[2][0].startswith("*"),
        dow_star=fields[4][0].startswith("*"),
    )
    return text, model


def _plain_values(field: str, index: int) -> set[int]:
    """Values of a macro's field: ``*`` or one number."""
    lo, hi = CRON_RANGES[index]
    return set(range(lo, hi + 1)) if field == "*" else {int(field)}


FIXED_KINDS: dict[str, tuple[type[Calendar], int]] = {
    "hourly": (Hourly, 3600),
    "daily": (Daily, DAY),
    "weekly": (Weekly, 7 * DAY),
    "monthly": (Monthly, 31 * DAY),
}


def fixed_case(kind: str, cal: Calendar, offset: int) -> Case:
    longest = FIXED_KINDS[kind][1]
    if kind == "hourly":
        return Case(cal, offset, longest, lambda local: local % 3600 == 0,
                    lambda local: local + 3600,
                    lambda local: local_datetime(local).isoformat(timespec="hours"))  # fmt: skip
    if kind == "daily":
        return Case(cal, offset, longest, lambda local: local % DAY == 0,
                    lambda local: local + DAY,
                    lambda local: local_date(local).isoformat())  # fmt: skip
    if kind == "weekly":
        return Case(cal, offset, longest,
                    lambda local: local % DAY == 0 and local_date(local).isoweekday() == 1,
                    lambda local: local + 7 * DAY, week_name)  # fmt: skip
    return Case(cal, offset, longest,
                lambda local: local % DAY == 0 and local_date(local).day == 1,
                next_month, lambda local: local_date(local).isoformat()[:7])  # fmt: skip


@st.composite
def cases(draw: st.DrawFn) -> Case:
    """A random calendar of any kind, built each way a user can build it."""
    offset = draw(offsets())
    kind = draw(st.sampled_from(["hourly", "daily", "weekly", "monthly", "every", "cron"]))
    if kind in FIXED_KINDS:
        cls = FIXED_KINDS[kind][0]
        if draw(st.booleans()):
            cal = cls(offset_arg(draw, offset))
        else:
            spec = draw(st.sampled_from(["", " "])) + random_case(draw, kind)
            cal = calendar(spec, utc_offset=offset_arg(draw, offset))
        assert type(cal) is cls and cal.utc_offset == offset
        return fixed_case(kind, cal, offset)
    if kind == "every":
        length = draw(
            st.sampled_from([1, 60, 3600, 6 * 3600, DAY, 3 * DAY, 7 * DAY, 14 * DAY, 91 * DAY])
            | st.integers(1, 10_000)
            | st.integers(1, 10**10)
        )
        origin = draw(st.just(0) | st.integers(-(10**12), 10**12) | st.integers(-(10**40), 10**40))
        length_arg = draw(st.sampled_from([length, float(length), timedelta(seconds=length)]))
        if draw(st.integers(0, 9)) == 0:  # origins are whole POSIX seconds, as ints only
            with pytest.raises(TypeError, match="origin must be an int"):
                Every(length_arg, origin=float(origin))  # type: ignore[arg-type]
        cal = Every(length_arg, origin=origin, utc_offset=offset_arg(draw, offset))
        assert (cal.length, cal.origin, cal.utc_offset) == (length, origin, offset)
        return Case(cal, offset, length,
                    lambda local: (local - offset - origin) % length == 0,
                    lambda local: local + length,
                    lambda local: local_datetime(local).isoformat(timespec="seconds"))  # fmt: skip
    text, model = draw(cron_expressions())
    if not model.ever_fires():
        with pytest.raises(ValueError, match="never fires"):
            Cron(text, utc_offset=offset)
        assume(False)
    offset_given = offset_arg(draw, offset)
    cal = draw(st.sampled_from([Cron, calendar]))(text, utc_offset=offset_given)
    assert isinstance(cal, Cron) and cal.utc_offset == offset
    return Case(cal, offset, (MAX_CRON_DAYS + 1) * DAY, model.fires_at,
                lambda local: next_fire(model, local),
                lambda local: local_datetime(local).isoformat(timespec="minutes"))  # fmt: skip


def just_before(t: float) -> float:
    return math.nextafter(t, -math.inf)


def times(case: Case) -> st.SearchStrategy[float]:
    """Times anywhere: mostly within years 1..9999 (local), many near the
    ends of that range, some far outside it; ints and floats."""
    lo, hi = FIRST - case.offset, LAST - case.offset  # the range as POSIX seconds
    margin = 3 * case.longest
    inside = st.integers(lo, hi - 1) | st.floats(lo, hi, exclude_max=True)
    recent = st.integers(-(10**10), 10**10) | st.floats(-1e10, 1e10)
    edges = st.sampled_from([lo, hi]).flatmap(
        lambda edge: (
            st.integers(edge - margin, edge + margin) | st.floats(edge - margin, edge + margin)
        )
    )
    outside = (
        st.integers(hi, 10**400)
        | st.integers(-(10**400), lo - 1)
        | st.floats(hi, None, allow_infinity=False)
        | st.floats(None, lo, exclude_max=True, allow_infinity=False)
    )
    return inside | inside | recent | edges | outside


def period_or_none(cal: Calendar, t: float) -> Period | None:
    """The period holding ``t``, or None if ``t`` is outside the calendar's
    range (which must be said with the documented error)."""
    try:
        return cal.period_of(t)
    except ValueError as exc:
        assert "outside the calendar's range" in str(exc), exc
        return None


def check_period(case: Case, t: float) -> Period | None:
    """The laws for the period holding ``t``; returns it (None if ``t`` is
    out of range)."""
    cal, off, longest = case.cal, case.offset, case.longest
    p = period_or_none(cal, t)
    if p is None:
        # Refused only near or beyond the ends of years 1..9999: a period
        # that starts before year 1 or after 9999 cannot be named (the last
        # period of 9999 is served, whatever its end).
        assert not FIRST + longest - off <= t < LAST - off, t
        return None
    if not FIRST - off <= t < LAST - off:
        # Beyond year 9999 only the last period of 9999 (ending in 10000)
        # can hold a time; it is named by its start in 9999.
        assert FIRST <= p.start + off < LAST < p.end + off, (p, t)
    assert type(p.start) is int and type(p.end) is int
    assert p.start <= t < p.end
    assert p.contains(t)
    # Independently: p starts at a boundary, and ends at the next one.
    assert case.starts_at(p.start + off), p
    assert p.end + off == case.following(p.start + off), p
    assert p.name == case.name_of(p.start + off), p
    assert cal.parse(p.name) == p
    assert cal.period_of(p.start) == p
    assert cal.period_of(just_before(p.end)) == p
    assert cal.period_of(p.start + (p.end - p.start) / 2) == p
    after = period_or_none(cal, p.end)
    assert after != p
    if after is None:
        assert p.end + off + longest >= LAST, p  # the next period would end after 9999
    else:
        assert cal.next(p) == after and after.start == p.end
    before = period_or_none(cal, p.start - 1)
    if before is None:
        assert p.start + off - longest < FIRST, p  # the previous would start before year 1
    else:
        assert cal.previous(p) == before and before.end == p.start
    return p


def walk(cal: Calendar, p: Period, steps: int, forward: bool) -> list[Period]:
    """``p`` and up to ``steps`` periods after (or before) it, stopping at the
    end of the calendar's range."""
    out = [p]
    for _ in range(steps):
        try:
            p = cal.next(p) if forward else cal.previous(p)
        except ValueError as exc:
            assert "outside the calendar's range" in str(exc)
            break
        out.append(p)
    return out if forward else out[::-1]


# ----------------------------------------------------------------------
# The laws, for random calendars and times
# ----------------------------------------------------------------------
@settings(max_examples=250, deadline=None)
@given(case=cases(), data=st.data())
def test_random_calendar_laws(case: Case, data: st.DataObject) -> None:
    cal = case.cal
    t = data.draw(times(case), label="t")
    p = check_period(case, t)
    if p is None:
        return
    # The same laws right at the period's boundaries.
    for u in (p.start, just_before(p.end), p.end, p.start - 1, just_before(p.start)):
        check_period(case, u)
    # Consecutive periods tile time: no gap, no overlap; each name is one period's.
    steps = data.draw(st.integers(1, 4), label="steps")
    run = walk(cal, p, steps, forward=False)[:-1] + walk(cal, p, steps, forward=True)
    for a, b in itertools.pairwise(run):
        assert a.end == b.start, (a, b)
        assert a.start < a.end
    names = [q.name for q in run]
    assert len(set(names)) == len(run), names
    # ISO 8601 names with four-digit years sort in time order.
    assert names == sorted(names), names
    assert all(cal.parse(q.name) == q for q in run)
    assert re.fullmatch(r"\d{4}-[-\dWT:]+", p.name), p.name


# ----------------------------------------------------------------------
# Malformed cron expressions
# ----------------------------------------------------------------------
JUNK = "#?LW.+!$%^&()[]{}|;:'\"<>~`=_"


@st.composite
def bad_fields(draw: st.DrawFn, index: int) -> str:
    """A field that no valid expression may have at position ``index``."""
    lo, hi = CRON_RANGES[index]
    number = st.integers(lo, hi).map(str)
    too_big = st.integers(hi + 1, 10**30).map(str)
    kind = draw(st.sampled_from(
        ["out of range", "reversed", "bad step", "empty item", "junk", "bad name", "dangling"]
    ))  # fmt: skip
    if kind == "out of range":
        low = [str(lo - 1)] if lo > 0 else []
        bad = draw(too_big | st.sampled_from(low or [str(hi + 1)]))
        return draw(st.sampled_from([bad, f"{bad}-{hi}", f"{lo}-{bad}", f"{bad}/2"]))
    if kind == "reversed":
        a = draw(st.integers(lo + 1, hi))
        return f"{a}-{draw(st.integers(lo, a - 1))}"
    if kind == "bad step":
        body = draw(st.sampled_from(["*", f"{lo}-{hi}", str(lo)]))
        step = draw(st.sampled_from(["", "0", "00", "x", "-1", "1.5", "2/3", "*", "2a"]))
        return f"{body}/{step}"
    if kind == "empty item":
        item = draw(number)
        return draw(st.sampled_from([f",{item}", f"{item},", f"{item},,{item}", ","]))
    if kind == "junk":
        item = draw(number | st.just("*"))
        char = draw(st.sampled_from(JUNK))
        return draw(st.sampled_from([item + char, char + item, char, f"{item}{char}{item}"]))
    if kind == "bad name":
        names = ["FOO", "MONDAY", "JANUARY", "SU", "J"]
        if index != 3:
            names.append(draw(st.sampled_from(MONTHS)))
        if index != 4:
            names.append(draw(st.sampled_from(DOWS)))
        return draw(st.sampled_from(names))
    return draw(st.sampled_from(["-", f"{lo}-", f"-{hi}", "*-1", "1-*", "1-2-3", "/"]))


@st.composite
def bad_cron_expressions(draw: st.DrawFn) -> str:
    fields = [
        draw(st.sampled_from(["*", str(lo), f"{lo}-{hi}", "*/2", f"{lo},{hi}", f"{hi}/3"]))
        for lo, hi in CRON_RANGES
    ]
    mistake = draw(st.sampled_from(["field", "field", "count", "macro"]))
    if mistake == "field":
        index = draw(st.integers(0, 4))
        fields[index] = draw(bad_fields(index))
    elif mistake == "count":
        count = draw(st.sampled_from([0, 1, 2, 3, 4, 6, 7, 8]))
        fields = (fields * 2)[:count]
    else:
        return draw(st.sampled_from(["@", "@often", "@hourly *", "@daily2", "@ yearly", "dailyx"]))
    return " ".join(fields)


@settings(max_examples=200, deadline=None)
@given(expression=bad_cron_expressions(), offset=offsets())
def test_malformed_cron_expressions_raise_value_error(expression: str, offset: int) -> None:
    for make in (Cron, calendar):
        with pytest.raises(ValueError) as info:
            make(expression, utc_offset=offset)
        assert str(info.value), expression


@pytest.mark.parametrize(
    "expression",
    [
        "\u0663 * * * *",  # Arabic-Indic 3: int() and isdigit() take it for 3
        "\uff10 \uff10 * * *",  # fullwidth 0 0
        "0 0 1\u0660 * *",  # 1 and an Arabic-Indic 0
        "0 0 * 1-\u0661\u0662 *",  # a range to Arabic-Indic 12
        "*/\u0663 * * * *",  # a step
        "0-30/\uff15 * * * *",
        "\u00b3 * * * *",  # superscript 3: isdigit() takes it, int() does not
        "*/\u00b2 * * * *",
        "0 0 * * \u017fun",  # long s: "\u017fun".upper() == "SUN"
        "0 0 1 \u017fep *",
    ],
)
def test_cron_values_are_ascii_digits_or_names(expression: str) -> None:
    """Only ASCII digits (and ASCII month and weekday names) are cron values:
    non-ASCII digits were read as the digits they stand for, and a
    superscript one raised int()'s own message."""
    for make in (Cron, calendar):
        with pytest.raises(ValueError, match=r"^bad cron (value|step) "):
            make(expression)


@pytest.mark.parametrize(
    ("cal", "name"),
    [
        (Hourly(), "2026-01-31T\uff10\uff17"),
        (Daily(), "\uff12\uff10\uff12\uff16-01-31"),
        (Weekly(), "\u0662\u0660\u0662\u0666-W01"),
        (Weekly(), "2026-W\u0660\u0661"),
        (Monthly(), "2026-\u0660\u0661"),
        (Every(60), "2026-01-31T07:00:\uff10\uff10"),
        (Cron("* * * * *"), "2026-01-31T07:0\u0660"),
    ],
    ids=repr,
)
def test_period_names_are_ascii_digits_only(cal: Calendar, name: str) -> None:
    with pytest.raises(ValueError, match="is not a period name"):
        cal.parse(name)


# ----------------------------------------------------------------------
# The last period of year 9999
# ----------------------------------------------------------------------
def local_seconds(*when: int) -> int:
    """Local POSIX seconds of a date and time of years 1..9999."""
    return int((datetime(*when) - datetime(1970, 1, 1)).total_seconds())


@pytest.mark.parametrize("offset", [0, 3600, -5 * 3600, MAX_OFFSET, -MAX_OFFSET])
@pytest.mark.parametrize(
    ("spec", "name", "start", "end"),
    [
        ("monthly", "9999-12", local_seconds(9999, 12, 1), LAST),
        ("0 0 * * *", "9999-12-31T00:00", LAST - DAY, LAST),
        ("@monthly", "9999-12-01T00:00", local_seconds(9999, 12, 1), LAST),
        # the next fire is in year 10000: the period ends there, as the
        # last ISO week of 9999 does (9999-W52 ends on 10000-01-03)
        ("0 12 * * *", "9999-12-31T12:00", LAST - DAY // 2, LAST + DAY // 2),
        ("30 6 1 1 *", "9999-01-01T06:30", local_seconds(9999, 1, 1, 6, 30), LAST + 23_400),
        # 10000 is a leap year (divisible by 400): its 29 February is the next fire
        ("0 0 29 2 *", "9996-02-29T00:00", local_seconds(9996, 2, 29), LAST + 59 * DAY),
        ("weekly", "9999-W52", local_seconds(9999, 12, 27), LAST + 2 * DAY),
    ],
)
def test_the_last_period_of_9999_is_served(
    spec: str, name: str, start: int, end: int, offset: int
) -> None:
    """Every name of years 1..9999 parses back to its period, the last
    ones included: December 9999 (and a cron period whose next fire is in
    year 10000) raised "outside the calendar's range" although its name and
    start are in 9999.  The period after it is outside the range, and
    asking for it changes nothing."""
    cal = calendar(spec, utc_offset=offset)
    last_second = LAST - 1 - offset  # 9999-12-31T23:59:59 local
    want = Period(name, start - offset, end - offset)
    assert cal.period_of(last_second) == want
    assert cal.parse(name) == want
    assert cal.period_of(want.start) == want
    assert cal.period_of(just_before(want.end)) == want
    with pytest.raises(ValueError, match="outside the calendar's range"):
        cal.next(want)
    assert cal.period_of(last_second) == want
    assert cal.previous(want).end == want.start
