"""Recovery and append speed of durable boards, side by side with Redis.

Usage (from the repository root)::

    python bench/recovery.py                  # N = 1,000,000, 3 repeats
    python bench/recovery.py -n 100000 --repeats 5 --appends 20000

Measures, for one seeded board of N members (``player:i``, integer scores
uniform in [0, 10**7), as Redis's own benchmarks use):

* ``snapshot save``: what a compaction does -- export the board and write
  the snapshot (temp file, fsync, rename, directory fsync);
* ``recovery``: ``Leaderboard.open`` of the directory (read and check the
  snapshot, bulk-build the index, replay the empty tail);
* with ``redis-server`` on PATH, the same N members in one sorted set:
  ``SAVE`` (RDB write), ``DEBUG RELOAD NOSAVE`` (RDB load, the recovery
  equivalent) and ``DEBUG RELOAD`` (save then load);
* recovery with a log tail: ``Leaderboard.open`` of a snapshot followed
  by ``--tail`` logged increments (default N / 2, members drawn uniformly),
  beside Redis loading an append-only file that holds an RDB image of the
  same members followed by the same increments as ``ZINCRBY`` commands
  (``DEBUG LOADAOF``; Redis's own restart with ``aof-use-rdb-preamble``);
* append throughput of single ``incr`` calls for each fsync policy.

After one warm-up of every step, ``--repeats`` rounds run every step once,
interleaved (rankengine and Redis take turns, so load on a shared machine
hits both alike); each figure is min / median / max seconds over the
rounds, and ratios use the medians.  The board is put in place by a bulk
load and one compaction (setup, not timed).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import os
import platform
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rankengine import Leaderboard
from rankengine.durable.board import DurableLeaderboard
from rankengine.durable.snapshot import write_snapshot_columns

#: Integer scores in [0, SCORE_RANGE): mostly distinct at N = 10**6.
SCORE_RANGE = 10_000_000
#: ZADD batch size for loading Redis through one pipeline.
REDIS_BATCH = 10_000


def timed(fn: Callable[[], object], repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def interleaved(
    steps: list[tuple[str, Callable[[], object]]], repeats: int
) -> dict[str, list[float]]:
    """Seconds of each step, label -> one time per round: one warm-up of
    every step (page cache, allocator), then ``repeats`` rounds running
    every step once, in turn, so that load on a shared machine hits every
    system alike."""
    for _, step in steps:
        step()
    times: dict[str, list[float]] = {}
    for _ in range(repeats):
        for label, step in steps:
            times.setdefault(label, []).extend(timed(step, 1))
    return times


def show(label: str, times: list[float], n: int) -> float:
    med = statistics.median(times)
    print(
        f"  {label:<34} min {min(times):7.3f} s  median {med:7.3f} s  max {max(times):7.3f} s"
        f"  ({n / med / 1e6:5.2f} M members/s)"
    )
    return med


def make_pairs(n: int, seed: int) -> dict[str, int]:
    rng = random.Random(seed)
    return {f"player:{i}": rng.randrange(SCORE_RANGE) for i in range(n)}


def save_snapshot(board: DurableLeaderboard, path: str, header: dict[str, object]) -> None:
    """What a compaction does: export the board, write the snapshot file."""
    with board._lock:
        columns = board._export_columns()
    write_snapshot_columns(path, header, columns)


def prepare_board(pairs: dict[str, int], backend: str) -> tuple[str, DurableLeaderboard]:
    """A board directory holding ``pairs`` in one snapshot (setup, not timed).

    The state is bulk-loaded and compacted instead of logged through one huge
    ``set_many``: only the snapshot matters to recovery, and the setup stays short.
    """
    directory = tempfile.mkdtemp(prefix="rankengine-bench-recovery-")
    board = Leaderboard.open(directory, fsync="never", backend=backend, compact_min_bytes=None)
    assert isinstance(board, DurableLeaderboard)
    board._restore(((m, s, i + 1, None) for i, (m, s) in enumerate(pairs.items())), len(pairs))
    board.set("bench:marker", 0)  # one logged write, so the compaction has a new seq
    board.compact()
    board.close()
    return directory, board


def bench_recovery(pairs: dict[str, int], repeats: int, backend: str) -> dict[str, float]:
    """Interleaved rounds (rankengine save/load, Redis save/load/reload) so
    that load on a shared machine hits both systems alike."""
    n = len(pairs) + 1
    directory, board = prepare_board(pairs, backend)
    scratch = os.path.join(directory, "bench.snap")
    header = {"seq": board.last_seq, "clock": board.clock, "time_ms": 0, "config": {}}
    expected = board.top(10)
    size = os.path.getsize(next(str(p) for p in Path(directory).glob("snap-*.snap")))

    def load() -> None:
        again = Leaderboard.open(directory, fsync="never", backend=backend, compact_min_bytes=None)
        assert len(again) == n and again.top(10) == expected
        again.close()  # type: ignore[attr-defined]

    save = functools.partial(save_snapshot, board, scratch, header)
    try:
        with redis_server() as client:
            steps: list[tuple[str, Callable[[], object]]] = [
                ("rankengine snapshot save", save),
                ("rankengine recovery (open)", load),
            ]
            if client is not None:
                load_redis(client, pairs)
                r: Any = client
                steps += [
                    ("redis SAVE (RDB write)", r.save),
                    (
                        "redis DEBUG RELOAD NOSAVE (load)",
                        lambda: r.execute_command("DEBUG", "RELOAD", "NOSAVE"),
                    ),
                    (
                        "redis DEBUG RELOAD (save + load)",
                        lambda: r.execute_command("DEBUG", "RELOAD"),
                    ),
                ]
            times = interleaved(steps, repeats)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    print(f"  snapshot file: {size / 1e6:.1f} MB for {n} members, backend {backend}")
    return {label: show(label, values, n) for label, values in times.items()}


def load_redis(client: Any, pairs: dict[str, int]) -> None:
    """One sorted set with the same members and scores (plus the marker)."""
    pipe = client.pipeline(transaction=False)
    items = [*pairs.items(), ("bench:marker", 0)]
    for lo in range(0, len(items), REDIS_BATCH):
        pipe.zadd("board", dict(items[lo : lo + REDIS_BATCH]))
    pipe.execute()
    assert client.zcard("board") == len(items)
    version = client.info("server")["redis_version"]
    print(f"  Redis {version}, zset encoding {client.object('encoding', 'board')!r}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def redis_server(*, aof: bool = False) -> Iterator[object | None]:
    exe = shutil.which("redis-server")
    try:
        import redis
    except ImportError:
        redis = None  # type: ignore[assignment]
    if exe is None or redis is None:
        print("  redis-server or redis-py not found: Redis figures skipped")
        yield None
        return
    directory = tempfile.mkdtemp(prefix="rankengine-bench-redis-")
    port = free_port()
    # with ``aof``: an append-only file that starts with an RDB image of
    # the data set (written by BGREWRITEAOF) and continues with commands
    persistence = ["--appendonly", "yes", "--aof-use-rdb-preamble", "yes"] if aof else []
    proc = subprocess.Popen(
        [
            exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
            "--enable-debug-command", "yes", "--dir", directory, "--protected-mode", "no",
            *persistence,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    client = redis.Redis(port=port, socket_timeout=600)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        yield client
    finally:
        client.close()
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(directory, ignore_errors=True)


def make_tail(pairs: dict[str, int], count: int, seed: int) -> list[tuple[str, int]]:
    """``count`` increments (member, 1..100) of members drawn uniformly from
    ``pairs``: each touches a player once or a few times, the hardest tail
    to shorten."""
    rng = random.Random(seed)
    members = list(pairs)
    return [(members[rng.randrange(len(members))], rng.randrange(1, 101)) for _ in range(count)]


def bench_tail_recovery(
    pairs: dict[str, int], tail: list[tuple[str, int]], repeats: int, backend: str
) -> dict[str, float]:
    """Recovery from a snapshot followed by ``tail`` logged increments, beside
    Redis loading an append-only file of an RDB preamble (the same members)
    followed by the same increments as ``ZINCRBY`` commands (``DEBUG
    LOADAOF``).  Interleaved rounds, as :func:`bench_recovery`."""
    n = len(pairs) + 1
    directory, _ = prepare_board(pairs, backend)
    with Leaderboard.open(directory, fsync="never", backend=backend, compact_min_bytes=None) as b:
        for member, delta in tail:
            b.incr(member, delta)
        expected = b.top(10)

    def load() -> None:
        again = Leaderboard.open(directory, fsync="never", backend=backend, compact_min_bytes=None)
        assert len(again) == n and again.top(10) == expected
        again.close()  # type: ignore[attr-defined]

    try:
        with redis_server(aof=True) as client:
            steps: list[tuple[str, Callable[[], object]]] = [
                ("rankengine recovery (snapshot + tail)", load)
            ]
            if client is not None:
                r: Any = client
                load_redis(r, pairs)
                r.bgrewriteaof()  # the AOF now starts with an RDB image of the board
                while r.info("persistence")["aof_rewrite_in_progress"]:
                    time.sleep(0.05)
                pipe = r.pipeline(transaction=False)
                for lo in range(0, len(tail), REDIS_BATCH):
                    for member, delta in tail[lo : lo + REDIS_BATCH]:
                        pipe.zincrby("board", delta, member)
                    pipe.execute()
                steps.append(
                    (
                        "redis DEBUG LOADAOF (RDB preamble + tail)",
                        lambda: r.execute_command("DEBUG", "LOADAOF"),
                    )
                )
            times = interleaved(steps, repeats)
            if client is not None:  # Redis loaded what rankengine recovered
                top = client.zrevrange("board", 0, 0, withscores=True)  # type: ignore[attr-defined]
                assert top[0][1] == expected[0].score, (top, expected[0])
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    print(f"  {len(tail)} increments after the snapshot, backend {backend}")
    return {label: show(label, values, n) for label, values in times.items()}


def bench_appends(count: int, backend: str) -> None:
    for policy in ("never", "everysec", "always"):
        directory = tempfile.mkdtemp(prefix="rankengine-bench-append-")
        try:
            board = Leaderboard.open(
                directory, fsync=policy, backend=backend, compact_min_bytes=None
            )
            members = [f"player:{i % 10_000}" for i in range(count)]
            start = time.perf_counter()
            for member in members:
                board.incr(member, 1)
            elapsed = time.perf_counter() - start
            board.close()  # type: ignore[attr-defined]
            rate = f"{count / elapsed:10.0f} writes/s  ({elapsed * 1e6 / count:7.1f} us/write)"
            print(f"  fsync={policy:<9} {rate}")
        finally:
            shutil.rmtree(directory, ignore_errors=True)
    memory = Leaderboard(backend=backend)  # type: ignore[arg-type]
    start = time.perf_counter()
    for i in range(count):
        memory.incr(f"player:{i % 10_000}", 1)
    elapsed = time.perf_counter() - start
    rate = f"{count / elapsed:10.0f} writes/s  ({elapsed * 1e6 / count:7.1f} us/write)"
    print(f"  in-memory        {rate}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("-n", type=int, default=1_000_000, help="members (default 1,000,000)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per figure")
    parser.add_argument(
        "--appends", type=int, default=5_000, help="writes per fsync policy (0: skip)"
    )
    parser.add_argument(
        "--tail",
        type=int,
        default=None,
        help="increments logged after the snapshot for the snapshot + tail figure "
        "(default N / 2; 0: skip)",
    )
    parser.add_argument("--backend", default="sortedlist", choices=("sortedlist", "skiplist"))
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    machine = f"{platform.machine()}, {os.cpu_count()} CPUs"
    print(f"python {platform.python_version()} on {machine}, N = {args.n}")
    pairs = make_pairs(args.n, args.seed)
    print("recovery (interleaved rounds):")
    t = bench_recovery(pairs, args.repeats, args.backend)
    redis_load = t.get("redis DEBUG RELOAD NOSAVE (load)")
    if redis_load is not None:
        save, load = t["rankengine snapshot save"], t["rankengine recovery (open)"]
        reload = t["redis DEBUG RELOAD (save + load)"]
        print("ratios (rankengine / redis, medians; below 1 means rankengine is faster):")
        print(f"  recovery vs DEBUG RELOAD NOSAVE   {load / redis_load:5.2f}")
        print(f"  recovery vs DEBUG RELOAD          {load / reload:5.2f}")
        print(f"  snapshot save vs SAVE             {save / t['redis SAVE (RDB write)']:5.2f}")
        print(f"  save + recovery vs DEBUG RELOAD   {(save + load) / reload:5.2f}")
    tail = args.n // 2 if args.tail is None else args.tail
    if tail:
        print("recovery with a log tail (interleaved rounds):")
        t = bench_tail_recovery(
            pairs, make_tail(pairs, tail, args.seed + 1), args.repeats, args.backend
        )
        ours = t["rankengine recovery (snapshot + tail)"]
        theirs = t.get("redis DEBUG LOADAOF (RDB preamble + tail)")
        if theirs is not None:
            print(f"  ratio (rankengine / redis, medians): {ours / theirs:5.2f}")
    if args.appends:
        print(f"append throughput ({args.appends} single incr calls, backend {args.backend}):")
        bench_appends(args.appends, args.backend)
    return 0


if __name__ == "__main__":
    sys.exit(main())
