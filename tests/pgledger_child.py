"""A PgLedger process that syncs and writes its views' snapshots (a child of
``tests/test_pg_ledger_snapshots.py``, killed mid-write by ``RANKENGINE_CRASH_AT``).

    python pgledger_child.py CONNINFO TABLE DIRECTORY
"""

from __future__ import annotations

import sys

from test_pg_ledger_snapshots import add_views

from rankengine.pg.ledger import PgLedger
from rankengine.pg.store import EventStore


def main() -> None:
    conninfo, table, directory = sys.argv[1:4]
    ledger = PgLedger(EventStore(conninfo, table=table, create=False), snapshots=directory)
    add_views(ledger)
    ledger.sync()
    ledger.snapshot()
    ledger.close()


if __name__ == "__main__":
    main()
