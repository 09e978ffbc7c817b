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
* append throughput of single ``incr`` calls for each fsync policy.

Each timing is run ``--repeats`` times (after one warm-up for the loads)
and reported as min / median / max seconds; ratios use the medians.
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rankengine import Leaderboard
from rankengine.durable import DurableLeaderboard
from rankengine.snapshot import write_snapshot

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
    write_snapshot(path, header, list(board._export()))


def bench_rankengine(pairs: dict[str, int], repeats: int, backend: str) -> tuple[float, float, int]:
    n = len(pairs)
    directory = tempfile.mkdtemp(prefix="rankengine-bench-recovery-")
    try:
        board = Leaderboard.open(directory, fsync="never", backend=backend, compact_min_bytes=None)
        assert isinstance(board, DurableLeaderboard)
        started = time.perf_counter()
        board.set_many(pairs)
        print(
            f"  (setup: one set_many of {n} members, logged: {time.perf_counter() - started:.1f} s)"
        )
        board.compact()
        header = {"seq": board.last_seq, "clock": board.clock, "time_ms": 0, "config": {}}
        scratch = os.path.join(directory, "bench.snap")
        save_times = timed(functools.partial(save_snapshot, board, scratch, header), repeats)
        size = os.path.getsize(scratch)
        os.remove(scratch)
        expected = board.top(10)
        board.close()
        del board

        def load() -> None:
            again = Leaderboard.open(
                directory, fsync="never", backend=backend, compact_min_bytes=None
            )
            assert len(again) == n and again.top(10) == expected
            again.close()  # type: ignore[attr-defined]

        load()  # warm-up (page cache)
        load_times = timed(load, repeats)
        print(f"  snapshot file: {size / 1e6:.1f} MB")
        return (
            show(f"rankengine[{backend}] snapshot save", save_times, n),
            show(f"rankengine[{backend}] recovery (open)", load_times, n),
            size,
        )
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def redis_server() -> Iterator[object | None]:
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
    proc = subprocess.Popen(
        [
            exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
            "--enable-debug-command", "yes", "--dir", directory, "--protected-mode", "no",
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


def bench_redis(pairs: dict[str, int], repeats: int) -> dict[str, float] | None:
    with redis_server() as client:
        if client is None:
            return None
        r: object = client
        version = r.info("server")["redis_version"]  # type: ignore[attr-defined]
        pipe = r.pipeline(transaction=False)  # type: ignore[attr-defined]
        items = list(pairs.items())
        for lo in range(0, len(items), REDIS_BATCH):
            pipe.zadd("board", dict(items[lo : lo + REDIS_BATCH]))
        pipe.execute()
        n = r.zcard("board")  # type: ignore[attr-defined]
        assert n == len(pairs), n
        print(f"  Redis {version}, zset encoding {r.object('encoding', 'board')!r}")  # type: ignore[attr-defined]
        out = {
            "save": show("redis SAVE (RDB write)", timed(r.save, repeats), n),  # type: ignore[attr-defined]
            "load": show(
                "redis DEBUG RELOAD NOSAVE (RDB load)",
                timed(lambda: r.execute_command("DEBUG", "RELOAD", "NOSAVE"), repeats),  # type: ignore[attr-defined]
                n,
            ),
            "reload": show(
                "redis DEBUG RELOAD (save + load)",
                timed(lambda: r.execute_command("DEBUG", "RELOAD"), repeats),  # type: ignore[attr-defined]
                n,
            ),
        }
        assert r.zcard("board") == n  # type: ignore[attr-defined]
        return out


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
    parser.add_argument("--backend", default="sortedlist", choices=("sortedlist", "skiplist"))
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    machine = f"{platform.machine()}, {os.cpu_count()} CPUs"
    print(f"python {platform.python_version()} on {machine}, N = {args.n}")
    pairs = make_pairs(args.n, args.seed)
    print("rankengine:")
    save, load, _ = bench_rankengine(pairs, args.repeats, args.backend)
    print("redis:")
    redis = bench_redis(pairs, args.repeats)
    if redis is not None:
        print("ratios (rankengine / redis, medians; below 1 means rankengine is faster):")
        print(f"  recovery vs DEBUG RELOAD NOSAVE   {load / redis['load']:5.2f}")
        print(f"  recovery vs DEBUG RELOAD          {load / redis['reload']:5.2f}")
        print(f"  snapshot save vs SAVE             {save / redis['save']:5.2f}")
        print(f"  save + recovery vs DEBUG RELOAD   {(save + load) / redis['reload']:5.2f}")
    if args.appends:
        print(f"append throughput ({args.appends} single incr calls, backend {args.backend}):")
        bench_appends(args.appends, args.backend)
    return 0


if __name__ == "__main__":
    sys.exit(main())
