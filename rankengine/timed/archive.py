"""Archive files: a closed period's final standings, in one checksummed file.

A periodic board with ``archive=DIR`` writes each period it drops to
``DIR/<period>.rkarchive`` (:func:`write_archive`) before deleting the
period's board; :meth:`PeriodicLeaderboard.load_archived
<rankengine.timed.periodic.PeriodicLeaderboard.load_archived>` and
:func:`read_archive` bring it back as a board with the same ranks, ties and
metadata.

>>> import tempfile, os
>>> from rankengine import Leaderboard
>>> from rankengine.timed.calendars import Period
>>> board = Leaderboard()
>>> board.set_many({"ann": 5, "bob": 7})
2
>>> with tempfile.TemporaryDirectory() as tmp:
...     path = os.path.join(tmp, "w" + ARCHIVE_SUFFIX)
...     write_archive(path, Period("2026-W49", 0.0, 1.0), board)
...     period, back = read_archive(path)
>>> period.name, back.items()
('2026-W49', [('bob', 7), ('ann', 5)])
"""

from __future__ import annotations

import itertools
import os
import struct
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any, Final

from rankengine.board.leaderboard import Leaderboard
from rankengine.durable.records import crash_point, pack, unpack
from rankengine.durable.snapshot import fsync_dir
from rankengine.timed.calendars import (
    Period,
)

__all__ = [
    "ARCHIVE_MAGIC",
    "ARCHIVE_PIECE",
    "ARCHIVE_SUFFIX",
    "ARCHIVE_TMP",
    "period_file_name",
    "read_archive",
    "write_archive",
]

#: File header: magic, payload length and CRC-32 of the payload.  The magic
#: names the format and its version; the CRC catches a torn or rotted file.
ARCHIVE_MAGIC: Final = b"RKARCH01"
_HEADER: Final = struct.Struct("<8sII")
#: Rows packed between two hand-overs of the GIL: ~1-3 ms of packing.
ARCHIVE_PIECE: Final = 4096
ARCHIVE_SUFFIX: Final = ".rkarchive"
#: Prefix of an archive while it is written (hidden: :meth:`PeriodicLeaderboard.archived`
#: skips it; a durable board's reopen removes one a crash left).
ARCHIVE_TMP: Final = ".tmp-"


def _board_settings(board: Leaderboard) -> dict[str, Any]:
    order = board.order
    return {
        "order": list(order) if isinstance(order, tuple) else order,
        "tie_break": board.tie_break,
        "rank_style": board.rank_style,
    }


def write_archive(path: str | os.PathLike[str], period: Period, board: Leaderboard) -> None:
    """Write ``board`` (every member with score, tie clock and metadata) as
    the final standings of ``period`` to ``path``, atomically.

    Format: ``magic (8 bytes) | length (u32 LE) | crc32 (u32 LE) | msgpack``,
    the payload a map with the period, the board's settings, its logical
    clock and its rows in index order.  The file is written next to its
    final name, flushed to disk, then renamed over it, and the directory is
    fsynced.

    Runtime complexity: O(N)
    """
    with board._lock:
        head = pack(
            {
                "period": list(period),
                "settings": _board_settings(board),
                "clock": board.clock,
                "rows": [],
            }
        )
        # The rows are packed a piece at a time, with the GIL let go between
        # pieces: packed at once, 10^6 rows hold it for 0.3-1 s (one C call),
        # a stall of every thread.  msgpack is a stream, so the pieces'
        # bytes after their own array headers, behind one array header for
        # all rows, are the bytes of the whole list packed at once.
        pieces = [head[:-1], _array_header(len(board))]  # head ends with the empty array
        rows = board._export()
        while chunk := [list(row) for row in itertools.islice(rows, ARCHIVE_PIECE)]:
            packed = pack(chunk)
            pieces.append(packed[len(_array_header(len(chunk))) :])
            del chunk, packed
            time.sleep(0)
    length = sum(map(len, pieces))
    crc = 0
    for piece in pieces:
        crc = zlib.crc32(piece, crc)
    target = Path(path)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=ARCHIVE_TMP, suffix=ARCHIVE_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(_HEADER.pack(ARCHIVE_MAGIC, length, crc))
            for piece in pieces:
                handle.write(piece)
            handle.flush()
            os.fsync(handle.fileno())
        crash_point("archive_rename")
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    # the rename is durable only with its directory: a periodic board deletes
    # the period's own files right after archiving it
    fsync_dir(str(target.parent))


def _array_header(n: int) -> bytes:
    """The msgpack header of an array of ``n`` items (fixarray, array 16, array 32)."""
    if n < 16:
        return bytes([0x90 | n])
    if n < 1 << 16:
        return b"\xdc" + n.to_bytes(2, "big")
    return b"\xdd" + n.to_bytes(4, "big")


def read_archive(path: str | os.PathLike[str], **config: Any) -> tuple[Period, Leaderboard]:
    """Read an archive written by :func:`write_archive`: the period and a new
    board identical to the archived one (same ranks, ties and metadata).
    ``config`` overrides board settings (e.g. ``backend``).

    :raises ValueError: the file is not an archive, or is damaged.

    Runtime complexity: O(N)
    """
    data = Path(path).read_bytes()
    if len(data) < _HEADER.size:
        raise ValueError(f"{path}: too short to be an archive")
    magic, length, crc = _HEADER.unpack_from(data)
    body = data[_HEADER.size :]
    if magic != ARCHIVE_MAGIC:
        raise ValueError(f"{path}: not a rankengine archive (magic {magic!r})")
    if len(body) != length or zlib.crc32(body) != crc:
        raise ValueError(f"{path}: archive is damaged (length or checksum mismatch)")
    payload = unpack(body)
    settings = dict(payload["settings"])
    if isinstance(settings["order"], list):
        settings["order"] = tuple(settings["order"])
    board = Leaderboard(**{**settings, **config})
    board._restore(((m, s, c, meta) for m, s, c, meta in payload["rows"]), payload["clock"])
    name, start, end = payload["period"]
    return Period(name, start, end), board


def period_file_name(name: str) -> str:
    """Period names may hold ``:``; file names should not."""
    return name.replace(":", "_")
