"""A one-view ledger of a time board, with that board's API.

``PeriodicLeaderboard.open(path, ...)`` on a ledger directory with one
unkeyed ``"periodic"`` view (a periodic board ``rankengine migrate``
converted) returns a :class:`LedgerPeriodic`: reads are the view's
``PeriodicLeaderboard``'s own; each write is an event of the ledger at
its time ``t`` (default: the clock given to the open), so the view's
periods are those of the events, exactly as a replay rebuilds them.  A
pop or a prune reads the members it takes under the ledger's lock, then
records their removals at ``t`` as one batch.  A sliding window's
(``SlidingWindowLeaderboard.open``) is :class:`LedgerWindow`: the writes
of its buckets, each followed by the view's refresh; a decayed board's
(``DecayedLeaderboard.open``) is :class:`LedgerDecayed`.

What differs from a durable periodic board: time moves with the events
(the ledger's clock is the latest event time), not with the wall clock
of reads, so a period closes when the first event past its end (and
grace) is recorded; ``on_close`` callbacks are not supported (subscribe
to the ledger instead); dropped periods are not archived.  As on any
ledger, the open leaves closed periods unloaded until their first read;
``PeriodicLeaderboard.open(..., preload=True)`` loads them on a background
thread once open (:attr:`LedgerPeriodic.preloader`), and
``face.ledger.preload()`` loads them now
(:meth:`~rankengine.ledger.ledger.Ledger.preload`).

>>> import tempfile
>>> from rankengine import Ledger, PeriodicLeaderboard
>>> with tempfile.TemporaryDirectory() as tmp:
...     with Ledger.open(tmp) as ledger:
...         ledger.add_view("periodic", "periodic", calendar="daily")
...     with PeriodicLeaderboard.open(tmp, "daily", clock=lambda: 86_400.0) as daily:
...         daily.incr("ann", 5), daily.incr("bob", 2, t=86_500.0), daily.current.name
...         daily.ledger.last_seq
...     with PeriodicLeaderboard.open(tmp, "daily", clock=lambda: 90_000.0, preload=True) as again:
...         again.preloader.wait(), again.unloaded()
(5, 2, '1970-01-02')
2
(True, [])
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from rankengine.board.checks import check_count, check_flag, check_members, member_list
from rankengine.board.core import MISSING, Entry
from rankengine.board.scoring import check_member
from rankengine.durable.forget import Forgotten
from rankengine.ledger.front import first_score
from rankengine.ledger.ledger import Ledger
from rankengine.ledger.oneview import count_changed
from rankengine.ledger.preload import Preloader
from rankengine.ledger.routes import NO_KEY
from rankengine.timed.calendars import calendar
from rankengine.timed.periodic import PeriodicLeaderboard
from rankengine.timed.state import period_board, route_period

__all__ = ["LedgerDecayed", "LedgerPeriodic", "LedgerWindow", "open_time_view"]

#: The periodic board's own writes that have no event: refused, naming why.
_NO_EVENT: Final = {
    "tick": "time moves with the events recorded",
    "clear": "a periodic board has no clear()",
    "archived": "a ledger view does not archive dropped periods",
    "load_archived": "a ledger view does not archive dropped periods",
}
#: Options of the old open a ledger view takes (the others are refused).
_VIEW_OPTIONS: Final = ("keep", "grace", "late", "order", "tie_break", "rank_style", "backend")


class _Face:
    """What the time boards' faces share: the ledger, the view, the clock
    that times writes, and the durable extras."""

    def __init__(self, ledger: Ledger, view: str, clock: Callable[[], float]) -> None:
        self.ledger = ledger
        self.view = view
        self._clock = clock

    def _t_ms(self, t: float | None) -> int:
        value = self._clock() if t is None else t
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"t must be a number of seconds, not {value!r}")
        return round(value * 1000)

    def compact(self) -> int:
        """Snapshot the view (the ledger's compact)."""
        return self.ledger.compact()

    def forget(self, member: Any) -> Forgotten:
        """Forget ``member`` in the view and every file (the ledger's forget)."""
        return self.ledger.forget(member)

    def close(self) -> None:
        """Close the ledger."""
        self.ledger.close()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check(self) -> None:
        self.ledger._check()


class LedgerPeriodic(_Face):
    """A periodic board whose writes are events of a one-view ledger (see
    the module docstring); :attr:`ledger` is the ledger."""

    # ------------------------------------------------------------------
    # Reads: the view's periodic board's
    # ------------------------------------------------------------------
    @property
    def periodic(self) -> PeriodicLeaderboard:
        """The view's ``PeriodicLeaderboard`` (read it; writing it directly
        would bypass the log)."""
        return self.ledger[self.view]  # type: ignore[no-any-return]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        why = _NO_EVENT.get(name)
        if why is not None:
            raise AttributeError(f"a periodic board on a ledger has no {name}(): {why}")
        return getattr(self.ledger[self.view], name)

    def __repr__(self) -> str:
        return f"LedgerPeriodic({self.ledger.path!r}, view={self.view!r})"

    @property
    def preloader(self) -> Preloader | None:
        """The background preload (``open(..., preload=True)`` or
        ``face.ledger.preload(background=True)``), if one was started."""
        return self.ledger.preloader

    # ------------------------------------------------------------------
    # Writes: events at t
    # ------------------------------------------------------------------
    def _target(self, t_ms: int) -> Any:
        """The period board a write at ``t_ms`` goes to, if it exists (no
        time moves: the route is read, not taken)."""
        periodic = self.periodic
        now = max(self.ledger._time, t_ms) / 1000  # (the ledger's clock once recorded)
        period = route_period(periodic, t_ms / 1000, now)
        return None if period is None else period_board(periodic, period.name)

    def _state(self, member: Any, t_ms: int) -> Any:
        board = self._target(t_ms)
        if board is None or member not in board:
            return MISSING
        tie = board._tie.get(member) if board._first else None
        return (board.score(member), tie, board.meta(member))

    def _record(self, member: Any, value: Any, op: str, t_ms: int, **fields: Any) -> Any:
        return self.ledger.record(member, value, op=op, t_ms=t_ms, ranks=False, **fields)

    def incr(self, member: Any, delta: Any = 1, *, t: float | None = None, when: Any = None) -> Any:
        """``PeriodicLeaderboard.incr``, recorded as an event at ``t``."""
        return first_score(self._record(member, delta, "incr", self._t_ms(t), when=when))

    def set(
        self,
        member: Any,
        score: Any,
        *,
        t: float | None = None,
        when: Any = None,
        meta: Mapping[str, Any] | None = None,
    ) -> bool:
        """``PeriodicLeaderboard.set``, recorded as an event at ``t``."""
        t_ms = self._t_ms(t)
        with self.ledger._lock:
            before = self._state(check_member(member), t_ms)
            self._record(member, score, "set", t_ms, when=when, meta=meta)
            return bool(self._state(member, t_ms) != before)

    def _pairs(self, items: Any, what: str) -> list[tuple[Any, Any]]:
        """``items`` checked as a board checks a batch (an empty board with
        the view's settings does it, so the errors are a board's)."""
        pairs = list(items.items()) if isinstance(items, Mapping) else items
        return self._scratch()._check_pairs(pairs, what)  # type: ignore[no-any-return]

    def _scratch(self) -> Any:
        """An empty board with the view's settings (checks, never written)."""
        return self.ledger._views[self.view].template.new_board()

    def _batch(self, events: list[dict[str, Any]]) -> list[Any]:
        return self.ledger.record_many(events) if events else []

    def set_many(self, items: Any, *, t: float | None = None, when: Any = None) -> int:
        """``PeriodicLeaderboard.set_many``, one batch of events at ``t``."""
        t_ms = self._t_ms(t)
        pairs = self._pairs(items, "score")
        with self.ledger._lock:
            before = {}
            for m, _ in pairs:
                state = self._state(check_member(m), t_ms)
                before[m] = MISSING if state is MISSING else state[0]
            events = [
                {"member": m, "value": s, "op": "set", "when": when, "t_ms": t_ms} for m, s in pairs
            ]
            return count_changed(before, self._batch(events))

    def incr_many(self, items: Any, *, t: float | None = None) -> dict[Any, Any]:
        """``PeriodicLeaderboard.incr_many``, one batch of events at ``t``."""
        t_ms = self._t_ms(t)
        pairs = self._pairs(items, "delta")
        done = self._batch([{"member": m, "value": d, "t_ms": t_ms} for m, d in pairs])
        return {r.event.member: r.outcomes[0].score for r in done if r.outcomes}

    def remove(self, member: Any, *, t: float | None = None) -> bool:
        """``PeriodicLeaderboard.remove``, recorded at ``t`` when present."""
        t_ms = self._t_ms(t)
        with self.ledger._lock:
            if self._state(check_member(member), t_ms) is MISSING:
                return False
            self._record(member, None, "remove", t_ms)
            return True

    def _removals(self, members: Iterable[Any], t_ms: int) -> int:
        present = list(dict.fromkeys(members))
        self._batch([{"member": m, "op": "remove", "t_ms": t_ms} for m in present])
        return len(present)

    def remove_many(self, members: Iterable[Any], *, t: float | None = None) -> int:
        """``PeriodicLeaderboard.remove_many``, one batch at ``t``."""
        t_ms = self._t_ms(t)
        with self.ledger._lock:
            wanted = check_members(self._scratch()._check_member, member_list(members))
            return self._removals((m for m in wanted if self._state(m, t_ms) is not MISSING), t_ms)

    def set_meta(
        self, member: Any, meta: Mapping[str, Any] | None, *, t: float | None = None
    ) -> None:
        """``PeriodicLeaderboard.set_meta``, recorded at ``t``."""
        t_ms = self._t_ms(t)
        with self.ledger._lock:
            if self._state(check_member(member), t_ms) is MISSING:
                raise KeyError(f"no member {member!r}: add a score before its metadata")
            self._record(member, None, "meta", t_ms, meta=meta)

    def _prune(self, t: float | None, pick: Callable[[Any], list[Any]]) -> tuple[list[Any], int]:
        t_ms = self._t_ms(t)
        board = self._target(t_ms)
        rows = pick(self._scratch() if board is None else board)  # (the checks: a board's)
        return rows, t_ms

    def pop_best(
        self, count: int = 1, *, t: float | None = None, with_meta: bool = False
    ) -> list[Entry]:
        """``PeriodicLeaderboard.pop_best``: the rows read, their removals recorded."""
        with self.ledger._lock:
            rows, t_ms = self._prune(t, lambda b: b.top(count, style="unique", with_meta=with_meta))
            self._removals((e.member for e in rows), t_ms)
            return rows

    def pop_worst(
        self, count: int = 1, *, t: float | None = None, with_meta: bool = False
    ) -> list[Entry]:
        """``PeriodicLeaderboard.pop_worst``: the rows read, their removals recorded."""
        with self.ledger._lock:

            def worst(board: Any) -> list[Any]:
                n = len(board)
                first = max(1, n - count + 1)
                rows = board.by_rank(first, n, style="unique", with_meta=with_meta) if count else []
                return list(reversed(rows))

            rows, t_ms = self._prune(t, worst)
            self._removals((e.member for e in rows), t_ms)
            return rows

    def remove_by_rank(self, start: int, stop: int, *, t: float | None = None) -> int:
        """``PeriodicLeaderboard.remove_by_rank``, as removals at ``t``."""
        with self.ledger._lock:
            rows, t_ms = self._prune(t, lambda b: b.by_rank(start, stop))
            return self._removals((e.member for e in rows), t_ms)

    def remove_by_score(
        self,
        min: Any,  # the contract's names: a caller may pass min=, max=
        max: Any,
        *,
        min_inclusive: bool = True,
        max_inclusive: bool = True,
        t: float | None = None,
    ) -> int:
        """``PeriodicLeaderboard.remove_by_score``, as removals at ``t``."""
        flags = {"min_inclusive": min_inclusive, "max_inclusive": max_inclusive}
        low, high = min, max
        with self.ledger._lock:
            rows, t_ms = self._prune(t, lambda b: b.by_score(low, high, **flags))
            return self._removals((e.member for e in rows), t_ms)

    def keep_top(self, n: int, *, t: float | None = None) -> int:
        """``PeriodicLeaderboard.keep_top``, as removals at ``t``."""
        with self.ledger._lock:
            rows, t_ms = self._prune(t, lambda b: b.by_rank(n + 1, -1) if n < len(b) else [])
            return self._removals((e.member for e in rows), t_ms)


class LedgerWindow(LedgerPeriodic):
    """A sliding window whose writes are events of a one-view ledger: the
    writes of its buckets (a periodic board) at ``t``, each followed by the
    view's refresh; reads are the window's own.  A window has no pops or
    prunes (its standings are sums over buckets)."""

    @property
    def periodic(self) -> PeriodicLeaderboard:
        """The window's buckets (a ``PeriodicLeaderboard``)."""
        return self.ledger[self.view].buckets  # type: ignore[no-any-return]

    @property
    def window(self) -> Any:
        """The view's ``SlidingWindowLeaderboard`` (read it; writing it
        directly would bypass the log)."""
        return self.ledger[self.view]

    def __repr__(self) -> str:
        return f"LedgerWindow({self.ledger.path!r}, view={self.view!r})"

    def __len__(self) -> int:
        return len(self.window)

    def __contains__(self, member: object) -> bool:
        return member in self.window

    def __iter__(self) -> Any:
        return iter(self.window)

    def __getitem__(self, member: Any) -> Any:
        return self.window[member]

    def incr(self, member: Any, delta: Any = 1, *, t: float | None = None, when: Any = None) -> Any:
        """``SlidingWindowLeaderboard.incr``: the new score in the bucket of ``t``."""
        t_ms = self._t_ms(t)
        with self.ledger._lock:
            before = self._state(check_member(member), t_ms)
            self._record(member, delta, "incr", t_ms, when=when)
            after = self._state(member, t_ms)
            if after is MISSING or (when is not None and after == before):
                return None
            return after[0]

    def _no_prune(self, *_args: Any, **_kwargs: Any) -> Any:
        raise AttributeError(
            "a sliding window has no pops or prunes: its standings are sums over buckets "
            "(remove a member from a bucket with remove(member, t=...))"
        )

    pop_best = pop_worst = remove_by_rank = remove_by_score = keep_top = _no_prune


class LedgerDecayed(_Face):
    """A decayed board whose writes are events of a one-view ledger: ``add``
    an ``incr`` event of the points at ``t``, ``set`` a ``set`` event,
    removals and metadata events at the open's clock; reads are the view's
    ``DecayedLeaderboard``'s, decayed to the ledger's time (the latest
    event's), or to ``at=``.  ``rebase`` has no event: the view re-bases
    by itself as events move its time."""

    @property
    def decayed(self) -> Any:
        """The view's ``DecayedLeaderboard`` (read it; writing it directly
        would bypass the log)."""
        return self.ledger[self.view]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name == "rebase":
            raise AttributeError(
                name if name != "rebase" else "a decayed view re-bases with its events"
            )
        found = getattr(self.ledger[self.view], name)
        if callable(found) and _takes_at(type(self.ledger[self.view]), name):
            # a read decays to the open's clock, as the board's own did (the
            # view's clock is its last event's time)
            def read(*args: Any, **kwargs: Any) -> Any:
                if kwargs.get("at") is None:
                    kwargs["at"] = self._clock()
                return found(*args, **kwargs)

            return read
        return found

    def __repr__(self) -> str:
        return f"LedgerDecayed({self.ledger.path!r}, view={self.view!r})"

    def __len__(self) -> int:
        return len(self.decayed)

    def __contains__(self, member: object) -> bool:
        return member in self.decayed

    def __iter__(self) -> Any:
        return iter(self.decayed)

    def __getitem__(self, member: Any) -> Any:
        if member not in self.decayed:
            raise KeyError(member)
        return self.decayed.score(member, at=self._clock())

    def _scratch(self) -> Any:
        return self.ledger._views[self.view].template.new_board()

    def _state(self, member: Any) -> Any:
        stored = self.decayed.board
        if member not in stored:
            return MISSING
        tie = stored._tie.get(member) if stored._first else None
        return (stored.score(member), tie, stored.meta(member))

    def _record(self, member: Any, value: Any, op: str, t: float | None, **fields: Any) -> Any:
        t_ms = self._t_ms(t)
        return self.ledger.record(member, value, op=op, t_ms=t_ms, ranks=False, **fields)

    def _batch(self, events: list[dict[str, Any]]) -> list[Any]:
        return self.ledger.record_many(events) if events else []

    def add(self, member: Any, points: Any, *, t: float | None = None) -> Any:
        """``DecayedLeaderboard.add``, recorded as an ``incr`` event at ``t``."""
        return self._record(member, points, "incr", t).outcomes[0].score

    def add_many(self, items: Any, *, t: float | None = None) -> dict[Any, Any]:
        """``DecayedLeaderboard.add_many``, one batch of events at ``t``."""
        t_ms = self._t_ms(t)
        pairs = self._scratch()._check_pairs(
            list(items.items()) if isinstance(items, Mapping) else items, "delta"
        )
        done = self._batch([{"member": m, "value": p, "t_ms": t_ms} for m, p in pairs])
        return {r.event.member: r.outcomes[0].score for r in done}

    def set(self, member: Any, value: Any, *, t: float | None = None) -> bool:
        """``DecayedLeaderboard.set``, recorded as a ``set`` event at ``t``."""
        with self.ledger._lock:
            before = self._state(check_member(member))
            self._record(member, value, "set", t)
            return bool(self._state(member) != before)

    def set_many(self, items: Any, *, t: float | None = None) -> int:
        """``DecayedLeaderboard.set_many``, one batch of events at ``t``."""
        t_ms = self._t_ms(t)
        pairs = self._scratch()._check_pairs(
            list(items.items()) if isinstance(items, Mapping) else items, "score"
        )
        with self.ledger._lock:
            at = max(self.ledger._time, t_ms) / 1000  # (the outcomes' time: the batch's)
            decayed = self.decayed
            before = {m: decayed.score(m, at=at) if m in decayed else MISSING for m, _ in pairs}
            events = [{"member": m, "value": v, "op": "set", "t_ms": t_ms} for m, v in pairs]
            return count_changed(before, self._batch(events))

    def remove(self, member: Any) -> bool:
        """``DecayedLeaderboard.remove``, recorded when present."""
        with self.ledger._lock:
            if check_member(member) not in self.decayed:
                return False
            self._record(member, None, "remove", None)
            return True

    def _removals(self, members: Iterable[Any]) -> int:
        present = list(dict.fromkeys(members))
        t_ms = self._t_ms(None)
        self._batch([{"member": m, "op": "remove", "t_ms": t_ms} for m in present])
        return len(present)

    def remove_many(self, members: Iterable[Any]) -> int:
        """``DecayedLeaderboard.remove_many``, one batch of removals."""
        with self.ledger._lock:
            wanted = check_members(self._scratch()._check_member, member_list(members))
            return self._removals(m for m in wanted if m in self.decayed)

    def set_meta(self, member: Any, meta: Mapping[str, Any] | None) -> None:
        """``DecayedLeaderboard.set_meta``, recorded as a ``meta`` event."""
        with self.ledger._lock:
            if check_member(member) not in self.decayed:
                raise KeyError(f"no member {member!r}: add a score before its metadata")
            self._record(member, None, "meta", None, meta=meta)

    def pop_best(self, count: int = 1, *, with_meta: bool = False) -> list[Entry]:
        """``DecayedLeaderboard.pop_best``: the rows read, their removals recorded."""
        with self.ledger._lock:
            decayed = self.decayed
            rows = decayed._convert(_rows(decayed.board, count, True, with_meta), self._clock())
            self._removals(e.member for e in rows)
            return rows  # type: ignore[no-any-return]

    def pop_worst(self, count: int = 1, *, with_meta: bool = False) -> list[Entry]:
        """``DecayedLeaderboard.pop_worst``: the rows read, their removals recorded."""
        with self.ledger._lock:
            decayed = self.decayed
            rows = decayed._convert(_rows(decayed.board, count, False, with_meta), self._clock())
            self._removals(e.member for e in rows)
            return rows  # type: ignore[no-any-return]

    def keep_top(self, n: int) -> int:
        """``DecayedLeaderboard.keep_top``, as removals."""
        with self.ledger._lock:
            stored = self.decayed.board
            gone = stored.by_rank(n + 1, -1) if check_count(n, "n") < len(stored) else []
            return self._removals(e.member for e in gone)

    def remove_by_rank(self, start: int, stop: int) -> int:
        """``DecayedLeaderboard.remove_by_rank``, as removals."""
        with self.ledger._lock:
            return self._removals(e.member for e in self.decayed.board.by_rank(start, stop))


#: (class, method name) -> whether the method takes ``at=``.
_TAKES_AT: dict[tuple[Any, str], bool] = {}


def _takes_at(cls: Any, name: str) -> bool:
    """True when ``cls.name`` takes ``at=`` (a decayed board's reads)."""
    key = (cls, name)
    if key not in _TAKES_AT:
        try:
            _TAKES_AT[key] = "at" in inspect.signature(getattr(cls, name)).parameters
        except (TypeError, ValueError):
            _TAKES_AT[key] = False
    return _TAKES_AT[key]


def _rows(board: Any, count: int, best: bool, with_meta: bool) -> list[Entry]:
    """What ``board.pop_best(count)`` / ``pop_worst`` would return, read
    only (the same checks, unique ranks)."""
    count = check_count(count, "count")
    check_flag(with_meta, "with_meta")
    n = len(board)
    count = min(count, n)
    if count == 0:
        return []
    if best:
        return board._entries_between(0, count, "unique", with_meta)  # type: ignore[no-any-return]
    return board._entries_between(n - count, n, "unique", with_meta)[::-1]  # type: ignore[no-any-return]


def open_time_view(directory: str, kind: str, options: dict[str, Any]) -> Any:
    """What ``PeriodicLeaderboard.open`` returns for a ledger directory:
    its one unkeyed ``kind`` view as a :class:`LedgerPeriodic` (other kinds
    are refused, naming what is there).

    Runtime complexity: the ledger's open
    """
    options = dict(options)
    if kind == "decayed":
        return _open_decayed(directory, options)
    cal = options.pop("calendar")
    clock = options.pop("clock")
    fsync = options.pop("fsync", "everysec")
    # (a periodic view's closed periods load lazily; a window's buckets are
    # all loaded at the open, so its open takes no preload=)
    preload = options.pop("preload", False) if kind == "periodic" else False
    if kind == "window":
        options["buckets"] = options.pop("buckets")
        options.pop("refresh_every", None)  # (a ledger's window refreshes after every event)
    for name in options:
        if name not in (*_VIEW_OPTIONS, "buckets"):
            raise TypeError(f"a {kind} view of a ledger takes no {name}= (see docs/ledger.md)")
    ledger = Ledger.open(
        directory, fsync=fsync, create=False, now=lambda: int(clock() * 1000), preload=preload
    )
    try:
        found = {name: ledger._views[name].kind for name in ledger.views}
        names = [n for n, k in found.items() if k == kind and not ledger._views[n].route.keyed]
        if kind not in _FACES or len(found) != 1 or len(names) != 1:
            raise ValueError(
                f"{directory} holds a ledger with views {found}: a {kind} board opens a ledger "
                f"with one unkeyed {kind} view; open it with rankengine.Ledger.open(path)"
            )
        view = ledger._views[names[0]]
        stored = view.options
        wanted = calendar(cal)
        if repr(calendar(stored["calendar"])) != repr(wanted):
            raise ValueError(
                f"{directory} holds a {kind} view over {stored['calendar']!r}, not {cal!r}"
            )
        for name, value in options.items():
            have = stored.get(name)
            if have is not None and _plain(have) != _plain(value):
                raise ValueError(
                    f"{directory} holds a {kind} view with {name}={have!r}; it cannot be "
                    f"opened with {name}={value!r}"
                )
        assert view.adapters.get(NO_KEY) is not None
        return _FACES[kind](ledger, view.name, clock)
    except BaseException:
        ledger.close()
        raise


def _open_decayed(directory: str, options: dict[str, Any]) -> LedgerDecayed:
    """``DecayedLeaderboard.open`` of a ledger with one decayed view."""
    clock = options.pop("clock")
    fsync = options.pop("fsync", "everysec")
    half_life, tau = options.pop("half_life", None), options.pop("tau", None)
    options.pop("rebase_after", None)
    for name in options:  # (as a periodic view's open: an unknown option is refused)
        if name not in _VIEW_OPTIONS:
            raise TypeError(f"a decayed view of a ledger takes no {name}= (see docs/ledger.md)")
    ledger = Ledger.open(directory, fsync=fsync, create=False, now=lambda: int(clock() * 1000))
    try:
        found = {name: ledger._views[name].kind for name in ledger.views}
        if list(found.values()) != ["decayed"] or ledger._views[ledger.views[0]].route.keyed:
            raise ValueError(
                f"{directory} holds a ledger with views {found}: a decayed board opens a ledger "
                "with one unkeyed decayed view; open it with rankengine.Ledger.open(path)"
            )
        view = ledger.views[0]
        have = ledger[view].tau
        want = tau if tau is not None else (None if half_life is None else half_life / math.log(2))
        if want is None or not math.isclose(have, want, rel_tol=1e-12):
            raise ValueError(
                f"{directory} holds a decayed view with tau={have!r}; open it with that"
            )
        for name, value in options.items():
            stored = ledger._views[view].options.get(name)
            if stored is not None and _plain(stored) != _plain(value):
                raise ValueError(
                    f"{directory} holds a decayed view with {name}={stored!r}; it cannot be "
                    f"opened with {name}={value!r}"
                )
        return LedgerDecayed(ledger, view, clock)
    except BaseException:
        ledger.close()
        raise


#: The face each time view kind opens as.
_FACES: Final[dict[str, type[LedgerPeriodic]]] = {
    "periodic": LedgerPeriodic,
    "window": LedgerWindow,
}


def _plain(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value
