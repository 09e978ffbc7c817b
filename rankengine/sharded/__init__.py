"""One board over many shards: in-process boards, Redis, Redis Cluster.

Owns the sharded board (``board``), the placement of members on shards and
the checks of a shard list (``placement``), and the exact merges of its
reads (``merge``).

May import: :mod:`rankengine.board`, :mod:`rankengine.redis` and below.
"""

from __future__ import annotations

from rankengine.sharded.board import ShardedLeaderboard

__all__ = [
    "ShardedLeaderboard",
]
