"""Calendars: how time is cut into named periods (hours, days, ISO weeks,
months, fixed lengths, cron schedules).

Time rule
---------
Timestamps are POSIX seconds (``int`` or ``float``).  All period arithmetic
is in UTC, optionally shifted by one *fixed* offset (``utc_offset=3600`` puts
midnight at 23:00 UTC all year).  There are no time zones and no daylight
saving: a day is always 86,400 seconds and names never repeat or skip.

==================  =======================  ==========================
calendar            one period               name of a period
==================  =======================  ==========================
``"hourly"``        an hour                  ``2026-11-30T07``
``"daily"``         a day                    ``2026-11-30``
``"weekly"``        ISO week, Monday start   ``2026-W33`` (ISO week-year)
``"monthly"``       a calendar month         ``2026-11``
:class:`Every`      fixed length, any origin ``2026-11-30T06:00:00``
:class:`Cron`       between two cron fires   ``2026-11-30T07:30``
==================  =======================  ==========================

ISO week 53 belongs to its ISO year: 2027-01-01 (a Friday) is in ``2026-W53``.
Names are ISO 8601 with four-digit years (``0968-09``), so every name of
years 1..9999 parses back to its period.  The last period of 9999 may end
in year 10000 (``9999-12`` at 10000-01-01, ``9999-W52`` on 10000-01-03, a
cron period at its next fire); a time past it, whose period would be named
in year 10000, is refused with ``ValueError`` (as is one whose period would
start before year 1), and the refusal changes nothing.

>>> week = calendar("weekly")
>>> week.period_of(1_798_761_600)           # 2027-01-01T00:00Z
Period(name='2026-W53', start=1798416000, end=1799020800)
>>> calendar("daily", utc_offset=-5 * 3600).period_of(1_798_761_600).name
'2026-12-31'
"""

from __future__ import annotations

import bisect
import math
import re
from abc import ABC, abstractmethod
from calendar import monthrange
from datetime import date, datetime, timedelta
from typing import Final, NamedTuple

__all__ = [
    "MAX_CRON_DAYS",
    "Calendar",
    "Cron",
    "Daily",
    "Every",
    "Hourly",
    "Monthly",
    "Period",
    "Weekly",
    "calendar",
    "check_time",
]

_DAY: Final = 86_400
_HOUR: Final = 3_600
_EPOCH: Final = date(1970, 1, 1)
#: 1970-01-01 was a Thursday, so the ISO week holding it began 3 days earlier.
_EPOCH_WEEKDAY: Final = 3
#: The last day ``date`` holds (9999-12-31), as days since the epoch.
_LAST_DAY: Final = (date.max - _EPOCH).days
#: Days in 400 Gregorian years: a whole number of weeks, so a day and the
#: day this many days earlier share month, day of month and weekday.  A
#: cron search that runs past 9999-12-31 (the end of the last period of
#: 9999 is a fire in year 10000) asks about the day 400 years earlier.
_CYCLE_DAYS: Final = 146_097

#: A cron expression may fire only on 29 February of one weekday ("0 0 29 2
#: */7": a restricted day of month and a ``*`` weekday field must both match,
#: as in Vixie cron).  Such a day comes every 28 years, and 40 years
#: (14,609 days) apart across a century that is not a leap year (2088 ->
#: 2128); no firing schedule has a longer gap.  So a search for the next or
#: previous fire looks at most this many days away before declaring "never".
MAX_CRON_DAYS: Final = 14_609 + 1


class Period(NamedTuple):
    """One period of a calendar: ``start <= t < end`` in POSIX seconds."""

    name: str
    start: int
    end: int

    def contains(self, t: float) -> bool:
        """True when ``t`` lies in the period.

        >>> Period("x", 10, 20).contains(19.5), Period("x", 10, 20).contains(20)
        (True, False)
        """
        return self.start <= t < self.end


def check_time(t: object, what: str = "t") -> float:
    """``t`` (POSIX seconds, an int or a float) unchanged, refusing a bool,
    a non-number or a non-finite value with a message that names ``what``.

    Runtime complexity: O(1)

    >>> check_time(5), check_time(1.5)
    (5, 1.5)
    """
    if (
        isinstance(t, bool)
        or not isinstance(t, (int, float))
        or (isinstance(t, float) and not math.isfinite(t))  # an int is finite, however large
    ):
        raise ValueError(f"{what} must be a finite number of POSIX seconds, not {t!r}")
    return t


def _check_offset(utc_offset: int | timedelta) -> int:
    seconds = utc_offset.total_seconds() if isinstance(utc_offset, timedelta) else utc_offset
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise TypeError(f"utc_offset must be seconds or a timedelta, not {utc_offset!r}")
    if not -_DAY < seconds < _DAY or seconds != int(seconds) or int(seconds) % 60:
        raise ValueError(f"utc_offset must be whole minutes within +-24 h, not {utc_offset!r}")
    return int(seconds)


def _floor_index(t: float, origin: int, length: int) -> int:
    """The ``i`` with ``origin + i * length <= t < origin + (i + 1) * length``.

    Boundaries are whole seconds, so ``t`` may be replaced by its floor (exact
    for any finite float), and the rest is exact integer arithmetic: no float
    guess that rounds across a boundary, however large ``t`` or ``origin``.

    >>> _floor_index(-0.5, 0, 10), _floor_index(86_399.9, 0, 86_400)
    (-1, 0)
    >>> _floor_index(10**30, 1, 10**29)
    9
    """
    return (math.floor(t) - origin) // length


def _day_date(day: int) -> date:
    return _EPOCH + timedelta(days=day)


def _date_day(d: date) -> int:
    return (d - _EPOCH).days


class Calendar(ABC):
    """Cuts the time line into named periods, in UTC plus a fixed offset.

    Subclasses give ``_bounds`` (the period holding a local time) and the
    naming; the base class adds caching, validation and name parsing.
    """

    def __init__(self, utc_offset: int | timedelta = 0) -> None:
        self._offset = _check_offset(utc_offset)
        self._last: Period | None = None

    @property
    def utc_offset(self) -> int:
        """Seconds added to UTC before cutting periods (a fixed offset, no DST)."""
        return self._offset

    @abstractmethod
    def _bounds(self, t: float) -> tuple[int, int]:
        """``(start, end)`` in POSIX seconds of the period holding ``t``."""

    @abstractmethod
    def _name(self, start: int) -> str:
        """The name of the period that starts at ``start``."""

    @abstractmethod
    def _parse_start(self, name: str) -> int:
        """The start (POSIX seconds) of the period named ``name``."""

    def period_of(self, t: float) -> Period:
        """The period holding ``t``.

        Runtime complexity: O(1) (cached for consecutive calls in one period;
        a :class:`Cron` calendar may scan days).

        >>> Daily().period_of(86_399.5)
        Period(name='1970-01-01', start=0, end=86400)
        >>> last = Monthly().period_of(253_402_300_799)   # 9999-12-31T23:59:59Z
        >>> last.name, last.end                            # ends at 10000-01-01
        ('9999-12', 253402300800)
        >>> Monthly().period_of(last.end)
        Traceback (most recent call last):
        ...
        ValueError: t=253402300800 is outside the calendar's range (years 1..9999)

        :raises ValueError: ``t`` is not a finite number, or its period
            cannot be named (it would start before year 1 or after 9999).
        """
        t = check_time(t)
        last = self._last
        if last is not None and last.start <= t < last.end:
            return last
        try:
            start, end = self._bounds(t)
            period = Period(self._name(start), start, end)
        except (OverflowError, ValueError) as exc:
            raise ValueError(f"t={t} is outside the calendar's range (years 1..9999)") from exc
        self._last = period
        return period

    def parse(self, name: str) -> Period:
        """The period with this name; ``ValueError`` if no period is so named.

        >>> Monthly().parse("2026-02")
        Period(name='2026-02', start=1769904000, end=1772323200)
        """
        try:
            start = self._parse_start(name)
        except (TypeError, ValueError, OverflowError):
            raise ValueError(f"{name!r} is not a period name of {self!r}") from None
        period = self.period_of(start)
        if period.name != name or period.start != start:
            raise ValueError(f"{name!r} is not a period name of {self!r}")
        return period

    def next(self, period: Period) -> Period:
        """The period right after ``period``."""
        return self.period_of(period.end)

    def previous(self, period: Period) -> Period:
        """The period right before ``period`` (boundaries are whole seconds,
        so the second before the start belongs to it)."""
        return self.period_of(period.start - 1)

    def shift(self, period: Period, steps: int) -> Period:
        """The period ``steps`` periods later (negative: earlier).

        Runtime complexity: O(|steps|)

        >>> cal = Weekly()
        >>> cal.shift(cal.parse("2026-W01"), -1).name
        '2025-W52'
        """
        for _ in range(abs(steps)):
            period = self.next(period) if steps > 0 else self.previous(period)
        return period

    def _local_datetime(self, start: int) -> datetime:
        return datetime(1970, 1, 1) + timedelta(seconds=start + self._offset)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(utc_offset={self._offset})"


class Hourly(Calendar):
    """Hours, named ``YYYY-MM-DDTHH`` (local hour under the fixed offset).

    >>> Hourly().period_of(7 * 3600 + 59).name
    '1970-01-01T07'
    """

    def _bounds(self, t: float) -> tuple[int, int]:
        i = _floor_index(t, -self._offset, _HOUR)
        return i * _HOUR - self._offset, (i + 1) * _HOUR - self._offset

    def _name(self, start: int) -> str:
        return self._local_datetime(start).isoformat(timespec="hours")

    def _parse_start(self, name: str) -> int:
        local = datetime.strptime(name, "%Y-%m-%dT%H")
        return int((local - datetime(1970, 1, 1)).total_seconds()) - self._offset


class Daily(Calendar):
    """Days from local midnight, named ``YYYY-MM-DD``.

    >>> Daily(utc_offset=3600).period_of(23 * 3600).name
    '1970-01-02'
    """

    def _bounds(self, t: float) -> tuple[int, int]:
        i = _floor_index(t, -self._offset, _DAY)
        return i * _DAY - self._offset, (i + 1) * _DAY - self._offset

    def _name(self, start: int) -> str:
        return _day_date((start + self._offset) // _DAY).isoformat()

    def _parse_start(self, name: str) -> int:
        if len(name) != 10:
            raise ValueError(name)
        return _date_day(date.fromisoformat(name)) * _DAY - self._offset


class Weekly(Calendar):
    """ISO weeks (Monday 00:00 local to the next Monday), named ``YYYY-Www``
    with the ISO week-year, so week 53 keeps its year.

    >>> Weekly().parse("2026-W53").end == Weekly().parse("2027-W01").start
    True
    """

    def _bounds(self, t: float) -> tuple[int, int]:
        week = 7 * _DAY
        origin = -_EPOCH_WEEKDAY * _DAY - self._offset
        i = _floor_index(t, origin, week)
        return origin + i * week, origin + (i + 1) * week

    def _name(self, start: int) -> str:
        year, week, _ = _day_date((start + self._offset) // _DAY).isocalendar()
        return f"{year:04d}-W{week:02d}"

    def _parse_start(self, name: str) -> int:
        match = re.fullmatch(r"([0-9]{4})-W([0-9]{2})", name)
        if match is None:
            raise ValueError(name)
        monday = date.fromisocalendar(int(match[1]), int(match[2]), 1)
        return _date_day(monday) * _DAY - self._offset


class Monthly(Calendar):
    """Calendar months, named ``YYYY-MM``.

    >>> [Monthly().period_of(t).name for t in (1_772_323_199, 1_772_323_200)]
    ['2026-02', '2026-03']
    """

    def _month_start(self, year: int, month: int) -> int:
        return _date_day(date(year, month, 1)) * _DAY - self._offset

    def _bounds(self, t: float) -> tuple[int, int]:
        day = _day_date(_floor_index(t, -self._offset, _DAY))
        first = _date_day(day.replace(day=1))
        # the end counted in days, not as the next month's date: December
        # 9999 ends on 10000-01-01, past the last date ``date`` holds
        last = first + monthrange(day.year, day.month)[1]
        return first * _DAY - self._offset, last * _DAY - self._offset

    def _name(self, start: int) -> str:
        return _day_date((start + self._offset) // _DAY).isoformat()[:7]

    def _parse_start(self, name: str) -> int:
        match = re.fullmatch(r"([0-9]{4})-([0-9]{2})", name)
        if match is None:
            raise ValueError(name)
        return self._month_start(int(match[1]), int(match[2]))


class Every(Calendar):
    """Periods of a fixed number of whole seconds counted from ``origin``
    (POSIX seconds), named by their local start ``YYYY-MM-DDTHH:MM:SS``.

    A 6-hour shift pattern, a 3-day event, a 14-day season::

    >>> season = Every(14 * 86400, origin=1_767_225_600)   # from 2026-01-01
    >>> season.period_of(1_767_225_600 + 15 * 86400).name
    '2026-01-15T00:00:00'
    """

    def __init__(
        self, length: int | timedelta, *, origin: int = 0, utc_offset: int | timedelta = 0
    ) -> None:
        super().__init__(utc_offset)
        seconds = length.total_seconds() if isinstance(length, timedelta) else length
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
            raise TypeError(f"length must be seconds or a timedelta, not {length!r}")
        if not 1 <= seconds < math.inf or seconds != int(seconds):
            raise ValueError(f"length must be a positive whole number of seconds, not {length!r}")
        if isinstance(origin, bool) or not isinstance(origin, int):
            raise TypeError(f"origin must be an int (POSIX seconds), not {origin!r}")
        self.length = int(seconds)
        self.origin = origin

    def _bounds(self, t: float) -> tuple[int, int]:
        i = _floor_index(t, self.origin, self.length)
        return self.origin + i * self.length, self.origin + (i + 1) * self.length

    def _name(self, start: int) -> str:
        return self._local_datetime(start).isoformat(timespec="seconds")

    def _parse_start(self, name: str) -> int:
        local = datetime.strptime(name, "%Y-%m-%dT%H:%M:%S")
        return int((local - datetime(1970, 1, 1)).total_seconds()) - self._offset

    def __repr__(self) -> str:
        return f"Every({self.length}, origin={self.origin}, utc_offset={self._offset})"


_CRON_MACROS: Final = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_MONTH_NAMES: Final = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT",
                       "NOV", "DEC")  # fmt: skip
_DOW_NAMES: Final = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")


def _ascii_digits(text: str) -> bool:
    """True when ``text`` is one or more ASCII digits.  ``str.isdigit()``
    alone also takes other scripts' digits (Arabic-Indic ``'\u0663'``,
    fullwidth ``'\uff13'``), which ``int()`` reads as ``3``, and
    superscripts (``'\u00b3'``), which ``int()`` refuses.

    Runtime complexity: O(len(text))

    >>> _ascii_digits("15"), _ascii_digits("\u0663"), _ascii_digits("\u00b3"), _ascii_digits("")
    (True, False, False, False)
    """
    return text.isascii() and text.isdigit()


def _cron_field(text: str, lo: int, hi: int, names: tuple[str, ...], name_base: int) -> set[int]:
    """Parse one cron field (``*``, ``5``, ``1-5``, ``*/15``, ``10-50/20``,
    ``MON-FRI``, comma lists) into the set of values it allows."""
    values: set[int] = set()

    def number(token: str) -> int:
        upper = token.upper()
        if token.isascii() and upper in names:  # "\u017fun".upper() is "SUN"
            return names.index(upper) + name_base
        if not _ascii_digits(token):
            raise ValueError(f"bad cron value {token!r}")
        return int(token)

    for item in text.split(","):
        body, slash, step_text = item.partition("/")
        if slash and not _ascii_digits(step_text):  # "5/" and "*/x" are typos, not "5" and "*"
            raise ValueError(f"bad cron step in {item!r}")
        step = int(step_text) if slash else 1
        if step < 1:
            raise ValueError(f"bad cron step in {item!r}")
        if body == "*":
            first, last = lo, hi
        elif "-" in body:
            a, b = body.split("-", 1)
            first, last = number(a), number(b)
        else:
            first = number(body)
            last = hi if slash else first
        if not lo <= first <= last <= hi:
            raise ValueError(f"cron field {item!r} is outside {lo}..{hi}")
        values.update(range(first, last + 1, step))
    return values


class Cron(Calendar):
    """Periods between consecutive fires of a cron expression (a reset
    schedule, as in Nakama), named by their start ``YYYY-MM-DDTHH:MM``.

    A documented subset of cron, evaluated in UTC plus the fixed offset:
    five fields ``minute hour day-of-month month day-of-week``; each field is
    ``*``, a number (ASCII digits only), a range ``a-b``, a step ``*/n`` or
    ``a-b/n`` or ``a/n``, or a comma list of those; month and weekday names
    (``JAN``, ``MON``, ASCII letters in any case);
    weekday 0 or 7 is Sunday; the macros ``@hourly @daily @midnight @weekly
    @monthly @yearly @annually``.  As in Vixie cron, when both day fields are
    restricted (neither starts with ``*``) a day matches if *either* does.
    Not supported: seconds, years, ``L``, ``W``, ``#``, ``?``, time zones.

    Runtime complexity: O(days to the neighbouring fires) per new period,
    at most :data:`MAX_CRON_DAYS`; consecutive writes in one period are O(1).

    >>> reset = Cron("0 12 * * FRI")       # weekly event, resets Friday noon
    >>> p = reset.period_of(1_798_761_600)     # Friday 2027-01-01 00:00
    >>> p.name, reset.next(p).name
    ('2026-12-25T12:00', '2027-01-01T12:00')
    """

    def __init__(self, expression: str, *, utc_offset: int | timedelta = 0) -> None:
        super().__init__(utc_offset)
        if not isinstance(expression, str):
            raise TypeError(f"cron expression must be a str, not {expression!r}")
        self.expression = expression
        text = _CRON_MACROS.get(expression.strip().lower(), expression)
        fields = text.split()
        if len(fields) != 5:
            raise ValueError(f"cron expression needs 5 fields, got {expression!r}")
        minutes = _cron_field(fields[0], 0, 59, (), 0)
        hours = _cron_field(fields[1], 0, 23, (), 0)
        self._doms = frozenset(_cron_field(fields[2], 1, 31, (), 0))
        self._months = frozenset(_cron_field(fields[3], 1, 12, _MONTH_NAMES, 1))
        self._dows = frozenset(d % 7 for d in _cron_field(fields[4], 0, 7, _DOW_NAMES, 0))
        self._dom_star = fields[2].startswith("*")
        self._dow_star = fields[4].startswith("*")
        #: minutes of the day at which it fires, ascending
        self._day_minutes = sorted(h * 60 + m for h in hours for m in minutes)
        self._next_fire(0)  # raises ValueError if it never fires

    def _fires_on(self, day: int) -> bool:
        # past 9999-12-31 (the next fire after the last one of 9999): the
        # day 400 years earlier has the same month, day and weekday
        d = _day_date(day - _CYCLE_DAYS if day > _LAST_DAY else day)
        if d.month not in self._months:
            return False
        dom_ok = d.day in self._doms
        dow_ok = (d.weekday() + 1) % 7 in self._dows  # Python: Monday=0; cron: Sunday=0
        if self._dom_star or self._dow_star:
            return dom_ok and dow_ok
        return dom_ok or dow_ok

    def _next_fire(self, minute: int) -> int:
        """The first fire (local minutes since the epoch) strictly after ``minute``."""
        target = minute + 1
        day, first = divmod(target, 1440)
        for i in range(MAX_CRON_DAYS):
            if self._fires_on(day + i):
                j = bisect.bisect_left(self._day_minutes, first if i == 0 else 0)
                if j < len(self._day_minutes):
                    return (day + i) * 1440 + self._day_minutes[j]
        raise ValueError(f"cron expression {self.expression!r} never fires")

    def _prev_fire(self, minute: int) -> int:
        """The last fire (local minutes since the epoch) at or before ``minute``."""
        day, last = divmod(minute, 1440)
        for i in range(MAX_CRON_DAYS):
            if self._fires_on(day - i):
                j = bisect.bisect_right(self._day_minutes, last if i == 0 else 1439) - 1
                if j >= 0:
                    return (day - i) * 1440 + self._day_minutes[j]
        raise ValueError(f"cron expression {self.expression!r} never fires")

    def _bounds(self, t: float) -> tuple[int, int]:
        minute = _floor_index(t, -self._offset, 60)
        start = self._prev_fire(minute) * 60 - self._offset
        end = self._next_fire(minute) * 60 - self._offset
        return start, end

    def _name(self, start: int) -> str:
        return self._local_datetime(start).isoformat(timespec="minutes")

    def _parse_start(self, name: str) -> int:
        local = datetime.strptime(name, "%Y-%m-%dT%H:%M")
        return int((local - datetime(1970, 1, 1)).total_seconds()) - self._offset

    def __repr__(self) -> str:
        return f"Cron({self.expression!r}, utc_offset={self._offset})"


_NAMED_CALENDARS: Final[dict[str, type[Calendar]]] = {
    "hourly": Hourly,
    "daily": Daily,
    "weekly": Weekly,
    "monthly": Monthly,
}


def calendar(spec: str | Calendar, *, utc_offset: int | timedelta = 0) -> Calendar:
    """A calendar from a name (``hourly``, ``daily``, ``weekly``, ``monthly``),
    a cron expression (five fields or an ``@`` macro), or a calendar itself.

    >>> calendar("monthly"), calendar("*/30 * * * *")
    (Monthly(utc_offset=0), Cron('*/30 * * * *', utc_offset=0))
    """
    if isinstance(spec, Calendar):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"calendar must be a name, a cron expression or a Calendar, not {spec!r}")
    word = spec.strip().lower()
    kind = _NAMED_CALENDARS.get(word)
    if kind is not None:
        return kind(utc_offset)
    if len(spec.split()) == 1 and word not in _CRON_MACROS:
        names = ", ".join(map(repr, _NAMED_CALENDARS))
        raise ValueError(
            f"unknown calendar {spec!r}: use one of {names}, a cron macro "
            f"({', '.join(_CRON_MACROS)}), a five-field cron expression, "
            "or a calendar object such as Every(seconds, origin=...)"
        )
    return Cron(spec, utc_offset=utc_offset)
