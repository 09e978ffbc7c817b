"""What a Redis board costs the Redis server, per call and per guarantee.

Usage (from the repository root)::

    python bench/redis_cost.py                          # 100,000 members
    python bench/redis_cost.py --sizes 100000,1000000 --calls 20000 --json cost.json
    python bench/redis_cost.py --impl OLD/ --impl .     # A/B: two checkouts, interleaved

Method:

1. One private ``redis-server`` on 127.0.0.1 (``peers.RedisServer``), or
   ``--url``.  Each implementation (``--impl``: a directory holding a
   ``rankengine`` package; the default is this checkout) runs in its own
   worker process, the workers taking turns (``--rounds``), all on the
   same server; every figure is the median over the rounds.
2. A worker fills a board (``Leaderboard.connect(r, name)``, the
   defaults) and a plain sorted set with the same N members and scores.
3. Around ``--calls`` calls of each operation, ``CONFIG RESETSTAT`` and
   ``INFO commandstats``: the server microseconds per call are those of
   the top-level command (``EVALSHA``/``FCALL`` when the call is a script
   or a function -- the commands a script runs are counted in it -- else
   the plain commands), beside those of the native redis-py command on the
   plain sorted set (``ZINCRBY``, ``ZREVRANK``, ``ZREVRANGE 0 9
   WITHSCORES``, ``ZADD``).  ``INFO cpu`` gives the whole server's CPU per
   call too (protocol and network included).  The client's calls per
   second are timed unpipelined and pipelined (``PIPELINE`` calls per round
   trip, through the board's pipeline API when it has one).
4. The breakdown per guarantee runs the board's own script runner with
   parts of the call left out: the empty script (the floor of any
   ``EVALSHA``), the helper library alone, the increment without its reply
   key (no retry protection), without the settings guard, on a board whose
   dense counts are kept (after a dense read), and on a
   ``tie_break="member"`` board.
5. ``incr_many`` is the board's batch method, ``PIPELINE`` increments a
   call, timed as a pipeline is (its figures are per increment), beside
   the pipelined ``incr`` and ``ZINCRBY``.  ``--only incr,incr_many`` times
   only the operations named (and their native commands), without the
   breakdown.
6. ``incr pairs`` is a pipeline of two increments per round trip (a
   match's winner and loser, say): its pipelined figures are per
   increment, ``PIPELINE / 2`` round trips per ``PIPELINE`` increments, the
   pair sent as one call or two as ``RUN_MIN`` in
   ``rankengine/redis/pipeline.py`` decides (unpipelined it is ``incr``).

Prints a text table; ``--json`` writes every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

#: Calls per pipeline round trip (as in compare.py's pipelined systems).
PIPELINE = 100
#: Members per ZADD / set_many when filling (one command stays small).
FILL_CHUNK = 5000
#: Chunks a measurement is cut into (see measure).
CHUNKS = 5
#: Commands that are not the call under test (the harness's own).
_HARNESS = {"info", "config|resetstat", "config", "ping"}
#: Top-level commands of a script or function call.
_SCRIPTED = ("evalsha", "evalsha_ro", "eval", "fcall", "fcall_ro")


# ----------------------------------------------------------------------
# Server statistics
# ----------------------------------------------------------------------
def _stats(r: Any) -> dict[str, tuple[int, int]]:
    """``{command: (calls, usec)}`` from ``INFO commandstats``."""
    info = r.info("commandstats")
    out = {}
    for key, value in info.items():
        name = key.removeprefix("cmdstat_")
        if name not in _HARNESS:
            out[name] = (int(value["calls"]), int(value["usec"]))
    return out


def _cpu(r: Any) -> float:
    info = r.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def measure(
    r: Any, calls: int, run: Callable[[int], None], pipelined: bool = False
) -> dict[str, Any]:
    """Server us per call (top level, and the server's whole CPU) and the
    client's calls/s of ``run(i)`` for i in range(calls) (``run(start)`` per
    batch of PIPELINE calls when ``pipelined``), in CHUNKS chunks: the server
    figures are the smallest chunk's (a shared machine deschedules the
    server now and then, which INFO counts as command time), the client's
    the median chunk's.  Every chunk's figures are kept."""
    step = max(calls // CHUNKS, PIPELINE)
    step -= step % PIPELINE
    chunks = []
    for lo in range(0, calls - step + 1, step):
        r.config_resetstat()
        cpu0 = _cpu(r)
        t0 = time.perf_counter()
        if pipelined:
            for start in range(lo, lo + step, PIPELINE):
                run(start)
        else:
            for i in range(lo, lo + step):
                run(i)
        wall = time.perf_counter() - t0
        cpu = _cpu(r) - cpu0
        stats = _stats(r)
        scripted = {k: v for k, v in stats.items() if k in _SCRIPTED}
        top = scripted or stats
        chunks.append(
            {
                "server_us": sum(v[1] for v in top.values()) / step,
                "cpu_us": cpu * 1e6 / step,
                "calls_per_s": step / wall,
                "commands": {k: round(v[0] / step, 2) for k, v in sorted(stats.items())},
            }
        )
    return {
        "server_us": min(c["server_us"] for c in chunks),
        "server_us_median": statistics.median(c["server_us"] for c in chunks),
        "cpu_us": min(c["cpu_us"] for c in chunks),
        "calls_per_s": statistics.median(c["calls_per_s"] for c in chunks),
        "commands": chunks[0]["commands"],
        "chunks": [{k: v for k, v in c.items() if k != "commands"} for c in chunks],
    }


# ----------------------------------------------------------------------
# The worker: one implementation, one size
# ----------------------------------------------------------------------
def worker(
    url: str, n: int, calls: int, seed: int, tag: str, *, only: str | None = None
) -> dict[str, Any]:
    import redis

    from rankengine import Leaderboard

    # (no short socket timeout: a first dense read of 10**6 members takes seconds)
    r = redis.Redis.from_url(url, socket_timeout=600)
    rng = random.Random(seed)
    members = [f"player:{i}" for i in range(n)]
    scores = [rng.randrange(10 * n) for _ in range(n)]
    plain = f"cost:{tag}:plain"
    r.delete(plain)
    for i in range(0, n, FILL_CHUNK):
        r.zadd(
            plain, dict(zip(members[i : i + FILL_CHUNK], scores[i : i + FILL_CHUNK], strict=True))
        )

    def fill(board: Any) -> Any:
        board.clear()
        for i in range(0, n, FILL_CHUNK):
            board.set_many(
                zip(members[i : i + FILL_CHUNK], scores[i : i + FILL_CHUNK], strict=True)
            )
        return board

    boards = {
        "first": fill(Leaderboard.connect(r, f"cost:{tag}:first")),
        "member": fill(Leaderboard.connect(r, f"cost:{tag}:member", tie_break="member")),
        "dense": fill(Leaderboard.connect(r, f"cost:{tag}:dense")),
    }
    boards["dense"].rank(members[0], style="dense")  # builds its dense counts
    # a handle that keeps no member's element: every unique rank as a
    # handle meets a member it has not written or read since
    cold = Leaderboard.connect(r, f"cost:{tag}:first")
    cold._seen = lambda key, element: None
    picks = [members[rng.randrange(n)] for _ in range(calls)]
    values = [rng.randrange(10 * n) for _ in range(calls)]
    b = boards["first"]
    results: dict[str, Any] = {
        "n": n,
        "calls": calls,
        "functions": getattr(b._scripts, "functions", False),
    }

    native: dict[str, Callable[[int], None]] = {
        "incr": lambda i: r.zincrby(plain, 1, picks[i]),
        "set": lambda i: r.zadd(plain, {picks[i]: values[i]}),
        "rank": lambda i: r.zrevrank(plain, picks[i]),
        "top10": lambda i: r.zrevrange(plain, 0, 9, withscores=True),
        "around": lambda i: _native_around(r, plain, picks[i]),
    }
    ops: dict[str, Callable[[int], None]] = {
        "incr": lambda i: b.incr(picks[i], 1),
        "set": lambda i: b.set(picks[i], values[i]),
        "rank unique": lambda i: b.rank(picks[i]),
        "rank unique (unseen)": lambda i: cold.rank(picks[i]),
        "rank competition": lambda i: b.rank(picks[i], style="competition"),
        "rank dense": lambda i: boards["dense"].rank(picks[i], style="dense"),
        "top10": lambda i: b.top(10),
        "around": lambda i: b.around(picks[i], 5, 5),
        "incr (member ties)": lambda i: boards["member"].incr(picks[i], 1),
        "rank (member ties)": lambda i: boards["member"].rank(picks[i]),
        "top10 (member ties)": lambda i: boards["member"].top(10),
        "incr (dense kept)": lambda i: boards["dense"].incr(picks[i], 1),
        "incr pairs": lambda i: b.incr(picks[i], 1),
    }
    versus = {
        "incr": "incr", "set": "set", "rank unique": "rank", "rank unique (unseen)": "rank",
        "rank competition": "rank",
        "rank dense": "rank", "top10": "top10", "around": "around",
        "incr (member ties)": "incr", "rank (member ties)": "rank",
        "top10 (member ties)": "top10", "incr (dense kept)": "incr", "incr_many": "incr",
        "incr pairs": "incr",
    }  # fmt: skip
    if only is not None:
        chosen = only.split(",")
        ops = {op: run for op, run in ops.items() if op in chosen}
        native = {op: run for op, run in native.items() if op in {versus[o] for o in chosen}}

    # native ops pipelined
    def native_batch(op: str) -> Callable[[int], None]:
        def run(start: int) -> None:
            pipe = r.pipeline(transaction=False)
            for i in range(start, start + PIPELINE):
                if op == "incr":
                    pipe.zincrby(plain, 1, picks[i])
                elif op == "set":
                    pipe.zadd(plain, {picks[i]: values[i]})
                elif op == "rank":
                    pipe.zrevrank(plain, picks[i])
                elif op == "top10":
                    pipe.zrevrange(plain, 0, 9, withscores=True)
            pipe.execute()

        return run

    def board_batch(op: str) -> Callable[[int], None] | None:
        board = {"rank dense": boards["dense"], "incr (dense kept)": boards["dense"]}.get(op, b)
        if "unseen" in op:
            board = cold
        if "member" in op:
            board = boards["member"]
        if not hasattr(board, "pipeline"):
            return None
        method, args, kwargs = _board_call(op)
        if op == "incr pairs":

            def pairs(start: int) -> None:
                for i in range(start, start + PIPELINE, 2):
                    with board.pipeline() as p:
                        p.incr(picks[i], 1).incr(picks[i + 1], 1)

            return pairs

        def run(start: int) -> None:
            with board.pipeline() as p:
                for i in range(start, start + PIPELINE):
                    getattr(p, method)(*_args(args, picks[i], values[i]), **kwargs)

        return run

    results["native"] = {}
    for op, run in native.items():
        results["native"][op] = measure(r, calls, run)
        if op != "around":
            results["native"][op]["pipelined"] = measure(r, calls, native_batch(op), pipelined=True)
    results["board"] = {}
    for op, run in ops.items():
        results["board"][op] = measure(r, calls, run)
        results["board"][op]["versus"] = versus[op]
        batch = board_batch(op)
        if batch is not None and op != "around":
            results["board"][op]["pipelined"] = measure(r, calls, batch, pipelined=True)
    if only is None or "incr_many" in only.split(","):

        def many(start: int) -> None:
            b.incr_many([(picks[i], 1) for i in range(start, start + PIPELINE)])

        # one call per PIPELINE increments: its figures (per increment) are
        # those of a pipeline, in both columns
        batched = measure(r, calls, many, pipelined=True)
        results["board"]["incr_many"] = {**batched, "versus": "incr", "pipelined": batched}
    results["breakdown"] = {} if only else breakdown(r, b, boards, picks, calls)
    for board in boards.values():
        board.clear()
    r.delete(plain)
    return results


def _native_around(r: Any, key: str, member: str) -> None:
    rank = r.zrevrank(key, member)
    r.zrevrange(key, max(rank - 5, 0), rank + 5, withscores=True)


def _board_call(op: str) -> tuple[str, tuple[str, ...], dict[str, Any]]:
    """The board method behind an op name, its arguments (``m``: the member,
    ``v``: the value, ``1``: one) and keywords."""
    if op.startswith("incr"):
        return "incr", ("m", "1"), {}
    if op == "set":
        return "set", ("m", "v"), {}
    if op.startswith("top10"):
        return "top", ("10",), {}
    if op == "around":
        return "around", ("m",), {}
    style = op.split()[1] if op.startswith("rank ") and "(" not in op else None
    return "rank", ("m",), {} if style in (None, "unique") else {"style": style}


def _args(args: tuple[str, ...], member: str, value: int) -> list[Any]:
    return [member if a == "m" else value if a == "v" else int(a) for a in args]


def breakdown(
    r: Any, b: Any, boards: dict[str, Any], picks: list[str], calls: int
) -> dict[str, Any]:
    """The increment's server time with parts of it left out, through the
    board's own runner (see the module docstring)."""
    try:
        from rankengine.redis import scripts as redis_scripts
    except ImportError:  # before the layout into sub-packages
        from rankengine import redis_scripts  # type: ignore[no-redef]

    runner = b._scripts
    out: dict[str, Any] = {}
    empty = r.script_load("return 0")
    out["empty EVALSHA"] = measure(r, calls, lambda i: r.evalsha(empty, 0))
    prelude = redis_scripts._prelude("INCR") if hasattr(redis_scripts, "_prelude") else None
    if prelude is not None and "local ST = redis.call" in prelude:
        sha = r.script_load(prelude + "\nreturn 0")
        keys = [*b._keys, b._reply_key()]
        out["helper library + state read (EVALSHA)"] = measure(
            r, calls, lambda i: r.evalsha(sha, len(keys), *keys, b._mode)
        )
    if hasattr(runner, "function_floor"):
        out.update(runner.function_floor(r, calls, measure))
    mode = b._mode
    sha_part = f"@{b._stored_sha}" if getattr(b, "_stored_sha", "") else ""
    keys = [*b._keys, b._reply_key()]
    counter = iter(range(10**9, 2 * 10**9))

    def incr(mode: str, keys: list[str]) -> Callable[[int], None]:
        return lambda i: runner(
            "INCR", keys, [mode.replace("#", f"#{next(counter)}"), picks[i], "1.0", "i", "", 0]
        )

    out.update(profile(r, b, picks, calls, counter))
    out["incr: full (reply key, settings guard)"] = measure(
        r, calls, incr(mode + "#" + sha_part, keys)
    )
    out["incr: no settings guard"] = measure(r, calls, incr(mode + "#", keys))
    out["incr: no reply key, no guard"] = measure(r, calls, incr(mode, b._keys))
    return out


def profile(r: Any, b: Any, picks: list[str], calls: int, counter: Any) -> dict[str, Any]:
    """Server time of the increment's function cut after each top-level
    statement of its body (a library of those prefixes, loaded beside the
    board's): what each step adds.  Functions only (Redis 7); the board
    written is a throwaway (a cut body leaves it half-written)."""
    try:
        from rankengine.redis import scripts as redis_scripts
    except ImportError:
        return {}
    if not getattr(b._scripts, "functions", False) or not hasattr(redis_scripts, "_SECTIONS"):
        return {}
    body = redis_scripts._source("incr").splitlines()
    cuts = [
        i
        for i, line in enumerate(body)
        if line and not line[0].isspace() and not line.startswith(("end", "else", "--"))
    ]
    cuts.append(len(body))
    code = "".join(redis_scripts._SECTIONS.values())
    for k, cut in enumerate(cuts):
        text = "\n".join(body[:cut])
        if not text.rstrip().rsplit("\n", 1)[-1].startswith("return"):
            text += "\nreturn 0"
        code += (
            f"redis.register_function('cost_profile_{k}', function(keys, argv)\n"
            f"begin(keys, argv)\n{text}\nend)\n"
        )
    r.function_load("#!lua name=cost_profile\n" + code, replace=True)
    keys = [*b._keys, b._reply_key()]
    mode = b._mode + "#" + (f"@{b._stored_sha}" if b._stored_sha else "")
    out: dict[str, Any] = {}
    for k, cut in enumerate(cuts):

        def run(i: int, k: int = k) -> None:
            call = mode.replace("#", f"#{next(counter)}")
            r.fcall(f"cost_profile_{k}", len(keys), *keys, call, picks[i], "1.0", "i", "", 0)

        last = body[cut - 1].strip() if cut else "(begin only)"
        out[f"incr cut after: {last[:36]}"] = measure(r, calls, run)
    r.function_delete("cost_profile")
    return out


# ----------------------------------------------------------------------
# The driver
# ----------------------------------------------------------------------
def _median_tree(runs: list[Any]) -> Any:
    """The median of every number across runs of one shape."""
    first = runs[0]
    if isinstance(first, dict):
        return {k: _median_tree([run[k] for run in runs if k in run]) for k in first}
    if isinstance(first, (int, float)) and not isinstance(first, bool):
        return statistics.median(runs)
    return first


def table(label: str, res: dict[str, Any]) -> str:
    lines = [f"== {label}: N = {res['n']:,}, {res['calls']:,} calls per op"]
    lines.append(
        f"{'operation':<24}{'server us':>10}{'native':>8}{'ratio':>7}{'cpu us':>8}"
        f"{'calls/s':>9}{'x py':>6}{'piped/s':>9}{'x py':>6}  commands per call"
    )
    nat = res["native"]
    for op, m in res["board"].items():
        v = nat[m["versus"]]
        piped = m.get("pipelined", {}).get("calls_per_s")
        vpiped = v.get("pipelined", {}).get("calls_per_s")
        cmds = " ".join(f"{k}:{c:g}" for k, c in m["commands"].items())
        lines.append(
            f"{op:<24}{m['server_us']:>10.1f}{v['server_us']:>8.1f}"
            f"{m['server_us'] / v['server_us']:>7.2f}{m['cpu_us']:>8.1f}"
            f"{m['calls_per_s']:>9.0f}{m['calls_per_s'] / v['calls_per_s']:>6.2f}"
            + (f"{piped:>9.0f}{piped / vpiped:>6.2f}" if piped and vpiped else f"{'-':>9}{'-':>6}")
            + f"  {cmds}"
        )
    lines.append(f"{'native':<24}{'server us':>10}{'cpu us':>8}{'calls/s':>9}{'piped/s':>9}")
    for op, v in nat.items():
        piped = v.get("pipelined", {}).get("calls_per_s")
        lines.append(
            f"{op:<24}{v['server_us']:>10.1f}{v['cpu_us']:>8.1f}{v['calls_per_s']:>9.0f}"
            + (f"{piped:>9.0f}" if piped else f"{'-':>9}")
        )
    lines.append("breakdown (server us per call)")
    for name, m in res["breakdown"].items():
        lines.append(f"  {name:<44}{m['server_us']:>8.1f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100000")
    parser.add_argument("--calls", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=1, help="worker runs per implementation")
    parser.add_argument("--impl", action="append", help="a directory holding a rankengine package")
    parser.add_argument("--label", action="append", help="a name for each --impl, in order")
    parser.add_argument("--url", help="an existing Redis (default: start one)")
    parser.add_argument("--json")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--only", help="comma-separated board operations (no breakdown)")
    parser.add_argument(
        "--worker", nargs=4, metavar=("URL", "N", "CALLS", "TAG"), help=argparse.SUPPRESS
    )
    opts = parser.parse_args(argv)
    if opts.worker:
        url, n, calls, tag = opts.worker
        print(json.dumps(worker(url, int(n), int(calls), opts.seed, tag, only=opts.only)))
        return 0
    impls = [str(Path(p).resolve()) for p in (opts.impl or [str(HERE.parent)])]
    opts.labels = opts.label or [f"impl{k}" for k in range(len(impls))]
    if len(opts.labels) != len(impls):
        parser.error("give one --label per --impl")
    sizes = [int(s) for s in opts.sizes.split(",")]
    if opts.url:
        return _drive(opts, opts.url, impls, sizes)
    import peers

    with peers.RedisServer() as server:
        print(f"redis-server {server.version} on port {server.port}", file=sys.stderr)
        return _drive(opts, f"redis://127.0.0.1:{server.port}/0", impls, sizes)


def _drive(opts: Any, url: str, impls: list[str], sizes: list[int]) -> int:
    report: dict[str, Any] = {"impls": opts.labels, "rounds": opts.rounds, "runs": []}
    for n in sizes:
        runs: dict[str, list[Any]] = {impl: [] for impl in impls}
        for round_ in range(opts.rounds):
            for k, impl in enumerate(impls):
                env = {**os.environ, "PYTHONPATH": impl}
                argv = [sys.executable, __file__, "--worker", url, str(n), str(opts.calls)]
                argv += [f"{k}.{round_}", *(["--only", opts.only] if opts.only else [])]
                out = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
                if out.returncode:
                    print(out.stderr, file=sys.stderr)
                    return 1
                runs[impl].append(json.loads(out.stdout))
        for impl, label in zip(impls, opts.labels, strict=True):
            res = _median_tree(runs[impl])
            report["runs"].append({"impl": label, **res})
            print(table(label, res))
    if opts.json:
        Path(opts.json).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
