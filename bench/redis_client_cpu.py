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
are not counted).  ``--other`` is as in ``bench/redis_client_ab.py``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import random
import statistics
import time
from collections.abc import Callable
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


def stub_the_server() -> None:
    """Replace the socket's side of redis-py's ``Connection`` (see above)."""
    from redis.connection import Connection

    pending: list[Any] = []

    def send_packed_command(self: Any, command: Any, check_health: bool = True) -> None:
        packed = b"".join(command) if isinstance(command, list) else command
        pending.append(REPLIES[packed.split(b"\r\n", 3)[2]])  # *N, $len, the name

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
    Op = Callable[[str], Any]
    ops: dict[str, Op] = {
        "zincrby": lambda m: r.zincrby("client-cpu:plain", 1, m),
        "zrevrank": lambda m: r.zrevrank("client-cpu:plain", m),
    }
    for label, board in boards.items():
        ops[f"incr {label}"] = board.incr
        ops[f"rank {label}"] = board.rank
    took: dict[str, list[float]] = {name: [] for name in ops}
    for _ in range(opts.rounds):
        for name, op in ops.items():
            for board in boards.values():
                board._elements.clear()  # every rank of a member not seen
            t0 = time.thread_time()
            for m in picks:
                op(m)
            took[name].append((time.thread_time() - t0) / opts.calls * 1e6)
    print(
        json.dumps(
            {
                name: {"min": round(min(v), 1), "median": round(statistics.median(v), 1)}
                for name, v in took.items()
            }
        )
    )


if __name__ == "__main__":
    main()
