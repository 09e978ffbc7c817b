"""Checking a board directory: what ``rankengine verify`` reports.

:func:`verify` reads every file the manifest names (and those it does not),
frame by frame, without opening the board or changing anything, and
returns a :class:`Report` of :class:`Finding` rows: damage (the board will
not open), history it cannot replay, fallbacks, torn tails and notes.
:func:`reconstruct_manifest` rebuilds a lost manifest from the files, and
:func:`creation_leftovers` names what an interrupted creation left.

>>> import tempfile
>>> from rankengine import open_board
>>> with tempfile.TemporaryDirectory() as tmp:
...     open_board(tmp, fsync="always").close()
...     verify(tmp).healthy
True
"""

from __future__ import annotations

import os
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, Literal, NamedTuple, TypeAlias

from rankengine.durable.eventlog import SegmentReader
from rankengine.durable.forget import FORGET_JOURNAL
from rankengine.durable.kinds import fixed_config
from rankengine.durable.manifest import (
    LOCK_NAME,
    MANIFEST_NAME,
    SEGMENT_RE,
    SNAPSHOT_RE,
    Manifest,
    read_manifest,
)
from rankengine.durable.marks import high_water
from rankengine.durable.records import (
    FRAME,
    CorruptionError,
    decode_record,
)
from rankengine.durable.snapshot import read_snapshot

__all__ = [
    "RESYNC_LIMIT_BYTES",
    "FileInfo",
    "Finding",
    "Report",
    "Severity",
    "board_files",
    "creation_leftovers",
    "reconstruct_manifest",
    "verify",
]


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


def _resync(path: str, offset: int) -> tuple[int, int, int, int, int]:
    """Look past damage at ``offset`` for intact records: return
    ``(records, first_seq, last_seq, first_ms, last_ms)`` of the complete
    frames found after it."""
    with open(path, "rb") as f:
        f.seek(offset + 1)
        data = f.read(RESYNC_LIMIT_BYTES)

    at = 0
    end = len(data) - 12
    records, first, last, first_ms, last_ms = 0, 0, 0, 0, 0
    while at <= end:
        length, length_crc, payload_crc = FRAME.unpack_from(data, at)
        stop = at + 12 + length
        if (
            zlib.crc32(data[at : at + 4]) == length_crc
            and stop <= len(data)
            and zlib.crc32(data[at + 12 : stop]) == payload_crc
        ):
            try:
                seq, last_ms, _ = decode_record(data[at + 12 : stop])
            except ValueError:
                at += 1
                continue
            records += 1
            first, first_ms = first or seq, first_ms or last_ms
            last = seq
            at = stop
        else:
            at += 1
    return records, first, last, first_ms, last_ms


def utc(ms: int) -> str:
    """Milliseconds since the epoch as an ISO 8601 UTC time (to the second).

    >>> utc(1_700_000_000_000)
    '2023-11-14T22:13:20Z'
    """
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms / 1000))


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
        if previous is not None and first > previous + 1:
            report.add(
                severity,
                path,
                None,
                f"{first - 1 - previous} acknowledged records missing after seq {previous} "
                f"(seq {previous + 1}..{first - 1}): this segment starts at seq {first}",
            )
        elif previous is not None and first != previous + 1:
            report.add(severity, path, None, f"records {previous + 1}..{first - 1} are missing")
        previous = None
        try:
            with SegmentReader(path) as reader:
                info.size = reader.size
                if reader.first_seq != first:
                    raise CorruptionError(path, 0, f"header says first seq {reader.first_seq}")
                if fixed_config(reader.header.get("config") or {}) != fixed_config(manifest.config):
                    report.add("damage", path, 0, "segment config differs from the manifest's")
                try:
                    for event in reader.events(_reporter(progress, name, reader.size)):
                        info.time_ms = event.time_ms
                except CorruptionError as exc:
                    info.ok = False
                    info.good_end = exc.offset
                    n, lo, hi, t0, t1 = _resync(path, exc.offset)
                    after = (
                        f"; after it {n} intact-looking records (seq {lo}..{hi}, written "
                        f"{utc(t0)} to {utc(t1)}): `rankengine salvage DIR` shows them"
                        if n
                        else ""
                    )
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
    _check_marks(report, manifest)
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
                else "not in the manifest (a leftover; open adopts a new segment that "
                "continues the log, as a rotation a crash cut short leaves, removes "
                "other leftovers, and renames a segment that holds records to .orphan)",
            )
    if os.path.exists(journal := os.path.join(directory, FORGET_JOURNAL)):
        report.add(
            "note",
            journal,
            None,
            "a forget was interrupted after its commit: the next open finishes it (until "
            "then some files are old and some new, so a replay may fail: open the board first)",
        )
    return report


def _check_marks(report: Report, manifest: Manifest) -> None:
    """Damage when the log ends before the manifest's marks say it reached:
    a torn tail there is no interrupted write but part of the loss."""
    if not report.segments:
        return
    last = report.segments[-1]
    mark, why = high_water(manifest)
    if last.last_seq >= mark:
        return
    path = os.path.join(report.directory, last.name)
    for i, finding in enumerate(report.findings):
        if finding.severity == "torn" and finding.path == path:
            message = finding.message.replace(" (cut on open)", "")
            message += ": no interrupted write, but part of the loss below"
            report.findings[i] = finding._replace(severity="damage", message=message)
    report.add(
        "damage",
        path,
        last.good_end if last.good_end is not None else last.size,
        f"{mark - last.last_seq} acknowledged records missing after seq {last.last_seq} "
        f"(seq {last.last_seq + 1}..{mark}): the log ends there, but {why}",
    )


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
