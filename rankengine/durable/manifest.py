"""The manifest: which snapshots and segments make up a durable board.

A board directory holds::

    MANIFEST                          the list below, replaced atomically
    snap-00000000000000001234.snap    a snapshot of everything up to seq 1234
    log-00000000000000001235.seg      records from seq 1235 on
    LOCK                              held (flock) by the process writing

The manifest is one framed msgpack map (see :mod:`rankengine.durable.records`)::

    {"format": 2, "generation": g, "written_ms": t, "config": {...},
     "snapshots": [[name, seq], ...],        oldest first
     "segments":  [[name, first_seq], ...],  oldest first
     "marks": {"durable_seq": s, "sealed": bool,
               "ends": [[name, last_seq, length], ...]}}

The marks say what was acknowledged (see :mod:`rankengine.durable.marks`):
a log that ends before them is damage.  Format 1 (no marks) still reads.

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

import gc
import io
import os
import re
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Final

from rankengine.durable.eventlog import _Damage, read_frames
from rankengine.durable.records import (
    PREFIX_BYTES,
    CorruptionError,
    LogError,
    check_prefix,
    crash_point,
    frame,
    pack,
    unpack,
    write_prefix,
)
from rankengine.durable.snapshot import fsync_dir

__all__ = [
    "LOCK_NAME",
    "MANIFEST_FORMAT",
    "MANIFEST_MAGIC",
    "MANIFEST_NAME",
    "MAX_MANIFEST_BYTES",
    "SEGMENT_RE",
    "SEQ_DIGITS",
    "SNAPSHOT_RE",
    "DirectoryLock",
    "Manifest",
    "parse_manifest",
    "read_manifest",
    "segment_name",
    "snapshot_name",
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
#: The manifest format written: 2 adds the marks of what was acknowledged.
#: Format 1 (no marks) is still read; a rankengine that reads only format 1
#: refuses format 2 rather than open a cut log without noticing.
MANIFEST_FORMAT: Final = 2

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
    #: high-water mark: every record up to this seq was durable (and so
    #: acknowledged) when a manifest was written
    durable_seq: int = 0
    #: True once a clean close() wrote the manifest (it stays True while the
    #: board is open again: the marks only ever say what the log must reach)
    sealed: bool = False
    #: segment name -> (its last seq, its byte length), recorded when a new
    #: segment starts after it, and for the last segment when the board closes
    ends: dict[str, tuple[int, int]] = field(default_factory=dict)

    def to_map(self) -> dict[str, Any]:
        """The msgpack map written to disk (the ends of listed segments only)."""
        listed = {name for name, _ in self.segments}
        return {
            "format": MANIFEST_FORMAT,
            "generation": self.generation,
            "written_ms": self.written_ms,
            "config": self.config,
            "snapshots": [list(s) for s in self.snapshots],
            "segments": [list(s) for s in self.segments],
            "marks": {
                "durable_seq": self.durable_seq,
                "sealed": self.sealed,
                "ends": [[n, *end] for n, end in sorted(self.ends.items()) if n in listed],
            },
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
    :class:`~rankengine.durable.records.CorruptionError` when it is damaged.

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
    if type(value) is not dict or value.get("format") not in (1, MANIFEST_FORMAT):
        raise CorruptionError(path, at, "manifest is not a format-1 or format-2 map")
    config = value.get("config")
    generation = value.get("generation")
    written = value.get("written_ms", 0)
    if type(config) is not dict or type(generation) is not int or type(written) is not int:
        raise CorruptionError(path, at, "manifest has no valid config/generation")
    manifest = Manifest(
        config,
        _entries(path, value, "snapshots", SNAPSHOT_RE),
        _entries(path, value, "segments", SEGMENT_RE),
        generation,
        written,
    )
    if value.get("format") == MANIFEST_FORMAT:
        _read_marks(path, at, value.get("marks"), manifest)
    return manifest


def _read_marks(path: str, at: int, marks: Any, manifest: Manifest) -> None:
    """Fill ``manifest``'s marks from the ``"marks"`` map, or raise."""
    if type(marks) is not dict:
        raise CorruptionError(path, at, "manifest marks are not a map")
    durable, sealed, ends = marks.get("durable_seq"), marks.get("sealed"), marks.get("ends")
    if type(durable) is not int or durable < 0 or type(sealed) is not bool:
        raise CorruptionError(path, at, "manifest marks have no valid durable_seq/sealed")
    if type(ends) is not list:
        raise CorruptionError(path, at, "manifest marks' ends are not a list")
    for end in ends:
        if (
            type(end) is not list
            or len(end) != 3
            or type(end[0]) is not str
            or not all(type(n) is int and n >= 0 for n in end[1:])
        ):
            raise CorruptionError(path, at, "manifest marks' ends are malformed")
        manifest.ends[end[0]] = (end[1], end[2])
    manifest.durable_seq, manifest.sealed = durable, sealed


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
