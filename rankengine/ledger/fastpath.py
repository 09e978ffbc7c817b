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
  increment without the checks the event has passed already:
  :func:`~rankengine.board.direct.direct_incr`), ``PERIODIC`` (the same,
  on the board of the period its check routed the event to, when nothing
  else is due: see :func:`~rankengine.timed.state.held_period_incr`),
  ``TOPK`` (one count, without the checks the event has passed, the
  cells of a key counted lately remembered:
  :func:`~rankengine.trending.direct.direct_add`) or ``GENERIC`` (the
  view's own ``apply``, as the general path does).

From these the plan writes the one function an event runs
(:attr:`IncrPlan.record`: the checks, the record, the writes and the
result, in one straight run of lines) and a batch's feed
(:attr:`IncrPlan.quiet`).  An int past
:data:`~rankengine.board.direct.DIRECT_DELTA_LIMIT` in size never comes
here: added to a float score it has no float value, which the general
path's checks find.

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

from collections.abc import Callable, Iterable
from typing import Any, Final

from rankengine.board.direct import direct_incr
from rankengine.durable.records import EVENT, Event
from rankengine.ledger.adapters import Adapter, PeriodicAdapter, TopKAdapter
from rankengine.ledger.events import INCR, LedgerEvent
from rankengine.ledger.front import PENDING, LazyRecorded, Recorded
from rankengine.ledger.routes import NO_KEY
from rankengine.ledger.views import Outcome, View
from rankengine.timed.state import held_period_board, held_period_incr
from rankengine.trending.direct import CellMemo, direct_add

__all__ = ["BOARD", "CODE_NAMES", "GENERIC", "PERIODIC", "TOPK", "IncrPlan", "feed", "skip_checks"]

#: Tuples made without the Python-level ``__new__`` of a NamedTuple.
_new_tuple: Final = tuple.__new__

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


#: The lines of an :class:`IncrPlan`'s ``record`` for view ``i``, by how
#: it is fed: its check, run before anything is written (none for a board
#: that cannot refuse).  A periodic view's check leaves in ``o{i}`` the
#: period it routed the event to, when the event falls in it (else None).
_CHECK_LINES: Final = {
    GENERIC: ["    refused_by(v{i}, fields, now_ms)"],
    PERIODIC: [
        "    o{i} = a{i}._open",  # (start, end, open until, period) last routed to
        "    if o{i} is None or not (o{i}[0] <= t_s < o{i}[1] and now_s < o{i}[2]):",
        "        refused_by(v{i}, fields, now_ms)",
        "        o{i} = in_period(a{i}._open, t_s)",
    ],
    TOPK: [
        "    if a{i}.board.total >= a{i}.limit:  # no room for one more",
        "        refused_by(v{i}, fields, now_ms)",
    ],
}
#: ``quiet``'s (a batch's feed) own lines for a periodic view: the period
#: its checks routed the event to, if the event falls in it.
_ROUTED_LINES: Final = {PERIODIC: ["    o{i} = in_period(a{i}._open, t_s)"]}
#: The lines that write view ``i`` (in ``record`` and ``quiet``), leaving
#: its new score (or its own outcomes) in ``s{i}``.
_FEED_LINES: Final = {
    GENERIC: ["    s{i} = v{i}.apply(event, False)"],
    BOARD: ["    s{i} = direct_incr(a{i}.board, member, value)"],
    PERIODIC: [
        # the period board, written directly when nothing else is due
        # there (else through the periodic board, which routes it again)
        "    s{i} = None",
        "    if o{i} is not None:",
        "        s{i} = held_period_incr(a{i}.board, o{i}[3], now_s, member, value)",
        "    if s{i} is None:",
        "        s{i} = v{i}.apply(event or new_tuple(LedgerEvent, fields), False)",
    ],
    TOPK: [
        "    direct_add(a{i}.board, member, m{i})",
        "    s{i} = None  # (the estimate is read with ranks only)",
    ],
}
#: ``record``'s lines between the checks and the feed: one record, durable
#: under the policy (the event's change built here: to_change's, a call less).
_LOG_LINES: Final = [
    "    seq = ledger._seq + 1",
    "    changes = [(EVENT, member, INCR, value, t, None, None, None)]",
    "    files = ledger._files",
    "    if files is not None:",
    "        files.append(ledger._framer.frame(seq, stamp, changes), seq)",
    "    elif ledger._history is not None:",
    "        ledger._history.append(Event(seq, stamp, changes))",
    "    ledger._seq, ledger._last_ms, ledger._time = seq, stamp, now_ms",
    "    if ranks:",
    "        event = new_tuple(LedgerEvent, fields) if type(fields) is tuple else fields",
    "        try:",
    "            outcomes = feed_ranked(plan, event, now_ms, seq)",
    "        except Exception as exc:  # a view refused what it had passed: a bug",
    "            raise failed(ledger, plan, seq, exc) from exc",
    "        return new_tuple(Recorded, (seq, event, outcomes))",
    "    try:",
]


def in_period(cached: tuple[float, float, float, Any] | None, t_s: float) -> Any:
    """``cached`` (a periodic adapter's ``_open``) if the time ``t_s`` falls
    in its period, else None.

    Runtime complexity: O(1)
    """
    return cached if cached is not None and cached[0] <= t_s < cached[1] else None


def refused_by(view: View, fields: tuple[Any, ...], now_ms: int) -> None:
    """``view``'s check of one event (its fields, or the event), its
    refusal noted as such.

    Runtime complexity: the view's check
    """
    event = fields if type(fields) is LedgerEvent else _new_tuple(LedgerEvent, fields)
    try:
        view.check(event, now_ms, {})
    except Exception as exc:
        exc.add_note(f"(refused by view {view.name!r}; nothing was recorded)")
        raise


def failed(ledger: Any, plan: IncrPlan, seq: int, exc: Exception) -> Exception:
    """A view failed to apply event ``seq``, logged already (it had passed
    that view's check: a bug): every view left at ``seq - 1``, as the
    general path leaves them, and the error the ledger raises (it closes).

    Runtime complexity: O(V)
    """
    for _, view, _, _ in plan.feeds:
        view.seq = seq - 1
    return ledger._view_failed(seq, exc)  # type: ignore[no-any-return]


class IncrPlan:
    """The views in the order they are fed, and which must check an int
    increment first (see the module docstring).

    The per-event work is two functions written for this set of views when
    the plan is made (:attr:`source`): ``record`` (one event: the checks,
    the record, the feed, the result) and ``quiet`` (the feed of one event
    of a batch, without ranks), each one straight run of lines per view,
    the per-view decisions taken here, so that an event pays no loop over
    the views, no test of how each is fed and no call between the steps.
    Measured (``bench/ledger.py``'s four views, A/B in one run): see
    ``docs/ledger.md``.

    Runtime complexity: O(V) to build for V views; nothing per event

    >>> from rankengine.ledger.routes import Route
    >>> from rankengine.ledger.views import View
    >>> plan = IncrPlan([View("all", "board", {}, Route.of()),
    ...                  View("hot", "topk", {"k": 3}, Route.of())])
    >>> print(plan.source)
    def record(ledger, member, value, t, stamp, ranks):
        now_ms = ledger._time
        if t > now_ms:
            now_ms = t
        t_s, now_s = t / 1000, now_ms / 1000
        fields = (member, "incr", value, t, None, None, None)
        if a1.board.total >= a1.limit:  # no room for one more
            refused_by(v1, fields, now_ms)
        seq = ledger._seq + 1
        changes = [(EVENT, member, INCR, value, t, None, None, None)]
        files = ledger._files
        if files is not None:
            files.append(ledger._framer.frame(seq, stamp, changes), seq)
        elif ledger._history is not None:
            ledger._history.append(Event(seq, stamp, changes))
        ledger._seq, ledger._last_ms, ledger._time = seq, stamp, now_ms
        if ranks:
            event = new_tuple(LedgerEvent, fields) if type(fields) is tuple else fields
            try:
                outcomes = feed_ranked(plan, event, now_ms, seq)
            except Exception as exc:  # a view refused what it had passed: a bug
                raise failed(ledger, plan, seq, exc) from exc
            return new_tuple(Recorded, (seq, event, outcomes))
        try:
            v0.time_ms = now_ms
            v0.seq = seq
            s0 = direct_incr(a0.board, member, value)
            v1.time_ms = now_ms
            v1.seq = seq
            direct_add(a1.board, member, m1)
            s1 = None  # (the estimate is read with ranks only)
        except Exception as exc:  # a view refused what it had passed: a bug
            raise failed(ledger, plan, seq, exc) from exc
        return new_tuple(LazyRecorded, (seq, fields, [PENDING, names, s0, s1]))
    <BLANKLINE>
    def quiet(event, member, value, t_s, now_ms, now_s, seq):
        v0.time_ms = now_ms
        v0.seq = seq
        s0 = direct_incr(a0.board, member, value)
        v1.time_ms = now_ms
        v1.seq = seq
        direct_add(a1.board, member, m1)
        s1 = None  # (the estimate is read with ranks only)
        return [PENDING, names, s0, s1]
    """

    __slots__ = ("checks", "feeds", "names", "quiet", "record", "source")

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
        #: the views' names, in order (what a LazyRecorded's outcomes are made with)
        self.names = tuple(name for _, _, _, name in self.feeds)
        # a view checked and fed through its own check and apply reads the
        # event: then made at once, else only where one is read (ranks, a
        # refusal, a periodic write routed again)
        made = any(code == GENERIC for code, _, _, _ in self.feeds)
        routed = not made and any(code == PERIODIC for code, _, _, _ in self.feeds)
        record = [
            "def record(ledger, member, value, t, stamp, ranks):",
            "    now_ms = ledger._time",
            "    if t > now_ms:",
            "        now_ms = t",
            "    t_s, now_s = t / 1000, now_ms / 1000",
            '    fields = (member, "incr", value, t, None, None, None)',
        ]
        record += ["    fields = event = new_tuple(LedgerEvent, fields)"] if made else []
        quiet = ["def quiet(event, member, value, t_s, now_ms, now_s, seq):"]
        quiet += ["    fields = event"] if routed else []
        feeds: list[str] = []
        for i, (code, _, _, _) in enumerate(self.feeds):
            record += [line.format(i=i) for line in _CHECK_LINES.get(code, [])]
            quiet += [line.format(i=i) for line in _ROUTED_LINES.get(code, [])]
            feeds += [f"    v{i}.time_ms = now_ms", f"    v{i}.seq = seq"]
            feeds += [line.format(i=i) for line in _FEED_LINES[code]]
        scores = ", ".join(["PENDING", "names"] + [f"s{i}" for i in range(len(self.feeds))])
        record += _LOG_LINES + (["        event = None"] if routed else [])
        record += ["    " + line for line in feeds or ["    pass  # (no view)"]]
        record += [
            "    except Exception as exc:  # a view refused what it had passed: a bug",
            "        raise failed(ledger, plan, seq, exc) from exc",
            f"    return new_tuple(LazyRecorded, (seq, fields, [{scores}]))",
        ]
        quiet += [*feeds, f"    return [{scores}]"]
        #: the source of ``record`` and ``quiet`` (see the class docstring)
        self.source = "\n".join(record) + "\n\n" + "\n".join(quiet)
        space: dict[str, Any] = {
            "plan": self,
            "names": self.names,
            "PENDING": PENDING,
            "EVENT": EVENT,
            "INCR": INCR,
            "Event": Event,
            "LedgerEvent": LedgerEvent,
            "Recorded": Recorded,
            "LazyRecorded": LazyRecorded,
            "new_tuple": _new_tuple,
            "refused_by": refused_by,
            "in_period": in_period,
            "failed": failed,
            "feed_ranked": _feed_ranked,
            "direct_incr": direct_incr,
            "direct_add": direct_add,
            "held_period_incr": held_period_incr,
        }
        for i, (_, view, adapter, _) in enumerate(self.feeds):
            space[f"v{i}"], space[f"a{i}"] = view, adapter
            space[f"m{i}"] = CellMemo()  # (a trending view's cells, for the plan's life)
        exec(compile(self.source, "<IncrPlan>", "exec"), space)  # (lines of this module's own)
        #: record(ledger, member, value, t, stamp, ranks): one int increment
        #: at event time ``t`` and record time ``stamp``, under the ledger's
        #: lock: checked, logged, fed; its Recorded (a LazyRecorded without ranks)
        self.record: Callable[..., Recorded] = space["record"]
        #: quiet(event, member, value, t_s, now_ms, now_s, seq): feed one
        #: checked and logged event without ranks (a batch's)
        self.quiet: Callable[..., list[Any]] = space["quiet"]


def skip_checks(plan: IncrPlan, events: list[LedgerEvent], now_ms: int) -> list[bool]:
    """Per view of ``plan.checks``: whether every event of a batch of int
    increments passes its check without asking it -- a periodic view whose
    open period (the one last routed to) holds every event's time, a
    trending view with room for them all.  A view not skipped checks
    every event of the batch, each after the ones before it.

    Runtime complexity: O(len(plan.checks) + len(events))
    """
    times = [event.t_ms / 1000 for event in events]
    now_s = max(now_ms, *(event.t_ms for event in events)) / 1000  # the last event's now
    skips: list[bool] = []
    for code, _view, adapter in plan.checks:
        if code == PERIODIC:
            cached = adapter._open
            skips.append(
                cached is not None
                and now_s < cached[2]
                and all(cached[0] <= t_s < cached[1] for t_s in times)
            )
        elif code == TOPK:
            skips.append(adapter.board.total + len(events) <= adapter.limit)
        else:
            skips.append(False)
    return skips


def feed(plan: IncrPlan, event: LedgerEvent, now_ms: int, seq: int, ranks: bool) -> list[Any]:
    """Apply one int increment, already checked and logged as ``seq``, to
    every view as ``plan`` says; return the views' outcomes (what the
    general path's ``View.apply`` returns) with ``ranks``, else what a
    :class:`~rankengine.ledger.front.LazyRecorded` makes them from.

    Runtime complexity: O(V log N) for V views of N members
    """
    if ranks:
        return _feed_ranked(plan, event, now_ms, seq)
    t_ms = event.t_ms
    return plan.quiet(event, event.member, event.value, t_ms / 1000, now_ms, now_ms / 1000, seq)


def _feed_ranked(plan: IncrPlan, event: LedgerEvent, now_ms: int, seq: int) -> list[Outcome]:
    """:func:`feed` with each exact view's rank before and after.

    Runtime complexity: O(V log N) for V views of N members
    """
    member, value = event.member, event.value
    t_s, now_s = event.t_ms / 1000, now_ms / 1000
    outcomes: list[Outcome] = []
    add = outcomes.append
    for code, view, adapter, name in plan.feeds:
        view.time_ms = now_ms
        view.seq = seq
        if code == BOARD:
            board = adapter.board
            before = board.rank(member)
            score = direct_incr(board, member, value)
            add(_new_tuple(Outcome, (name, NO_KEY, score, before, board.rank(member))))
        elif code == PERIODIC:
            cached = adapter._open
            target = None
            if cached is not None and cached[0] <= t_s < cached[1]:
                target = held_period_board(adapter.board, cached[3], now_s)
            if target is None:
                outcomes += view.apply(event, True)
                continue
            before = target.rank(member)
            score = direct_incr(target, member, value)
            add(_new_tuple(Outcome, (name, NO_KEY, score, before, target.rank(member))))
        elif code == TOPK:
            topk = adapter.board
            direct_add(topk, member)
            # (the estimate is a second pass over the sketch: with ranks only)
            add(_new_tuple(Outcome, (name, NO_KEY, topk.estimate(member), None, None)))
        else:
            outcomes += view.apply(event, True)
    return outcomes
