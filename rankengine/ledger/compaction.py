"""A ledger's compaction: every view's snapshot at a seq, and a new segment.

Two ways to make the snapshots (:func:`~rankengine.ledger.replayed.compaction_kind`):

* **in-process** (:func:`compact_in_process`): under the ledger's lock,
  every view whose snapshot is not of the current seq is encoded from the
  live view and written, then the log rolls to a new segment and the
  manifest names the snapshots; records wait for all of it.
* **replay** (:func:`switch`, then :func:`finish_replay`): under the lock
  only the switch -- the active segment sealed at ``s``, segment ``s+1``
  created (not fsynced) and taking the writes -- and the job taken; after
  the lock, the rotation's fsyncs (old segment, new segment, directory,
  manifest: :meth:`~rankengine.ledger.storage.LedgerFiles.finish_rotation`,
  the durable board's design, :mod:`rankengine.durable.rotation`), then a
  child process rebuilds the
  views at ``s`` from their snapshots and the sealed segments
  (:mod:`rankengine.ledger.replayed`) while records go on; the parent
  renames the child's files, then names them for the views still
  registered as they were: under the lock in memory only, a copy of the
  manifest taken (numbered); after it the copy written, unless a manifest
  written meanwhile (under the lock, so after the change) holds a later
  one; only then, under the lock again, the views repointed and the files
  no longer named removed, and the segments before ``s`` (without
  ``retain_log``, listed no more in the same manifest) after it.

Crash-safety (``RANKENGINE_CRASH_AT`` steps, ``tests/test_ledger_replay.py``):
``ledger_replay_switched`` (sealed; the old snapshots named, the new
segment not yet: the next open adopts it, as after a crash at the
rotation's own steps ``after_segment_create``, ``after_old_segment_sync``,
``after_new_segment_sync``, ``rotate_manifest_rename``; see
``tests/test_ledger_rotation.py``), ``ledger_replay_child`` (in the child, after a view's files),
``ledger_replay_written`` and ``ledger_replay_renamed`` (files the
manifest does not name: the next open removes them),
``ledger_replay_copied`` (named in memory, the manifest not written: it
names the old snapshots, still on disk), ``ledger_replay_named`` (the new
snapshots named; old files and segments not removed yet: the next open or
compaction removes them).  At each, a
reopen restores every view from the snapshots the manifest names and
replays the log after them.

Runtime complexity: in-process O(N) under the lock for N rows (and the
roll's fsyncs); replay O(views) under the lock for the switch (no fsync),
O(views + parts) for the naming (no fsync), O(files) to remove the old ones
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import os
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from rankengine.durable.records import crash_point
from rankengine.durable.snapshot import fsync_dir
from rankengine.ledger.redis_view import RedisAdapter
from rankengine.ledger.replayed import (
    IN_PROCESS,
    REPLAY,
    LedgerReplayJob,
    compaction_kind,
    rename_replayed,
    run_replay,
)
from rankengine.ledger.views import View
from rankengine.timed.lazy import Unloaded

if TYPE_CHECKING:
    from rankengine.durable.manifest import Manifest
    from rankengine.ledger.ledger import Ledger

__all__ = [
    "CompactionReport",
    "compact_due",
    "compact_in_process",
    "finish_replay",
    "finish_switched",
    "kind_of",
    "rows_of",
    "switch",
]


@dataclasses.dataclass(frozen=True)
class CompactionReport:
    """What the last compaction did (``Ledger.last_compaction``).

    :param kind: ``"in-process"`` or ``"replay"``
    :param seq: the seq its snapshots reflect
    :param wall_s: its wall time (in-process: all of it under the lock)
    :param child_cpu_s: the child's CPU time (user + system; 0 in-process)
    :param child_maxrss_kb: the child's peak resident memory (0 in-process)
    """

    kind: str
    seq: int
    wall_s: float
    child_cpu_s: float = 0.0
    child_maxrss_kb: int = 0


def rows_of(views: Iterable[View]) -> int:
    """The rows the views hold (members of the boards that count them; a
    closed period not loaded counts none): what ``"auto"`` looks at.

    Runtime complexity: O(boards)
    """
    rows = 0
    for view in views:
        for adapter in view.adapters.values():
            with contextlib.suppress(TypeError):
                rows += len(adapter.board)
    return rows


def kind_of(mode: str, views: Mapping[str, View]) -> str:
    """How a compaction of ``views`` under ``snapshot_mode=mode`` goes
    (:func:`~rankengine.ledger.replayed.compaction_kind`).

    Runtime complexity: O(boards)
    """
    redis = any(
        isinstance(a, RedisAdapter) for view in views.values() for a in view.adapters.values()
    ) or any(view.kind == "redis" for view in views.values())
    if mode == IN_PROCESS or redis:
        return IN_PROCESS
    return compaction_kind(mode, rows_of(views.values()) if mode == "auto" else 0, redis=False)


def compact_in_process(ledger: Ledger, pause: Callable[[], None] | None) -> int:
    """Snapshot every view from the live views and roll the log (the caller
    holds the compaction lock and the ledger's lock).

    Runtime complexity: O(N) over the views' rows
    """
    files = ledger._files
    assert files is not None
    started = time.perf_counter()
    seq = ledger._seq
    ledger._compact_asked = False
    config = files.manifest.config
    stale = {name: entry[0] for name, entry in config["snapshots"].items()}
    for view in ledger._views.values():
        if stale.get(view.name) != seq:
            ledger._save_view(view, pause)
    if files.manifest.segments[-1][1] <= seq:
        files.roll(seq + 1)  # writes the manifest, naming the snapshots
    else:
        files.commit()
    files.remove_unlisted()
    if not ledger._retain:
        files.drop_segments_before(seq)
    ledger.last_compaction = CompactionReport(IN_PROCESS, seq, time.perf_counter() - started)
    return seq


def compact_due(ledger: Ledger) -> None:
    """The active segment crossed ``compact_min_bytes`` (the caller, a
    write, holds the ledger's lock): hand the compaction to
    ``ledger.compact_elsewhere``, or make it here -- in-process whole, or
    only the replay's switch, the rest on a background thread (a failure
    there warns; the next compaction retries).  Once asked, later writes
    leave it until a compaction runs.

    Runtime complexity: as :func:`compact_in_process`, or :func:`switch`
    """
    elsewhere = ledger.compact_elsewhere
    if elsewhere is not None and elsewhere():
        ledger._compact_asked = True
        return
    lock = ledger._compact_lock
    if not lock.acquire(blocking=False):  # (one runs: its end clears the ask)
        ledger._compact_asked = True
        return
    handed = False
    try:
        if kind_of(ledger._mode, ledger._views) == IN_PROCESS:
            ledger._due_thread = threading.get_ident()  # (compact() finds its lock taken)
            try:
                ledger.compact(kind=IN_PROCESS)
            finally:
                ledger._due_thread = None
            return
        switched = switch(ledger)
        if switched is None:
            return
        ledger._compact_asked = True
        thread = threading.Thread(
            target=_finish_in_background,
            args=(ledger, *switched),
            name="rankengine-ledger-compact",
            daemon=True,
        )
        ledger._compactor = thread
        try:
            thread.start()
            handed = True
        except RuntimeError as exc:  # out of threads: the write is logged, it must not fail
            ledger._compactor = None
            ledger._compact_asked = ledger._replaying = False
            files = ledger._files
            assert files is not None
            with contextlib.suppress(Exception):  # (a failure fails the ledger: warned below)
                files.finish_rotation()  # (here, under the lock: no thread to run it)
            warnings.warn(
                f"{ledger.path}: background compaction could not start: {exc}",
                RuntimeWarning,
                stacklevel=1,
            )
    finally:
        if not handed:
            lock.release()


def _finish_in_background(ledger: Ledger, job: LedgerReplayJob, views: dict[str, View]) -> None:
    """The background half of a write's replayed compaction."""
    try:
        finish_replay(ledger, job, views)
    except Exception as exc:
        warnings.warn(
            f"{ledger.path}: background compaction failed: {exc}", RuntimeWarning, stacklevel=1
        )
    finally:
        ledger._compactor = None
        ledger._compact_lock.release()


def switch(ledger: Ledger) -> tuple[LedgerReplayJob, dict[str, View]] | None:
    """Seal the active segment at the current seq ``s`` (segment ``s+1``
    takes the writes, the in-memory manifest lists it; the rotation's
    fsyncs are :func:`finish_replay`'s, after the lock) and return the
    child's job and the views it snapshots; None when every view's
    snapshot is of ``s`` already.  The caller holds the compaction lock and
    the ledger's lock.

    Runtime complexity: O(views); one file created, no fsync
    """
    files, path = ledger._files, ledger.path
    assert files is not None and path is not None
    seq = ledger._seq
    config = files.manifest.config
    snapshots = config["snapshots"]
    stale = {
        name: view for name, view in ledger._views.items() if snapshots.get(name, [None])[0] != seq
    }
    if not stale:
        return None
    ledger._compact_asked = False
    if files.manifest.segments[-1][1] <= seq:
        files.switch(seq + 1)
    crash_point("ledger_replay_switched")
    # (copied now: the config changes under the lock while the child runs)
    job_config = {k: copy.deepcopy(v) for k, v in config.items() if k not in ("views", "snapshots")}
    job_config["views"] = {name: copy.deepcopy(config["views"][name]) for name in stale}
    job_config["snapshots"] = {
        name: copy.deepcopy(snapshots[name]) for name in stale if name in snapshots
    }
    sealed = [s for s in files.manifest.segments if s[1] <= seq]
    ledger._replaying = True
    return LedgerReplayJob(path, seq, ledger._time, job_config, sealed), stale


def finish_switched(
    ledger: Ledger,
    job: LedgerReplayJob,
    views: Mapping[str, View],
    *,
    switched: Callable[[], None] | None,
    naming: Callable[[], None] | None,
) -> int:
    """After :func:`switch` let the ledger's lock go: call ``switched``,
    then :func:`finish_replay` (run even when ``switched`` raises: the
    rotation must end and the job be let go; its error is raised after),
    which calls ``switched`` again once the naming lets the lock go.

    Runtime complexity: as :func:`finish_replay`
    """
    try:
        if switched is not None:
            switched()
    finally:
        seq = finish_replay(ledger, job, views, naming=naming, named=switched)
    return seq


def finish_replay(
    ledger: Ledger,
    job: LedgerReplayJob,
    views: Mapping[str, View],
    *,
    naming: Callable[[], None] | None = None,
    named: Callable[[], None] | None = None,
) -> int:
    """Finish the switch's log rotation (its fsyncs: the child then reads
    only segments on disk), run the child of ``job`` (both without the
    ledger's lock), rename its files, then name them (:func:`_name`) for
    each view still registered as ``views`` holds it: under the lock in
    memory only, the manifest written after it; only once that is durable
    the files no longer named are removed, and the segments every snapshot
    covers (without ``retain_log``).  ``naming`` is called before the
    ledger's lock is taken to name them, ``named`` once it is let go
    (before the manifest's fsyncs).  The caller holds the compaction lock
    (not the ledger's).  Returns ``job.seq``; raises
    :class:`~rankengine.ledger.replayed.ReplayCompactionError` when the
    child failed (the previous snapshots stay in force), the rotation's
    error when it failed (the ledger is failed then).

    Runtime complexity: the rotation's fsyncs and the child's run;
    O(views + parts) under the lock to name, O(files) to remove
    """
    started = time.perf_counter()
    done = False
    try:
        files = ledger._files
        if files is not None:
            files.finish_rotation()
        report = run_replay(job)
        crash_point("ledger_replay_written")
        listed: dict[str, list[list[Any]]] = report["files"]
        rename_replayed(job, listed)
        crash_point("ledger_replay_renamed")
        if naming is not None:
            naming()
        with ledger._lock:
            naming_ = _name(ledger, job, views, listed)
        late: Exception | None = None
        try:
            if named is not None:
                named()
        except Exception as exc:  # (raised at the end: the naming is written or undone first)
            late = exc
        naming_.write(ledger)
        with ledger._lock:
            naming_.tidy(ledger, job, views, listed, report["moved"])
            ledger.last_compaction = CompactionReport(
                REPLAY,
                job.seq,
                time.perf_counter() - started,
                float(report["cpu_s"]),
                int(report["maxrss_kb"]),
            )
        naming_.drop_segments(ledger)
        done = True
        if late is not None:
            raise late
    finally:
        with ledger._lock:
            ledger._replaying = False
            ledger._compact_asked = False
            files = ledger._files
            if not done and files is not None and files.writer is not None:
                with contextlib.suppress(OSError):  # (the next open removes them else)
                    files.remove_unlisted()
    return job.seq


@dataclasses.dataclass
class _Naming:
    """A replayed compaction's naming between its in-memory half
    (:func:`_name`, under the ledger's lock) and the manifest on disk.

    :param named: each view named -> (its new entry, the one it replaced)
    :param copy: the manifest to write (:meth:`LedgerFiles.take_copy`), or
        None when nothing changed
    :param doomed: the segments the copy no longer lists (``retain_log`` off)
    """

    named: dict[str, tuple[list[Any], list[Any] | None]]
    copy: tuple[int, Manifest] | None
    doomed: list[tuple[str, int]]

    def write(self, ledger: Ledger) -> None:
        """Step 2, without the ledger's lock: write the copy, unless a
        manifest written since holds a later one (which holds the naming).
        On failure, under the lock, the in-memory naming is undone and the
        error raised, unless a later copy on disk holds it (then the naming
        is durable: the compaction goes on).

        Runtime complexity: O(size of the manifest) plus two fsyncs
        """
        files = ledger._files
        if self.copy is None or files is None:
            return
        crash_point("ledger_replay_copied")
        try:
            files.write_copy(self.copy, "ledger_manifest")
        except Exception:
            with ledger._lock:
                if files.copy_on_disk >= self.copy[0]:  # (written since, by another)
                    return
                self.undo(ledger)
            raise
        crash_point("ledger_replay_named")

    def undo(self, ledger: Ledger) -> None:
        """The in-memory naming undone (under the ledger's lock), where
        nothing changed it since."""
        files = ledger._files
        assert files is not None
        snapshots = files.manifest.config["snapshots"]
        for name, (entry, replaced) in self.named.items():
            if snapshots.get(name) is entry:
                if replaced is None:
                    del snapshots[name]
                else:
                    snapshots[name] = replaced
        if self.doomed:
            files.manifest.segments = self.doomed + files.manifest.segments
            self.doomed = []
        self.named = {}

    def tidy(
        self,
        ledger: Ledger,
        job: LedgerReplayJob,
        views: Mapping[str, View],
        listed: Mapping[str, list[list[Any]]],
        moved: Mapping[str, Mapping[str, int]],
    ) -> None:
        """Step 3, under the ledger's lock, once the naming is durable:
        the views named (still as they were, their entry still this
        naming's) load their unloaded periods from the child's copies, and
        the files no longer named are removed (no fsync).

        Runtime complexity: O(files of the views)
        """
        files = ledger._files
        assert files is not None
        snapshots = files.manifest.config["snapshots"]
        for name, (entry, _replaced) in self.named.items():
            view = ledger._views.get(name)
            if view is views[name] and snapshots.get(name) is entry:
                _repoint(view, job.view_dir(name), listed[name], moved.get(name, {}))
        files.remove_unlisted()

    def drop_segments(self, ledger: Ledger) -> None:
        """The segments the manifest no longer lists removed, without the
        ledger's lock (no segment of theirs is made again: seqs only grow).

        Runtime complexity: O(segments dropped) plus one fsync
        """
        files = ledger._files
        if not self.doomed or files is None:
            return
        for name, _first in self.doomed:
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(files.path, name))
        fsync_dir(files.path)


def _name(
    ledger: Ledger,
    job: LedgerReplayJob,
    views: Mapping[str, View],
    listed: Mapping[str, list[list[Any]]],
) -> _Naming:
    """Step 1 of the naming, under the ledger's lock (O(views + parts), no
    file written): each view still registered as ``views`` holds it, whose
    snapshot is older than the job's, gets the child's files as its entry;
    without ``retain_log`` the segments every snapshot covers leave the
    list; and the manifest to write is copied."""
    files = ledger._files
    assert files is not None
    snapshots = files.manifest.config["snapshots"]
    named: dict[str, tuple[list[Any], list[Any] | None]] = {}
    for name, parts in listed.items():
        if ledger._views.get(name) is not views[name]:  # removed (or re-added) meanwhile
            continue
        entry = snapshots.get(name)
        if entry is not None and entry[0] >= job.seq:
            continue
        snapshots[name] = [job.seq, parts, job.time_ms]
        named[name] = (snapshots[name], entry)
    doomed: list[tuple[str, int]] = []
    if not ledger._retain:
        seqs = [snapshots[n][0] if n in snapshots else -1 for n in ledger._views]
        low = min(seqs, default=job.seq)
        if low >= 0:
            keep = files.manifest.chain_start(low)
            doomed = files.manifest.segments[:keep]
            files.manifest.segments = files.manifest.segments[keep:]
    copy = files.take_copy() if named or doomed else None
    return _Naming(named, copy, doomed)


def _repoint(view: View, directory: str, parts: list[list[Any]], moved: Mapping[str, int]) -> None:
    """Load ``view``'s closed periods that are still unloaded from the
    child's copies of their files (the old files are removed next)."""
    if not moved:
        return
    for _key, (_part, board) in view.export_lazy():
        if not isinstance(board, Unloaded):
            continue
        old = board.path
        n = moved.get(os.path.basename(old))
        if n is not None and os.path.dirname(old) == directory:
            board.move(_no_copy, os.path.join(directory, parts[n][1]))


def _no_copy(_source: str, _path: str) -> None:
    """The file is in place already (the child copied it)."""
