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
handle has not seen (two round trips each: see docs/redis.md); ``rank
seen`` ranks members of a set of ``SEEN`` that each handle has read once
before the rounds, as an app server ranks the players it serves (one
``ZREVRANK`` each), alone and 100 per pipeline.  ``rank 1 trip`` ranks
random members as ``rank`` does, through a second handle on each board
opened with ``rank_trips=1`` (one round trip, the board's ``RANK``
function: a version without that option times its default handle there).

``--other PACKAGE`` times a second version in the same process, its chunks
interleaved with the others' (raw, other, this, raw again, the two
versions swapping places every round: the raw time is the mean of its two
chunks), and prints both ratios: the load of a shared
machine drifts between processes far more than between chunks.  The other
version is a copy of its ``rankengine`` package under another name, e.g.::

    git archive <rev> rankengine | tar -x -C /some/dir
    mv /some/dir/rankengine /some/dir/rankengine_before
    sed -i 's/\brankengine\b/rankengine_before/g' $(find /some/dir -name '*.py')
    PYTHONPATH=/some/dir python bench/redis_client_ab.py --url ... --other rankengine_before

(its boards' keys then start ``rankengine_before:``).  ``--only 'incr
pipelined,incr'`` times only the operations named.  ``--resending``
uses ``redis.Redis(host, port)``, whose connections send a call again
after a dropped connection (10 retries), instead of
``redis.Redis.from_url``, whose connections never do (redis-py 8): a
board keeps a reply for a resend only on the first.
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
#: Members the ``rank seen`` operation ranks (below the handle's table of
#: elements seen, 10,000).
SEEN = 2000


def main() -> None:
    import importlib

    import redis
    from redis.connection import parse_url

    from rankengine import Leaderboard

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--other", help="a second version's package name (see above)")
    parser.add_argument("--resending", action="store_true")
    parser.add_argument("--only", help="comma-separated operations, e.g. 'incr pipelined'")
    opts = parser.parse_args()
    r = redis.Redis(**parse_url(opts.url)) if opts.resending else redis.Redis.from_url(opts.url)
    boards = {"this": Leaderboard.connect(r, "client-ab")}
    if opts.other:
        other = importlib.import_module(opts.other)
        boards["other"] = other.Leaderboard.connect(r, "client-ab-other")
    plain = "client-ab:plain"
    rng = random.Random(opts.seed)
    members = [f"player:{i}" for i in range(opts.size)]
    scores = {m: rng.randrange(10 * opts.size) for m in members}
    for b in boards.values():
        b.clear()
    r.delete(plain)
    for i in range(0, opts.size, FILL_CHUNK):
        chunk = {m: scores[m] for m in members[i : i + FILL_CHUNK]}
        for b in boards.values():
            b.set_many(chunk)
        r.zadd(plain, chunk)
    one_trip: dict[str, Any] = {}
    for label, b in boards.items():
        try:
            one_trip[label] = type(b)(r, b.name, rank_trips=1)
        except TypeError:  # (a version without the option)
            one_trip[label] = b
    picks = iter([members[rng.randrange(opts.size)] for _ in range(10**6)])

    seen = [members[rng.randrange(opts.size)] for _ in range(SEEN)]

    def take(n: int) -> list[str]:
        return [next(picks) for _ in range(n)]

    def take_seen(n: int) -> list[str]:
        return [seen[rng.randrange(SEEN)] for _ in range(n)]

    def piped(queue: Callable[[Any, str], None]) -> Callable[[list[str]], None]:
        def run(chunk: list[str]) -> None:
            pipe = r.pipeline(transaction=False)
            for m in chunk:
                queue(pipe, m)
            pipe.execute()

        return run

    def board_piped(board: Any, queue: Callable[[Any, str], None]) -> Callable[[list[str]], None]:
        def run(chunk: list[str]) -> None:
            with board.pipeline() as p:
                for m in chunk:
                    queue(p, m)

        return run

    Run = Callable[[list[str]], None]
    ops: dict[str, tuple[Run, Callable[[Any], Run], int]] = {
        "rank": (
            lambda ms: [r.zrevrank(plain, m) for m in ms] and None,
            lambda b: lambda ms: [b.rank(m) for m in ms] and None,
            200,
        ),
        "rank 1 trip": (
            lambda ms: [r.zrevrank(plain, m) for m in ms] and None,
            lambda b: lambda ms: [b.rank(m) for m in ms] and None,
            200,
        ),
        "rank seen": (
            lambda ms: [r.zrevrank(plain, m) for m in ms] and None,
            lambda b: lambda ms: [b.rank(m) for m in ms] and None,
            200,
        ),
        "incr": (
            lambda ms: [r.zincrby(plain, 1, m) for m in ms] and None,
            lambda b: lambda ms: [b.incr(m, 1) for m in ms] and None,
            200,
        ),
        "rank pipelined": (
            piped(lambda p, m: p.zrevrank(plain, m)),
            lambda b: board_piped(b, lambda p, m: p.rank(m)),
            10 * PIPELINE,
        ),
        "rank seen pipelined": (
            piped(lambda p, m: p.zrevrank(plain, m)),
            lambda b: board_piped(b, lambda p, m: p.rank(m)),
            10 * PIPELINE,
        ),
        "incr pipelined": (
            piped(lambda p, m: p.zincrby(plain, 1, m)),
            lambda b: board_piped(b, lambda p, m: p.incr(m, 1)),
            10 * PIPELINE,
        ),
    }
    if opts.only:
        ops = {name: op for name, op in ops.items() if name in opts.only.split(",")}
    out: dict[str, Any] = {}
    for name, (raw, make, calls) in ops.items():
        step = PIPELINE if "pipelined" in name else calls
        handles = one_trip if name == "rank 1 trip" else boards
        runs = {label: make(b) for label, b in handles.items()}
        # raw, (other,) this, raw again: the raw time is the mean of its two;
        # the two versions swap places every round (the one timed next to
        # the second raw chunk read up to 0.15 higher with the same code)
        versions = ["other", "this"] if "other" in runs else ["this"]
        runs["raw"] = raw
        ratios: dict[str, list[float]] = {label: [] for label in boards}
        draw = take
        if name.startswith("rank seen"):  # each handle reads them once first
            for b in boards.values():
                for m in seen:
                    b.rank(m)
            draw = take_seen
        for round_number in range(opts.rounds):
            took: dict[str, float] = {}
            placed = versions if round_number % 2 == 0 else versions[::-1]
            for label in ["raw", *placed, "raw"]:
                t0 = time.perf_counter()
                for _ in range(calls // step):
                    runs[label](draw(step))
                took[label] = took.get(label, 0.0) + time.perf_counter() - t0
            raw_time = took["raw"] / 2
            for label in boards:
                ratios[label].append(raw_time / took[label])
        medians = {label: round(statistics.median(v), 3) for label, v in ratios.items()}
        out[name] = medians if opts.other else medians["this"]
    print(json.dumps(out))
    for b in boards.values():
        b.clear()
    r.delete(plain)


if __name__ == "__main__":
    main()
