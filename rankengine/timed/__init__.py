"""Time: calendars, periodic boards, sliding windows and decayed scores.

Owns the calendars that name periods (``calendars``), boards that start
afresh each period (``periodic``) with their writes routed by time
(``period_writes``), archive files (``archive``) and period directories
(``store``), the last-N-seconds board (``window``) and
boards whose scores fade (``decay``), with their checks (``decay_checks``)
and durable epochs (``epochs``).

May import: :mod:`rankengine.board`, :mod:`rankengine.durable` and
:mod:`rankengine.index`.
"""

from __future__ import annotations

from rankengine.timed.calendars import (
    Calendar,
    Cron,
    Daily,
    Every,
    Hourly,
    Monthly,
    Period,
    Weekly,
)
from rankengine.timed.decay import DecayedLeaderboard
from rankengine.timed.periodic import LateEventError, PeriodicLeaderboard
from rankengine.timed.window import SlidingWindowLeaderboard

__all__ = [
    "Calendar",
    "Cron",
    "Daily",
    "DecayedLeaderboard",
    "Every",
    "Hourly",
    "LateEventError",
    "Monthly",
    "Period",
    "PeriodicLeaderboard",
    "SlidingWindowLeaderboard",
    "Weekly",
]
