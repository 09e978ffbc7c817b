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
scores, tie order and metadata included.

fsync policies (what a crash can lose)
--------------------------------------
``"always"``   nothing that was acknowledged: a write returns only after its
               record is fsynced (one fsync per write call; a ``set_many``
               shares one fsync among all its members).
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
import gc
import os
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Generator, Iterator
from typing import Any, Final

from rankengine.board.changes import DEL, META, PUT, Change
from rankengine.board.checks import check_comparable, check_flag
from rankengine.board.copying import Uncopyable
from rankengine.board.leaderboard import Leaderboard
from rankengine.durable.eventlog import (
    MAPPED_SEGMENTS,
    CorruptionError,
    Event,
    LogError,
    MappedSegmentWriter,
    RecordFramer,
    RecordTooLargeError,
    RecoveryWarning,
    SegmentReader,
    SegmentWriter,
    TornTail,
    TornTailError,
    TornTailWarning,
    crash_point,
)
from rankengine.durable.manifest import (
    MANIFEST_NAME,
    SEGMENT_RE,
    SNAPSHOT_RE,
    DirectoryLock,
    Manifest,
    creation_leftovers,
    read_manifest,
    segment_name,
    snapshot_name,
    write_manifest,
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
from rankengine.durable.snapshot import fsync_dir, read_snapshot, write_snapshot_columns

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

#: Settings that change what the stored data means; a reopen must agree.
_BINDING: Final = ("order", "tie_break", "rank_style")
_DEFAULTS: Final[dict[str, Any]] = {
    "order": "desc",
    "tie_break": "first",
    "rank_style": "unique",
    "backend": "sortedlist",
}


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _checked_clock(now: Callable[[], int]) -> Callable[[], int]:
    """``now``, refusing a stamp that is not an int of milliseconds (a
    float from ``time.time() * 1000``, say): the write raises before its
    record is logged, instead of leaving a record no open can read.

    Runtime complexity: O(1) per call

    >>> _checked_clock(lambda: 1_000)()
    1000
    >>> _checked_clock(lambda: 1e12)()
    Traceback (most recent call last):
    ...
    TypeError: now() must return an int of milliseconds, not 1000000000000.0
    """

    def checked() -> int:
        stamp = now()
        if isinstance(stamp, bool) or not isinstance(stamp, int):
            raise TypeError(f"now() must return an int of milliseconds, not {stamp!r}")
        return int(stamp)

    return checked


def _stored_config(config: dict[str, Any]) -> dict[str, Any]:
    order = config["order"]
    backend = config["backend"]
    return {
        "order": list(order) if isinstance(order, tuple) else order,
        "tie_break": config["tie_break"],
        "rank_style": config["rank_style"],
        "backend": backend if isinstance(backend, str) else None,
    }


def _resolve_config(
    stored: dict[str, Any] | None, explicit: dict[str, Any], path: str
) -> dict[str, Any]:
    """The board settings: stored ones win; an explicit conflicting one is an error.

    The backend is only the in-memory structure, so it may differ.
    """
    out = dict(_DEFAULTS)
    if stored is not None:
        for key in _BINDING:
            value = stored.get(key)
            out[key] = tuple(value) if isinstance(value, list) else value
        if isinstance(stored.get("backend"), str):
            out["backend"] = stored["backend"]
    for key, value in explicit.items():
        if value is None:
            continue
        if stored is not None and key in _BINDING:
            have = out[key]
            want = tuple(value) if isinstance(value, list) else value
            if have != want:
                raise ValueError(
                    f"{path} holds a board with {key}={have!r}; it cannot be opened "
                    f"with {key}={want!r} (leave {key} out to use the stored setting)"
                )
        out[key] = value
    return out


def _durable_class(cls: type[Leaderboard]) -> type[DurableLeaderboard]:
    if issubclass(cls, DurableLeaderboard):
        return cls
    if cls is Leaderboard:
        return DurableLeaderboard
    return type(f"Durable{cls.__name__}", (DurableLeaderboard, cls), {})


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
        del live


# ----------------------------------------------------------------------
# Loading: snapshot + replay
# ----------------------------------------------------------------------
class Loaded:
    """What loading a directory found: where the log ends and what was odd."""

    def __init__(self) -> None:
        self.snapshot_seq = 0
        self.snapshot_size = 0
        self.last_seq = 0
        self.last_ms = 0
        self.records = 0
        self.torn: TornTail | None = None
        #: the last segment read: (name, first_seq, start, end)
        self.active: tuple[str, int, int, int] | None = None
        self.notes: list[str] = []


class _TailReplay:
    """The records after the snapshot: each checked in turn, as applying
    them one by one would check it, and all applied at the end by their net
    effect.

    A long tail mostly rewrites the same members, and a member's state
    after the tail is its last record's: the net effect is one ``DEL`` per
    member that was on the board and was deleted, then each member's last
    ``PUT`` (in log order), then each member's last ``META``::

        records   PUT a 5 @7 | PUT b 3 @8 | PUT a 9 @9 | DEL b | META a {...}
        net       DEL b (on the board before the tail) | PUT a 9 @9 | META a {...}

    A ``DEL`` also drops the member's metadata, so a member deleted and put
    back is deleted first.  The puts go in as one batch, which the board
    bulk-loads when it rewrites a large part of it.  Speed: opening the
    demo's board (a snapshot of 100,000 members, then 100,000 records
    touching 60,000 of them) took 1.5-1.7 s on the sorted list and
    3.2-3.9 s on the skip list when each record was applied as a write;
    1.0 s and 1.1-1.3 s now (most of it reading and checking the records).

    Runtime complexity: O(1) per change checked; the net effect is applied
    as a batch write of the members touched.
    """

    def __init__(self, board: Leaderboard) -> None:
        self.board = board
        self.by_member = board._tie_break == "member"
        self.check_score = board._codec.check
        #: the board before the tail (not changed until :meth:`finish`)
        self.before = board._primary
        #: member -> present now, for the members the tail touched
        self.present: dict[Any, bool] = {}
        self.size = len(board._primary)
        self.member_type = board._member_type if board._primary else None
        #: members on the board before the tail that a DEL removed
        self.deleted: set[Any] = set()
        #: member -> its last PUT since its last DEL, in log order
        self.puts: dict[Any, Change] = {}
        #: member -> its last META value since its last DEL
        self.metas: dict[Any, Any] = {}
        self.clock = 0

    def add(self, event: Event, reader: SegmentReader) -> None:
        """Check that ``event`` applies after the records before it, and
        note its changes; :class:`CorruptionError` if it does not apply."""
        # (the type checks see the board as of the event's start, as a
        # board applying it would: an event is one batch write, and on an
        # empty board its members must compare with each other, as a batch
        # write checks them: the first one fixes the type)
        held = self.member_type if self.size else None
        present, puts = self.present, self.puts
        try:
            # (members need no type check here: the record decoder admits
            # only str, bytes and int members)
            for change in event.changes:
                kind, member = change[0], change[1]
                if self.by_member:
                    if held is None:
                        held = type(member)
                    else:
                        check_comparable(member, held)
                here = present.get(member)
                if here is None:
                    here = member in self.before
                if kind == PUT:
                    self.check_score(change[2])
                    if not here:
                        if not self.size:
                            self.member_type = type(member)
                        self.size += 1
                        present[member] = True
                    puts.pop(member, None)  # keep log order: re-add at the end
                    puts[member] = change
                    self.clock = max(self.clock, change[3])
                elif not here:
                    raise ValueError(
                        f"{'DEL' if kind == DEL else 'META'} of absent member {member!r}"
                    )
                elif kind == DEL:
                    present[member] = False
                    self.size -= 1
                    puts.pop(member, None)
                    self.metas.pop(member, None)
                    if member in self.before:
                        self.deleted.add(member)
                else:
                    assert kind == META
                    self.metas[member] = change[2]
        except (TypeError, ValueError) as exc:
            raise CorruptionError(
                reader.path, reader.at, f"record {event.seq} does not apply ({exc})"
            ) from None

    def finish(self) -> None:
        """Apply the net effect of the records added to the board."""
        board = self.board
        if self.deleted:
            board._apply([(DEL, member) for member in self.deleted])
        if self.puts:
            board._apply(list(self.puts.values()))
        metas: list[Change] = [(META, member, data) for member, data in self.metas.items()]
        if metas:
            board._apply(metas)
        board._clock = max(board._clock, self.clock)


def load_board(
    board: Leaderboard,
    directory: str,
    manifest: Manifest,
    *,
    until_seq: int | None = None,
    until_ms: int | None = None,
    from_log: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
) -> Loaded:
    """Fill the empty ``board`` from ``directory``: the newest usable
    snapshot (unless ``from_log``) and the records after it, up to
    ``until_seq`` / ``until_ms`` if given.

    A damaged snapshot is skipped with a warning when an older one (or the
    log from seq 1) can replace it.  A torn tail is reported in the result,
    never cut here.

    Runtime complexity: O(N) for the snapshot plus O(k) per replayed change.
    """
    out = Loaded()
    columns = board._codec.columns
    segments = manifest.segments
    errors: list[Exception] = []
    if not from_log:
        for name, seq in reversed(manifest.snapshots):
            if until_seq is not None and seq > until_seq:
                continue
            start = manifest.chain_start(seq)
            if start == len(segments) or segments[start][1] > seq + 1:
                continue  # no segments continue from this snapshot
            path = os.path.join(directory, name)
            try:
                snap = read_snapshot(path, columns=columns)
                if snap.seq != seq:
                    raise CorruptionError(
                        path, 0, f"snapshot header says seq {snap.seq}, not {seq}"
                    )
            except (CorruptionError, OSError) as exc:
                errors.append(exc)
                continue
            if until_ms is not None and snap.header.get("time_ms", 0) > until_ms:
                continue
            if progress is not None:
                progress("snapshot", snap.size, snap.size)
            enabled = gc.isenabled()
            # Bulk load: the collector would rescan the growing heap many
            # times while a million tuples are created (measured: 3x slower).
            gc.disable()
            try:
                # a columnar bulk load when the board offers one (no per-row
                # Python work); else the row-by-row seam
                restore_columns = getattr(board, "_restore_columns", None)
                if restore_columns is not None:
                    restore_columns(
                        *snap.columns(),
                        int(snap.header["clock"]),
                        negated=snap.negated_clocks,
                    )
                else:
                    board._restore(snap.rows(), int(snap.header["clock"]))
            finally:
                if enabled:
                    gc.enable()
            out.snapshot_seq = out.last_seq = seq
            out.last_ms = int(snap.header.get("time_ms", 0))
            out.snapshot_size = snap.size
            break
    if errors:
        if out.snapshot_seq == 0 and not (segments and segments[0][1] == 1):
            raise errors[0]
        for error in errors:
            # (a CorruptionError's own message says the board refuses to
            # open, which is not so here: it opens from an older state)
            if isinstance(error, CorruptionError):
                what = f"{error.path}: {error.reason} at offset {error.offset}"
            else:
                what = str(error)
            note = (
                f"skipped a damaged snapshot, replaying more of the log instead: {what}; "
                "`rankengine repair DIR` moves it aside"
            )
            out.notes.append(note)
            warnings.warn(note, RecoveryWarning, stacklevel=3)
    base = out.snapshot_seq
    start = manifest.chain_start(base)
    chain = segments[start:]
    if not chain or chain[0][1] > base + 1:
        # the first segment kept after the one needed (chain_start found none
        # starting early enough when the chain is empty)
        kept = chain or [s for s in segments if s[1] > base + 1]
        where = f"begins at seq {kept[0][1]}" if kept else "is gone"
        raise LogError(
            f"{directory}: the log needed from seq {base + 1} {where}; older "
            "records were compacted away (open with retain_log=True to keep history)"
        )
    tail = _TailReplay(board)
    for i, (name, first) in enumerate(chain):
        path = os.path.join(directory, name)
        if i and first != out.last_seq + 1:
            raise CorruptionError(
                path, 0, f"segment starts at seq {first}, expected {out.last_seq + 1}"
            )
        with SegmentReader(path) as reader:
            if reader.first_seq != first:
                raise CorruptionError(path, 0, f"segment header says first seq {reader.first_seq}")
            stop = False
            report = (
                None if progress is None else (lambda at, n=name, s=reader.size: progress(n, at, s))
            )
            for event in reader.events(report):
                if event.seq <= base:
                    continue
                if (until_seq is not None and event.seq > until_seq) or (
                    until_ms is not None and event.time_ms > until_ms
                ):
                    stop = True
                    break
                tail.add(event, reader)
                out.last_seq, out.last_ms = event.seq, event.time_ms
                out.records += 1
            if stop:
                tail.finish()
                return out
            if reader.last_seq < base:
                raise CorruptionError(
                    path,
                    reader.end,
                    f"log ends at seq {reader.last_seq} before the snapshot's {base}",
                )
            if reader.torn is not None and i != len(chain) - 1:
                raise CorruptionError(
                    path, reader.torn.offset, f"{reader.torn.reason} inside the log"
                )
            out.torn = reader.torn
            out.active = (name, first, reader.start, reader.end)
    tail.finish()
    return out


def _no_board(directory: str) -> FileNotFoundError:
    return FileNotFoundError(f"{directory} holds no rankengine board (no {MANIFEST_NAME})")


def _not_fresh(directory: str, other: str) -> LogError:
    return LogError(
        f"{directory} has no {MANIFEST_NAME} but holds {other!r}: refusing to create a "
        "new board over it (run `rankengine verify` / `rankengine repair` on it)"
    )


def _check_before_locking(directory: str, create: bool) -> None:
    """Refuse what :func:`_open_manifest` would refuse in a directory that
    holds no board, before the lock is taken: taking it would leave a
    ``LOCK`` file in a directory an open does not use (as :func:`repair`
    avoids too).  The open checks again under the lock.

    A board being created concurrently never shows a name other than its
    first segment (header only), temporary files and ``LOCK`` before its
    ``MANIFEST`` exists, so a directory refused here holds no board.

    Runtime complexity: O(files in the directory)
    """
    manifest = os.path.join(directory, MANIFEST_NAME)
    if os.path.lexists(manifest):
        return
    if not create:
        raise _no_board(directory)
    _, other = creation_leftovers(directory)
    if other is not None and not os.path.lexists(manifest):
        raise _not_fresh(directory, other)


def _open_manifest(directory: str, config: dict[str, Any], create: bool) -> Manifest:
    """Read the manifest, or create a new board if the directory holds none."""
    try:
        return read_manifest(directory)
    except FileNotFoundError:
        pass
    if not create:
        raise _no_board(directory)
    # A crash while creating leaves only a header-only first segment and
    # temporary files; anything else means this is not a fresh directory.
    stale, other = creation_leftovers(directory)
    if other is not None:
        raise _not_fresh(directory, other)
    for path in stale:
        if not path.endswith("LOCK"):
            os.remove(path)
    name = segment_name(1)
    header = {"first_seq": 1, "created_ms": _now_ms(), "config": config}
    SegmentWriter.create(os.path.join(directory, name), header).close()
    fsync_dir(directory)
    crash_point("after_create_segment")
    manifest = Manifest(config, [], [(name, 1)])
    write_manifest(directory, manifest, step="create_manifest")
    return manifest


def _manifest_may_name(directory: str, name: str) -> bool:
    """Might the manifest on disk name file ``name``?  True when it does, and
    when it cannot be read (a file it might name must not be removed).

    Runtime complexity: O(size of the manifest)
    """
    try:
        on_disk = read_manifest(directory)
    except (CorruptionError, OSError):
        return True
    return any(n == name for n, _ in on_disk.snapshots + on_disk.segments)


def _remove_leftovers(directory: str, manifest: Manifest) -> list[str]:
    """Remove what an interrupted compaction left behind; return notes."""
    listed = {name for name, _ in manifest.snapshots} | {name for name, _ in manifest.segments}
    last_first = manifest.segments[-1][1] if manifest.segments else 0
    notes: list[str] = []
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if name in listed:
            continue
        if name.endswith(".tmp") or SNAPSHOT_RE.fullmatch(name):
            os.remove(path)
            notes.append(f"removed {name} (left by an interrupted snapshot or compaction)")
        elif (match := SEGMENT_RE.fullmatch(name)) is not None:
            if int(match.group(1)) < last_first:
                os.remove(path)
                notes.append(f"removed {name} (compacted away before a crash)")
                continue
            try:
                with SegmentReader(path) as reader:
                    empty = reader.blank()
            except (CorruptionError, OSError):
                empty = False
            if empty:
                os.remove(path)
                notes.append(f"removed {name} (a new segment never used)")
            else:
                os.replace(path, path + ".orphan")
                notes.append(f"renamed {name} to {name}.orphan: it is not in the manifest")
                warnings.warn(notes[-1], RecoveryWarning, stacklevel=4)
    if notes:
        fsync_dir(directory)
    return notes


class DurableLeaderboard(Uncopyable, Leaderboard):
    """A :class:`Leaderboard` stored in a directory; the same API plus
    :meth:`flush`, :meth:`close`, :meth:`compact`, :meth:`events`.

    :param path: the directory (created if missing, unless ``create=False``).
    :param fsync: ``"always"``, ``"everysec"`` (default) or ``"never"``; see
        the module docstring for what each can lose.
    :param order, tie_break, rank_style, backend: as for :class:`Leaderboard`;
        when reopening, the stored settings are used and an explicit
        different ``order``/``tie_break``/``rank_style`` is an error.
    :param on_torn_tail: ``"truncate"`` (cut an interrupted last record with a
        :class:`~rankengine.durable.eventlog.TornTailWarning`) or ``"refuse"``
        (raise :class:`~rankengine.durable.eventlog.TornTailError`).
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
        create: bool = True,
        now: Callable[[], int] | None = None,
    ) -> None:
        # Every option is checked before anything is created or locked: a
        # bad setting must not reach the new board's MANIFEST.
        check_fsync(fsync)
        check_log_options(on_torn_tail, compact_min_bytes, compact_ratio, retain_log)
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
        fresh = _resolve_config(None, explicit, os.fspath(path))
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
            manifest = _open_manifest(self.path, _stored_config(fresh), create)
            config = _resolve_config(manifest.config, explicit, self.path)
            super().__init__(**config)
            loaded = load_board(self, self.path, manifest)
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
            self.recovery_notes = loaded.notes + _remove_leftovers(self.path, manifest)
            assert loaded.active is not None
            name, first, start, end = loaded.active
            # Under "always" every record waits for an fsync anyway, so the
            # write() system call it saves is noise there; the map is for
            # the policies where it is most of a record's cost.
            self._writer_class = (
                MappedSegmentWriter if MAPPED_SEGMENTS and fsync != "always" else SegmentWriter
            )
            self._writer = self._writer_class.reopen(os.path.join(self.path, name), end, start)
        except BaseException:
            self._dirlock.release()
            raise
        self._manifest = manifest
        self._policy: FsyncPolicy = fsync
        self._sync_each = fsync == "always"
        self._framer = RecordFramer()
        self._now = _now_ms if now is None else _checked_clock(now)
        self._seq = loaded.last_seq
        self._last_ms = loaded.last_ms
        self._active_first = first
        self._snapshot_size = loaded.snapshot_size
        self._compact_min = compact_min_bytes
        self._compact_ratio = compact_ratio
        self._compact_after = 0
        self._retain = retain_log
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
        self._stop = threading.Event()
        self._flusher: threading.Thread | None = None
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
        (:data:`~rankengine.durable.eventlog.MAX_FRAME_BYTES`, about 1 GiB: tens of
        millions of members with short names) raises
        :class:`~rankengine.durable.eventlog.RecordTooLargeError` and is unchanged.
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
        now = self._now()
        stamp = now if now > self._last_ms else self._last_ms  # never backwards
        data = self._framer.frame(seq, stamp, changes)
        # Only the everysec flusher sets _sync_started; test it here rather
        # than calling _wait_if_stalled() on every write.
        if self._sync_started is not None:
            self._wait_if_stalled()
        writer = self._writer
        writer.append(data)
        if self._sync_each:
            try:
                writer.sync()
            except BaseException as exc:
                writer.undo_last(len(data))
                self._failure = exc
                raise
        else:
            self._dirty = True
        self._seq, self._last_ms = seq, stamp
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
            self._sync_log()

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
        if self.__dict__.get("_released", True):
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

        Steps, each crash-safe: fsync the log (first without the board
        lock, then what arrived meanwhile under it); start segment
        ``seq+1`` and list it in the manifest; write the snapshot (temp
        file, fsync, rename, directory fsync); replace the manifest with one
        naming the snapshot; only then remove the older segments and
        snapshots (kept with ``retain_log=True``).  Writes continue while
        the snapshot is written.

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

    def _compact(self) -> int:
        directory = self.path
        manifest = self._manifest
        if not self._sync_each:
            self._presync()
        with self._lock:
            self._check_writable()
            seq = self._seq
            if manifest.snapshots and manifest.snapshots[-1][1] == seq:
                return seq
            # The segment must be on disk up to ``seq`` before the manifest
            # names a segment starting at ``seq + 1`` (a power cut would
            # otherwise leave a gap that refuses to open), and no write may
            # land in it between this fsync and the switch below: so this
            # fsync stays under the lock.  After _presync it only writes back
            # what arrived meanwhile; under "always" nothing is dirty.  A
            # failure fails the board, as any fsync's does.
            self._sync_log()
            columns = self._export_columns()
            header = {
                "seq": seq,
                "clock": self._clock,
                "time_ms": self._last_ms,
                "created_ms": _now_ms(),
                "config": manifest.config,
            }
            if self._active_first != seq + 1:
                name = segment_name(seq + 1)
                writer = self._writer_class.create(
                    os.path.join(directory, name),
                    {"first_seq": seq + 1, "created_ms": _now_ms(), "config": manifest.config},
                )
                try:
                    fsync_dir(directory)
                except BaseException:
                    # No manifest names it yet: remove it, so that a retry
                    # at the same seq can create it again.
                    writer.close()
                    with contextlib.suppress(OSError):
                        os.remove(writer.path)
                    raise
                crash_point("after_segment_create")
                # Once the manifest lists a segment after this one, an open
                # no longer cuts this one's reserved zeros: give them back
                # first, or a kill before the switch below leaves them there.
                with self._sync_lock:
                    self._writer.trim()
                manifest.segments.append((name, seq + 1))
                try:
                    write_manifest(directory, manifest, step="rotate_manifest")
                except BaseException as exc:
                    manifest.segments.pop()
                    writer.close()
                    if _manifest_may_name(directory, name):
                        # The rename happened (the directory fsync after it
                        # failed): the manifest on disk names the new segment,
                        # so it stays.  Whether the rename survives a power
                        # cut is unknown, so no write may go to either
                        # segment: a write to the new one would be orphaned
                        # by a lost rename, one to the old one would leave a
                        # gap before the new one.  Refuse writes, as after a
                        # failed fsync of the log; the next open keeps the
                        # segment if the manifest names it and removes it
                        # (it is blank) if not.
                        self._failure = exc
                    else:
                        os.remove(writer.path)
                    raise
                with self._sync_lock:
                    old, self._writer = self._writer, writer
                    old.close()
                self._active_first = seq + 1
        snap = snapshot_name(seq)
        size = write_snapshot_columns(os.path.join(directory, snap), header, columns)
        del columns
        with self._lock:
            old_snapshots, old_segments = list(manifest.snapshots), list(manifest.segments)
            manifest.snapshots.append((snap, seq))
            if not self._retain:
                manifest.snapshots = [(snap, seq)]
                manifest.segments = [s for s in manifest.segments if s[1] > seq]
            try:
                write_manifest(directory, manifest, step="swap_manifest")
            except BaseException:
                manifest.snapshots, manifest.segments = old_snapshots, old_segments
                raise
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
            readers = _open_readers(self.path, self._manifest, start, stop)
            if not self._closed:
                readers[-1].size = self._writer.end
        return _Events(readers, start, stop)


def _open_readers(
    directory: str, manifest: Manifest, start: int, stop: int | None
) -> list[SegmentReader]:
    if isinstance(start, bool) or not isinstance(start, int) or start < 1:
        raise ValueError(f"start must be a seq of 1 or more, not {start!r}")
    if stop is not None and (isinstance(stop, bool) or not isinstance(stop, int) or stop < 1):
        raise ValueError(f"stop must be a seq of 1 or more, or None, not {stop!r}")
    segments = manifest.segments
    if not segments:
        return []
    if start < segments[0][1]:
        raise LogError(
            f"{directory}: events before seq {segments[0][1]} were compacted away "
            "(open with retain_log=True to keep them)"
        )
    first = max(0, manifest.chain_start(start - 1))
    readers: list[SegmentReader] = []
    try:
        for name, _ in segments[first:]:
            readers.append(SegmentReader(os.path.join(directory, name)))
    except BaseException:
        for reader in readers:
            reader.close()
        raise
    return readers


class _Events(Iterator[Event]):
    """The events of segments opened at the call: the end of the events,
    :meth:`close` or dropping it closes the files, also before the first
    event was read (a generator's own ``close()`` runs nothing until it has
    started, which left the files to the garbage collector)."""

    def __init__(self, readers: list[SegmentReader], start: int, stop: int | None) -> None:
        self._readers = readers
        self._events = _iterate(readers, start, stop)

    def __next__(self) -> Event:
        return next(self._events)

    def close(self) -> None:
        """Stop the iteration and close the files (idempotent).

        Runtime complexity: O(number of segments)
        """
        self._events.close()
        for reader in self._readers:
            reader.close()

    def __del__(self) -> None:
        self.close()


def _iterate(
    readers: list[SegmentReader], start: int, stop: int | None
) -> Generator[Event, None, None]:
    try:
        for reader in readers:
            for event in reader.events():
                if event.seq < start:
                    continue
                if stop is not None and event.seq >= stop:
                    return
                yield event
            if reader.torn is not None:
                warnings.warn(
                    f"{reader.torn.path}: log ends in a torn tail at offset {reader.torn.offset}",
                    TornTailWarning,
                    stacklevel=3,  # (the caller of _Events.__next__)
                )
    finally:
        for reader in readers:
            reader.close()


def iter_events(
    path: str | os.PathLike[str], start: int = 1, stop: int | None = None
) -> Iterator[Event]:
    """Events with ``start <= seq < stop`` from a board directory (read only).

    Runtime complexity: O(size of the segments read)
    """
    directory = os.fspath(path)
    return _Events(_open_readers(directory, read_manifest(directory), start, stop), start, stop)


def _check_point_in_time(until_seq: object, until_ms: object) -> None:
    """Refuse an ``until_seq`` that is not a sequence number (an int >= 0:
    0 is before the first record) and an ``until_ms`` that is not a time in
    milliseconds (an int or a float, not NaN).

    Runtime complexity: O(1)

    >>> _check_point_in_time(0, 1.7e12)
    >>> _check_point_in_time(2.5, None)
    Traceback (most recent call last):
    ...
    TypeError: until_seq must be an int (a sequence number), not 2.5
    """
    if until_seq is not None:
        if isinstance(until_seq, bool) or not isinstance(until_seq, int):
            raise TypeError(f"until_seq must be an int (a sequence number), not {until_seq!r}")
        if until_seq < 0:
            raise ValueError(f"until_seq must be >= 0, not {until_seq!r}")
    if until_ms is not None:
        if isinstance(until_ms, bool) or not isinstance(until_ms, (int, float)):
            raise TypeError(f"until_ms must be a number of milliseconds, not {until_ms!r}")
        if until_ms != until_ms:
            raise ValueError("until_ms must not be NaN")


def rebuild(
    path: str | os.PathLike[str],
    *,
    until_seq: int | None = None,
    until_ms: int | None = None,
    from_log: bool = False,
    backend: Any = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> Leaderboard:
    """An in-memory :class:`Leaderboard` as the directory's log says it was.

    ``until_seq``/``until_ms``: stop after that record / the last record
    stamped at or before that time (point-in-time recovery).  ``from_log``:
    ignore snapshots and replay every record from seq 1 (needs
    ``retain_log=True`` history).  Nothing is written: a torn tail is
    reported with a warning and left in place.

    Runtime complexity: O(N + k) for N snapshot rows and k replayed changes
    """
    _check_point_in_time(until_seq, until_ms)
    from_log = check_flag(from_log, "from_log")  # "no" ignored the snapshots
    directory = os.fspath(path)
    manifest = read_manifest(directory)
    config = _resolve_config(manifest.config, {"backend": backend}, directory)
    board = Leaderboard(**config)
    loaded = load_board(
        board,
        directory,
        manifest,
        until_seq=until_seq,
        until_ms=until_ms,
        from_log=from_log,
        progress=progress,
    )
    if loaded.torn is not None:
        warnings.warn(
            f"{loaded.torn.path}: ignored a torn tail at offset {loaded.torn.offset} "
            f"({loaded.torn.reason})",
            TornTailWarning,
            stacklevel=2,
        )
    if until_seq is not None and loaded.last_seq < until_seq:
        # a point in time past the end is the end, but a sequence number
        # past it is more often a typo than a request for the whole log
        warnings.warn(
            f"{directory}: the log ends at seq {loaded.last_seq}, before seq {until_seq}: "
            "this is the board at the end of the log",
            RecoveryWarning,
            stacklevel=2,
        )
    return board
