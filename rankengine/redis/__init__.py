"""The board on a real Redis: the same API, the order kept by Redis.

Owns the Redis board (``board``), the encoding of members, scores and
metadata into Redis values (``codec``), the Lua scripts and how they are
sent (``scripts``, ``lua/``).

May import: :mod:`rankengine.board`, :mod:`rankengine.durable` (the
optional event log) and :mod:`rankengine.index`.  The ``redis`` client
package is imported only when a board connects.
"""

from __future__ import annotations

from rankengine.redis.board import RedisLeaderboard

__all__ = [
    "RedisLeaderboard",
]
