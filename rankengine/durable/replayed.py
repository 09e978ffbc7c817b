"""A snapshot built by replay in a fresh process: events are the truth.

A snapshot of the board at seq ``s`` is a function of the log: the
previous snapshot plus the records after it, up to ``s``.  Nothing needs
the live board to make it.  With ``snapshot_mode="replay"`` a compaction
therefore holds the board's lock only for the log rotation's switch (as
every mode does: segment ``s + 1`` takes the writes from then on); then,
once the rotation is durable, it starts a *fresh* Python process
(``sys.executable -m rankengine.durable.replayed``: ``subprocess`` starts it
with vfork or posix_spawn, so there is no page table to copy and no
copy-on-write fault, the two costs of ``snapshot_mode="fork"``).  The
child::

    parent (board's lock)   switch to segment s+1          ~0.1 ms
    parent (no lock)        fsync segment s.., manifest     (rotation.py)
    parent (no lock)        start the child, wait()         GIL let go
    child                   load snapshot p, replay segments p+1 .. s
                            (recovery.py, fold.py: the code every open runs)
                            check it ended exactly at s
                            write snap-s.snap.replay.tmp, fsync, exit 0
    parent (no lock)        rename it to snap-s.snap, fsync the directory,
                            swap the manifest (as the sliced path does)

The serving process spends no CPU on the snapshot itself: its compacting
thread sleeps in ``wait()`` (which lets go of the GIL).  The child runs on
another core when one is free, at a lower priority (:data:`CHILD_NICE`).
Its cost is the replay: a load of the previous snapshot plus
~650,000-900,000 records a second, and a second copy of the board's memory
while it runs.

What the child writes is the file the sliced export writes, byte for byte:
the header (seq, tie clock, time, creation time, settings) is the parent's,
taken under the lock at the switch, and the rows are the board's at ``s``
because an open rebuilds exactly that board from the same files
(``tests/test_replayed.py`` checks both over random histories).

Failures: a child that fails or is killed leaves the old snapshot in force
(the parent removes what it left, raises :class:`ReplaySnapshotError` from
``compact()``, or the background compactor warns), and the next compaction
retries.  The child never writes the manifest nor a name the manifest may
hold: its file ends in ``.tmp`` until the parent renames it, and an open
removes a ``.tmp`` file it finds.  It gives up once its parent is gone
(it looks between batches of records and pieces of the file).

Where no interpreter can be started (``sys.executable`` empty, as in some
embedded or frozen programs) ``snapshot_mode="replay"`` means slices.  The
default, ``snapshot_mode="auto"``, replays for a board of
:data:`AUTO_REPLAY_MEMBERS` members or more and reads a smaller one in
slices (:func:`snapshot_kind`).

Runtime complexity: O(1) under the board's lock; O(N + k) in the child
for N members and k records since the previous snapshot.

>>> REPLAY_MODULE
'rankengine.durable.replayed'
>>> ReplayJob("d", [], [("log-1.seg", 1)], {"seq": 0}, "d/s").part
'd/s.replay.tmp'
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any, Final

from rankengine.board.leaderboard import Leaderboard
from rankengine.durable.manifest import Manifest
from rankengine.durable.opening import resolve_config
from rankengine.durable.records import pack, unpack
from rankengine.durable.recovery import load_board
from rankengine.durable.snapshot import fsync_dir, write_snapshot_columns

__all__ = [
    "AUTO_REPLAY_MEMBERS",
    "CHILD_NICE",
    "REPLAY_AVAILABLE",
    "REPLAY_MODULE",
    "ReplayJob",
    "ReplaySnapshotError",
    "child_env",
    "child_failure",
    "child_start",
    "main",
    "replay_snapshot",
    "run_child",
    "snapshot_kind",
]

#: The module the child runs (``python -m``).
REPLAY_MODULE: Final = "rankengine.durable.replayed"
#: Whether a child interpreter can be started here; without one "replay"
#: falls back to slices.
REPLAY_AVAILABLE: Final = bool(sys.executable)
#: ``snapshot_mode="auto"`` replays for a board of at least this many
#: members, and reads a smaller one in slices: the sliced snapshot's CPU in
#: the serving process grows with N (about a second at 10**6 on a quiet
#: machine, several on a loaded one, and that is the durable board's tail;
#: docs/performance.md), while a child costs an interpreter's start and a
#: second copy of the board whatever N is.  At 10**5 a sliced snapshot is
#: ~0.1 s of CPU taken in 0.5 ms units.
AUTO_REPLAY_MEMBERS: Final = 100_000
#: The child's CPU priority (its ``nice`` value): it is background work, and
#: where the machine has no idle core the serving process should win.
CHILD_NICE: Final = 19
#: The child's exit code when its parent died before the snapshot was done.
CHILD_ORPHANED: Final = 71
#: The index the child rebuilds the board in, whatever the parent's: the
#: rows come out in the same key order from every index, and the sorted
#: list loads and exports a million rows several times faster than the
#: skip list.
CHILD_BACKEND: Final = "sortedlist"
#: The last characters of the child's error output quoted in the error.
ERROR_TAIL_CHARS: Final = 600


class ReplaySnapshotError(RuntimeError):
    """The replaying child did not write the snapshot (it failed or was
    killed); the previous snapshot stays in force."""


@dataclasses.dataclass(frozen=True)
class ReplayJob:
    """What the child replays: taken under the board's lock at the switch.

    :param directory: the board's directory
    :param snapshots: the manifest's snapshots ``(name, seq)``
    :param segments: its segments ``(name, first seq)`` up to the switch
        (sealed: none holds a record after ``header["seq"]``)
    :param header: the new snapshot's header (seq, clock, times, config)
    :param target: the snapshot file to make
    """

    directory: str
    snapshots: list[tuple[str, int]]
    segments: list[tuple[str, int]]
    header: dict[str, Any]
    target: str

    @property
    def part(self) -> str:
        """The file the child writes (renamed to :attr:`target` by the parent)."""
        return self.target + ".replay.tmp"

    def encode(self, parent: int) -> bytes:
        """The job as the child reads it on its standard input."""
        return pack(
            {
                "parent": parent,
                "directory": self.directory,
                "snapshots": [list(s) for s in self.snapshots],
                "segments": [list(s) for s in self.segments],
                "header": self.header,
                "part": self.part,
            }
        )


def snapshot_kind(mode: str, members: int, fork_available: bool) -> str:
    """How a compaction of a board of ``members`` makes its snapshot under
    ``snapshot_mode=mode``: ``"slices"``, ``"fork"`` or ``"replay"`` (a
    child that cannot be had here means slices).

    Runtime complexity: O(1)

    >>> snapshot_kind("auto", 10, True), snapshot_kind("auto", 10**6, True)
    ('slices', 'replay')
    >>> snapshot_kind("fork", 10, False)
    'slices'
    """
    if mode == "auto":
        mode = "replay" if members >= AUTO_REPLAY_MEMBERS else "slices"
    if mode == "replay" and not REPLAY_AVAILABLE:
        return "slices"
    if mode == "fork" and not fork_available:
        return "slices"
    return mode


def _child_env() -> dict[str, str]:
    """The parent's environment, with this rankengine first on the path: the
    child must run the same code (a program may import rankengine from a
    path the interpreter would not find by itself)."""
    env = dict(os.environ)
    # (this file is ROOT/rankengine/durable/replayed.py)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env


def child_env() -> dict[str, str]:
    """The environment a replaying child runs in: the parent's, with this
    rankengine first on the path.

    Runtime complexity: O(size of the environment)
    """
    return _child_env()


def run_child(module: str, payload: bytes, cleanup: Callable[[], None]) -> tuple[int, bytes, bytes]:
    """Run ``python -m module`` as background work (the idle class, see
    :func:`_background`) with rankengine first on its path, hand it
    ``payload`` on its standard input and wait for it (the GIL let go
    meanwhile); returns its exit code, standard output and standard error.
    Raises ``OSError`` when it cannot start.  If this thread is interrupted
    while it waits, the child is killed, ``cleanup()`` removes what it left
    and the interruption goes on.  The board's child and a ledger's
    (:mod:`rankengine.ledger.replayed`) both run this way.

    Runtime complexity: the child's run
    """
    proc = subprocess.Popen(
        [sys.executable, "-m", module],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_child_env(),
        close_fds=True,
    )
    _background(proc.pid)
    try:
        out, err = proc.communicate(payload)
    except BaseException:
        proc.kill()  # (this thread is interrupted: no child outlives the wait)
        proc.wait()
        cleanup()
        raise
    return proc.returncode, out, err


def child_failure(returncode: int, err: bytes) -> str:
    """How a failed child ended, with the tail of what it said on standard
    error, for the parent's error message.

    >>> child_failure(-9, b"")
    'the replaying child was killed by signal 9'
    >>> child_failure(1, b"the log ends early")
    'the replaying child exited with code 1 (it said: the log ends early)'

    Runtime complexity: O(ERROR_TAIL_CHARS)
    """
    if returncode < 0:
        how = f"was killed by signal {-returncode}"
    else:
        how = f"exited with code {returncode}"
    said = err.decode("utf-8", "replace").strip()[-ERROR_TAIL_CHARS:]
    return f"the replaying child {how}" + (f" (it said: {said})" if said else "")


def replay_snapshot(job: ReplayJob) -> int:
    """Run a child that writes the snapshot of ``job`` and wait for it (the
    GIL is let go while it runs); rename its file into place and return the
    size, or raise :class:`ReplaySnapshotError` after removing what it left.

    Runtime complexity: the child's run (see the module docstring)
    """
    try:
        code, _, err = run_child(REPLAY_MODULE, job.encode(os.getpid()), lambda: _remove(job.part))
    except OSError as exc:
        raise ReplaySnapshotError(
            f"{job.target}: could not start the replaying child ({exc}); "
            "the previous snapshot stays in force"
        ) from exc
    if code == 0:
        size = os.path.getsize(job.part)
        os.replace(job.part, job.target)
        fsync_dir(job.directory)
        return size
    _remove(job.part)
    failure = child_failure(code, err)
    raise ReplaySnapshotError(f"{job.target}: {failure}; the previous snapshot stays in force")


def _remove(path: str) -> None:
    for leftover in (path, path + ".tmp"):
        with contextlib.suppress(OSError):
            os.remove(leftover)


# ----------------------------------------------------------------------
# The child
# ----------------------------------------------------------------------
def _background(pid: int = 0) -> None:
    """Make process ``pid`` (0: this one) background work: the idle
    scheduling class where there is one (Linux's ``SCHED_IDLE``: it runs
    when a core has nothing else to run; measured at half the saturation
    rate on a loaded 2-core machine, a child at ``nice`` 10 still made the
    serving process fall behind by 1.3 s), else the lowest priority.

    The parent calls it on the child as soon as it is started, and the
    child on itself (in case the parent could not): the interpreter's start
    and the imports come before the child's own call, 150-260 ms of CPU
    (measured on a loaded machine) that ran at the serving process's
    priority.
    """
    if hasattr(os, "setpriority"):  # (POSIX only)
        with contextlib.suppress(OSError):  # (a child already gone, a refusal)
            os.setpriority(os.PRIO_PROCESS, pid, CHILD_NICE)
    idle = getattr(os, "SCHED_IDLE", None)
    if idle is not None:  # (Linux)
        with contextlib.suppress(OSError):
            os.sched_setscheduler(pid, idle, os.sched_param(0))


def child_start() -> tuple[dict[str, Any], Callable[[], None]]:
    """What a replaying child does first (the board's and a ledger's):
    read its job from standard input, check that its parent is still the
    process that asked, turn the collector off (a short-lived process: it
    would only rescan what it loads) and make itself background work.
    Returns the job and ``orphaned()``, which exits with
    :data:`CHILD_ORPHANED` once the parent is gone (call it between pieces
    of work).

    Runtime complexity: O(size of the job)
    """
    job: dict[str, Any] = unpack(sys.stdin.buffer.read())
    parent = int(job["parent"])

    def orphaned() -> None:
        if os.getppid() != parent:
            raise SystemExit(CHILD_ORPHANED)

    orphaned()
    gc.disable()
    _background()
    return job, orphaned


def main() -> int:
    """The child: read the job on standard input, replay, write the file.
    Returns the exit code (0: written; the error is on standard error).

    Runtime complexity: O(N + k), see the module docstring
    """
    job, orphaned = child_start()
    directory, header = str(job["directory"]), dict(job["header"])
    seq = int(header["seq"])
    manifest = Manifest(
        config=header["config"],
        snapshots=[(str(n), int(s)) for n, s in job["snapshots"]],
        segments=[(str(n), int(s)) for n, s in job["segments"]],
    )
    config = resolve_config(manifest.config, {}, directory)
    config["backend"] = CHILD_BACKEND
    board = Leaderboard(**config)
    progress: Callable[[str, int, int], None] = lambda *_: orphaned()  # noqa: E731
    if seq:  # (seq 0: a new board's snapshot, of no record: empty)
        loaded = load_board(board, directory, manifest, progress=progress, adopt=False)
        if loaded.last_seq != seq or loaded.torn is not None:
            torn = loaded.torn
            end = f"a torn record ({torn.reason})" if torn else f"seq {loaded.last_seq}"
            print(f"the log up to the switch ends at {end}, not at seq {seq}", file=sys.stderr)
            return 1
    orphaned()
    write_snapshot_columns(str(job["part"]), header, board._export_columns(), pause=orphaned)
    orphaned()
    return 0


if __name__ == "__main__":  # pragma: no cover -- the child process (tested by its files)
    sys.exit(main())
