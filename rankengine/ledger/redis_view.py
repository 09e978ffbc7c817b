"""A Redis view: the events in the ledger, the serving copy in Redis.

The seeds' shape: the durable truth is the ledger's log; Redis holds a
sorted set that many processes read (``RedisLeaderboard``), and that may be
lost (a restart without persistence, a failover) without losing anything.

The view keeps, in the ledger's process, a *shadow*: an in-memory board of
the same settings that the Redis board logs every change it applies to
(the Redis board's own ``log=``, see :mod:`rankengine.redis.log`).  The
shadow is what the ledger snapshots and replays, exactly like a board
view; Redis is brought to the shadow's state on open, and on demand by
``ledger.rebuild_view(name)``.

Idempotence, by sequence number: the Redis board keeps, beside its sorted
set and in the same Lua script as each write, the count of writes that
changed it (``writes``); the shadow counts the same changes (``last_seq``,
saved in its snapshot and advanced by the replay).  On attach:

* equal counts: Redis holds exactly the shadow's state (it took the same
  writes), nothing to do;
* Redis behind (it lost data, or the process died between the log and
  Redis): Redis is rebuilt from the shadow's *state* (the fewest changes
  that turn what Redis has into it), and its count set to the shadow's;
* Redis ahead (a power cut lost the last records of an ``everysec`` log
  that Redis had applied): the shadow's count is moved past Redis's and
  Redis is rebuilt from the shadow, so the log stays the truth.

A rebuild copies a state, never replays increments, so running it twice,
or after a crash in the middle of one, gives the same board.  The ledger's
seq is also stored beside the board (``...:ledger_seq``) when the view is
attached, rebuilt, compacted or closed, for ``redis-cli`` and monitoring.

>>> ShadowBoard().last_seq
0
"""

from __future__ import annotations

from typing import Any

from rankengine.board.changes import Change
from rankengine.board.leaderboard import Leaderboard
from rankengine.ledger.adapters import (
    Adapter,
    Part,
    _check_board_write,
    _settings,
    register_adapter,
)
from rankengine.redis.board import RedisLeaderboard

__all__ = ["RedisAdapter", "ShadowBoard"]


class ShadowBoard(Leaderboard):
    """An in-memory board that counts the writes that changed it
    (``last_seq``), as a durable board counts its records: the log of a
    Redis board, compared with the count Redis keeps."""

    #: what a Redis board checks before taking it as its log
    counts_writes = True

    def __init__(self, **config: Any) -> None:
        super().__init__(**config)
        self.last_seq = 0
        self.closed = False
        # (a listener, not an override of _commit: the board's increment
        # fast path calls the listener without going through _commit)
        self._listener = self._count

    def _count(self, changes: list[Change]) -> None:
        if self.closed:
            raise ValueError("the ledger's Redis view is closed")
        self.last_seq += 1

    def close(self) -> None:
        """Refuse further writes (the Redis board closes its log)."""
        self.closed = True


class RedisAdapter(Adapter):
    """A ``RedisLeaderboard`` fed through its shadow (see the module
    docstring).  Options: ``url`` (a ``redis://`` URL), ``board`` (the Redis board's name),
    ``prefix``, and the board settings ``order``/``tie_break``/
    ``rank_style``."""

    kind = "redis"

    def _make(self) -> Any:
        self.shadow = self.new_board()
        self.redis: RedisLeaderboard | None = None
        return self.shadow

    def new_board(self) -> ShadowBoard:
        settings = {k: v for k, v in _settings(self.options).items() if k != "backend"}
        return ShadowBoard(**settings)

    def attach(self, ledger_seq: int) -> None:
        """Connect the Redis board and bring it to the shadow's state."""
        o = self.options
        settings = {k: v for k, v in _settings(o).items() if k in ("order", "tie_break")}
        where = {"prefix": o["prefix"]} if "prefix" in o else {}
        plain = RedisLeaderboard(o["url"], o["board"], **where, **settings)
        shadow = self.shadow
        if plain.writes > shadow.last_seq:
            shadow.last_seq = plain.writes + 1  # Redis ahead: the log is the truth
        self.redis = RedisLeaderboard(o["url"], o["board"], **where, **settings, log=shadow)
        if self.redis.writes != shadow.last_seq:
            self.redis.rebuild()
        self.board = self.redis
        self.mark(ledger_seq)

    def mark(self, ledger_seq: int) -> None:
        """Store the ledger's seq beside the board."""
        if self.redis is not None:
            key = (
                f"{self.options.get('prefix', 'rankengine:')}{{{self.options['board']}}}:ledger_seq"
            )
            self.redis._client.set(key, ledger_seq)

    def rebuild(self, ledger_seq: int) -> int:
        """Make Redis the shadow's state again; the members it holds."""
        if self.redis is None:
            self.attach(ledger_seq)
            return len(self.shadow)
        count = self.redis.rebuild()
        self.mark(ledger_seq)
        return count

    def apply(self, event: Any, ranks: bool) -> tuple[Any, Any, Any]:
        # Attached: the write goes to Redis, which logs it into the shadow.
        # Replaying (not attached yet): to the shadow alone.
        target = self.redis if self.redis is not None else self.shadow
        member, op = event.member, event.op
        if op == "incr":
            score = target.incr(member, event.value, when=event.when)
        elif op == "set":
            target.set(member, event.value, when=event.when, meta=event.meta)
            score = self.shadow.score(member)
        elif op == "remove":
            target.remove(member)
            score = None
        else:
            if member in self.shadow:
                target.set_meta(member, event.meta)
            score = self.shadow.score(member)
        rank = self.shadow.rank(member) if ranks else None
        return score, None, rank

    def check(self, event: Any, now_ms: int, sim: dict[Any, Any]) -> None:
        _check_board_write(self.shadow, event, sim)  # the shadow holds Redis's state

    def exact(self, event: Any) -> Leaderboard | None:
        return self.shadow

    def export(self) -> list[Part]:
        return [({"writes": self.shadow.last_seq}, self.shadow)]

    def restore(self, parts: list[Part]) -> None:
        ((header, board),) = parts
        assert isinstance(board, ShadowBoard)
        board.last_seq = int(header.get("writes", 0))
        self.shadow = self.board = board

    def check_invariants(self) -> None:
        self.shadow._check()

    def close(self, ledger_seq: int) -> None:
        """Note the seq and close the Redis handle."""
        if self.redis is not None:
            self.mark(ledger_seq)
            self.redis.close()


register_adapter(
    "redis", RedisAdapter, ("url", "board", "prefix", "order", "tie_break", "rank_style")
)
