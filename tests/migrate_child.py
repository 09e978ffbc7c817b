"""Child process for tests/test_migrate.py: migrate a directory, maybe get killed.

Usage: ``python tests/migrate_child.py DIR OPTIONS_JSON``

``OPTIONS_JSON`` holds :func:`rankengine.ledger.migrate.migrate`'s keyword
arguments.  The ``RANKENGINE_CRASH_AT`` environment variable makes the
process kill itself at that step; without it the child prints ``done``.
"""

from __future__ import annotations

import json
import sys

from rankengine.ledger.migrate import migrate


def main(argv: list[str]) -> None:
    migrate(argv[0], **json.loads(argv[1]))
    print("done", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
