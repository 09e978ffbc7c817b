"""Server time of a board's increment, guarantee by guarantee, interleaved
in one process: what each way of sending a write costs Redis.

Usage (from the repository root; a running Redis, nothing else on its keys)::

    python bench/redis_write_ab.py --url redis://127.0.0.1:6379/0

It fills a board (``Leaderboard.connect``, the defaults) and a plain sorted
set with the same ``--size`` members and scores, then takes turns, for
``--rounds`` rounds, timing chunks of ``--chunk`` calls of each variant with
``CONFIG RESETSTAT`` / ``INFO commandstats`` around them (the top-level
``FCALL``'s microseconds, which include the commands its Lua runs):

* ``ZINCRBY``: the native command on the plain sorted set;
* ``empty function``, ``function: one ZINCRBY``, ``function: eight
  ZSCOREs``: the floor of any function call, a function whose only work
  is the native command, and what a Redis call made from Lua costs (the
  increment makes six to eight);
* ``incr, resent ('#')``: the function as every write ran it before this
  harness's version, and as a resend still runs it: it looks for an
  earlier run (``GET`` of the reply key) and keeps its reply (``SET``);
* ``incr, first sending ('!')``: keeps its reply, looks for nothing (what a
  board on a plain ``redis.Redis`` that may resend sends first);
* ``incr, no reply key``: a client that never sends a call again
  (``Retry`` of 0 retries, as ``redis.Redis.from_url`` makes by default);
* ``incr, tie_break="member"``, first sending: the same on a board whose
  element does not change with the score;
* ``incr, dense counts kept``, first sending: a board a dense read built
  its distinct-score counts for.

Prints, per variant, the smallest and the median chunk's microseconds per
call and the ratio of the smallest to ``ZINCRBY``'s (JSON with ``--json``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import statistics
from collections.abc import Callable
from typing import Any

#: Members per ZADD / set_many when filling.
FILL_CHUNK = 5000
#: Two functions that measure what any function costs: nothing, and one
#: ZINCRBY (the board's increment can cost no less than the second).
FLOOR_LIBRARY = """#!lua name=write_ab_floor
redis.register_function('write_ab_empty', function(keys, argv) return 0 end)
redis.register_function('write_ab_zincrby', function(keys, argv)
  return redis.call('ZINCRBY', keys[1], 1, argv[1])
end)
redis.register_function('write_ab_zscore8', function(keys, argv)
  for _ = 1, 8 do redis.call('ZSCORE', keys[1], argv[1]) end
  return 0
end)
"""


def main() -> None:
    import redis

    from rankengine import Leaderboard
    from rankengine.redis.board import encode_member

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--chunk", type=int, default=500)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--json")
    opts = parser.parse_args()
    r = redis.Redis.from_url(opts.url, socket_timeout=600)
    rng = random.Random(opts.seed)
    members = [f"player:{i}" for i in range(opts.size)]
    scores = [rng.randrange(10 * opts.size) for _ in members]
    plain = "write-ab:plain"
    r.delete(plain)
    boards = {
        tie: Leaderboard.connect(r, f"write-ab:{tie}", tie_break=tie)
        for tie in ("first", "member", "dense")
        if tie != "dense"
    }
    boards["dense"] = Leaderboard.connect(r, "write-ab:dense")
    for board in boards.values():
        board.clear()
    for i in range(0, opts.size, FILL_CHUNK):
        chunk = dict(zip(members[i : i + FILL_CHUNK], scores[i : i + FILL_CHUNK], strict=True))
        r.zadd(plain, chunk)
        for board in boards.values():
            board.set_many(chunk)
    boards["dense"].rank(members[0], style="dense")  # builds its dense counts
    numbers = itertools.count(10**9)

    def fcall(board: Any, mark: str, record: bool) -> Callable[[str], None]:
        runner = board._scripts
        keys = [*board._keys, board._reply_key()] if record else list(board._keys)
        settings = f"@{board._stored_sha}"

        def run(member: str) -> None:
            call = f"{mark}{next(numbers)}" if record else ""
            mode = f"{board._mode}{call}{settings}"
            runner("INCR", keys, [mode, encode_member(member), "1.0", "i", "", 0])

        return run

    # The floor of any function call, and a function that is one ZINCRBY.
    r.function_load(FLOOR_LIBRARY, replace=True)
    first = boards["first"]
    variants: dict[str, Callable[[str], None]] = {
        "ZINCRBY": lambda m: r.zincrby(plain, 1, m),
        "empty function (FCALL floor)": lambda m: r.fcall("write_ab_empty", 1, plain, m),
        "function: one ZINCRBY": lambda m: r.fcall("write_ab_zincrby", 1, plain, m),
        "function: eight ZSCOREs": lambda m: r.fcall("write_ab_zscore8", 1, plain, m),
        "incr, resent ('#')": fcall(first, "#", True),
        "incr, first sending ('!')": fcall(first, "!", True),
        "incr, no reply key": fcall(first, "", False),
        "incr, member ties, first sending": fcall(boards["member"], "!", True),
        "incr, member ties, no reply key": fcall(boards["member"], "", False),
        "incr, dense kept, first sending": fcall(boards["dense"], "!", True),
    }
    took: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(opts.rounds):
        for name, run in variants.items():
            picks = [members[rng.randrange(opts.size)] for _ in range(opts.chunk)]
            r.config_resetstat()
            for m in picks:
                run(m)
            stats = r.info("commandstats")
            top = stats.get("cmdstat_fcall") or stats.get("cmdstat_zincrby")
            took[name].append(top["usec"] / top["calls"])
    native = min(took["ZINCRBY"])
    out = {
        name: {
            "min_us": round(min(t), 2),
            "median_us": round(statistics.median(t), 2),
            "x_zincrby": round(min(t) / native, 2),
        }
        for name, t in took.items()
    }
    for name, row in out.items():
        print(f"{name:<36}{row['min_us']:>8.1f}{row['median_us']:>8.1f}{row['x_zincrby']:>7.2f}x")
    if opts.json:
        with open(opts.json, "w", encoding="utf-8") as fh:
            json.dump({"size": opts.size, "chunk": opts.chunk, "variants": out}, fh, indent=1)
    for board in boards.values():
        board.clear()
    r.delete(plain)
    r.function_delete("write_ab_floor")


if __name__ == "__main__":
    main()
