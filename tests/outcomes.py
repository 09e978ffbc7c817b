"""Results of board calls as strictly comparable values, for the tests that
run the same calls on several boards (or a board and the model) and compare
what each returned or raised."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any


def exact(value: Any, *, containers: bool = True) -> Any:
    """A value with the type of every number in it, for strict comparison
    (``1`` and ``1.0`` differ, so do ``0.0`` and ``-0.0``), and of every
    list or tuple unless ``containers`` is false (a model that returns
    plain tuples where a board returns ``Entry`` rows)."""
    if isinstance(value, (list, tuple)):
        items = [exact(v, containers=containers) for v in value]
        return (type(value).__name__, items) if containers else items
    if isinstance(value, dict):
        return {k: exact(v, containers=containers) for k, v in value.items()}
    if isinstance(value, float) and value == 0:
        return "float", math.copysign(1.0, value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return type(value).__name__, value
    return value


def outcome(action: Callable[[], Any], *, containers: bool = True) -> Any:
    """What ``action()`` returned (see :func:`exact`), or the type of the
    error it raised."""
    try:
        return exact(action(), containers=containers)
    except (TypeError, ValueError, KeyError, IndexError) as exc:
        return ("raises", type(exc).__name__)


def apply(board: Any, op: tuple[Any, ...], *, containers: bool = True) -> Any:
    """Run one write ``op`` (a method name and its arguments) on ``board``
    and return its :func:`outcome`.  ``set`` takes ``member, score, when``
    and optionally ``meta``; ``pop_best``/``pop_worst`` take ``count`` and
    optionally ``with_meta``; any other name gets its arguments positionally."""
    name, *args = op

    def call() -> Any:
        if name == "set":
            member, score, when, *meta = args
            return board.set(member, score, when=when, meta=meta[0] if meta else None)
        if name == "incr":
            member, delta, when = args
            return board.incr(member, delta, when=when)
        if name == "set_many":
            return board.set_many(args[0], when=args[1])
        if name == "remove_by_score":
            low, high, low_in, high_in = args
            return board.remove_by_score(low, high, min_inclusive=low_in, max_inclusive=high_in)
        if name in ("pop_best", "pop_worst"):
            count, *with_meta = args
            return getattr(board, name)(count, with_meta=bool(with_meta and with_meta[0]))
        return getattr(board, name)(*args)

    return outcome(call, containers=containers)
