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

import os
import struct
import tempfile
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
        payload = {
            "period": list(period),
            "settings": _board_settings(board),
            "clock": board.clock,
            "rows": [list(row) for row in board._export()],
        }
    body = pack(payload)  # ints past 64 bits as the log's big-int extension
    data = _HEADER.pack(ARCHIVE_MAGIC, len(body), zlib.crc32(body)) + body
    target = Path(path)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=ARCHIVE_TMP, suffix=ARCHIVE_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
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
