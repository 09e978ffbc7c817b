"""``rankengine demo``: a simulated game server on an embedded, durable board.

The run, in five steps:

1. **Join.**  ``--players`` players join with random scores: one bulk
   ``set_many``, logged as one record in a durable board directory
   (:meth:`Leaderboard.open <rankengine.Leaderboard.open>`, ``fsync="everysec"``).
2. **Play.**  ``--events`` score events (``incr``; a few players play much
   more than the rest), each logged before it is applied, with a progress
   bar and the top 10 refreshed in place (on a terminal; otherwise printed
   a few times).  Halfway through, the server takes a snapshot, as a real
   one would now and then.
3. **Look up.**  Rank look-ups of random players, timed, and one player's
   rank and neighbours.
4. **Crash.**  The board lives in a child process (the "server").  When it
   has played every event it flushes the log and reports a digest of its
   standings; then it is killed with SIGKILL: no ``close()``, no final
   snapshot.
5. **Recover.**  This process opens the directory, which loads the snapshot
   and replays the log after it, and checks that the standings (every
   member, score and rank) are identical to what the server reported.

It ends with the throughput of the durable board and the recovery time.

>>> import io
>>> out = io.StringIO()
>>> result = run_demo(300, 2_000, out=out, live=False)
>>> result.identical, result.players, result.events
(True, 300, 2000)
>>> "identical" in out.getvalue()
True
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final, TextIO

from rankengine.board.leaderboard import Leaderboard
from rankengine.cli.args import HelpFormatter, non_negative, positive, whole_number
from rankengine.durable.board import DurableLeaderboard, FsyncPolicy
from rankengine.stores import open_board

__all__ = ["DemoResult", "register", "run_demo"]

#: Default number of players: large enough that an O(N) read would show.
DEFAULT_PLAYERS: Final = 100_000
#: Default number of score events after the players joined.
DEFAULT_EVENTS: Final = 200_000
#: Most players and most events the command accepts.  The server keeps a
#: few hundred bytes per player in memory (gigabytes at this many) and the
#: log grows by some 70 bytes per event (under 1 GB); a larger number is a
#: typo that would exhaust the machine's memory or disk, not a demo.
MAX_SIZE: Final = 10_000_000
#: Default seed: the same command plays the same game.
DEFAULT_SEED: Final = 2026
#: Rows of the live table.
TOP: Final = 10
#: Seconds between two progress reports from the server.
REPORT_INTERVAL_S: Final = 0.1
#: Random players looked up to time a rank look-up.
LOOKUPS: Final = 1_000
#: Width of the progress bar, in characters.
BAR_WIDTH: Final = 30


def register(sub: Any) -> None:
    """Add the ``demo`` subcommand to an argparse subparsers object."""
    parser = sub.add_parser(
        "demo",
        help="simulate a game server: players, score events, a live top 10, a crash, recovery",
        description="Simulate a game server on an embedded durable board: players join, "
        "score events stream in (progress bar and live top 10), ranks are looked up, then "
        "the server process is killed with SIGKILL and the board is recovered from its "
        "log and compared with what the server had.  Ends with the throughput and the "
        "recovery time.",
        epilog="example:\n  rankengine demo --players 20000 --events 50000 --dir ./board",
        formatter_class=HelpFormatter,
    )
    parser.add_argument(
        "--players",
        type=_players,
        metavar="N",
        default=DEFAULT_PLAYERS,
        help=f"number of players, 1 to {MAX_SIZE:,} (default: %(default)s)",
    )
    parser.add_argument(
        "--events",
        type=_events,
        metavar="N",
        default=DEFAULT_EVENTS,
        help=f"score events to play, 0 to {MAX_SIZE:,} (default: %(default)s)",
    )
    parser.add_argument(
        "--backend",
        choices=("sortedlist", "skiplist"),
        default="sortedlist",
        help="the board's ordered index (default: %(default)s)",
    )
    parser.add_argument(
        "--seed", type=whole_number, default=DEFAULT_SEED, help="random seed (default: %(default)s)"
    )
    parser.add_argument(
        "--dir",
        metavar="DIR",
        help="keep the board's log in DIR (new or empty; default: a temporary directory, "
        "deleted at the end)",
    )
    parser.add_argument(
        "--fsync",
        choices=("everysec", "always", "never"),
        default="everysec",
        help="the log's fsync policy (default: %(default)s)",
    )
    parser.add_argument(
        "--live",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="refresh the progress bar and top 10 in place (default: when stdout is a terminal)",
    )
    parser.set_defaults(handler=_handle)


def _at_most_max_size(value: int) -> int:
    if value > MAX_SIZE:
        raise argparse.ArgumentTypeError(f"at most {MAX_SIZE:,} (got {value:,})")
    return value


def _players(text: str) -> int:
    return _at_most_max_size(positive(text))


def _events(text: str) -> int:
    return _at_most_max_size(non_negative(text))


def _handle(args: argparse.Namespace) -> int:
    result = run_demo(
        args.players,
        args.events,
        backend=args.backend,
        seed=args.seed,
        directory=args.dir,
        fsync=args.fsync,
        live=args.live,
    )
    return 0 if result.identical else 1


@dataclass(frozen=True)
class DemoResult:
    """What a demo run measured."""

    players: int
    events: int
    #: Score events per second on the durable board (wall clock, in the server).
    events_per_s: float
    #: Mean time of one rank look-up, in microseconds.
    lookup_us: float
    #: Seconds to open the directory after the crash (snapshot + replay).
    recovery_s: float
    #: Whether the recovered standings equal the server's.
    identical: bool
    #: The board directory (deleted at the end unless it was given).
    directory: str


# ----------------------------------------------------------------------
# The server: a child process that writes until it is killed
# ----------------------------------------------------------------------


def _quarters(events: int) -> set[int]:
    """The event counts at 25, 50, 75 and 100 per cent.

    >>> sorted(_quarters(10)), sorted(_quarters(2))
    ([2, 5, 7, 10], [1, 2])
    """
    return {events * q // 4 for q in (1, 2, 3, 4)} - {0}


def _digest(board: Leaderboard) -> str:
    """A fingerprint of the standings: every member, score and rank, in order."""
    return hashlib.sha256(repr(board.items()).encode()).hexdigest()


def _send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def _server_main() -> None:
    """Entry point of the server process: play the game, report, wait to be killed."""
    config = json.loads(sys.argv[1])
    try:
        _serve(**config)
    except Exception as exc:  # reported to the parent, which prints it
        _send({"type": "error", "message": f"{type(exc).__name__}: {exc}"})
        sys.exit(1)
    # Wait for the SIGKILL with the board still open.  If the parent dies
    # instead, stdin closes and the server leaves without closing the board.
    sys.stdin.read()
    os._exit(0)


def _serve(
    *, directory: str, players: int, events: int, backend: str, seed: int, fsync: FsyncPolicy
) -> None:
    rng = random.Random(seed)
    board = open_board(directory, fsync=fsync, backend=backend)
    assert isinstance(board, DurableLeaderboard)
    names = [f"player:{i:06d}" for i in range(players)]
    started = time.perf_counter()
    board.set_many([(name, rng.randrange(0, 1000)) for name in names])
    _send({"type": "joined", "seconds": time.perf_counter() - started})

    # Some players play much more than others: rng.random() ** 1.5 piles up
    # near 0, so the first players of a shuffled list are picked most often
    # (the busiest one about 1 event in 2,000 at 100,000 players).
    busy = names[:]
    rng.shuffle(busy)
    top = board.top
    incr = board.incr
    half = events // 2
    marks = _quarters(events)
    started = last = time.perf_counter()
    paused = 0.0
    for i in range(events):
        incr(busy[int(players * rng.random() ** 1.5)], rng.randint(1, 100))
        done = i + 1
        # Report at every quarter (what plain output prints) and, between
        # them, at most every REPORT_INTERVAL_S (for the live display).
        if done in marks or (done & 255 == 0 and time.perf_counter() - last >= REPORT_INTERVAL_S):
            last = time.perf_counter()
            rows = [(e.member, e.score) for e in top(TOP)]
            seconds = last - started - paused
            _send({"type": "progress", "done": done, "seconds": seconds, "top": rows})
        if done == half:
            t = time.perf_counter()
            seq = board.compact()
            took = time.perf_counter() - t
            paused += took
            _send({"type": "snapshot", "done": i + 1, "seq": seq, "seconds": took})
    play_s = time.perf_counter() - started - paused
    _send({"type": "played", "seconds": play_s})

    sample = [names[rng.randrange(players)] for _ in range(LOOKUPS)]
    entry = board.entry
    started = time.perf_counter()
    for name in sample:
        entry(name)
    lookup_us = (time.perf_counter() - started) / LOOKUPS * 1e6
    me = sample[-1]
    mine = board.entry(me)
    assert mine is not None
    around = [(e.rank, e.member, e.score) for e in board.around(me, 2, 2)]
    _send(
        {
            "type": "lookup",
            "us": lookup_us,
            "member": me,
            "score": mine.score,
            "rank": mine.rank,
            "around": around,
        }
    )
    board.flush()
    _send(
        {
            "type": "ready",
            "last_seq": board.last_seq,
            "count": len(board),
            "digest": _digest(board),
            "top": [(e.member, e.score) for e in top(TOP)],
        }
    )


# ----------------------------------------------------------------------
# The demo: this process shows what the server reports, kills it, recovers
# ----------------------------------------------------------------------


class _Screen:
    """Writes the demo's output; on a terminal, redraws a live block in place."""

    def __init__(self, out: TextIO, live: bool) -> None:
        self.out = out
        self.live = live
        self.block = 0  # lines of the live block currently on screen

    def say(self, text: str = "") -> None:
        self.settle()
        self.out.write(text + "\n")
        self.out.flush()

    def redraw(self, lines: list[str]) -> None:
        """Replace the live block with ``lines`` (terminal only)."""
        up = f"\x1b[{self.block}F" if self.block else ""
        body = "".join(f"\x1b[2K{line}\n" for line in lines)
        self.out.write(up + body)
        self.out.flush()
        self.block = len(lines)

    def settle(self) -> None:
        """Keep the live block as it is; later output goes below it."""
        self.block = 0


def _table(title: str, rows: list[tuple[int, str, Any]]) -> list[str]:
    lines = [title, f"  {'rank':>8}  {'player':<16}{'score':>10}"]
    lines += [f"  {rank:>8,}  {member:<16}{score:>10,}" for rank, member, score in rows]
    return lines


def _count(n: int, noun: str) -> str:
    """``1 event``, ``2,000 events``."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _bar(done: int, total: int) -> str:
    filled = BAR_WIDTH * done // total if total else BAR_WIDTH
    percent = 100 * done // total if total else 100
    return f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {percent:3d}%"


def _messages(proc: subprocess.Popen[str], errors: TextIO) -> Iterator[dict[str, Any]]:
    assert proc.stdout is not None
    for line in proc.stdout:
        message: dict[str, Any] = json.loads(line)
        if message["type"] == "error":
            raise RuntimeError(f"the server failed: {message['message']}")
        yield message
        if message["type"] == "ready":
            return
    code = proc.wait()
    errors.seek(0)
    last = (errors.read().strip().splitlines() or ["no message"])[-1]
    raise RuntimeError(f"the server exited early (exit code {code}): {last}")


def _size(directory: str) -> int:
    return sum(
        os.path.getsize(os.path.join(root, name))
        for root, _, files in os.walk(directory)
        for name in files
    )


def run_demo(
    players: int = DEFAULT_PLAYERS,
    events: int = DEFAULT_EVENTS,
    *,
    backend: str = "sortedlist",
    seed: int = DEFAULT_SEED,
    directory: str | None = None,
    fsync: FsyncPolicy = "everysec",
    out: TextIO | None = None,
    live: bool | None = None,
) -> DemoResult:
    """Run the simulation (see the module docstring) and print it to ``out``.

    :param directory: where the board's log goes: a new or empty directory,
        kept afterwards; by default a temporary one, deleted at the end.
    :param live: redraw the progress bar and top 10 in place; by default
        when ``out`` is a terminal.
    :raises ValueError: if ``directory`` is not empty, or a count is not positive.
    :raises RuntimeError: if the server process fails.
    """
    if players < 1:
        raise ValueError(f"players must be at least 1, got {players}")
    if events < 0:
        raise ValueError(f"events must not be negative, got {events}")
    out = sys.stdout if out is None else out
    if live is None:
        live = out.isatty() and os.environ.get("TERM") != "dumb"
    with contextlib.ExitStack() as stack:
        if directory is None:
            path = stack.enter_context(tempfile.TemporaryDirectory(prefix="rankengine-demo-"))
        else:
            path = directory
            if os.path.exists(path) and (not os.path.isdir(path) or os.listdir(path)):
                raise ValueError(f"{path} is not a new or empty directory")
            os.makedirs(path, exist_ok=True)
        return _run(
            players=players,
            events=events,
            backend=backend,
            seed=seed,
            path=path,
            keep=directory is not None,
            fsync=fsync,
            screen=_Screen(out, live),
        )
    raise AssertionError("unreachable")  # pragma: no cover


def _spawn(
    config: dict[str, Any], stack: contextlib.ExitStack
) -> tuple[subprocess.Popen[str], TextIO]:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    # The server's stderr, read back only if it dies early.
    errors = stack.enter_context(tempfile.TemporaryFile("w+"))  # noqa: SIM115 - closed by the stack
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from rankengine.cli.demo import _server_main; _server_main()",
            json.dumps(config),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=errors,
        text=True,
        env=env,
    )

    def stop() -> None:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()

    stack.callback(stop)
    return proc, errors


def _run(
    *,
    players: int,
    events: int,
    backend: str,
    seed: int,
    path: str,
    keep: bool,
    fsync: FsyncPolicy,
    screen: _Screen,
) -> DemoResult:
    say = screen.say
    say("rankengine demo: a game server on an embedded, durable leaderboard")
    say(f"  {players:,} players, {events:,} score events, {backend} backend, seed {seed}")
    say(f"  event log in {path} (fsync {fsync})")
    say()
    config = {
        "directory": path,
        "players": players,
        "events": events,
        "backend": backend,
        "seed": seed,
        "fsync": fsync,
    }
    with contextlib.ExitStack() as stack:
        proc, errors = _spawn(config, stack)
        report = _follow(_messages(proc, errors), players, events, screen)
        # Step 4: the crash.
        proc.kill()
        proc.wait()
        how = "SIGKILL" if os.name == "posix" else "TerminateProcess"
        say(f"[4/5] Crash: the server flushed its log (last record: seq {report['last_seq']:,})")
        say(f"  and was killed with {how}: no close(), no final snapshot.")
    # Step 5: recovery in this process.
    started = time.perf_counter()
    board = open_board(path, fsync=fsync)
    recovery_s = time.perf_counter() - started
    assert isinstance(board, DurableLeaderboard)
    try:
        snap = report.get("snapshot_seq", 0)
        replayed = report["last_seq"] - snap
        source = f"the snapshot (seq {snap:,}) and " if snap else ""
        say(f"[5/5] Recovery: rankengine.open_board() took {recovery_s:.2f} s: it read")
        say(f"  {source}replayed {_count(replayed, 'log record')}.")
        digest = _digest(board)
        top = [(e.member, e.score) for e in board.top(TOP)]
        same_top = top == [tuple(row) for row in report["top"]]
        identical = digest == report["digest"] and len(board) == report["count"] and same_top
        mine = board.entry(report["member"])
        if identical:
            everyone = f"all {len(board):,} players" if len(board) != 1 else "its one player"
            say(f"  Standings identical to the server's: {everyone}, same")
            say(f"  scores, same ranks (sha256 {digest[:12]}...), same top {TOP}.")
        else:
            say(f"  MISMATCH: recovered standings differ from the server's ({digest[:12]}).")
        if mine is not None:
            say(
                f"  {report['member']}: rank {report['rank']:,} before the crash, "
                f"rank {mine.rank:,} after."
            )
    finally:
        board.close()
    size = _size(path)
    rate = events / report["play_s"] if events and report["play_s"] > 0 else 0.0
    say()
    say("Summary")
    if events:
        say(
            f"  score events    {events:,} in {report['play_s']:.2f} s = {rate:,.0f} events/s "
            "(each logged before it is applied)"
        )
    say(
        f"  rank look-up    {report['lookup_us']:.1f} us on average "
        f"({LOOKUPS:,} look-ups of random players)"
    )
    say(f"  recovery        {recovery_s:.2f} s for {players:,} players")
    kept = f"kept: try `rankengine inspect {path}`" if keep else "deleted (keep it with --dir)"
    say(f"  log directory   {size / 1e6:.1f} MB, {kept}")
    return DemoResult(
        players=players,
        events=events,
        events_per_s=rate,
        lookup_us=report["lookup_us"],
        recovery_s=recovery_s,
        identical=identical,
        directory=path,
    )


def _follow(
    messages: Iterator[dict[str, Any]], players: int, events: int, screen: _Screen
) -> dict[str, Any]:
    """Show the server's reports (steps 1 to 3); return what the last ones said."""
    say = screen.say
    report: dict[str, Any] = {"play_s": 0.0}
    marks = sorted(_quarters(events))
    shown_top: list[Any] = []
    for message in messages:
        kind = message["type"]
        if kind == "joined":
            say(
                f"[1/5] {players:,} players joined in {message['seconds']:.2f} s "
                "(one bulk write: one log record)."
            )
            if events:
                say(f"[2/5] Playing {events:,} score events (incr; a few players play most):")
        elif kind == "progress":
            done = message["done"]
            rate = done / message["seconds"] if message["seconds"] > 0 else 0.0
            status = f"  {_bar(done, events)}  {done:,} / {events:,} events  {rate:,.0f}/s"
            rows = [(i, m, s) for i, (m, s) in enumerate(message["top"], 1)]
            table = _table(f"  Top {TOP} after {_count(done, 'event')}", rows)
            if screen.live:
                screen.redraw([status, "", *table])
            elif done in marks:
                say(status)
                if done in (marks[len(marks) // 2 - 1], marks[-1]):  # halfway, the end
                    for line in table:
                        say(line)
            shown_top = message["top"]
        elif kind == "snapshot":
            if not screen.live:
                say(
                    f"  (snapshot at event {message['done']:,}, seq {message['seq']:,}, in "
                    f"{message['seconds']:.2f} s: a restart replays only the log after it)"
                )
            report["snapshot_seq"] = message["seq"]
            report["snapshot_s"] = message["seconds"]
        elif kind == "played":
            screen.settle()
            report["play_s"] = message["seconds"]
            if events:
                snap = report.get("snapshot_s")
                note = f"; one snapshot halfway took {snap:.2f} s more" if snap else ""
                say(
                    f"  {events:,} events in {message['seconds']:.2f} s = "
                    f"{events / max(message['seconds'], 1e-9):,.0f} events/s{note}."
                )
        elif kind == "lookup":
            say(
                f"[3/5] Rank look-ups: {message['us']:.1f} us each on average "
                f"({LOOKUPS:,} look-ups of random players)."
            )
            say(
                f"  {message['member']} has {message['score']:,} points: rank "
                f"{message['rank']:,} of {players:,}.  Around them:"
            )
            for line in _table("", [tuple(row) for row in message["around"]])[1:]:
                say(line)
            report.update(lookup_us=message["us"], member=message["member"], rank=message["rank"])
        elif kind == "ready":
            report.update(
                last_seq=message["last_seq"],
                count=message["count"],
                digest=message["digest"],
                top=message["top"] or shown_top,
            )
    if "digest" not in report:
        raise RuntimeError("the server stopped before reporting its standings")
    return report


if __name__ == "__main__":
    from rankengine.cli.main import main

    sys.exit(main(["demo", *sys.argv[1:]]))
