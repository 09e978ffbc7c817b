"""Acknowledged writes: a durable board's public writes return once their
record is durable under ``fsync="always"``, sharing fsyncs
(:mod:`rankengine.durable.commit`).

Each public write of :class:`~rankengine.board.leaderboard.Leaderboard`
that can change the board (:data:`WRITES`) is wrapped on a board opened
with ``fsync="always"``: the write runs as
before, under the board's lock, and its record is appended there (the
board's listener notes the record's seq -- its *ticket* -- for this
thread); once the write returns and the lock is let go, the wrapper waits
for the fsync that covers the ticket.  So writers on several threads share
fsyncs, and no fsync is made under the board's lock.  Under ``"everysec"``
and ``"never"`` there is no group and the wrapper only calls the write.

A caller that must not block (the asyncio face, :mod:`rankengine.aio`)
runs the write with :meth:`AcknowledgedWrites.write_deferred`, which
returns the ticket instead of waiting, and then waits on it its own way
(:meth:`AcknowledgedWrites.when_durable`).

Runtime complexity: O(1) per write on top of the write itself.

>>> import tempfile
>>> from rankengine.durable.board import DurableLeaderboard
>>> with tempfile.TemporaryDirectory() as tmp:
...     with DurableLeaderboard(tmp, fsync="always") as board:
...         board.incr("ann", 3)            # returns once the record is fsynced
...         result, ticket = board.write_deferred("incr", "bob", 2)
...         board.wait_durable(ticket)      # (or when_durable(ticket, callback))
...         print(result, ticket, board.last_seq)
3
2 2 2
"""

from __future__ import annotations

import functools
import threading
import weakref
from typing import Any, Final

from rankengine.durable.commit import DoneCallback, GroupCommit
from rankengine.durable.rotation import sync_active

__all__ = ["WRITES", "AcknowledgedWrites"]

#: The public writes: every method of the board API that may log a record.
WRITES: Final = (
    "set",
    "incr",
    "set_many",
    "incr_many",
    "remove",
    "remove_many",
    "clear",
    "set_meta",
    "pop_best",
    "pop_worst",
    "remove_by_rank",
    "remove_by_score",
    "keep_top",
)


class _Tickets(threading.local):
    """Per thread: the ticket of the last record this thread appended (0:
    none since the write began), and whether its writes wait for it."""

    ticket = 0
    defer = False


class AcknowledgedWrites:
    """Mixin of :class:`~rankengine.durable.board.DurableLeaderboard`: its
    writes wait for a shared fsync under ``"always"``.

    The board calls :meth:`_start_group` when it opens, :meth:`_appended`
    from its listener (under its lock, after the append), :meth:`_synced`
    after any fsync of its own (flush, compaction) and :meth:`_stop_group`
    when it closes.
    """

    _group: GroupCommit | None = None
    _acks: _Tickets
    # (the board's, used by the fsync below)
    _sync_lock: threading.Lock
    _writer: Any
    _failure: BaseException | None

    def _start_group(self, always: bool, durable: int) -> None:
        """Set up the tickets, and under ``"always"`` the group commit
        (its thread holds the board weakly: a board dropped without
        ``close()`` is still collected, see the board's ``__del__``)."""
        self._acks = _Tickets()
        if always:
            board = weakref.ref(self)
            self._group = GroupCommit(
                functools.partial(_sync, board),
                durable=durable,
                on_error=functools.partial(_failed, board),
            )
            for name in WRITES:
                _install(self, name)

    def _appended(self, seq: int) -> None:
        assert self._group is not None
        self._group.appended(seq)
        self._acks.ticket = seq

    def _synced(self, seq: int) -> None:
        if self._group is not None:
            self._group.synced(seq)

    def _stop_group(self, *, join: bool = True) -> None:
        if self._group is not None:
            self._group.close(join=join)

    @property
    def group_commit(self) -> GroupCommit | None:
        """The group commit of an ``fsync="always"`` board (None under the
        other policies): its ``syncs`` counts the fsyncs made."""
        return self._group

    def write_deferred(self, name: str, /, *args: Any, **kwargs: Any) -> tuple[Any, int]:
        """Run the public write ``name`` without waiting for its fsync:
        ``(its result, its ticket)``; the ticket is 0 when nothing needs to
        be waited for (no record, or a policy other than ``"always"``).
        Give the ticket to :meth:`wait_durable` or :meth:`when_durable`.

        Runtime complexity: the write's
        """
        if name not in WRITES:
            raise ValueError(f"{name!r} is not a write; writes: {', '.join(WRITES)}")
        acks = self._acks
        acks.defer, acks.ticket = True, 0
        try:
            result = getattr(self, name)(*args, **kwargs)
        finally:
            acks.defer = False
        return result, acks.ticket if self._group is not None else 0

    def wait_durable(self, ticket: int) -> None:
        """Block until ``ticket`` (from :meth:`write_deferred`) is durable;
        :class:`~rankengine.durable.records.LogError` if its fsync failed.

        Runtime complexity: the wait for at most two fsyncs
        """
        if ticket and self._group is not None:
            self._group.wait(ticket)

    def when_durable(self, ticket: int, callback: DoneCallback) -> None:
        """Call ``callback(None)`` once ``ticket`` is durable, or
        ``callback(error)`` if its fsync failed: at once if it is already
        durable, else from the fsync thread (keep it short).

        Runtime complexity: O(1)
        """
        if ticket and self._group is not None:
            self._group.add_callback(ticket, callback)
        else:
            callback(None)


def _sync(board: weakref.ref[AcknowledgedWrites]) -> None:
    """The group's fsync: the board's active segment, under its sync lock;
    during a log rotation, once the rotation is durable (see
    :func:`~rankengine.durable.rotation.sync_active`)."""
    live = board()
    if live is None:
        raise ValueError("the board was dropped")
    sync_active(live)


def _failed(board: weakref.ref[AcknowledgedWrites], exc: BaseException) -> None:
    """A failed group fsync fails the board, as any fsync's does."""
    live = board()
    if live is not None:
        live._failure = exc


def _install(board: AcknowledgedWrites, name: str) -> None:
    """Give ``board`` (under ``"always"``) its own public write ``name``
    that waits for the fsync (see the module docstring).

    Per board, as an instance attribute, so that the boards of the other
    policies call their writes with no wrapper at all (measured: a wrapper
    on the class cost every ``everysec`` write a few percent).  The next
    method is looked up once, in the board's own MRO: a subclass's override
    of the write runs, as it would without this.
    """
    inner = getattr(super(AcknowledgedWrites, board), name)
    group, acks = board._group, board._acks
    assert group is not None

    @functools.wraps(inner)
    def write(*args: Any, **kwargs: Any) -> Any:
        outer = acks.ticket
        acks.ticket = 0
        result = inner(*args, **kwargs)
        ticket = acks.ticket
        if not acks.defer:
            if ticket:
                group.wait(ticket)  # (outside the board's lock: it is let go)
            acks.ticket = outer
        return result

    setattr(board, name, write)
