"""The event log: append-only segments of checksummed frames.

The record and frame format is :mod:`rankengine.durable.records`.

Every accepted write of a durable board becomes one *record*: its sequence
number, a wall-clock timestamp and the list of changes it made (see
:mod:`rankengine.board.changes`).  Records are appended to a *segment* file, each
in its own *frame*::

    segment  = prefix | frame(header) | frame(record) | frame(record) | ...
    prefix   = magic (8 bytes) | version u16 | flags u16          12 bytes
    frame    = length u32 | crc32(length) u32 | crc32(payload) u32 | payload
    record   = msgpack [seq, time_ms, [change, change, ...]]

All integers are big-endian.  The length has a checksum of its own, so a
flipped bit in a length field is reported where it happened instead of
silently swallowing the records after it.

Torn tail or damage?
--------------------
A crash in the middle of an append leaves a *torn tail*: a final frame that
is physically incomplete.  A flipped byte leaves a complete frame whose
checksum fails.  The reader tells them apart like this (``size`` is the
file size, ``at`` the offset of the frame being read):

1. every byte from ``at`` to the end of the file is zero: the clean end.
   These are bytes reserved ahead of the writer (see
   :class:`MappedSegmentWriter`), or blocks the file system allocated but
   never wrote before a power cut; either way they hold no record.
2. ``size - at < 12`` (a partial frame header): torn.
3. the length checksum fails, or the length is absurd: damage, unless the
   frame is an *interrupted copy* (below): torn.
4. the frame runs past the end of the file: torn.
5. the payload checksum fails: torn if this is the last frame and it ends in
   zero bytes from a 512-byte sector boundary on (sectors that were never
   written), or if it is an interrupted copy; anything else is damage.
6. the payload is not a valid record, or its sequence number is not the
   next one: damage.

An *interrupted copy* is what a process killed while copying a frame into
a mapped segment leaves: some of the frame's bytes, then zeros to the end
of the file (the writer always leaves at least one reserved zero after a
frame).  The reader recognises it when the file ends in zeros, they start
at most :data:`MAP_FRAME_LIMIT` bytes after ``at``, and no valid frame
starts in between (a record may end in zero bytes, so a frame that ends
among the zeros counts); when the frame's length is intact (rule 5), the
zeros must also start no later than the frame's end, and the file go on
past it.  The price: in a segment that a killed writer left with its
reserved zeros, a damaged *last* record is also read as torn (cut with a
warning, or refused with ``on_torn_tail="refuse"``); in a closed segment it
is still damage, unless the record ends in a zero byte and its length is
what was damaged.

A torn tail is cut off on open (with a warning, or refused on request);
damage refuses to open and names the file and offset.

>>> from rankengine.durable.records import FRAME_HEADER_BYTES, decode_record, encode_record, frame
>>> payload = encode_record(1, 1_700_000_000_000, [(0, "ann", 10, 1)])
>>> data = frame(payload)
>>> len(data) - len(payload)
12
>>> decode_record(data[FRAME_HEADER_BYTES:])
Event(seq=1, time_ms=1700000000000, changes=[(0, 'ann', 10, 1)])
"""

from __future__ import annotations

import contextlib
import errno
import io
import mmap
import os
import sys
import zlib
from collections.abc import Callable, Generator, Iterator
from typing import Any, BinaryIO, Final

from rankengine.durable.records import (
    FRAME,
    FRAME_HEADER_BYTES,
    MAX_FRAME_BYTES,
    PREFIX_BYTES,
    SEGMENT_MAGIC,
    CorruptionError,
    Event,
    LogError,
    TornTail,
    check_prefix,
    decode_record,
    frame,
    pack,
    unpack,
    write_prefix,
)

__all__ = [
    "ACTIVE_WRITER",
    "MAPPED_SEGMENTS",
    "MAP_ADVICE",
    "MAP_FRAME_LIMIT",
    "MAP_GROW_BYTES",
    "READ_CHUNK_BYTES",
    "RETIRED_MAPS",
    "SECTOR_BYTES",
    "MappedSegmentWriter",
    "SegmentReader",
    "SegmentWriter",
    "read_frames",
    "read_header",
]

#: A torn write leaves whole disk sectors unwritten (read back as zeros).
SECTOR_BYTES: Final = 512
#: A :class:`MappedSegmentWriter` reserves (and maps) this much more of its
#: file whenever the reserved space runs out: ~20,000 one-change records, so
#: the reservation and the new map (tens of microseconds together) are paid
#: once per 20,000 appends; a board's file is at most this much longer than
#: its records until it is closed.
MAP_GROW_BYTES: Final = 1 << 20
#: ``madvise`` for each new map: no read-ahead, which made the first write into
#: a map fill all of it (``read_ahead_kb`` 8 MiB here): ~350-450 us under the lock
#: per :data:`MAP_GROW_BYTES`, now ~35-55 us, then a few us a page (46-byte frames).
MAP_ADVICE: Final = getattr(mmap, "MADV_RANDOM", None)
#: A map moved past is closed by the next :meth:`~SegmentWriter.sync` (the
#: fsync thread's), not under the lock (its munmap: ~80-230 us); past this
#: many (each holds a descriptor) the writer closes the oldest, as under "never".
RETIRED_MAPS: Final = 4
#: Largest frame a :class:`MappedSegmentWriter` copies through its map; a
#: bigger one (a large ``set_many``) is written with ``write()``.  This bounds
#: what a copy cut short by a kill can leave, which is how a reader tells an
#: interrupted copy from damage (rule 3 and 5 above).
MAP_FRAME_LIMIT: Final = 1 << 16
#: Whether :class:`MappedSegmentWriter` can be used here.  It relies on two
#: Linux guarantees: ``fdatasync`` writes back pages dirtied through a shared
#: map (POSIX asks for ``msync`` as well), and ``posix_fallocate`` reserves the
#: blocks (so a full disk is an error from ``append``, never a SIGBUS while
#: copying).  Elsewhere durable boards use :class:`SegmentWriter`.
MAPPED_SEGMENTS: Final = sys.platform == "linux" and hasattr(os, "posix_fallocate")
#: :func:`read_frames` reads this many bytes at a time and slices the frames
#: that lie whole in them; a longer frame is read on its own.
READ_CHUNK_BYTES: Final = 1 << 16
_ZERO_CHUNK: Final = bytes(1 << 16)
#: The CRC32 of every frame length below this, computed once (records of
#: one write to a few members are 30-100 bytes).
_KNOWN_LENGTHS: Final = 1024
_LENGTH_CRCS: Final = tuple(zlib.crc32(n.to_bytes(4, "big")) for n in range(_KNOWN_LENGTHS))


class _Damage(Exception):
    """Internal: a frame could not be read (``torn`` or not)."""

    def __init__(self, offset: int, reason: str, *, torn: bool) -> None:
        super().__init__(reason)
        self.offset = offset
        self.reason = reason
        self.torn = torn


def _unwritten_sectors(payload: bytes, payload_at: int) -> bool:
    """True when ``payload`` ends in zeros from a sector boundary on."""
    stripped = len(payload.rstrip(b"\0"))
    first_zero = payload_at + stripped
    boundary = -(-first_zero // SECTOR_BYTES) * SECTOR_BYTES
    return boundary < payload_at + len(payload)


def _zero_suffix(f: BinaryIO, size: int) -> int:
    """Offset where the trailing run of zero bytes before ``size`` starts
    (``size`` when the byte before it is not zero): everything from a frame
    boundary at or after it on is the clean end."""
    at = size
    while at > 0:
        step = min(at, len(_ZERO_CHUNK))
        f.seek(at - step)
        chunk = f.read(step)
        stripped = len(chunk.rstrip(b"\0"))
        if stripped:
            return at - step + stripped
        at -= step
    return 0


def _valid_frame_at(data: bytes, at: int, zeros: int) -> bool:
    """True when a whole, checksum-valid frame starts at ``data[at]``, where
    ``data`` is followed by ``zeros`` zero bytes (a record may end in zero
    bytes, so its frame may end among them)."""
    if len(data) - at < FRAME_HEADER_BYTES:
        return False
    length, length_crc, payload_crc = FRAME.unpack_from(data, at)
    start = at + FRAME_HEADER_BYTES
    if zlib.crc32(data[at : at + 4]) != length_crc or start + length > len(data) + zeros:
        return False
    crc = zlib.crc32(data[start : start + length])
    pad = start + length - len(data)
    while pad > 0:
        step = min(pad, len(_ZERO_CHUNK))
        crc = zlib.crc32(_ZERO_CHUNK[:step], crc)
        pad -= step
    return bool(crc == payload_crc)


def _interrupted_copy(f: BinaryIO, at: int, zeros_at: int, size: int) -> bool:
    """True when the bad frame at ``at`` can be a copy into a mapped segment
    that a kill cut short: some of one frame's bytes, then only zeros::

        ... good frame | 4a 00 9c 00 00 71 ... 5e | 00 00 00 00 ... 00 |
                       ^at                         ^zero suffix      ^size
                       |<-- at most MAP_FRAME_LIMIT -->|

    and no valid frame starts in between, not even one whose last bytes are
    among the zeros (damage to a record followed by more records is still
    damage).  A file that does not end in a zero is not one: a mapped writer
    keeps a reserved zero after every frame.  ``zeros_at`` is
    :func:`_zero_suffix`'s answer.  Only called when a frame fails.
    """
    if zeros_at == size or zeros_at - at > MAP_FRAME_LIMIT:
        return False
    f.seek(at)
    data = f.read(zeros_at - at)
    zeros = size - zeros_at
    return not any(_valid_frame_at(data, i, zeros) for i in range(1, len(data)))


def read_frames(f: BinaryIO, start: int, size: int) -> Iterator[tuple[int, bytes]]:
    """Yield ``(offset, payload)`` for each frame from ``start`` to ``size``.

    Stops at ``size`` or where only zeros are left (the clean end); raises
    ``_Damage`` at the first frame that cannot be read (see the rules in the
    module docstring).  Never allocates more than the file holds; reads it
    :data:`READ_CHUNK_BYTES` at a time.

    Runtime complexity: O(bytes read)
    """
    for batch in _frame_batches(f, start, size):
        yield from batch


def _frame_batches(f: BinaryIO, start: int, size: int) -> Iterator[list[tuple[int, bytes]]]:
    """:func:`read_frames`'s frames, in lists (one per chunk read, or one
    frame read on its own).

    Runtime complexity: O(bytes read)
    """
    crc32, unpack_from = zlib.crc32, FRAME.unpack_from
    length_crcs = _LENGTH_CRCS
    at = start
    while at < size:
        # Fast path: the good frames that lie whole in the next chunk, sliced
        # from one read.  Anything else (a frame cut by the chunk's end, one
        # longer than a chunk -- over MAX_FRAME_BYTES, too -- a checksum that
        # fails, the end of the file) stops it, and the frame there goes
        # through _read_frame(), read on its own.  Speed: one read per chunk
        # instead of two per frame, and the frames handed over in lists
        # (cheaper to iterate than one generator step each): events()
        # measured ~2.5 us -> ~2.26 us per one-change record.
        f.seek(at)
        buf = f.read(min(READ_CHUNK_BYTES, size - at))
        last = len(buf) - FRAME_HEADER_BYTES
        pos = 0
        batch = []
        while pos <= last:
            length, length_crc, payload_crc = unpack_from(buf, pos)
            end = pos + FRAME_HEADER_BYTES + length
            if end > len(buf):
                break
            # (a short record's length checksum from a table: no slice and
            # no crc32 call; measured ~0.25 us a record on a loaded machine)
            if length < _KNOWN_LENGTHS:
                if length_crcs[length] != length_crc:
                    break
            elif crc32(buf[pos : pos + 4]) != length_crc:
                break
            payload = buf[pos + FRAME_HEADER_BYTES : end]
            if crc32(payload) != payload_crc:
                break
            batch.append((at + pos, payload))
            pos = end
        if batch:
            yield batch
        at += pos
        if at >= size:
            return
        single = _read_frame(f, at, size)
        if single is None:
            return
        yield [(at, single)]
        at += FRAME_HEADER_BYTES + len(single)


def _read_frame(f: BinaryIO, at: int, size: int) -> bytes | None:
    """The payload of the frame at ``at``, read on its own and checked by
    every rule; None at the clean end; raises ``_Damage``.

    Runtime complexity: O(bytes read)
    """
    f.seek(at)
    left = size - at
    if left < FRAME_HEADER_BYTES:
        if _zero_suffix(f, size) <= at:
            return None
        raise _Damage(at, f"incomplete frame header ({left} bytes)", torn=True)
    head = f.read(FRAME_HEADER_BYTES)
    length, length_crc, payload_crc = FRAME.unpack(head)
    if zlib.crc32(head[:4]) != length_crc:
        zeros_at = _zero_suffix(f, size)  # one scan for both questions
        if zeros_at <= at:
            return None
        if _interrupted_copy(f, at, zeros_at, size):
            raise _Damage(at, "interrupted append", torn=True)
        raise _Damage(at, "frame length checksum mismatch", torn=False)
    if length > MAX_FRAME_BYTES:
        raise _Damage(at, f"frame length {length} over the limit", torn=False)
    end = at + FRAME_HEADER_BYTES + length
    if end > size:
        raise _Damage(at, f"incomplete record ({size - at} of {end - at} bytes)", torn=True)
    payload = f.read(length)
    if zlib.crc32(payload) != payload_crc:
        if end == size and _unwritten_sectors(payload, at + FRAME_HEADER_BYTES):
            raise _Damage(at, "last record ends in unwritten sectors", torn=True)
        # The length is intact, so a copy cut short left only zeros after
        # the frame, and at least one (the writer keeps it reserved).
        zeros_at = _zero_suffix(f, size)
        if zeros_at <= end < size and _interrupted_copy(f, at, zeros_at, size):
            raise _Damage(at, "interrupted append", torn=True)
        raise _Damage(at, "record checksum mismatch", torn=False)
    return payload


def read_header(f: BinaryIO, magic: bytes, path: str, what: str) -> tuple[dict[str, Any], int]:
    """Read and check a file's prefix and header frame; return the header
    map and the offset of the first frame after it."""
    f.seek(0, io.SEEK_END)
    size = f.tell()
    f.seek(0)
    check_prefix(f.read(PREFIX_BYTES), magic, path, what)
    try:
        for at, payload in read_frames(f, PREFIX_BYTES, size):
            try:
                header = unpack(payload)
            except Exception as exc:  # msgpack raises several unrelated types
                raise CorruptionError(path, at, f"{what} header does not decode ({exc})") from None
            if not isinstance(header, dict):
                raise CorruptionError(path, at, f"{what} header is not a map")
            return header, at + FRAME_HEADER_BYTES + len(payload)
    except _Damage as damage:
        raise CorruptionError(path, damage.offset, f"{what} header: {damage.reason}") from None
    raise CorruptionError(path, PREFIX_BYTES, f"{what} has no header")


# ----------------------------------------------------------------------
# Segments
# ----------------------------------------------------------------------
class SegmentReader:
    """Reads one segment: its header, then its records in order.

    After :meth:`events` is exhausted, :attr:`end` is the offset just past
    the last good record and :attr:`torn` describes a torn tail (or is
    None).  Damage raises :class:`CorruptionError`.

    >>> import tempfile, os
    >>> from rankengine.durable.records import encode_record, frame
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "log.seg")
    ...     w = SegmentWriter.create(path, {"first_seq": 1})
    ...     w.append(frame(encode_record(1, 5, [(0, "ann", 3, 1)])))
    ...     w.close()
    ...     with SegmentReader(path) as r:
    ...         print([e.seq for e in r.events()], r.torn)
    [1] None
    """

    def __init__(self, path: str, *, limit: int | None = None) -> None:
        self.path = path
        self._file: BinaryIO = open(path, "rb")  # noqa: SIM115 - closed by close()
        try:
            self.header, self.start = read_header(self._file, SEGMENT_MAGIC, path, "log segment")
            first = self.header.get("first_seq")
            if type(first) is not int or first < 1:
                raise CorruptionError(path, PREFIX_BYTES, "segment header has no valid first_seq")
            self.first_seq: int = first
            self._file.seek(0, io.SEEK_END)
            self.size = self._file.tell() if limit is None else min(limit, self._file.tell())
        except BaseException:
            self._file.close()
            raise
        self.end = self.start
        #: offset of the record last yielded
        self.at = self.start
        self.last_seq = first - 1
        self.records = 0
        self.torn: TornTail | None = None

    def __enter__(self) -> SegmentReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the file."""
        self._file.close()

    def blank(self) -> bool:
        """True when the segment holds no record: nothing, or only zeros
        (reserved space), after its header.

        Runtime complexity: O(size of the file after the header)
        """
        return _zero_suffix(self._file, self.size) <= self.start

    def events(self, progress: Callable[[int], None] | None = None) -> Iterator[Event]:
        """Every complete record, in order; checks sequence continuity.

        ``progress``, if given, is called with the current offset every
        :data:`PROGRESS_EVERY` records.
        """
        path = self.path
        try:
            # (frames in batches: a list is cheaper to iterate than a generator)
            for batch in _frame_batches(self._file, self.start, self.size):
                for at, payload in batch:
                    try:
                        event = decode_record(payload)
                    except ValueError as exc:
                        raise CorruptionError(path, at, f"bad record: {exc}") from None
                    if event.seq != self.last_seq + 1:
                        raise CorruptionError(
                            path, at, f"sequence jumps from {self.last_seq} to {event.seq}"
                        )
                    self.last_seq = event.seq
                    self.at = at
                    self.end = at + FRAME_HEADER_BYTES + len(payload)
                    self.records += 1
                    if progress is not None and self.records % PROGRESS_EVERY == 0:
                        progress(self.end)
                    yield event
        except _Damage as damage:
            if not damage.torn:
                raise CorruptionError(path, damage.offset, damage.reason) from None
            self.torn = TornTail(path, damage.offset, damage.reason, self.size)

    def batches(
        self, progress: Callable[[int], None] | None = None, *, start: int | None = None
    ) -> Generator[list[tuple[int, bytes]], None, None]:
        """The records' frames as ``(offset, payload)`` lists, one per chunk
        read, their checksums checked but not decoded: for a reader that
        decodes a chunk at once (:mod:`rankengine.durable.fold`), and checks
        the records itself (decoding, sequence continuity, then
        :attr:`last_seq`).

        :attr:`end` is past the batch's last frame once it is handed over;
        a torn tail ends the batches and is in :attr:`torn`, damage raises
        :class:`CorruptionError`.  ``progress``, if given, is called with
        :attr:`end` about every :data:`PROGRESS_EVERY` records.  ``start``
        (a frame's offset, such as an :attr:`end` of :meth:`frames_between`)
        reads on from there instead of the first record.

        Runtime complexity: O(bytes read)
        """
        path = self.path
        if start is not None:
            self.end = start
        try:
            for batch in _frame_batches(
                self._file, self.start if start is None else start, self.size
            ):
                at, payload = batch[-1]
                self.at = at
                self.end = at + FRAME_HEADER_BYTES + len(payload)
                before, self.records = self.records, self.records + len(batch)
                every = PROGRESS_EVERY
                if progress is not None and before // every != self.records // every:
                    progress(self.end)
                yield batch
        except _Damage as damage:
            if not damage.torn:
                raise CorruptionError(path, damage.offset, damage.reason) from None
            self.torn = TornTail(path, damage.offset, damage.reason, self.size)

    def frames_between(
        self, start: int, stop: int
    ) -> Generator[list[tuple[int, bytes]], None, None]:
        """The good frames from offset ``start`` (a frame's) that end by
        ``stop``, in lists as :meth:`batches` hands them over; they end
        quietly at the first frame that is not whole and good before
        ``stop`` (damage, a torn tail, a frame running past ``stop``), and
        :attr:`end` then says where: for a reader that splits a segment
        (:mod:`rankengine.durable.parallel`) and reads on from :attr:`end`
        with :meth:`batches`, which reports whatever stopped this.

        Runtime complexity: O(bytes read)
        """
        self.end = start
        try:
            for batch in _frame_batches(self._file, start, min(stop, self.size)):
                at, payload = batch[-1]
                self.end = at + FRAME_HEADER_BYTES + len(payload)
                yield batch
        except _Damage:
            return


#: How often (in records) readers report progress.
PROGRESS_EVERY: Final = 10_000


def _default_sync(fd: int) -> None:
    getattr(os, "fdatasync", os.fsync)(fd)


class SegmentWriter:
    """Appends frames to the end of one segment.

    A failed append is undone: the file is truncated back to the end of the
    last complete record, so the log stays readable, and the error is
    raised.  If even the truncation fails the writer is *broken*: every
    later append raises until the board is reopened (and the open then cuts
    the torn tail).

    ``sync`` is ``os.fdatasync`` (``os.fsync`` where that is missing); tests
    replace it, or ``file``, to simulate a failing disk.
    """

    def __init__(self, path: str, file: Any, end: int, start: int) -> None:
        self.path = path
        self.file = file
        #: offset just past the last complete record
        self.end = end
        #: offset of the first record (after the header)
        self.start = start
        self.sync_fn: Callable[[int], None] = _default_sync
        self.broken: BaseException | None = None

    @classmethod
    def create(cls, path: str, header: dict[str, Any], *, sync: bool = True) -> SegmentWriter:
        """Create a new segment with ``header`` and fsync it (not its directory).

        With ``sync=False`` the header is only written (into the OS page
        cache, which a process kill does not lose): a log rotation creates
        its segment under the board's lock and fsyncs it after
        (:mod:`rankengine.durable.rotation`).  If that fails (a full disk,
        an I/O error) the file is removed again, so that no half-written
        segment is left under the name.
        """
        data = write_prefix(SEGMENT_MAGIC) + frame(pack(header))
        # read and write: a MappedSegmentWriter maps the file
        file = open(path, "x+b", buffering=0)  # noqa: SIM115 - owned by the writer
        try:
            view, written = memoryview(data), 0
            while written < len(data):  # an unbuffered write may take only part
                n = file.write(view[written:])
                if not n:
                    raise OSError(f"short write to {path}")
                written += n
            if sync:
                _default_sync(file.fileno())
        except BaseException:
            file.close()
            with contextlib.suppress(OSError):  # what is left is a leftover the next open removes
                os.remove(path)
            raise
        return cls(path, file, len(data), len(data))

    @classmethod
    def reopen(cls, path: str, end: int, start: int) -> SegmentWriter:
        """Open an existing segment for appending at ``end`` (cutting anything after)."""
        file = open(path, "r+b", buffering=0)  # noqa: SIM115 - owned by the writer
        try:
            file.seek(0, io.SEEK_END)
            if file.tell() != end:
                file.truncate(end)
                _default_sync(file.fileno())
            file.seek(end)
        except BaseException:
            file.close()
            raise
        return cls(path, file, end, start)

    @property
    def record_bytes(self) -> int:
        """Bytes of records in this segment."""
        return self.end - self.start

    def append(self, data: bytes) -> None:
        """Write ``data`` (whole frames) at the end, or undo and raise."""
        if self.broken is not None:
            raise LogError(
                f"{self.path}: an earlier failed write could not be undone; "
                "close and reopen the board"
            ) from self.broken
        # One unbuffered write per append, so the frame is in the OS page
        # cache (it survives a process kill) when this returns.  On a regular
        # file that single call writes everything; the loop in
        # _write_rest() only runs after a short write.  (Skipping the
        # memoryview and the loop in the common case saves ~0.4 us a record.)
        # Nothing was written if this first call raises: no undo needed.
        n = self.file.write(data)
        if n != len(data):
            self._write_rest(data, n)
        self.end += len(data)

    def _write_rest(self, data: bytes, n: int | None) -> None:
        """Finish an append whose first write returned ``n`` bytes, or undo
        it and raise."""
        written = 0
        try:
            view = memoryview(data)
            while True:
                if not n:
                    raise OSError(f"short write to {self.path}")
                written += n
                if written >= len(data):
                    return
                n = self.file.write(view[written:])
        except BaseException:
            if written:
                self.rollback()
            raise

    def rollback(self) -> None:
        """Cut the file back to :attr:`end`; mark the writer broken if that fails."""
        try:
            self.file.truncate(self.end)
            self.file.seek(self.end)
        except BaseException as exc:
            self.broken = exc

    def undo_last(self, size: int) -> None:
        """Forget the last ``size`` appended bytes (their fsync failed)."""
        self.end -= size
        self.rollback()

    def sync(self) -> None:
        """Force the appended bytes to stable storage."""
        self.sync_fn(self.file.fileno())

    def trim(self) -> None:
        """Make the file end at :attr:`end` now (a :class:`MappedSegmentWriter`
        gives its reserved space back); appending still works.  Nothing to
        do here: this writer reserves nothing."""

    def close(self) -> None:
        """Close the file (without syncing)."""
        self.file.close()


#: errno values of ``posix_fallocate`` on a file system that cannot reserve
#: space (C libraries without an emulation report these).
_NO_RESERVE: Final = frozenset(
    code
    for code in (
        getattr(errno, "EOPNOTSUPP", None),
        getattr(errno, "ENOTSUP", None),
        getattr(errno, "ENOSYS", None),
    )
    if code is not None
)


class MappedSegmentWriter(SegmentWriter):
    """Appends frames by copying them into a shared memory map of the segment.

    The file is reserved ahead of the records, and a window of it is mapped::

        | prefix | header | frame | frame | frame | 00 00 00 ... 00 00 |
                         ^start              ^end    reserved zeros  ^allocated
                   [map window, from a page boundary before end ........]

    An append is one copy into the window.  The copied bytes are in the
    page cache when the copy ends, exactly as after ``write()``, so a kill
    loses nothing acknowledged, and ``fdatasync`` (:meth:`sync`) writes them
    back just the same.  What it buys, measured with one-change records: a
    copy takes ~0.1 us where a ``write()`` system call takes ~1.1 us (about
    2 us inside the increment loop of a board of 1,000,000 members).

    The rest is what makes that safe:

    * Space is reserved with ``posix_fallocate`` before it is mapped, so a
      full disk is an ``OSError`` from :meth:`append` with nothing written,
      never a SIGBUS in the middle of a copy.
    * A frame over :data:`MAP_FRAME_LIMIT` bytes is written with ``write()``
      after giving the reserved space back, so an interrupted copy is never
      longer than that (readers rely on the bound).
    * :meth:`close` gives the reserved space back.  After a kill the zeros
      stay; readers take them for the clean end, and the next open cuts them.

    Linux only (see :data:`MAPPED_SEGMENTS`); on a file system that cannot
    reserve space it writes every frame with ``write()`` (:attr:`mapping`
    turns False).  ``allocate_fn`` is ``os.posix_fallocate``; tests replace
    it to simulate a full disk.

    >>> import tempfile, os
    >>> from rankengine.durable.records import encode_record, frame
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "log.seg")
    ...     w = MappedSegmentWriter.create(path, {"first_seq": 1})
    ...     w.append(frame(encode_record(1, 5, [(0, "ann", 3, 1)])))
    ...     reserved = os.path.getsize(path) > w.end
    ...     w.close()
    ...     with SegmentReader(path) as r:
    ...         print(reserved, os.path.getsize(path) == w.end, [e.seq for e in r.events()])
    True True [1]
    """

    def __init__(self, path: str, file: Any, end: int, start: int) -> None:
        super().__init__(path, file, end, start)
        self.allocate_fn: Callable[[int, int, int], None] = os.posix_fallocate
        self._map: mmap.mmap | None = None
        #: maps moved past (RETIRED_MAPS), each popped by the thread closing it
        self._retired: list[mmap.mmap] = []
        #: file offset of the map's first byte
        self._map_start = 0
        #: bytes of the map after end
        self._room = 0
        #: file size: end plus the reserved zeros
        self._allocated = end
        #: False once the file system turned out not to reserve space:
        #: from then on every frame is written with write()
        self.mapping = True

    def append(self, data: bytes) -> None:
        """Copy ``data`` (whole frames) to the end, or raise with nothing written."""
        size = len(data)
        view = self._map
        # ``<`` and not ``<=``: a reserved zero always follows the frame, so
        # that a copy cut short never reaches the end of the file (see
        # _interrupted_copy).
        if view is not None and size < self._room and size <= MAP_FRAME_LIMIT:
            view.write(data)  # all but one small append in ~20,000
            self._room -= size
            self.end += size
            return
        if self.broken is not None or not self.mapping:
            super().append(data)  # raises if broken; else write() at end, as after a release
            return
        if size > MAP_FRAME_LIMIT or not self._remap():
            self._release()
            super().append(data)
            return
        view = self._map
        assert view is not None
        view.write(data)
        self._room -= size
        self.end += size

    def _remap(self) -> bool:
        """Reserve and map :data:`MAP_GROW_BYTES` past :attr:`end`; False
        (and :attr:`mapping` off) where the file system cannot reserve space."""
        if self._map is not None:  # retired, closed by a sync (RETIRED_MAPS)
            self._retired.append(self._map)
            self._map, self._room = None, 0
        self._close_retired(RETIRED_MAPS)
        start = self.end - self.end % mmap.ALLOCATIONGRANULARITY
        stop = self.end + MAP_GROW_BYTES
        stop += -stop % mmap.PAGESIZE
        if stop > self._allocated:
            try:
                self.allocate_fn(self.file.fileno(), self._allocated, stop - self._allocated)
            except OSError as exc:
                # A reservation that failed part-way may have made the file
                # longer (a file system allocating in steps, the C library's
                # emulation writing zeros): give that back too on release.
                with contextlib.suppress(OSError):
                    size = os.fstat(self.file.fileno()).st_size
                    self._allocated = max(self._allocated, size)
                if exc.errno not in _NO_RESERVE:
                    raise  # a full disk, an I/O error: this append fails
                self.mapping = False  # writing without a reservation would risk SIGBUS
                return False
            self._allocated = stop
        view = mmap.mmap(self.file.fileno(), stop - start, offset=start)
        if MAP_ADVICE is not None:
            view.madvise(MAP_ADVICE)
        view.seek(self.end - start)
        self._map, self._map_start, self._room = view, start, stop - self.end
        return True

    def _unmap(self) -> None:
        if self._map is not None:
            self._map.close()
            self._map, self._room = None, 0
        self._close_retired()

    def _close_retired(self, keep: int = 0) -> None:
        """Close retired maps, oldest first, until ``keep`` are left."""
        with contextlib.suppress(IndexError):  # (another thread took the last)
            while len(self._retired) > keep:
                self._retired.pop(0).close()

    def sync(self) -> None:
        """fsync, then close the retired maps (the fsync covers them too)."""
        super().sync()
        self._close_retired()

    def _release(self) -> None:
        """Unmap and give the reserved space back (the file ends at :attr:`end`)."""
        self._unmap()
        if self._allocated != self.end:
            self.file.truncate(self.end)
            self._allocated = self.end
        self.file.seek(self.end)

    def rollback(self) -> None:
        """Cut the file back to :attr:`end` (after a failed ``write()``)."""
        super().rollback()
        self._allocated = self.end

    def undo_last(self, size: int) -> None:
        """Forget the last ``size`` appended bytes (their fsync failed)."""
        view = self._map
        if view is None:  # the last append went through write()
            super().undo_last(size)
            return
        self.end -= size
        at = self.end - self._map_start
        view[at : at + size] = bytes(size)  # back to reserved zeros
        view.seek(at)
        self._room += size

    def trim(self) -> None:
        """Give the reserved space back now (the next append reserves again).

        Compaction calls it before the manifest lists a segment after this
        one: an open cuts reserved zeros only from the last segment, so
        zeros left here by a kill would otherwise stay for good.
        """
        with contextlib.suppress(OSError):  # the zeros left are a clean end anyway
            self._release()

    def close(self) -> None:
        """Give the reserved space back and close the file (without syncing)."""
        try:
            self.trim()
        finally:
            self.file.close()


#: The writer of an active segment, for durable boards and ledgers alike,
#: under every fsync policy: a copy into a memory map where
#: :data:`MAPPED_SEGMENTS` allows it.  Under ``"always"`` too: with group
#: commit the append runs on the recording thread -- an event loop's --
#: while the flusher thread fsyncs, and a ``write()`` that extends the file
#: waits behind that fsync's journal commit, where a copy into space
#: reserved ahead does not.  Measured, an event loop recording 2,000
#: events/s into a ledger under ``"always"`` on a shared machine: appends
#: blocked the loop 0.38-0.46 s in 2 s with ``write()`` (up to 28 ms at
#: once), 0.04-0.05 s with the map (up to 12 ms).
ACTIVE_WRITER: Final[type[SegmentWriter]] = (
    MappedSegmentWriter if MAPPED_SEGMENTS else SegmentWriter
)
