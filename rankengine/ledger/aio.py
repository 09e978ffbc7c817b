"""The ledger from asyncio: ``await ledger.arecord(...)``, with group commit.

``AsyncLedger`` wraps a :class:`~rankengine.ledger.ledger.Ledger`.  An
``arecord`` runs on the event loop's thread: the check, the append (the
record in the OS page cache) and the views' writes take microseconds and
never wait for the disk.  Under ``fsync="always"`` the call then awaits a
**group commit**: one flusher thread runs fsyncs back to back, each
covering every record appended before it started, so a thousand tasks
recording together share a few fsyncs instead of waiting for a thousand,
and the loop never blocks on one.  Under ``"everysec"`` and ``"never"`` the
await returns at once (the policy's promise is met by the append).

What the await means: the event is durable under the policy when it
returns, and its subscription notices are delivered then, in log order, on
the loop's thread.  Reads (``aledger["weekly"].top(10)``) are the boards'
own, synchronous, safe from the loop.  Under ``"always"`` the views show an
event from its append, a few hundred microseconds before its fsync: a
failed fsync fails the ledger (the awaits raise ``LogError``; reopen it,
and the views are rebuilt from what the disk kept).

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
import threading
from collections.abc import Callable
from typing import Any

from rankengine.durable.records import LogError
from rankengine.ledger.ledger import Ledger, Recorded

__all__ = ["AsyncLedger", "GroupSync"]

Held = list[tuple[Callable[[Any], None], Any]]


def _finish(future: asyncio.Future[None], held: Held, error: BaseException | None) -> None:
    """On the loop: deliver the held notices, then resolve the await."""
    if future.done():  # (cancelled by its caller meanwhile)
        return
    if error is not None:
        future.set_exception(error)
        return
    for callback, notice in held:
        callback(notice)
    future.set_result(None)


class GroupSync:
    """The group commit's flusher thread: fsyncs back to back, each one
    resolving every wait registered before it started."""

    def __init__(self, ledger: Ledger) -> None:
        self._ledger = ledger
        self._cond = threading.Condition()
        self._waiting: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None], Held]] = []
        self._stop = False
        #: fsyncs made (a figure for tests and benchmarks)
        self.fsyncs = 0
        self._thread = threading.Thread(
            target=self._run, name="rankengine-group-fsync", daemon=True
        )
        self._thread.start()

    def wait(
        self, loop: asyncio.AbstractEventLoop, future: asyncio.Future[None], held: Held
    ) -> None:
        """Resolve ``future`` on ``loop`` after the next fsync starts and ends."""
        with self._cond:
            self._waiting.append((loop, future, held))
            self._cond.notify()

    def _run(self) -> None:
        files = self._ledger._files
        assert files is not None
        while True:
            with self._cond:
                while not self._waiting and not self._stop:
                    self._cond.wait()
                if not self._waiting:
                    return
                batch, self._waiting = self._waiting, []
            error: BaseException | None = None
            try:
                files.sync()  # covers every record appended before it started
                self.fsyncs += 1
            except OSError as exc:
                error = LogError(f"{files.path}: a group fsync failed ({exc}); reopen the ledger")
            for loop, future, held in batch:
                loop.call_soon_threadsafe(_finish, future, held, error)

    def close(self) -> None:
        """Finish the waits registered, then stop the thread."""
        with self._cond:
            self._stop = True
            self._cond.notify()
        self._thread.join()


class AsyncLedger:
    """A :class:`Ledger` for asyncio (see the module docstring)."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        files = ledger._files
        self._group = GroupSync(ledger) if files is not None and files.policy == "always" else None

    @classmethod
    async def open(cls, path: Any, **options: Any) -> AsyncLedger:
        """Open (or create) the ledger in ``path`` on a worker thread (an
        open reads snapshots and replays the log: not on the loop)."""
        return cls(await asyncio.to_thread(Ledger.open, path, **options))

    @property
    def fsyncs(self) -> int:
        """Group fsyncs made so far."""
        return 0 if self._group is None else self._group.fsyncs

    async def arecord(self, member: Any, value: Any = None, **options: Any) -> Recorded:
        """:meth:`Ledger.record`, awaited until the event is durable under
        the policy (see the module docstring); raises what ``record`` raises.

        Runtime complexity: as :meth:`Ledger.record`, plus a share of one fsync
        """
        ledger = self.ledger
        files, subs = ledger._files, ledger._subs
        held: Held = []
        subs.local.hold = held
        if files is not None:
            files.local.defer = self._group is not None
        try:
            done = ledger.record(member, value, **options)
        finally:
            subs.local.hold = None
            if files is not None:
                files.local.defer = False
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        if self._group is None:
            _finish(future, held, None)
        else:
            self._group.wait(loop, future, held)
        await future
        return done

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
        """Let the group commit finish, then close the ledger (on a worker
        thread: the close fsyncs)."""
        if self._group is not None:
            await asyncio.to_thread(self._group.close)
        await asyncio.to_thread(self.ledger.close)
