"""Server time of a member's rank on a Redis board: by its function (as
``rank_trips=1`` reads a unique rank), by plain commands
(``rankengine/redis/plainranks.py``) and by the native ``ZREVRANK`` on a
plain sorted set, interleaved in one process; and of an increment beside
``ZINCRBY``.

Usage (from the repository root; a running Redis, nothing else on its keys)::

    python bench/redis_rank_ab.py --url redis://127.0.0.1:6379/0

A shared machine's load changes from one minute to the next, and a server
descheduled in the middle of a command counts that time as the command's:
``bench/redis_cost.py`` figures taken minutes apart differ by half.  Here
the three ways take turns in chunks of ``--chunk`` calls (``CONFIG
RESETSTAT`` and ``INFO commandstats`` around each), ``--rounds`` times;
each figure is the smallest chunk's server microseconds per call (every
command of the call summed: the function's or script's, or the plain
commands'), so the ways meet the same load.  ``INFO commandstats`` also
counts each command a script runs, inside the script's own time: when a
chunk ran a script (``FCALL``, ``EVALSHA``), only the script's time is
summed.  Prints a table and the ratios to ``ZREVRANK``.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable
from typing import Any

#: Members per ZADD / set_many when filling.
FILL_CHUNK = 5000
#: Commands of the harness itself, not of the call measured.
_HARNESS = {"info", "config|resetstat", "config", "ping"}
#: Top-level script commands: the commands they run are in their time.
_SCRIPTS = {"fcall", "fcall_ro", "evalsha", "evalsha_ro", "eval", "eval_ro"}


def server_us(r: Any, calls: list[str], run: Callable[[str], Any]) -> float:
    """Server microseconds per call of ``run`` over ``calls``."""
    r.config_resetstat()
    for member in calls:
        run(member)
    stats = {k.removeprefix("cmdstat_"): v for k, v in r.info("commandstats").items()}
    counted = _SCRIPTS & stats.keys() or stats.keys() - _HARNESS
    usec = sum(stats[name]["usec"] for name in counted)
    return float(usec) / len(calls)


def main() -> None:
    import redis

    from rankengine import Leaderboard
    from rankengine.redis.plainranks import FALLBACK

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--chunk", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--seed", type=int, default=5)
    opts = parser.parse_args()
    r = redis.Redis.from_url(opts.url)
    board = Leaderboard.connect(r, "rank-ab")
    plain = "rank-ab:plain"
    rng = random.Random(opts.seed)
    members = [f"player:{i}" for i in range(opts.size)]
    scores = {m: rng.randrange(10 * opts.size) for m in members}
    board.clear()
    r.delete(plain)
    for i in range(0, opts.size, FILL_CHUNK):
        chunk = {m: scores[m] for m in members[i : i + FILL_CHUNK]}
        board.set_many(chunk)
        r.zadd(plain, chunk)
    board.rank(members[0], style="dense")  # the dense counts are built
    board._seen = lambda key, element: None  # every member stays unseen

    def function(style: str) -> Callable[[str], Any]:
        if style == "unique":
            return lambda m: board._rank_of(board._member(m), board._run("RANK", board._member(m)))
        return lambda m: board._entries([m], style[0], False)

    def plain_path(style: str) -> Callable[[str], Any]:
        def run(m: str) -> Any:
            found = board._plain_rank_of(board._member(m), style)
            assert found is not FALLBACK
            return found

        return run

    ways: dict[str, Callable[[str], Any]] = {
        "ZREVRANK": lambda m: r.zrevrank(plain, m),
        "ZINCRBY": lambda m: r.zincrby(plain, 1, m),
        "incr": lambda m: board.incr(m, 1),
    }
    for style in ("unique", "competition", "dense"):
        ways[f"{style}: function"] = function(style)
        ways[f"{style}: plain"] = plain_path(style)

    best: dict[str, float] = {}
    for _ in range(opts.rounds):
        for name, run in ways.items():
            calls = [members[rng.randrange(opts.size)] for _ in range(opts.chunk)]
            us = server_us(r, calls, run)
            best[name] = min(best.get(name, us), us)
    print(f"{'way':<24}{'server us':>10}{'x native':>10}")
    for name, us in best.items():
        native = best["ZINCRBY" if name in ("incr", "ZINCRBY") else "ZREVRANK"]
        print(f"{name:<24}{us:>10.1f}{us / native:>10.2f}")
    board.clear()
    r.delete(plain)


if __name__ == "__main__":
    main()
