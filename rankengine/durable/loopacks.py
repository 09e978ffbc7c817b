"""Acknowledgements on an event loop: futures the group commit's fsyncs resolve.

An asyncio face (:class:`~rankengine.aio.AsyncLeaderboard`,
:class:`~rankengine.ledger.aio.AsyncLedger`) appends its records on the
loop and must not block it for their fsync.  :class:`LoopAcks` is how it
waits: each write gets a future, queued with its ticket (its record's seq);
one listener of the :class:`~rankengine.durable.commit.GroupCommit` hears
every fsync on the flusher thread and schedules one release on the loop,
which resolves the futures the fsync covers, in ticket order::

    loop thread                            flusher thread
    wait(7) -> future   waiting: 7         fsync covering <= 8
    wait(8) -> future   waiting: 7 8        |
                                           _wake(8): call_soon_threadsafe(_release)
    _release: 7, 8 resolved  <-------------'   (once until it runs)

Invariant: the waiting queue is in ticket order (every write of a face is
appended on its loop, one after another), and a ticket leaves it only once
:attr:`GroupCommit.durable <rankengine.durable.commit.GroupCommit.durable>`
covers it (its future resolved), or after a failed fsync (its future failed
with :class:`~rankengine.durable.records.LogError`).  At most one release is
scheduled at a time.

One release resolves at most :data:`ACK_BATCH` futures a turn of the loop
and schedules itself again for the rest, so timers and I/O run between the
batches of a large group.

Runtime complexity: O(1) per wait; O(1) per fsync on the flusher thread;
O(released) a release.

>>> import asyncio
>>> from rankengine.durable.commit import GroupCommit
>>> async def main():
...     group = GroupCommit(lambda: None, durable=0)
...     acks = LoopAcks(group, lambda error: f"failed ({error})", print)
...     futures = []
...     for ticket in (1, 2, 3):
...         group.appended(ticket)             # (the record's append)
...         futures.append(acks.wait(ticket, f"event {ticket} durable"))
...     await asyncio.gather(*futures)
...     group.close()
>>> asyncio.run(main())
event 1 durable
event 2 durable
event 3 durable
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable
from typing import Final, Generic, TypeVar

from rankengine.durable.commit import LOOP_PACE_S, GroupCommit
from rankengine.durable.records import LogError

__all__ = ["ACK_BATCH", "LoopAcks"]

#: Awaits one turn of the loop releases at most; the rest go in the next
#: turns (``call_soon``), so timers and I/O get the loop between them.
#: After a stall (the machine's, a collection's) one fsync can cover
#: thousands of events: released together, 1,300-3,800 awaits took 4-7 ms
#: (measured at 10,000 events/s on a loaded 2-core machine), and every task
#: they resume then runs its next step in one following turn.  128 a turn
#: keeps both to a fraction of a millisecond each.
ACK_BATCH: Final = 128

#: What a face keeps beside each ticket for its ``deliver`` hook.
Extra = TypeVar("Extra")


class LoopAcks(Generic[Extra]):
    """The writes of one event loop waiting for the fsyncs of one group.

    :param group: the group commit whose fsyncs make the tickets durable.
    :param failed: the message of the :class:`LogError` the waiting writes
        get after a failed fsync, given the fsync's error (each face words
        its own).
    :param deliver: called on the loop with each released ticket's
        ``extra``, in ticket order, just before its future is resolved --
        even if its task was cancelled, as the write is durable (None:
        nothing to do).

    The listener is subscribed, and the group paced at
    :data:`~rankengine.durable.commit.LOOP_PACE_S`, by :meth:`listen` or
    else by the first :meth:`wait`.  Use it from one event loop.
    """

    __slots__ = (
        "_deliver",
        "_error",
        "_failed",
        "_listening",
        "_loop",
        "_scheduled",
        "_waiting",
        "group",
    )

    def __init__(
        self,
        group: GroupCommit,
        failed: Callable[[BaseException], str],
        deliver: Callable[[Extra], None] | None = None,
    ) -> None:
        self.group = group
        self._failed = failed
        self._deliver = deliver
        #: the loop of the waits (set by the first)
        self._loop: asyncio.AbstractEventLoop | None = None
        #: (ticket, future, extra) of the writes waiting for their fsync, in order
        self._waiting: collections.deque[tuple[int, asyncio.Future[None], Extra]] = (
            collections.deque()
        )
        #: a release is scheduled on the loop and has not started yet
        self._scheduled = False
        #: the error of a failed fsync (the group's flusher has stopped)
        self._error: BaseException | None = None
        self._listening = False

    def listen(self) -> None:
        """Hear every fsync of the group from now on, and pace its fsyncs
        (each costs the loop a wake-up); once, later calls do nothing.

        Runtime complexity: O(1)
        """
        if not self._listening:
            self._listening = True
            self.group.subscribe(self._wake)
            self.group.pace(LOOP_PACE_S)  # (each fsync costs the loop a wake-up)

    def wait(self, ticket: int, extra: Extra) -> asyncio.Future[None]:
        """A future resolved on the loop once ``ticket`` is durable (or
        failed with :class:`LogError` if its fsync fails); call it on the
        loop, right after the append that issued ``ticket``.

        Runtime complexity: O(1)
        """
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
            self.listen()
        future: asyncio.Future[None] = loop.create_future()
        self._waiting.append((ticket, future, extra))
        group = self.group
        if ticket <= group.durable:
            self._wake(group.durable, None)  # durable already (another fsync covered it)
        return future

    def _check(self) -> None:
        """Assert the invariants (call it on the loop, between its callbacks).

        Runtime complexity: O(waiting)
        """
        waiting = list(self._waiting)
        try:
            # 1. the queue is in ticket order (each ticket waited on once)
            tickets = [ticket for ticket, _, _ in waiting]
            assert tickets == sorted(set(tickets)), "tickets out of order"
            # 2. a future still queued is unresolved, unless its task was
            #    cancelled (only a release resolves or fails one)
            for _, future, _ in waiting:
                assert not future.done() or future.cancelled(), "a resolved future queued"
            # 3. no lost wake-up: a durable write waiting (or one whose fsync
            #    failed) has a release scheduled on the loop
            if waiting and (tickets[0] <= self.group.durable or self._error is not None):
                assert self._scheduled, "a durable write waits with no release scheduled"
            # 4. the listener is subscribed once the loop is known
            assert self._loop is None or self._listening, "waiting without listening"
        except AssertionError:
            print(f"LoopAcks: durable {self.group.durable}, scheduled {self._scheduled}, ")
            print(f"  error {self._error!r}, waiting {[(t, f) for t, f, _ in waiting]}")
            raise

    def _wake(self, durable: int, error: BaseException | None) -> None:
        """After each fsync, from the flusher thread (or this one): have
        the loop release the writes that are durable now, if any wait.

        Runtime complexity: O(1)
        """
        if error is not None:
            self._error = error
        elif not self._waiting or self._waiting[0][0] > durable:
            return  # (nothing of ours became durable)
        if not self._scheduled and self._loop is not None:
            self._scheduled = True
            # (cleared by _release before it reads how far the log is
            # durable, so a wake-up after that read schedules it again)
            self._loop.call_soon_threadsafe(self._release)

    def _release(self) -> None:
        """On the loop: resolve the futures of every durable write, in
        ticket order, :data:`ACK_BATCH` of them a turn (the rest in the
        next turns); fail those whose fsync failed.

        Runtime complexity: O(released)
        """
        self._scheduled = False
        durable = self.group.durable
        waiting = self._waiting
        deliver = self._deliver
        budget = ACK_BATCH
        while waiting and waiting[0][0] <= durable:
            if not budget:  # the rest in the loop's next turn
                if not self._scheduled and self._loop is not None:
                    self._scheduled = True
                    self._loop.call_soon(self._release)
                return
            budget -= 1
            _, future, extra = waiting.popleft()
            if deliver is not None:
                deliver(extra)  # (even if its task was cancelled: the write is durable)
            if not future.done():  # (its task may have been cancelled)
                future.set_result(None)
        error = self._error
        if error is not None and waiting:
            message = self._failed(error)
            while waiting:
                _, future, _extra = waiting.popleft()
                if not future.done():
                    future.set_exception(LogError(message))
