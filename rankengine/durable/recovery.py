"""Recovery: loading a board directory -- the newest usable snapshot, then
the records after it -- and clearing what an interrupted compaction left.

:func:`load_board` fills an empty board from what the manifest names; it
writes nothing (a torn tail is reported in its :class:`Loaded`, for the
caller to cut or refuse).  A damaged snapshot is skipped with a
:class:`~rankengine.durable.records.RecoveryWarning` when an older one, or
the log from seq 1, can stand in for it.  The records after the snapshot
are checked and folded into each member's final state, then applied in one
batch (:class:`~rankengine.durable.fold.Fold`).  :func:`remove_leftovers` runs once an open holds
the directory: files the manifest does not name were left by a crash
between a compaction's steps, and are removed (or set aside as
``.orphan`` when they may hold records); :func:`manifest_may_name` tells a
compaction whether a failed manifest write left a file the next open keeps.

>>> import tempfile
>>> from rankengine.board.leaderboard import Leaderboard
>>> from rankengine.durable.board import DurableLeaderboard
>>> from rankengine.durable.manifest import read_manifest
>>> with tempfile.TemporaryDirectory() as tmp:
...     with DurableLeaderboard(tmp, fsync="never") as board:
...         board.set("ann", 5)
...         board.compact()
...         board.incr("ann", 2)
...         board.set("bob", 1)
...     copy = Leaderboard()
...     loaded = load_board(copy, tmp, read_manifest(tmp))
...     print(copy.items(), loaded.snapshot_seq, loaded.last_seq, loaded.records)
True
1
7
True
[('ann', 7), ('bob', 1)] 1 3 2
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Callable

from rankengine.board.leaderboard import Leaderboard
from rankengine.durable.eventlog import SegmentReader
from rankengine.durable.fold import Fold
from rankengine.durable.manifest import SEGMENT_RE, SNAPSHOT_RE, Manifest, read_manifest
from rankengine.durable.marks import missing_after
from rankengine.durable.parallel import replay_procs, split_batches
from rankengine.durable.records import (
    CorruptionError,
    LogError,
    RecoveryWarning,
    TornTail,
)
from rankengine.durable.snapshot import fsync_dir, read_snapshot
from rankengine.index.collector import collector_paused

__all__ = [
    "Loaded",
    "load_board",
    "manifest_may_name",
    "remove_leftovers",
    "trim_followed",
    "trim_segments",
    "unnamed_after",
]


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
        #: segments the manifest does not name yet that continue the log
        #: (an interrupted rotation's): the open lists them
        self.adopted: list[tuple[str, int]] = []
        #: (name, records' end) of each segment an adopted one follows: a
        #: kill may have left reserved zeros after its records
        #: (:func:`trim_followed` cuts them)
        self.followed: list[tuple[str, int]] = []
        self.notes: list[str] = []


def load_board(
    board: Leaderboard,
    directory: str,
    manifest: Manifest,
    *,
    until_seq: int | None = None,
    until_ms: int | None = None,
    from_log: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
    adopt: bool = True,
) -> Loaded:
    """Fill the empty ``board`` from ``directory``: the newest usable
    snapshot (unless ``from_log``) and the records after it, up to
    ``until_seq`` / ``until_ms`` if given.

    A damaged snapshot is skipped with a warning when an older one (or the
    log from seq 1) can replace it.  A torn tail is reported in the result,
    never cut here.  ``adopt=False`` reads only the segments ``manifest``
    names (a snapshot's replay in a child process: the segment after them
    is the live board's, still being written).

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
            # Bulk load: the collector would rescan the growing heap many
            # times while a million tuples are created (measured: 3x slower).
            with collector_paused():
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
    adoptable = unnamed_after(directory, manifest) if adopt else []
    fold = Fold(board)
    # As for the snapshot: the collector would rescan the growing heap many
    # times while the records' objects are made (measured: ~2x slower).
    with collector_paused():
        _replay(
            fold,
            directory,
            chain=chain,
            out=out,
            base=base,
            until_seq=until_seq,
            until_ms=until_ms,
            progress=progress,
            adoptable=adoptable,
        )
    return out


def _replay(
    fold: Fold,
    directory: str,
    *,
    chain: list[tuple[str, int]],
    out: Loaded,
    base: int,
    until_seq: int | None,
    until_ms: int | None,
    progress: Callable[[str, int, int], None] | None,
    adoptable: list[tuple[str, int]],
) -> None:
    """Fold the records of ``chain`` after seq ``base`` (up to ``until_*``)
    into ``fold``, then those of the ``adoptable`` segments that continue
    it (see :func:`unnamed_after`), note where the log ends in ``out``,
    then finish.  Large segments are split among processes when
    :func:`~rankengine.durable.parallel.replay_procs` allows it
    (:mod:`rankengine.durable.parallel`)."""
    procs = replay_procs()
    for i, (name, first) in enumerate(chain):
        path = os.path.join(directory, name)
        if i and first > out.last_seq + 1:  # (records lost between two segments)
            prev = os.path.join(directory, chain[i - 1][0])
            why = f"the next segment, {name}, starts at seq {first}"
            raise missing_after(
                prev, out.active[3] if out.active else 0, out.last_seq, first - 1, why
            )
        if i and first != out.last_seq + 1:
            raise CorruptionError(
                path, 0, f"segment starts at seq {first}, expected {out.last_seq + 1}"
            )
        with SegmentReader(path) as reader:
            if reader.first_seq != first:
                raise CorruptionError(path, 0, f"segment header says first seq {reader.first_seq}")
            fold.last_seq = first - 1
            report = (
                None if progress is None else (lambda at, n=name, s=reader.size: progress(n, at, s))
            )
            whole = until_seq is None and until_ms is None and first > base
            with contextlib.closing(
                split_batches(reader, fold, procs, report)
                if whole and procs > 1
                else reader.batches(report)
            ) as frames:
                for batch in frames:
                    taken = fold.add_batch(
                        batch, path, after=base, until_seq=until_seq, until_ms=until_ms
                    )
                    if fold.records:
                        out.last_seq, out.last_ms = fold.last_seq, fold.last_ms
                    out.records = fold.records
                    if taken < len(batch) or (
                        until_seq is not None and fold.records and fold.last_seq >= until_seq
                    ):
                        # (not reading on: damage past it is no matter)
                        fold.finish()
                        return
            if fold.records:  # (a split read may end with a child's records)
                out.last_seq, out.last_ms = fold.last_seq, fold.last_ms
            out.records = fold.records
            reader.last_seq = fold.last_seq
            if reader.last_seq < base:
                raise CorruptionError(
                    path,
                    reader.end,
                    f"log ends at seq {reader.last_seq} before the snapshot's {base}",
                )
            if (
                reader.torn is not None
                and i != len(chain) - 1
                and chain[i + 1][1] > out.last_seq + 1
            ):
                why = f"the next segment, {chain[i + 1][0]}, starts at seq {chain[i + 1][1]}"
                raise missing_after(
                    path, reader.torn.offset, out.last_seq, chain[i + 1][1] - 1, why
                )
            if reader.torn is not None and i != len(chain) - 1:
                raise CorruptionError(
                    path, reader.torn.offset, f"{reader.torn.reason} inside the log"
                )
            out.torn = reader.torn
            out.active = (name, first, reader.start, reader.end)
    for name, first in adoptable:
        # A rotation a crash cut short (see rotation.py): the segment is
        # taken only where it follows the log exactly, from a clean end.
        if out.torn is not None or first != out.last_seq + 1:
            break
        path = os.path.join(directory, name)
        try:
            with SegmentReader(path) as reader:
                if reader.first_seq != first:
                    break
                fold.last_seq = first - 1
                batches = list(reader.batches(None))
                torn, start, end = reader.torn, reader.start, reader.end
        except (CorruptionError, OSError):
            break  # (unreadable: the open sets it aside, as any unnamed segment)
        for batch in batches:
            fold.add_batch(batch, path, after=base, until_seq=None, until_ms=None)
            if fold.records:
                out.last_seq, out.last_ms = fold.last_seq, fold.last_ms
            out.records = fold.records
        if out.active is not None:
            out.followed.append((out.active[0], out.active[3]))
        out.torn = torn
        out.active = (name, first, start, end)
        out.adopted.append((name, first))
    fold.finish()


def trim_followed(directory: str, loaded: Loaded) -> None:
    """Cut what follows the records of each segment an adopted one follows
    (the reserved zeros of a mapped writer a kill left: an open cuts them
    only from the last segment, which this one no longer is), and fsync it.

    Runtime complexity: one truncation and fsync per adopted segment
    """
    trim_segments(directory, loaded.followed)


def trim_segments(directory: str, ends: list[tuple[str, int]]) -> None:
    """Cut each segment ``(name, records' end)`` of ``ends`` at its
    records' end where the file is longer (reserved zeros), and fsync it:
    shared by a board's open and a ledger's that adopt a segment.

    Runtime complexity: one truncation and fsync per segment cut
    """
    for name, end in ends:
        path = os.path.join(directory, name)
        if os.path.getsize(path) > end:
            with open(path, "r+b") as f:
                f.truncate(end)
                os.fsync(f.fileno())


def unnamed_after(directory: str, manifest: Manifest) -> list[tuple[str, int]]:
    """The segments in ``directory`` that ``manifest`` does not name and
    that are numbered after its last one, ``(name, first seq)`` in order:
    what a log rotation a crash interrupted may have left before the
    manifest named them (see :mod:`rankengine.durable.rotation`).  An open
    adopts those that continue the log exactly.

    Runtime complexity: O(files in the directory)
    """
    last_first = manifest.segments[-1][1] if manifest.segments else 0
    found = []
    for name in os.listdir(directory):
        match = SEGMENT_RE.fullmatch(name)
        if match is not None and int(match.group(1)) > last_first:
            found.append((name, int(match.group(1))))
    return sorted(found, key=lambda entry: entry[1])


def manifest_may_name(directory: str, name: str) -> bool:
    """Might the manifest on disk name file ``name``?  True when it does, and
    when it cannot be read (a file it might name must not be removed).

    Runtime complexity: O(size of the manifest)
    """
    try:
        on_disk = read_manifest(directory)
    except (CorruptionError, OSError):
        return True
    return any(n == name for n, _ in on_disk.snapshots + on_disk.segments)


def remove_leftovers(directory: str, manifest: Manifest) -> list[str]:
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
