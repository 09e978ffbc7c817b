"""A ledger's compaction built by replay in a fresh process: events are the truth.

A view's snapshot at seq ``s`` is a function of the log: its previous
snapshot plus the records after it, up to ``s``.  Nothing needs the live
views to make it, so with ``snapshot_mode="replay"`` a compaction holds the
ledger's lock only for the segment switch, and records go on meanwhile (as
the durable board's does, :mod:`rankengine.durable.replayed`)::

    parent (ledger's lock)  seal the active segment at s, segment s+1
                            takes the writes (listed in the manifest);
                            the job: directory, views' specs and
                            snapshots, the sealed segments, the time at s
    parent (no lock)        start the child, wait()          GIL let go
    child                   restore each view from its snapshot, replay
                            the sealed segments up to s (restore.py,
                            fold.py: the code every open runs), check it
                            ended exactly at s, write every view's parts
                            as views/<view>/r<s>-<n>.snap.tmp, fsync, exit 0
    parent (no lock)        rename them (drop ".tmp"), fsync the directories
    parent (ledger's lock)  name them in the manifest (views still
                            registered as they were), commit, remove the
                            files it no longer names, drop the segments
                            before s (unless retain_log)

The child opens the ledger's files read-only: it takes no directory lock,
never writes the manifest, and its files end in ``.tmp`` under a prefix
(:data:`REPLAY_PREFIX`) an in-process snapshot never uses, so no name it
writes is one the manifest holds.  A closed period that was never loaded
is its file copied under the new header, as in-process; the parent's
unloaded board then loads from the copy.  It gives up once its parent is
gone (:data:`~rankengine.durable.replayed.CHILD_ORPHANED`), and it runs as
background work (the idle class, else ``nice`` 19).

Failures: a child that fails or is killed leaves the old snapshots in force
(the parent removes what it left and raises :class:`ReplayCompactionError`
from ``compact()``, or the background compaction warns); the next
compaction makes them.  An open removes a ``.tmp`` file it finds (every
file of ``views/`` the manifest does not name).

What it costs: the child's interpreter start and imports (~0.2 s of CPU,
on another core when one is free), the load of the previous snapshots and
the replay (0.5-0.8 s of CPU in all for four views of 10,000 players and
1 MiB of log; docs/ledger.md), and a second copy of the views' memory
while it runs.  In-process, the compaction encodes the live views under the lock,
and every record waits for it.  :func:`compaction_kind` says which a
compaction is: ``"auto"`` (the default) replays once the views hold
:data:`AUTO_REPLAY_ROWS` rows; a ledger with a Redis view (its shadow is
attached to the live server) and a program that cannot start an
interpreter (``sys.executable`` empty) compact in-process whatever the mode.

Runtime complexity: under the lock, the switch (an fsync of the sealed
segment and the manifest's, as every compaction); in the child O(N + k)
for N rows and k records since the previous snapshots.

>>> compaction_kind("auto", 10, redis=False), compaction_kind("replay", 10, redis=True)
('in-process', 'in-process')
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import resource
import sys
from collections.abc import Mapping
from typing import Any, Final, Literal, get_args

from rankengine.durable.manifest import Manifest
from rankengine.durable.records import crash_point, pack, unpack
from rankengine.durable.replayed import (
    REPLAY_AVAILABLE,
    child_failure,
    child_start,
    run_child,
)
from rankengine.durable.snapshot import fsync_dir
from rankengine.ledger.fold import replay_log
from rankengine.ledger.restore import restore_views
from rankengine.ledger.storage import VIEWS_DIR, LogTail, write_view_parts
from rankengine.timed.lazy import Unloaded

__all__ = [
    "AUTO_REPLAY_ROWS",
    "IN_PROCESS",
    "REPLAY",
    "REPLAY_MODULE",
    "REPLAY_PREFIX",
    "LedgerReplayJob",
    "ReplayCompactionError",
    "SnapshotMode",
    "check_snapshot_mode",
    "compaction_kind",
    "main",
    "rename_replayed",
    "run_replay",
]

#: The module the child runs (``python -m``).
REPLAY_MODULE: Final = "rankengine.ledger.replayed"
#: How a ledger makes its views' snapshots (see :func:`compaction_kind`).
SnapshotMode = Literal["auto", "replay", "in-process"]
#: The two kinds of compaction.
REPLAY: Final = "replay"
IN_PROCESS: Final = "in-process"
#: The first letter of the files the child writes: an in-process snapshot's
#: are ``s<seq>-<n>.snap`` (storage.SNAP_PREFIX), so a view re-registered
#: and saved at the same seq while the child runs never shares a name with
#: the child's files.
REPLAY_PREFIX: Final = "r"
#: ``snapshot_mode="auto"`` replays once the views hold this many rows in
#: all (the boards' members, summed over views).  Measured with
#: bench/ledger.py's lag round (four views of 10,000 players, ~30,000
#: rows): an in-process compaction took 17-32 ms, all of it under the lock
#: (0.6-1.1 us a row), with 161-534 records held back; 5,000 rows hold
#: records ~5 ms, the loop's lag target (docs/asyncio.md).  A child costs
#: 0.5-0.8 s of CPU on another core at that size (its interpreter's start
#: and imports ~0.2 s of it) and the views' memory again, whatever the
#: lock would have cost: below the threshold the hold is the cheaper.
AUTO_REPLAY_ROWS: Final = 5_000


class ReplayCompactionError(RuntimeError):
    """The replaying child did not write the views' snapshots (it failed or
    was killed); the previous snapshots stay in force."""


def check_snapshot_mode(mode: object) -> None:
    """Raise ``ValueError`` unless ``mode`` is a :data:`SnapshotMode`.

    Runtime complexity: O(1)

    >>> check_snapshot_mode("fork")
    Traceback (most recent call last):
    ...
    ValueError: snapshot_mode must be one of ('auto', 'replay', 'in-process'), not 'fork'
    """
    if mode not in get_args(SnapshotMode):
        raise ValueError(f"snapshot_mode must be one of {get_args(SnapshotMode)}, not {mode!r}")


def compaction_kind(mode: str, rows: int, *, redis: bool) -> str:
    """How a compaction of views holding ``rows`` rows makes the snapshots
    under ``snapshot_mode=mode``: :data:`REPLAY` or :data:`IN_PROCESS`
    (``redis``: a view is a Redis view; or no interpreter to start: in-process).

    Runtime complexity: O(1)

    >>> compaction_kind("auto", 10**6, redis=False) == REPLAY or not REPLAY_AVAILABLE
    True
    """
    if mode == "auto":
        mode = REPLAY if rows >= AUTO_REPLAY_ROWS else IN_PROCESS
    if mode != REPLAY or redis or not REPLAY_AVAILABLE:
        return IN_PROCESS
    return REPLAY


@dataclasses.dataclass(frozen=True)
class LedgerReplayJob:
    """What the child replays: taken under the ledger's lock at the switch.

    :param directory: the ledger's directory
    :param seq: the seq the snapshots are made at (the last of the sealed segments)
    :param time_ms: the ledger's clock at ``seq``
    :param config: the manifest's config with only the views to snapshot
        (their specs and snapshot entries)
    :param segments: the manifest's segments up to the switch ``(name, first seq)``
    """

    directory: str
    seq: int
    time_ms: int
    config: dict[str, Any]
    segments: list[tuple[str, int]]

    def encode(self, parent: int) -> bytes:
        """The job as the child reads it on its standard input."""
        return pack(
            {
                "parent": parent,
                "directory": self.directory,
                "seq": self.seq,
                "time_ms": self.time_ms,
                "config": self.config,
                "segments": [list(s) for s in self.segments],
            }
        )

    def view_dir(self, view: str) -> str:
        """The directory of ``view``'s files."""
        return os.path.join(self.directory, VIEWS_DIR, view)

    def remove_temporary(self) -> None:
        """Remove the files a child of this job left (named nowhere)."""
        mark = f"{REPLAY_PREFIX}{self.seq:020d}-"
        for view in self.config["views"]:
            with contextlib.suppress(OSError):
                for name in os.listdir(self.view_dir(view)):
                    if name.startswith(mark) and name.endswith(".tmp"):
                        with contextlib.suppress(OSError):
                            os.remove(os.path.join(self.view_dir(view), name))


def run_replay(job: LedgerReplayJob) -> dict[str, Any]:
    """Run a child that writes the views' snapshots of ``job`` and wait for
    it (the GIL let go while it runs).  Returns its report: ``files``
    (view -> the ``[key, name]`` list to name), ``moved`` (view -> {old
    file: index of its copy}), ``cpu_s`` and ``maxrss_kb`` (the child's own
    CPU time and peak memory); or raises :class:`ReplayCompactionError`
    after removing what it left.

    Runtime complexity: the child's run (see the module docstring)
    """
    try:
        code, out, err = run_child(REPLAY_MODULE, job.encode(os.getpid()), job.remove_temporary)
    except OSError as exc:
        raise ReplayCompactionError(
            f"{job.directory}: could not start the replaying child ({exc}); "
            "the previous snapshots stay in force"
        ) from exc
    if code == 0:
        try:
            report: dict[str, Any] = unpack(out)
            return report
        except Exception as exc:  # (msgpack raises several types)
            err += f"\nits report did not decode ({exc})".encode()
    job.remove_temporary()
    failure = child_failure(code, err)
    raise ReplayCompactionError(f"{job.directory}: {failure}; the previous snapshots stay in force")


def rename_replayed(job: LedgerReplayJob, files: Mapping[str, list[list[Any]]]) -> None:
    """Give the child's files their names (``.tmp`` dropped) and fsync each
    view's directory: still named by no manifest until the caller commits.

    Runtime complexity: O(files)
    """
    for view, listed in files.items():
        directory = job.view_dir(view)
        for _key, name in listed:
            os.replace(os.path.join(directory, name + ".tmp"), os.path.join(directory, name))
        fsync_dir(directory)


# ----------------------------------------------------------------------
# The child
# ----------------------------------------------------------------------
def main() -> int:
    """The child: read the job on standard input, restore and replay the
    views, write their files, print the report.  Returns the exit code (0:
    written; else the error is on standard error).

    Runtime complexity: O(N + k), see the module docstring
    """
    job, orphaned = child_start()
    directory, seq, time_ms = str(job["directory"]), int(job["seq"]), int(job["time_ms"])
    config = dict(job["config"])
    segments = [(str(n), int(s)) for n, s in job["segments"]]
    views, start_ms = restore_views(directory, config, [])
    start = min((v.seq for v in views.values()), default=seq)
    now = start_ms.get(start, 0)
    if start < seq:
        tail = LogTail()
        tail.last_seq = start
        manifest = Manifest(config=config, snapshots=[], segments=segments)
        now = replay_log(directory, manifest, start, tail, views=views.values(), time_ms=now)
        if tail.last_seq != seq or tail.torn is not None:
            torn = tail.torn
            end = f"a torn record ({torn.reason})" if torn else f"seq {tail.last_seq}"
            print(f"the log up to the switch ends at {end}, not at seq {seq}", file=sys.stderr)
            return 1
    if now != time_ms and start < seq:
        print(f"the replay ends at time {now}, the ledger's is {time_ms}", file=sys.stderr)
        return 1
    orphaned()
    files: dict[str, list[list[Any]]] = {}
    moved: dict[str, dict[str, int]] = {}
    for name, view in views.items():
        parts = view.export_lazy()
        moved[name] = {
            os.path.basename(board.path): n
            for n, (_key, (_part, board)) in enumerate(parts)
            if isinstance(board, Unloaded)
        }
        where = os.path.join(directory, VIEWS_DIR, name)
        files[name] = write_view_parts(
            where, name, seq, time_ms, parts, prefix=REPLAY_PREFIX, suffix=".tmp", pause=orphaned
        )
        crash_point("ledger_replay_child")  # (tests: a child killed mid-way)
        orphaned()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    report = {
        "files": files,
        "moved": moved,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "maxrss_kb": usage.ru_maxrss,
    }
    sys.stdout.buffer.write(pack(report))
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":  # pragma: no cover -- the child process (tested by its files)
    sys.exit(main())
