"""Periodic boards: one leaderboard per time period ("this week", "today").

A :class:`PeriodicLeaderboard` routes every write to the board of the period
its timestamp falls in, keeps the last few periods queryable, archives older
ones to a file and drops them from memory, and calls a callback with the
final standings when a period closes.  Reads never merge anything: a period
*is* one :class:`~rankengine.Leaderboard`.

Time rule
---------
Timestamps are POSIX seconds (``int`` or ``float``).  All period arithmetic
is in UTC, optionally shifted by one *fixed* offset (``utc_offset=3600`` puts
midnight at 23:00 UTC all year).  There are no time zones and no daylight
saving: a day is always 86,400 seconds and names never repeat or skip.

Calendars and period names
--------------------------
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

>>> week = calendar("weekly")
>>> week.period_of(1_798_761_600)           # 2027-01-01T00:00Z
Period(name='2026-W53', start=1798416000, end=1799020800)
>>> calendar("daily", utc_offset=-5 * 3600).period_of(1_798_761_600).name
'2026-12-31'

Open, closed, late
------------------
A period is *open* from its start until ``end + grace`` (``grace`` seconds
of allowed lateness, default 0), then *closed*: its standings are final, the
``on_close`` callback runs once with its board, and it stays queryable while
it is among the ``keep`` periods before the current one.  After that it is
archived (if an ``archive`` directory is given) and dropped from memory.

A write goes to the period of *its own* timestamp when that period is open.
A write for a closed period is late and follows ``late``: ``"reject"``
raises :class:`LateEventError` (the default), ``"drop"`` ignores it and
counts it in :attr:`PeriodicLeaderboard.late_dropped`, ``"current"`` counts
it in the current period.  A write for a period that has not started yet is
refused with ``ValueError``.  The board's "now" is the injectable ``clock``
and never moves backwards.
"""

from __future__ import annotations

import bisect
import math
import os
import re
import shutil
import struct
import tempfile
import threading
import time
import zlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any, Final, Literal, NamedTuple, TypeAlias

import msgpack

from rankengine.leaderboard import Entry, Leaderboard, RankStyle, When
from rankengine.scoring import Member, Score

__all__ = [
    "Calendar",
    "Cron",
    "Daily",
    "Every",
    "Hourly",
    "LateEventError",
    "LatePolicy",
    "Monthly",
    "Period",
    "PeriodicLeaderboard",
    "Weekly",
    "calendar",
    "read_archive",
    "write_archive",
]

LatePolicy: TypeAlias = Literal["reject", "drop", "current"]
_LATE_POLICIES: Final = ("reject", "drop", "current")

_DAY: Final = 86_400
_HOUR: Final = 3_600
_EPOCH: Final = date(1970, 1, 1)
#: 1970-01-01 was a Thursday, so the ISO week holding it began 3 days earlier.
_EPOCH_WEEKDAY: Final = 3

#: A cron expression may fire only on 29 February; leap years can be 8 years
#: apart (1896 -> 1904, 2096 -> 2104), so a search for the next or previous
#: fire looks at most this many days away before declaring "never".
MAX_CRON_DAYS: Final = 8 * 366 + 1


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


class LateEventError(ValueError):
    """A write for a period that is already closed (its standings are final)."""

    def __init__(self, t: float, period: Period, now: float) -> None:
        super().__init__(
            f"event at t={t} is late: period {period.name} closed at "
            f"{period.end} + grace and now is {now}"
        )
        self.t = t
        self.period = period


def _check_time(t: object, what: str = "t") -> float:
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t):
        raise ValueError(f"{what} must be a finite number of POSIX seconds, not {t!r}")
    return t


def _check_offset(utc_offset: int | timedelta) -> int:
    seconds = utc_offset.total_seconds() if isinstance(utc_offset, timedelta) else utc_offset
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise TypeError(f"utc_offset must be seconds or a timedelta, not {utc_offset!r}")
    if seconds != int(seconds) or int(seconds) % 60 or not -_DAY < seconds < _DAY:
        raise ValueError(f"utc_offset must be whole minutes within +-24 h, not {utc_offset!r}")
    return int(seconds)


def _floor_index(t: float, origin: int, length: int) -> int:
    """The ``i`` with ``origin + i * length <= t < origin + (i + 1) * length``.

    The float division may round across a boundary, so the guess is fixed up
    with exact int/float comparisons (Python compares them exactly).
    """
    i = math.floor((t - origin) / length)
    while origin + i * length > t:
        i -= 1
    while origin + (i + 1) * length <= t:
        i += 1
    return i


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
        """
        t = _check_time(t)
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
        return self._local_datetime(start).strftime("%Y-%m-%dT%H")

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
        match = re.fullmatch(r"(\d{4})-W(\d{2})", name)
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
        year, month = day.year, day.month
        nxt = (year + 1, 1) if month == 12 else (year, month + 1)
        return self._month_start(year, month), self._month_start(*nxt)

    def _name(self, start: int) -> str:
        return _day_date((start + self._offset) // _DAY).strftime("%Y-%m")

    def _parse_start(self, name: str) -> int:
        match = re.fullmatch(r"(\d{4})-(\d{2})", name)
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
        if seconds != int(seconds) or seconds < 1:
            raise ValueError(f"length must be a positive whole number of seconds, not {length!r}")
        if isinstance(origin, bool) or not isinstance(origin, int):
            raise TypeError(f"origin must be an int (POSIX seconds), not {origin!r}")
        self.length = int(seconds)
        self.origin = origin

    def _bounds(self, t: float) -> tuple[int, int]:
        i = _floor_index(t, self.origin, self.length)
        return self.origin + i * self.length, self.origin + (i + 1) * self.length

    def _name(self, start: int) -> str:
        return self._local_datetime(start).strftime("%Y-%m-%dT%H:%M:%S")

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


def _cron_field(text: str, lo: int, hi: int, names: tuple[str, ...], name_base: int) -> set[int]:
    """Parse one cron field (``*``, ``5``, ``1-5``, ``*/15``, ``10-50/20``,
    ``MON-FRI``, comma lists) into the set of values it allows."""
    values: set[int] = set()

    def number(token: str) -> int:
        upper = token.upper()
        if upper in names:
            return names.index(upper) + name_base
        if not token.isdigit():
            raise ValueError(f"bad cron value {token!r}")
        return int(token)

    for item in text.split(","):
        body, _, step_text = item.partition("/")
        step = int(step_text) if step_text.isdigit() else (1 if not step_text else 0)
        if step < 1:
            raise ValueError(f"bad cron step in {item!r}")
        if body == "*":
            first, last = lo, hi
        elif "-" in body:
            a, b = body.split("-", 1)
            first, last = number(a), number(b)
        else:
            first = number(body)
            last = hi if step_text else first
        if not lo <= first <= last <= hi:
            raise ValueError(f"cron field {item!r} is outside {lo}..{hi}")
        values.update(range(first, last + 1, step))
    return values


class Cron(Calendar):
    """Periods between consecutive fires of a cron expression (a reset
    schedule, as in Nakama), named by their start ``YYYY-MM-DDTHH:MM``.

    A documented subset of cron, evaluated in UTC plus the fixed offset:
    five fields ``minute hour day-of-month month day-of-week``; each field is
    ``*``, a number, a range ``a-b``, a step ``*/n`` or ``a-b/n`` or ``a/n``,
    or a comma list of those; month and weekday names (``JAN``, ``MON``);
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
        d = _day_date(day)
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
        return self._local_datetime(start).strftime("%Y-%m-%dT%H:%M")

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
    kind = _NAMED_CALENDARS.get(spec.strip().lower())
    if kind is not None:
        return kind(utc_offset)
    return Cron(spec, utc_offset=utc_offset)


# ----------------------------------------------------------------------
# Archive files
# ----------------------------------------------------------------------
#: File header: magic, payload length and CRC-32 of the payload.  The magic
#: names the format and its version; the CRC catches a torn or rotted file.
ARCHIVE_MAGIC: Final = b"RKARCH01"
_HEADER: Final = struct.Struct("<8sII")
ARCHIVE_SUFFIX: Final = ".rkarchive"


def _board_settings(board: Leaderboard) -> dict[str, Any]:
    order = board.order
    return {
        "order": list(order) if isinstance(order, tuple) else order,
        "tie_break": board.tie_break,
        "rank_style": board.rank_style,
    }


def write_archive(path: str | os.PathLike[str], period: Period, board: Leaderboard) -> None:
    """Write ``board`` (every member with score, tie clock and metadata) as
    the final standings of ``period`` to ``path``, atomically.

    Format: ``magic (8 bytes) | length (u32 LE) | crc32 (u32 LE) | msgpack``,
    the payload a map with the period, the board's settings, its logical
    clock and its rows in index order.  The file is written next to its
    final name, flushed to disk, then renamed over it.

    Runtime complexity: O(N)
    """
    with board._lock:
        payload = {
            "period": list(period),
            "settings": _board_settings(board),
            "clock": board.clock,
            "rows": [list(row) for row in board._export()],
        }
    body = msgpack.packb(payload, use_bin_type=True)
    data = _HEADER.pack(ARCHIVE_MAGIC, len(body), zlib.crc32(body)) + body
    target = Path(path)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=ARCHIVE_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_archive(path: str | os.PathLike[str], **config: Any) -> tuple[Period, Leaderboard]:
    """Read an archive written by :func:`write_archive`: the period and a new
    board identical to the archived one (same ranks, ties and metadata).
    ``config`` overrides board settings (e.g. ``backend``).

    :raises ValueError: the file is not an archive, or is damaged.

    Runtime complexity: O(N)
    """
    data = Path(path).read_bytes()
    if len(data) < _HEADER.size:
        raise ValueError(f"{path}: too short to be an archive")
    magic, length, crc = _HEADER.unpack_from(data)
    body = data[_HEADER.size :]
    if magic != ARCHIVE_MAGIC:
        raise ValueError(f"{path}: not a rankengine archive (magic {magic!r})")
    if len(body) != length or zlib.crc32(body) != crc:
        raise ValueError(f"{path}: archive is damaged (length or checksum mismatch)")
    payload = msgpack.unpackb(body, raw=False, strict_map_key=False, use_list=True)
    settings = dict(payload["settings"])
    if isinstance(settings["order"], list):
        settings["order"] = tuple(settings["order"])
    board = Leaderboard(**{**settings, **config})
    board._restore(((m, s, c, meta) for m, s, c, meta in payload["rows"]), payload["clock"])
    name, start, end = payload["period"]
    return Period(name, start, end), board


def _file_name(name: str) -> str:
    """Period names may hold ``:``; file names should not."""
    return name.replace(":", "_")


# ----------------------------------------------------------------------
# The periodic board
# ----------------------------------------------------------------------
class PeriodicLeaderboard:
    """A leaderboard per period of a calendar, with retention, archive and
    close callbacks.  See the module docstring for the time and late rules.

    :param cal: a :class:`Calendar`, a calendar name or a cron expression.
    :param keep: closed periods kept queryable behind the current one.
    :param grace: seconds after a period's end during which writes for it
        are still accepted (allowed lateness); it closes after that.
    :param late: what a write for a closed period does:
        ``"reject"``, ``"drop"`` or ``"current"``.
    :param clock: returns "now" in POSIX seconds (injectable for tests).
    :param on_close: called as ``on_close(period, board)`` once per period,
        in period order, when it closes; ``board`` holds the final standings
        (read it, don't write it).  If it raises, the error reaches the caller
        and the call is retried at the next call (at-least-once).
    :param archive: a directory: a dropped period is written there as
        ``<name>.rkarchive`` (see :func:`write_archive`) before leaving memory.
    :param board_factory: builds the board of a new period, e.g. a durable
        ``lambda p: Leaderboard.open(root / p.name)``; default
        ``Leaderboard(**board_config)``.
    :param board_config: settings for the default boards (``order``, ...).

    Every call first *advances*: it reads the clock, creates the current
    period's board, closes periods whose grace ran out (callbacks), and
    archives/drops closed periods that fell out of ``keep``.  :meth:`tick`
    does only that, for a scheduler.

    >>> now = [1_798_416_000.0]                  # Monday 2026-12-28 00:00Z
    >>> closed = []
    >>> weekly = PeriodicLeaderboard("weekly", clock=lambda: now[0],
    ...                              on_close=lambda p, b: closed.append((p.name, b.items())))
    >>> weekly.incr("ann", 30), weekly.incr("bob", 10)
    (30, 10)
    >>> weekly.current.name, [e.member for e in weekly.top()]
    ('2026-W53', ['ann', 'bob'])
    >>> now[0] += 7 * 86400                      # a week later
    >>> weekly.incr("bob", 5)
    5
    >>> closed
    [('2026-W53', [('ann', 30), ('bob', 10)])]
    >>> weekly.top(period="2026-W53")[0].member, weekly.current.name
    ('ann', '2027-W01')
    """

    def __init__(
        self,
        cal: Calendar | str,
        *,
        keep: int = 1,
        grace: float = 0.0,
        late: LatePolicy = "reject",
        clock: Callable[[], float] = time.time,
        on_close: Callable[[Period, Leaderboard], None] | None = None,
        archive: str | os.PathLike[str] | None = None,
        board_factory: Callable[[Period], Leaderboard] | None = None,
        **board_config: Any,
    ) -> None:
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 0:
            raise ValueError(f"keep must be an int >= 0, not {keep!r}")
        grace = _check_time(grace, "grace")
        if grace < 0:
            raise ValueError(f"grace must be >= 0, not {grace!r}")
        if late not in _LATE_POLICIES:
            raise ValueError(f"late must be one of {_LATE_POLICIES}, not {late!r}")
        self._calendar = calendar(cal)
        self._keep = keep
        self._grace = grace
        self._late: LatePolicy = late
        self._clock = clock
        self._on_close = on_close
        self._archive = None if archive is None else Path(archive)
        if self._archive is not None:
            self._archive.mkdir(parents=True, exist_ok=True)
        self._board_config = board_config
        self._factory = board_factory or (lambda _period: Leaderboard(**board_config))
        self._boards: dict[str, Leaderboard] = {}
        self._periods: dict[str, Period] = {}
        self._closed: set[str] = set()
        self._now = -math.inf
        #: before this time, advancing has nothing to do (see _advance)
        self._horizon = -math.inf
        self._late_dropped = 0
        self._lock = threading.RLock()
        #: Called as ``hook(period, members)`` after each write (the sliding
        #: window marks those members for its next refresh).
        self._write_hook: Callable[[Period, Iterable[Member]], None] | None = None
        #: Called as ``hook(period, board)`` just before a period leaves memory.
        self._drop_hook: Callable[[Period, Leaderboard], None] | None = None
        #: The directory store of a durable board (see :meth:`open`), or None.
        self._store: _DirectoryStore | None = None

    # ------------------------------------------------------------------
    # Time and periods
    # ------------------------------------------------------------------
    @property
    def calendar(self) -> Calendar:
        """The calendar that cuts time into periods."""
        return self._calendar

    @property
    def keep(self) -> int:
        """How many closed periods stay queryable behind the current one."""
        return self._keep

    @property
    def late_dropped(self) -> int:
        """Late writes ignored under ``late="drop"``."""
        return self._late_dropped

    @property
    def current(self) -> Period:
        """The period holding "now" (after advancing)."""
        with self._lock:
            return self._calendar.period_of(self._advance())

    def now(self) -> float:
        """The board's time: the clock, never less than a time already seen."""
        with self._lock:
            return self._advance()

    def period_of(self, t: float) -> Period:
        """The period a write at time ``t`` belongs to (by the calendar alone)."""
        return self._calendar.period_of(t)

    def periods(self) -> list[Period]:
        """Periods held in memory, oldest first (the current one last).

        Runtime complexity: O(P log P) for P periods held
        """
        with self._lock:
            self._advance()
            return sorted(self._periods.values(), key=lambda p: p.start)

    def is_open(self, period: Period | str) -> bool:
        """True while writes for ``period`` are accepted (until ``end + grace``).

        >>> board = PeriodicLeaderboard("daily", grace=60, clock=lambda: 86_430.0)
        >>> board.is_open("1970-01-01"), board.is_open("1970-01-02")
        (True, True)
        """
        with self._lock:
            return self._advance() < self._resolve(period).end + self._grace

    def tick(self) -> list[Period]:
        """Advance to "now": run due close callbacks and archive old periods.

        :return: the periods that closed during this call, oldest first.
        """
        with self._lock:
            closed: list[Period] = []
            self._advance(closed)
            return closed

    # ------------------------------------------------------------------
    # Writes
    # ------------------------------------------------------------------
    def set(
        self,
        member: Member,
        score: Score,
        *,
        t: float | None = None,
        when: When | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> bool:
        """:meth:`Leaderboard.set` on the board of the period of ``t`` (default now).

        :return: True if the board changed; False also when a late write was dropped.

        Runtime complexity: O(log N)
        """
        with self._lock:
            period = self._route(t)
            if period is None:
                return False
            changed = self._boards[period.name].set(member, score, when=when, meta=meta)
            self._wrote(period, (member,))
            return changed

    def incr(
        self, member: Member, delta: Score = 1, *, t: float | None = None, when: When | None = None
    ) -> Score | None:
        """:meth:`Leaderboard.incr` on the board of the period of ``t`` (default now).

        :return: the new score, or None if ``when`` blocked it or a late
            write was dropped.

        Runtime complexity: O(log N)
        """
        with self._lock:
            period = self._route(t)
            if period is None:
                return None
            result = self._boards[period.name].incr(member, delta, when=when)
            self._wrote(period, (member,))
            return result

    def set_many(
        self,
        items: Mapping[Member, Score] | Iterable[tuple[Member, Score]],
        *,
        t: float | None = None,
        when: When | None = None,
    ) -> int:
        """:meth:`Leaderboard.set_many`, all at time ``t`` (default now).

        Runtime complexity: O(k log N)
        """
        with self._lock:
            period = self._route(t)
            if period is None:
                return 0
            pairs = list(items.items() if isinstance(items, Mapping) else items)
            changed = self._boards[period.name].set_many(pairs, when=when)
            self._wrote(period, [pair[0] for pair in pairs])
            return changed

    def incr_many(
        self,
        items: Mapping[Member, Score] | Iterable[tuple[Member, Score]],
        *,
        t: float | None = None,
    ) -> dict[Member, Score]:
        """:meth:`Leaderboard.incr_many`, all at time ``t`` (default now).

        Runtime complexity: O(k log N)
        """
        with self._lock:
            period = self._route(t)
            if period is None:
                return {}
            pairs = list(items.items() if isinstance(items, Mapping) else items)
            result = self._boards[period.name].incr_many(pairs)
            self._wrote(period, result)
            return result

    def remove(self, member: Member, *, t: float | None = None) -> bool:
        """Remove ``member`` from the board of the period of ``t`` (default now).

        Runtime complexity: O(log N)
        """
        with self._lock:
            period = self._route(t)
            if period is None:
                return False
            removed = self._boards[period.name].remove(member)
            self._wrote(period, (member,))
            return removed

    # ------------------------------------------------------------------
    # Reads
    # ------------------------------------------------------------------
    def board(self, period: Period | str | None = None) -> Leaderboard:
        """The board of a period held in memory (default: the current one).

        Writes should go through this object (they are routed and checked);
        a period nobody wrote to and that was never current gives a new,
        empty, detached board.

        :raises KeyError: the period is neither held nor within ``keep``
            (it was archived: see :meth:`load_archived`).
        """
        with self._lock:
            now = self._advance()
            target = self._calendar.period_of(now) if period is None else self._resolve(period)
            board = self._boards.get(target.name)
            if board is not None:
                return board
            current = self._calendar.period_of(now)
            oldest = self._calendar.shift(current, -self._keep)
            if oldest.start <= target.start <= current.start:
                return Leaderboard(**self._board_config)
            raise KeyError(f"period {target.name} is not held in memory")

    def top(
        self,
        k: int = 10,
        *,
        period: Period | str | None = None,
        style: RankStyle | None = None,
        with_meta: bool = False,
    ) -> list[Entry]:
        """The best ``k`` of a period (default: the current one).

        Runtime complexity: O(log N + k)
        """
        return self.board(period).top(k, style=style, with_meta=with_meta)

    def rank(
        self, member: Member, *, period: Period | str | None = None, style: RankStyle | None = None
    ) -> int | None:
        """``member``'s rank in a period (default: the current one), or None.

        Runtime complexity: O(log N)
        """
        return self.board(period).rank(member, style=style)

    def score(
        self, member: Member, default: Any = None, *, period: Period | str | None = None
    ) -> Any:
        """``member``'s score in a period (default: the current one).

        Runtime complexity: O(1)
        """
        return self.board(period).score(member, default)

    def entry(
        self,
        member: Member,
        *,
        period: Period | str | None = None,
        style: RankStyle | None = None,
        with_meta: bool = False,
    ) -> Entry | None:
        """``member``'s entry in a period (default: the current one), or None.

        Runtime complexity: O(log N)
        """
        return self.board(period).entry(member, style=style, with_meta=with_meta)

    def around(
        self,
        member: Member,
        above: int = 5,
        below: int = 5,
        *,
        period: Period | str | None = None,
        fill: bool = False,
        style: RankStyle | None = None,
    ) -> list[Entry]:
        """:meth:`Leaderboard.around` in a period (default: the current one).

        Runtime complexity: O(log N + above + below)
        """
        return self.board(period).around(member, above, below, fill=fill, style=style)

    def archived(self) -> list[str]:
        """Names of the periods in the archive directory, oldest first."""
        if self._archive is None:
            return []
        names = [
            p.name[: -len(ARCHIVE_SUFFIX)].replace("_", ":")
            for p in self._archive.glob("*" + ARCHIVE_SUFFIX)
            if not p.name.startswith(".")
        ]
        return sorted(names, key=lambda name: self._calendar.parse(name).start)

    def load_archived(self, period: Period | str) -> Leaderboard:
        """The final board of an archived period, read back from its file.

        :raises KeyError: no archive file for it.

        Runtime complexity: O(N)
        """
        if self._archive is None:
            raise KeyError("this board has no archive directory")
        name = period.name if isinstance(period, Period) else period
        path = self._archive / (_file_name(name) + ARCHIVE_SUFFIX)
        if not path.exists():
            raise KeyError(f"no archive of period {name}")
        return read_archive(path)[1]

    # ------------------------------------------------------------------
    # Durable storage
    # ------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        cal: Calendar | str,
        *,
        fsync: str = "everysec",
        clock: Callable[[], float] = time.time,
        **options: Any,
    ) -> PeriodicLeaderboard:
        """Open (or create) a durable periodic board in directory ``path``.

        Layout: ``periods/<name>/`` holds one durable board (event log) per
        period in memory, so replay rebuilds each period from its own
        records: period membership is the directory, not a recomputation.
        ``closed/<name>`` marks a period whose ``on_close`` ran (so reopening
        does not run it again), and ``archive/<name>.rkarchive`` holds
        dropped periods.  Records are stamped with ``clock``.  ``options``
        are the constructor's (``keep``, ``grace``, ``late``, ``on_close``,
        board settings); pass the same calendar and options on reopen.

        Crash rules: a crash after a callback but before its marker runs the
        callback again on reopen (at-least-once); a crash after archiving
        but before deleting the period's directory archives it again
        (the same bytes, atomically replaced).
        """
        board = cls(cal, clock=clock, **options)
        board._attach(Path(path), fsync)
        return board

    def close(self) -> None:
        """Close every durable period board (flushing its log); no-op in memory."""
        with self._lock:
            for board in self._boards.values():
                close = getattr(board, "close", None)
                if close is not None:
                    close()

    def __enter__(self) -> PeriodicLeaderboard:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _attach(self, root: Path, fsync: str) -> None:
        """Store periods under ``root`` and load the ones already there."""
        store = _DirectoryStore(root, fsync, self._clock, self._board_config)
        self._archive = root / "archive"
        self._archive.mkdir(parents=True, exist_ok=True)
        self._factory = store.open_board
        for name, closed in store.existing():
            period = self._calendar.parse(name)
            self._boards[name] = store.open_board(period)
            self._periods[name] = period
            if closed:
                self._closed.add(name)
        self._store = store
        self._horizon = -math.inf

    # ------------------------------------------------------------------
    # Internals
    # ------------------------------------------------------------------
    def _resolve(self, period: Period | str) -> Period:
        if isinstance(period, Period):
            return period
        if isinstance(period, str):
            return self._calendar.parse(period)
        raise TypeError(f"period must be a Period or a name, not {period!r}")

    def _advance(self, closed: list[Period] | None = None) -> float:
        """Read the clock; create the current period; close and drop old ones
        (appending the periods it closes to ``closed``).

        Fast path: nothing can happen before ``_horizon`` (the current
        period's end, or the earliest ``end + grace`` of an unclosed period),
        so until then a call costs one clock read and one comparison.
        """
        now = _check_time(self._clock(), "clock()")
        self._now = max(self._now, now)
        now = self._now
        if now < self._horizon:
            return now
        current = self._calendar.period_of(now)
        self._ensure(current)
        for period in sorted(self._periods.values(), key=lambda p: p.start):
            if period.name not in self._closed and now >= period.end + self._grace:
                if self._on_close is not None:
                    self._on_close(period, self._boards[period.name])
                self._closed.add(period.name)
                if self._store is not None:
                    self._store.mark_closed(period)
                if closed is not None:
                    closed.append(period)
        oldest = self._calendar.shift(current, -self._keep).start
        for name in [n for n in self._closed if self._periods[n].start < oldest]:
            self._drop(self._periods[name])
        self._horizon = min(
            [current.end]
            + [p.end + self._grace for n, p in self._periods.items() if n not in self._closed]
        )
        return now

    def _ensure(self, period: Period) -> Leaderboard:
        board = self._boards.get(period.name)
        if board is None:
            board = self._factory(period)
            self._boards[period.name] = board
            self._periods[period.name] = period
            self._horizon = min(self._horizon, period.end + self._grace)
        return board

    def _drop(self, period: Period) -> None:
        board = self._boards[period.name]
        if self._drop_hook is not None:
            self._drop_hook(period, board)
        if self._archive is not None:
            write_archive(self._archive / (_file_name(period.name) + ARCHIVE_SUFFIX), period, board)
        del self._boards[period.name]
        del self._periods[period.name]
        self._closed.discard(period.name)
        if self._store is not None:
            self._store.release(period, board)

    def _route(self, t: float | None) -> Period | None:
        """The open period a write at ``t`` goes to, or None (dropped late write)."""
        now = self._advance()
        if t is None:
            return self._calendar.period_of(now)
        t = _check_time(t)
        period = self._calendar.period_of(t)
        if period.start > now:
            raise ValueError(
                f"event at t={t} is in period {period.name}, which starts after now ({now})"
            )
        if now < period.end + self._grace and period.name not in self._closed:
            self._ensure(period)
            return period
        if self._late == "reject":
            raise LateEventError(t, period, now)
        if self._late == "drop":
            self._late_dropped += 1
            return None
        return self._calendar.period_of(now)

    def _wrote(self, period: Period, members: Iterable[Member]) -> None:
        if self._write_hook is not None:
            self._write_hook(period, members)

    def _check(self) -> None:
        """Verify the invariants of the periods and of every held board."""
        with self._lock:
            assert self._boards.keys() == self._periods.keys(), "boards and periods out of step"
            assert self._closed <= self._periods.keys(), "closed flag for a period not held"
            for name, period in self._periods.items():
                # every held period is a real period of the calendar, under its own name
                assert self._calendar.period_of(period.start) == period, period
                assert period.name == name
                # closed periods really are past their grace
                if name in self._closed:
                    assert self._now >= period.end + self._grace, (period, self._now)
                self._boards[name]._check()
            starts = sorted(p.start for p in self._periods.values())
            ends = sorted(p.end for p in self._periods.values())
            # periods never overlap
            assert all(e <= s for e, s in zip(ends, starts[1:], strict=False)), (
                "overlapping periods"
            )
            if self._now > -math.inf:
                current = self._calendar.period_of(self._now)
                assert current.name in self._periods, "current period not held"
                oldest = self._calendar.shift(current, -self._keep).start
                for name in self._closed:
                    assert self._periods[name].start >= oldest, f"{name} should have been dropped"
                # the fast path of _advance is sound: nothing is due before the horizon
                for name, period in self._periods.items():
                    if name not in self._closed:
                        assert self._horizon <= period.end + self._grace, (name, self._horizon)
                assert self._horizon <= current.end

    def __repr__(self) -> str:
        return (
            f"PeriodicLeaderboard({self._calendar!r}, keep={self._keep}, "
            f"grace={self._grace}, periods={len(self._periods)})"
        )


class _DirectoryStore:
    """Where a durable :class:`PeriodicLeaderboard` keeps its periods."""

    def __init__(
        self, root: Path, fsync: str, clock: Callable[[], float], config: dict[str, Any]
    ) -> None:
        self.periods = root / "periods"
        self.closed = root / "closed"
        for directory in (self.periods, self.closed):
            directory.mkdir(parents=True, exist_ok=True)
        self.fsync = fsync
        self.clock = clock
        self.config = config

    def existing(self) -> list[tuple[str, bool]]:
        """``(period name, closed?)`` for every period directory found."""
        return [
            (p.name.replace("_", ":"), (self.closed / p.name).exists())
            for p in sorted(self.periods.iterdir())
            if p.is_dir() and not p.name.startswith(".")
        ]

    def open_board(self, period: Period) -> Leaderboard:
        return Leaderboard.open(
            self.periods / _file_name(period.name),
            fsync=self.fsync,
            now=lambda: int(self.clock() * 1000),
            **self.config,
        )

    def mark_closed(self, period: Period) -> None:
        marker = self.closed / _file_name(period.name)
        with open(marker, "wb") as handle:
            os.fsync(handle.fileno())

    def release(self, period: Period, board: Leaderboard) -> None:
        """After archiving: close the period's board and delete its files."""
        close = getattr(board, "close", None)
        if close is not None:
            close()
        shutil.rmtree(self.periods / _file_name(period.name))
        (self.closed / _file_name(period.name)).unlink(missing_ok=True)
