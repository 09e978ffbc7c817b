"""A ledger's directory: its event log, its views' snapshots, its manifest.

::

    DIR/
      MANIFEST                       config {"kind": "ledger", "views": {...},
                                     "snapshots": {view: [seq, [[key, file], ...],
                                                          ledger_ms]}},
                                     and the segments
      log-<first seq>.seg            the events, in the durable record format
      views/<view>/s<seq>-<n>.snap   view snapshots (durable/snapshot.py files)
      LOCK                           held by the writing process

Everything is the durable board's machinery (:mod:`rankengine.durable`):
segments are written by its ``SegmentWriter`` (a memory map under every
policy, see ``_WRITER``), read by its ``SegmentReader`` (torn tails told from
damage the same way), snapshots are its snapshot files (one per *part* of a
view: a board and a small header), the manifest its manifest, replaced
atomically, and the lock its ``DirectoryLock``.  The views and where their
snapshots are live in the manifest's config map, so one atomic rename
commits a view's registration, its snapshot or its removal.

Recovery (:func:`read_events`): each view's newest snapshot, then the
records after the oldest view's ``seq``, each given to the views that do
not reflect it yet.

>>> import tempfile, os
>>> with tempfile.TemporaryDirectory() as tmp:
...     files = LedgerFiles(tmp, fsync="never", create=True)
...     files.start_writing(("log-00000000000000000001.seg", 1, 0, os.path.getsize(
...         os.path.join(tmp, "log-00000000000000000001.seg"))))
...     files.append(encode(1, 5, [(3, "ann", 0, 1, 5, None, None, None)]), 1)
...     files.close()
...     [e.seq for e in read_events(tmp, files.manifest, 0)]
[1]
"""

from __future__ import annotations

import dataclasses
import functools
import os
import shutil
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

from rankengine.durable.commit import GroupCommit
from rankengine.durable.eventlog import ACTIVE_WRITER, SegmentReader, SegmentWriter
from rankengine.durable.forget import finish_forget, finish_journal
from rankengine.durable.kinds import (
    LEDGER,
    LEDGER_KIND,
    LEDGER_VIEWS,
    MIGRATE_JOURNAL,
    MIGRATED_KEY,
    refuse_other_kind,
)
from rankengine.durable.manifest import (
    DirectoryLock,
    Manifest,
    read_manifest,
    segment_name,
    write_manifest,
)
from rankengine.durable.options import FLUSH_INTERVAL_S, FsyncPolicy, make_directory
from rankengine.durable.records import (
    CorruptionError,
    Event,
    LogError,
    RecordFramer,
    TornTail,
    crash_point,
    pack,
    unpack,
)
from rankengine.durable.rotation import Rotation
from rankengine.durable.snapshot import (
    SharedChunks,
    Snapshot,
    copy_snapshot,
    fsync_dir,
    read_snapshot,
    write_snapshot_columns,
)
from rankengine.timed.lazy import Unloaded, is_unloaded

__all__ = [
    "SNAP_PREFIX",
    "VIEWS_DIR",
    "LedgerFiles",
    "LogTail",
    "encode",
    "log_segments",
    "read_events",
    "read_view_parts",
    "refuse_migrated",
    "remove_stray_files",
    "snapshot_clock",
    "snapshot_entry",
    "write_view_parts",
]

VIEWS_DIR: Final = LEDGER_VIEWS
#: The first letter of a view snapshot's file name (``s<seq>-<n>.snap``).
SNAP_PREFIX: Final = "s"
#: The active segment's writer: the durable board's, a memory map under
#: every policy (see ``ACTIVE_WRITER``).
_WRITER: Final = ACTIVE_WRITER
_FRAMER: Final = RecordFramer()
_FRAMER_LOCK: Final = threading.Lock()


def encode(seq: int, time_ms: int, changes: list[Any]) -> bytes:
    """One framed record (for tests and tools; a ledger frames its own)."""
    with _FRAMER_LOCK:
        return _FRAMER.frame(seq, time_ms, changes)


def _flush_loop(files: weakref.ref[LedgerFiles], stop: threading.Event) -> None:
    """The ``everysec`` fsync thread (holds the files only while it syncs)."""
    while not stop.wait(FLUSH_INTERVAL_S):
        live = files()
        if live is None:
            return
        live.background_sync()
        del live


def _group_sync(files: weakref.ref[LedgerFiles]) -> None:
    """The group commit's fsync (holds the files only while it syncs)."""
    live = files()
    if live is None:
        raise ValueError("the ledger was dropped")
    live.sync()


class LedgerFiles:
    """The open directory of a ledger: lock, manifest, active segment, fsync.

    ``append(data, seq)`` puts one framed record in the log or raises
    having written nothing; under ``"always"`` the record is then made
    durable by the group commit (:attr:`group`, see
    :mod:`rankengine.durable.commit`): the writer calls :meth:`acknowledge`
    once it has let its lock go, which waits for an fsync covering it.
    ``failure`` is set after a failed fsync, and then every append raises
    (reopen).
    """

    def __init__(self, path: str, *, fsync: FsyncPolicy, create: bool) -> None:
        self.path = path
        refuse_other_kind(path, LEDGER)
        if create:
            make_directory(path)
        elif not os.path.isdir(path):
            raise FileNotFoundError(f"{path} holds no ledger (create=False)")
        self.lock = DirectoryLock(path)
        self.policy: FsyncPolicy = fsync
        self.failure: BaseException | None = None
        self.dirty = False
        self.sync_lock = threading.Lock()
        self.writer: SegmentWriter | None = None
        #: per thread: ``ticket``, the seq of its last record the group
        #: commit covers; ``defer`` True where the caller waits for it its
        #: own way (rankengine.ledger.aio), not in :meth:`acknowledge`
        self.local = threading.local()
        #: under ``"always"``, the group commit that fsyncs the appends
        self.group: GroupCommit | None = None
        #: the log rotation between its switch and its end (see
        #: :meth:`switch`); it stays set after one failed (syncs raise)
        self.rotation: Rotation | None = None
        #: held while a manifest is written (by the rotation's end without
        #: the ledger's lock; by everything else under it)
        self.manifest_lock = threading.Lock()
        #: the number of the last copy of the manifest taken (under the
        #: ledger's lock), and of the newest one MANIFEST holds: a copy
        #: holds every change made before it, so one older than MANIFEST's
        #: is not written (:meth:`take_copy`, :meth:`write_copy`)
        self.copies = self.copy_on_disk = 0
        try:
            # a migration into a ledger a crash interrupted after its commit
            # (rankengine.ledger.migrate), then a forget: each journal
            # applied (or a forget's staged files removed) before anything
            # is read
            finish_journal(path, MIGRATE_JOURNAL)
            finish_forget(path, nested=True)
            self.manifest = self._open_manifest(create)
            #: a copy of what MANIFEST holds (the rotation's end writes it
            #: with its segment added, not reading the ledger's config)
            self.on_disk = self._copy(self.manifest.segments)
        except BaseException:
            self.lock.release()
            raise
        self._stop = threading.Event()
        self._flusher: threading.Thread | None = None

    def _open_manifest(self, create: bool) -> Manifest:
        try:
            manifest = read_manifest(self.path)
        except FileNotFoundError:
            if not create:
                raise FileNotFoundError(f"{self.path} holds no ledger (no MANIFEST)") from None
            leftovers = [n for n in os.listdir(self.path) if n not in ("LOCK",)]
            stray = [n for n in leftovers if not n.endswith((".tmp", ".seg"))]
            if stray:
                raise LogError(
                    f"{self.path} holds {stray[0]!r} and no MANIFEST: refusing to create a "
                    "ledger over it"
                ) from None
            for name in leftovers:  # a crash while creating: a header-only segment
                os.remove(os.path.join(self.path, name))
            name = segment_name(1)
            config = {"kind": LEDGER_KIND, "views": {}, "snapshots": {}}
            header = {"first_seq": 1, "created_ms": time.time_ns() // 1_000_000, "config": config}
            SegmentWriter.create(os.path.join(self.path, name), header).close()
            fsync_dir(self.path)
            manifest = Manifest(config, [], [(name, 1)])
            write_manifest(self.path, manifest, step="create_manifest")
            return manifest
        if manifest.config.get("kind") != LEDGER_KIND:
            raise ValueError(f"{self.path} holds a durable board, not a ledger")
        return manifest

    # ------------------------------------------------------------------
    # The log
    # ------------------------------------------------------------------
    def start_writing(self, active: tuple[str, int, int, int]) -> None:
        """Open the active segment (as recovery found it) for appending and,
        under ``everysec``, start the fsync thread."""
        name, _first, start, end = active
        self.writer = _WRITER.reopen(os.path.join(self.path, name), end, start)
        if self.policy == "always":
            self.group = GroupCommit(functools.partial(_group_sync, weakref.ref(self)), durable=0)
            # (its thread holds the files weakly: one dropped unclosed stops it)
            weakref.finalize(self, self.group.close, join=False)
        if self.policy == "everysec":
            self._flusher = threading.Thread(
                target=_flush_loop,
                args=(weakref.ref(self), self._stop),
                name="rankengine-ledger-fsync",
                daemon=True,
            )
            self._flusher.start()

    def check_writable(self) -> None:
        """Raise when the log takes no more records."""
        if self.writer is None:
            raise ValueError(f"the ledger at {self.path} is closed")
        if self.failure is not None:
            raise LogError(
                f"{self.path}: an fsync failed ({self.failure}); the log may be missing records "
                "the OS had accepted, so the ledger refuses further events: close and reopen it"
            ) from self.failure

    def append(self, data: bytes, seq: int, *, inline: bool = False) -> None:
        """Append one framed record: durable under ``"everysec"`` and
        ``"never"`` on return; under ``"always"`` once :meth:`acknowledge`
        returns (shared fsyncs), or on return if ``inline`` (an fsync of
        its own, for a caller that must tell subscribers before it lets its
        lock go).

        Runtime complexity: O(len(data)), plus an fsync if ``inline``
        """
        writer = self.writer
        if writer is None or self.failure is not None:
            self.check_writable()
        assert writer is not None
        writer.append(data)
        group = self.group
        if group is not None and (not inline or getattr(self.local, "defer", False)):
            group.appended(seq)
            self.local.ticket = seq
        elif self.policy == "always":
            try:
                rotation = self.rotation
                if rotation is not None and writer is rotation.new:
                    # (its end takes no ledger lock: the wait under it is safe)
                    rotation.wait()
                writer.sync()
            except BaseException as exc:
                writer.undo_last(len(data))
                self.failure = exc
                raise
        else:
            self.dirty = True

    def acknowledge(self) -> None:
        """Under ``"always"``, wait until this thread's last record is
        durable (:class:`~rankengine.durable.records.LogError` if its fsync
        failed); call it with the ledger's lock let go.  At once elsewhere,
        and where the caller waits its own way (``local.defer``).

        Runtime complexity: the wait for at most two fsyncs
        """
        local = self.local
        ticket = getattr(local, "ticket", 0)
        if ticket and self.group is not None:
            local.ticket = 0
            if not getattr(local, "defer", False):
                self.group.wait(ticket)

    def reopen_active(self) -> None:
        """Append to the active segment as rewritten on disk (a forget
        replaced the file: it keeps the header and ends at its last record)."""
        assert self.writer is not None
        path, start = self.writer.path, self.writer.start
        cls = type(self.writer)
        with self.sync_lock:  # (the everysec thread syncs the writer under it)
            old, self.writer = self.writer, cls.reopen(path, os.path.getsize(path), start)
            old.close()

    @property
    def active_bytes(self) -> int:
        """Bytes of records in the active segment."""
        return 0 if self.writer is None else self.writer.record_bytes

    def background_sync(self) -> None:
        """The ``everysec`` thread's fsync."""
        with self.sync_lock:
            if not self.dirty or self.failure is not None or self.writer is None:
                return
            self.dirty = False
            try:
                self.writer.sync()
            except OSError as exc:
                self.failure = exc

    def sync(self) -> None:
        """fsync the log so that every record appended before the call is
        durable and reachable by an open when it returns: during a log
        rotation, once it is done (:meth:`finish_rotation`).  Raises the
        fsync's error, or :class:`~rankengine.durable.records.LogError` if
        the rotation failed.

        The switch sets :attr:`rotation` before the writer, and this reads
        them in the other order, under the sync lock (which the old
        segment's close takes): a caller that finds the old writer syncs it
        (every record it must cover is there); one that finds the new
        writer waits for the rotation first.

        Runtime complexity: one fsync, plus the wait for a rotation
        """
        while True:
            with self.sync_lock:
                writer, rotation = self.writer, self.rotation
                if writer is None:
                    return
                if rotation is None or writer is not rotation.new:
                    try:
                        writer.sync()
                    except OSError as exc:
                        self.failure = exc
                        raise
                    self.dirty = False
                    return
            rotation.wait()

    def roll(self, first_seq: int) -> None:
        """Start a new segment at ``first_seq`` and list it in the manifest,
        all of it now (the old one synced and trimmed first): the in-process
        compaction's, which holds the ledger's lock for its whole encoding
        anyway.  A replayed one rotates in two halves (:meth:`switch`).

        Runtime complexity: five fsyncs
        """
        assert self.writer is not None
        self.sync()
        self.writer.trim()
        name = segment_name(first_seq)
        fresh = SegmentWriter.create(os.path.join(self.path, name), _header(first_seq))
        fresh.close()
        fsync_dir(self.path)
        self.manifest.segments.append((name, first_seq))
        self.write_manifest("roll_manifest")
        with self.sync_lock:  # (the fsync threads sync the writer under it)
            old, self.writer = self.writer, None
            old.close()
        end = os.path.getsize(os.path.join(self.path, name))
        self.writer = _WRITER.reopen(os.path.join(self.path, name), end, end)

    def switch(self, first_seq: int) -> Rotation:
        """The first half of a log rotation, under the ledger's lock (and
        the compaction lock): segment ``first_seq`` created with its header
        (not fsynced), made the writer, listed in the in-memory manifest.
        The caller then lets the ledger's lock go and calls
        :meth:`finish_rotation` (the design of
        :mod:`rankengine.durable.rotation`: its steps, crash points and
        hooks).  A failure to create the file raises with nothing changed.

        Runtime complexity: O(1): one file created and written
        """
        self.check_writable()
        assert self.writer is not None
        name = segment_name(first_seq)
        new = _WRITER.create(os.path.join(self.path, name), _header(first_seq), sync=False)
        rotation = Rotation(self.writer, new, first_seq - 1, self.manifest.segments[-1][0])
        # The rotation is set before the writer changes: a thread that sees
        # the new writer sees the rotation too (see sync).  No sync lock: a
        # group fsync in flight holds it, and on a busy disk the switch
        # waited for it under the ledger's lock (420 ms once, measured with
        # bench/ledger_holds.py); whoever finds the old writer syncs it.
        self.rotation = rotation
        self.writer = new
        self.manifest.segments.append((name, first_seq))
        return rotation

    def finish_rotation(self) -> None:
        """The second half of the rotation :meth:`switch` began, without
        the ledger's lock (the caller holds the compaction lock: nothing
        else rotates or drops segments meanwhile)::

            3. the old segment trimmed, fsynced, closed -> records up to s
               durable (the group commit's waiters up to s released)
            4. the new segment and the directory fsynced -> a manifest
               written from here on may name it
            5. the manifest naming it written -> records after s durable

        A failure at any step fails the ledger (writes refused, waiters
        raise) and raises; the next open keeps what it can prove (it
        adopts the new segment where it follows the log exactly).  A no-op
        when no rotation is under way.

        Runtime complexity: four fsyncs and a manifest write (two more)
        """
        rotation = self.rotation
        if rotation is None or rotation.error is not None:
            return
        try:
            rotation.step("after_segment_create")
            with self.sync_lock:  # (the everysec thread may be syncing it)
                # zeros reserved ahead of the records are given back first:
                # an open cuts them only from the last segment
                rotation.old.trim()
                rotation.old.sync()
                rotation.old.close()
            if self.group is not None:
                self.group.synced(rotation.seq)
            rotation.step("after_old_segment_sync")
            with self.sync_lock:
                rotation.new.sync()  # (its header and the records so far)
            fsync_dir(self.path)  # (its name)
            with self.manifest_lock:
                rotation.ready = True
            rotation.step("after_new_segment_sync")
            with self.manifest_lock:
                named = self.on_disk.segments
                if all(name != rotation.name for name, _ in named):
                    # (else a manifest written since step 4 names it already)
                    entry = (rotation.name, rotation.seq + 1)
                    self._write(self.on_disk, [*named, entry], "rotate_manifest")
        except BaseException as exc:
            if self.failure is None:
                self.failure = exc
            rotation.fail(exc, self.sync_lock)  # (self.rotation stays set)
            raise
        self.rotation = None
        rotation.settle()

    def _copy(self, segments: list[tuple[str, int]]) -> Manifest:
        """The in-memory manifest as it will be written: its config copied
        (a msgpack round trip: what a read of the file gives, and 8x faster
        than ``copy.deepcopy``, measured 0.6 against 5.1 ms for a config
        naming 2,000 snapshot parts), with ``segments``."""
        return dataclasses.replace(
            self.manifest,
            config=unpack(pack(self.manifest.config)),
            snapshots=list(self.manifest.snapshots),
            segments=list(segments),
            ends=dict(self.manifest.ends),
        )

    def _write(self, base: Manifest, segments: list[tuple[str, int]], step: str) -> None:
        """Write ``base`` with ``segments`` as the MANIFEST (the caller
        holds :attr:`manifest_lock`) and keep it as :attr:`on_disk`."""
        written = dataclasses.replace(base, segments=list(segments))
        write_manifest(self.path, written, step=step)
        self.on_disk = written
        self.manifest.generation = written.generation

    def use_manifest(self, written: Manifest) -> None:
        """Take ``written``, a manifest written elsewhere (a forget's
        commit), as the in-memory one and as what MANIFEST holds.

        Runtime complexity: O(size of the manifest)
        """
        with self.manifest_lock:
            self.manifest = written
            self.on_disk = self._copy(written.segments)
            self.copies += 1
            self.copy_on_disk = self.copies

    def write_manifest(self, step: str) -> None:
        """Write the in-memory manifest atomically (the caller holds the
        ledger's lock); while a rotation has not fsynced its new segment
        yet (step 4 of :meth:`finish_rotation`), without that segment: a
        manifest must not name a file whose name a power cut may lose.
        ``step`` names the crash points (see
        :func:`~rankengine.durable.manifest.write_manifest`).

        Runtime complexity: O(size of the manifest) plus two fsyncs
        """
        with self.manifest_lock:
            self._write_copy(self._take_copy(), step)

    def take_copy(self) -> tuple[int, Manifest]:
        """The in-memory manifest as :meth:`write_manifest` would write it
        now, and its number, for :meth:`write_copy` to write after the
        caller lets the ledger's lock go (the caller holds it, and the
        compaction lock: no rotation starts and no segment is dropped
        before the write).

        Runtime complexity: O(size of the manifest)
        """
        with self.manifest_lock:  # (rotation.ready is set under it)
            return self._take_copy()

    def _take_copy(self) -> tuple[int, Manifest]:
        segments = self.manifest.segments
        rotation = self.rotation
        if rotation is not None and not rotation.ready:
            segments = [entry for entry in segments if entry[0] != rotation.name]
        self.copies += 1
        return self.copies, self._copy(segments)

    def write_copy(self, copy: tuple[int, Manifest], step: str) -> bool:
        """Write ``copy`` (:meth:`take_copy`) as the MANIFEST, without the
        ledger's lock; False, writing nothing, when MANIFEST holds a later
        copy already (which holds every change this one does).

        Runtime complexity: O(size of the manifest) plus two fsyncs
        """
        with self.manifest_lock:
            return self._write_copy(copy, step)

    def _write_copy(self, copy: tuple[int, Manifest], step: str) -> bool:
        number, manifest = copy
        if number <= self.copy_on_disk:
            return False
        self._write(manifest, manifest.segments, step)
        self.copy_on_disk = number
        return True

    def drop_segments_before(self, seq: int) -> None:
        """Remove segments whose every record is at most ``seq`` (all but
        the one holding ``seq + 1``, and those after it)."""
        keep_from = self.manifest.chain_start(seq)
        doomed = self.manifest.segments[:keep_from]
        if not doomed:
            return
        self.manifest.segments = self.manifest.segments[keep_from:]
        self.write_manifest("drop_manifest")
        for name, _ in doomed:
            os.remove(os.path.join(self.path, name))
        fsync_dir(self.path)

    # ------------------------------------------------------------------
    # View snapshots
    # ------------------------------------------------------------------
    def view_dir(self, view: str) -> str:
        """The directory of ``view``'s snapshot files."""
        return os.path.join(self.path, VIEWS_DIR, view)

    def write_parts(
        self,
        view: str,
        seq: int,
        ledger_ms: int,
        parts: list[tuple[Any, Any]],
        *,
        pause: Callable[[], None] | None = None,
    ) -> list[list[Any]]:
        """Write ``view``'s parts as snapshot files of ``seq``; return the
        ``[key, file name]`` list the manifest names them by (the caller
        commits it with :meth:`commit`): :func:`write_view_parts` in the
        view's directory."""
        return write_view_parts(self.view_dir(view), view, seq, ledger_ms, parts, pause=pause)

    def read_parts(
        self,
        view: str,
        files: list[list[Any]],
        columns: int | None,
        shared: SharedChunks | None = None,
        defer: Callable[[dict[str, Any]], bool] | None = None,
    ) -> list[Snapshot]:
        """:func:`read_view_parts` in ``view``'s directory."""
        return read_view_parts(self.view_dir(view), files, columns, shared, defer)

    def commit(self) -> None:
        """Write the manifest (views, snapshots and segments) atomically."""
        self.write_manifest("ledger_manifest")
        crash_point("after_ledger_manifest")

    def remove_unlisted(self) -> list[str]:
        """Remove view files and directories the manifest does not name
        (left by a crash, or by a removed view); return notes."""
        notes: list[str] = []
        root = os.path.join(self.path, VIEWS_DIR)
        if not os.path.isdir(root):
            return notes
        views = self.manifest.config.get("views", {})
        snaps = self.manifest.config.get("snapshots", {})
        for view in sorted(os.listdir(root)):
            directory = os.path.join(root, view)
            if view not in views:
                shutil.rmtree(directory, ignore_errors=True)
                notes.append(f"removed the files of view {view!r} (no longer registered)")
                continue
            listed = {name for _key, name in snaps.get(view, [0, []])[1]}
            for name in sorted(os.listdir(directory)):
                if name not in listed:
                    os.remove(os.path.join(directory, name))
        return notes

    def close(self) -> None:
        """Sync and close the log, stop the threads, release the directory."""
        if self.group is not None:
            self.group.close()  # (the last fsync: its waiters are released)
        self._stop.set()
        if self._flusher is not None and self._flusher is not threading.current_thread():
            self._flusher.join()
        try:
            if self.writer is not None:
                writer, self.writer = self.writer, None
                try:
                    if self.failure is None:
                        writer.sync()
                finally:
                    writer.trim()
                    writer.close()
        finally:
            self.lock.release()


def _header(first_seq: int) -> dict[str, Any]:
    """The header of a new segment of a ledger's log, from ``first_seq``."""
    return {
        "first_seq": first_seq,
        "created_ms": time.time_ns() // 1_000_000,
        "config": {"kind": LEDGER_KIND},
    }


def write_view_parts(
    directory: str,
    view: str,
    seq: int,
    ledger_ms: int,
    parts: list[tuple[Any, Any]],
    *,
    prefix: str = SNAP_PREFIX,
    suffix: str = "",
    pause: Callable[[], None] | None = None,
) -> list[list[Any]]:
    """Write ``view``'s parts in ``directory`` as snapshot files of ``seq``
    named ``<prefix><seq>-<n>.snap<suffix>``; return the ``[key, file
    name]`` list (without ``suffix``) the manifest names them by.  A part
    not loaded yet (an :class:`~rankengine.timed.lazy.Unloaded`) is its
    file copied under the new header, and loads from the copy from then
    on.  ``pause``: called between pieces of the encoding (see
    :func:`~rankengine.durable.snapshot.write_snapshot_columns`).  A
    compaction in a child process (:mod:`rankengine.ledger.replayed`)
    writes under its own prefix and a ``.tmp`` suffix, names no manifest
    may hold until its parent renames them.

    Runtime complexity: O(N) over the parts' members (a copied part: its bytes)
    """
    if not os.path.isdir(directory):
        make_directory(directory)
    files: list[list[Any]] = []
    for n, (key, (part, board)) in enumerate(parts):
        name = f"{prefix}{seq:020d}-{n:05d}.snap"
        path = os.path.join(directory, name + suffix)
        if is_unloaded(board):
            # a closed period never loaded: its file is its state, copied
            # under the new seq; the board now loads from the copy
            assert isinstance(board, Unloaded)
            head = {"seq": seq, "view": view, "key": key, "part": part}
            if path != board.path:
                head["ledger_ms"] = ledger_ms
                board.move(functools.partial(copy_snapshot, header=head), path)
            files.append([key, name])
            continue
        header = {
            "seq": seq,
            "clock": 0 if board is None else board.clock,
            "view": view,
            "key": key,
            "part": part,
            "board": board is not None,
            "ledger_ms": ledger_ms,
        }
        columns: Any = ([], [], [], {}) if board is None else board._export_columns()
        write_snapshot_columns(path, header, columns, pause=pause)
        files.append([key, name])
    return files


def read_view_parts(
    directory: str,
    files: list[list[Any]],
    columns: int | None,
    shared: SharedChunks | None = None,
    defer: Callable[[dict[str, Any]], bool] | None = None,
) -> list[Snapshot]:
    """Read back the snapshot files ``files`` (``[key, name]``) of one view
    in ``directory`` (raises on damage); ``shared`` lets views whose
    snapshots hold the same rows share the decoded chunks (see
    :class:`~rankengine.durable.snapshot.SharedChunks`); a part whose header
    ``defer`` accepts is checked, not decoded
    (:attr:`~rankengine.durable.snapshot.Snapshot.deferred`).

    Runtime complexity: O(bytes read)
    """
    return [
        read_snapshot(os.path.join(directory, name), columns=columns, shared=shared, defer=defer)
        for _key, name in files
    ]


def refuse_migrated(config: Mapping[str, Any], name: str, why: str) -> None:
    """Raise ``LogError`` when view ``name`` was made by ``rankengine
    migrate``: its state before the migration is only in its snapshot (the
    log starts at the migration), so a rebuild from the log would lose it.

    Runtime complexity: O(1)

    >>> refuse_migrated({"migrated": {}}, "alltime", "asked")
    """
    found = config.get(MIGRATED_KEY, {}).get(name)
    if found is not None:
        raise LogError(
            f"view {name!r}: {why}, but it was migrated from {found} and its state before "
            "the migration is only in its snapshot, not in the log: it is not rebuilt from "
            "the log (restore the view's snapshot files from a backup)"
        )


def snapshot_entry(entry: list[Any]) -> tuple[int, list[list[Any]], int | None]:
    """A view's entry in the manifest's ``snapshots`` map: the seq its
    snapshot reflects, its ``[key, file]`` list, and the ledger's clock at
    that seq (ms; None in an entry written before the clock was kept there).

    Runtime complexity: O(1)

    >>> snapshot_entry([7, [[None, "s7-0.snap"]], 1_800_000_000_000])
    (7, [[None, 's7-0.snap']], 1800000000000)
    >>> snapshot_entry([7, []])
    (7, [], None)
    """
    clock = entry[2] if len(entry) > 2 else None
    return entry[0], entry[1], None if clock is None else int(clock)


def snapshot_clock(clock: int | None, snaps: list[Snapshot]) -> int | None:
    """The ledger's clock at a view's snapshot: the manifest entry's
    ``clock`` (:func:`snapshot_entry`), else the one every part's header
    holds; None when neither says (an entry from before the clock was kept
    in the manifest, of a view with no part, such as a keyed view with no
    board yet).

    Runtime complexity: O(1)

    >>> snapshot_clock(5, []), snapshot_clock(None, [])
    (5, None)
    """
    if clock is not None:
        return clock
    return int(snaps[0].header.get("ledger_ms", 0)) if snaps else None


def remove_stray_files(directory: str) -> None:
    """Remove a removed view's directory now (best effort; the next open
    removes whatever is left)."""
    shutil.rmtree(directory, ignore_errors=True)


class LogTail:
    """Where reading the log ended: the last seq and time, a torn tail, and
    the active segment ``(name, first_seq, start, end)``."""

    def __init__(self) -> None:
        self.last_seq = 0
        self.last_ms = 0
        self.torn: TornTail | None = None
        self.active: tuple[str, int, int, int] | None = None


def read_events(
    directory: str,
    manifest: Manifest,
    after: int,
    tail: LogTail | None = None,
    progress: Callable[[int], None] | None = None,
) -> Iterator[Event]:
    """The records after seq ``after``, in order, across segments, checking
    continuity; fills ``tail`` as it goes.  Raises ``LogError`` when the
    records needed were compacted away, ``CorruptionError`` on damage.

    Runtime complexity: O(records read)
    """
    out = tail if tail is not None else LogTail()
    for reader in log_segments(directory, manifest, after, out):
        report = None if progress is None else (lambda _at, r=reader: progress(r.last_seq))
        for event in reader.events(report):
            out.last_seq, out.last_ms = event.seq, event.time_ms
            if event.seq > after:
                yield event


def log_segments(
    directory: str, manifest: Manifest, after: int, out: LogTail
) -> Iterator[SegmentReader]:
    """The open readers of the segments that hold the records after seq
    ``after``, in order; the caller reads each (its records, and
    :attr:`~rankengine.durable.eventlog.SegmentReader.last_seq` set to the
    last one, as ``events()`` leaves it) before asking for the next, and
    this checks the segments follow one another and fills ``out``: the
    active segment, a torn tail (only the last segment may have one).
    Raises ``LogError`` when the records needed were compacted away,
    ``CorruptionError`` on damage.  Shared by :func:`read_events` and the
    fold (:mod:`rankengine.ledger.fold`), which reads the frames in bulk.

    Runtime complexity: O(segments), besides the caller's reading
    """
    segments = manifest.segments
    start = manifest.chain_start(after)
    chain = segments[start:]
    if not chain or chain[0][1] > after + 1:
        raise LogError(
            f"{directory}: the events needed from seq {after + 1} were compacted away "
            "(a ledger keeps its history unless opened with retain_log=False)"
        )
    expected = chain[0][1]
    for i, (name, first) in enumerate(chain):
        path = os.path.join(directory, name)
        if first != expected and i:
            raise CorruptionError(path, 0, f"segment starts at seq {first}, expected {expected}")
        with SegmentReader(path) as reader:
            yield reader
            if reader.torn is not None and i != len(chain) - 1:
                raise CorruptionError(
                    path, reader.torn.offset, f"{reader.torn.reason} inside the log"
                )
            out.torn = reader.torn
            out.active = (name, first, reader.start, reader.end)
            out.last_seq = max(out.last_seq, reader.last_seq)
            expected = reader.last_seq + 1
