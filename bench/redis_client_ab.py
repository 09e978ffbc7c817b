"""Client calls per second of a Redis board against raw redis-py, as a ratio
measured in one process with the two interleaved (a shared machine's load
drifts between runs; within a process, between chunks of 100-200 calls,
much less).

Usage (from the repository root; a running Redis, nothing else on its keys)::

    python bench/redis_client_ab.py --url redis://127.0.0.1:6379/0
    PYTHONPATH=<checkout> python bench/redis_client_ab.py --url ...   # another version

For each operation (``rank`` and ``incr``, unpipelined and pipelined 100
calls per round trip), it times a chunk of raw redis-py calls
(``ZREVRANK``, ``ZINCRBY`` on a plain sorted set of the same members and
scores) and then the same number of board calls (``Leaderboard.connect``,
the defaults), ``--rounds`` times, and prints the median ratio
raw time / board time: the board's calls per second as a fraction of raw
redis-py's.  The members are random, so most ranks are of members the
handle has not seen.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

#: Calls per pipeline round trip (as in compare.py's pipelined systems).
PIPELINE = 100
#: Members per ZADD / set_many when filling.
FILL_CHUNK = 5000


def main() -> None:
    import redis

    from rankengine import Leaderboard

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=3)
    opts = parser.parse_args()
    r = redis.Redis.from_url(opts.url)
    board = Leaderboard.connect(r, "client-ab")
    plain = "client-ab:plain"
    rng = random.Random(opts.seed)
    members = [f"player:{i}" for i in range(opts.size)]
    scores = {m: rng.randrange(10 * opts.size) for m in members}
    board.clear()
    r.delete(plain)
    for i in range(0, opts.size, FILL_CHUNK):
        chunk = {m: scores[m] for m in members[i : i + FILL_CHUNK]}
        board.set_many(chunk)
        r.zadd(plain, chunk)
    picks = iter([members[rng.randrange(opts.size)] for _ in range(10**6)])

    def take(n: int) -> list[str]:
        return [next(picks) for _ in range(n)]

    def piped(queue: Callable[[Any, str], None]) -> Callable[[list[str]], None]:
        def run(chunk: list[str]) -> None:
            pipe = r.pipeline(transaction=False)
            for m in chunk:
                queue(pipe, m)
            pipe.execute()

        return run

    def board_piped(queue: Callable[[Any, str], None]) -> Callable[[list[str]], None]:
        def run(chunk: list[str]) -> None:
            with board.pipeline() as p:
                for m in chunk:
                    queue(p, m)

        return run

    ops: dict[str, tuple[Callable[[list[str]], None], Callable[[list[str]], None], int]] = {
        "rank": (
            lambda ms: [r.zrevrank(plain, m) for m in ms] and None,
            lambda ms: [board.rank(m) for m in ms] and None,
            200,
        ),
        "incr": (
            lambda ms: [r.zincrby(plain, 1, m) for m in ms] and None,
            lambda ms: [board.incr(m, 1) for m in ms] and None,
            200,
        ),
        "rank pipelined": (
            piped(lambda p, m: p.zrevrank(plain, m)),
            board_piped(lambda p, m: p.rank(m)),
            10 * PIPELINE,
        ),
        "incr pipelined": (
            piped(lambda p, m: p.zincrby(plain, 1, m)),
            board_piped(lambda p, m: p.incr(m, 1)),
            10 * PIPELINE,
        ),
    }
    out: dict[str, float] = {}
    for name, (raw, mine, calls) in ops.items():
        step = PIPELINE if "pipelined" in name else calls
        ratios = []
        for _ in range(opts.rounds):
            took = []
            for run in (raw, mine):
                t0 = time.perf_counter()
                for _ in range(calls // step):
                    run(take(step))
                took.append(time.perf_counter() - t0)
            ratios.append(took[0] / took[1])
        out[name] = round(statistics.median(ratios), 3)
    print(json.dumps(out))
    board.clear()
    r.delete(plain)


if __name__ == "__main__":
    main()
