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

``--against FILE`` times two bodies of ``incr_many.lua`` instead: FILE (an
earlier version's, e.g. ``git show <rev>:rankengine/redis/lua/incr_many.lua
> FILE``) and this checkout's, each loaded as a probe function beside
this checkout's shared Lua sections, runs of ``PIPELINE`` distinct members
(run mode), taking turns, on a first-to-reach board and on a
``tie_break="member"`` board (the probe functions are deleted after).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
from importlib.resources import files
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
    parser.add_argument("--against", help="an earlier incr_many.lua to time beside this one")
    opts = parser.parse_args()
    if opts.against:
        with open(opts.against, encoding="utf-8") as earlier:
            print(json.dumps(against(opts, earlier.read()), indent=1))
        return
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


def against(opts: Any, earlier: str) -> dict[str, Any]:
    """Server us per increment of runs through two bodies of incr_many.lua
    (see the module docstring)."""
    import redis

    from rankengine import Leaderboard
    from rankengine.redis import scripts
    from rankengine.redis.codec import encode_member

    r = redis.Redis.from_url(opts.url)
    rng = random.Random(opts.seed)
    members = [f"player:{i}" for i in range(opts.size)]
    code = "".join(scripts.library_sections())
    this = (files("rankengine.redis") / "lua" / "incr_many.lua").read_text(encoding="utf-8")
    bodies = {"earlier": earlier, "this": this}
    for name, body in bodies.items():
        code += (
            f"redis.register_function('runs_probe_{name}', function(keys, argv)\n"
            f"begin(keys, argv)\n{body}\nend)\n"
        )
    r.function_load("#!lua name=runs_probe\n" + code, replace=True)
    out: dict[str, Any] = {}
    for tie_break in ("first", "member"):
        board = Leaderboard.connect(r, f"runs-bench-{tie_break}", tie_break=tie_break)
        board.clear()
        for i in range(0, opts.size, FILL_CHUNK):
            chunk = members[i : i + FILL_CHUNK]
            board.set_many({m: rng.randrange(10 * opts.size) for m in chunk})
        mode = board._mode + (f"@{board._stored_sha}" if board._stored_sha else "")
        tag = b"" if tie_break == "first" else b"s"

        def pipeline(name: str, board: Any = board, mode: str = mode, tag: bytes = tag) -> None:
            picked = {encode_member(m) for m in rng.sample(members, PIPELINE)}
            args: list[Any] = [mode, 0, tag, "n"]
            for key in picked:
                args += [key, "1.0", "i"]
            pipe = r.pipeline(transaction=False)
            pipe.fcall(f"runs_probe_{name}", 1, board._keys[0], *args)
            pipe.execute()

        seen: dict[str, list[float]] = {name: [] for name in bodies}
        for round_number in range(opts.rounds):
            for name in bodies if round_number % 2 == 0 else list(bodies)[::-1]:
                r.config_resetstat()
                for _ in range(CHUNK):
                    pipeline(name)
                stats = r.info("commandstats")
                seen[name].append(int(stats["cmdstat_fcall"]["usec"]) / (CHUNK * PIPELINE))
        board._check()
        board.clear()
        out[tie_break] = {
            name: {"min_us": round(min(v), 2), "median_us": round(statistics.median(v), 2)}
            for name, v in seen.items()
        }
    r.function_delete("runs_probe")
    return out


if __name__ == "__main__":
    main()
