"""A registered view: its name, kind, options and route, and its boards.

A view without ``by=`` has one board; a view with ``by="mode"`` has one
board per value of ``attrs["mode"]``, created when the first event for
that value arrives (as a periodic board creates its periods).  Each board
is kept by an adapter (:mod:`rankengine.ledger.adapters`).  ``seq`` is the
sequence number of the last event the view reflects: on open, each view is
loaded from its own snapshot and then given the events after its ``seq``.

>>> from rankengine.ledger.events import make_event
>>> view = View("by_mode", "board", {}, Route.of(by="mode"))
>>> event = make_event("ann", 3, t_ms=0, attrs={"mode": "duo"})
>>> view.check(event, 0, {}); view.apply(event, False)
[Outcome(view='by_mode', key='duo', score=3, rank_before=None, rank_after=None)]
>>> sorted(view.boards), view.board("duo").items()
(['duo'], [('ann', 3)])
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final, NamedTuple

from rankengine.ledger.adapters import Adapter, LazyPart, Part, make_adapter
from rankengine.ledger.events import LedgerEvent
from rankengine.ledger.routes import NO_KEY, Route

__all__ = ["NAME_RE", "KeyedBoards", "Outcome", "View", "check_view_name"]

#: View names: they name directories, so letters, digits, ``_.-`` only.
NAME_RE: Final = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")


def check_view_name(name: object) -> str:
    """``name`` if it is a valid view name, else ``ValueError``/``TypeError``.

    >>> check_view_name("weekly")
    'weekly'
    """
    if type(name) is not str:
        raise TypeError(f"a view name is a str, not {type(name).__name__}")
    if not NAME_RE.fullmatch(name):
        raise ValueError(
            f"view name {name!r}: 1-64 letters, digits, '_', '.' or '-', not starting with '.'"
        )
    return name


class Outcome(NamedTuple):
    """What one event did to one view: the member's new score there (None
    when it has none: removed, blocked, dropped as late, not counted) and,
    on exact boards when asked, its rank before and after (None: absent)."""

    view: str
    key: Any
    score: Any
    rank_before: int | None
    rank_after: int | None


#: ``_new_outcome(Outcome, fields)`` builds an Outcome without the
#: Python-level ``__new__`` of a NamedTuple (one per view per event).
_new_outcome: Final = tuple.__new__


class KeyedBoards(Mapping[Any, Any]):
    """The boards of a keyed view, by key (read-only): ``ledger["by_mode"]``.

    Runtime complexity: O(1) per look-up
    """

    def __init__(self, view: View) -> None:
        self._view = view

    def __getitem__(self, key: Any) -> Any:
        adapter = self._view.adapters.get(key)
        if adapter is None:
            raise KeyError(f"view {self._view.name!r} has no board for {key!r} (no event yet)")
        return adapter.board

    def __iter__(self) -> Iterator[Any]:
        return iter(list(self._view.adapters))

    def __len__(self) -> int:
        return len(self._view.adapters)

    def __repr__(self) -> str:
        return f"KeyedBoards({self._view.name!r}, keys={sorted(map(repr, self._view.adapters))})"


class View:
    """One registered view (see the module docstring)."""

    def __init__(
        self,
        name: str,
        kind: str,
        options: dict[str, Any],
        route: Route,
    ) -> None:
        self.name = check_view_name(name)
        if kind == "redis" and route.by is not None:
            raise ValueError("a redis view is one Redis board: by= is not supported (use where=)")
        self.kind = kind
        self.options = dict(options)
        self.route = route
        #: True when the view takes every event into its one board
        self.takes_everything = not route.where and route.by is None
        #: the view's clock, the ledger's time as of the last event it took
        #: (ms): time boards run on it, so a replay rebuilds them exactly
        self.time_ms = 0
        self.clock: Callable[[], float] = lambda: self.time_ms / 1000
        #: key -> adapter (one, under NO_KEY, for an unkeyed view)
        self.adapters: dict[Any, Adapter] = {}
        #: the last event this view reflects
        self.seq = 0
        # the first board is made now: bad options fail at registration
        #: an adapter never written, for the settings of the view's boards
        self.template = make_adapter(kind, self.options, self.clock)
        if not route.keyed:
            self.adapters[NO_KEY] = make_adapter(kind, self.options, self.clock)

    def spec(self) -> dict[str, Any]:
        """What the manifest stores of this view."""
        return {"kind": self.kind, "options": self.options, "route": self.route.to_map()}

    @classmethod
    def from_spec(cls, name: str, spec: Mapping[str, Any]) -> View:
        """The view :meth:`spec` describes, empty."""
        return cls(name, spec["kind"], dict(spec["options"]), Route.from_map(spec["route"]))

    @property
    def boards(self) -> Mapping[Any, Any]:
        """The view's boards by key."""
        return KeyedBoards(self)

    def board(self, key: Any = NO_KEY) -> Any:
        """The board of ``key`` (an unkeyed view: its one board)."""
        if not self.route.keyed:
            if key is not NO_KEY:
                raise KeyError(f"view {self.name!r} is not keyed (it was registered without by=)")
            return self.adapters[NO_KEY].board
        return self.boards[key]

    def reader(self) -> Any:
        """What ``ledger[name]`` returns: the board, or the keyed boards."""
        return self.boards if self.route.keyed else self.adapters[NO_KEY].board

    def _adapter(self, key: Any, create: bool) -> Adapter | None:
        adapter = self.adapters.get(key)
        if adapter is None and create:
            adapter = self.adapters[key] = make_adapter(self.kind, self.options, self.clock)
        return adapter

    def check(self, event: LedgerEvent, now_ms: int, sim: dict[Any, Any]) -> None:
        """Raise what this view would raise for ``event``; ``sim`` holds the
        effects of the earlier events of the same batch (per key).

        Runtime complexity: O(1) plus the board's checks
        """
        if self.takes_everything:
            self.adapters[NO_KEY].check(event, now_ms, sim)
            return
        taken, key = self.route.target(event.attrs)
        if not taken:
            return
        adapter = self.adapters.get(key)
        inner = sim.setdefault(key, {})
        if adapter is None:
            adapter = inner.get(_NEW)
            if adapter is None:
                adapter = inner[_NEW] = make_adapter(self.kind, self.options, self.clock)
        adapter.check(event, now_ms, inner)

    def apply(self, event: LedgerEvent, ranks: bool) -> list[Outcome]:
        """Make ``event``'s writes; the outcomes (none when the view does
        not take it).

        Runtime complexity: O(1) plus the board's write
        """
        if self.takes_everything:  # no route: its one board (a call less an event)
            key: Any = NO_KEY
            adapter: Adapter | None = self.adapters[NO_KEY]
        else:
            taken, key = self.route.target(event.attrs)
            if not taken:
                return []
            adapter = self._adapter(key, True)
        assert adapter is not None
        score, before, after = adapter.apply(event, ranks)
        return [_new_outcome(Outcome, (self.name, key, score, before, after))]

    def exact_board(self, event: LedgerEvent) -> tuple[Any, Any]:
        """``(key, exact board)`` that ``event`` went to (board None if none)."""
        taken, key = self.route.target(event.attrs)
        adapter = self.adapters.get(key) if taken else None
        return key, (None if adapter is None else adapter.exact(event))

    def export(self) -> list[tuple[Any, Part]]:
        """Every board's parts, each with its key."""
        return [(key, part) for key, adapter in self.adapters.items() for part in adapter.export()]

    def export_lazy(self) -> list[tuple[Any, LazyPart]]:
        """:meth:`export`, a part not loaded yet as it is (an
        :class:`~rankengine.timed.lazy.Unloaded`, see ``Adapter.export_lazy``)."""
        return [
            (key, part) for key, adapter in self.adapters.items() for part in adapter.export_lazy()
        ]

    def restore(self, parts: list[tuple[Any, Part]]) -> None:
        """Take the parts :meth:`export` gave (as read back)."""
        by_key: dict[Any, list[Part]] = {}
        for key, part in parts:
            by_key.setdefault(key, []).append(part)
        for key, key_parts in by_key.items():
            adapter = self._adapter(key, True)
            assert adapter is not None
            adapter.restore(key_parts)

    def attach(self, ledger_seq: int) -> None:
        """Connect every board that lives outside the process (Redis)."""
        for adapter in self.adapters.values():
            adapter.attach(ledger_seq)

    def close(self, ledger_seq: int) -> None:
        """Let go of every board that lives outside the process."""
        for adapter in self.adapters.values():
            adapter.close(ledger_seq)

    def reset(self) -> None:
        """Empty the view (to rebuild it from the log)."""
        self.adapters = {}
        self.seq = 0
        if not self.route.keyed:
            self.adapters[NO_KEY] = make_adapter(self.kind, self.options, self.clock)

    def _check(self) -> None:
        """Every board's invariants."""
        for adapter in self.adapters.values():
            adapter.check_invariants()


#: Where a batch's simulation keeps the adapter of a key that has no board
#: yet (checked on a new empty one, as the first event will create it).
_NEW: Final = ("new adapter",)
