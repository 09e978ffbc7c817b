"""Could a ledger's views share their member maps' work?  The measurements
behind docs/ledger.md's "what was measured and is not worth doing".

Usage (from the repository root), on the fixture ``bench/ledger_open.py``
keeps::

    python bench/ledger_open.py -n 1000000 --case distinct --repeats 1 --fixtures FIX
    python bench/map_sharing.py FIX/distinct-1000000/ledger

Reads the all-time and the weekly views' newest snapshots (this tree's
``read_snapshot``) and times, CPU, the minimum of ``--repeats``:

* the weekly member -> score map built from its own freshly decoded
  member strings (what an open does: ``dict(zip())``);
* the same map built from the all-time view's string objects (what a
  member table shared by the views would give it);
* gathering the weekly members from the all-time column by row number
  (how a view storing row numbers into a shared table gets its members);
* decoding the weekly snapshot (what that gathering would replace);
* copying the all-time map and updating it with the weekly scores.
"""

from __future__ import annotations

import argparse
import gc
import glob
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rankengine.durable.snapshot import read_snapshot  # noqa: E402 - after the path


def best(f: Callable[[], Any], repeats: int) -> float:
    """The least CPU time of ``repeats`` calls of ``f``."""
    times = []
    for _ in range(repeats):
        cpu = time.process_time()
        result = f()
        times.append(time.process_time() - cpu)
        del result
    return min(times)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("ledger", help="a ledger directory written by bench/ledger_open.py")
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.1f}")
    gc.disable()  # as an open does
    paths = {
        view: sorted(glob.glob(os.path.join(args.ledger, "views", view, "*.snap")))[0]
        for view in ("alltime", "weekly")
    }
    alltime = read_snapshot(paths["alltime"]).columns()
    weekly = read_snapshot(paths["weekly"]).columns()
    members, scores = weekly[0], weekly[1]
    listed = scores.tolist() if hasattr(scores, "tolist") else list(scores)
    same_objects = {m: m for m in alltime[0]}
    shared = [same_objects[m] for m in members]
    rows = {m: i for i, m in enumerate(alltime[0])}
    rows_of = [rows[m] for m in members]
    alltime_map = dict(zip(alltime[0], alltime[1].tolist(), strict=True))

    def copied() -> dict[Any, Any]:
        out = alltime_map.copy()
        out.update(zip(shared, listed, strict=True))
        return out

    results = [
        ("weekly map, its own decoded strings", lambda: dict(zip(members, listed, strict=True))),
        ("weekly map, the all-time view's strings", lambda: dict(zip(shared, listed, strict=True))),
        (
            "weekly members gathered by row number",
            lambda: list(map(alltime[0].__getitem__, rows_of)),
        ),
        ("weekly snapshot decoded and checked", lambda: read_snapshot(paths["weekly"])),
        ("all-time map copied, weekly scores put in", copied),
    ]
    for label, f in results:
        print(f"  {label:<44} {best(f, args.repeats):6.3f} s")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
