"""Forgetting a member: rewrite a board's history without it, crash-safely.

A durable board keeps every change in its event log, its snapshots and
(for a periodic board) its archives, so removing a player is not enough to
forget them: a point-in-time replay would bring them back.
:meth:`Forgetting.forget` (a method of every durable board) removes the
member and rewrites every file that holds a change or a row of theirs:

1. **stage**: each such file is rewritten next to itself as
   ``NAME.forget`` (fsynced), the member's changes dropped from every
   record (a record left with no change stays, empty, so sequence numbers
   and every other record are unchanged) and their rows from every
   snapshot;
2. **commit**: a *journal* ``FORGET`` naming the renames (``NAME.forget``
   over ``NAME``) is written to a temporary file, fsynced and renamed into
   place; that rename is the switch from the old history to the new;
3. **apply**: each staged file is renamed over its original, the
   directories are fsynced, and the journal is removed.

The journal names files, never the member, so no step leaves the member's
bytes anywhere.  A kill before step 2's rename leaves the old history and
staged files (which hold no trace of the member either) that the next open
removes; a kill after it leaves the journal, which the next open for
writing (:func:`finish_forget`, before anything is read) applies to the
end.  A board therefore always opens with the old history or the new one,
never a mix, and once it has opened no file of the old one is left.
Read-only tools (``iter_events``, ``rebuild``, ``rankengine replay``) do not
write, so between such a kill and the next open they may see a directory
where some files are swapped and some not; opening the board finishes it.

Names: ``FORGET`` and ``NAME.forget`` are not board files; the manifest
never names them, and nothing in them is read by a board but the journal.

>>> import tempfile
>>> from rankengine.durable.board import DurableLeaderboard, iter_events
>>> with tempfile.TemporaryDirectory() as tmp:
...     with DurableLeaderboard(tmp, fsync="never") as board:
...         board.set("ann", 5, meta={"email": "ann@example.com"})
...         board.set("bob", 3)
...         board.incr("ann", 1)
...         board.forget("ann")
...         board.items()
...     [event.changes for event in iter_events(tmp)]
True
True
6
Forgotten(present=True, records=2, rows=0, files=1)
[('bob', 3)]
[[], [(0, 'bob', 3, 2)], []]
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import posixpath
import shutil
import time
import warnings
from collections.abc import Iterator
from typing import Any, Final, NamedTuple

from rankengine.board.changes import DEL, Change
from rankengine.board.scoring import check_member
from rankengine.durable.eventlog import SegmentReader, _Damage, read_frames
from rankengine.durable.manifest import (
    MANIFEST_MAGIC,
    MANIFEST_NAME,
    SEGMENT_RE,
    SNAPSHOT_RE,
    Manifest,
)
from rankengine.durable.records import (
    FRAME_HEADER_BYTES,
    PREFIX_BYTES,
    CorruptionError,
    LogError,
    RecoveryWarning,
    check_prefix,
    crash_point,
    decode_record,
    encode_record,
    frame,
    pack,
    unpack,
    write_prefix,
)
from rankengine.durable.snapshot import fsync_dir, read_snapshot, write_snapshot_columns

__all__ = [
    "FORGET_JOURNAL",
    "FORGET_MAGIC",
    "SALVAGE_JOURNAL",
    "STAGED_SUFFIX",
    "ForgetPlan",
    "Forgetting",
    "Forgotten",
    "finish_forget",
    "finish_journal",
    "holds_member",
    "set_aside_files",
    "stale_files",
]

#: The journal of a forget: written once every rewritten file is staged,
#: removed once they are all in place.  Its presence is the commit.
FORGET_JOURNAL: Final = "FORGET"
#: Magic of the journal file (same design as the segment magic).
FORGET_MAGIC: Final = b"\x89RKFGT\r\n"
#: A rewritten file is staged under its final name plus this suffix.
STAGED_SUFFIX: Final = ".forget"
#: A journal is a list of file names; anything larger is not one.
_MAX_JOURNAL_BYTES: Final = 1 << 26


class Forgotten(NamedTuple):
    """What :meth:`Forgetting.forget` found and removed.

    ``present``: the member was on a board when forgotten; ``records``: log
    records that held a change of theirs (each kept, without it);
    ``rows``: snapshot and archive rows of theirs removed; ``files``: files
    rewritten.  All zero and False: there was no trace of the member.
    """

    present: bool
    records: int
    rows: int
    files: int


def holds_member(change: Change, member: Any) -> bool:
    """True when ``change`` is about ``member`` (the same value *and* type:
    ``"1"``, ``b"1"`` and ``1`` are three members).

    Runtime complexity: O(1)

    >>> holds_member((0, "ann", 5, 1), "ann"), holds_member((1, b"ann"), "ann")
    (True, False)
    """
    other = change[1]
    return type(other) is type(member) and other == member


#: The journal of a salvage that has not finished (``rankengine salvage``'s;
#: named here because that module is built on the board, which uses this one).
SALVAGE_JOURNAL: Final = "SALVAGE"


def set_aside_files(directory: str) -> list[str]:
    """Files ``rankengine repair`` or an open set aside in ``directory``
    (``repair-*`` directories, ``*.orphan`` segments), kept for an
    operator, never read by the board, and possibly holding anything; and
    the journal of a salvage that has not finished (it would replay records
    that a forget rewrites).

    Runtime complexity: O(files in the directory)
    """
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    return [
        os.path.join(directory, name)
        for name in names
        if name.endswith(".orphan") or name.startswith("repair-") or name == SALVAGE_JOURNAL
    ]


def stale_files(directory: str, manifest: Manifest) -> list[str]:
    """Files of ``directory`` that are not part of the board and that a
    forget removes with its commit, as the next open would (a snapshot or a
    segment left by a compaction that failed after writing it, or before
    removing what it replaced; temporary files): they may hold the member.

    :raises LogError: a segment the manifest does not name that may hold
        records newer than the log's (an open would set it aside as
        ``.orphan``): forget cannot tell what it is.

    Runtime complexity: O(files in the directory)
    """
    listed = {name for name, _ in manifest.snapshots} | {name for name, _ in manifest.segments}
    last_first = manifest.segments[-1][1] if manifest.segments else 0
    stale = []
    for name in sorted(os.listdir(directory)):
        if name in listed or name == FORGET_JOURNAL:
            continue
        path = os.path.join(directory, name)
        if name.endswith(".tmp") or SNAPSHOT_RE.fullmatch(name):
            stale.append(path)
        elif (match := SEGMENT_RE.fullmatch(name)) is not None:
            if int(match.group(1)) >= last_first:
                raise LogError(
                    f"{path} is a segment the manifest does not name, after the log's last "
                    "one, and may hold records: close and reopen the board (the open sets it "
                    "aside as .orphan), look at it, delete it, and forget again"
                )
            stale.append(path)
    return stale


class ForgetPlan:
    """The files one forget rewrites, staged under ``root`` (a board
    directory, or the root of a board made of several): stage them, then
    :meth:`commit` (or :meth:`discard` on failure).

    Every path it records is under ``root``; the journal stores them
    relative to it.
    """

    def __init__(self, root: str, *, journal: str = FORGET_JOURNAL) -> None:
        self.root = root
        #: the journal's file name: ``FORGET``, or another rewrite's (a
        #: migration's ``MIGRATE``) that uses the same stage/commit/apply steps
        self.journal = journal
        #: (staged path, final path) pairs
        self.renames: list[tuple[str, str]] = []
        #: leftover files the commit removes (not part of any board)
        self.removes: list[str] = []
        self.records = 0
        self.rows = 0
        #: board directory -> its manifest after the switch (marks updated)
        self.manifests: dict[str, Manifest] = {}

    @property
    def files(self) -> int:
        """Files rewritten (not counting a manifest whose marks changed with them)."""
        return sum(os.path.basename(final) != MANIFEST_NAME for _, final in self.renames)

    def _staged(self, final: str) -> str:
        staged = final + STAGED_SUFFIX
        self.renames.append((staged, final))
        return staged

    def stage_segment(
        self, path: str, member: Any, *, limit: int | None = None, mark: int | None = None
    ) -> int | None:
        """Stage ``path`` (a segment, read up to ``limit`` bytes) without
        ``member``'s changes, if it holds any; return the rewritten file's
        length up to the end of record ``mark`` (a segment end the manifest
        records), or None when there is none or nothing was rewritten.

        Only the records whose bytes hold the member's msgpack encoding are
        decoded (a change of theirs holds it); every other frame is copied
        as it is.  Speed: on a segment of 100,000 one-change records, a
        scan that finds nothing takes a substring search instead of
        decoding every record (~2 s on a loaded machine).

        Runtime complexity: O(size of the segment)
        """
        needle = pack(member)
        with open(path, "rb") as handle:
            data = handle.read() if limit is None else handle.read(limit)
        if needle not in data:
            return None
        with SegmentReader(path, limit=limit) as reader:
            # (the header, checked, is copied as it is; the records follow
            # one another from first_seq on, as the board checked at open)
            start, seq = reader.start, reader.first_seq
        out = [data[:start]]
        length, mark_length = start, None
        touched = 0
        try:
            for at, payload in read_frames(io.BytesIO(data), start, len(data)):
                piece = data[at : at + FRAME_HEADER_BYTES + len(payload)]
                if needle in payload:
                    try:
                        event = decode_record(payload)
                    except ValueError as exc:
                        raise CorruptionError(path, at, f"bad record: {exc}") from None
                    kept = [c for c in event.changes if not holds_member(c, member)]
                    if len(kept) != len(event.changes):
                        touched += 1
                        piece = frame(encode_record(event.seq, event.time_ms, kept))
                out.append(piece)
                length += len(piece)
                if seq == mark:
                    mark_length = length
                seq += 1
        except _Damage as damage:
            raise CorruptionError(path, damage.offset, damage.reason) from None
        if not touched:
            return None
        self.stage_bytes(path, b"".join(out))
        self.records += touched
        return mark_length

    def stage_snapshot(self, path: str, member: Any, *, columns: int | None) -> None:
        """Stage ``path`` (a snapshot) without ``member``'s row, if it has one.

        Runtime complexity: O(N) for N rows
        """
        with open(path, "rb") as handle:
            if pack(member) not in handle.read():  # (no row of theirs: no need to decode)
                return
        snap = read_snapshot(path, columns=columns)
        members, scores, clocks, metas = snap.columns()
        where = [i for i, m in enumerate(members) if type(m) is type(member) and m == member]
        if not where:
            return
        members, scores, clocks = list(members), _writable(scores), _writable(clocks)
        for i in reversed(where):
            del members[i], scores[i], clocks[i]
        metas.pop(member, None)
        by_row = {i: metas[m] for i, m in enumerate(members) if m in metas}
        header = {k: v for k, v in snap.header.items() if k not in ("count", "negated_clocks")}
        staged = self._staged(path)
        write_snapshot_columns(staged, header, (members, scores, clocks, by_row))
        self.rows += len(where)
        crash_point("forget_stage")

    def stage_bytes(self, path: str, data: bytes) -> None:
        """Stage ``data`` as the new content of ``path`` (written, fsynced).

        Runtime complexity: O(len(data))
        """
        staged = self._staged(path)
        with open(staged, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        crash_point("forget_stage")

    def remove(self, path: str) -> None:
        """Remove ``path`` (a leftover holding the member) at the commit."""
        self.removes.append(path)

    def discard(self) -> None:
        """Remove every staged file (the forget failed before its commit)."""
        for staged, _ in self.renames:
            with contextlib.suppress(OSError):
                os.remove(staged)
            with contextlib.suppress(OSError):
                os.remove(staged + ".tmp")
        self.renames.clear()
        self.removes.clear()

    def _relative(self, path: str) -> str:
        rel = os.path.relpath(path, self.root)
        return rel.replace(os.sep, "/")

    def commit(self) -> None:
        """Write the journal (the switch to the new history), then apply it.

        The staged files are durable already; their directories are fsynced
        first, so that the journal never names a file a power cut could take.

        Runtime complexity: O(files) renames and fsyncs
        """
        if not self.renames and not self.removes:
            return
        for directory in sorted({os.path.dirname(s) for s, _ in self.renames}):
            fsync_dir(directory)
        journal = {
            "format": 1,
            "renames": [[self._relative(s), self._relative(f)] for s, f in self.renames],
            "removes": [self._relative(p) for p in self.removes],
        }
        path = os.path.join(self.root, self.journal)
        tmp = path + ".tmp"
        with open(tmp, "wb") as handle:
            handle.write(write_prefix(FORGET_MAGIC) + frame(pack(journal)))
            handle.flush()
            os.fsync(handle.fileno())
        step = self.journal.lower()  # (crash points: forget_journal_rename, ...)
        crash_point(f"{step}_journal_rename")
        os.replace(tmp, path)
        fsync_dir(self.root)
        crash_point(f"after_{step}_journal")
        _apply_journal(self.root, journal, self.journal)


def _writable(column: Any) -> Any:
    """A column rows can be deleted from (a list, or an ``array`` copy)."""
    return column[:] if hasattr(column, "typecode") else list(column)


def _inside(root: str, rel: Any) -> str:
    """``root/rel`` for a relative path that stays under ``root``, or raise."""
    if type(rel) is not str or not rel or posixpath.isabs(rel):
        raise ValueError(f"journal names a bad path {rel!r}")
    parts = rel.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise ValueError(f"journal names a path outside its directory: {rel!r}")
    return os.path.join(root, *parts)


def _read_journal(root: str, name: str = FORGET_JOURNAL) -> dict[str, Any]:
    path = os.path.join(root, name)
    with open(path, "rb") as handle:
        data = handle.read(_MAX_JOURNAL_BYTES + 1)
    check_prefix(data, FORGET_MAGIC, path, "forget journal")
    try:
        frames = list(read_frames(io.BytesIO(data), PREFIX_BYTES, len(data)))
        value = unpack(frames[0][1]) if len(frames) == 1 else None
    except Exception as exc:  # msgpack and the frame reader raise several types
        raise CorruptionError(path, PREFIX_BYTES, f"forget journal does not read ({exc})") from None
    if (
        type(value) is not dict
        or value.get("format") != 1
        or type(value.get("renames")) is not list
        or type(value.get("removes")) is not list
    ):
        raise CorruptionError(path, PREFIX_BYTES, "forget journal is not a format-1 map")
    return value


def _apply_journal(root: str, journal: dict[str, Any], name: str = FORGET_JOURNAL) -> None:
    """Rename each staged file over its original (one already renamed is
    skipped: applying twice is applying once), fsync their directories,
    remove the leftovers named (a directory with everything in it), then
    the journal ``name``.

    Crash points: ``forget_rename`` (after the first rename) and
    ``after_forget`` (journal removed); ``migrate_...`` for a ``MIGRATE``
    journal.
    """
    step = name.lower()
    pairs = []
    for item in journal["renames"]:
        if type(item) is not list or len(item) != 2:
            raise ValueError(f"journal rename entry {item!r} is malformed")
        pairs.append((_inside(root, item[0]), _inside(root, item[1])))
    doomed = [_inside(root, rel) for rel in journal["removes"]]
    for i, (staged, final) in enumerate(pairs):
        if os.path.exists(staged):
            os.replace(staged, final)
        if i == 0:
            crash_point(f"{step}_rename")
    for directory in sorted({os.path.dirname(final) for _, final in pairs}):
        fsync_dir(directory)
    for path in doomed:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)
    if doomed:
        fsync_dir(root)
    os.remove(os.path.join(root, name))
    fsync_dir(root)
    crash_point(f"after_{step}")


def _staged_leftovers(root: str, nested: bool) -> Iterator[str]:
    tree = os.walk(root) if nested else [(root, [], os.listdir(root))]
    for directory, _, names in tree:
        for name in names:
            if name.endswith((STAGED_SUFFIX, STAGED_SUFFIX + ".tmp")) or (
                name == FORGET_JOURNAL + ".tmp"
            ):
                yield os.path.join(directory, name)


def finish_journal(root: str, name: str) -> int | None:
    """Apply the journal ``name`` (``FORGET``, ``MIGRATE``) a crash left
    committed in ``root``, to the end; remove a ``name.tmp`` a crash left
    before the commit.  Returns the number of files it renamed, or None
    when there was no journal.  The caller holds the directory's lock.

    Runtime complexity: O(files the journal names)
    """
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(root, name + ".tmp"))
    path = os.path.join(root, name)
    if not os.path.exists(path):
        return None
    try:
        journal = _read_journal(root, name)
        _apply_journal(root, journal, name)
    except ValueError as exc:
        raise CorruptionError(path, PREFIX_BYTES, f"{name.lower()} journal: {exc}") from None
    return len(journal["renames"])


def finish_forget(root: str, *, nested: bool = False) -> list[str]:
    """Settle what a forget interrupted by a crash left under ``root``:
    apply its journal if it was committed, else remove its staged files
    (in ``root`` itself, or with ``nested`` in every directory under it:
    the root of a periodic board).  Called by an open for writing, under
    the directory's lock, before anything is read; returns notes of what
    it did.

    Runtime complexity: one listing of root (of every directory under it
    with ``nested``)
    """
    notes: list[str] = []
    done = finish_journal(root, FORGET_JOURNAL)
    if done is not None:
        notes.append(f"finished a forget interrupted by a crash ({done} files)")
    stale = list(_staged_leftovers(root, nested))
    for path in stale:
        os.remove(path)
    if stale:
        notes.append(f"removed {len(stale)} files staged by a forget interrupted before its commit")
        for directory in sorted({os.path.dirname(p) for p in stale}):
            fsync_dir(directory)
    for note in notes:
        warnings.warn(f"{root}: {note}", RecoveryWarning, stacklevel=3)
    return notes


class Forgetting:
    """The :meth:`forget` of a durable board (a mixin of
    :class:`~rankengine.durable.board.DurableLeaderboard`).

    The staging and settling halves are separate (:meth:`_forget_stage`,
    :meth:`_forget_settle`), so that a board made of several durable
    boards (a periodic board) stages all of them under one journal.
    """

    # What the mixin uses of the board it is mixed into: annotations only
    # (a method defined here would come before the board's own in the MRO).
    path: str
    _lock: Any
    _compact_lock: Any
    _sync_lock: Any
    _manifest: Any
    _writer: Any
    _writer_class: Any
    _codec: Any
    _primary: Any
    _failure: BaseException | None
    _check_writable: Any
    _sync_log: Any
    _apply: Any

    def forget(self, member: Any) -> Forgotten:
        """Remove ``member`` and every trace of them from the board's files.

        Every record of the log loses the member's changes (a record left
        empty stays, so sequence numbers and every other member's history
        are unchanged), every snapshot loses their row and metadata; the
        member leaves the board without a record of it.  Crash-safe (see
        :mod:`rankengine.durable.forget`).  A member not on the board is
        still scrubbed from history (one removed earlier is the usual case);
        one with no trace at all changes nothing.  Written again later, the
        member is a new member.  Writes wait while it runs.

        Runtime complexity: O(size of the board's files)

        :raises TypeError: ``member`` is not a str, bytes or int.
        :raises ValueError: the board is closed.
        :raises LogError: the directory holds files set aside by ``repair``
            or an open, or an unfinished salvage (they may hold the member:
            finish the salvage, look at the others, delete them, and call
            again).
        :return: what was found and removed.
        """
        plan = ForgetPlan(self.path)
        member = check_member(member)
        with self._compact_lock, self._lock:
            present = self._forget_stage(member, plan)
            try:
                plan.commit()
            except BaseException as exc:
                if not os.path.exists(os.path.join(self.path, FORGET_JOURNAL)):
                    plan.discard()
                else:  # committed but not applied: the next open finishes it
                    self._failure = exc
                raise
            self._forget_settle(member, plan)
        return Forgotten(present, plan.records, plan.rows, plan.files)

    def _forget_stage(self, member: Any, plan: ForgetPlan) -> bool:
        """Stage this board's files without ``member`` into ``plan`` (the
        caller holds the compaction lock and the board lock, and commits);
        return whether the member is on the board.  On failure the files
        staged are removed and nothing has changed."""
        self._check_writable()
        held = set_aside_files(self.path)
        if held:
            raise LogError(
                f"{self.path} holds files set aside by repair or recovery, or an unfinished "
                f"salvage ({', '.join(held)}); they may hold the member and forget cannot "
                "rewrite them: finish the salvage (`rankengine salvage DIR --apply`), look at "
                "the others, delete them, and forget again"
            )
        self._sync_log()  # (the active segment is read back from the file)
        directory = self.path
        manifest = self._manifest
        for leftover in stale_files(directory, manifest):
            plan.remove(leftover)
        active = manifest.segments[-1][0] if manifest.segments else None
        ends: dict[str, tuple[int, int]] = {}
        try:
            for name, _ in manifest.segments:
                limit = self._writer.end if name == active else None
                mark = manifest.ends.get(name, (None, 0))[0]
                path = os.path.join(directory, name)
                length = plan.stage_segment(path, member, limit=limit, mark=mark)
                if length is not None:
                    ends[name] = (mark, length)
            for name, _ in manifest.snapshots:
                plan.stage_snapshot(
                    os.path.join(directory, name), member, columns=self._codec.columns
                )
            if ends:
                # The manifest's marks record the byte length of segment
                # ends: the rewritten segments' are new, and switch with them.
                new = dataclasses.replace(
                    manifest,
                    ends={**manifest.ends, **ends},
                    generation=manifest.generation + 1,
                    written_ms=time.time_ns() // 1_000_000,
                )
                data = write_prefix(MANIFEST_MAGIC) + frame(pack(new.to_map()))
                plan.stage_bytes(os.path.join(directory, MANIFEST_NAME), data)
                plan.manifests[directory] = new
        except BaseException:
            plan.discard()
            raise
        return member in self._primary

    def _forget_settle(self, member: Any, plan: ForgetPlan) -> None:
        """After the commit: write to the rewritten active segment from now
        on, and remove ``member`` from memory (no record: the log no longer
        knows them)."""
        manifest = self._manifest
        new = plan.manifests.get(self.path)
        if new is not None:  # (the same file lists: only the marks' ends changed)
            manifest.ends, manifest.generation = new.ends, new.generation
            manifest.written_ms = new.written_ms
        if manifest.segments:
            active = os.path.join(self.path, manifest.segments[-1][0])
            if any(final == active for _, final in plan.renames):
                # (the rewrite kept the header and ends at its last record)
                end, start = os.path.getsize(active), self._writer.start
                writer = self._writer_class.reopen(active, end, start)
                with self._sync_lock:  # (the everysec flusher syncs the writer under it)
                    old, self._writer = self._writer, writer
                    old.close()
        if member in self._primary:
            self._apply([(DEL, member)])
