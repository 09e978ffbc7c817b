"""The ledger from asyncio: ``await ledger.arecord(...)``, with group commit.

``AsyncLedger`` wraps a :class:`~rankengine.ledger.ledger.Ledger`.  An
``arecord`` runs on the event loop's thread: the check, the append (the
record in the OS page cache) and the views' writes take microseconds and
never wait for the disk.  Under ``fsync="always"`` the call then awaits the
**group commit** of :mod:`rankengine.durable.commit` -- the ledger's
own (its threads share it), as a durable board and
:class:`~rankengine.aio.AsyncLeaderboard` have theirs: one
flusher thread runs the fsyncs, each covering every record appended
before it started, so a thousand tasks recording together share a few
fsyncs instead of waiting for a thousand, and the loop never blocks on
one.  The face paces them (:data:`~rankengine.durable.commit.LOOP_PACE_S`:
one every millisecond at most), as each costs the loop a wake-up: under a
steady stream an await returns up to a millisecond later, and the loop
spends far less of its CPU on wake-ups (``docs/asyncio.md``).  Under
``"everysec"`` and ``"never"`` the await returns at once (the policy's
promise is met by the append).

What the await means: the event is durable under the policy when it
returns, and its subscription notices are delivered then, in log order, on
the loop's thread.  Reads (``aledger["weekly"].top(10)``) are the boards'
own, synchronous, safe from the loop.  Under ``"always"`` the views show an
event from its append, a few hundred microseconds before its fsync: a
failed fsync fails the ledger (the awaits raise ``LogError``; reopen it,
and the views are rebuilt from what the disk kept).

``AsyncLedger.open`` loads the periodic views' closed periods (which a
ledger's open leaves unloaded) on a background thread
(:meth:`Ledger.preload <rankengine.ledger.ledger.Ledger.preload>`), so that
the first read of last week's standings does not load them on the loop;
``preload=False`` leaves them to their first read.

>>> import asyncio, tempfile
>>> async def main(path):
...     aledger = await AsyncLedger.open(path, fsync="always")
...     aledger.add_view("alltime")
...     done = await asyncio.gather(*(aledger.arecord(f"p{i % 10}", 1) for i in range(100)))
...     top = aledger["alltime"].top(1)[0]
...     await aledger.aclose()
...     return len(done), top.score, aledger.fsyncs < 100
>>> with tempfile.TemporaryDirectory() as tmp:
...     asyncio.run(main(tmp))
(100, 10, True)
"""

from __future__ import annotations

import asyncio
import collections
import threading
import warnings
from collections.abc import Callable
from typing import Any, Final

from rankengine.board.release import RELEASE, let_go
from rankengine.durable.commit import GroupCommit
from rankengine.durable.loopacks import ACK_BATCH, LoopAcks
from rankengine.durable.records import LogError
from rankengine.ledger.ledger import Ledger, Recorded
from rankengine.ledger.replayed import REPLAY

# (ACK_BATCH re-exported: LoopAcks's, the awaits one turn of the loop releases)
__all__ = ["ACK_BATCH", "HOLD_WAIT_S", "RESUME_BATCH", "AsyncLedger"]

#: Records one turn of the loop makes at most after a compaction held them
#: back; the rest wait for the next turns, in the order they were called.
#: A compaction of four views takes tens of milliseconds, and at 10,000
#: events/s the records that waited for it (239-709 measured) all ran in
#: the turn after it: 12-46 ms of the loop's CPU in one step.  64 records
#: at 25-60 us each keep a turn to a few milliseconds.
RESUME_BATCH: Final = 64

#: How long a replayed compaction waits, before it names its snapshots, for
#: the loop to hold records back (a turn of the loop: milliseconds); past
#: it, the naming goes on and a record may wait for the lock on the loop.
HOLD_WAIT_S: Final = 1.0

Held = list[tuple[Callable[[Any], None], Any]]


class AsyncLedger:
    """A :class:`Ledger` for asyncio (see the module docstring).  Use it
    from one event loop."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        files = ledger._files
        #: the ledger's group commit (``"always"`` only)
        self._group: GroupCommit | None = None if files is None else files.group
        #: the awaits of the group's fsyncs, each with its held notices
        #: (listening to the group, and pacing it, from now on)
        self._acks: LoopAcks[Held] | None = None
        if self._group is not None:
            self._acks = LoopAcks(self._group, self._failed, _deliver)
            self._acks.listen()
        self._loop: asyncio.AbstractEventLoop | None = None
        #: the thread of the loop (set by the first ``arecord``)
        self._loop_thread: int | None = None
        #: a size-triggered compaction running on a worker thread
        self._compaction: asyncio.Task[None] | None = None
        #: whether it holds records back: an in-process one all along; a
        #: replayed one only while it holds the ledger's lock (the switch,
        #: the naming): records go to the new segment while a child writes
        #: the snapshots (rankengine.ledger.replayed)
        self._holding = False
        #: the error of the last background compaction, until raised
        self._compact_error: Exception | None = None
        #: records held back by a compaction, in call order (_resume lets them go)
        self._held_back: collections.deque[asyncio.Future[None]] = collections.deque()
        self._resuming = False
        ledger.compact_elsewhere = self._compact_soon

    @classmethod
    async def open(cls, path: Any, *, preload: bool = True, **options: Any) -> AsyncLedger:
        """Open (or create) the ledger in ``path`` on a worker thread (an
        open reads snapshots and replays the log: not on the loop), then
        load the periodic views' closed periods on a background thread
        (:meth:`Ledger.preload`; ``preload=False``: each loads on its first
        read, which would run on the loop)."""
        ledger = await asyncio.to_thread(Ledger.open, path, **options)
        if preload:
            ledger.preload(background=True)
        return cls(ledger)

    async def preloaded(self) -> None:
        """Wait (off the loop) until the background preload is done; raise
        its first load's error, if any (:meth:`Preloader.wait
        <rankengine.ledger.preload.Preloader.wait>`)."""
        preloader = self.ledger.preloader
        if preloader is not None:
            await asyncio.to_thread(preloader.wait)

    @property
    def fsyncs(self) -> int:
        """Group fsyncs made so far."""
        return 0 if self._group is None else self._group.syncs

    async def arecord(self, member: Any, value: Any = None, **options: Any) -> Recorded:
        """:meth:`Ledger.record`, awaited until the event is durable under
        the policy (see the module docstring); raises what ``record`` raises.

        Runtime complexity: as :meth:`Ledger.record`, plus a share of one fsync
        """
        if (
            (self._compaction is not None and self._holding)
            or self._held_back
            or self._compact_error is not None
        ):
            await self._after_compaction()
        ledger = self.ledger
        files, subs = ledger._files, ledger._subs
        acks = self._acks
        if self._loop is None:  # (the loop of the compactions it starts)
            self._loop = asyncio.get_running_loop()
            self._loop_thread = threading.get_ident()
        held: Held = []
        subs.local.hold = held
        if files is not None:
            files.local.defer = acks is not None
        # (a board a view drops, a period that ended, is freed on the
        # release thread: at 10^6 members, 0.4 s of CPU the loop would pay)
        RELEASE.elsewhere = True
        try:
            done = ledger.record(member, value, **options)
        finally:
            RELEASE.elsewhere = False
            subs.local.hold = None
            if files is not None:
                files.local.defer = False
        if acks is None:
            _deliver(held)
            return done
        # (the append noted it for the group; the records of this face are
        # appended on the loop, one after another, so in ticket order)
        await acks.wait(done.seq, held)
        return done

    def _failed(self, error: BaseException) -> str:
        """The message of the awaits whose group fsync failed."""
        files = self.ledger._files
        where = "the ledger" if files is None else files.path
        return f"{where}: a group fsync failed ({error}); reopen the ledger"

    def _compact_soon(self) -> bool:
        """The ledger's :attr:`~Ledger.compact_elsewhere`: a write on the
        loop crossed ``compact_min_bytes``.  Start the compaction on a
        worker thread and return True.  An in-process one holds later
        ``arecord`` calls back until it ends (the loop serves everything
        else meanwhile); a replayed one (``snapshot_mode``, see
        :meth:`Ledger.compaction_kind`) does not: they wait at most for
        its switch to a new segment, under the ledger's lock.  False (the
        write compacts where it runs) on any other thread, or while one
        runs."""
        loop = self._loop
        if (
            loop is None
            or self._compaction is not None
            or threading.get_ident() != self._loop_thread
            or self.ledger.closed
        ):
            return False
        kind = self.ledger.compaction_kind()
        self._holding = True  # (a replay: until its switch is made)
        self._compaction = loop.create_task(self._compact(kind))
        return True

    async def _compact(self, kind: str) -> None:
        """Compact on a worker thread (the snapshots' encoding or the
        child's wait, their fsyncs and the segment switch: none of it on
        the loop).  An in-process compaction's error is kept for the next
        ``arecord`` to raise; a replayed one's is warned of (the records
        went on; the old snapshots stay in force, the next one retries)."""
        loop = self._loop
        assert loop is not None
        replay = kind == REPLAY

        def switched() -> None:  # (on the compacting thread)
            loop.call_soon_threadsafe(self._let_through)

        try:
            await asyncio.to_thread(
                self.ledger.compact,
                pause=let_go,
                kind=kind,
                switched=switched if replay else None,
                naming=self._hold_for_naming if replay else None,
            )
        except Exception as exc:
            if kind != REPLAY:
                self._compact_error = exc  # (raised by the next arecord)
            else:
                where = self.ledger.path
                warnings.warn(
                    f"{where}: background compaction failed: {exc}", RuntimeWarning, stacklevel=1
                )
        finally:
            self._compaction = None
            self._holding = False
            self._resume()

    def _let_through(self) -> None:
        """On the loop: a replayed compaction let the ledger's lock go
        after its switch (the records it held back go on while the child
        runs) or after its naming in memory (they go on while the manifest
        is written and the old files removed)."""
        self._holding = False
        self._resume()

    def _hold_for_naming(self) -> None:
        """On the compacting thread, before the naming takes the ledger's
        lock: hold records back on the loop from its next turn (waiting at
        most :data:`HOLD_WAIT_S` for the loop to say so), so that none
        blocks the loop's thread on the lock, until :meth:`_let_through`
        (the naming's hold is in memory only: the manifest is written
        after it lets the lock go)."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        held = threading.Event()

        def hold() -> None:
            self._holding = True
            held.set()

        try:
            loop.call_soon_threadsafe(hold)
        except RuntimeError:  # (the loop is closed)
            return
        held.wait(HOLD_WAIT_S)

    def _resume(self) -> None:
        """On the loop: let the records a compaction held back go on, in
        call order, :data:`RESUME_BATCH` of them a turn (each resumes in the
        loop's next turn; the rest wait for the turns after it)."""
        self._resuming = False
        if self._compaction is not None and self._holding:  # (its end resumes them)
            return
        held, budget = self._held_back, RESUME_BATCH
        while held and budget:
            gate = held.popleft()
            if not gate.done():  # (a cancelled record's is)
                gate.set_result(None)
                budget -= 1
        if held and self._loop is not None:
            self._resuming = True
            self._loop.call_soon(self._resume)

    async def _after_compaction(self) -> None:
        """Wait for the running compaction and the records it held back
        before this one, if any; raise the error of the last compaction
        that failed, once (nothing is recorded: the next event asks for a
        compaction again)."""
        if self._compaction is not None or self._held_back:
            loop = self._loop or asyncio.get_running_loop()
            gate: asyncio.Future[None] = loop.create_future()
            self._held_back.append(gate)
            if self._compaction is None and not self._resuming:
                self._resuming = True  # (the queue drains without a compaction to end)
                loop.call_soon(self._resume)
            await gate
        error, self._compact_error = self._compact_error, None
        if error is not None:
            message = f"the ledger's compaction failed ({error}); nothing recorded"
            raise LogError(message) from error

    def add_view(self, name: str, kind: str = "board", **options: Any) -> None:
        """:meth:`Ledger.add_view` (a view built from a long history takes a
        while: call it before serving, or from a worker thread)."""
        self.ledger.add_view(name, kind, **options)

    def __getitem__(self, name: str) -> Any:
        return self.ledger[name]

    def view(self, name: str, key: Any = None) -> Any:
        """:meth:`Ledger.view`."""
        return self.ledger.view(name) if key is None else self.ledger.view(name, key)

    async def aclose(self) -> None:
        """Let the group commit make what is appended durable and release
        its awaits, then close the ledger (on worker threads: both fsync)."""
        if self._compaction is not None:
            await asyncio.wait([self._compaction])
        while self._held_back:  # (the records it held back record first)
            await asyncio.sleep(0)
        if self._group is not None:
            await asyncio.to_thread(self._group.close)
            await asyncio.sleep(0)  # (the awaits it released run first)
        await asyncio.to_thread(self.ledger.close)


def _deliver(held: Held) -> None:
    """Deliver the subscription notices held for one event (on the loop,
    once it is durable; even if its await was cancelled)."""
    for callback, notice in held:
        callback(notice)
