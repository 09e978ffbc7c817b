"""A one-view ledger with a board's API: ``Leaderboard.open`` on a ledger.

:class:`LedgerBoard` is what ``rankengine.open_board(path)``
(``Leaderboard.open``) returns for a ledger directory with one view of kind
``"board"`` -- a directory ``rankengine migrate`` converted, or one created
with ``open_board(path, format="ledger")``.  It answers the whole board
contract (:class:`~rankengine.board.contract.BoardAPI`,
:class:`~rankengine.board.writes.BoardWrites`):

* **reads** are the view's board's own, with nothing in between but a
  method call;
* **writes** go through the ledger: each is one or more events
  (``set``, ``incr``, ``remove``, ``meta``) given to
  :meth:`Ledger.record <rankengine.ledger.ledger.Ledger.record>` or, for a
  batch, one :meth:`~rankengine.ledger.ledger.Ledger.record_many` (one
  record in the log, all or nothing).  A pop or a prune reads the members
  it takes under the ledger's lock, then records their removals as one
  batch.  The log therefore holds events, and any view added to the
  ledger later is built from them.

The arguments are checked by the contract before anything is recorded, so
a refused write raises what every board raises and records nothing.

>>> import tempfile
>>> from rankengine import open_board
>>> with tempfile.TemporaryDirectory() as tmp:
...     with open_board(tmp, format="ledger", fsync="never") as board:
...         board.set_many({"ann": 5, "bob": 7})
...         board.incr("ann", 3)
...         [e.member for e in board.pop_best()], board.ledger.last_seq
...     with open_board(tmp) as again:
...         again.items(), type(again).__name__
2
8
(['ann'], 3)
([('bob', 7)], 'LedgerBoard')
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any, Final

from rankengine.board.contract import BoardAPI
from rankengine.board.core import MISSING, Entry, ItemWrites
from rankengine.board.scoring import Member, Score
from rankengine.board.writes import BoardWrites
from rankengine.durable.forget import Forgotten
from rankengine.ledger.front import first_score
from rankengine.ledger.ledger import Ledger, Recorded

__all__ = ["DEFAULT_VIEW", "LedgerBoard", "count_changed"]

#: The view a new one-view ledger board is registered under.
DEFAULT_VIEW: Final = "board"
#: Settings a reopen must agree with (the backend is only the in-memory
#: structure: as for a durable board, it may differ -- the stored one wins).
_BINDING: Final = ("order", "tie_break", "rank_style")
#: Read primitives answered by the view's board as they are.
_READS: Final = (
    "_rank_of_member",
    "_entry_of",
    "_entries_of",
    "_at_rank",
    "_rank_for_score",
    "_score_counts",
    "_score_at_percentile",
    "_top_rows",
    "_rank_rows",
    "_page_rows",
    "_around_rows",
    "_score_rows",
    "_count_between",
)


def _reader(name: str) -> Any:
    def read(self: LedgerBoard, *args: Any, **kwargs: Any) -> Any:
        return getattr(self.board, name)(*args, **kwargs)

    read.__name__ = read.__qualname__ = name
    read.__doc__ = f"The view's board's ``{name}``."
    return read


def count_changed(before: dict[Any, Any], done: list[Recorded]) -> int:
    """How many members a batch of ``set`` events added or gave another
    score at some step (as a board's ``set_many`` counts them), from their
    scores ``before`` it and each event's outcome.

    Runtime complexity: O(k) for k events

    >>> count_changed({"ann": 2}, [])
    0
    """
    last = dict(before)
    changed = set()
    for recorded in done:
        member = recorded.event.member
        score = recorded.outcomes[0].score if recorded.outcomes else None
        score = MISSING if score is None else score
        prev = last[member]
        if score is not MISSING and (
            prev is MISSING or type(score) is not type(prev) or score != prev
        ):
            changed.add(member)
        last[member] = score
    return len(changed)


def _stored(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


class LedgerBoard(ItemWrites, BoardAPI, BoardWrites):
    """A board whose writes are events of a one-view ledger (see the
    module docstring).  Open one with :meth:`open` (or
    ``rankengine.open_board``); :attr:`ledger` is the ledger itself.
    """

    def __init__(self, ledger: Ledger, view: str = DEFAULT_VIEW) -> None:
        if view not in ledger.views:
            raise KeyError(f"the ledger has no view {view!r}")
        self.ledger = ledger
        self.view = view
        self._lock = ledger._lock

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        view: str | None = None,
        order: Any = None,
        tie_break: Any = None,
        rank_style: Any = None,
        backend: Any = None,
        **options: Any,
    ) -> LedgerBoard:
        """Open the one-view ledger in ``path`` as a board, or create one
        (a ledger with one ``"board"`` view with these settings).  The
        other ``options`` are :class:`~rankengine.ledger.ledger.Ledger`'s
        (``fsync``, ``compact_min_bytes``...).

        Runtime complexity: the ledger's open

        :raises ValueError: the ledger has other views than one board view,
            or a setting that differs from the stored one.
        """
        explicit = {"order": order, "tie_break": tie_break, "rank_style": rank_style}
        ledger = Ledger.open(path, **options)
        try:
            names = ledger.views
            if not names and ledger.last_seq == 0:
                settings = {k: v for k, v in {**explicit, "backend": backend}.items() if v}
                ledger.add_view(view or DEFAULT_VIEW, "board", **settings)
                names = ledger.views
            kinds = {name: ledger._views[name].kind for name in names}
            wanted = view if view is not None else (names[0] if len(names) == 1 else None)
            if wanted is None or kinds.get(wanted) != "board" or ledger._views[wanted].route.keyed:
                raise ValueError(
                    f"{ledger.path} holds a ledger with views {kinds}: a board opens a ledger "
                    "with one unkeyed view of kind 'board' (or name it with view=); open the "
                    "others with rankengine.Ledger.open(path)"
                )
            stored = ledger._views[wanted].options
            for key, value in explicit.items():
                have = _stored(stored.get(key)) if stored.get(key) is not None else None
                if value is not None and have is not None and have != _stored(value):
                    raise ValueError(
                        f"{ledger.path} holds a board with {key}={have!r}; it cannot be opened "
                        f"with {key}={value!r} (leave {key} out to use the stored setting)"
                    )
            return cls(ledger, wanted)
        except BaseException:
            ledger.close()
            raise

    # ------------------------------------------------------------------
    # What the contract reads of a board kind
    # ------------------------------------------------------------------
    @property
    def board(self) -> Any:
        """The view's board (reads go to it; writing it directly would
        bypass the log: write through this object)."""
        return self.ledger[self.view]

    @property
    def _codec(self) -> Any:  # type: ignore[override]
        return self.board._codec

    @property
    def _rank_style(self) -> Any:  # type: ignore[override]
        return self.board._rank_style

    @property
    def _desc(self) -> bool:  # type: ignore[override]
        return bool(self.board._desc)

    def _check_member(self, member: object) -> Member:
        return self.board._check_member(member)  # type: ignore[no-any-return]

    @property
    def order(self) -> Any:
        """The board's order."""
        return self.board.order

    @property
    def tie_break(self) -> Any:
        """The board's tie break."""
        return self.board.tie_break

    @property
    def rank_style(self) -> Any:
        """The board's default rank style."""
        return self.board.rank_style

    @property
    def clock(self) -> int:
        """The view's board's logical clock."""
        return int(self.board.clock)

    def config(self) -> dict[str, Any]:
        """The view's board's settings."""
        return dict(self.board.config())

    def __len__(self) -> int:
        return len(self.board)

    def __contains__(self, member: object) -> bool:
        return member in self.board

    def score(self, member: Member, default: Any = None) -> Any:
        return self.board.score(member, default)

    def meta(self, member: Member) -> dict[str, Any] | None:
        return self.board.meta(member)  # type: ignore[no-any-return]

    def items(self) -> list[tuple[Member, Score]]:
        return self.board.items()  # type: ignore[no-any-return]

    # ------------------------------------------------------------------
    # Writes: events
    # ------------------------------------------------------------------
    def _record(self, member: Any, value: Any = None, **fields: Any) -> Recorded:
        return self.ledger.record(member, value, ranks=False, **fields)

    def _record_many(self, events: list[dict[str, Any]]) -> list[Recorded]:
        return self.ledger.record_many(events) if events else []

    def _set_checked(
        self, member: Member, score: Score, when: Any, meta: dict[str, Any] | None
    ) -> bool:
        board = self.board
        before = (board.score(member, MISSING), board.clock, board.meta(member))
        self._record(member, score, op="set", when=when, meta=meta)
        return (board.score(member, MISSING), board.clock, board.meta(member)) != before

    def _incr_checked(self, member: Member, delta: Score, when: Any) -> Score | None:
        score: Score | None = first_score(self._record(member, delta, op="incr", when=when))
        return score

    def _pairs(self, items: Any, what: str) -> list[tuple[Any, Any]]:
        pairs = list(items.items()) if isinstance(items, Mapping) else list(items)
        return self.board._check_pairs(pairs, what)  # type: ignore[no-any-return]

    def _set_pairs(self, items: Any, when: Any) -> int:
        pairs = self._pairs(items, "score")
        with self._lock:
            board = self.board
            before = {m: board.score(m, MISSING) for m, _ in pairs}
            events = [{"member": m, "value": s, "op": "set", "when": when} for m, s in pairs]
            return count_changed(before, self._record_many(events))

    def _incr_pairs(self, items: Any) -> dict[Member, Score]:
        pairs = self._pairs(items, "delta")
        done = self._record_many([{"member": m, "value": d, "op": "incr"} for m, d in pairs])
        out: dict[Member, Score] = {}
        for recorded in done:
            out[recorded.event.member] = recorded.outcomes[0].score
        return out

    def _remove_member(self, member: Member) -> bool:
        with self._lock:
            if member not in self.board:
                return False
            self._record(member, op="remove")
            return True

    def _removals(self, members: Iterable[Any]) -> int:
        present = list(dict.fromkeys(members))
        self._record_many([{"member": m, "op": "remove"} for m in present])
        return len(present)

    def _remove_members(self, members: list[Any]) -> int:
        with self._lock:
            board = self.board
            return self._removals(m for m in members if m in board)

    def _set_meta_checked(self, member: Member, meta: dict[str, Any] | None) -> None:
        with self._lock:
            if member not in self.board:
                raise KeyError(f"no member {member!r}: add a score before its metadata")
            if self.board.meta(member) == meta:
                return
            self._record(member, op="meta", meta=meta)

    def _clear_all(self) -> None:
        with self._lock:
            self._removals(list(self.board))

    def _pop(self, count: int, *, best: bool, with_meta: bool) -> list[Entry]:
        with self._lock:
            board = self.board
            n = len(board)
            count = min(count, n)
            if count == 0:
                return []
            if best:
                rows: list[Entry] = board._entries_between(0, count, "unique", with_meta)
            else:
                rows = board._entries_between(n - count, n, "unique", with_meta)[::-1]
            self._removals(e.member for e in rows)
            return rows

    def _remove_ranks(self, start: int, stop: int) -> int:
        with self._lock:
            board = self.board
            lo, hi = board._rank_window(start, stop)
            return self._removals(m for _, _, m in board._iter_positions(lo, hi, best_first=True))

    def _remove_scores(
        self, low: Score | None, high: Score | None, low_inclusive: bool, high_inclusive: bool
    ) -> int:
        with self._lock:
            board = self.board
            lo, hi = board._score_positions(low, high, low_inclusive, high_inclusive)
            return self._removals(m for _, _, m in board._index.iter_range(lo, hi))

    def _keep_top(self, n: int) -> int:
        with self._lock:
            if n >= len(self.board):
                return 0
            return self._remove_ranks(n + 1, len(self.board))

    # ------------------------------------------------------------------
    # The durable board's extras
    # ------------------------------------------------------------------
    @property
    def path(self) -> str | None:
        """The ledger's directory."""
        return self.ledger.path

    @property
    def closed(self) -> bool:
        """True after :meth:`close`: reads still work, writes raise."""
        return self.ledger.closed

    @property
    def last_seq(self) -> int:
        """The ledger's last sequence number."""
        return self.ledger.last_seq

    def flush(self) -> None:
        """fsync the ledger's log now."""
        self.ledger.flush()

    def compact(self) -> int:
        """Snapshot the view and start a new segment (the ledger's compact)."""
        return self.ledger.compact()

    def forget(self, member: Any) -> Forgotten:
        """Remove ``member`` from the board and every file of the ledger."""
        return self.ledger.forget(member)

    def copy(self) -> Any:
        """An in-memory copy of the view's board."""
        return self.board.copy()

    def close(self) -> None:
        """Close the ledger (reads keep working, writes raise)."""
        self.ledger.close()

    def __enter__(self) -> LedgerBoard:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"LedgerBoard({self.path!r}, view={self.view!r}, members={len(self)})"

    def _check(self) -> None:
        """The ledger's invariants (its one view's board among them)."""
        self.ledger._check()


for _name in _READS:  # (each is the view's board's, one call in between)
    setattr(LedgerBoard, _name, _reader(_name))
del _name
