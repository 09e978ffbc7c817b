"""Group commit: writers in flight together share one fsync.

Invariant: :attr:`GroupCommit.durable` is a sequence number every record at
or below which is on stable storage; a ticket (a record's seq) is
acknowledged only once it is at most :attr:`~GroupCommit.durable`.

Under ``fsync="always"`` a write must not be acknowledged before its record
is fsynced, but nothing says one fsync per record: a writer appends its
record (under the board's lock, which orders the log), lets the lock go,
and then waits for an fsync that *started after* its append.  One thread,
the flusher, runs those fsyncs back to back: it notes the last seq
appended, fsyncs, and declares everything up to that seq durable, waking
every writer it covers::

    writer A   append 7 | wait ...........................| ack
    writer B     append 8 | wait .........................| ack
    writer C                    append 9 | wait ..........:.........| ack
    flusher        [ fsync covering <= 8 ] [ fsync covering <= 9 ]

So N writers in flight pay for about two fsyncs, not N.  This is the
classic group commit of databases (PostgreSQL's ``commit_delay`` is the same
idea); Redis does the same with ``appendfsync always``: it applies writes
in memory, fsyncs the AOF once per event-loop turn, and replies after it.
Like Redis, the board applies a write before it is durable, so a read may
see a write not yet acknowledged; if that fsync fails, the write is never
acknowledged (its writer gets the error) and the board refuses further
writes (see ``docs/durability.md``).

A group can be **paced** (:meth:`GroupCommit.pace`): its fsyncs then
start at least an interval apart, so a steady stream of appends gets
fewer, larger groups, each acknowledged up to the interval later.  The
asyncio faces pace theirs at :data:`LOOP_PACE_S`: every fsync costs the
event loop a wake-up.

Two ways to wait, on the same fsyncs: :meth:`GroupCommit.wait` blocks a
thread; :meth:`GroupCommit.add_callback` calls a function from the flusher
thread once the ticket is durable (asyncio resolves a future with it via
``loop.call_soon_threadsafe``, so the event loop never blocks on fsync).

The API for anything that appends records (a board, a ledger)::

    ticket = seq                 # under its own lock, after the append
    group.appended(ticket)       # the flusher may cover it now
    ...                          # let the lock go
    group.wait(ticket)           # or group.add_callback(ticket, done)

Runtime complexity: O(1) per append and per wait; one fsync per group.

>>> synced = []
>>> group = GroupCommit(lambda: synced.append("fsync"), durable=0)
>>> group.appended(1); group.appended(2)
>>> group.wait(2)
>>> group.durable, synced[:1]
(2, ['fsync'])
>>> group.close()
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Final

from rankengine.durable.records import LogError

__all__ = ["FLUSHER_NAME", "LOOP_PACE_S", "MAX_PACE_S", "GroupCommit"]

#: The name of the flusher thread (seen in thread dumps).
FLUSHER_NAME: Final = "rankengine-group-commit"
#: The pace (:meth:`GroupCommit.pace`) the asyncio faces set: their group's
#: fsyncs start at most once a millisecond.  Every fsync costs the event
#: loop a wake-up and the thread switches around the flusher's turns with
#: the GIL (~110 us of the loop's CPU each, measured one record at a time
#: on a 2-core machine), and fsyncs of ~0.3 ms ran back to back, ~2,700 a
#: second at 10,000 events/s: the loop spent ~80% of a core against ~40%
#: under ``"everysec"``.  The same fsyncs spaced 1 ms apart: ~880 a second
#: and 47-49%, for an acknowledgement up to 1 ms later (docs/asyncio.md).
LOOP_PACE_S: Final = 0.001
#: The longest pace accepted (an acknowledgement waits up to this long).
MAX_PACE_S: Final = 1.0

#: ``callback(error)``: None once the ticket is durable, else the fsync's error.
DoneCallback = Callable[[BaseException | None], None]


class GroupCommit:
    """The flusher thread of one log and the writers waiting on it.

    :param sync: fsyncs the log (every byte appended before the call
        starts is durable when it returns); called on the flusher thread.
    :param durable: the seq already durable at the start.
    :param on_error: called (on the flusher thread) with the error of a
        failed fsync, before any waiter hears of it; the flusher stops.
    """

    def __init__(
        self,
        sync: Callable[[], None],
        *,
        durable: int,
        on_error: Callable[[BaseException], None] | None = None,
    ) -> None:
        self._sync = sync
        self._on_error = on_error
        self._lock = threading.Lock()
        #: the flusher waits on this for work: held while no wake-up is
        #: pending, let go by :meth:`_ring`
        self._bell = threading.Lock()
        self._bell.acquire()
        #: writers wait on this for their fsync
        self._done = threading.Condition(self._lock)
        #: the last seq appended (its bytes are in the log once it is set)
        self.last = durable
        self.durable = durable
        #: fsyncs run so far (for tests and benchmarks)
        self.syncs = 0
        self._error: BaseException | None = None
        self._closing = False
        #: (ticket, callback) of waiters that do not block, oldest first
        self._callbacks: list[tuple[int, DoneCallback]] = []
        #: called with (durable, error) after every fsync (see subscribe)
        self._listeners: list[Callable[[int, BaseException | None], None]] = []
        self._idle = False
        #: the least time between the starts of two fsyncs (see pace)
        self._pace = 0.0
        self._thread = threading.Thread(target=self._run, name=FLUSHER_NAME, daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------
    # Writers
    # ------------------------------------------------------------------
    def appended(self, ticket: int) -> None:
        """Note that the record ``ticket`` is appended (its bytes written),
        and wake the flusher.  Call it in append order.

        Runtime complexity: O(1)
        """
        self.last = ticket
        # Only an idle flusher needs waking: one that is fsyncing reads
        # `last` when it is done.  It sets _idle before it tests `last`, so
        # either it sees this ticket or this sees it idle.
        if self._idle:
            self._ring()

    def _ring(self) -> None:
        """Wake the flusher (if it waits; else its next wait returns at
        once, and it finds the work or waits again).

        The flusher sleeps in ``_bell.acquire()``; a ring lets the bell go:
        one C call and one futex wake on the writer's thread -- an event
        loop's, for the asyncio faces -- where a ``threading.Condition``'s
        ``notify`` under the group's lock made 4 more Python calls a wake-up
        (counted, one record at a time: 243.2 -> 239.2 calls an event on the
        loop).  A second ring before the flusher wakes finds the bell let go
        already (``RuntimeError``): one wake-up serves both, as the flusher
        reads ``last`` after it wakes.

        Runtime complexity: O(1)
        """
        # (try/except, not contextlib.suppress: no context manager a ring)
        try:  # noqa: SIM105
            self._bell.release()
        except RuntimeError:  # (rung already: the flusher has not woken yet)
            pass

    def wait(self, ticket: int) -> None:
        """Return once ``ticket`` is durable; raise
        :class:`~rankengine.durable.records.LogError` (from the fsync's
        error) if the fsync that should have covered it failed.

        Runtime complexity: O(1), plus the wait for at most two fsyncs
        """
        if ticket <= self.durable:  # (an int read: no lock needed to see progress)
            return
        with self._lock:
            while ticket > self.durable:
                if self._error is not None:
                    raise LogError(
                        f"the fsync that would have made this write durable failed "
                        f"({self._error}); it is not acknowledged"
                    ) from self._error
                if self._closing and not self._thread.is_alive():
                    raise ValueError("the log was closed before this write was durable")
                self._done.wait()

    def add_callback(self, ticket: int, callback: DoneCallback) -> None:
        """Call ``callback(None)`` once ``ticket`` is durable (at once, on
        this thread, if it is already), or ``callback(error)`` if its fsync
        fails.  Later calls run on the flusher thread: keep them short
        (``loop.call_soon_threadsafe``).

        Runtime complexity: O(1)
        """
        with self._lock:
            error = self._error
            if error is None and ticket > self.durable:
                self._callbacks.append((ticket, callback))
                self._ring()
                return
        callback(error if ticket > self.durable else None)

    def subscribe(self, listener: Callable[[int, BaseException | None], None]) -> None:
        """Call ``listener(durable, None)`` after every fsync from now on
        (on the flusher thread, or the thread of :meth:`synced`), and
        ``listener(durable, error)`` once if an fsync fails: for a waiter
        of many tickets (the asyncio face), instead of a callback each.

        Runtime complexity: O(1)
        """
        with self._lock:
            self._listeners.append(listener)

    def pace(self, interval_s: float) -> None:
        """Start the fsyncs at least ``interval_s`` seconds apart from now
        on (the longest pace asked for wins; 0, the default: back to back).

        An fsync after a quiet spell starts at once; under a steady stream
        the flusher waits out the rest of the interval before the next one,
        which then covers everything appended meanwhile: fewer, larger
        groups, each waiter released up to ``interval_s`` later.  Nothing is
        acknowledged earlier than before (see :data:`LOOP_PACE_S`).

        Runtime complexity: O(1)
        """
        if (
            type(interval_s) not in (int, float)
            or not math.isfinite(interval_s)
            or not 0 <= interval_s <= MAX_PACE_S
        ):
            raise ValueError(
                f"pace: interval_s must be a number of seconds from 0 to {MAX_PACE_S}, "
                f"not {interval_s!r}"
            )
        self._pace = max(self._pace, float(interval_s))

    def synced(self, seq: int) -> None:
        """Note that the log is durable up to ``seq`` by an fsync made
        elsewhere (a flush, a compaction): the waiters it covers go.

        Runtime complexity: O(waiters released)
        """
        with self._lock:
            if seq <= self.durable:
                return
            self.durable = seq
            ready = self._take_ready()
            self._done.notify_all()
        for _, callback in ready:
            callback(None)
        for listener in self._listeners:
            listener(seq, None)

    def close(self, *, join: bool = True) -> None:
        """Make everything appended durable (one last fsync if needed), then
        stop the flusher (and wait for it, unless ``join`` is False).
        Waiters it covers are released.

        Runtime complexity: one fsync at most
        """
        with self._lock:
            self._closing = True
        self._ring()
        if join and self._thread is not threading.current_thread():
            self._thread.join()

    # ------------------------------------------------------------------
    # The flusher
    # ------------------------------------------------------------------
    def _take_ready(self) -> list[tuple[int, DoneCallback]]:
        """The callbacks ``durable`` covers, removed (under the lock)."""
        callbacks = self._callbacks
        if not callbacks or callbacks[0][0] > self.durable:
            return []
        keep = [entry for entry in callbacks if entry[0] > self.durable]
        ready = [entry for entry in callbacks if entry[0] <= self.durable]
        self._callbacks = keep
        return ready

    def _run(self) -> None:
        """Fsync whenever something appended is not durable yet; each fsync
        covers every record appended before it started."""
        lock, bell = self._lock, self._bell
        while True:
            self._idle = True  # (before reading `last`: see appended)
            while self.last <= self.durable and not self._closing:
                bell.acquire()  # (until a ring; a stale one: test again)
            self._idle = False
            with lock:
                if self.last <= self.durable:  # closing, nothing left
                    self._done.notify_all()
                    return
                target = self.last  # (appended before the fsync starts)
            started = time.monotonic()
            try:
                self._sync()
            except BaseException as exc:  # (handed to every waiter)
                self._fail(exc)
                return
            with lock:
                self.syncs += 1
                self.durable = max(self.durable, target)
                ready = self._take_ready()
                self._done.notify_all()
                durable = self.durable
            for _, callback in ready:
                callback(None)
            for listener in self._listeners:
                listener(durable, None)
            # The pace: sleep out the rest of the interval now, not idle, so
            # the appends meanwhile ring no bell and the next fsync starts
            # right after the sleep (one turn of the GIL, not two).  A ring
            # from before (an append that saw the flusher idle as it woke, a
            # callback added) is let go first; a close rings the bell (after
            # setting _closing) and cuts the sleep short.
            left = started + self._pace - time.monotonic()
            if left > 0:
                bell.acquire(blocking=False)
                if not self._closing:
                    bell.acquire(timeout=left)

    def _fail(self, exc: BaseException) -> None:
        if self._on_error is not None:
            self._on_error(exc)
        with self._lock:
            self._error = exc
            failed, self._callbacks = self._callbacks, []
            self._done.notify_all()
        for _, callback in failed:
            callback(exc)
        for listener in self._listeners:
            listener(self.durable, exc)
