"""The commonest event's dispatch: an int increment, worked out once per view.

Most events a game server records are the same: an ``int`` increment of a
``str`` member, no route attributes, no ``when=``, no subscriber listening
(ranks asked for or not).  :meth:`Ledger.record <rankengine.ledger.ledger.Ledger.record>`
sends those down a path whose per-view decisions are made **once**, when
the set of views changes, not per event: an :class:`IncrPlan` lists

* ``checks``: the views such an event must be checked against -- a
  periodic view (the event must fall in an open period: a late one is
  refused; one look at the period last routed to), a trending view (its
  counters must have room: one comparison) and any view of another kind
  or with a route (checked as the general path checks it).  A plain
  board cannot refuse it, so it is not in the list at all;
* ``feeds``: every view with how it is written -- ``BOARD`` (the board's
  own ``incr``), ``PERIODIC`` (the board of the period its check routed
  the event to, when nothing else is due: see
  :func:`~rankengine.timed.state.held_period_board`), ``TOPK`` (one count)
  or ``GENERIC`` (the view's own ``apply``, as the general path does).

The plan is dropped (``ledger._plan = None``) whenever views are added,
removed, rebuilt or restored; it holds the views and their adapters, never
their boards (an adapter's board is replaced when it is restored).

Measured (``bench/ledger.py``, four views): see ``docs/ledger.md``.

>>> from rankengine.ledger.routes import Route
>>> from rankengine.ledger.views import View
>>> views = [View("all", "board", {}, Route.of()),
...          View("week", "periodic", {"calendar": "weekly"}, Route.of()),
...          View("eu", "board", {}, Route.of(where={"region": "eu"})),
...          View("hot", "topk", {"k": 3}, Route.of())]
>>> plan = IncrPlan(views)
>>> [view.name for _, view, _ in plan.checks]
['week', 'eu', 'hot']
>>> [(CODE_NAMES[code], view.name) for code, view, _, _ in plan.feeds]
[('board', 'all'), ('periodic', 'week'), ('generic', 'eu'), ('topk', 'hot')]
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from rankengine.ledger.adapters import Adapter, PeriodicAdapter, TopKAdapter
from rankengine.ledger.routes import NO_KEY
from rankengine.ledger.views import View

__all__ = ["BOARD", "CODE_NAMES", "GENERIC", "PERIODIC", "TOPK", "IncrPlan"]

#: How a view is fed an int increment (see the module docstring).
GENERIC: Final = 0
BOARD: Final = 1
PERIODIC: Final = 2
TOPK: Final = 3
#: The codes by name (for tests and pictures).
CODE_NAMES: Final = ("generic", "board", "periodic", "topk")


def _code(view: View) -> tuple[int, Adapter | None]:
    """How ``view`` takes an int increment, and its one adapter (None: keyed)."""
    adapter = view.adapters.get(NO_KEY) if view.takes_everything else None
    if adapter is None:
        return GENERIC, None
    kind = type(adapter)
    if adapter.free_int_incr and kind is Adapter:
        return BOARD, adapter
    if adapter.free_int_incr and kind is PeriodicAdapter:
        return PERIODIC, adapter
    if isinstance(adapter, TopKAdapter) and kind is TopKAdapter and adapter.counts_one:
        return TOPK, adapter
    return GENERIC, adapter


class IncrPlan:
    """The views in the order they are fed, and which must check an int
    increment first (see the module docstring).

    Runtime complexity: O(V) to build for V views; nothing per event
    """

    __slots__ = ("checks", "feeds")

    def __init__(self, views: Iterable[View]) -> None:
        #: (code, view, adapter) of the views that check the event
        self.checks: list[tuple[int, View, Any]] = []
        #: (code, view, adapter, view name) of every view, in order
        self.feeds: list[tuple[int, View, Any, str]] = []
        for view in views:
            code, adapter = _code(view)
            if code != BOARD:
                self.checks.append((code, view, adapter))
            self.feeds.append((code, view, adapter, view.name))
