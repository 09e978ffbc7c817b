"""Packed scores: score and first-to-reach time folded into one double.

Stores whose score is an IEEE double (Redis sorted sets, most databases'
``REAL`` columns) cannot hold the engine's exact composite key
``(score, tie)``.  The classic trick packs both into one number::

    packed = score * 2**bits + (MAX_T - t)          (descending boards)
    packed = score * 2**bits + t                    (ascending boards)

    bits   = number of bits needed for the window's last tick
    t      = ticks since the window start (resolution seconds a tick)
    MAX_T  = 2**bits - 1

so a higher score always wins and, on equal scores, the earlier time wins
(``MAX_T - t`` is larger for earlier ``t``).  A double holds every integer
of magnitude up to 2**53 exactly; past that neighbouring packed values
collapse and ties silently reorder (a long-standing complaint about the
trick).  :class:`PackedScore` therefore refuses, with a clear error, any
value whose packed form would pass 2**53, and tells you the largest score
the window allows.

The engine itself never needs this: its in-process key is the exact tuple
``(score, clock)`` of Python values, with no 2**53 limit.

>>> week = PackedScore(window_start=0, window_length=7 * 86400)
>>> week.bits
20
>>> a, b = week.pack(100, t=3600), week.pack(100, t=7200)
>>> a > b          # same score: the earlier one ranks first
True
>>> week.unpack(a)
(100, 3600.0)
>>> week.max_score
8589934591
"""

from __future__ import annotations

import math
import numbers
from typing import Final

from rankengine.board.scoring import describe

__all__ = ["EXACT_LIMIT", "TICK_TOLERANCE", "PackedScore"]

#: Largest magnitude at which every integer is exactly representable as an
#: IEEE-754 double (53-bit significand).
EXACT_LIMIT: Final = 2**53


#: Fraction of a tick within which a time counts as exactly on a tick
#: boundary.  Float subtraction of two epoch-scale times is off by up to
#: ~1e-7 s; at 1 ms resolution that is 1e-4 ticks, far inside this bound.
TICK_TOLERANCE: Final = 1e-3


def _finite(value: object) -> bool:
    """Is ``value`` an int or float (not a bool) with a finite float value?

    Runtime complexity: O(1)

    >>> _finite(3), _finite(0.5), _finite(10**400), _finite(float("inf")), _finite(True)
    (True, True, False, False, False)
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int beyond the float range
        return False


def _check_bound(value: object, what: str) -> None:
    """Raise unless ``value`` is a number :meth:`PackedScore.floor` can place:
    any real number (a fraction or an infinity too), but not a ``bool`` and
    not NaN, which compares false with everything and so would sort nowhere.

    Runtime complexity: O(1)

    >>> _check_bound(2.5, "time")
    >>> _check_bound(True, "score")
    Traceback (most recent call last):
    ...
    TypeError: score must be a number, not bool
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{what} must be a number, not {type(value).__name__}")
    if value != value:
        raise ValueError(f"{what} must not be NaN")


class PackedScore:
    """Pack ``(integer score, time)`` into one integer that a double holds exactly.

    :param window_start: POSIX seconds where tick 0 begins.
    :param window_length: seconds the window lasts; fixes ``bits``.
    :param resolution: seconds per tick (1.0 = one-second tie resolution).
    :param descending: True when higher scores rank first (earlier time wins
        ties either way).

    Runtime complexity: O(1) per pack/unpack.

    >>> day = PackedScore(0, 86400, resolution=0.001)
    >>> day.bits, day.unpack(day.pack(-5, 12.5))
    (27, (-5, 12.5))
    """

    __slots__ = (
        "bits",
        "descending",
        "max_score",
        "max_tick",
        "min_score",
        "resolution",
        "window_start",
    )

    def __init__(
        self,
        window_start: float,
        window_length: float,
        *,
        resolution: float = 1.0,
        descending: bool = True,
    ) -> None:
        for name, value in (
            ("window_start", window_start),
            ("window_length", window_length),
            ("resolution", resolution),
        ):
            if not _finite(value):
                raise ValueError(f"{name} must be a finite number, not {describe(value)}")
        if window_length <= 0 or resolution <= 0:
            raise ValueError("window_length and resolution must be positive")
        # A bool, not any truthy value: a Redis board stores it with its
        # settings, where 1 and True would be two different boards.
        if not isinstance(descending, bool):
            raise TypeError(f"descending must be True or False, not {descending!r}")
        self.window_start = float(window_start)
        self.resolution = float(resolution)
        self.descending = descending
        ticks = window_length / resolution
        if not math.isfinite(ticks):
            raise ValueError(
                f"a window of {window_length} s at {resolution} s resolution has more ticks "
                "than a float counts: no room is left for a score below 2**53"
            )
        last_tick = math.ceil(ticks)
        self.bits: int = max(last_tick.bit_length(), 1)
        self.max_tick: int = (1 << self.bits) - 1
        if self.bits >= 53:
            raise ValueError(
                f"a window of {window_length} s at {resolution} s resolution needs "
                f"{self.bits} bits for time alone: no room is left for a score below 2**53"
            )
        # score * 2**bits + r with 0 <= r <= max_tick must stay within +-2**53
        self.max_score: int = (EXACT_LIMIT - self.max_tick) >> self.bits
        self.min_score: int = -(EXACT_LIMIT >> self.bits)

    def ticks(self, t: float) -> int:
        """Whole ticks from the window start to ``t``; ``ValueError`` outside the window.

        The window accepts ticks up to ``max_tick`` (``bits`` round the
        window's length up to a power of two).  Every time :meth:`unpack`
        gives back is its own tick again, however fine the resolution.

        Runtime complexity: O(1)

        >>> start = 1_764_460_800.0
        >>> PackedScore(start, 3600, resolution=1e-6).ticks(start + 2e-6)
        2
        """
        if (
            isinstance(t, bool)
            or not isinstance(t, (int, float))
            or (isinstance(t, float) and not math.isfinite(t))
        ):
            raise ValueError(f"time must be a finite number, not {t!r}")
        # Snap to the nearest tick when within TICK_TOLERANCE of it: at epoch-scale
        # times, start + 0.001 minus start is 0.000999..., which must be tick 1
        # at millisecond resolution, not tick 0.
        try:
            raw = (t - self.window_start) / self.resolution
        except OverflowError:  # an int beyond the float range
            raw = math.inf
        if not math.isfinite(raw):  # more ticks from the start than a float counts
            raise ValueError(
                f"time {describe(t)} is outside the window "
                f"(ticks 0..{self.max_tick} from {self.window_start})"
            )
        nearest = round(raw)
        # A time that is exactly a tick's time (as unpack gives it back) is that
        # tick: at fine resolutions from an epoch-scale start, the double of
        # start + k * resolution is off k by more than TICK_TOLERANCE (at 0.1 ms,
        # a quarter of a microsecond is 0.0024 ticks).
        for tick in (nearest, nearest - 1, nearest + 1):
            if 0 <= tick <= self.max_tick and self._time(tick) == t:
                return tick
        tick = nearest if abs(raw - nearest) <= TICK_TOLERANCE else math.floor(raw)
        if not 0 <= tick <= self.max_tick:
            raise ValueError(
                f"time {t} is outside the window (tick {tick} not in 0..{self.max_tick})"
            )
        return tick

    def pack(self, score: int | float, t: float) -> int:
        """The packed value (an int; ``float()`` of it is exact).

        :raises TypeError: ``score`` is not an integer.
        :raises ValueError: the packed value would pass 2**53 (precision would be lost).
        """
        if isinstance(score, float) and score.is_integer():
            score = int(score)
        if isinstance(score, bool) or not isinstance(score, int):
            raise TypeError(f"packed scores hold integer scores only, not {score!r}")
        if not self.min_score <= score <= self.max_score:
            raise ValueError(
                f"score {describe(score)} cannot be packed exactly: with {self.bits} bits of "
                f"time the score must lie in {self.min_score}..{self.max_score} "
                "to stay within 2**53"
            )
        tick = self.ticks(t)
        rest = self.max_tick - tick if self.descending else tick
        return (score << self.bits) + rest

    def floor(self, score: int | float, t: int | float) -> int | None:
        """The largest packed value whose ``(score, time)`` sorts at or before
        ``(score, t)`` in packed order, or None when every one sorts after.

        Packed order is the order of the packed values: by score, then by
        time (later times first when ``descending``).  ``score`` and ``t``
        may be any numbers, fractions and infinities included: this is how a
        range bound that no packed value equals is rounded to its packed
        neighbours (the next one up is ``floor + 1``).  Times are compared
        as :meth:`unpack` gives them back, so the answer agrees with
        comparing the original pairs.  NaN (which sorts nowhere) is a
        ``ValueError``, a ``bool`` or a non-number a ``TypeError``.

        Runtime complexity: O(bits + log(max_score - min_score)): a binary
        search over the packed range.

        >>> week = PackedScore(0, 7 * 86400)
        >>> week.floor(100, 3600) == week.pack(100, 3600)
        True
        >>> week.floor(100, 3600.5) == week.pack(100, 3601)   # later is lower
        True
        >>> week.floor(99.5, 0) == week.pack(99, 0)       # the last of 99 points
        True
        >>> week.floor(week.min_score - 1, 0) is None
        True
        >>> week.floor(float("nan"), 0)
        Traceback (most recent call last):
        ...
        ValueError: score must not be NaN
        """
        _check_bound(score, "score")
        _check_bound(t, "time")
        target = self._order_key(score, t)
        lo = self.min_score << self.bits  # every int in [lo, hi] is a packed value
        hi = (self.max_score << self.bits) + self.max_tick
        if self._order_key(*self.unpack(lo)) > target:
            return None
        while lo < hi:  # invariant: the value at lo sorts at or before the target
            mid = (lo + hi + 1) // 2
            if self._order_key(*self.unpack(mid)) <= target:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def _order_key(self, score: int | float, t: int | float) -> tuple[int | float, int | float]:
        """A pair's place in packed order, as a tuple that compares exactly."""
        return (score, -t) if self.descending else (score, t)

    def unpack(self, packed: int | float) -> tuple[int, float]:
        """``(score, time)`` back from a packed value (time at tick resolution).

        :meth:`pack` makes values within +-``EXACT_LIMIT``, where a double is
        exact; any other value (int or float) is refused.

        Runtime complexity: O(1)

        >>> day = PackedScore(0, 86400)
        >>> day.unpack(day.pack(7, 60.0))
        (7, 60.0)
        >>> day.unpack(2**60)
        Traceback (most recent call last):
        ...
        ValueError: 1152921504606846976 is not an exact packed value
        """
        if isinstance(packed, float):
            if not packed.is_integer() or abs(packed) > EXACT_LIMIT:
                raise ValueError(f"{packed!r} is not an exact packed value")
            packed = int(packed)
        if isinstance(packed, bool) or not isinstance(packed, int):
            raise TypeError(f"packed value must be an int or float, not {type(packed).__name__}")
        if abs(packed) > EXACT_LIMIT:
            raise ValueError(f"{describe(packed)} is not an exact packed value")
        score = packed >> self.bits
        rest = packed & self.max_tick
        tick = self.max_tick - rest if self.descending else rest
        return score, self._time(tick)

    def _time(self, tick: int) -> float:
        """The time of a tick, as :meth:`unpack` gives it back."""
        return self.window_start + tick * self.resolution
