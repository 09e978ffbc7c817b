"""A Redis board fed from the event store, exactly once per event.

The seeds' order: an event is durable in PostgreSQL first, then the serving
copy in Redis changes.  A :class:`RedisView` is the applier that makes the
second step: it applies the store's events, in order, to a
:class:`~rankengine.redis.board.RedisLeaderboard`, and keeps its place *in
Redis, with the board*: the board's write counter holds the sequence number
of the last event applied, and moves in the same Lua script as the changes
(:meth:`~rankengine.redis.board.RedisLeaderboard.apply_at`), which refuses to
run unless the counter is where the applier expects it.  So:

* a crash between reading events and writing Redis loses nothing: the next
  applier starts from the counter;
* a replay never double counts: events at or below the counter are skipped,
  and a write sent twice finds the counter moved and changes nothing;
* a Redis that lost the board (restarted without persistence, flushed) has
  no counter left where the applier expects it: the view rebuilds the board
  from its mirror (below) and sets the counter to the mirror's position.

The mirror.  Redis is sent *results*, not requests: the view applies each
event to an in-process :class:`~rankengine.Leaderboard` of the same order
and tie rule (its mirror, fed as any view is, folded where possible) and
sends the changes the mirror made (absolute scores and tie clocks).  Redis
then holds exactly the mirror's state, ties included, and an absolute write
applied twice would be harmless even without the counter.  The mirror is
rebuilt from the store when the process starts (a catch-up), and events
Redis holds already (at or below its counter) only feed the mirror.

One applier per Redis board: the counter is the applier's (the board's own
writes move it too); a second applier is safe (each refuses the other's
stale writes and rebuilds) but wasteful.

>>> view = RedisView("serving", redis_board)              # doctest: +SKIP
>>> follower.add_view(view)                                # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, Protocol

from rankengine.board.changes import Change
from rankengine.board.leaderboard import Leaderboard
from rankengine.pg.events import StoreEvent
from rankengine.pg.follower import BoardView, Route

__all__ = ["REDIS_CHUNK", "AppliedBoard", "Mirror", "RedisView"]

#: Events per Redis script: a script blocks the server while it runs (about
#: 10 ms per 2,000 changes), so a long catch-up is cut into scripts of this many.
REDIS_CHUNK: Final = 2000


class AppliedBoard(Protocol):
    """What :class:`RedisView` needs of the Redis board."""

    @property
    def order(self) -> Any: ...
    @property
    def tie_break(self) -> Any: ...
    @property
    def writes(self) -> int: ...

    def apply_at(self, changes: list[Change], *, after: int, seq: int) -> bool: ...
    def rebuild_at(self, source: Leaderboard, seq: int) -> int: ...


class Mirror(Leaderboard):
    """An in-process board that keeps the changes each write made, to send on."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.pending: list[Change] = []
        self._listener = self.pending.extend


class RedisView:
    """A Redis board fed by a follower, its position stored in Redis.

    :param board: a :class:`~rankengine.redis.board.RedisLeaderboard` without
        an event log (the store is its log).
    :param route: as for :class:`~rankengine.pg.follower.BoardView`.
    """

    def __init__(self, name: str, board: AppliedBoard, *, route: Route | None = None) -> None:
        self.name = name
        self.board = board
        self.mirror = Mirror(order=board.order, tie_break=board.tie_break)
        self._feed = BoardView(name, self.mirror, route=route)
        self.refused = 0
        #: Where Redis is: the counter read at the start, then kept.
        self.stored = board.writes
        #: Times Redis was rebuilt from the mirror (a flush, a lost server).
        self.rebuilds = 0

    @property
    def position(self) -> int:
        """The last event applied to the mirror (Redis is there too after :meth:`apply`)."""
        return self._feed.position

    @position.setter
    def position(self, value: int) -> None:
        self._feed.position = value

    def __repr__(self) -> str:
        return f"RedisView({self.name!r}, position={self.position}, stored={self.stored})"

    def apply(self, events: Sequence[StoreEvent]) -> int:
        """Apply the events past :attr:`position` to the mirror, then their
        changes to Redis in scripts of :data:`REDIS_CHUNK` events; return how
        many were past the position.

        Runtime complexity: O(k log N) for k events, k / REDIS_CHUNK round trips.
        """
        fresh = [e for e in events if e.seq > self.position]
        applied = 0
        for start in range(0, len(fresh), REDIS_CHUNK):
            piece = fresh[start : start + REDIS_CHUNK]
            self.mirror.pending = []
            self.mirror._listener = self.mirror.pending.extend
            applied += self._feed.apply(piece)
            self.refused = self._feed.refused
            last = piece[-1].seq
            if last <= self.stored:
                continue  # Redis has these already: they only feed the mirror
            # (a piece that straddles the counter is sent whole: its changes
            # are absolute, so those Redis has already change nothing)
            if self.stored < 0 or not self._send(self.mirror.pending, last):
                self.resync()  # -1: a rebuild cut short; or Redis lost its board
        self.mirror.pending = []
        return applied

    def _send(self, changes: list[Change], seq: int) -> bool:
        if not changes and self.stored == seq:
            return True
        if self.board.apply_at(changes, after=self.stored, seq=seq):
            self.stored = seq
            return True
        return False

    def resync(self) -> int:
        """Make Redis the mirror's state, its counter the mirror's position
        (after Redis lost data, or when it is behind in a way the counter
        cannot bridge); return the number of members written.

        Runtime complexity: O(N log N), about N / 2000 round trips.
        """
        written = self.board.rebuild_at(self.mirror, self.position)
        self.stored = self.position
        self.rebuilds += 1
        return written

    def check(self) -> None:
        """Resync unless Redis's counter is the mirror's position (call after a
        catch-up: a Redis that lost its board while nothing was written)."""
        self.stored = self.board.writes
        if self.stored != self.position:
            self.resync()
