"""Snapshot chunks decoded once for several snapshots read in one go.

A ledger's views often hold the same rows -- a weekly and an all-time
board in a ledger's first week, every view that sees every event -- and
their snapshot files then hold byte-identical chunk frames.  While the
open reads them, a :class:`SharedChunks` remembers each chunk it decoded
and checked, and a later chunk with the same bytes is handed the very same
objects (its member strings decoded once for all those views; see
:meth:`~rankengine.durable.snapshot.Snapshot.same_rows`).

What it keeps per chunk: the decoded chunk, where its bytes lie in their
file, and a short key (how it was read, its length, the bytes of its two
ends).  Not the bytes: holding every chunk's payload until the open ends
(~90 MB for three views of 10^6 members) made every later read take fresh
memory from the system (measured: +21,000 page faults and 0.03-0.07 s per
open of three distinct views of 10^6 members, where nothing matched).  A
chunk whose short key matches one kept is confirmed by reading the kept
chunk's bytes back from its file (the page cache; ~1.8 MB) and comparing
them with the new chunk's (a memcmp): a match is exact, never a guess.
The files are not written while a ledger is open (its lock file), so
the bytes read back are the ones the kept chunk was decoded from.

>>> import os, tempfile
>>> with tempfile.TemporaryDirectory() as tmp:
...     path = os.path.join(tmp, "s.snap")
...     with open(path, "wb") as f:
...         _ = f.write(b"....raw")
...     shared = SharedChunks()
...     shared.keep((2, None, False, b"raw"), [["a"], [1], [1], []], path, 4)
...     shared.find((2, None, False, b"raw")), shared.find((2, None, False, b"rax"))
([['a'], [1], [1], []], None)
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ["SharedChunks"]

#: ``(snapshot version, score columns, clocks negated, payload bytes)``:
#: a chunk decodes to the same objects only when all four are the same.
ChunkKey = tuple[int, "int | None", bool, bytes]

#: Bytes of each end of a chunk's payload that the short key holds: chunks
#: of different rows differ there (the first members, the last clocks), so
#: few candidates are ever read back.
_PEEK_BYTES: Final = 64


class SharedChunks:
    """Chunks already decoded and checked while reading several snapshots,
    found again by their exact bytes (see the module docstring).

    Holds the decoded chunks until it is dropped: make one per open.
    """

    def __init__(self) -> None:
        #: by short key: ``(path, payload offset, chunk)`` of each chunk kept.
        #: Hashing whole chunks (~1.5 MB each) cost ~0.04 s per open of four
        #: views at N = 1,000,000, paid even when nothing matches.
        self._chunks: dict[tuple[Any, ...], list[tuple[str, int, list[Any]]]] = {}

    @staticmethod
    def _short(key: ChunkKey) -> tuple[Any, ...]:
        data = key[3]
        return (*key[:3], len(data), data[:_PEEK_BYTES], data[-_PEEK_BYTES:])

    def find(self, key: ChunkKey) -> list[Any] | None:
        """The checked chunk decoded from exactly these bytes, if any.

        Runtime complexity: O(1) for bytes no kept chunk shares its ends
        with; O(len(bytes)) (one read and a memcmp) for each that does
        """
        data = key[3]
        for path, offset, chunk in self._chunks.get(self._short(key), ()):
            if _bytes_at(path, offset, len(data)) == data:
                return chunk
        return None

    def keep(self, key: ChunkKey, chunk: list[Any], path: str, offset: int) -> None:
        """Remember ``chunk``, decoded and checked from ``key``'s bytes, which
        lie at ``offset`` in the file ``path``.

        Runtime complexity: O(1)
        """
        self._chunks.setdefault(self._short(key), []).append((path, offset, chunk))


def _bytes_at(path: str, offset: int, size: int) -> bytes | None:
    """``size`` bytes of ``path`` from ``offset`` (None when they cannot be
    read: the chunk is then decoded again, as without sharing).

    Runtime complexity: O(size)
    """
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read(size)
    except OSError:
        return None
