"""Child process for tests/test_ledger_crash.py: record events until killed.

Usage: ``python tests/ledger_child.py DIR SEED OPS FSYNC COMPACT_BYTES [async] [replay]``

Opens the ledger in ``DIR`` (registering :data:`VIEWS` on a new one) with
``fsync=FSYNC`` and records operations ``last_seq .. OPS - 1``, each one
record (an event, or every seventh a batch of three), generated from
``SEED`` and the operation's index alone, so the parent can regenerate
them.  Before each it prints ``intent I``, after it returns ``ack I SEQ``,
flushing stdout each time: every ``ack`` is an acknowledged record that
must be in every view after a SIGKILL.  ``COMPACT_BYTES`` is the ledger's
compaction threshold (small: kills land inside compactions too).  With
``async``, the events are recorded from a coroutine through an
``AsyncLedger`` (``await arecord``: its compactions run on a worker thread
while the loop goes on; a batch is ``record_many`` on a worker thread).
With ``replay``, the ledger compacts with ``snapshot_mode="replay"`` (a
child process writes the snapshots while the records go on).
"""

from __future__ import annotations

import asyncio
import random
import sys
from typing import Any

from rankengine import Ledger
from rankengine.ledger.aio import AsyncLedger
from rankengine.timed.state import decayed_state, periodic_state

#: The views of the crash ledger: (name, kind, options).
VIEWS: list[tuple[str, str, dict[str, Any]]] = [
    ("alltime", "board", {}),
    ("skip", "board", {"backend": "skiplist", "order": "asc"}),
    ("weekly", "periodic", {"calendar": "weekly"}),
    ("daily", "periodic", {"calendar": "daily", "keep": 2, "grace": 3600}),
    ("last3h", "window", {"calendar": "hourly", "buckets": 3}),
    ("hot", "decayed", {"half_life": 7200.0, "where": {"region": "eu"}}),
    ("trend", "topk", {"k": 5}),
    ("by_region", "board", {"by": "region"}),
]
#: The first event's time (2027-01-03T00:00Z, a Sunday).
T0_MS = 1_798_934_400_000


def add_views(ledger: Ledger) -> None:
    """Register :data:`VIEWS` on ``ledger``."""
    for name, kind, options in VIEWS:
        ledger.add_view(name, kind, **options)


def events(seed: int, i: int) -> list[dict[str, Any]]:
    """Operation ``i`` of the history of ``seed``: one event or a batch."""
    rng = random.Random(seed * 1_000_003 + i)
    t_ms = T0_MS + i * 600_000 - rng.randrange(2) * 60_000

    def one(j: int) -> dict[str, Any]:
        member = f"m{rng.randrange(30)}"
        region = rng.choice(["eu", "us", "ap"])
        kind = rng.random()
        item: dict[str, Any] = {"member": member, "t_ms": t_ms + j, "attrs": {"region": region}}
        if kind < 0.6:
            item["value"] = rng.choice([1, 2, 5, 3])
        elif kind < 0.85:
            item.update(op="set", value=rng.choice([0, 4, 10, 25]), meta={"i": i})
        elif kind < 0.95:
            item["op"] = "remove"
        else:
            item.update(op="meta", meta={"seen": i})
        return item

    return [one(j) for j in range(3 if i % 7 == 6 else 1)]


def apply(ledger: Ledger, items: list[dict[str, Any]]) -> None:
    """Record one operation (one record)."""
    if len(items) == 1:
        item = dict(items[0])
        member = item.pop("member")
        value = item.pop("value", None)
        ledger.record(member, value, **item)
    else:
        ledger.record_many(items)


def state(ledger: Ledger) -> dict[str, Any]:
    """Everything every view must show after a replay."""
    out: dict[str, Any] = {}
    for name, kind, options in VIEWS:
        view = ledger[name]
        if "by" in options:
            out[name] = {key: board.items() for key, board in sorted(view.items())}
        elif kind == "board":
            out[name] = (view.items(), [view.meta(m) for m, _ in view.items()], view.clock)
        elif kind == "periodic":
            now, held = periodic_state(view)
            out[name] = (now, sorted((n, c, b.items()) for n, c, b in held))
        elif kind == "window":
            out[name] = view.board.items()
        elif kind == "decayed":
            t0, _, stored = decayed_state(view)
            out[name] = (t0, stored.items())
        else:
            out[name] = [(item.key, item.count) for item in view.top()]
    return out


async def main_async(
    directory: str, seed: int, ops: int, fsync: str, compact: int, *, mode: str = "auto"
) -> None:
    """:func:`main` through an ``AsyncLedger``."""
    aledger = await AsyncLedger.open(
        directory, fsync=fsync, compact_min_bytes=compact, snapshot_mode=mode
    )
    ledger = aledger.ledger
    if not ledger.views:
        add_views(ledger)
    out = sys.stdout
    for i in range(ledger.last_seq, ops):
        out.write(f"intent {i}\n")
        out.flush()
        items = events(seed, i)
        if len(items) == 1:
            item = dict(items[0])
            member = item.pop("member")
            value = item.pop("value", None)
            done = await aledger.arecord(member, value, **item)
            seq = done.seq
        else:
            await asyncio.to_thread(ledger.record_many, items)
            seq = ledger.last_seq
        out.write(f"ack {i} {seq}\n")
        out.flush()
    await aledger.aclose()
    out.write("done\n")
    out.flush()


def main(argv: list[str]) -> None:
    directory, seed, ops, fsync, compact = argv[0], int(argv[1]), int(argv[2]), argv[3], argv[4]
    mode = "replay" if "replay" in argv[5:] else "auto"
    if "async" in argv[5:]:
        asyncio.run(main_async(directory, seed, ops, fsync, int(compact), mode=mode))
        return
    ledger = Ledger.open(directory, fsync=fsync, compact_min_bytes=int(compact), snapshot_mode=mode)
    if not ledger.views:
        add_views(ledger)
    out = sys.stdout
    for i in range(ledger.last_seq, ops):
        out.write(f"intent {i}\n")
        out.flush()
        apply(ledger, events(seed, i))
        out.write(f"ack {i} {ledger.last_seq}\n")
        out.flush()
    ledger.close()
    out.write("done\n")
    out.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
