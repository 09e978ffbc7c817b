"""Snapshots: the whole board in one checksummed msgpack file.

A snapshot holds every member as of one sequence number, in ascending index
order, so that loading it bulk-builds the index in O(N) without sorting::

    snapshot = prefix | frame(header) | frame(chunk) ... | frame(trailer)
    header   = {"seq", "clock", "count", "time_ms", "created_ms", "config",
                "negated_clocks" (only when true)}
    chunk    = [members, scores, clocks, metas]     (columns of up to
               SNAPSHOT_CHUNK_ROWS rows; metas = [i, meta, i, meta, ...]
               for the rows that have metadata, i counted within the chunk)
    trailer  = {"count", "chunks"}

A column of scores or clocks that are all 64-bit ints (or all floats) is
stored as one msgpack extension object holding the raw 8-byte values, a
*typed column*, which loads with one memory copy into an ``array``::

    scores   = [1, 5, 9]            (a msgpack array: any values)
             | ext 2 (int64 LE)     (a typed column: 8 bytes per value)
             | ext 3 (float64 LE)

Frames are those of :mod:`rankengine.durable.records` (length, two CRC32s,
payload).  The trailer proves the file is complete: a snapshot without it
is refused, never half-loaded.

Writing is crash-safe: the file is written as ``NAME.tmp``, fsynced,
renamed to ``NAME`` and the directory fsynced; only then does the manifest
name it.

>>> import tempfile, os
>>> with tempfile.TemporaryDirectory() as tmp:
...     path = os.path.join(tmp, "s.snap")
...     rows = [("bob", 5, 1, None), ("ann", 9, 2, {"x": 1})]
...     _ = write_snapshot(path, {"seq": 2, "clock": 2}, rows)
...     snap = read_snapshot(path)
...     print(snap.header["count"], list(snap.rows()))
2 [('bob', 5, 1, None), ('ann', 9, 2, {'x': 1})]
"""

from __future__ import annotations

import operator
import os
from array import array
from collections.abc import Callable, Iterator, MutableSequence, Sequence
from typing import Any, Final

from rankengine.board.scoring import check_meta
from rankengine.durable.eventlog import _Damage, read_frames
from rankengine.durable.records import (
    FRAME_HEADER_BYTES,
    PREFIX_BYTES,
    CorruptionError,
    check_prefix,
    crash_point,
    frame,
    pack,
    unpack,
    write_prefix,
)
from rankengine.durable.shared_chunks import SharedChunks
from rankengine.durable.typed_columns import (
    FLOAT64_COLUMN_EXT,
    INT64_COLUMN_EXT,
    column_hook,
    concat_columns,
    negated_pieces,
    signs_agree,
    typed_column,
)

__all__ = [
    "FLOAT64_COLUMN_EXT",
    "INT64_COLUMN_EXT",
    "SNAPSHOT_MAGIC",
    "SNAPSHOT_VERSION",
    "Piece",
    "SharedChunks",
    "Snapshot",
    "copy_snapshot",
    "read_snapshot",
    "write_snapshot",
    "write_snapshot_columns",
    "write_snapshot_pieces",
]

#: Magic of a snapshot file (same design as the segment magic).
SNAPSHOT_MAGIC: Final = b"\x89RKSNP\r\n"
#: Rows per chunk frame.  64 Ki rows make ~1.5 MB frames: few enough frames
#: that the per-frame Python work vanishes, small enough that a reader never
#: holds much more than one chunk of extra bytes.
SNAPSHOT_CHUNK_ROWS: Final = 65_536
#: Items packed per msgpack call while a live board's snapshot is written
#: (``pause`` of :func:`write_snapshot_columns`): ~1 ms on a loaded VM.
PACK_PIECE_ROWS: Final = 2_048
#: Version of the snapshot file layout (the prefix's version field).
#: Version 2 added typed columns; version 1 files (msgpack arrays only) are
#: still read.
SNAPSHOT_VERSION: Final = 2
_READABLE_VERSIONS: Final = (1, 2)
#: The first byte of the trailer's payload (a msgpack map of two keys);
#: a chunk is an array, so a deferred read tells them apart by it.
_MAP_OF_TWO: Final = b"\x82"

Row = tuple[Any, Any, int, "dict[str, Any] | None"]
#: ``(members, scores, clocks, metas)``; ``metas`` maps a row number to its
#: metadata.  Scores and clocks may be ``array`` columns.
Columns = tuple[list[Any], Sequence[Any], Sequence[int], dict[int, dict[str, Any]]]
#: ``(members, scores, clocks)`` of consecutive rows: a snapshot's columns
#: may come as a list of pieces (:func:`write_snapshot_pieces`), each any
#: sequence (a list, a tuple, an ``array``).
Piece = tuple[Sequence[Any], Sequence[Any], Sequence[int]]


class Snapshot:
    """A fully read and checked snapshot: :attr:`header` and its rows."""

    def __init__(
        self,
        path: str,
        header: dict[str, Any],
        chunks: list[list[Any]],
        size: int,
        *,
        deferred: bool = False,
    ) -> None:
        self.path = path
        self.header = header
        self.size = size
        self._chunks = chunks
        #: True when only the header was decoded (``read_snapshot(defer=)``):
        #: every frame's checksums were verified, and the rows are read by
        #: a later ``read_snapshot`` of :attr:`path`
        self.deferred = deferred

    @property
    def seq(self) -> int:
        """The last sequence number this snapshot includes."""
        return int(self.header["seq"])

    @property
    def negated_clocks(self) -> bool:
        """True when the clocks column holds every clock negated (<= 0), as a
        descending board's index keeps them; :meth:`rows` undoes it."""
        return self.header.get("negated_clocks") is True

    def columns(self) -> tuple[list[Any], Sequence[Any], Sequence[int], dict[Any, dict[str, Any]]]:
        """``(members, scores, clocks, metas)``: whole columns in ascending
        index order, and metadata by member -- for a columnar bulk load.

        Scores and clocks are ``array`` columns when every chunk stored them
        as typed columns of one kind, else lists.  The clocks are as stored:
        negated when :attr:`negated_clocks` is true.

        Runtime complexity: O(N), in C (list and array concatenation)
        """
        members: list[Any] = []
        metas: dict[Any, dict[str, Any]] = {}
        for chunk_members, _, _, chunk_metas in self._chunks:
            for i in range(0, len(chunk_metas), 2):
                metas[chunk_members[chunk_metas[i]]] = chunk_metas[i + 1]
            members += chunk_members
        scores = concat_columns([chunk[1] for chunk in self._chunks])
        clocks = concat_columns([chunk[2] for chunk in self._chunks])
        return members, scores, clocks, metas

    def same_rows(self, other: Snapshot) -> bool:
        """True when ``other`` holds the very same chunk objects, in the same
        order: two snapshots read with one :class:`SharedChunks` whose every
        chunk was byte-identical, so the same members, scores, clocks and
        metadata (a board restored from one can lend its maps to the other).

        Runtime complexity: O(chunks)
        """
        return len(self._chunks) == len(other._chunks) and all(
            a is b for a, b in zip(self._chunks, other._chunks, strict=True)
        )

    def rows(self) -> Iterator[Row]:
        """``(member, score, clock, meta)`` in ascending index order."""
        negated = self.negated_clocks
        for members, scores, stored, metas in self._chunks:
            clocks = map(abs, stored) if negated else stored
            if metas:
                full: list[Any] = [None] * len(members)
                for i in range(0, len(metas), 2):
                    full[metas[i]] = metas[i + 1]
                yield from zip(members, scores, clocks, full, strict=True)
            else:
                for member, score, clock in zip(members, scores, clocks, strict=True):
                    yield member, score, clock, None


def write_snapshot(
    path: str,
    header: dict[str, Any],
    rows: Sequence[Row],
    *,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Write ``rows`` as a snapshot at ``path`` atomically; return its size.

    ``header`` must hold ``seq`` and ``clock``; ``count`` is added.  The
    rows are turned into columns and handed to :func:`write_snapshot_columns`.

    Runtime complexity: O(N)
    """
    metas = {i: row[3] for i, row in enumerate(rows) if row[3] is not None}
    columns = ([row[0] for row in rows], [row[1] for row in rows], [row[2] for row in rows], metas)
    return write_snapshot_columns(path, header, columns, progress=progress)


def write_snapshot_columns(
    path: str,
    header: dict[str, Any],
    columns: Columns,
    *,
    progress: Callable[[int, int], None] | None = None,
    pause: Callable[[], None] | None = None,
) -> int:
    """Write a snapshot from whole columns ``(members, scores, clocks, metas)``
    (row ``i`` is ``members[i]``, ``scores[i]``, ``clocks[i]`` and
    ``metas.get(i)``, as ``Leaderboard._export_columns`` returns them)
    atomically; return its size.

    ``header`` must hold ``seq`` and ``clock``; ``count`` is added.  Crash
    points: ``snapshot_write`` (half the chunks written), ``snapshot_rename``
    (before the rename), ``after_snapshot_rename``.

    ``pause``, when given, is called between pieces of :data:`PACK_PIECE_ROWS`
    rows: a live board's compaction lets go of the GIL there, since one
    msgpack call on a whole chunk holds it for tens of milliseconds at
    64 Ki rows (the bytes written are the same; see :func:`_pack_in_pieces`).

    Runtime complexity: O(N); every chunk is list slices handed to msgpack,
    so the per-row work is in C.
    """
    members, scores, clocks, metas = columns
    n = len(members)
    if len(scores) != n or len(clocks) != n:
        raise ValueError("snapshot columns differ in length")
    return write_snapshot_pieces(
        path, header, [(members, scores, clocks)], metas, progress=progress, pause=pause
    )


def write_snapshot_pieces(
    path: str,
    header: dict[str, Any],
    pieces: MutableSequence[Piece | None],
    metas: dict[int, dict[str, Any]],
    *,
    progress: Callable[[int, int], None] | None = None,
    pause: Callable[[], None] | None = None,
) -> int:
    """Write a snapshot whose rows are the ``pieces`` one after the other
    (``(members, scores, clocks)`` each; ``metas`` by row number counted
    over all pieces) atomically; return its size.

    The file is byte for byte what :func:`write_snapshot_columns` writes
    from the pieces joined into whole columns, without ever making those
    columns: a live board's snapshot (:mod:`rankengine.durable.sliced`)
    hands over its slices, and a million-row list is what every young
    collection of the collector then read through (10-25 ms a collection,
    in whichever thread made it run).  ``pieces`` is consumed: each piece
    is set to None once its rows are written, so its rows are freed a piece
    at a time instead of in one long call at the end.

    ``pause``: as for :func:`write_snapshot_columns`; the clocks' sign is
    also found :data:`SIGN_PIECE_ROWS` values at a time.

    Runtime complexity: O(N), in C but for O(N / piece) steps

    >>> import tempfile, os
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     a, b = os.path.join(tmp, "a.snap"), os.path.join(tmp, "b.snap")
    ...     head = {"seq": 3, "clock": 3, "created_ms": 0}
    ...     pieces = [(["bob"], [5], [1]), (("ann", "cy"), array("q", [9, 9]), (2, 3))]
    ...     size = write_snapshot_pieces(a, head, pieces, {1: {"x": 1}})
    ...     whole = (["bob", "ann", "cy"], [5, 9, 9], [1, 2, 3], {1: {"x": 1}})
    ...     _ = write_snapshot_columns(b, head, whole)
    ...     same = open(a, "rb").read() == open(b, "rb").read()
    ...     print(same, pieces, list(read_snapshot(a).rows())[1])
    True [None, None] ('ann', 9, 2, {'x': 1})
    """
    n = 0
    for piece in pieces:
        if piece is None:
            raise ValueError("a snapshot piece was written already")
        count = len(piece[0])
        if len(piece[1]) != count or len(piece[2]) != count:
            raise ValueError("snapshot columns differ in length")
        n += count
    tmp = path + ".tmp"
    head = dict(header, count=n)
    clocks = [piece[2] for piece in pieces if piece is not None]
    if negated_pieces(clocks, pause):
        head["negated_clocks"] = True
    del clocks
    try:
        size = _write_file(tmp, head, pieces, metas, n, progress=progress, pause=pause)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    crash_point("snapshot_rename")
    os.replace(tmp, path)
    fsync_dir(os.path.dirname(path) or ".")
    crash_point("after_snapshot_rename")
    return size


def _write_file(
    tmp: str,
    head: dict[str, Any],
    pieces: MutableSequence[Piece | None],
    metas: dict[int, dict[str, Any]],
    n: int,
    *,
    progress: Callable[[int, int], None] | None,
    pause: Callable[[], None] | None,
) -> int:
    chunks = -(-n // SNAPSHOT_CHUNK_ROWS)
    # metadata rows grouped by chunk, as [row within chunk, meta, ...]
    chunk_metas: dict[int, list[Any]] = {}
    for i in sorted(metas):
        chunk_metas.setdefault(i // SNAPSHOT_CHUNK_ROWS, []).extend(
            (i % SNAPSHOT_CHUNK_ROWS, metas[i])
        )
    rows = _chunk_rows(pieces, SNAPSHOT_CHUNK_ROWS, pause)
    with open(tmp, "wb") as f:
        f.write(write_prefix(SNAPSHOT_MAGIC, SNAPSHOT_VERSION))
        f.write(frame(pack(head)))
        for k, (members, scores, clocks) in enumerate(rows):
            hi = min((k + 1) * SNAPSHOT_CHUNK_ROWS, n)
            if pause is None:
                chunk = [
                    members,
                    typed_column(scores),
                    typed_column(clocks),
                    chunk_metas.get(k, []),
                ]
                f.write(frame(pack(chunk)))
            else:
                chunk = [
                    members,
                    _typed_in_pieces(scores, pause),
                    _typed_in_pieces(clocks, pause),
                    chunk_metas.get(k, []),
                ]
                f.write(frame(_pack_in_pieces(chunk, pause)))
                pause()  # (after the frame's CRC and write, which let go of it anyway)
            del chunk, members, scores, clocks
            if k == chunks // 2:
                f.flush()
                crash_point("snapshot_write")
            if progress is not None:
                progress(hi, n)
        f.write(frame(pack({"count": n, "chunks": chunks})))
        f.flush()
        os.fsync(f.fileno())
        return f.tell()


def _chunk_rows(
    pieces: MutableSequence[Piece | None], rows: int, pause: Callable[[], None] | None = None
) -> Iterator[tuple[list[Any], Sequence[Any], Sequence[Any]]]:
    """The rows of ``pieces`` regrouped into columns of ``rows`` rows (the
    last one shorter): members as a list, scores and clocks as an ``array``
    where every part is one of the same kind, else a list.  Each piece is
    set to None in ``pieces`` once all its rows were handed out (which frees
    them, if nothing else holds them), and ``pause()`` runs after every
    :data:`PACK_PIECE_ROWS` rows or so: a chunk's 64 Ki rows, freed and
    joined at once, held the GIL for ~4 ms.

    Runtime complexity: O(total rows), in C (slices and concatenations)

    >>> pieces = [(["a", "b", "c"], [1, 2, 3], array("q", [7, 8, 9])), (("d",), [4], [0])]
    >>> list(_chunk_rows(pieces, 2)), pieces
    ([(['a', 'b'], [1, 2], array('q', [7, 8])), (['c', 'd'], [3, 4], [9, 0])], [None, None])
    """
    i, at = 0, 0  # the next row: row `at` of piece `i`
    since = 0  # rows handed out since the last pause
    while i < len(pieces):
        columns = [_Joined(), _Joined(), _Joined()]
        need = rows
        while need and i < len(pieces):
            piece = pieces[i]
            assert piece is not None
            size = len(piece[0])
            take = min(need, size - at)
            if take:
                whole = at == 0 and take == size
                for joined, column in zip(columns, piece, strict=True):
                    joined.add(column if whole else column[at : at + take])
            at += take
            need -= take
            if at == size:  # (the piece is handed out: free it now, not at the end)
                pieces[i] = None
                i, at = i + 1, 0
            del piece
            since += take
            if pause is not None and since >= PACK_PIECE_ROWS:
                pause()
                since = 0
        if need == rows:
            return
        members, scores, clocks = (joined.value for joined in columns)
        yield (members if type(members) is list else list(members), scores, clocks)


class _Joined:
    """Parts of a column joined as they come: the part itself while there
    is one, an ``array`` while all are arrays of one typecode, else a list
    (never one of the parts, changed).

    >>> joined = _Joined()
    >>> mine = [1]
    >>> for part in (mine, (2, 3), array("q", [4])):
    ...     joined.add(part)
    >>> joined.value, mine
    ([1, 2, 3, 4], [1])
    >>> joined = _Joined()
    >>> for part in (array("d", [1.5]), array("d", [2.0])):
    ...     joined.add(part)
    >>> joined.value
    array('d', [1.5, 2.0])
    """

    __slots__ = ("owned", "value")

    def __init__(self) -> None:
        self.value: Any = None
        #: True once value is a container of ours (parts are never changed)
        self.owned = False

    def add(self, part: Sequence[Any]) -> None:
        """Put ``part`` after the values so far.

        Runtime complexity: O(len(part)), in C (O(total) for the first copy)
        """
        value = self.value
        if value is None:
            self.value = part
            return
        same = type(value) is array and type(part) is array and part.typecode == value.typecode
        if not self.owned:
            value = value[:] if same else list(value)  # (an array slice is a copy)
            self.owned = True
        elif type(value) is array and not same:
            value = list(value)
        value += part
        self.value = value


def _array_header(length: int) -> bytes:
    """msgpack's header of an array of ``length`` items.

    >>> _array_header(3).hex(), _array_header(300).hex(), _array_header(70_000).hex()
    ('93', 'dc012c', 'dd00011170')
    """
    if length < 16:
        return bytes((0x90 | length,))
    if length < 1 << 16:
        return b"\xdc" + length.to_bytes(2, "big")
    return b"\xdd" + length.to_bytes(4, "big")


def _typed_in_pieces(values: Sequence[Any], pause: Callable[[], None]) -> Any:
    """:func:`typed_column`, the same result, converting :data:`PACK_PIECE_ROWS`
    values at a time with ``pause()`` between pieces.

    >>> pieces = _typed_in_pieces([1, 2] * 3000, lambda: None)
    >>> pieces == typed_column([1, 2] * 3000), _typed_in_pieces([1, 2.5], lambda: None)
    (True, [1, 2.5])
    """
    if type(values) is array or len(values) <= PACK_PIECE_ROWS:
        return typed_column(values)
    kinds: set[type] = set()
    for lo in range(0, len(values), PACK_PIECE_ROWS):
        kinds.update(map(type, values[lo : lo + PACK_PIECE_ROWS]))
        pause()
    if kinds not in ({int}, {float}):
        return list(values)
    column = array("q" if kinds == {int} else "d")
    try:
        for lo in range(0, len(values), PACK_PIECE_ROWS):
            column.fromlist(list(values[lo : lo + PACK_PIECE_ROWS]))
            pause()
    except OverflowError:  # an int beyond 64 bits: msgpack's own ints
        return list(values)
    return typed_column(column)


def _pack_in_pieces(chunk: list[Any], pause: Callable[[], None]) -> bytes:
    """``pack(chunk)``, the same bytes, made :data:`PACK_PIECE_ROWS` items
    at a time with ``pause()`` between pieces.

    A msgpack array is its header followed by its items, so a long list is
    packed as slices whose own headers are cut off.

    Runtime complexity: O(size of chunk)

    >>> chunk = [[f"m{i}" for i in range(5000)], [1, 2], [], [2**70] * 3000]
    >>> _pack_in_pieces(chunk, lambda: None) == pack(chunk)
    True
    """
    parts = [_array_header(len(chunk))]
    for value in chunk:
        if type(value) is not list or len(value) <= PACK_PIECE_ROWS:
            parts.append(pack(value))
            continue
        parts.append(_array_header(len(value)))
        for lo in range(0, len(value), PACK_PIECE_ROWS):
            piece = value[lo : lo + PACK_PIECE_ROWS]
            parts.append(pack(piece)[len(_array_header(len(piece))) :])
            pause()
    return b"".join(parts)


def fsync_dir(path: str) -> None:
    """fsync a directory so that a rename or a new file in it is durable
    (a no-op where directories cannot be opened, as on Windows)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - Windows
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _check_chunk(
    path: str, at: int, chunk: Any, columns: int | None, *, negated: bool
) -> list[Any]:
    """Validate one chunk's columns; raise CorruptionError naming the offset."""
    if (
        type(chunk) is not list
        or len(chunk) != 4
        or type(chunk[0]) is not list
        or type(chunk[3]) is not list
        or any(type(c) not in (list, array) for c in chunk[1:3])
    ):
        raise CorruptionError(path, at, "snapshot chunk is not four arrays")
    members, scores, clocks, metas = chunk
    n = len(members)
    if len(scores) != n or len(clocks) != n or len(metas) % 2:
        raise CorruptionError(path, at, "snapshot chunk columns differ in length")
    # One C-level pass per column: str.join accepts only strs (2x faster than
    # collecting the types, which is the test for other members); a typed
    # column needs no type pass (its kind is its typecode).
    try:
        "".join(members)
    except TypeError:
        if not set(map(type, members)) <= {str, bytes, int}:
            raise CorruptionError(path, at, "snapshot member of an unsupported type") from None
    if type(clocks) is array:
        if clocks.typecode != "q":
            raise CorruptionError(path, at, "snapshot clocks are a typed column of floats")
        signed = signs_agree(clocks, negated)
    elif not set(map(type, clocks)) <= {int}:
        raise CorruptionError(path, at, "snapshot clock is not an int")
    else:
        signed = not clocks or (max(clocks) <= 0 if negated else min(clocks) >= 0)
    if not signed:
        sign = "non-positive (negated)" if negated else "non-negative"
        raise CorruptionError(path, at, f"snapshot clock is not a {sign} int")
    if columns is None:
        kinds: set[type]
        if type(scores) is array:
            kinds = {int if scores.typecode == "q" else float}
        else:
            kinds = set(map(type, scores))
        if not kinds <= {int, float}:
            raise CorruptionError(path, at, "snapshot score is not an int or a float")
        # NaN is the one value not equal to itself (map(eq) runs in C)
        if float in kinds and not all(map(operator.eq, scores, scores)):
            raise CorruptionError(path, at, "snapshot score is NaN")
    else:
        if type(scores) is array:
            raise CorruptionError(path, at, "snapshot composite scores are a typed column")
        for i, score in enumerate(scores):
            if (
                type(score) is not list
                or len(score) != columns
                or not all(type(v) is int or (type(v) is float and v == v) for v in score)
            ):
                raise CorruptionError(path, at, f"snapshot composite score {i} is malformed")
            scores[i] = tuple(score)
    for i in range(0, len(metas), 2):
        index, meta = metas[i], metas[i + 1]
        if type(index) is not int or not 0 <= index < n:
            raise CorruptionError(path, at, "snapshot metadata row index out of range")
        try:
            metas[i + 1] = check_meta(meta)
        except (TypeError, ValueError) as exc:
            raise CorruptionError(path, at, f"snapshot metadata is invalid ({exc})") from None
    return chunk


def read_snapshot(
    path: str,
    *,
    columns: int | None = None,
    shared: SharedChunks | None = None,
    defer: Callable[[dict[str, Any]], bool] | None = None,
) -> Snapshot:
    """Read and fully check a snapshot; raise :class:`CorruptionError` on any damage.

    ``columns`` is the number of score columns of a composite board (None
    for scalar scores).  A snapshot is all or nothing: a torn or damaged one
    is an error, because a manifest only names snapshots that were complete.

    ``shared`` (a :class:`SharedChunks`, one per open of several snapshots)
    lets snapshots that hold a byte-identical chunk share it: the chunk is
    decoded and checked once, and the later snapshots hold the very same
    column objects (see :meth:`Snapshot.same_rows`).

    ``defer`` (optional) is asked about the header: when it returns True,
    the chunks are not decoded, only their frames' checksums and the
    trailer checked, and the snapshot returned is :attr:`Snapshot.deferred`
    (no rows: a later ``read_snapshot`` of the same file reads them).  A
    ledger's open reads a periodic view's closed periods so (see
    :mod:`rankengine.timed.lazy`): damage is still found at open.

    Runtime complexity: O(N); O(bytes) for a chunk ``shared`` holds already
    or when deferred (a CRC pass in C)
    """
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        f.seek(0)
        version = check_prefix(
            f.read(PREFIX_BYTES), SNAPSHOT_MAGIC, path, "snapshot", _READABLE_VERSIONS
        )
        # version 2 adds typed columns (extension objects)
        hook = None if version == 1 else column_hook
        header: dict[str, Any] | None = None
        chunks: list[list[Any]] = []
        trailer: dict[str, Any] | None = None
        rows = 0
        deferred = 0  # chunk frames checked but not decoded (defer)
        try:
            for at, payload in read_frames(f, PREFIX_BYTES, size):
                if trailer is not None:
                    raise CorruptionError(path, at, "data after the snapshot trailer")
                if deferred and payload[:1] != _MAP_OF_TWO:
                    deferred += 1  # (the trailer is the only map: a fixmap of 2)
                    continue
                if header is not None and shared is not None:
                    negated = header.get("negated_clocks") is True
                    known = shared.find((version, columns, negated, payload))
                    if known is not None:  # (decoded and checked from the same bytes)
                        chunks.append(known)
                        rows += len(known[0])
                        continue
                try:
                    value = unpack(payload, hook)
                except Exception as exc:  # msgpack raises several unrelated types
                    raise CorruptionError(
                        path, at, f"snapshot frame does not decode ({exc})"
                    ) from None
                if header is None:
                    header = _check_header(path, at, value)
                    if defer is not None and defer(header):
                        deferred = 1
                elif deferred:
                    if (
                        type(value) is not dict
                        or value.get("chunks") != deferred - 1
                        or value.get("count") != header["count"]
                    ):
                        raise CorruptionError(
                            path, at, "snapshot trailer does not match its chunks"
                        )
                    trailer, rows = value, int(header["count"])
                elif type(value) is dict:
                    trailer = value
                    if value.get("count") != rows or value.get("chunks") != len(chunks):
                        raise CorruptionError(
                            path, at, "snapshot trailer does not match its chunks"
                        )
                else:
                    negated = header.get("negated_clocks") is True
                    chunks.append(_check_chunk(path, at, value, columns, negated=negated))
                    rows += len(chunks[-1][0])
                    if shared is not None and not chunks[-1][3]:
                        # (a chunk with metadata is not shared: each board
                        # keeps metadata objects of its own)
                        where = at + FRAME_HEADER_BYTES  # (the payload's offset)
                        shared.keep((version, columns, negated, payload), chunks[-1], path, where)
        except _Damage as damage:
            raise CorruptionError(path, damage.offset, f"snapshot {damage.reason}") from None
        if header is None:
            raise CorruptionError(path, PREFIX_BYTES, "snapshot has no header")
        if trailer is None:
            raise CorruptionError(path, size, "snapshot is incomplete (no trailer)")
        if header["count"] != rows:
            raise CorruptionError(
                path, PREFIX_BYTES, "snapshot header count does not match its rows"
            )
    return Snapshot(path, header, chunks, size, deferred=bool(deferred))


def copy_snapshot(source: str, path: str, header: dict[str, Any]) -> int:
    """Write at ``path``, atomically, the snapshot at ``source`` under a new
    header: ``header`` replaces the keys it names (``count`` and
    ``negated_clocks`` stay the source's), and the chunk and trailer frames
    are copied byte for byte (the source is checked first, as
    :func:`read_snapshot` with ``defer`` checks it).  Returns the new size.

    A ledger's compaction moves a closed period that was never loaded to
    the new snapshot's seq so (see :mod:`rankengine.timed.lazy`): its state
    cannot have changed, and copying ~8 bytes a row is cheaper than
    loading, exporting and packing the board again.

    Runtime complexity: O(bytes of the file), in C

    >>> import tempfile, os
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     old, new = os.path.join(tmp, "a.snap"), os.path.join(tmp, "b.snap")
    ...     _ = write_snapshot(old, {"seq": 2, "clock": 2}, [("bob", 5, 1, None)])
    ...     _ = copy_snapshot(old, new, {"seq": 9})
    ...     snap = read_snapshot(new)
    ...     print(snap.header["seq"], snap.header["clock"], list(snap.rows()))
    9 2 [('bob', 5, 1, None)]
    """
    old = read_snapshot(source, defer=lambda _header: True)
    head = {**old.header, **header}
    head["count"] = old.header["count"]
    if old.header.get("negated_clocks"):
        head["negated_clocks"] = True
    else:
        head.pop("negated_clocks", None)
    tmp = path + ".tmp"
    try:
        with open(source, "rb") as src, open(tmp, "wb") as f:
            prefix = src.read(PREFIX_BYTES)
            frames = read_frames(src, PREFIX_BYTES, old.size)
            next(frames)  # the header
            rest = next(frames)[0]  # where the first frame after it starts
            f.write(prefix)
            f.write(frame(pack(head)))
            src.seek(rest)
            while piece := src.read(_COPY_PIECE_BYTES):
                f.write(piece)
            f.flush()
            os.fsync(f.fileno())
            size = f.tell()
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    os.replace(tmp, path)
    fsync_dir(os.path.dirname(path) or ".")
    return size


#: Bytes per read when a snapshot file is copied (:func:`copy_snapshot`).
_COPY_PIECE_BYTES: Final = 1 << 22


def _check_header(path: str, at: int, value: Any) -> dict[str, Any]:
    if type(value) is not dict:
        raise CorruptionError(path, at, "snapshot header is not a map")
    for key in ("seq", "clock", "count"):
        if type(value.get(key)) is not int or value[key] < 0:
            raise CorruptionError(path, at, f"snapshot header has no valid {key!r}")
    if value.get("negated_clocks", False) is not False and value["negated_clocks"] is not True:
        raise CorruptionError(path, at, "snapshot header's 'negated_clocks' is not a bool")
    return value
