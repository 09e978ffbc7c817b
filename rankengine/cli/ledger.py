"""``rankengine inspect`` and ``verify`` on a ledger directory.

The log is checked as a durable board's is (every frame, every record);
then each view: its kind, route, the seq its snapshot reflects, its files
and their sizes, and whether they read back whole.  A view whose snapshot
does not load is not damage: the next open rebuilds it from the log (and
says so), so ``verify`` exits 3 for it, as for a skipped board snapshot.

``rankengine add-view DIR VIEW KIND [NAME=VALUE ...]`` adds a view to a
ledger, replaying its history into it with a progress bar.

``rankengine replay DIR [--view NAME]`` on a ledger rebuilds one view, or
every view, in memory from the log (read only, with a progress bar) and
prints each of its boards, up to ``--until`` if given.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable
from typing import Any, Final, NamedTuple, TextIO

from rankengine.durable.eventlog import SegmentReader
from rankengine.durable.kinds import MIGRATED_KEY
from rankengine.durable.manifest import Manifest, read_manifest
from rankengine.durable.verify import Report
from rankengine.ledger.ledger import Ledger
from rankengine.ledger.report import ViewReport, view_reports
from rankengine.ledger.storage import read_events
from rankengine.ledger.views import View

__all__ = ["build_view", "inspect_ledger", "replay_ledger", "verify_ledger"]

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
    migrated = report.manifest.config.get(MIGRATED_KEY, {}) if report.manifest else {}
    # a migrated view's state before the migration is only in its snapshot:
    # the open refuses it rather than rebuilding it from the log
    stuck = [v for v in lost if v.name in migrated]
    code = report.exit_code if report.exit_code else (EXIT_TORN if lost else 0)
    if stuck and code != 1:
        code = 1
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
    elif stuck:
        names = ", ".join(repr(v.name) for v in stuck)
        out.write(
            f"DAMAGED: the snapshot of migrated view(s) {names} does not load, and their state "
            "before the migration is in no other file: the ledger refuses to open; restore "
            "the view's files from a backup\n"
        )
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


class _Row(NamedTuple):
    """One printed row of a trending view (what an ``Entry`` is for a board)."""

    rank: int
    member: Any
    score: Any
    meta: Any


def _last_seq(directory: str, manifest: Manifest) -> int:
    """The last seq of the log, from its last segment alone (for the bar)."""
    name, first = manifest.segments[-1]
    with SegmentReader(os.path.join(directory, name)) as reader:
        for _ in reader.events():
            pass
        return max(first - 1, reader.last_seq)


def _rows(view: View, top: int | None) -> list[tuple[Any, list[Any]]]:
    """``(key, rows)`` of each of the view's boards (key None: unkeyed)."""
    out: list[tuple[Any, list[Any]]] = []
    for key, adapter in sorted(view.adapters.items(), key=lambda kv: repr(kv[0])):
        board = adapter.board
        if view.kind == "topk":
            items = board.top()
            rows: list[Any] = [
                _Row(i, item.key, item.count, None) for i, item in enumerate(items, 1)
            ]
            out.append((key, rows if top is None else rows[:top]))
            continue
        if view.kind == "window":
            board.refresh()
        count = len(board.items()) if top is None else top  # (a periodic board: its period's)
        out.append((key, board.top(count, with_meta=True)))
    return out


def replay_ledger(
    directory: str,
    views: list[str] | None,
    until: tuple[str, int] | None,
    top: int | None,
    bar: Callable[[str, int, int], None],
) -> list[tuple[str, str, Any, list[Any]]]:
    """Rebuild ``views`` (None: every view) of the ledger in ``directory``
    in memory from its log, up to ``until`` (``("seq", n)`` or ``("time",
    ms)``, by the time each event was recorded), read only; return
    ``(view, kind, key, rows)`` for each of their boards.  A view a
    migration made holds state the log does not (it is refused here: open
    the ledger to read it).

    Runtime complexity: O(E) for E events, plus the views' writes
    """
    manifest = read_manifest(directory)
    config = manifest.config
    specs: dict[str, Any] = config.get("views", {})
    names = views if views else sorted(specs)
    for name in names:
        if name not in specs:
            raise ValueError(
                f"{directory}: the ledger has no view {name!r} (it has {sorted(specs)})"
            )
        if name in config.get(MIGRATED_KEY, {}):
            raise ValueError(
                f"{directory}: view {name!r} was migrated from {config[MIGRATED_KEY][name]}: "
                "its state before the migration is in its snapshot, not in the log, so it "
                "cannot be replayed from the log (open the ledger to read it)"
            )
    ledger = Ledger()  # in memory: the views are rebuilt here, nothing is written
    for name in names:
        ledger._views[name] = View.from_spec(name, specs[name])
    total = _last_seq(directory, manifest)
    label = ",".join(names)
    kind, limit = until if until is not None else ("seq", None)
    for record in read_events(directory, manifest, 0):
        if limit is not None and (record.seq if kind == "seq" else record.time_ms) > limit:
            break
        ledger._replay(record)
        if record.seq % 1_000 == 0:
            bar(label, record.seq, total)
    bar(label, total, total)
    return [
        (name, ledger._views[name].kind, key, rows)
        for name in names
        for key, rows in _rows(ledger._views[name], top)
    ]
