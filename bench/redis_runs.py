"""Server time per increment of a pipeline's runs of increments, by the
length of the run: what ``RUN_MIN`` in ``rankengine/redis/pipeline.py`` is
chosen from.

Usage (from the repository root; a running Redis, nothing else on its keys)::

    python bench/redis_runs.py --url redis://127.0.0.1:6379/0

A board of ``--size`` members (``Leaderboard.connect``, the defaults) takes
pipelines of ``PIPELINE`` increments of random members, sent by the board's
own script runner on a redis-py pipeline: as ``PIPELINE`` ``INCR`` calls,
then as ``INCR_MANY`` calls in run mode of k increments each (``PIPELINE //
k`` calls a pipeline), for each k of ``--lengths``, taking turns each
round.  Around each chunk, ``CONFIG RESETSTAT`` and ``INFO commandstats``:
the ``FCALL`` microseconds per increment.  Prints, per shape, the smallest
chunk's figure over ``--rounds`` rounds (a shared machine deschedules the
server now and then, which INFO counts as command time) and the median.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
from typing import Any

#: Increments per pipeline round trip (as in compare.py's pipelined systems).
PIPELINE = 100
#: Members per set_many when filling.
FILL_CHUNK = 5000
#: Pipelines per chunk timed.
CHUNK = 20


def main() -> None:
    import redis

    from rankengine import Leaderboard
    from rankengine.redis.codec import encode_member

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--lengths", default="1,2,3,4,5,10,20,100")
    parser.add_argument("--seed", type=int, default=5)
    opts = parser.parse_args()
    r = redis.Redis.from_url(opts.url)
    board = Leaderboard.connect(r, "runs-bench")
    rng = random.Random(opts.seed)
    members = [f"player:{i}" for i in range(opts.size)]
    board.clear()
    for i in range(0, opts.size, FILL_CHUNK):
        board.set_many({m: rng.randrange(10 * opts.size) for m in members[i : i + FILL_CHUNK]})
    runner = board._scripts
    mode = board._mode + (f"@{board._stored_sha}" if board._stored_sha else "")
    keys = board._keys

    def pick() -> bytes:
        return encode_member(members[rng.randrange(opts.size)])

    def pipeline(k: int) -> None:
        pipe = r.pipeline(transaction=False)
        if k == 0:  # INCR calls
            for _ in range(PIPELINE):
                args = [mode, pick(), "1.0", "i", "", 0]
                pipe.execute_command(*runner.call_args("INCR", keys, args))
        else:
            for _ in range(PIPELINE // k):
                many: list[Any] = [mode, 0, b"", "n"]
                for _ in range(k):
                    many += [pick(), "1.0", "i"]
                pipe.execute_command(*runner.call_args("INCR_MANY", keys, many))
        pipe.execute()

    def usec() -> int:
        stats = r.info("commandstats")
        return sum(int(v["usec"]) for name, v in stats.items() if name == "cmdstat_fcall")

    shapes = [0, *(int(k) for k in opts.lengths.split(","))]
    seen: dict[int, list[float]] = {k: [] for k in shapes}
    for round_number in range(opts.rounds):
        for k in shapes if round_number % 2 == 0 else shapes[::-1]:
            r.config_resetstat()
            for _ in range(CHUNK):
                pipeline(k)
            increments = CHUNK * (PIPELINE // k * k if k else PIPELINE)
            seen[k].append(usec() / increments)
    out = {
        ("INCR" if k == 0 else f"INCR_MANY of {k}"): {
            "min_us": round(min(v), 2),
            "median_us": round(statistics.median(v), 2),
        }
        for k, v in seen.items()
    }
    print(json.dumps(out, indent=1))
    board.clear()


if __name__ == "__main__":
    main()
