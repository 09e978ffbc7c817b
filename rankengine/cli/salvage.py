"""``rankengine salvage DIR [--apply]``: records found past damage.

Without ``--apply`` it only shows what :func:`rankengine.durable.salvage.find`
finds (read only): where the board's log is consistent to, the records
found past it (seq range, count, times, files), the sequence numbers with
no copy anywhere, and what a replay would mean for exactness.  With
``--apply`` it repairs a damaged board first (``rankengine repair``: what
it cuts is set aside) and replays the records found after the gap, as new
records keeping their times, and says which sequence numbers they got and
where the report is.  Exit codes as for the other log tools: 0 done, 1
failed, 2 bad arguments or DIR is not a board, 130 interrupted.

>>> sub = argparse.ArgumentParser().add_subparsers()
>>> register(sub)
>>> args = sub.choices["salvage"].parse_args([".", "--from", "."])
>>> args.apply, args.extra
(False, ['.'])
"""

from __future__ import annotations

import argparse
import functools
import os
from typing import Any, TextIO

from rankengine.cli.log import EXIT_OK, run
from rankengine.durable.salvage import apply, find, records

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add ``salvage`` to ``subparsers``."""
    p = subparsers.add_parser(
        "salvage",
        help="show (and with --apply replay) records found past damage",
        description="Show the records found past damage: in the board's segments, in "
        "the backups `repair` set aside (DIR/repair-*), and in any --from file or "
        "directory.  Read only unless --apply: then a damaged board is repaired first "
        "and the records found are replayed after the gap, keeping their times; a "
        "report (DIR/salvage-TIME.json) names the lost sequence numbers.  Stop every "
        "process using the board first.",
    )
    p.add_argument("dir", type=_directory, metavar="DIR", help="the board directory")
    p.add_argument(
        "--apply", action="store_true", help="replay the records found (default: only show)"
    )
    p.add_argument(
        "--from",
        dest="extra",
        type=_existing,
        action="append",
        default=[],
        metavar="PATH",
        help="another file or directory to look in (a --backup-dir given to repair)",
    )
    p.set_defaults(handler=functools.partial(run, _salvage), log_command="salvage")


def _directory(value: str) -> str:
    if not os.path.isdir(value):
        raise argparse.ArgumentTypeError(f"{value!r} is not a directory")
    return value


def _existing(value: str) -> str:
    if not os.path.exists(value):
        raise argparse.ArgumentTypeError(f"{value!r} does not exist")
    return value


def _salvage(args: argparse.Namespace, out: TextIO) -> int:
    if not args.apply:
        plan = find(args.dir, extra=args.extra)
        for line in plan.lines():
            out.write(f"{line}\n")
        if plan.writes:
            first = plan.kept_seq + 1
            repair = "repair the board (`rankengine repair`), then " if plan.damaged else ""
            out.write(
                f"nothing was changed; to {repair}replay the {records(len(plan.writes))} "
                f"after seq {plan.kept_seq} (as seq {first}..{first + len(plan.writes) - 1}, "
                f"keeping their times), run: rankengine salvage {args.dir} --apply\n"
            )
        else:
            out.write("nothing to replay; nothing was changed\n")
        return EXIT_OK
    result = apply(args.dir, extra=args.extra)
    if result.repaired is not None:
        for action in result.repaired.actions:
            out.write(f"repair: {action}\n")
        if result.repaired.backup is not None:
            out.write(f"repair: backup of everything cut: {result.repaired.backup}\n")
    for line in result.salvage.lines():
        out.write(f"{line}\n")
    if result.report is None:
        out.write("nothing to replay\n")
        return EXIT_OK
    again = " (finished an interrupted salvage)" if result.resumed else ""
    out.write(
        f"replayed {records(result.last_seq - result.first_seq + 1)} as seq "
        f"{result.first_seq}..{result.last_seq}{again}; report: {result.report}\n"
    )
    return EXIT_OK
