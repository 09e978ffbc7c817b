"""Loading a ledger's unloaded periods before anyone reads them.

A ledger's open leaves the closed periods of its periodic views unloaded
(:mod:`rankengine.timed.lazy`): the first read of one loads it, and pays
for it (0.42-0.60 s of CPU at 10^6 members).  From asyncio that read runs
on the event loop.  :meth:`Ledger.preload <rankengine.ledger.ledger.Ledger.preload>`
loads them all now; with ``background=True`` (the default of
:class:`~rankengine.ledger.aio.AsyncLedger`) a :class:`Preloader` does it on
a daemon thread, one period at a time.

Each period's file is read holding neither the ledger's lock nor its
board's (:meth:`PeriodBoards.load_aside
<rankengine.timed.lazy.PeriodBoards.load_aside>`): records, reads of the
other periods and compactions go on meanwhile (a compaction that copies
this period's file waits for its load; a read of this period waits for it
and takes its board).  A period dropped, forgotten from or loaded by a
read meanwhile is left as it is.

Errors are not swallowed: a load that fails leaves its period unloaded,
so its next read raises the same error, as a lazy read would; the
preloader keeps the first one in :attr:`Preloader.error` and
:meth:`Preloader.wait` raises it.

>>> import tempfile
>>> from rankengine.ledger.ledger import Ledger
>>> with tempfile.TemporaryDirectory() as tmp:
...     with Ledger.open(tmp, now=lambda: 0) as ledger:
...         ledger.add_view("daily", "periodic", calendar="daily", keep=1)
...         _ = ledger.record("ann", 5)
...         ledger._now = lambda: 86_400_000
...         _ = ledger.record("bob", 1)
...         _ = ledger.compact()
...     with Ledger.open(tmp, preload=True) as ledger:
...         done = ledger.preloader.wait()
...         unloaded = ledger["daily"].unloaded()
...         yesterday = ledger["daily"].top(1, period="1970-01-01")[0].member
...     (done, unloaded, yesterday)
(True, [], 'ann')
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from rankengine.board.release import let_go

__all__ = ["LOADING", "Preloader", "load_all", "periodic_boards"]

#: Per thread: ``LOADING.pause`` is set on a :class:`Preloader`'s thread,
#: where a period's load lets go of the interpreter lock between pieces
#: (:func:`rankengine.ledger.front.sliced_map`).
LOADING = threading.local()


#: (view name, key, periodic board) of every periodic board of a ledger
Boards = Callable[[], list[tuple[str, Any, Any]]]


def periodic_boards(views: Iterable[Any]) -> list[tuple[str, Any, Any]]:
    """``(view name, key, board)`` of every periodic board of ``views``
    (call it under the ledger's lock).

    Runtime complexity: O(V + K) for V views and K keyed boards
    """
    return [
        (view.name, key, adapter.board)
        for view in views
        if view.kind == "periodic"
        for key, adapter in list(view.adapters.items())
    ]


def load_all(
    boards: Boards, stop: threading.Event | None = None
) -> list[tuple[str, str, Exception]]:
    """Load every unloaded period of ``boards()``, one at a time, until
    none is left or ``stop`` is set; return the ``(view, period, error)``
    of each load that failed (its period stays unloaded).

    Runtime complexity: O(N) for the N members of the unloaded periods
    """
    failed: list[tuple[str, str, Exception]] = []
    tried: set[tuple[int, str]] = set()
    while stop is None or not stop.is_set():
        pending = [
            (view, board, period)
            for view, _key, board in boards()
            for period in board.unloaded()
            if (id(board), period) not in tried
        ]
        if not pending:
            return failed
        for view, board, period in pending:
            if stop is not None and stop.is_set():
                break
            tried.add((id(board), period))
            try:
                board.load_unloaded(period)
            except Exception as exc:  # (kept: the period's next read raises it too)
                if period in board.unloaded():  # (not a period dropped meanwhile)
                    failed.append((view, period, exc))
    return failed


class Preloader:
    """A daemon thread loading every unloaded period of ``boards()`` (see
    the module docstring); :meth:`stop` ends it after the load under way.

    Runtime complexity: O(1) to start; the thread O(N) as :func:`load_all`
    """

    def __init__(self, boards: Boards) -> None:
        self._boards = boards
        self._stop = threading.Event()
        #: every ``(view, period, error)`` of a load that failed
        self.failed: list[tuple[str, str, Exception]] = []
        self._thread = threading.Thread(target=self._run, name="rankengine-preload", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        LOADING.pause = let_go
        try:
            self.failed = load_all(self._boards, self._stop)
        except Exception as exc:  # (a bug: kept for wait() rather than lost)
            self.failed = [("", "", exc)]

    @property
    def running(self) -> bool:
        """True until every period is loaded (or tried) or it was stopped."""
        return self._thread.is_alive()

    @property
    def error(self) -> Exception | None:
        """The first load's error, if any (its period stays unloaded)."""
        return self.failed[0][2] if self.failed else None

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until done (True) or ``timeout`` seconds (False); raise the
        first load's error, if any."""
        self._thread.join(timeout)
        if self._thread.is_alive():
            return False
        if self.failed:
            raise self.failed[0][2]  # (as the read of its period would)
        return True

    def stop(self) -> None:
        """Stop after the load under way and wait for the thread to end
        (from any thread but its own)."""
        self._stop.set()
        if threading.current_thread() is not self._thread:
            self._thread.join()

    def __repr__(self) -> str:
        state = "running" if self.running else f"done, {len(self.failed)} failed"
        return f"Preloader({state})"
