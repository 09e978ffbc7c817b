"""Crash tests of the ledger with real processes: SIGKILL a recorder, reopen.

``ledger_child.py`` records events into a ledger with eight views under
one fsync policy and prints each acknowledged record.  The parent kills
it at a random moment (compactions included: the threshold is small),
reopens the directory and checks that

* the log ends at the last acknowledged record, or one past it (the
  record in flight when the child died may have reached the disk);
* every view reflects exactly that prefix of the log (``_check()``: no
  view ahead of another) and equals a ledger in memory fed the same
  events directly.

Then the same directory is handed to the next child, which goes on from
the recovered seq, so later rounds also crash on top of recovered state.

A forget killed at each of its steps leaves the old history (the member in
every view) or the new one (in none), never a mix, and no staged file.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
from acked_child import AckedChild
from ledger_child import add_views, apply, events, state

from rankengine import Ledger

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")

CHILD = Path(__file__).with_name("ledger_child.py")
ROOT = Path(__file__).resolve().parent.parent
SEED = 7
OPS = 100_000
#: Small enough that a compaction (a snapshot of every view) comes every
#: few hundred records, so kills land inside some of them.
COMPACT_BYTES = 30_000


def start(directory: Path, fsync: str) -> AckedChild:
    """A child recording under ``fsync`` (``"always-async"``: under
    ``"always"``, from a coroutine through an ``AsyncLedger``)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests")]))
    env.pop("RANKENGINE_CRASH_AT", None)
    policy, _, mode = fsync.partition("-")
    argv = [sys.executable, str(CHILD), str(directory), str(SEED), str(OPS), policy]
    return AckedChild([*argv, str(COMPACT_BYTES), *([mode] if mode else [])], env)


def last_ack(child: AckedChild) -> int:
    """The seq of the last acknowledged record (0: none)."""
    seq = 0
    for line in child.lines:
        parts = line.split()
        if len(parts) == 3 and parts[0] == "ack" and line.endswith("\n"):
            seq = int(parts[2])
    return seq


def expected_state(seq: int) -> dict[str, object]:
    """The views after the first ``seq`` records, fed in memory."""
    model = Ledger()
    add_views(model)
    for i in range(seq):
        apply(model, events(SEED, i))
    return state(model)


@pytest.mark.slow
@pytest.mark.parametrize("fsync", ["always", "everysec", "never", "always-async"])
def test_sigkill_loses_no_acknowledged_event_and_no_view_runs_ahead(
    tmp_path: Path, fsync: str
) -> None:
    rounds = int(os.environ.get("RANKENGINE_CRASH_ROUNDS", "6"))
    rng = random.Random(hash(fsync) % 1000)
    directory = tmp_path / "ledger"
    acked = 0
    for round_number in range(rounds):
        child = start(directory, fsync)
        assert child.first_ack.wait(60), child.lines[-3:]
        time.sleep(rng.uniform(0.05, 0.6))
        child.proc.send_signal(signal.SIGKILL)
        code = child.finish()
        assert code == -signal.SIGKILL, (round_number, code, child.lines[-3:])
        acked = max(acked, last_ack(child))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a torn tail is allowed (and reported)
            recovered = Ledger.open(directory, fsync="never", compact_min_bytes=None)
        try:
            recovered._check()  # every view at the ledger's seq, every board's invariants
            seq = recovered.last_seq
            assert acked <= seq <= acked + 1, (round_number, acked, seq)
            assert state(recovered) == expected_state(seq), round_number
        finally:
            recovered.close()
        acked = seq


FORGET_CHILD = """
import sys
from rankengine import Ledger
ledger = Ledger.open(sys.argv[1], compact_min_bytes=None)
ledger.forget("secret")
print("forgot", flush=True)
"""


@pytest.mark.parametrize(
    ("step", "gone"),
    [
        ("forget_stage", False),
        ("forget_journal_rename", False),
        ("after_forget_journal", True),
        ("forget_rename", True),
    ],
)
def test_a_kill_during_forget_leaves_the_old_history_or_the_new(
    tmp_path: Path, step: str, gone: bool
) -> None:
    directory = tmp_path / "ledger"
    with Ledger.open(directory, compact_min_bytes=None) as ledger:
        add_views(ledger)
        for i in range(40):
            apply(ledger, events(SEED, i))
            ledger.record("secret", 3, t_ms=events(SEED, i)[0]["t_ms"], attrs={"region": "eu"})
            if i == 20:
                ledger.compact()  # snapshots that hold the member too
    env = dict(os.environ, PYTHONPATH=str(ROOT), RANKENGINE_CRASH_AT=step)
    child = subprocess.run(
        [sys.executable, "-c", FORGET_CHILD, str(directory)], env=env, check=False
    )
    assert child.returncode == -signal.SIGKILL, step
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the open says it finished or dropped the forget
        recovered = Ledger.open(directory, compact_min_bytes=None)
    with recovered:
        recovered._check()
        assert ("secret" not in recovered["alltime"]) is gone
        assert ("secret" not in recovered["by_region"]["eu"]) is gone
    leftovers = [
        p for p in directory.rglob("*") if p.name.endswith(".forget") or p.name == "FORGET"
    ]
    assert leftovers == []
