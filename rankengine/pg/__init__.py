"""The PostgreSQL event store: one stream of events for a fleet of processes.

Several processes (game servers) append events to one PostgreSQL table
(:mod:`rankengine.pg.store`); each process applies them, in the table's
order, to its own in-memory boards (:mod:`rankengine.pg.follower`, folded in
bulk on catch-up by :mod:`rankengine.pg.fold`), and one applier keeps a
Redis serving copy exactly once per event (:mod:`rankengine.pg.redis_view`).
The event format is :mod:`rankengine.pg.events`.  See ``docs/fleet.md``.

It may import ``durable/``, ``board/`` and ``index/``.  ``psycopg`` (3.x,
``pip install 'rankengine[postgres]'``) is imported only here, by
:mod:`rankengine.pg.store`; importing the package itself needs nothing
beyond the core.
"""

from __future__ import annotations

__all__: list[str] = []
