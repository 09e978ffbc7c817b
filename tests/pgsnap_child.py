"""A follower process that catches up and writes its snapshots (a child of
``tests/test_pg_snapshots.py``, killed mid-write by ``RANKENGINE_CRASH_AT``).

    python pgsnap_child.py CONNINFO TABLE DIRECTORY
"""

from __future__ import annotations

import sys

from test_pg_snapshots import make_views

from rankengine.pg.follower import Follower
from rankengine.pg.store import EventStore


def main() -> None:
    conninfo, table, directory = sys.argv[1:4]
    store = EventStore(conninfo, table=table, create=False)
    follower = Follower(store, snapshots=directory)
    make_views(follower)
    follower.catch_up()
    follower.snapshot()
    store.close()


if __name__ == "__main__":
    main()
