"""asyncio: a durable board whose writes are awaited, never blocking the loop.

:class:`AsyncLeaderboard` wraps a
:class:`~rankengine.durable.board.DurableLeaderboard`.  A write runs on the
event loop (the in-memory change and the append to the log take
microseconds) and its coroutine returns once the record is durable under
the board's policy: under ``fsync="always"`` it awaits the group commit's
fsync (:mod:`rankengine.durable.commit`), which runs on the flusher thread
and has the loop resolve the write's future through
``loop.call_soon_threadsafe`` (:mod:`rankengine.durable.loopacks`, in
batches of :data:`~rankengine.durable.loopacks.ACK_BATCH` a turn), so the
loop goes on serving while the disk works; writes from many tasks share
one fsync.  The face paces its group's fsyncs
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
import os
from collections.abc import Iterable, Mapping
from typing import Any

from rankengine.board.leaderboard import Entry, When
from rankengine.durable.acks import WRITES
from rankengine.durable.board import DurableLeaderboard
from rankengine.durable.loopacks import LoopAcks

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
        group = board.group_commit
        #: the writes waiting for their fsync (``"always"`` only; it listens
        #: to the group from the first)
        self._acks: LoopAcks[None] | None = (
            None if group is None else LoopAcks(group, _not_acknowledged)
        )

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
        """A future resolved once ``ticket`` is durable
        (:class:`~rankengine.durable.loopacks.LoopAcks`: one listener of
        the group's fsyncs, the futures released on the loop in ticket
        order, :data:`~rankengine.durable.loopacks.ACK_BATCH` a turn)."""
        acks = self._acks
        assert acks is not None  # (a ticket comes from a group)
        return acks.wait(ticket, None)


def _not_acknowledged(error: BaseException) -> str:
    """The message of the writes whose fsync failed."""
    return (
        f"the fsync that would have made this write durable failed ({error}); "
        f"it is not acknowledged"
    )
