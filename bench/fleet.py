"""A fleet of writer processes on one PostgreSQL event store, beside one process on its own log.

Usage (from the repository root; needs ``pip install -e '.[test]'`` for
psycopg and the test helper that starts PostgreSQL)::

    python bench/fleet.py                       # a private server, fsync on
    python bench/fleet.py --seconds 5 --json fleet.json
    python bench/fleet.py --url "host=... dbname=..."   # an existing server

Method:

1. A private PostgreSQL (``tests/postgres_service.py``: Debian's server,
   ``initdb`` into a temporary directory, **fsync on**, default settings
   otherwise), or ``--url``.
2. Throughput: N writer processes (1, 2, 4) append ``incr`` events to one
   table for ``--seconds`` each, every process starting at the same
   instant; single appends (one event per transaction) and batches of
   ``--batch``; ``synchronous_commit`` on and off.  Beside them, one
   process writes the same increments to its own durable board
   (``rankengine.open_board``, ``fsync="everysec"`` and ``"always"``).
   Events per second, summed over the processes.
3. Catch-up: ``--catch-up`` events (over 100,000 players) are in the table;
   a new process's :class:`~rankengine.pg.follower.Follower` applies them to
   an all-time board (folded, the default) and, for comparison, one event
   at a time.  Events per second, the read from PostgreSQL included.
4. Write-to-visible delay: one writer process appends single events at
   ``--rate`` a second (paced, each stamped with its send time); another
   process follows (``LISTEN`` to wake, a query to read) and notes, for each
   event, the time from the writer's call to its application in the
   follower's view.  p50, p99 and max over ``--seconds``.

The machine may be shared (say so when quoting figures); ratios in one run
are the figures to compare.  Prints a table; ``--json`` writes every figure.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shutil
import statistics
import sys
import tempfile
import time
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for extra in (ROOT, ROOT / "tests"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

import rankengine  # noqa: E402
from rankengine import Leaderboard  # noqa: E402
from rankengine.pg.events import NewEvent  # noqa: E402
from rankengine.pg.follower import BoardView, Follower  # noqa: E402
from rankengine.pg.store import EventStore  # noqa: E402

PLAYERS = 100_000


def _events(writer: int, start: int, count: int) -> list[NewEvent]:
    return [
        NewEvent("incr", f"p{(writer * 7919 + i * 31) % PLAYERS}", 1 + i % 5, 1_700_000_000_000 + i)
        for i in range(start, start + count)
    ]


# -- throughput ------------------------------------------------------------------


def _writer(
    url: str, table: str, writer: int, *, batch: int, sync: bool, seconds: float, pipes: Any
) -> None:
    ready, go, out = pipes
    store = EventStore(url, table=table, synchronous_commit=sync, create=False)
    store.head()  # connected before the start
    done = 0
    pool = _events(writer, 0, max(batch, 1) * 64)
    ready.put(writer)
    go.wait()
    end = time.time() + seconds
    i = 0
    while time.time() < end:
        if batch == 1:
            e = pool[i % len(pool)]
            store.append(e.op, e.member, e.value, time_ms=e.time_ms)
            done += 1
        else:
            k = (i * batch) % len(pool)
            done += len(store.append_many(pool[k : k + batch]))
        i += 1
    out.put(done)
    store.close()


def throughput(
    url: str, writers: int, batch: int, sync: bool, seconds: float, *, schema: int = 2
) -> float:
    """Events per second of ``writers`` processes appending at once for
    ``seconds``, into a table of schema version ``schema`` (1: the earlier
    layout, msgpack payloads only)."""
    table = f"bench_{os.getpid()}_{writers}_{batch}_{int(sync)}_v{schema}"
    store = EventStore(url, table=table, create=schema == 2)
    if schema == 1:
        store.create_legacy()
    ctx = mp.get_context("spawn")
    pipes = (ctx.Queue(), ctx.Event(), ctx.Queue())
    procs = [
        ctx.Process(
            target=_writer,
            args=(url, table, w),
            kwargs={"batch": batch, "sync": sync, "seconds": seconds, "pipes": pipes},
        )
        for w in range(writers)
    ]
    for p in procs:
        p.start()
    for _ in procs:
        pipes[0].get()  # every process connected and waiting
    pipes[1].set()
    total = sum(pipes[2].get() for _ in procs)
    for p in procs:
        p.join()
    store.drop()
    store.close()
    return total / seconds


def local_log(fsync: str, seconds: float) -> float:
    directory = tempfile.mkdtemp(prefix="fleet-local-")
    try:
        board = rankengine.open_board(directory, fsync=fsync)
        pool = _events(0, 0, 4096)
        done = 0
        end = time.time() + seconds
        while time.time() < end:
            for e in pool[:256]:
                board.incr(e.member, e.value)
            done += 256
            pool = pool[256:] + pool[:256]
        board.close()
        return done / seconds
    finally:
        shutil.rmtree(directory, ignore_errors=True)


# -- catch-up ----------------------------------------------------------------------


def _catch_up_once(url: str, table: str, *, fold: bool, sql: bool) -> float:
    follower = Follower(EventStore(url, table=table, create=False), fold_in_sql=sql)
    view = follower.add("all", Leaderboard())
    view.foldable = fold and view.foldable
    t = time.perf_counter()
    applied = follower.catch_up()
    rate = applied / (time.perf_counter() - t)
    follower.store.close()
    return rate


def _read_once(url: str, table: str) -> float:
    read = EventStore(url, table=table, create=False)
    t = time.perf_counter()
    n = sum(len(c) for c in read.chunks(0))
    rate = n / (time.perf_counter() - t)
    read.close()
    return rate


def catch_up(url: str, count: int, rounds: int = 3) -> dict[str, float]:
    """The same events in a table of the earlier layout (schema version 1:
    msgpack payloads, the before) and of the current one (typed columns);
    each way of catching up timed ``rounds`` times, interleaved; the best."""
    tables = {1: f"bench_catchup_v1_{os.getpid()}", 2: f"bench_catchup_v2_{os.getpid()}"}
    stores = {}
    for version, table in tables.items():
        store = EventStore(url, table=table, synchronous_commit=False, create=version == 2)
        if version == 1:
            store.create_legacy()
        for start in range(0, count, 5000):
            store.append_many(_events(0, start, min(5000, count - start)))
        stores[version] = store
    ways: dict[str, Any] = {
        "v1 payloads, folded in Python (before)": lambda: _catch_up_once(
            url, tables[1], fold=True, sql=False
        ),
        "v1 payloads, one by one": lambda: _catch_up_once(url, tables[1], fold=False, sql=False),
        "v1 payloads, read only": lambda: _read_once(url, tables[1]),
        "v2 typed columns, folded in Python": lambda: _catch_up_once(
            url, tables[2], fold=True, sql=False
        ),
        "v2 typed columns, read only": lambda: _read_once(url, tables[2]),
        "v2 typed columns, folded by PostgreSQL (after)": lambda: _catch_up_once(
            url, tables[2], fold=True, sql=True
        ),
    }
    figures: dict[str, float] = {}
    for _ in range(rounds):
        for label, way in ways.items():
            figures[label] = max(figures.get(label, 0.0), way())
    for store in stores.values():
        store.drop()
        store.close()
    return figures


# -- write-to-visible delay ------------------------------------------------------------


def _paced_writer(url: str, table: str, rate: float, seconds: float, go: Any) -> None:
    """Events are made at ``rate`` a second (each stamped with the time it is
    due); the writer appends, in one transaction, every event due by the time
    the previous append returned: a game server's write queue, so a slow
    commit makes the next batch larger rather than the queue longer."""
    store = EventStore(url, table=table, create=False)
    store.head()  # connected before the start
    go.wait()
    start_at = time.time()
    total = int(rate * seconds)
    sent = 0
    while sent < total:
        now = time.time()
        due = min(total, int((now - start_at) * rate) + 1)
        if due <= sent:
            time.sleep((sent + 1) / rate - (now - start_at))
            continue
        batch = [
            NewEvent("incr", f"p{i % 1000}", 1, 0, {"sent_us": int((start_at + i / rate) * 1e6)})
            for i in range(sent, due)
        ]
        store.append_many(batch)
        sent = due
    store.close()


class _Stamped(BoardView):
    """A view that notes, for each event, the delay since its writer sent it."""

    def __init__(self) -> None:
        super().__init__("all", Leaderboard())
        self.delays: list[float] = []
        self.seen: list[float] = []

    def apply(self, events: Any) -> int:
        applied = super().apply(events)
        now_us = time.time_ns() // 1000
        if events:
            self.seen.append(now_us / 1e6)
        self.delays.extend((now_us - (e.attrs or {})["sent_us"]) / 1000 for e in events)
        return applied


def delay(url: str, rate: float, seconds: float) -> dict[str, float]:
    table = f"bench_delay_{os.getpid()}"
    store = EventStore(url, table=table)
    follower = Follower(EventStore(url, table=table, create=False))
    view = _Stamped()
    follower.add_view(view)
    follower.poll(0)  # starts listening
    ctx = mp.get_context("spawn")
    go = ctx.Event()
    proc = ctx.Process(target=_paced_writer, args=(url, table, rate, seconds, go))
    proc.start()
    time.sleep(3.0)  # the child imports and connects (spawn), then waits for go
    go.set()
    while proc.is_alive() or follower.position < store.head():
        follower.poll(0.2)
    proc.join()
    elapsed = (max(view.seen) - min(view.seen)) if view.seen else 0.0
    delays = sorted(view.delays)
    follower.store.close()
    store.drop()
    store.close()
    return {
        "events": len(delays),
        "rate": len(delays) / elapsed if elapsed else 0.0,
        "p50_ms": statistics.median(delays),
        "p99_ms": delays[int(len(delays) * 0.99) - 1],
        "max_ms": delays[-1],
    }


# -- main ------------------------------------------------------------------------------


def _server(url: str | None) -> AbstractContextManager[Any]:
    if url is not None:
        return nullcontext(None)
    from postgres_service import private_postgres

    return private_postgres(settings={"fsync": "on"})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", help="an existing server's conninfo (default: start one)")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--batch", default="100,1000", help="batch sizes (besides 1)")
    parser.add_argument("--writers", default="1,2,4")
    parser.add_argument(
        "--schema",
        default="2",
        help="table versions to write, e.g. 1,2 (1: the earlier msgpack-only layout)",
    )
    parser.add_argument("--catch-up", type=int, default=400_000)
    parser.add_argument("--rounds", type=int, default=3, help="catch-up rounds (best of)")
    parser.add_argument(
        "--only",
        choices=("throughput", "catch-up", "delay"),
        help="run one part only (the others are skipped)",
    )
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--json", help="write every figure here")
    args = parser.parse_args(argv)
    results: dict[str, Any] = {"throughput": [], "local": {}}
    with _server(args.url) as server:
        url = args.url or server.url
        parts = {args.only} if args.only else {"throughput", "catch-up", "delay"}
        schemas = [int(v) for v in args.schema.split(",")]
        if "throughput" in parts:
            print(f"throughput, events/s ({args.seconds:g} s per cell)")
            head = f"{'writers':>8} {'append':>10} {'sync commit':>12} {'schema':>7}"
            print(f"{head} {'events/s':>10}")
        for writers in [int(w) for w in args.writers.split(",")] if "throughput" in parts else []:
            for batch in (1, *[int(b) for b in args.batch.split(",")]):
                for sync in (True, False):
                    for schema in schemas:  # interleaved: the versions side by side
                        rate = throughput(url, writers, batch, sync, args.seconds, schema=schema)
                        kind = "single" if batch == 1 else f"batch {batch}"
                        on = "on" if sync else "off"
                        print(f"{writers:>8} {kind:>10} {on:>12} {schema:>7} {rate:>10,.0f}")
                        results["throughput"].append(
                            {
                                "writers": writers,
                                "batch": batch,
                                "sync": sync,
                                "schema": schema,
                                "events_s": rate,
                            }
                        )
        for fsync in ("everysec", "always") if "throughput" in parts else ():
            rate = local_log(fsync, args.seconds)
            results["local"][fsync] = rate
            print(f"one process, its own log (fsync={fsync}): {rate:,.0f} events/s")
        if "catch-up" in parts:
            figures = catch_up(url, args.catch_up, args.rounds)
            results["catch_up"] = figures
            for label, rate in figures.items():
                print(f"catch-up of {args.catch_up:,} events, {label}: {rate:,.0f} events/s")
        if "delay" in parts:
            lag = delay(url, args.rate, args.seconds)
            results["delay"] = lag
            print(
                f"write-to-visible at {args.rate:g} events/s ({lag['events']} events, "
                f"{lag['rate']:,.0f}/s achieved): p50 {lag['p50_ms']:.1f} ms, "
                f"p99 {lag['p99_ms']:.1f} ms, max {lag['max_ms']:.1f} ms"
            )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
