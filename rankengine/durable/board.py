"""Durable boards: a :class:`Leaderboard` whose every write is logged first.

The sorted index is the serving copy; the source of truth is the *event
log* in a directory.  Every accepted write becomes one record (see
:mod:`rankengine.durable.eventlog`) that is appended -- and, under
``fsync="always"``, on stable storage -- before the board applies it and
the call returns.  A rejected write (bad input, a failed ``when``
condition) appends nothing.  A write whose append fails raises and the
board does not show it.

Opening a directory rebuilds the board from the newest snapshot plus the
records after it; the records hold absolute scores and tie clocks, so the
rebuilt board is identical to the one that wrote them, ranks, float
scores, tie order and metadata included.  This module owns the board: its
open, write path, fsync threads, compaction and close.  What an open
settles first is :mod:`~rankengine.durable.opening`'s, loading and replay
:mod:`~rankengine.durable.recovery`'s, reading events back and
:func:`rebuild` :mod:`~rankengine.durable.events`'s (re-exported here).

fsync policies (what a crash can lose)
--------------------------------------
``"always"``   nothing that was acknowledged: a write returns only after its
               record is fsynced; writes in flight together share one fsync,
               made outside the board's lock (group commit: ``acks.py``).
``"everysec"`` about the last second (a background thread fsyncs once a
               second).  If an fsync stalls for more than
               :data:`FSYNC_STALL_S`, writes wait for it, so the window
               stays near 2 s even on a sick disk (as Redis does).
``"never"``    whatever the OS had not written back (Linux: ~30 s).  A
               process crash (kill -9) loses nothing under any policy: the
               records are in the OS page cache once a write returns.

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as tmp:
...     with Leaderboard.open(tmp, fsync="always") as board:
...         board.set("ann", 10.5)
...         board.incr("bob", 3)
...     with Leaderboard.open(tmp) as again:
...         print(again.items(), again.last_seq)
True
3
[('ann', 10.5), ('bob', 3)] 2
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Iterator
from time import time_ns as _time_ns
from typing import Any

from rankengine.board.copying import Uncopyable
from rankengine.board.leaderboard import Leaderboard
from rankengine.durable.acks import AcknowledgedWrites
from rankengine.durable.eventlog import ACTIVE_WRITER, SegmentWriter
from rankengine.durable.events import EventReader, iter_events, open_readers, rebuild
from rankengine.durable.forget import Forgetting, finish_forget
from rankengine.durable.forked import FORK_AVAILABLE, SnapshotMode, fork_snapshot, wait_snapshot
from rankengine.durable.logstate import LogState
from rankengine.durable.manifest import (
    DirectoryLock,
    snapshot_name,
    write_manifest,
)
from rankengine.durable.marks import Checkpoints, check_loaded, seal
from rankengine.durable.opening import (
    _check_before_locking,
    _checked_clock,
    _now_ms,
    _open_manifest,
    _stored_config,
    resolve_config,
)
from rankengine.durable.options import (
    BOARD_SETTINGS,
    COMPACT_MIN_BYTES,
    COMPACT_RATIO,
    FLUSH_INTERVAL_S,
    FSYNC_STALL_S,
    LOG_OPTIONS,
    DurableOptions,
    FsyncPolicy,
    TornPolicy,
    check_fsync,
    check_log_options,
    check_options,
    check_settings,
    make_directory,
    pop_log_options,
)
from rankengine.durable.records import (
    Event,
    LogError,
    RecordFramer,
    RecordTooLargeError,
    TornTailError,
    TornTailWarning,
    crash_point,
)
from rankengine.durable.recovery import load_board, remove_leftovers, trim_followed
from rankengine.durable.replayed import ReplayJob, replay_snapshot, snapshot_kind
from rankengine.durable.rotation import Rotation, finish_rotation, switch_segment, sync_active
from rankengine.durable.sliced import Pacer, SlicedExport
from rankengine.durable.snapshot import fsync_dir, write_snapshot_pieces

__all__ = [
    "BOARD_SETTINGS",
    "COMPACT_MIN_BYTES",
    "COMPACT_RATIO",
    "FLUSH_INTERVAL_S",
    "FSYNC_STALL_S",
    "LOG_OPTIONS",
    "DurableLeaderboard",
    "DurableOptions",
    "FsyncPolicy",
    "check_fsync",
    "check_options",
    "check_settings",
    "iter_events",
    "load_board",
    "make_directory",
    "open_board_as",
    "pop_log_options",
    "rebuild",
]


def _durable_class(cls: type[Leaderboard]) -> type[DurableLeaderboard]:
    if issubclass(cls, DurableLeaderboard):
        return cls
    if cls is Leaderboard:
        return DurableLeaderboard
    try:
        return type(f"Durable{cls.__name__}", (DurableLeaderboard, cls), {})
    except TypeError:  # (instance lay-out conflict: both declare slots)
        raise TypeError(
            f"{cls.__name__} declares __slots__, so it cannot be a durable board, whose log "
            "state is in slots of its own (rankengine/durable/logstate.py): drop them (its "
            "instances have a __dict__ anyway, from Leaderboard)"
        ) from None


def open_board_as(
    cls: type[Leaderboard], path: str | os.PathLike[str], **options: Any
) -> DurableLeaderboard:
    """Open (or create) the durable board in directory ``path``; see
    :class:`DurableLeaderboard` for the options."""
    return _durable_class(cls)(path, **options)


def _flush_loop(board: weakref.ref[DurableLeaderboard], stop: threading.Event) -> None:
    """The ``everysec`` fsync thread of ``board``, until ``stop`` is set.

    It holds the board only while it syncs (a strong reference would keep a
    board dropped without ``close()`` alive, and this thread with it,
    forever), and ends once the board is gone.

    Runtime complexity: one fsync a second while there are writes
    """
    while not stop.wait(FLUSH_INTERVAL_S):
        live = board()
        if live is None:
            return
        live._background_sync()
        live._checkpoints.maybe(live)  # (a high-water mark, when one is due)
        del live


class DurableLeaderboard(Uncopyable, Forgetting, AcknowledgedWrites, LogState, Leaderboard):
    """A :class:`Leaderboard` stored in a directory; the same API plus
    :meth:`flush`, :meth:`close`, :meth:`compact`, :meth:`events`,
    :meth:`forget`.

    :param path: the directory (created if missing, unless ``create=False``).
    :param fsync: ``"always"``, ``"everysec"`` (default) or ``"never"``; see
        the module docstring for what each can lose.
    :param order, tie_break, rank_style, backend: as for :class:`Leaderboard`;
        when reopening, the stored settings are used and an explicit
        different ``order``/``tie_break``/``rank_style`` is an error.
    :param on_torn_tail: ``"truncate"`` (cut an interrupted last record with a
        :class:`~rankengine.durable.records.TornTailWarning`) or ``"refuse"``
        (raise :class:`~rankengine.durable.records.TornTailError`).
    :param compact_min_bytes: compact automatically (in a background thread)
        when the records since the last snapshot exceed this many bytes and
        ``compact_ratio`` times the snapshot; None turns it off.
    :param retain_log: keep old segments and snapshots after compaction, so
        that :func:`rebuild` can replay from the first record.
    :param now: a zero-argument function returning wall-clock milliseconds
        (record timestamps; for tests).

    Copying: :meth:`copy` returns an in-memory :class:`Leaderboard` snapshot
    of the contents (not durable, owning no directory).  ``copy.copy``,
    ``copy.deepcopy`` and pickling raise :class:`TypeError`: the board owns
    its directory and a lock on it, which no second object may share.
    """

    _copy_advice = (
        "it owns its directory and a lock on it; use board.copy() for an in-memory "
        "Leaderboard snapshot of its contents (pickle that), or open the directory again"
    )

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        fsync: FsyncPolicy = "everysec",
        order: Any = None,
        tie_break: Any = None,
        rank_style: Any = None,
        backend: Any = None,
        on_torn_tail: TornPolicy = "truncate",
        compact_min_bytes: int | None = COMPACT_MIN_BYTES,
        compact_ratio: float = COMPACT_RATIO,
        retain_log: bool = False,
        snapshot_mode: SnapshotMode = "auto",
        create: bool = True,
        now: Callable[[], int] | None = None,
    ) -> None:
        # Every option is checked before anything is created or locked: a
        # bad setting must not reach the new board's MANIFEST.
        check_fsync(fsync)
        check_log_options(on_torn_tail, compact_min_bytes, compact_ratio, retain_log, snapshot_mode)
        if not isinstance(create, bool):
            raise TypeError(f"create must be True or False, not {create!r}")
        if now is not None and not callable(now):
            raise TypeError(f"now must be a function returning milliseconds, not {now!r}")
        explicit = {
            "order": order,
            "tie_break": tie_break,
            "rank_style": rank_style,
            "backend": backend,
        }
        fresh = resolve_config(None, explicit, os.fspath(path))
        check_settings(explicit)
        self.path = os.fspath(path)
        self._closed = True  # until fully open
        if create:
            make_directory(self.path)
        elif not os.path.exists(self.path):
            raise FileNotFoundError(f"{self.path} does not exist (create=False)")
        elif not os.path.isdir(self.path):
            raise NotADirectoryError(f"{self.path} is not a directory")
        _check_before_locking(self.path, create)
        self._dirlock = DirectoryLock(self.path)
        try:
            forgot = finish_forget(self.path)  # (a forget a crash interrupted)
            manifest = _open_manifest(self.path, _stored_config(fresh), create)
            config = resolve_config(manifest.config, explicit, self.path)
            super().__init__(**config)
            loaded = load_board(self, self.path, manifest)
            manifest.segments += loaded.adopted  # (see rotation.py)
            trim_followed(self.path, loaded)
            check_loaded(self.path, manifest, loaded.last_seq, loaded.active, loaded.torn)
            if loaded.torn is not None:
                if on_torn_tail == "refuse":
                    raise TornTailError(loaded.torn)
                warnings.warn(
                    f"{loaded.torn.path}: cut a torn tail at offset {loaded.torn.offset} "
                    f"({loaded.torn.reason}, {loaded.torn.cut_bytes} bytes): the last write "
                    "was interrupted before it completed (under fsync='always' it was never "
                    "acknowledged)",
                    TornTailWarning,
                    stacklevel=3,
                )
            adopted = [f"adopted {n} (a log rotation a crash cut short)" for n, _ in loaded.adopted]
            self.recovery_notes = (
                forgot + loaded.notes + adopted + remove_leftovers(self.path, manifest)
            )
            assert loaded.active is not None
            name, first, start, end = loaded.active
            # A map under every policy: under "always" a write() would wait
            # behind the group commit's fsync (see ACTIVE_WRITER).
            self._writer_class: type[SegmentWriter] = ACTIVE_WRITER
            self._writer = self._writer_class.reopen(os.path.join(self.path, name), end, start)
        except BaseException:
            self._dirlock.release()
            raise
        self._manifest = manifest
        self._policy: FsyncPolicy = fsync
        self._sync_each = fsync == "always"
        self._framer = RecordFramer()
        #: the record clock: None for the wall clock (see _append)
        self._now: Callable[[], int] | None = None if now is None else _checked_clock(now)
        self._seq = loaded.last_seq
        self._last_ms = loaded.last_ms
        self._active_first = first
        self._snapshot_size = loaded.snapshot_size
        self._compact_min = compact_min_bytes
        self._compact_ratio = compact_ratio
        self._compact_after = 0
        self._retain = retain_log
        self._mode: SnapshotMode = snapshot_mode  # (see _compact: snapshot_kind)
        self._failure: BaseException | None = None
        self._dirty = False
        # Lock order (a thread holding one of these takes only those after
        # it): _close_lock, _compact_lock, the board's _lock, _sync_lock,
        # _sync_cond.
        # Writes take _lock (and _sync_cond to wait out a stalled fsync);
        # flush() _lock then _sync_lock; the everysec flusher _sync_lock then
        # _sync_cond; compaction _compact_lock, then _sync_lock alone
        # (_presync) or _lock then _sync_lock; close() holds _close_lock and
        # takes the others one at a time (it joins the background threads
        # holding no other, and they never take _close_lock).
        self._sync_lock = threading.Lock()
        self._sync_cond = threading.Condition()
        self._sync_started: float | None = None
        self._compact_lock = threading.Lock()
        #: held for the whole of close(), so that a second close() waits for it
        self._close_lock = threading.Lock()
        #: True once close() has released the log and the directory; until
        #: then another close() finishes what an interrupted one left
        self._released = False
        #: the process that opened the board (see __del__)
        self._pid = os.getpid()
        self._compactor: threading.Thread | None = None
        #: the snapshot being read in slices, which sees every logged change
        #: until its last slice (see _compact)
        self._capture: SlicedExport | None = None
        #: the log rotation whose fsyncs are under way (see rotation.py)
        self._rotation: Rotation | None = None
        self._stop = threading.Event()
        self._flusher: threading.Thread | None = None
        self._checkpoints = Checkpoints()
        self._closed = False
        if fsync == "everysec":
            # (the thread holds the board by a weak reference: see _flush_loop)
            self._flusher = threading.Thread(
                target=_flush_loop,
                args=(weakref.ref(self), self._stop),
                name="rankengine-fsync",
                daemon=True,
            )
            try:
                self._flusher.start()
            except BaseException:  # (no thread to be had: nothing stays open)
                self._closed = self._released = True
                try:
                    self._writer.close()
                finally:
                    self._dirlock.release()
                raise
        self._start_group(self._sync_each, self._seq)
        self._listener = self._append
        #: the directory is this board's to release from now on (see __del__)
        self._dirlock.released_by_owner = True

    # ------------------------------------------------------------------
    # State
    # ------------------------------------------------------------------
    def copy(self) -> Leaderboard:
        """An in-memory :class:`Leaderboard` snapshot of this board's contents:
        the same settings, members, scores, metadata, tie order and clock,
        but not durable -- its writes go to no directory, and this board's
        later writes do not reach it.  Works on a closed board too.

        Runtime complexity: O(N + size of metadata)
        """
        return self._copy_as(Leaderboard)

    @property
    def closed(self) -> bool:
        """True after :meth:`close`: reads still work, writes raise."""
        return self._closed

    @property
    def last_seq(self) -> int:
        """Sequence number of the last logged write (0 for a new board)."""
        return self._seq

    @property
    def fsync_policy(self) -> FsyncPolicy:
        """The policy given at open."""
        return self._policy

    def __repr__(self) -> str:
        state = "closed" if self._closed else self._policy
        return (
            f"DurableLeaderboard({self.path!r}, {state}, members={len(self)}, last_seq={self._seq})"
        )

    def __enter__(self) -> DurableLeaderboard:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_writable(self) -> None:
        if self._closed:
            raise ValueError(f"the durable board at {self.path} is closed")
        if self._failure is not None:
            raise LogError(
                f"{self.path}: an fsync failed ({self._failure}); the log may be missing writes "
                "the OS had accepted, so this board refuses further writes: close and reopen it"
            ) from self._failure

    def clear(self) -> None:
        """Remove every member (and all metadata), as :meth:`Leaderboard.clear`.

        It is one write, so one log record with a removal per member; a
        board whose removals would not fit in one record
        (:data:`~rankengine.durable.records.MAX_FRAME_BYTES`, about 1 GiB: tens of
        millions of members with short names) raises
        :class:`~rankengine.durable.records.RecordTooLargeError` and is unchanged.
        The error says how to empty it instead: in slices, each its own write.

        Runtime complexity: O(N)
        """
        try:
            super().clear()
        except RecordTooLargeError as exc:
            raise RecordTooLargeError(
                exc.size,
                exc.limit,
                what=f"clear() of this board ({len(self)} members, one removal each)",
                advice="empty it in slices instead, e.g. board.remove_by_rank(1, 100_000) "
                "until it is empty (each slice is its own write, so a crash can leave "
                "the board part-emptied)",
            ) from None

    # ------------------------------------------------------------------
    # The write path
    # ------------------------------------------------------------------
    def _append(self, changes: list[Any]) -> None:
        """The board's listener: log ``changes`` (fsync under "always") or raise.

        Runs for every accepted write, under the board's lock, so it is kept
        lean (measured with one-change records, everysec: ~4.3 us a record
        before, ~3.0 us after, of which ~1.5 us was the write system call
        that a mapped segment now replaces with a ~0.1 us copy).  Each
        shortcut below says what it saves.
        """
        if self._closed or self._failure is not None:  # one call less than always checking
            self._check_writable()
        seq = self._seq + 1
        clock = self._now
        # (the wall clock inlined: a Python call less than _now_ms())
        now = _time_ns() // 1_000_000 if clock is None else clock()
        last = self._last_ms
        stamp = now if now > last else last  # never backwards
        data = self._framer.frame(seq, stamp, changes)
        # Only the everysec flusher sets _sync_started; test it here rather
        # than calling _wait_if_stalled() on every write.
        if self._sync_started is not None:
            self._wait_if_stalled()
        writer = self._writer
        writer.append(data)
        self._seq, self._last_ms = seq, stamp
        if self._sync_each:  # the fsync is shared, outside the lock: durable/acks.py
            self._appended(seq)
        else:
            self._dirty = True
        if self._capture is not None:  # a snapshot is being read in slices
            self._capture.capture(changes)
        # Compaction is due only past compact_min bytes: one comparison per
        # write until then instead of a max() of three.
        compact_min = self._compact_min
        if compact_min is not None and writer.end - writer.start >= compact_min:
            self._maybe_start_compaction(writer)

    def _maybe_start_compaction(self, writer: SegmentWriter) -> None:
        if self._compactor is not None:
            return
        due = max(
            self._compact_min or 0, self._compact_ratio * self._snapshot_size, self._compact_after
        )
        if writer.record_bytes >= due:
            # (set before the start: the thread clears it when it ends)
            self._compactor = threading.Thread(
                target=self._compact_in_background, name="rankengine-compact", daemon=True
            )
            try:
                self._compactor.start()
            except RuntimeError as exc:
                # Out of threads.  The write that made compaction due is
                # logged already, so it must not fail: retry after as many
                # bytes again, as after a failed background compaction.
                self._compactor = None
                self._compact_after = writer.record_bytes * 2
                warnings.warn(
                    f"{self.path}: background compaction could not start: {exc}",
                    RuntimeWarning,
                    stacklevel=1,
                )

    def _wait_if_stalled(self) -> None:
        started = self._sync_started
        if started is not None and time.monotonic() - started > FSYNC_STALL_S:
            with self._sync_cond:
                while self._sync_started is not None:
                    self._sync_cond.wait()

    def _background_sync(self) -> None:
        with self._sync_lock:
            if not self._dirty or self._failure is not None:
                return
            self._dirty = False
            self._sync_started = time.monotonic()
            try:
                self._writer.sync()
            except OSError as exc:
                self._failure = exc
                warnings.warn(
                    f"{self.path}: background fsync failed: {exc}", RuntimeWarning, stacklevel=1
                )
            finally:
                with self._sync_cond:
                    self._sync_started = None
                    self._sync_cond.notify_all()

    def flush(self) -> None:
        """Force every logged write to stable storage now (any policy).

        Runtime complexity: one fsync
        """
        with self._lock:
            self._check_writable()
            seq = self._seq
        # (without the board's lock: a rotation's fsyncs may be under way,
        # and sync_active waits for them when it must)
        try:
            sync_active(self)
        except OSError as exc:
            self._failure = exc
            raise
        self._synced(seq)

    def _sync_log(self) -> None:
        """fsync the log under the sync lock (the caller holds the board
        lock, so no write lands meanwhile); a failure fails the board, as
        any fsync's does.

        Runtime complexity: one fsync
        """
        with self._sync_lock:
            try:
                self._writer.sync()
            except OSError as exc:
                self._failure = exc
                raise
            self._dirty = False
        self._synced(self._seq)

    def close(self) -> None:
        """Flush, stop the background threads, let a compaction in progress
        finish, and release the directory.

        Reads keep working on the in-memory board; writes raise.  Closing
        twice is harmless; a close() racing another returns once the board
        is closed, and one after a close() cut short (Ctrl-C while it waits
        for a background thread) finishes it.  Raises if the final fsync
        fails (after closing).
        """
        with self._close_lock:
            with self._lock:
                if self._released:
                    return
                self._closed = True
            self._close()

    def __del__(self) -> None:
        """A board dropped without :meth:`close`: warn, as an unclosed file
        does, and give back what it holds: stop its fsync thread, write the
        log back under ``everysec``, close the segment, release the directory.

        It runs only when nothing else references the board (its threads
        hold it weakly, or only while they work), so it takes no lock; it
        never joins a thread (it may run on the fsync thread itself, which
        then stops at its next wake-up).  A step that fails does not stop
        the ones after it.

        Runtime complexity: one fsync when writes are not yet synced
        """
        if getattr(self, "_released", True):
            return  # closed, or the open failed (it released what it held)
        if self._pid != os.getpid():
            # a forked child's copy of a board its parent may still write to:
            # the files are the parent's (trimming the segment would cut the
            # space under the parent's memory map)
            return
        self._closed = self._released = True
        try:
            warnings.warn(
                f"durable board {self.path!r} was never closed; close it or use a with block",
                ResourceWarning,
                stacklevel=2,
                source=self,
            )
        finally:  # (under -W error the warning raises: release all the same)
            self._stop.set()
            self._stop_group(join=False)
            # (the segment's file may have been finalized before this board:
            # a closed file raises ValueError, and nothing is lost, since
            # every acknowledged record is in the OS page cache already)
            with contextlib.suppress(Exception):
                if self._dirty and self._failure is None:
                    self._writer.sync()
            with contextlib.suppress(Exception):
                self._writer.close()
            self._dirlock.release()

    def _close(self) -> None:
        """What close() does once it has marked the board closed (under its lock)."""
        self._stop.set()
        self._stop_group()
        if self._flusher is not None:
            self._flusher.join()
        compactor = self._compactor
        if compactor is not None:
            compactor.join()
        # A compact() called on another thread may still be writing its
        # snapshot and manifest: let it finish before the directory is released.
        with self._compact_lock:
            pass
        error: BaseException | None = None
        with self._sync_lock:
            try:
                if self._failure is None:
                    self._writer.sync()
                    seal(self)  # the seal: what the log holds, in the manifest
            except OSError as exc:
                error = exc
            finally:
                try:
                    self._writer.close()
                finally:  # (its error is raised, after the directory is released)
                    self._dirlock.release()
                    self._released = True
        if error is not None:
            raise error

    # ------------------------------------------------------------------
    # Snapshots and compaction
    # ------------------------------------------------------------------
    def compact(self) -> int:
        """Write a snapshot, start a new segment, and drop what it replaces.

        Steps, each crash-safe: read the board in slices between writes
        (:mod:`rankengine.durable.sliced`: each slice holds the board lock
        for at most 0.5 ms); with the last slice, switch the log to a new
        segment ``seq+1``; then, without the lock, fsync the old segment,
        the new one and the directory and list the new segment in the
        manifest (:mod:`rankengine.durable.rotation`); write the snapshot (temp
        file, fsync, rename, directory fsync); replace the manifest with one
        naming the snapshot; only then remove the older segments and
        snapshots (kept with ``retain_log=True``).  Writes continue while
        the snapshot is written.  That is ``snapshot_mode="slices"``; with
        "replay" (the default's for a large board) a fresh process rebuilds
        the snapshot from the log instead (durable/replayed.py).

        Runtime complexity: O(N)

        :return: the sequence number the snapshot covers.
        """
        with self._compact_lock:
            return self._compact()

    #: Same as :meth:`compact` (Redis calls it a rewrite; this is the snapshot).
    snapshot = compact

    def _compact_in_background(self) -> None:
        try:
            with self._compact_lock:
                if not self._closed:
                    self._compact()
        except Exception as exc:
            if self._closed:
                return  # closed while waiting: nothing to report
            # retry only after as many bytes again; the log itself is fine
            self._compact_after = self._writer.record_bytes * 2
            warnings.warn(
                f"{self.path}: background compaction failed: {exc}", RuntimeWarning, stacklevel=1
            )
        finally:
            self._compactor = None

    def _presync(self) -> None:
        """Write the active segment back without the board lock, so that the
        fsync compaction must make under the lock has little left to do.

        Writes go on meanwhile (as with the everysec flusher, the sync lock
        is enough: only compaction swaps the writer, and the caller holds
        the compaction lock).  Under "everysec" it stands in for the
        flusher's fsync (which waits for the sync lock), so it is timed like
        one: writes wait for it once it stalls past :data:`FSYNC_STALL_S`.
        A failed fsync fails the board, as any does.

        Runtime complexity: one fsync
        """
        with self._sync_lock:
            self._check_writable()
            self._dirty = False
            if self._flusher is not None:
                self._sync_started = time.monotonic()
            try:
                self._writer.sync()
            except OSError as exc:
                self._failure = exc
                raise
            finally:
                if self._flusher is not None:
                    with self._sync_cond:
                        self._sync_started = None
                        self._sync_cond.notify_all()

    def _read_in_slices(self, pace: Pacer) -> SlicedExport | None:
        """Read the board for a snapshot in slices between writes (see
        :mod:`rankengine.durable.sliced`), up to the last slice; None when the newest
        snapshot is already of the current state.

        Each slice holds the board lock for at most ``SLICE_SECONDS`` and
        the GIL is let go between slices, so that writes and reads go on
        with at most a slice's delay.  The caller finishes the export under
        the lock (:meth:`SlicedExport.finish`) and rotates the log in the
        same hold; until then every logged change goes to the export too.
        """
        manifest = self._manifest
        export = SlicedExport(self)
        with self._lock:
            self._check_writable()
            if manifest.snapshots and manifest.snapshots[-1][1] == self._seq:
                return None
            self._capture = export
        try:
            done = False
            while not done:
                with self._lock:
                    self._check_writable()
                    done = export.step()
                export.settle()  # (the collector's look at the new slices: short)
                pace.rest()
                export.replay(pace)
            if not self._sync_each:
                self._presync()  # so that the rotation's fsync has little to do
        except BaseException:
            self._capture = None
            raise
        return export

    def _compact(self) -> int:
        directory = self.path
        manifest = self._manifest
        if not self._sync_each:
            self._presync()
        pace = Pacer()
        mode = snapshot_kind(self._mode, len(self), FORK_AVAILABLE)  # (replayed.py)
        export = None if mode != "slices" else self._read_in_slices(pace)
        if export is None and mode == "slices":
            return self._seq
        with self._lock:
            self._capture = None  # (the export's last slice is read now)
            self._check_writable()
            if export is not None:
                export.finish()
            seq = self._seq
            if manifest.snapshots and manifest.snapshots[-1][1] == seq:
                return seq
            header = {
                "seq": seq,
                "clock": self._clock,
                "time_ms": self._last_ms,
                "created_ms": _now_ms(),
                "config": manifest.config,
            }
            # Only the switch to segment seq + 1 is made under the lock; its
            # fsyncs and the manifest naming it follow without it (they took
            # 10-89 ms under it on a loaded disk): durable/rotation.py.
            rotation = None
            if self._active_first != seq + 1:
                rotation = switch_segment(self, seq, header["created_ms"])
            snap = snapshot_name(seq)
            target = os.path.join(directory, snap)
            if mode == "fork":  # the child writes it from the board as of now
                child = fork_snapshot(self, target, header, self._dirlock._fd)
            elif mode == "replay":  # what the fresh process reads: the log up to seq
                sealed = [s for s in manifest.segments if s[1] <= seq]
                job = ReplayJob(directory, list(manifest.snapshots), sealed, header, target)
        if rotation is not None:
            try:
                finish_rotation(self, rotation)
            except BaseException:
                if mode == "fork":  # (reaped; the snapshot is not named)
                    with contextlib.suppress(Exception):
                        wait_snapshot(child, target)
                raise
        if mode == "fork":
            size = wait_snapshot(child, target)
        elif export is None:  # "replay": a fresh process replays the log up to seq
            size = replay_snapshot(job)
        else:
            # pieces, not whole columns, and each freed once written: see
            # write_snapshot_pieces (no call here holds the GIL long)
            pieces, metas = export.pieces(pace)
            del export
            size = write_snapshot_pieces(target, header, pieces, metas, pause=pace)
            del pieces, metas
        # The new manifest is written without the board lock (its two fsyncs
        # took 10-25 ms under it on a loaded machine): only compaction writes
        # the manifest, and the caller holds the compaction lock.  Readers of
        # the in-memory one (events()) see it change in one step, under the
        # lock, once the file is in place; no file is removed before that.
        with self._lock:
            old_snapshots, old_segments = list(manifest.snapshots), list(manifest.segments)
        swapped = dataclasses.replace(
            manifest,
            snapshots=[(snap, seq)] if not self._retain else [*old_snapshots, (snap, seq)],
            segments=[s for s in old_segments if s[1] > seq] if not self._retain else old_segments,
            durable_seq=max(manifest.durable_seq, seq),
        )
        write_manifest(directory, swapped, step="swap_manifest")
        with self._lock:
            manifest.snapshots, manifest.segments = swapped.snapshots, swapped.segments
            manifest.generation, manifest.written_ms = swapped.generation, swapped.written_ms
            manifest.durable_seq = swapped.durable_seq
            self._snapshot_size = size
            self._compact_after = 0  # a failure's deferral ends with a success
        keep = {n for n, _ in manifest.snapshots} | {n for n, _ in manifest.segments}
        for i, name in enumerate(n for n, _ in old_snapshots + old_segments if n not in keep):
            os.remove(os.path.join(directory, name))
            if i == 0:
                crash_point("segment_removal")
        fsync_dir(directory)
        return seq

    # ------------------------------------------------------------------
    # Reading the log
    # ------------------------------------------------------------------
    def events(self, start: int = 1, stop: int | None = None) -> Iterator[Event]:
        """Logged events with ``start <= seq < stop``, oldest first.

        The files are opened at the call, so a later compaction does not cut
        the iteration short.  Events compacted away earlier are gone (asking
        for them raises ``LogError``) unless the board was opened with
        ``retain_log=True``.

        Runtime complexity: O(size of the segments read)
        """
        with self._lock:
            readers = open_readers(self.path, self._manifest, start, stop)
            if not self._closed:
                readers[-1].size = self._writer.end
        return EventReader(readers, start, stop)
