"""What ``rankengine inspect`` and ``verify`` say about a ledger's views.

The log of a ledger is checked as any durable log is
(:func:`rankengine.durable.verify.verify`: every frame, every record);
this module adds the views: each one's kind, route, the seq its snapshot
reflects, its snapshot files (each read back whole and checked), their
sizes, and the members they hold.  It reads without taking the lock, so it
can look at a ledger another process has open.

>>> import tempfile
>>> from rankengine import Ledger
>>> with tempfile.TemporaryDirectory() as tmp:
...     with Ledger.open(tmp) as ledger:
...         ledger.add_view("alltime")
...         _ = ledger.record("ann", 3)
...     [(v.name, v.kind, v.seq, v.members, v.problem) for v in view_reports(tmp)]
[('alltime', 'board', 0, 0, None)]
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from rankengine.durable.manifest import read_manifest
from rankengine.durable.records import CorruptionError
from rankengine.durable.snapshot import read_snapshot
from rankengine.ledger.routes import Route
from rankengine.ledger.storage import VIEWS_DIR, snapshot_entry

__all__ = ["ViewReport", "view_reports"]


@dataclass
class ViewReport:
    """One view as its files show it."""

    name: str
    kind: str
    options: dict[str, Any]
    route: str
    #: the seq its snapshot reflects (0: none; it is built from the log on open)
    seq: int
    files: list[tuple[str, int]] = field(default_factory=list)
    #: members over its snapshot's boards
    members: int = 0
    #: why its snapshot does not load (the open rebuilds it from the log)
    problem: str | None = None

    @property
    def size(self) -> int:
        """Bytes of its snapshot files."""
        return sum(size for _, size in self.files)


def view_reports(path: str) -> list[ViewReport]:
    """A report per registered view of the ledger in ``path``, each
    snapshot file read back and checked.

    Runtime complexity: O(size of the snapshots)
    """
    config = read_manifest(path).config
    snapshots = config.get("snapshots", {})
    out: list[ViewReport] = []
    for name, spec in config.get("views", {}).items():
        seq, listed, _clock = snapshot_entry(snapshots.get(name, [0, []]))
        report = ViewReport(
            name,
            spec.get("kind", "?"),
            dict(spec.get("options", {})),
            Route.from_map(spec.get("route", {})).describe(),
            seq,
        )
        for _key, file_name in listed:
            file_path = os.path.join(path, VIEWS_DIR, name, file_name)
            try:
                snap = read_snapshot(file_path)
                if snap.seq != seq:
                    raise CorruptionError(file_path, 0, f"holds seq {snap.seq}, not {seq}")
                report.members += int(snap.header.get("count", 0))
                report.files.append((file_name, snap.size))
            except (CorruptionError, OSError) as exc:
                report.problem = str(exc)
        out.append(report)
    return out
