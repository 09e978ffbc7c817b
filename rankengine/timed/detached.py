"""A lock that does its slow follow-up work after its last release.

A periodic board drops a closed period in two steps: under the board's
lock it only *detaches* the period's board (O(1): out of the held periods,
into a list of detached ones that reads still answer from); then, once the
lock is released, the period is archived, its files deleted and its board
freed.  At 1,000,000 members writing the archive takes seconds and freeing
the board tens of milliseconds: other threads' calls run meanwhile.

:class:`AfterLock` is the board's re-entrant lock: when the thread holding
it leaves its outermost ``with``, it releases the lock and then calls
``after()`` if ``pending()`` says there is work.

>>> done = []
>>> lock = AfterLock(after=lambda: done.append("archived"), pending=lambda: not done)
>>> with lock:
...     with lock:
...         pass
...     done
[]
>>> done
['archived']
"""

from __future__ import annotations

import threading
from collections.abc import Callable

__all__ = ["AfterLock"]


class AfterLock:
    """A re-entrant lock (``with`` only) whose outermost release is followed,
    on the releasing thread and without the lock, by ``after()`` when
    ``pending()`` is true.  An error of ``after()`` reaches that thread's
    caller.

    Runtime complexity: O(1) per acquire and release, plus ``after()``
    """

    def __init__(self, *, after: Callable[[], None], pending: Callable[[], bool]) -> None:
        #: the re-entrant lock itself, for a short hold that leaves no
        #: follow-up work (see :meth:`held`); ``with`` takes it too
        self.plain = threading.RLock()
        self._lock = self.plain
        #: how many times the owner holds it (changed only by the owner)
        self._depth = 0
        self._after = after
        self._pending = pending

    def __enter__(self) -> AfterLock:
        self._lock.acquire()
        self._depth += 1
        return self

    def __exit__(self, *exc: object) -> None:
        self._depth -= 1
        outermost = self._depth == 0
        self._lock.release()
        if outermost and self._pending():
            self._after()

    # A hold through ``plain`` (``lock.plain.acquire()`` ... ``release()``)
    # skips the two Python-level calls of ``with`` and the ``pending()``
    # check: for a holder that only reads the board and moves its time (no
    # period detached, so nothing to follow up), and that takes no ``with``
    # of this lock meanwhile (its depth is not counted).  Measured: ~1 us of
    # a ledger's periodic write (timed/state.held_period_board).
