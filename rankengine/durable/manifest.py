"""The manifest: which snapshots and segments make up a durable board.

A board directory holds::

    MANIFEST                          the list below, replaced atomically
    snap-00000000000000001234.snap    a snapshot of everything up to seq 1234
    log-00000000000000001235.seg      records from seq 1235 on
    LOCK                              held (flock) by the process writing

The manifest is one framed msgpack map (see :mod:`rankengine.durable.eventlog`)::

    {"format": 1, "generation": g, "written_ms": t, "config": {...},
     "snapshots": [[name, seq], ...],        oldest first
     "segments":  [[name, first_seq], ...]}  oldest first

Recovery is the newest readable snapshot plus the segments after it.  The
manifest is written to ``MANIFEST.tmp``, fsynced, renamed over ``MANIFEST``
and the directory fsynced, so a crash leaves the old or the new one, never
a mix.  Files the manifest does not name are leftovers of an interrupted
compaction and are removed on open (a segment that still holds records is
renamed to ``.orphan`` instead, and kept).

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as tmp:
...     write_manifest(tmp, Manifest({"order": "desc"}, [], [(segment_name(1), 1)]))
...     read_manifest(tmp).segments
[('log-00000000000000000001.seg', 1)]
"""

from __future__ import annotations

import contextlib
import errno
import functools
import gc
import io
import os
import re
import shutil
import signal
import threading
import time
import warnings
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final, Literal, NamedTuple, TypeAlias

from rankengine.board.checks import check_flag
from rankengine.durable.eventlog import (
    FRAME,
    PREFIX_BYTES,
    CorruptionError,
    LogError,
    SegmentReader,
    SegmentWriter,
    _Damage,
    check_prefix,
    crash_point,
    decode_record,
    frame,
    pack,
    read_frames,
    unpack,
    write_prefix,
)
from rankengine.durable.options import make_directory
from rankengine.durable.snapshot import fsync_dir, read_snapshot

__all__ = [
    "LOCK_NAME",
    "MANIFEST_MAGIC",
    "MANIFEST_NAME",
    "DirectoryLock",
    "FileInfo",
    "Finding",
    "Manifest",
    "RepairResult",
    "Report",
    "creation_leftovers",
    "read_manifest",
    "repair",
    "segment_name",
    "snapshot_name",
    "verify",
    "write_manifest",
]

MANIFEST_NAME: Final = "MANIFEST"
LOCK_NAME: Final = "LOCK"
#: Magic of the manifest file (same design as the segment magic).
MANIFEST_MAGIC: Final = b"\x89RKMAN\r\n"
#: Widths of the sequence numbers in file names: 20 digits hold any u64, so
#: names sort in sequence order as plain strings.
SEQ_DIGITS: Final = 20
#: A manifest is a few hundred bytes; anything larger than this is not one.
MAX_MANIFEST_BYTES: Final = 1 << 24

SEGMENT_RE: Final = re.compile(r"log-(\d{20})\.seg")
SNAPSHOT_RE: Final = re.compile(r"snap-(\d{20})\.snap")


def segment_name(first_seq: int) -> str:
    """File name of the segment whose first record is ``first_seq``.

    >>> segment_name(1)
    'log-00000000000000000001.seg'
    """
    return f"log-{first_seq:0{SEQ_DIGITS}d}.seg"


def snapshot_name(seq: int) -> str:
    """File name of the snapshot covering records up to ``seq``.

    >>> snapshot_name(42)
    'snap-00000000000000000042.snap'
    """
    return f"snap-{seq:0{SEQ_DIGITS}d}.snap"


@dataclass
class Manifest:
    """What the board is made of: its config, snapshots and segments."""

    config: dict[str, Any]
    snapshots: list[tuple[str, int]]
    segments: list[tuple[str, int]]
    generation: int = 0
    written_ms: int = field(default=0, compare=False)

    def to_map(self) -> dict[str, Any]:
        """The msgpack map written to disk."""
        return {
            "format": 1,
            "generation": self.generation,
            "written_ms": self.written_ms,
            "config": self.config,
            "snapshots": [list(s) for s in self.snapshots],
            "segments": [list(s) for s in self.segments],
        }

    def chain_start(self, seq: int) -> int:
        """Index of the first segment needed to replay from ``seq + 1``.

        That is the last segment whose first record is at most ``seq + 1``;
        ``len(segments)`` when there is none (nothing to replay).
        """
        start = len(self.segments)
        for i, (_, first) in enumerate(self.segments):
            if first <= seq + 1:
                start = i
        return start

    def _check(self) -> None:
        """Invariants: names match sequence numbers and both lists ascend."""
        for name, seq in self.snapshots:
            assert name == snapshot_name(seq), (name, seq)
        for name, first in self.segments:
            assert name == segment_name(first), (name, first)
        assert [s for _, s in self.snapshots] == sorted({s for _, s in self.snapshots})
        assert [s for _, s in self.segments] == sorted({s for _, s in self.segments})


def _entries(path: str, value: Any, key: str, pattern: re.Pattern[str]) -> list[tuple[str, int]]:
    raw = value.get(key)
    if type(raw) is not list:
        raise CorruptionError(path, PREFIX_BYTES, f"manifest {key!r} is not a list")
    out: list[tuple[str, int]] = []
    for item in raw:
        if (
            type(item) is not list
            or len(item) != 2
            or type(item[0]) is not str
            or type(item[1]) is not int
        ):
            raise CorruptionError(path, PREFIX_BYTES, f"manifest {key!r} entry is malformed")
        match = pattern.fullmatch(item[0])
        if match is None or int(match.group(1)) != item[1]:
            raise CorruptionError(
                path, PREFIX_BYTES, f"manifest names an unexpected file {item[0]!r}"
            )
        out.append((item[0], item[1]))
    if [s for _, s in out] != sorted({s for _, s in out}):
        raise CorruptionError(path, PREFIX_BYTES, f"manifest {key!r} is not in ascending order")
    return out


def read_manifest(directory: str) -> Manifest:
    """Read and check ``directory/MANIFEST``.

    Raises ``FileNotFoundError`` when there is none and
    :class:`~rankengine.durable.eventlog.CorruptionError` when it is damaged.

    Runtime complexity: O(size of the manifest)
    """
    path = os.path.join(directory, MANIFEST_NAME)
    with open(path, "rb") as f:
        data = f.read(MAX_MANIFEST_BYTES + 1)
    return parse_manifest(data, path)


def parse_manifest(data: bytes, path: str = MANIFEST_NAME) -> Manifest:
    """Parse manifest bytes (the reader behind :func:`read_manifest`)."""

    if len(data) > MAX_MANIFEST_BYTES:
        raise CorruptionError(path, MAX_MANIFEST_BYTES, "manifest is too large to be one")
    check_prefix(data, MANIFEST_MAGIC, path, "manifest")
    stream = io.BytesIO(data)
    frames = []
    try:
        frames = list(read_frames(stream, PREFIX_BYTES, len(data)))
    except _Damage as damage:
        raise CorruptionError(path, damage.offset, f"manifest {damage.reason}") from None
    if len(frames) != 1:
        raise CorruptionError(path, PREFIX_BYTES, f"manifest has {len(frames)} frames, not 1")
    at, payload = frames[0]
    try:
        value = unpack(payload)
    except Exception as exc:  # msgpack raises several unrelated types
        raise CorruptionError(path, at, f"manifest does not decode ({exc})") from None
    if type(value) is not dict or value.get("format") != 1:
        raise CorruptionError(path, at, "manifest is not a format-1 map")
    config = value.get("config")
    generation = value.get("generation")
    written = value.get("written_ms", 0)
    if type(config) is not dict or type(generation) is not int or type(written) is not int:
        raise CorruptionError(path, at, "manifest has no valid config/generation")
    return Manifest(
        config,
        _entries(path, value, "snapshots", SNAPSHOT_RE),
        _entries(path, value, "segments", SEGMENT_RE),
        generation,
        written,
    )


def write_manifest(directory: str, manifest: Manifest, *, step: str = "manifest") -> None:
    """Replace ``directory/MANIFEST`` atomically and durably.

    Writes ``MANIFEST.tmp``, fsyncs it, renames it over ``MANIFEST`` and
    fsyncs the directory.  Crash points (``step`` names the caller's use):
    ``STEP_rename`` (temp file written, before the rename) and ``after_STEP``.

    Runtime complexity: O(size of the manifest) plus two fsyncs
    """
    manifest.generation += 1
    manifest.written_ms = time.time_ns() // 1_000_000
    path = os.path.join(directory, MANIFEST_NAME)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(write_prefix(MANIFEST_MAGIC) + frame(pack(manifest.to_map())))
        f.flush()
        os.fsync(f.fileno())
    crash_point(f"{step}_rename")
    os.replace(tmp, path)
    fsync_dir(directory)
    crash_point(f"after_{step}")


def _lock_after_collecting(fd: int) -> bool:
    """Take the lock on ``fd`` after a garbage collection; False if it is
    still held.  For a lock this process holds: its holder may be a board
    dropped without ``close()`` that only the collector releases (a board
    is part of reference cycles), so a collection can free the directory.

    Runtime complexity: one full garbage collection
    """
    import fcntl  # noqa: PLC0415 -- POSIX only: imported where a lock is taken

    gc.collect()
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


class DirectoryLock:
    """An exclusive ``flock`` on ``directory/LOCK``: one writer per directory.

    The kernel releases it when the process dies, so a crash never leaves a
    stale lock.  Where ``fcntl`` is missing (Windows) it only records the pid.
    A lock this process holds already is tried once more after a garbage
    collection (its holder may be a board dropped without ``close()``).
    """

    def __init__(self, directory: str) -> None:
        #: True when the holder releases the lock in its own finalizer (a
        #: durable board does, after closing its log): this lock's
        #: finalizer then leaves it to the holder
        self.released_by_owner = False
        self._fd = -1
        self.path = os.path.join(directory, LOCK_NAME)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                import fcntl  # noqa: PLC0415 -- POSIX only: imported where a lock is taken
            except ImportError:  # pragma: no cover - Windows
                fcntl = None  # type: ignore[assignment]
            if fcntl is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
                    if holder != str(os.getpid()) or not _lock_after_collecting(fd):
                        raise LogError(
                            f"{directory} is already open for writing (by process "
                            f"{holder or '?'}); close that board first"
                        ) from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except BaseException:
            os.close(fd)  # (a failed lock holds nothing)
            raise
        self._fd = fd

    def release(self) -> None:
        """Release the lock (idempotent)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __del__(self) -> None:
        """A lock dropped without :meth:`release` (its holder was never
        closed): warn, as an unclosed file does, and release it, so that the
        directory can be opened again by this process."""
        if self._fd < 0 or self.released_by_owner:
            return
        try:
            warnings.warn(
                f"the lock on {self.path!r} was never released (its board was not closed)",
                ResourceWarning,
                stacklevel=2,
                source=self,
            )
        finally:  # (under -W error the warning raises: release all the same)
            self.release()


# ----------------------------------------------------------------------
# Checking a directory
# ----------------------------------------------------------------------
#: How far past a damaged frame :func:`verify` looks for intact records (to
#: say what a repair would cut).  Bounded so a huge damaged file stays fast.
RESYNC_LIMIT_BYTES: Final = 4 << 20


#: How bad a :class:`Finding` is.
Severity: TypeAlias = Literal["damage", "history", "fallback", "torn", "note"]


class Finding(NamedTuple):
    """One thing :func:`verify` found: ``damage`` (the board will not open),
    ``history`` (damage in retained history, which the board does not read
    when it opens: a snapshot older than the newest good one, or a segment
    before the records the board replays; it opens, but a replay through
    the damage fails or has to fall back),
    ``fallback`` (a damaged snapshot newer than every good one, which open
    skips with a ``RecoveryWarning`` for an older snapshot or the log from
    seq 1, and :func:`repair` moves aside),
    ``torn`` (an interrupted last write, cut on open) or ``note``."""

    severity: Severity
    path: str
    offset: int | None
    message: str

    def __str__(self) -> str:
        where = self.path if self.offset is None else f"{self.path} @ {self.offset}"
        return f"{self.severity.upper():7} {where}: {self.message}"


@dataclass
class FileInfo:
    """What :func:`verify` read from one snapshot or segment."""

    name: str
    seq: int
    size: int = 0
    records: int = 0
    last_seq: int = 0
    count: int = 0
    time_ms: int = 0
    created_ms: int = 0
    good_end: int | None = None
    ok: bool = True


@dataclass
class Report:
    """Everything :func:`verify` checked, and its verdict."""

    directory: str
    manifest: Manifest | None = None
    snapshots: list[FileInfo] = field(default_factory=list)
    segments: list[FileInfo] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    @property
    def damaged(self) -> bool:
        """True when the board would refuse to open."""
        return any(f.severity == "damage" for f in self.findings)

    @property
    def history_damaged(self) -> bool:
        """True when retained history is damaged: a segment before the
        current replay chain, or a snapshot older than the newest good one.
        The board opens, but ``rebuild(from_log=True)`` (or a replay through
        the damage) fails, and a point-in-time ``rebuild`` that needs the
        damaged snapshot falls back to an older one or to the log from seq 1
        (and fails when neither is kept)."""
        return any(f.severity == "history" for f in self.findings)

    @property
    def fallback(self) -> bool:
        """True when the board opens only by skipping a damaged snapshot
        (newer than every good one) for an older snapshot or the log from
        seq 1, with a ``RecoveryWarning``; :func:`repair` moves it aside."""
        return any(f.severity == "fallback" for f in self.findings)

    @property
    def torn(self) -> bool:
        """True when the log ends in an interrupted write (cut on open)."""
        return any(f.severity == "torn" for f in self.findings)

    @property
    def healthy(self) -> bool:
        """No damage (current or in the history), no damaged snapshot that
        open skips and no torn tail."""
        return not (self.damaged or self.history_damaged or self.fallback or self.torn)

    @property
    def exit_code(self) -> int:
        """0 healthy, 1 damaged, 4 the retained history damaged, 3 the board
        opens with a warning (a torn tail it cuts, a damaged snapshot it
        skips); the first that applies (see ``docs/durability.md``)."""
        if self.damaged:
            return 1
        return 4 if self.history_damaged else 3 if self.torn or self.fallback else 0

    @property
    def last_seq(self) -> int:
        """The last sequence number found in the log (or snapshots)."""
        seqs = [s.last_seq for s in self.segments] + [s.seq for s in self.snapshots if s.ok]
        return max(seqs, default=0)

    def add(
        self,
        severity: Severity,
        path: str,
        offset: int | None,
        message: str,
    ) -> None:
        """Record a finding."""
        self.findings.append(Finding(severity, path, offset, message))


def _resync(path: str, offset: int) -> tuple[int, int, int]:
    """Look past damage at ``offset`` for intact records: return
    ``(records, first_seq, last_seq)`` of the complete frames found after it."""
    with open(path, "rb") as f:
        f.seek(offset + 1)
        data = f.read(RESYNC_LIMIT_BYTES)

    at = 0
    end = len(data) - 12
    records, first, last = 0, 0, 0
    while at <= end:
        length, length_crc, payload_crc = FRAME.unpack_from(data, at)
        stop = at + 12 + length
        if (
            zlib.crc32(data[at : at + 4]) == length_crc
            and stop <= len(data)
            and zlib.crc32(data[at + 12 : stop]) == payload_crc
        ):
            try:
                seq = decode_record(data[at + 12 : stop]).seq
            except ValueError:
                at += 1
                continue
            records += 1
            first = first or seq
            last = seq
            at = stop
        else:
            at += 1
    return records, first, last


def _reporter(
    progress: Callable[[str, int, int], None] | None, name: str, size: int
) -> Callable[[int], None] | None:
    """Adapt a ``progress(name, done, total)`` callback to one file's offsets."""
    if progress is None:
        return None
    report = progress
    return lambda at: report(name, at, size)


def verify(directory: str, *, progress: Callable[[str, int, int], None] | None = None) -> Report:
    """Check every frame, record and snapshot of a board directory.

    Reads without writing or locking.  The report lists what is damaged
    (where, and what a repair would cut), torn tails and leftovers.

    Runtime complexity: O(size of the directory)
    """
    report = Report(directory)
    mpath = os.path.join(directory, MANIFEST_NAME)
    manifest: Manifest | None
    try:
        manifest = read_manifest(directory)
    except FileNotFoundError:
        # only what reads as an interrupted creation (a damaged header is damage)
        stale, other = creation_leftovers(directory, unreadable=False)
        if other is None and stale:  # (a directory with nothing at all is no board)
            report.add(
                "note",
                mpath,
                None,
                "no MANIFEST: the board's creation was interrupted before its first write "
                f"({len(stale)} leftover files); opening creates it afresh",
            )
            return report
        manifest = reconstruct_manifest(directory)
        if manifest is not None:
            message = (
                "MANIFEST is missing, but the snapshots and segments of a board are here: "
                "`rankengine repair DIR` rebuilds it from them"
            )
        elif board_files(directory):
            message = (
                "MANIFEST is missing and no segment header here reads, so repair cannot rebuild it"
            )
        else:
            message = "no MANIFEST: not a board, or its manifest was lost"
        report.add("damage", mpath, None, message)
    except (CorruptionError, OSError) as exc:
        report.add("damage", mpath, getattr(exc, "offset", None), getattr(exc, "reason", str(exc)))
        manifest = reconstruct_manifest(directory)
    if manifest is None:
        return report
    report.manifest = manifest
    order = manifest.config.get("order")
    columns = len(order) if isinstance(order, list) else None
    damaged: list[tuple[int, str, Exception]] = []
    for name, seq in manifest.snapshots:
        path = os.path.join(directory, name)
        info = FileInfo(name, seq)
        report.snapshots.append(info)
        try:
            snap = read_snapshot(path, columns=columns)
            info.size, info.count = snap.size, int(snap.header["count"])
            info.time_ms = int(snap.header.get("time_ms", 0))
            info.created_ms = int(snap.header.get("created_ms", 0))
            info.last_seq = snap.seq
            if snap.seq != seq:
                raise CorruptionError(path, 0, f"snapshot header says seq {snap.seq}")
        except (CorruptionError, OSError) as exc:
            info.ok = False
            damaged.append((seq, path, exc))
        if progress is not None:
            progress(name, info.size, info.size)
    base = max((s.seq for s in report.snapshots if s.ok), default=0)
    chain = manifest.chain_start(base)
    # the log continues from the newest good snapshot (or from seq 1)
    continues = chain < len(manifest.segments) and manifest.segments[chain][1] <= base + 1
    for seq, path, error in damaged:
        # Open loads the newest snapshot that reads and reaches an older one
        # only when every newer one is damaged: a snapshot older than a good
        # one is history, as the segments before the replay chain are.  A
        # newer one open skips, with a warning, when the log continues from
        # the good one it falls back to; otherwise it refuses to open.
        severity: Severity = "history" if seq < base else "fallback" if continues else "damage"
        report.add(
            severity, path, getattr(error, "offset", None), getattr(error, "reason", str(error))
        )
    previous: int | None = None
    for i, (name, first) in enumerate(manifest.segments):
        path = os.path.join(directory, name)
        info = FileInfo(name, first, last_seq=first - 1)
        report.segments.append(info)
        # before the chain the board replays, damage is only the history's
        severity = "damage" if i >= chain else "history"
        if previous is not None and first != previous + 1:
            report.add(severity, path, None, f"records {previous + 1}..{first - 1} are missing")
        previous = None
        try:
            with SegmentReader(path) as reader:
                info.size = reader.size
                if reader.first_seq != first:
                    raise CorruptionError(path, 0, f"header says first seq {reader.first_seq}")
                if reader.header.get("config") != manifest.config:
                    report.add("damage", path, 0, "segment config differs from the manifest's")
                try:
                    for event in reader.events(_reporter(progress, name, reader.size)):
                        info.time_ms = event.time_ms
                except CorruptionError as exc:
                    info.ok = False
                    info.good_end = exc.offset
                    n, lo, hi = _resync(path, exc.offset)
                    after = f"; after it {n} intact-looking records (seq {lo}..{hi})" if n else ""
                    report.add(severity, path, exc.offset, exc.reason + after)
                info.records, info.last_seq = reader.records, reader.last_seq
                if reader.torn is not None:
                    info.good_end = reader.torn.offset
                    torn = i == len(manifest.segments) - 1
                    report.add(
                        "torn" if torn else severity,
                        path,
                        reader.torn.offset,
                        f"{reader.torn.reason}: {reader.torn.cut_bytes} bytes after the last "
                        "complete record" + (" (cut on open)" if torn else " inside the log"),
                    )
                if info.ok:
                    previous = reader.last_seq
        except (CorruptionError, OSError) as exc:
            info.ok = False
            info.good_end = 0
            report.add(
                severity, path, getattr(exc, "offset", None), getattr(exc, "reason", str(exc))
            )
    if manifest.segments:
        if not continues:
            report.add("damage", directory, None, f"no segment continues the log after seq {base}")
    else:
        report.add("damage", mpath, None, "the manifest lists no segment")
    listed = {n for n, _ in manifest.snapshots} | {n for n, _ in manifest.segments}
    for name in sorted(os.listdir(directory)):
        if name not in listed and (
            name.endswith((".tmp", ".orphan"))
            or SEGMENT_RE.fullmatch(name)
            or SNAPSHOT_RE.fullmatch(name)
        ):
            report.add(
                "note",
                os.path.join(directory, name),
                None,
                "not in the manifest (kept for inspection)"
                if name.endswith(".orphan")
                else "not in the manifest (a leftover; open removes it, or renames a "
                "segment that holds records to .orphan)",
            )
    return report


def board_files(directory: str) -> list[str]:
    """The names in ``directory`` that are snapshots or segments of a board
    (empty when there are none, or the directory cannot be listed).

    Runtime complexity: O(files in the directory)
    """
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    return [n for n in names if SEGMENT_RE.fullmatch(n) or SNAPSHOT_RE.fullmatch(n)]


def creation_leftovers(directory: str, *, unreadable: bool = True) -> tuple[list[str], str | None]:
    """What a crash while creating a board in ``directory`` left: the paths
    of a header-only first segment, temporary files and the lock, and the
    first name that is none of those (None when there is none: the
    directory holds no write, and creating the board afresh loses nothing).
    An empty segment is one (killed before its header was written); with
    ``unreadable``, so is any segment smaller than a page whose header does
    not read (a header cut short).

    Runtime complexity: O(files in the directory)
    """
    stale: list[str] = []
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if name == LOCK_NAME or name.endswith(".tmp"):
            stale.append(path)
            continue
        if SEGMENT_RE.fullmatch(name):
            try:
                with SegmentReader(path) as reader:
                    empty = reader.blank()
            except (CorruptionError, OSError):
                size = os.path.getsize(path)
                empty = size == 0 or (unreadable and size < 4096)
            if empty:
                stale.append(path)
                continue
        return stale, name
    return stale, None


def reconstruct_manifest(directory: str) -> Manifest | None:
    """A manifest rebuilt from the files present (for a lost or damaged
    MANIFEST): every snapshot and segment file, readable or not, so that
    :func:`verify` checks them and :func:`repair` moves the damaged ones to
    its backup (left out, they would be taken for leftovers and removed on
    the next open); the config comes from the first segment whose header
    reads.  None when there is nothing to go on.
    """
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return None
    segments: list[tuple[str, int]] = []
    snapshots: list[tuple[str, int]] = []
    config: dict[str, Any] | None = None
    for name in names:
        if (match := SNAPSHOT_RE.fullmatch(name)) is not None:
            snapshots.append((name, int(match.group(1))))
        elif (match := SEGMENT_RE.fullmatch(name)) is not None:
            segments.append((name, int(match.group(1))))
            if config is None:
                try:
                    with SegmentReader(os.path.join(directory, name)) as reader:
                        if isinstance(reader.header.get("config"), dict):
                            config = reader.header["config"]
                except (CorruptionError, OSError):
                    continue
    if config is None:
        return None
    return Manifest(config, snapshots, segments)


# ----------------------------------------------------------------------
# Repairing a directory
# ----------------------------------------------------------------------
@dataclass
class RepairResult:
    """What :func:`repair` did (or, with ``dry_run``, would do).

    ``actions`` are its steps, each an imperative phrase ("cut ...", "move
    ...", "write the new MANIFEST"); ``notes`` say why there is nothing to
    do, when there is not.  ``backup`` is the directory that holds (or
    would hold) what it moves or cuts, None when it saves nothing.
    ``after`` is :func:`verify`'s report after the repair (None for a dry
    run, or when nothing was done).
    """

    actions: list[str]
    backup: str | None
    before: Report
    after: Report | None
    notes: list[str] = field(default_factory=list)


def _chain_of(segments: list[tuple[str, int]], seq: int) -> int:
    return Manifest({}, [], segments).chain_start(seq)


@contextlib.contextmanager
def ctrl_c_held() -> Iterator[None]:
    """Hold Ctrl-C (SIGINT) while the block runs; raise KeyboardInterrupt after it.

    Repair's file steps (move, cut a tail, write the manifest) are short,
    and a directory left between two of them is neither the old state nor
    the repaired one.  Only the main thread of a process that has Python's
    default SIGINT handler is changed; elsewhere the block runs as it is.
    """
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return
    caught: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, _frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if caught:
        raise KeyboardInterrupt


def repair(
    directory: str,
    *,
    backup_dir: str | None = None,
    dry_run: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
) -> RepairResult:
    """Cut a damaged board directory back to its last good record.

    Keeps everything before the first damage and moves everything it cuts
    (the tail bytes of a segment, later segments, damaged snapshots, a
    damaged manifest) into ``backup_dir`` (default ``DIR/repair-<time>``),
    so nothing is destroyed (it refuses, changing nothing, when
    ``backup_dir`` already holds a file of a name it would save under).
    The backup directory is fsynced after each file it receives, before
    the cut it saves is made and before the new manifest, and a backup
    directory it creates is fsynced into its parent, so a power cut cannot
    lose what was saved.  Takes the directory lock, but not in a directory
    that holds no ``MANIFEST`` and no snapshot or segment: that is no
    board, and repair raises :class:`~rankengine.durable.eventlog.LogError`,
    leaving it as it was.

    Every step is decided before any file is touched, so a repair that
    cannot work (:class:`~rankengine.durable.eventlog.LogError` when no consistent
    state is left) changes nothing.  If a step itself fails (an I/O error),
    the :class:`~rankengine.durable.eventlog.LogError` lists the steps already done
    and where the backup is.

    Ctrl-C while the file steps run is held until the last one is done
    (the directory is repaired), then raised as :class:`KeyboardInterrupt`;
    during the checks before and after, it stops the repair at once.

    ``progress(name, done, total)``, if given, follows the reading of each
    file, as for :func:`verify` (the check before the repair and the one
    after it).

    Runtime complexity: O(size of the directory)
    """

    # dry_run=None repaired for real, "no" only pretended to
    dry_run = check_flag(dry_run, "dry_run")
    if not os.path.lexists(os.path.join(directory, MANIFEST_NAME)) and not board_files(directory):
        # checked before taking the lock, which would leave a LOCK file in
        # a directory that is no board (nothing here to repair from)
        raise LogError(
            f"{directory} is not a board directory (no {MANIFEST_NAME}, no snapshot or "
            "segment): nothing to repair from; nothing was changed"
        )
    lock = DirectoryLock(directory)
    try:
        before = verify(directory, progress=progress)
        manifest = before.manifest
        if (
            manifest is None
            and not before.damaged
            and not before.torn
            and board_files(directory)  # more than the LOCK repair just took
        ):
            # only what a kill while creating the board leaves (verify's note):
            # no write is lost, and opening creates the board afresh
            note = "nothing to repair: " + "; ".join(f.message for f in before.findings)
            return RepairResult([], None, before, None, [note])
        if manifest is None:
            raise LogError(f"{directory}: no readable segment: nothing to repair from")
        if (
            not before.damaged
            and not before.fallback
            and not before.torn
            and os.path.exists(os.path.join(directory, MANIFEST_NAME))
            and not any(f.path.endswith(MANIFEST_NAME) for f in before.findings)
        ):
            note = "nothing to repair"
            if before.history_damaged:
                note += (
                    ": only the retained history is damaged (see the HISTORY findings), "
                    "and repair leaves history as it is"
                )
            return RepairResult([], None, before, None, [note])
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        backup = backup_dir or os.path.join(directory, f"repair-{stamp}")
        # the plan: (action, the step that does it, or None for no file change)
        plan: list[tuple[str, Callable[[], None] | None]] = []
        saves = False  # whether a step puts anything in the backup

        def make_backup() -> None:
            # a directory it creates is fsynced into its parent (and each
            # missing parent into its own), as a new board directory is
            make_directory(backup)

        def move(name: str) -> None:
            make_backup()
            source, target = os.path.join(directory, name), os.path.join(backup, name)
            try:
                os.rename(source, target)
            except OSError as exc:
                if exc.errno != errno.EXDEV:
                    raise
                # The backup is on another filesystem: copy.  Once the
                # original is deleted the copy is all there is, so it is
                # made durable first (its data, then its directory entry).
                shutil.copy2(source, target)
                with open(target, "rb") as f:
                    os.fsync(f.fileno())
                fsync_dir(backup)
                os.remove(source)
            else:
                fsync_dir(backup)  # the file's new entry: else a power cut can lose it

        def claim(name: str) -> None:
            # decided before any file moves: a copy an earlier repair saved
            # under this name must not be replaced (shutil.move would)
            if os.path.lexists(os.path.join(backup, name)):
                raise LogError(
                    f"{directory}: the backup directory {backup} already holds {name} "
                    "(from an earlier repair?); give another --backup-dir / backup_dir; "
                    "nothing was changed"
                )

        def save(name: str, why: str) -> None:
            nonlocal saves
            claim(name)
            saves = True
            plan.append((f"move {name} to the backup ({why})", lambda: move(name)))

        def cut_tail(path: str, good: int, saved: str) -> None:
            make_backup()
            with open(path, "r+b") as f, open(os.path.join(backup, saved), "wb") as out:
                f.seek(good)
                shutil.copyfileobj(f, out)
                out.flush()
                os.fsync(out.fileno())
                fsync_dir(backup)  # the copy is durable before the tail is cut
                f.truncate(good)
                os.fsync(f.fileno())

        if any(f.path.endswith(MANIFEST_NAME) for f in before.findings if f.severity == "damage"):
            plan.append(("rebuild MANIFEST from the files present", None))
            if os.path.exists(os.path.join(directory, MANIFEST_NAME)):
                save(MANIFEST_NAME, "damaged")
        for info in before.snapshots:
            if not info.ok:
                if os.path.exists(os.path.join(directory, info.name)):
                    save(info.name, "damaged snapshot")
                manifest.snapshots.remove((info.name, info.seq))
        base = max((seq for _, seq in manifest.snapshots), default=0)
        chain = manifest.chain_start(base)
        keep: list[tuple[str, int]] = []
        cut = False
        previous: int | None = None
        for i, (info, entry) in enumerate(
            zip(before.segments, list(manifest.segments), strict=True)
        ):
            in_chain = i >= chain
            if cut and in_chain:
                if os.path.exists(os.path.join(directory, info.name)):
                    save(info.name, "after the first damage")
                continue
            gap = previous is not None and info.seq != previous + 1
            if gap and in_chain:
                cut = True
                missing = f"records {(previous or 0) + 1}..{info.seq - 1} are missing before it"
                save(info.name, missing)
                continue
            previous = info.last_seq
            if info.ok and info.good_end is None:
                keep.append(entry)
                continue
            path = os.path.join(directory, info.name)
            if not os.path.exists(path) or info.good_end in (None, 0):
                if os.path.exists(path):
                    save(info.name, "unreadable header")
                else:
                    plan.append((f"drop {info.name} from the manifest (the file is missing)", None))
                cut = cut or in_chain
                previous = None
                continue
            good = int(info.good_end or 0)
            size = os.path.getsize(path)
            saved = f"{info.name}.cut-at-{good}"
            claim(saved)
            plan.append(
                (
                    f"cut {info.name} at offset {good}, saving the {size - good} bytes after "
                    f"seq {info.last_seq} as {saved}",
                    functools.partial(cut_tail, path, good, saved),
                )
            )
            saves = True
            keep.append(entry)
            cut = cut or in_chain
        last_of = {info.name: info.last_seq for info in before.segments}
        chain = _chain_of(keep, base)
        if chain == len(keep) or last_of[keep[chain][0]] < base:
            if not manifest.snapshots:
                raise LogError(
                    f"{directory}: nothing consistent is left to keep "
                    "(no snapshot, and the log does not start at seq 1); nothing was changed"
                )
            for name, first in keep:
                if first > base:
                    save(name, "cannot follow the snapshot")
            keep = [s for s in keep if s[1] <= base]
            name = segment_name(base + 1)

            def start_segment(name: str = name, first: int = base + 1) -> None:
                header: dict[str, Any] = {"first_seq": first, "config": manifest.config}
                header["created_ms"] = time.time_ns() // 1_000_000
                SegmentWriter.create(os.path.join(directory, name), header).close()

            plan.append(
                (f"start an empty segment {name} after the snapshot (seq {base})", start_segment)
            )
            keep.append((name, base + 1))
        manifest.segments = keep

        def new_manifest() -> None:
            write_manifest(directory, manifest, step="repair_manifest")

        plan.append(("write the new MANIFEST", new_manifest))
        actions = [action for action, _ in plan]
        if dry_run:
            return RepairResult(actions, backup if saves else None, before, None)
        done: list[str] = []
        with ctrl_c_held():
            for action, step in plan:
                try:
                    if step is not None:
                        step()
                except OSError as exc:
                    did = "; ".join(done) or "nothing"
                    raise LogError(
                        f"{directory}: repair failed at {action!r} ({exc}); done before it: "
                        f"{did}; what it moved or cut is in {backup}"
                    ) from exc
                done.append(action)
        after = verify(directory, progress=progress)
        return RepairResult(actions, backup if saves else None, before, after)
    finally:
        lock.release()
