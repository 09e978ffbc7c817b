"""Subscriptions: rank-change news, delivered after the event is durable.

Three kinds of notice, each delivered in log order, once the event is in
the log (durable under the ledger's fsync policy) and applied to the view,
on the thread that recorded it, still under the ledger's lock (so a
callback must not record: hand the notice to a queue instead):

``on="change"``
    :class:`Changed` for every event the view takes: the member, its new
    score, and on an exact board its rank before and after.
``on="top", k=10``
    :class:`TopMove` when a member enters or leaves the view's top ``k``:
    the member the event moved, and the member it pushed out (or let in).
``on="overtaken"``
    :class:`Overtaken` for each member the event's member passed: who was
    overtaken, by whom, and its rank before and after.

Cost: a view with no subscriber pays one dictionary look-up per event.
A subscribed exact view pays the two rank reads the outcome needs
(O(log N)); a top-``k`` notice one more ``at()`` (O(log N)); an
``overtaken`` notice one O(log N) read per member passed (each is a
notice delivered).  Ranks are the board's ranks (``rank_style="unique"``,
the default, gives one member per rank).

>>> from rankengine import Ledger
>>> ledger = Ledger()
>>> ledger.add_view("alltime")
>>> news = []
>>> _ = ledger.subscribe("alltime", news.append, on="top", k=1)
>>> _ = ledger.subscribe("alltime", news.append, on="overtaken")
>>> _ = ledger.record("ann", 10); _ = ledger.record("bob", 20)
>>> for notice in news:
...     print(notice)
TopMove(seq=1, view='alltime', key=None, member='ann', entered=True, rank=1)
TopMove(seq=2, view='alltime', key=None, member='bob', entered=True, rank=1)
TopMove(seq=2, view='alltime', key=None, member='ann', entered=False, rank=2)
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any, Final, NamedTuple

from rankengine.ledger.events import LedgerEvent
from rankengine.ledger.views import Outcome, View

__all__ = ["ON", "Changed", "Overtaken", "Subscriptions", "TopMove"]

#: The kinds of subscription.
ON: Final = ("change", "top", "overtaken")


class Changed(NamedTuple):
    """An event the view took (see the module docstring)."""

    seq: int
    view: str
    key: Any
    member: Any
    op: str
    score: Any
    rank_before: int | None
    rank_after: int | None


class TopMove(NamedTuple):
    """``member`` entered (``entered``) or left the top k; its rank now."""

    seq: int
    view: str
    key: Any
    member: Any
    entered: bool
    rank: int | None


class Overtaken(NamedTuple):
    """``member`` was passed by ``by``: its rank went from ``old_rank`` to
    ``new_rank``."""

    seq: int
    view: str
    key: Any
    member: Any
    by: Any
    old_rank: int
    new_rank: int


class _Sub(NamedTuple):
    handle: int
    view: str
    on: str
    k: int
    callback: Callable[[Any], None]


class Subscriptions:
    """The ledger's subscriptions, by view."""

    def __init__(self) -> None:
        self._by_view: dict[str, list[_Sub]] = {}
        self._handles = itertools.count(1)
        #: ``local.hold``, a list on a thread whose notices wait for a group
        #: commit: ``(callback, notice)`` pairs, delivered once it is durable
        self.local = threading.local()

    def _emit(self, callback: Callable[[Any], None], notice: Any) -> None:
        hold = getattr(self.local, "hold", None)
        if hold is None:
            callback(notice)
        else:
            hold.append((callback, notice))

    def any(self) -> bool:
        """True when some view has a subscriber."""
        return bool(self._by_view)

    def watches(self, view: str) -> bool:
        """True when ``view`` has a subscriber (one dict look-up)."""
        return view in self._by_view

    def add(
        self,
        view: str,
        kind: str,
        callback: Callable[[Any], None],
        *,
        on: str = "change",
        k: int | None = None,
    ) -> int:
        """Subscribe; return the handle."""
        if on not in ON:
            raise ValueError(f"on must be one of {ON}, not {on!r}")
        if not callable(callback):
            raise TypeError(f"callback must be callable, not {callback!r}")
        if on == "top":
            if isinstance(k, bool) or not isinstance(k, int) or k < 1:
                raise ValueError(f"on='top' needs k=, an int >= 1, not {k!r}")
        elif k is not None:
            raise ValueError(f"k= goes with on='top', not on={on!r}")
        if on != "change" and kind == "topk":
            raise ValueError("a topk view has no exact ranks: subscribe to its changes")
        handle = next(self._handles)
        self._by_view.setdefault(view, []).append(_Sub(handle, view, on, k or 0, callback))
        return handle

    def remove(self, handle: int) -> None:
        """Unsubscribe ``handle`` (KeyError if unknown)."""
        for view, subs in self._by_view.items():
            for sub in subs:
                if sub.handle == handle:
                    subs.remove(sub)
                    if not subs:
                        del self._by_view[view]
                    return
        raise KeyError(f"no subscription {handle!r}")

    def drop_view(self, view: str) -> None:
        """Forget the subscriptions of a removed view."""
        self._by_view.pop(view, None)

    def deliver(self, seq: int, event: LedgerEvent, view: View, outcomes: list[Outcome]) -> None:
        """Deliver the notices of ``event`` in ``view`` (``outcomes`` ends
        with the view's outcome when it took the event).

        Runtime complexity: O(log N) per top-k subscription, O(log N) per
        member passed for ``overtaken``
        """
        if not outcomes or outcomes[-1].view != view.name:
            return
        outcome = outcomes[-1]
        member, key = event.member, outcome.key
        before, after = outcome.rank_before, outcome.rank_after
        board: Any = None
        for sub in self._by_view.get(view.name, ()):
            if sub.on == "change":
                self._emit(
                    sub.callback,
                    Changed(seq, view.name, key, member, event.op, outcome.score, before, after),
                )
                continue
            if before == after:
                continue
            if board is None:
                board = view.exact_board(event)[1]
                if board is None:
                    return
            if sub.on == "top":
                _top_moves(
                    self._emit, sub, seq, key, member, before=before, after=after, board=board
                )
            elif before is not None and after is not None and after < before:
                for rank in range(after + 1, before + 1):
                    passed = board.at(rank).member
                    notice = Overtaken(seq, view.name, key, passed, member, rank - 1, rank)
                    self._emit(sub.callback, notice)


def _top_moves(
    emit: Callable[[Callable[[Any], None], Any], None],
    sub: _Sub,
    seq: int,
    key: Any,
    member: Any,
    *,
    before: int | None,
    after: int | None,
    board: Any,
) -> None:
    k, name = sub.k, sub.view
    was_in = before is not None and before <= k
    is_in = after is not None and after <= k
    if is_in and not was_in:
        emit(sub.callback, TopMove(seq, name, key, member, True, after))
        if len(board) > k:  # the member at k + 1 was in the top k before
            pushed = board.at(k + 1).member
            emit(sub.callback, TopMove(seq, name, key, pushed, False, k + 1))
    elif was_in and not is_in:
        emit(sub.callback, TopMove(seq, name, key, member, False, after))
        if len(board) >= k:  # the member now at k was at k + 1
            entered = board.at(k).member
            if entered != member:
                emit(sub.callback, TopMove(seq, name, key, entered, True, k))
