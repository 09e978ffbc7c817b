"""Calendars under random inputs: random calendars of every kind, times
over the whole range, and malformed cron expressions."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from rankengine.calendars import Calendar, Cron, Daily, Every, Hourly, Monthly, Weekly


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
