"""Crash tests of the durable time-based boards with real processes.

A child (tests/crash_time_child.py) writes a seeded history to a durable
periodic, decayed or sliding-window board on a simulated clock, so that
periods roll over (new period directory, close callback, closed marker,
archive, drop) and decayed boards re-base (new epoch directory under a
temporary name, rename, delete the old one) every few writes.  It is
killed with SIGKILL at each named step of those operations, or at random
moments.  The parent reopens the directory without any help and checks it
against an in-memory twin fed the same writes: every acknowledged write is
there (the one in flight may or may not be), nothing half-done is visible
(one base, no period both open and closed, no archive lost, no leftovers),
every closed period's callback ran at least once with its final standings,
and every board directory verifies healthy or with a torn tail only.
"""

from __future__ import annotations

import ast
import os
import random
import signal
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import pytest

from rankengine.durable.manifest import verify

sys.path.insert(0, str(Path(__file__).parent))
from acked_child import AckedChild
from crash_time_child import apply, memory_board, moment, open_board, operation

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")

CHILD = Path(__file__).with_name("crash_time_child.py")
ROOT = Path(__file__).resolve().parent.parent

#: Creating a period's (or an epoch's) durable board.
CREATION_STEPS = ["after_create_segment", "create_manifest_rename", "after_create_manifest"]
#: Every named step of a period rollover (see docs/durability.md).
ROLLOVER_STEPS = [
    "after_close_callback",
    "after_close_marker",
    "archive_rename",
    "after_archive",
    "after_drop_rename",
    "after_period_removal",
]
#: Every named step of a re-base of a durable decayed board.
REBASE_STEPS = ["epoch_rename", "after_epoch_rename", "old_epoch_removal"]

CASES = (
    [("periodic", step) for step in CREATION_STEPS + ROLLOVER_STEPS]
    + [("decayed", step) for step in CREATION_STEPS + REBASE_STEPS]
    + [("window", step) for step in ["after_create_segment", *ROLLOVER_STEPS[1:]]]
)
#: Writes acknowledged before the crash point is armed: a few rollovers
#: (or re-bases) have already happened by then.
ARM_AT = 20


class Child(AckedChild):
    """A running crash_time_child.py whose stdout is drained by a thread."""

    def __init__(
        self, kind: str, directory: Path, seed: int, ops: int, step: str | None = None
    ) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        env.pop("RANKENGINE_CRASH_AT", None)
        argv = [sys.executable, str(CHILD), kind, str(directory), str(seed), str(ops)]
        if step is not None:
            argv += [str(ARM_AT), step]
        super().__init__(argv, env)

    def acked(self) -> int:
        """Index of the last acknowledged write (-1 if none)."""
        last = -1
        for line in self.lines:
            parts = line.split()
            if len(parts) == 2 and parts[0] == "ack" and line.endswith("\n"):
                last = int(parts[1])
        return last

    def callbacks(self) -> list[tuple[str, Any]]:
        """``(period name, final standings)`` of every close callback that completed."""
        found = []
        for line in self.lines:
            if line.startswith("closed ") and line.endswith("\n"):
                _, name, items = line.rstrip("\n").split(" ", 2)
                found.append((name, ast.literal_eval(items)))
        return found


def board_state(board: Any) -> tuple[Any, ...]:
    """Rows, metadata and tie clock of one leaderboard."""
    items = board.items()
    return (items, [board.meta(m) for m, _ in items], board.clock)


def periodic_state(board: Any) -> tuple[Any, ...]:
    """Everything a recovered periodic board must agree on with its twin."""
    periods = board.periods()
    return (
        [(p.name, board.is_open(p), board_state(board.board(p))) for p in periods],
        sorted(board._closed),
        [(name, board_state(board.load_archived(name))) for name in board.archived()],
    )


def state(kind: str, board: Any) -> tuple[Any, ...]:
    if kind == "periodic":
        return periodic_state(board)
    if kind == "window":
        board.refresh()
        # The window board is derived (a reopen rebuilds it in one refresh):
        # members with equal totals may come out in another order.
        totals = sorted((repr(m), s, repr(board.board.meta(m))) for m, s in board.items())
        return (totals, periodic_state(board.buckets))
    return (board.t0, board_state(board.board))


def twin(kind: str, ops: list[tuple[str, Any]], n: int, at: float, tmp: Path) -> tuple[Any, list]:
    """An in-memory board fed the first ``n`` writes, advanced to ``at``;
    and the close callbacks it made."""
    now = [moment(0)]
    calls: list[tuple[str, Any]] = []
    archive = tmp / f"twin-archive-{n}"
    extra: dict[str, Any] = {}
    if kind == "periodic":
        extra["on_close"] = lambda p, b: calls.append((p.name, b.items()))
    board = memory_board(kind, lambda: now[0], str(archive) if kind != "decayed" else None, **extra)
    for i in range(n):
        now[0] = moment(i)
        apply(board, ops[i])
    now[0] = at
    if kind != "decayed":
        board.periods() if kind == "periodic" else board.refresh()
    return board, calls


def check_recovery(kind: str, directory: Path, seed: int, child: Child, tmp: Path) -> None:
    """Reopen ``directory`` as the child left it and compare with the twins
    fed every acknowledged write (and, or not, the one in flight)."""
    verify_boards(kind, directory)  # as the kill left them, before any reopen
    last = child.acked()
    rng = random.Random(seed)
    ops = [operation(rng, i) for i in range(last + 2)]
    at = moment(last + 1)  # the latest time the child can have read
    recovered_calls: list[tuple[str, Any]] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a torn tail is allowed (and reported)
        recovered = open_board(
            kind,
            str(directory),
            lambda: at,
            fsync="never",
            on_close=lambda p, b: recovered_calls.append((p.name, b.items())),
        )
    try:
        recovered._check()
        got = state(kind, recovered)
        recovered._check()
        candidates = []
        for n in (last + 1, last + 2):
            reference, calls = twin(kind, ops, n, at, tmp)
            if kind == "decayed" and recovered.t0 > reference.t0:
                # killed after the re-base of the write in flight was in place
                reference.rebase(recovered.t0)
            candidates.append((state(kind, reference), calls))
        assert got in [c[0] for c in candidates], (got, [c[0] for c in candidates])
        if kind == "periodic":
            expected = dict(candidates[0][1])
            made = child.callbacks() + recovered_calls
            # at least once, with the final standings, and only for closed periods
            assert {name for name, _ in made} == set(expected), (made, expected)
            for name, items in made:
                assert items == expected[name], (name, items, expected[name])
            for name in expected:
                assert sum(n == name for n, _ in made) <= 2, (name, made)
    finally:
        recovered.close()
    check_directory(kind, directory)
    # the directory keeps working: reopen, write, close, reopen
    later = moment(last + 40)
    board = open_board(kind, str(directory), lambda: later, fsync="always")
    try:
        if kind == "decayed":
            board.add("after", 1)
        else:
            board.incr("after", 1)
        board._check()
    finally:
        board.close()
    board = open_board(kind, str(directory), lambda: later, fsync="always")
    try:
        board._check()
        assert board.score("after") == 1
    finally:
        board.close()
    check_directory(kind, directory)


def verify_boards(kind: str, directory: Path) -> None:
    """Every board directory verifies healthy, or with a torn tail only."""
    if kind == "decayed":
        boards = list(directory.glob("epoch-*"))
    else:
        boards = [p for p in (directory / "periods").iterdir() if not p.name.startswith(".")]
    for path in boards:
        if not any(path.iterdir()):
            continue  # killed between making the directory and locking it: no board yet
        report = verify(str(path))
        assert not report.damaged and not report.history_damaged, [str(f) for f in report.findings]
        assert all(f.severity in ("torn", "note") for f in report.findings)


def check_directory(kind: str, directory: Path) -> None:
    """No leftovers, and every board directory verifies healthy (or torn only)."""
    if kind == "decayed":
        assert not list(directory.glob(".tmp-epoch-*"))
        assert len(list(directory.glob("epoch-*"))) == 1  # one base, never two
    else:
        names = {p.name for p in (directory / "periods").iterdir()}
        assert not [n for n in names if n.startswith(".")], names
        markers = {p.name for p in (directory / "closed").iterdir()}
        assert markers <= names, f"closed markers of periods that are gone: {markers - names}"
        archive = {p.name for p in (directory / "archive").iterdir()}
        assert not [n for n in archive if n.startswith(".")], archive
    verify_boards(kind, directory)


@pytest.mark.parametrize(("kind", "step"), CASES)
def test_kill_at_each_step_of_a_rollover_or_rebase(tmp_path: Path, kind: str, step: str) -> None:
    directory = tmp_path / "board"
    seed = CASES.index((kind, step)) + 101
    child = Child(kind, directory, seed, ops=60, step=step)
    code = child.finish()
    assert code == -signal.SIGKILL, f"the child never reached {step}: {child.lines[-2:]}"
    assert child.acked() >= ARM_AT
    check_recovery(kind, directory, seed, child, tmp_path)


@pytest.mark.parametrize("kind", ["periodic", "decayed", "window"])
def test_sigkill_at_random_moments(tmp_path: Path, kind: str) -> None:
    rng = random.Random(kind)
    for round_number in range(4):
        directory = tmp_path / f"board-{round_number}"
        seed = rng.randrange(1 << 30)
        child = Child(kind, directory, seed, ops=100_000)
        assert child.first_ack.wait(timeout=60), "child never acknowledged a write"
        time.sleep(rng.uniform(0.0, 0.3))
        child.proc.send_signal(signal.SIGKILL)
        code = child.finish()
        assert code == -signal.SIGKILL, (round_number, code, child.lines[-3:])
        check_recovery(kind, directory, seed, child, tmp_path / f"twin-{round_number}")


@pytest.mark.parametrize("kind", ["periodic", "decayed", "window"])
def test_child_runs_to_completion_without_a_kill(tmp_path: Path, kind: str) -> None:
    directory = tmp_path / "board"
    child = Child(kind, directory, 5, ops=40)
    assert child.finish() == 0
    assert child.lines[-1] == "done\n"
    check_recovery(kind, directory, 5, child, tmp_path)
