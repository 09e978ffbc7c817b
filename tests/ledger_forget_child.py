"""Child process for tests/test_ledger_forget.py: forget a member in a ledger,
maybe get killed.

Usage: ``python tests/ledger_forget_child.py DIR MEMBER``

The ``RANKENGINE_CRASH_AT`` environment variable makes the process kill
itself at that step of the forget; without it the child prints ``done``.
"""

from __future__ import annotations

import sys

from rankengine import Ledger


def main(argv: list[str]) -> None:
    directory, member = argv[0], argv[1]
    with Ledger.open(directory, fsync="always", compact_min_bytes=None) as ledger:
        ledger.forget(member)
    print("done", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
