"""The checks of a decayed board: its settings, times, points and sums.

:class:`~rankengine.timed.decay.DecayedLeaderboard` stores each score as a
double relative to its base time ``t0``; every number it takes is checked
here before anything changes: the decay settings (exactly one of
``half_life`` and ``tau``, a ``rebase_after`` that keeps weights finite),
times (finite POSIX seconds), points (finite, within the float range) and
the stored sums a write would make (finite, or ``OverflowError``).  Its
durable open makes the same settings checks before it creates anything.

Runtime complexity: O(1) per check

>>> _finite(1.5, "t"), _decay_tau(60.0, None, 64.0, {}) > 60.0
(1.5, True)
>>> check_points(float("nan"), "ann")
Traceback (most recent call last):
...
ValueError: points must be finite, not nan
"""

from __future__ import annotations

import math
from typing import Any, Final

from rankengine.board.scoring import Member, describe

__all__ = ["check_points", "check_sum"]

#: ``exp`` overflows past ~709.78 and underflows to 0 below ~-745; reads
#: whose decay exponent is larger than this go through logarithms instead.
_EXP_SAFE: Final = 700.0


def _decay_tau(
    half_life: float | None, tau: float | None, rebase_after: float, board_config: dict[str, Any]
) -> float:
    """The e-folding time the settings give, or the error they deserve (the
    checks of :class:`~rankengine.timed.decay.DecayedLeaderboard`, which its durable open makes
    before it creates anything).

    Runtime complexity: O(1)

    >>> _decay_tau(None, 10.0, 30.0, {})
    10.0
    >>> _decay_tau(None, None, 30.0, {})
    Traceback (most recent call last):
    ...
    ValueError: give exactly one of half_life and tau
    """
    if (half_life is None) == (tau is None):
        raise ValueError("give exactly one of half_life and tau")
    span = _positive(half_life if tau is None else tau, "half_life" if tau is None else "tau")
    if "order" in board_config and board_config["order"] != "desc":
        raise ValueError("a decayed board ranks the highest value first (order='desc')")
    if not (isinstance(rebase_after, (int, float)) and 0 < rebase_after <= _EXP_SAFE):
        raise ValueError(f"rebase_after must be in (0, {_EXP_SAFE}], not {rebase_after!r}")
    return span / math.log(2) if tau is None else span


def _number(value: object) -> float:
    assert isinstance(value, (int, float)), value  # a decayed board holds plain numbers
    return value


def _positive(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what} must be a number of seconds, not {value!r}")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{what} must be a positive finite number of seconds, not {value!r}")
    return float(value)


def _finite(value: object, what: str) -> float:
    """``value`` if it is a time a float holds; ``ValueError`` otherwise (an
    int past the float range included: ``math.isfinite`` would raise
    ``OverflowError`` converting it)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{what} must be a finite number of POSIX seconds, not {value!r}")
    try:
        finite = math.isfinite(value)
    except OverflowError:
        finite = False
    if not finite:
        shown = describe(value) if isinstance(value, int) else repr(value)
        raise ValueError(f"{what} must be a finite number of POSIX seconds, not {shown}")
    return value


def check_points(points: object, member: object) -> None:
    """Refuse points that are not a finite int or float, naming ``member``.

    Runtime complexity: O(1)
    """
    if isinstance(points, bool) or not isinstance(points, (int, float)):
        raise TypeError(f"points must be an int or a float, not {type(points).__name__}")
    if isinstance(points, int):
        try:
            float(points)  # math.isfinite would convert it, and overflow, without a word
        except OverflowError:
            raise OverflowError(
                f"points of {member!r} ({describe(points)}) are beyond the float range "
                "(about 1.8e308): a decayed score is a float"
            ) from None
    elif not math.isfinite(points):
        raise ValueError(f"points must be finite, not {points!r}")


def check_sum(total: float, member: Member) -> float:
    """``total`` if it is finite, else an OverflowError naming ``member``.

    Runtime complexity: O(1)
    """
    if not math.isfinite(total):
        raise OverflowError(
            f"the stored score of {member!r} would be {total}: points too large for a "
            "double even after re-basing"
        )
    return total
