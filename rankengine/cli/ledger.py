"""``rankengine inspect`` and ``verify`` on a ledger directory.

The log is checked as a durable board's is (every frame, every record);
then each view: its kind, route, the seq its snapshot reflects, its files
and their sizes, and whether they read back whole.  A view whose snapshot
does not load is not damage: the next open rebuilds it from the log (and
says so), so ``verify`` exits 3 for it, as for a skipped board snapshot.

``rankengine add-view DIR VIEW KIND [NAME=VALUE ...]`` adds a view to a
ledger, replaying its history into it with a progress bar.
"""

from __future__ import annotations

import argparse
import json
from typing import Any, Final, TextIO

from rankengine.durable.verify import Report
from rankengine.ledger.ledger import Ledger
from rankengine.ledger.report import ViewReport, view_reports

__all__ = ["build_view", "inspect_ledger", "verify_ledger"]

EXIT_TORN: Final = 3


def _views_json(views: list[ViewReport]) -> list[dict[str, Any]]:
    return [
        {
            "name": v.name,
            "kind": v.kind,
            "options": v.options,
            "route": v.route,
            "snapshot_seq": v.seq,
            "files": v.files,
            "bytes": v.size,
            "members": v.members,
            "problem": v.problem,
        }
        for v in views
    ]


def _write_views(views: list[ViewReport], last_seq: int, out: TextIO) -> None:
    out.write(f"views       {len(views)}\n")
    for v in views:
        behind = last_seq - v.seq
        out.write(
            f"  {v.name:<12} {v.kind:<9} {v.route}; snapshot at seq {v.seq} "
            f"({behind} event(s) to replay), {len(v.files)} file(s), {v.size} bytes, "
            f"{v.members} member(s)\n"
        )
        if v.problem is not None:
            out.write(f"    snapshot does not load (rebuilt from the log on open): {v.problem}\n")


def inspect_ledger(directory: str, report: Report, as_json: bool, out: TextIO) -> int:
    """Print the ledger's summary (``report`` is the log's verification)."""
    views = view_reports(directory)
    events = sum(s.records for s in report.segments)
    if as_json:
        info = {
            "directory": directory,
            "kind": "ledger",
            "last_seq": report.last_seq,
            "records_in_log": events,
            "segments": [(s.name, s.seq, s.last_seq, s.size) for s in report.segments],
            "views": _views_json(views),
            "findings": [str(f) for f in report.findings],
        }
        json.dump(info, out, indent=2, default=str)
        out.write("\n")
        return 0
    out.write(f"directory   {directory}\nkind        ledger\n")
    out.write(f"last seq    {report.last_seq}\n")
    out.write(f"records     {events} in {len(report.segments)} segment(s)\n")
    for s in report.segments:
        out.write(f"  {s.name}  seq {s.seq}..{s.last_seq}  {s.size} bytes\n")
    _write_views(views, report.last_seq, out)
    for finding in report.findings:
        out.write(f"  {finding}\n")
    return 0


def verify_ledger(directory: str, report: Report, as_json: bool, out: TextIO) -> int:
    """Print what checking the log and every view's snapshot found; the
    exit code (the log's, or 3 when only a view snapshot does not load)."""
    views = view_reports(directory)
    lost = [v for v in views if v.problem is not None]
    code = report.exit_code if report.exit_code else (EXIT_TORN if lost else 0)
    if as_json:
        json.dump(
            {
                "directory": directory,
                "kind": "ledger",
                "healthy": code == 0,
                "damaged": report.damaged,
                "torn": report.torn,
                "last_seq": report.last_seq,
                "findings": [f._asdict() for f in report.findings],
                "views": _views_json(views),
            },
            out,
            indent=2,
            default=str,
        )
        out.write("\n")
        return code
    records = sum(s.records for s in report.segments)
    out.write(
        f"checked {len(report.segments)} segment(s) ({records} records), last seq "
        f"{report.last_seq}, and {len(views)} view(s)\n"
    )
    for finding in report.findings:
        out.write(f"{finding}\n")
    _write_views(views, report.last_seq, out)
    if report.damaged:
        out.write("DAMAGED: the ledger will refuse to open; `rankengine repair DIR` keeps "
                  "everything before the damage\n")  # fmt: skip
    elif lost:
        out.write(f"VIEW REBUILD: {len(lost)} view(s) will be rebuilt from the log on open\n")
    if code == 0:
        out.write("healthy\n")
    return code


def build_view(directory: str, name: str, kind: str, options: dict[str, Any], bar: Any) -> int:
    """Add view ``name`` to the ledger in ``directory``, replaying its
    history with ``bar(name, done, total)`` as progress."""
    with Ledger.open(directory, create=False) as ledger:
        ledger.add_view(name, kind, progress=lambda done, total: bar(name, done, total), **options)
    return 0


def parse_options(pairs: list[str]) -> dict[str, Any]:
    """``["calendar=weekly", "keep=2"]`` -> ``{"calendar": "weekly", "keep": 2}``
    (a value that reads as JSON is taken as JSON, else as a string).

    >>> parse_options(["calendar=weekly", "keep=2", "where={\\"region\\": \\"eu\\"}"])
    {'calendar': 'weekly', 'keep': 2, 'where': {'region': 'eu'}}
    """
    out: dict[str, Any] = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        if not sep:
            raise argparse.ArgumentTypeError(f"expected NAME=VALUE, not {pair!r}")
        try:
            out[name] = json.loads(text)
        except ValueError:
            out[name] = text
    return out
