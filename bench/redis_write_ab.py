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

With ``--parts``, the increment is also taken apart, guarantee by
guarantee: functions made of the board library's own helpers (the same
code the increment runs) that stop after each step of it, on the
first-to-reach board, a member on it, a client that never resends (each
row is the one above it plus one step, so the difference of two rows is
that step's cost):

* ``parts: begin``: the call's keys and mode parsed (``begin``);
* ``parts: + state read, settings guard``: ``HMGET`` of the state hash,
  the settings' SHA1 compared, the log guard's compare (``guard``);
* ``parts: + member's row read``: ``HGET`` of the member's row, parsed;
* ``parts: + clock, state write``: the next tie clock and the write
  counter, ``HSET`` of the state hash (``save``);

and the native commands the increment's other work stands for, sent alone
(their ``INFO commandstats`` time summed per increment): ``ZREM`` then
``ZADD`` of the element one point higher (what a first-to-reach increment
does, its element holding the tie clock, where ``ZINCRBY`` updates the
element in place), and ``HGET`` of a member's row.

``--ref CHECKOUT`` adds the increment of another version (its function
library, loaded beside this one's), on the same boards, for an A/B of the
two in one process: ``ref incr, no reply key``, ``ref incr, member ties,
no reply key`` and ``ref incr, dense kept, no reply key`` against this
version's rows of the same name.

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
from functools import partial
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
    parser.add_argument("--parts", action="store_true", help="take the increment apart too")
    parser.add_argument("--ref", help="another checkout: its increment too, on the same boards")
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
        "incr, dense kept, no reply key": fcall(boards["dense"], "", False),
    }
    if opts.ref:
        ref_name = _load_ref(r, opts.ref)
        for label, board in (
            ("", first),
            (", member ties", boards["member"]),
            (", dense kept", boards["dense"]),
        ):
            variants[f"ref incr{label}, no reply key"] = partial(_fcall_ref, r, ref_name, board)
    #: what a variant's chunk is timed by: the top-level commands it sends
    counted: dict[str, tuple[str, ...]] = {"ZINCRBY": ("zincrby",)}
    if opts.parts:
        r.function_load(_parts_library(), replace=True)
        z, mode = first._keys[0], f"{first._mode}@{first._stored_sha}"
        for part in PARTS:
            variants[f"parts: {part}"] = partial(_fcall_part, r, PARTS[part][0], z, mode)
        h = first._keys[1]
        # a copy of the plain set whose scores the client knows: an element
        # written again one point higher, as a first-to-reach increment does
        copy, held = "write-ab:copy", dict(zip(members, scores, strict=True))
        r.delete(copy)
        for i in range(0, opts.size, FILL_CHUNK):
            r.zadd(copy, {m: held[m] for m in members[i : i + FILL_CHUNK]})

        def rewrite(m: str) -> None:
            held[m] += 1
            r.zrem(copy, m)
            r.zadd(copy, {m: held[m]})

        variants["native: ZREM + ZADD, score + 1"] = rewrite
        variants["native: HGET of a row"] = lambda m: r.hget(h, encode_member(m))
        counted["native: ZREM + ZADD, score + 1"] = ("zrem", "zadd")
        counted["native: HGET of a row"] = ("hget",)
    took: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(opts.rounds):
        for name, run in variants.items():
            picks = [members[rng.randrange(opts.size)] for _ in range(opts.chunk)]
            r.config_resetstat()
            for m in picks:
                run(m)
            stats = r.info("commandstats")
            usec = sum(
                stats.get(f"cmdstat_{command}", {}).get("usec", 0)
                for command in counted.get(name, ("fcall",))
            )
            took[name].append(usec / len(picks))
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
    r.delete(plain, "write-ab:copy")
    r.function_delete("write_ab_floor")
    if opts.parts:
        r.function_delete("write_ab_parts")
    if opts.ref:
        r.function_delete(ref_name)


def _load_ref(r: Any, checkout: str) -> str:
    """Load the function library of the rankengine in ``checkout`` (its own
    Python process reads it) and return the library's name."""
    import subprocess
    import sys

    code = "import json; from rankengine.redis import scripts as s; "
    code += "print(json.dumps([s.LIBRARY, s.LIBRARY_NAME]))"
    # (run in the checkout: ``python -c`` puts its working directory first)
    out = subprocess.check_output(
        [sys.executable, "-c", code], cwd=checkout, env={"PYTHONPATH": checkout}
    )
    library, name = json.loads(out)
    r.function_load(library, replace=True)
    return str(name)


def _fcall_ref(r: Any, library: str, board: Any, member: str) -> None:
    """The reference library's increment on ``board``, no reply key."""
    from rankengine.redis.board import encode_member

    mode = f"{board._mode}@{board._stored_sha}"
    r.fcall(f"{library}_incr", 1, board._keys[0], mode, encode_member(member), "1.0", "i", "", 0)


#: The increment taken apart (see the module): each function runs the
#: board library's helpers up to one step of the increment, then returns.
PARTS: dict[str, tuple[str, str]] = {
    "begin": ("write_ab_begin", "return 0"),
    "+ state read, settings guard": ("write_ab_guard", "guard() return 0"),
    "+ member's row read": (
        "write_ab_row",
        "guard() local old = lookup(ARGV[2]) return 0",
    ),
    "+ clock, state write": (
        "write_ab_save",
        "guard() local old = lookup(ARGV[2]) clock_next(0) touched() save() return 0",
    ),
}


def _parts_library() -> str:
    """A library of the board's helper sections and the PARTS functions."""
    from rankengine.redis import scripts

    code = "".join(scripts.library_sections())
    for name, body in PARTS.values():
        code += f"redis.register_function('{name}', function(keys, argv)\n"
        code += f"begin(keys, argv)\n{body}\nend)\n"
    return "#!lua name=write_ab_parts\n" + code


def _fcall_part(r: Any, function: str, z: str, mode: str, member: str) -> None:
    from rankengine.redis.board import encode_member

    r.fcall(function, 1, z, mode, encode_member(member), "1.0", "i", "", 0)


if __name__ == "__main__":
    main()
