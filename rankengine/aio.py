"""asyncio: a durable board whose writes are awaited, never blocking the loop.

:class:`AsyncLeaderboard` wraps a
:class:`~rankengine.durable.board.DurableLeaderboard`.  A write runs on the
event loop (the in-memory change and the append to the log take
microseconds) and its coroutine returns once the record is durable under
the board's policy: under ``fsync="always"`` it awaits the group commit's
fsync (:mod:`rankengine.durable.commit`), which runs on the flusher thread
and resolves the write's future through ``loop.call_soon_threadsafe``, so
the loop goes on serving while the disk works; writes from many tasks
share one fsync.  The face paces its group's fsyncs
(:data:`~rankengine.durable.commit.LOOP_PACE_S`: one every millisecond at
most; each costs the loop a wake-up), for threads writing the same board
too.  Under ``"everysec"`` and ``"never"`` the write returns at
once (the policy's own promise).  Reads are the board's own methods,
synchronous: in memory, microseconds, safe to call from the loop.

::

    writer task        loop thread                      flusher thread
    await board.incr   apply + append (us) -> future
                       ... other tasks run ...          fsync (ms), covering
                       future resolved  <-------------  every record appended
    (returns)                                           before it started

What still runs on the loop: opening (:meth:`AsyncLeaderboard.open`) and
closing run in a worker thread (``asyncio.to_thread``); a compaction runs
on its own thread, as for any durable board, but holds the board's lock
for its last slice (about a millisecond), which a write from the loop then
waits for.  Under ``"everysec"`` a write waits for a stalled fsync (over
2 s) as every writer does (``docs/durability.md``).

No new dependency: the standard library's asyncio only.

>>> import asyncio, tempfile
>>> async def main(path):
...     board = await AsyncLeaderboard.open(path, fsync="always")
...     async with board:
...         await asyncio.gather(*(board.incr(f"p{i % 3}", 1) for i in range(30)))
...         return board.top(3), board.rank("p0")
>>> with tempfile.TemporaryDirectory() as tmp:
...     top, rank = asyncio.run(main(tmp))
>>> [(e.member, e.score) for e in top], rank
([('p0', 10), ('p1', 10), ('p2', 10)], 1)
"""

from __future__ import annotations

import asyncio
import collections
import os
from collections.abc import Iterable, Mapping
from typing import Any

from rankengine.board.leaderboard import Entry, When
from rankengine.durable.acks import WRITES
from rankengine.durable.board import DurableLeaderboard
from rankengine.durable.commit import LOOP_PACE_S
from rankengine.durable.records import LogError

__all__ = ["AsyncLeaderboard"]


class AsyncLeaderboard:
    """An asyncio face for a durable board: ``await`` the writes, call the
    reads.

    :param board: an open :class:`~rankengine.durable.board.DurableLeaderboard`
        (this object closes it in :meth:`close`).

    Every read of the board (``rank``, ``score``, ``top``, ``around``,
    ``page``, ``entries``, ``meta``, ``count``, ``len()``, ``in`` ...) is
    available here unchanged; the writes are coroutines with the same
    arguments and results.  Use it from one event loop.
    """

    def __init__(self, board: DurableLeaderboard) -> None:
        if not isinstance(board, DurableLeaderboard):
            raise TypeError(
                f"AsyncLeaderboard wraps a durable board (Leaderboard.open(path)), "
                f"not {type(board).__name__}"
            )
        self.board = board
        self._loop: asyncio.AbstractEventLoop | None = None
        #: (ticket, future) of the writes waiting for their fsync, in order
        self._waiting: collections.deque[tuple[int, asyncio.Future[None]]] = collections.deque()
        self._scheduled = False
        self._error: BaseException | None = None

    @classmethod
    async def open(cls, path: str | os.PathLike[str], **options: Any) -> AsyncLeaderboard:
        """Open (or create) the durable board in ``path`` -- in a worker
        thread, as loading a large board takes a while -- and wrap it.  The
        options are :class:`~rankengine.durable.board.DurableLeaderboard`'s.

        Runtime complexity: that of the open
        """
        board = await asyncio.to_thread(DurableLeaderboard, path, **options)
        return cls(board)

    async def close(self) -> None:
        """Close the board (in a worker thread: it joins its threads and
        makes a last fsync).  Reads keep working; writes raise."""
        await asyncio.to_thread(self.board.close)

    async def flush(self) -> None:
        """Force every logged write to stable storage now (in a worker thread)."""
        await asyncio.to_thread(self.board.flush)

    async def __aenter__(self) -> AsyncLeaderboard:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __getattr__(self, name: str) -> Any:
        # The reads, straight from the board (synchronous, microseconds).
        # (a write reached here only if it is missing from the methods below)
        if name in WRITES or name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.board, name)

    def __len__(self) -> int:
        return len(self.board)

    def __contains__(self, member: object) -> bool:
        return member in self.board

    def __repr__(self) -> str:
        return f"AsyncLeaderboard({self.board!r})"

    # ------------------------------------------------------------------
    # The writes
    # ------------------------------------------------------------------
    async def set(
        self, member: Any, score: Any, *, when: When | None = None, meta: Any = None
    ) -> bool:
        """:meth:`Leaderboard.set`, returning once the write is durable."""
        result: bool = await self._write("set", member, score, when=when, meta=meta)
        return result

    async def incr(self, member: Any, delta: Any = 1, *, when: When | None = None) -> Any:
        """:meth:`Leaderboard.incr`, returning once the write is durable."""
        return await self._write("incr", member, delta, when=when)

    async def set_many(
        self, items: Mapping[Any, Any] | Iterable[tuple[Any, Any]], *, when: When | None = None
    ) -> int:
        """:meth:`Leaderboard.set_many` (one record, one fsync)."""
        result: int = await self._write("set_many", items, when=when)
        return result

    async def incr_many(self, items: Mapping[Any, Any] | Iterable[tuple[Any, Any]]) -> Any:
        """:meth:`Leaderboard.incr_many` (one record, one fsync)."""
        return await self._write("incr_many", items)

    async def remove(self, member: Any) -> bool:
        """:meth:`Leaderboard.remove`, returning once the write is durable."""
        result: bool = await self._write("remove", member)
        return result

    async def remove_many(self, members: Iterable[Any]) -> int:
        """:meth:`Leaderboard.remove_many` (one record)."""
        result: int = await self._write("remove_many", members)
        return result

    async def set_meta(self, member: Any, meta: Mapping[str, Any] | None) -> None:
        """:meth:`Leaderboard.set_meta`, returning once the write is durable."""
        await self._write("set_meta", member, meta)

    async def clear(self) -> None:
        """:meth:`Leaderboard.clear` (one record)."""
        await self._write("clear")

    async def pop_best(self, count: int = 1, *, with_meta: bool = False) -> list[Entry]:
        """:meth:`Leaderboard.pop_best` (one record)."""
        result: list[Entry] = await self._write("pop_best", count, with_meta=with_meta)
        return result

    async def pop_worst(self, count: int = 1, *, with_meta: bool = False) -> list[Entry]:
        """:meth:`Leaderboard.pop_worst` (one record)."""
        result: list[Entry] = await self._write("pop_worst", count, with_meta=with_meta)
        return result

    async def remove_by_rank(self, *args: Any, **kwargs: Any) -> Any:
        """:meth:`Leaderboard.remove_by_rank` (one record)."""
        return await self._write("remove_by_rank", *args, **kwargs)

    async def remove_by_score(self, *args: Any, **kwargs: Any) -> Any:
        """:meth:`Leaderboard.remove_by_score` (one record)."""
        return await self._write("remove_by_score", *args, **kwargs)

    async def keep_top(self, n: int) -> int:
        """:meth:`Leaderboard.keep_top` (one record)."""
        result: int = await self._write("keep_top", n)
        return result

    # ------------------------------------------------------------------
    # Waiting for the fsync
    # ------------------------------------------------------------------
    async def _write(self, name: str, /, *args: Any, **kwargs: Any) -> Any:
        """Run the write on the loop; await its fsync if it has one."""
        result, ticket = self.board.write_deferred(name, *args, **kwargs)
        if ticket:
            await self._durable(ticket)
        return result

    def _durable(self, ticket: int) -> asyncio.Future[None]:
        """A future resolved once ``ticket`` is durable.

        The futures wait in a queue in ticket order (every write of this
        face is made on the loop, one after another).  The face listens to
        every fsync of the group (one listener, not a callback per write);
        the listener only schedules :meth:`_release` on the loop, at most
        once until it runs, which resolves every future the fsyncs cover.
        """
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
            group = self.board.group_commit
            assert group is not None  # (a ticket comes from a group)
            group.subscribe(self._wake)
            group.pace(LOOP_PACE_S)  # (each fsync costs the loop a wake-up)
        future: asyncio.Future[None] = loop.create_future()
        self._waiting.append((ticket, future))
        group = self.board.group_commit
        if group is not None and ticket <= group.durable:
            self._wake(group.durable, None)  # durable already
        return future

    def _wake(self, durable: int, error: BaseException | None) -> None:
        """After each fsync, from the flusher thread (or this one): have
        the loop release the writes that are durable now, if any wait."""
        if error is not None:
            self._error = error
        elif not self._waiting or self._waiting[0][0] > durable:
            return  # (nothing of ours became durable)
        if not self._scheduled:
            self._scheduled = True
            assert self._loop is not None
            # (cleared by _release before it reads how far the log is
            # durable, so a wake-up after that read schedules it again)
            self._loop.call_soon_threadsafe(self._release)

    def _release(self) -> None:
        """On the loop: resolve the futures of every durable write, or fail
        those whose fsync failed."""
        self._scheduled = False
        group = self.board.group_commit
        durable = group.durable if group is not None else 0
        waiting = self._waiting
        while waiting and waiting[0][0] <= durable:
            _, future = waiting.popleft()
            if not future.done():  # (its task may have been cancelled)
                future.set_result(None)
        error = self._error
        if error is not None:
            while waiting:
                _, future = waiting.popleft()
                if not future.done():
                    future.set_exception(
                        LogError(
                            f"the fsync that would have made this write durable failed "
                            f"({error}); it is not acknowledged"
                        )
                    )
