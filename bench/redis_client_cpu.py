"""Client CPU per call of a Redis board against raw redis-py, with the
server stubbed out: what the client's own code costs, without the round
trip or the server's time.

Usage (from the repository root; a running Redis, used only to open the
boards: the timed calls never reach it)::

    python bench/redis_client_cpu.py --url redis://127.0.0.1:6379/0
    PYTHONPATH=<checkout> python bench/redis_client_cpu.py --url ... --other rankengine_before

Every connection's ``send_packed_command`` is replaced by one that notes
the reply each command would get (a canned one per command name) and
``read_response`` by one that returns it: redis-py's pool, its command
path and packing, the board's own code and the parser's caller all run,
the socket does not.  For each operation (``incr`` against ``ZINCRBY``,
``rank`` of a member the handle has not seen against ``ZREVRANK``) it
times ``--calls`` calls, ``--rounds`` times, the versions taking turns,
and prints the minimum and median CPU time of the calling thread per call
in microseconds (``time.thread_time``: a loaded machine's other processes
are not counted).  ``incr pipelined`` (against ``zincrby pipelined``)
sends the same increments ``PIPELINE`` per pipeline (a board's pipeline,
a redis-py pipeline of ``ZINCRBY``): a round trip of several commands gets
a reply per command, a run's ``INCR_MANY`` one row per increment; its
figure is per increment.  ``incr pairs`` (against ``zincrby pairs``)
sends them two per pipeline (a match's winner and loser, say); with
``--run-min K`` it is timed twice, as the code stands and with the
pipeline's ``RUN_MIN`` set to ``K`` (``incr pairs run_min=K``), in the
same rounds: ``--run-min 2`` sends each pair as one call instead of two.
Its figure is per increment too.  ``--only`` times only the operations named
(comma-separated, without the version's label: ``--only 'incr
pipelined'``, its native command with it).  ``--other`` is as in
``bench/redis_client_ab.py``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import random
import statistics
import time
from collections.abc import Callable
from functools import partial
from typing import Any

#: The reply each command gets: an increment's (status 1, the new score,
#: its kind, the clock), a rank, a member's row, a ZINCRBY's new score.
REPLIES: dict[bytes, Any] = {
    b"FCALL": [1, b"6.0", b"i", 12345],
    b"EVALSHA": [1, b"6.0", b"i", 12345],
    b"ZINCRBY": b"6",
    b"ZREVRANK": 41,
    b"HGET": b"i:95.0:9999999999987654i",
}


#: Increments per pipeline of the pipelined operations.
PIPELINE = 100


def replies_to(packed: bytes) -> list[Any]:
    """The canned replies of the commands packed in one send (split where
    a command starts: no argument here holds CR LF '*').  A run of
    increments (an FCALL of ``..._incr_many``, or its EVALSHA, in run mode:
    its mode argument ``n``) gets its base clock and a changed row per
    increment."""
    out: list[Any] = []
    for piece in packed[1:].split(b"\r\n*"):
        head = piece.split(b"\r\n", 20)  # N, then $len and each argument, the first ones
        name = head[2]
        if name in (b"FCALL", b"EVALSHA"):
            keys = int(head[6])
            if head[2 + 2 * (6 + keys)] == b"n":  # (the mode: after name, numkeys, keys, 3 args)
                row: list[Any] = []
                for step in range(1, (int(head[0]) - 7 - keys) // 3 + 1):
                    row += [b"6", b"i", step, b"6", b"i"]
                out.append([12345, *row])
                continue
        out.append(REPLIES[name])
    return out


def stub_the_server() -> None:
    """Replace the socket's side of redis-py's ``Connection`` (see above)."""
    from redis.connection import Connection

    pending: list[Any] = []

    def send_packed_command(self: Any, command: Any, check_health: bool = True) -> None:
        packed = b"".join(command) if isinstance(command, list) else command
        pending.extend(replies_to(packed))
        pending.reverse()  # (answered first to last: popped from the end)

    def read_response(self: Any, *args: Any, **kwargs: Any) -> Any:
        return pending.pop()

    Connection.send_packed_command = send_packed_command  # type: ignore[method-assign]
    Connection.read_response = read_response  # type: ignore[method-assign]


def main() -> None:
    import redis

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--other", help="a second version's package name")
    parser.add_argument("--only", help="comma-separated operations, e.g. 'incr pipelined'")
    parser.add_argument("--run-min", type=int, help="time 'incr pairs' with this RUN_MIN too")
    opts = parser.parse_args()
    r = redis.Redis.from_url(opts.url)
    packages = {"this": "rankengine", **({"other": opts.other} if opts.other else {})}
    boards = {}
    for label, package in packages.items():
        board = importlib.import_module(package).Leaderboard.connect(r, f"client-cpu-{label}")
        board.clear()
        board.set("player:1", 5)  # the settings stored: the stubbed calls need no round trip
        boards[label] = board
    stub_the_server()
    rng = random.Random(3)
    picks = [f"player:{rng.randrange(100_000)}" for _ in range(opts.calls)]
    Op = Callable[[list[str]], Any]

    def zincrby(ms: list[str]) -> None:
        for m in ms:
            r.zincrby("client-cpu:plain", 1, m)

    def zrevrank(ms: list[str]) -> None:
        for m in ms:
            r.zrevrank("client-cpu:plain", m)

    def zincrby_pipelined(ms: list[str]) -> None:
        pipe = r.pipeline(transaction=False)
        for m in ms:
            pipe.zincrby("client-cpu:plain", 1, m)
        pipe.execute()

    def zincrby_pairs(ms: list[str]) -> None:
        for at in range(0, len(ms) - 1, 2):
            pipe = r.pipeline(transaction=False)
            pipe.zincrby("client-cpu:plain", 1, ms[at])
            pipe.zincrby("client-cpu:plain", 1, ms[at + 1])
            pipe.execute()

    ops: dict[str, Op] = {
        "zincrby": zincrby,
        "zrevrank": zrevrank,
        "zincrby pipelined": zincrby_pipelined,
        "zincrby pairs": zincrby_pairs,
    }
    for label, board in boards.items():
        ops[f"incr {label}"] = partial(each, board.incr)
        ops[f"rank {label}"] = partial(each, board.rank)
        ops[f"incr pipelined {label}"] = partial(incr_pipelined, board)
        ops[f"incr pairs {label}"] = partial(incr_pairs, board)
        if opts.run_min is not None:
            module = importlib.import_module(f"{packages[label]}.redis.pipeline")
            ops[f"incr pairs run_min={opts.run_min} {label}"] = partial(
                with_run_min, module, opts.run_min, partial(incr_pairs, board)
            )
    if opts.only:
        wanted = set(opts.only.split(","))
        natives = {
            "incr": "zincrby",
            "rank": "zrevrank",
            "incr pipelined": "zincrby pipelined",
            "incr pairs": "zincrby pairs",
        }
        wanted |= {natives[w] for w in wanted if w in natives}
        if "incr pairs" in wanted and opts.run_min is not None:
            wanted.add(f"incr pairs run_min={opts.run_min}")
        ops = {
            k: v
            for k, v in ops.items()
            if k in wanted or (k.rsplit(" ", 1)[-1] in packages and k.rsplit(" ", 1)[0] in wanted)
        }
    chunks = [picks[at : at + PIPELINE] for at in range(0, len(picks), PIPELINE)]
    took: dict[str, list[float]] = {name: [] for name in ops}
    for _ in range(opts.rounds):
        for name, op in ops.items():
            for board in boards.values():
                board._elements.clear()  # every rank of a member not seen
            t0 = time.thread_time()
            for chunk in chunks:
                op(chunk)
            took[name].append((time.thread_time() - t0) / opts.calls * 1e6)
    print(
        json.dumps(
            {
                name: {"min": round(min(v), 1), "median": round(statistics.median(v), 1)}
                for name, v in took.items()
            }
        )
    )


def each(call: Callable[[str], Any], ms: list[str]) -> None:
    """``call`` of each member, one by one."""
    for m in ms:
        call(m)


def incr_pipelined(board: Any, ms: list[str]) -> None:
    """An increment of each member, in one pipeline of the board."""
    with board.pipeline() as p:
        for m in ms:
            p.incr(m, 1)


def incr_pairs(board: Any, ms: list[str]) -> None:
    """The increments two per pipeline of the board (a pair per round trip)."""
    for at in range(0, len(ms) - 1, 2):
        with board.pipeline() as p:
            p.incr(ms[at], 1).incr(ms[at + 1], 1)


def with_run_min(module: Any, run_min: int, op: Callable[[list[str]], Any], ms: list[str]) -> None:
    """``op(ms)`` with the pipeline module's ``RUN_MIN`` set to ``run_min``."""
    kept = module.RUN_MIN
    module.RUN_MIN = run_min
    try:
        op(ms)
    finally:
        module.RUN_MIN = kept


if __name__ == "__main__":
    main()
