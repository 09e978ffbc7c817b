"""A follower's restart: replaying the whole events table, or loading local snapshots.

Usage (from the repository root; needs ``pip install -e '.[test,postgres]'``)::

    python bench/pg_restart.py                    # a private server, 200,000 events
    python bench/pg_restart.py --events 1000000 --players 100000 --rounds 3
    python bench/pg_restart.py --url "host=... dbname=..."

Method: ``--events`` increments over ``--players`` players (half of them in
region "eu") are in one table; a follower with two views (all-time, and
"eu" by a route) catches up and writes its snapshots
(:mod:`rankengine.pg.snapshots`); then ``--tail`` more events are appended.
A restart is timed from a fresh process's point of view: a new store
connection and follower, its views added (loading their snapshots, when
given the directory), and :meth:`Follower.catch_up` to the table's end.
"Replay" is the same without the directory (every event read and applied,
folded as the follower does).  The two are interleaved ``--rounds`` times;
the best of each is printed, with the snapshot files' size and the time to
write them.  Boards are compared at the end (they must be equal).

The machine may be shared: compare the two columns of one run.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for extra in (ROOT, ROOT / "tests"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from rankengine import Leaderboard  # noqa: E402
from rankengine.pg.events import NewEvent  # noqa: E402
from rankengine.pg.follower import BoardView, Follower  # noqa: E402
from rankengine.pg.store import EventStore  # noqa: E402

#: Events per append while the table is filled.
FILL_BATCH = 5_000


def _eu(event: Any) -> bool:
    return (event.attrs or {}).get("region") == "eu"


def _follower(url: str, table: str, directory: str | None) -> Follower:
    follower = Follower(EventStore(url, table=table, create=False), snapshots=directory)
    follower.add("all", Leaderboard())
    follower.add("eu", Leaderboard(), route=_eu)
    return follower


def _fill(store: EventStore, count: int, players: int, seed: int) -> None:
    rng = random.Random(seed)
    for start in range(0, count, FILL_BATCH):
        batch = []
        for _ in range(min(FILL_BATCH, count - start)):
            p = rng.randrange(players)
            region = "eu" if p % 2 else "us"
            batch.append(NewEvent("incr", f"p{p}", rng.choice((1, 2, 5)), 0, {"region": region}))
        store.append_many(batch)


def _restart(url: str, table: str, directory: str | None) -> tuple[float, Follower]:
    t = time.perf_counter()
    follower = _follower(url, table, directory)
    follower.catch_up()
    return time.perf_counter() - t, follower


def _state(follower: Follower) -> list[Any]:
    out = []
    for view in follower.views.values():
        assert isinstance(view, BoardView)
        out.append(view.board.items())
    return out


def run(url: str, events: int, players: int, tail: int, rounds: int) -> dict[str, float]:
    table = f"bench_restart_{random.randrange(1 << 30)}"
    store = EventStore(url, table=table, synchronous_commit=False)
    try:
        _fill(store, events, players, seed=1)
        with tempfile.TemporaryDirectory() as directory:
            first = _follower(url, table, directory)
            first.catch_up()
            t = time.perf_counter()
            first.snapshot()
            write_s = time.perf_counter() - t
            size = sum(p.stat().st_size for p in Path(directory).iterdir())
            first.store.close()
            _fill(store, tail, players, seed=2)
            replay, snap = [], []
            for _ in range(rounds):
                seconds, replayed = _restart(url, table, None)
                replay.append(seconds)
                seconds, loaded = _restart(url, table, directory)
                snap.append(seconds)
                if _state(replayed) != _state(loaded):
                    raise AssertionError("a restart from snapshots differs from a replay")
                replayed.store.close()
                loaded.store.close()
    finally:
        store.drop()
        store.close()
    return {
        "replay_s": min(replay),
        "snapshots_s": min(snap),
        "snapshot_write_s": write_s,
        "snapshot_bytes": size,
    }


def _server(url: str | None) -> Any:
    from contextlib import nullcontext

    if url:
        return nullcontext(None)
    from postgres_service import private_postgres

    return private_postgres(settings={"fsync": "on"})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", help="an existing server's conninfo (default: start one)")
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--players", type=int, default=50_000)
    parser.add_argument("--tail", type=int, default=2_000, help="events after the snapshot")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    with _server(args.url) as server:
        url = args.url or server.url
        r = run(url, args.events, args.players, args.tail, args.rounds)
    print(
        f"{args.events:,} events over {args.players:,} players, then {args.tail:,} more; "
        f"best of {args.rounds}:"
    )
    print(f"  restart, full replay:          {r['replay_s']:.3f} s")
    print(
        f"  restart, snapshots + the tail: {r['snapshots_s']:.3f} s "
        f"({r['replay_s'] / r['snapshots_s']:.1f}x faster)"
    )
    print(
        f"  writing the snapshots: {r['snapshot_write_s']:.3f} s, "
        f"{r['snapshot_bytes'] / 1e6:.1f} MB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
