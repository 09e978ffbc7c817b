"""A game-server process for the PostgreSQL store's tests (run as a child process).

    python pg_child.py CONNINFO TABLE WRITER EVENTS BATCH ACKS OUT [TOTAL]

Appends ``EVENTS`` events (batches of ``BATCH``; 1 = single appends) as
writer ``WRITER``, each carrying ``{"w": WRITER, "n": i, "region": ...}`` so
the parent can tell every event apart, and appends the sequence numbers of
each acknowledged batch to ``ACKS`` (flushed and fsynced before the next
write: what is in the file was acknowledged).  A follower thread applies
events to this process's views while it writes.  When ``TOTAL`` is given, it
then waits until the table holds ``TOTAL`` events (every writer done),
catches up and writes its views to ``OUT`` as JSON.
"""

from __future__ import annotations

import json
import os
import random
import sys
import threading
import time

from rankengine import Leaderboard
from rankengine.pg.events import NewEvent
from rankengine.pg.follower import Follower, StreamClock
from rankengine.pg.store import EventStore
from rankengine.timed.periodic import PeriodicLeaderboard

#: Players the events are spread over (few: many ties and repeat members).
PLAYERS = 40
REGIONS = ("eu", "us", "asia")
DAY_MS = 86_400_000


def events_of(writer: int, count: int, seed: int) -> list[NewEvent]:
    """The events writer ``writer`` appends (a mix of increments, sets, removals)."""
    rng = random.Random(seed)
    out = []
    for n in range(count):
        member = f"p{rng.randrange(PLAYERS)}"
        attrs = {"w": writer, "n": n, "region": rng.choice(REGIONS)}
        # event times over three days, so the daily view closes periods
        time_ms = 1_700_000_000_000 + (n * 3 * DAY_MS) // max(count, 1)
        roll = rng.random()
        if roll < 0.85:
            out.append(NewEvent("incr", member, rng.choice((1, 2, 5, 10, -3)), time_ms, attrs))
        elif roll < 0.95:
            out.append(NewEvent("set", member, rng.randrange(100), time_ms, attrs))
        else:
            out.append(NewEvent("remove", member, None, time_ms, attrs))
    return out


def make_views(follower: Follower) -> None:
    """The views every process keeps (the parent builds the same ones)."""
    follower.add("all", Leaderboard())
    follower.add("eu", Leaderboard(), route=lambda e: (e.attrs or {}).get("region") == "eu")
    clock = StreamClock()
    daily = PeriodicLeaderboard("daily", keep=5, late="drop", clock=clock)
    follower.add("daily", daily, clock=clock)


def dump_views(follower: Follower) -> dict[str, object]:
    out: dict[str, object] = {}
    for name, view in follower.views.items():
        board = view.board  # type: ignore[attr-defined]
        if isinstance(board, PeriodicLeaderboard):
            out[name] = {p.name: board.board(p).items() for p in board.periods()}
        else:
            board._check()
            out[name] = board.items()
    out["position"] = follower.position
    return out


def main() -> None:
    conninfo, table, writer, count, batch, acks, out = sys.argv[1:8]
    total = int(sys.argv[8]) if len(sys.argv) > 8 else None
    w, n, b = int(writer), int(count), int(batch)
    store = EventStore(conninfo, table=table, retry_seconds=60)
    follower = Follower(EventStore(conninfo, table=table, retry_seconds=60))
    make_views(follower)
    stop = threading.Event()
    thread = threading.Thread(target=follower.follow, args=(stop,), kwargs={"timeout": 0.1})
    thread.start()
    events = events_of(w, n, seed=1000 + w)
    with open(acks, "a", encoding="utf-8") as ack:
        for start in range(0, n, b):
            seqs = store.append_many(events[start : start + b])
            ack.write(" ".join(f"{s}:{w}:{start + i}" for i, s in enumerate(seqs)) + "\n")
            ack.flush()
            os.fsync(ack.fileno())
    stop.set()
    thread.join()
    with open(acks + ".reconnects", "w", encoding="utf-8") as f:
        f.write(str(store.reconnects))
    if total is not None:
        while len(store.read(0, total + 1)) < total:
            time.sleep(0.05)
        follower.catch_up()
        with open(out, "w", encoding="utf-8") as f:
            json.dump(dump_views(follower), f)
    store.close()
    follower.store.close()


if __name__ == "__main__":
    main()
