"""``rankengine demo``: a simulated game server on an embedded board.

Players join, a stream of score events arrives, and the board answers the
questions a game server asks: the top 10, a player's rank and neighbours.
The run ends with the throughput measured on this machine.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from typing import Any, TextIO

from rankengine.leaderboard import Entry, Leaderboard

__all__ = ["register", "run_demo"]

#: Default number of players: large enough that O(N) reads would show.
DEFAULT_PLAYERS = 100_000
#: Default number of score events after the players joined.
DEFAULT_EVENTS = 300_000


def register(sub: Any) -> None:
    """Add the ``demo`` subcommand to an argparse subparsers object."""
    parser = sub.add_parser(
        "demo",
        help="simulate a game server: players, score events, top-10, rank look-ups",
        description="Simulate a game server on an in-process board and print the top 10, "
        "a rank look-up and the throughput.",
    )
    parser.add_argument(
        "--players", type=_positive, default=DEFAULT_PLAYERS, help="number of players"
    )
    parser.add_argument(
        "--events", type=_non_negative, default=DEFAULT_EVENTS, help="score events to play"
    )
    parser.add_argument("--backend", choices=("sortedlist", "skiplist"), default="sortedlist")
    parser.add_argument(
        "--seed", type=int, default=2026, help="random seed (the run is reproducible)"
    )
    parser.set_defaults(handler=_handle)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {value}")
    return value


def _handle(args: argparse.Namespace) -> int:
    run_demo(args.players, args.events, backend=args.backend, seed=args.seed)
    return 0


def run_demo(
    players: int,
    events: int,
    *,
    backend: str = "sortedlist",
    seed: int = 2026,
    out: TextIO = sys.stdout,
) -> Leaderboard:
    """Run the simulation and print what a game server would show."""
    rng = random.Random(seed)
    board = Leaderboard(backend=backend)  # type: ignore[arg-type]
    names = [f"player:{i:06d}" for i in range(players)]
    started = time.perf_counter()
    board.set_many({name: rng.randrange(0, 1000) for name in names})
    load_s = time.perf_counter() - started
    print(f"{players:,} players joined in {load_s:.2f} s (bulk load, {backend} backend)", file=out)

    step = max(events // 10, 1)
    started = time.perf_counter()
    for i in range(events):
        board.incr(names[rng.randrange(players)], rng.randint(1, 100))
        if (i + 1) % step == 0:
            print(f"  events: {i + 1:>10,} / {events:,}", file=out)
    play_s = time.perf_counter() - started

    print(_table("Top 10", board.top(10)), file=out)
    me = names[rng.randrange(players)]
    started = time.perf_counter()
    entry = board.entry(me)
    lookup_us = (time.perf_counter() - started) * 1e6
    assert entry is not None
    print(
        f"\n{me} has {entry.score} points, rank {entry.rank:,} of {len(board):,} "
        f"(looked up in {lookup_us:.0f} us)",
        file=out,
    )
    print(_table("Around them", board.around(me, 2, 2)), file=out)
    if events:
        print(
            f"\n{events:,} score events in {play_s:.2f} s: {events / play_s:,.0f} events/s",
            file=out,
        )
    return board


def _table(title: str, rows: list[Entry]) -> str:
    lines = [f"\n{title}", f"{'rank':>8}  {'player':<16}{'score':>10}"]
    lines += [f"{e.rank:>8,}  {e.member!s:<16}{e.score:>10,}" for e in rows]
    return "\n".join(lines)
