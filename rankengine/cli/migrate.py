"""``rankengine migrate DIR``: an older durable directory becomes a ledger.

A directory written by ``Leaderboard.open`` (a durable board), a durable
periodic board, a sliding window or a decayed board is converted into a
ledger with one view holding the same state, crash-safely
(:mod:`rankengine.ledger.migrate`)::

    rankengine migrate scores/                          # a durable board
    rankengine migrate weekly/ calendar=weekly keep=2   # a periodic board
    rankengine migrate last24h/ --kind window calendar=hourly buckets=24
    rankengine migrate hot/ --view hot tau=3600         # a decayed board

``NAME=VALUE`` options are what the old store was opened with (a durable
board's settings are stored: it needs none).  A ledger is left as it is
(exit 0, "nothing to do").
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rankengine.cli.ledger import parse_options
from rankengine.ledger.migrate import migrate

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    options = parse_options(args.options)
    out = sys.stdout

    def step(name: str) -> None:
        print(f"rankengine migrate: {name}", file=sys.stderr)

    done = migrate(args.dir, view=args.view, kind=args.kind, progress=step, **options)
    if not done.done:
        out.write(f"{args.dir} is a ledger already (view {done.view!r}): nothing to do\n")
        return 0
    out.write(
        f"{args.dir}: {done.found} -> a ledger with view {done.view!r} ({done.kind}), "
        f"{done.members} member(s)\n"
    )
    return 0


def register(subparsers: Any) -> None:
    """Add ``migrate`` to the command line."""
    p = subparsers.add_parser(
        "migrate",
        help="convert a durable board, periodic, window or decayed directory into a ledger",
        description="Convert DIR (written by a durable board, periodic board, sliding window "
        "or decayed board) into a ledger with one view holding the same state, crash-safely. "
        "A ledger is left as it is.",
    )
    p.add_argument("dir", metavar="DIR", help="the directory")
    p.add_argument("--view", default=None, help="the view's name (default: its kind)")
    p.add_argument(
        "--kind",
        choices=("board", "periodic", "window", "decayed"),
        default=None,
        help="the view kind (told from DIR, but a window's directory looks like a "
        "periodic board's: say --kind window)",
    )
    p.add_argument(
        "options",
        nargs="*",
        metavar="NAME=VALUE",
        help="what the old store was opened with: calendar=, keep=, buckets=, tau= ...",
    )
    p.set_defaults(handler=_run)
