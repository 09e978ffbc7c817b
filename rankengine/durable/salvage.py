"""Salvage: the records found past damage, shown, and replayed only when asked.

``rankengine repair`` keeps every record before the first damage and sets
the rest aside (``repair-<time>/``): the tail of a damaged segment, the
segments after a gap.  Many of those records are intact.  :func:`find`
looks for them -- in the board's own segments past the point where its log
stops being consistent, in ``.orphan`` segments, in every ``repair-*/``
backup and in any other file or directory named -- by scanning each file
for checksum-valid frames that decode as records (as ``verify`` does past
damage), and makes a :class:`Salvage` plan::

    log kept  1 ............ 990 | lost 991..992 | found 993 ...... 2000
                                  ^ no copy anywhere ^ intact, set aside

:func:`apply` (``rankengine salvage DIR --apply``) replays the records
found after the gap, as new records of the board (``seq 991, 992, ...``,
keeping their original times), one write each, and writes a report
(``salvage-<time>.json`` in the board directory) naming exactly which
sequence numbers were lost and which records were replayed.  A record
holds resulting scores, never increments, so a member a replayed record
sets holds its exact score as of that record; a member whose last change
before the gap is lost may hold an older score (what :attr:`Salvage.inexact`
lists).  A removal or metadata change of a member that is absent (its
put was lost) is left out and counted.

Nothing is discarded: salvage reads its sources and never changes them.
A kill during :func:`apply` is safe: a journal (``SALVAGE``) written
before the first record says where the replay started, and the next run
finishes it, checking that the board's records after that point are the
replay's own.

Runtime complexity: O(size of the files scanned) to find; one write per
record replayed.
"""

from __future__ import annotations

import json
import mmap
import os
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Final

from rankengine.board.changes import PUT, Change
from rankengine.board.leaderboard import Leaderboard
from rankengine.durable.board import DurableLeaderboard
from rankengine.durable.events import rebuild
from rankengine.durable.kinds import LEDGER, what_is_in
from rankengine.durable.manifest import MANIFEST_NAME, SEGMENT_RE
from rankengine.durable.marks import high_water
from rankengine.durable.records import (
    FRAME,
    FRAME_HEADER_BYTES,
    Event,
    LogError,
    crash_point,
    decode_record,
)
from rankengine.durable.repair import MARKS_NOTE, RepairResult, repair
from rankengine.durable.snapshot import fsync_dir
from rankengine.durable.verify import Report, utc, verify

__all__ = [
    "JOURNAL_NAME",
    "REPORT_PREFIX",
    "Salvage",
    "SalvageResult",
    "apply",
    "find",
    "records",
    "scan_file",
]

#: The journal of a salvage in progress (in the board directory).
JOURNAL_NAME: Final = "SALVAGE"
#: A finished salvage's report is ``salvage-<time>.json`` in the board directory.
REPORT_PREFIX: Final = "salvage-"
#: Members named in a message before "and N more".
_NAMES_SHOWN: Final = 20


def scan_file(path: str) -> Iterator[tuple[Event, int]]:
    """Every checksum-valid frame in ``path`` that decodes as a record, at
    any offset, with its payload's CRC32 (the record's identity).

    Damaged bytes are stepped over one at a time; an intact frame is read
    whole, so a file of intact records costs one pass.

    Runtime complexity: O(size of the file)
    """
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size < FRAME_HEADER_BYTES:
            return
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            at, last = 0, size - FRAME_HEADER_BYTES
            while at <= last:
                length, length_crc, payload_crc = FRAME.unpack_from(data, at)
                stop = at + FRAME_HEADER_BYTES + length
                if zlib.crc32(data[at : at + 4]) == length_crc and stop <= size:
                    payload = data[at + FRAME_HEADER_BYTES : stop]
                    if zlib.crc32(payload) == payload_crc:
                        try:
                            event = decode_record(payload)
                        except ValueError:  # a segment's header frame, say
                            at += 1
                            continue
                        yield event, payload_crc
                        at = stop
                        continue
                at += 1


@dataclass
class Salvage:
    """What :func:`find` found: where the board's log is consistent to
    (``kept_seq``), what the marks say was acknowledged (``mark_seq``), the
    records found after ``kept_seq`` (``events``, ascending, one per seq,
    ``crcs`` their identities), which file held how many (``sources``),
    and the sequence numbers with no copy anywhere (``lost``, ranges)."""

    directory: str
    kept_seq: int
    mark_seq: int
    damaged: bool
    events: list[Event] = field(default_factory=list)
    crcs: list[int] = field(default_factory=list)
    sources: dict[str, int] = field(default_factory=dict)
    lost: list[tuple[int, int]] = field(default_factory=list)
    #: records that disagree with another copy of the same seq (the first kept)
    conflicts: int = 0
    #: the board as it would be after the replay (None until planned)
    after: Leaderboard | None = None
    #: per record replayed, the changes it writes (absent members' left out)
    writes: list[tuple[Event, list[Change]]] = field(default_factory=list)
    #: changes left out because their member was absent (its put lost)
    dropped: int = 0
    #: members whose score may not be exact after the replay
    inexact: list[Any] = field(default_factory=list)
    #: seqs of records a repair set aside that no salvage replayed, and
    #: that the board has since written new records over (not replayed:
    #: they would undo newer writes)
    overtaken: list[int] = field(default_factory=list)

    @property
    def identities(self) -> list[list[int]]:
        """``[seq, crc]`` of each record found (how a report names them)."""
        return [[e.seq, c] for e, c in zip(self.events, self.crcs, strict=True)]

    @property
    def lost_count(self) -> int:
        """How many sequence numbers are lost (no copy found)."""
        return sum(hi - lo + 1 for lo, hi in self.lost)

    def lines(self) -> list[str]:
        """What was found and what a replay means, for the operator."""
        out = [f"the board's log is consistent up to seq {self.kept_seq}"]
        if self.mark_seq > self.kept_seq:
            out[0] += f"; its marks say seq {self.mark_seq} was acknowledged"
        if self.events:
            first, last = self.events[0], self.events[-1]
            out.append(
                f"found {records(len(self.events))} past it: seq {first.seq}..{last.seq}, "
                f"written {utc(first.time_ms)} to {utc(last.time_ms)}, in:"
            )
            out += [f"  {path} ({records(n)})" for path, n in self.sources.items()]
        else:
            out.append("found no record past it (nothing to replay)")
        if self.lost:
            ranges = ", ".join(f"{lo}" if lo == hi else f"{lo}..{hi}" for lo, hi in self.lost)
            out.append(f"lost: seq {ranges} ({records(self.lost_count)}): no copy was found")
        if self.overtaken:
            lo, hi = min(self.overtaken), max(self.overtaken)
            out.append(
                f"{records(len(set(self.overtaken)))} a repair set aside (seq {lo}..{hi}) "
                f"are not replayed: the board was written to after that repair (it is at seq "
                f"{self.kept_seq}), and replaying older scores would undo newer ones; they "
                "stay in the backup (restore a backup, or replay them by hand)"
            )
        if self.conflicts:
            out.append(f"{records(self.conflicts)} had a different copy of the same seq (ignored)")
        if self.events and self.after is not None:
            names = ", ".join(repr(m) for m in self.inexact[:_NAMES_SHOWN])
            more = len(self.inexact) - _NAMES_SHOWN
            names += f" and {more} more" if more > 0 else ""
            out.append(
                f"after a replay: {len(self.after)} members; "
                + (
                    f"{len(self.inexact)} may not hold their exact score (the lost records "
                    f"may have changed them after their last replayed change): {names}"
                    if self.inexact
                    else "every score is exact (each member's last change is replayed or "
                    "came before the loss)"
                    if self.lost
                    else "every score is exact (nothing is lost)"
                )
            )
            if self.dropped:
                out.append(
                    f"{self.dropped} removals or metadata changes of members that are absent "
                    "(their put was lost) are left out"
                )
        return out


@dataclass
class SalvageResult:
    """What :func:`apply` did: the repair it ran first (if any), the plan,
    the new sequence numbers the replayed records got and the report file."""

    repaired: RepairResult | None
    salvage: Salvage
    first_seq: int
    last_seq: int
    report: str | None
    resumed: bool = False


def _consistent_seq(report: Report) -> int:
    """The last seq the log reaches without a gap or damage (what an open
    after ``repair`` holds)."""
    manifest = report.manifest
    if manifest is None:
        return 0
    base = max((s.seq for s in report.snapshots if s.ok), default=0)
    reached = base
    for info in report.segments[manifest.chain_start(base) :]:
        if info.seq > reached + 1:
            break
        reached = max(reached, info.last_seq)
        if not info.ok or info.good_end is not None:
            break
    return reached


def _sources(directory: str, extra: list[str]) -> list[str]:
    """Every file salvage reads: the board's segments and orphans, the
    files of its ``repair-*`` backups, and ``extra`` (files, or directories
    whose files are read)."""
    paths: list[str] = []
    names = sorted(os.listdir(directory))
    for name in names:
        path = os.path.join(directory, name)
        if SEGMENT_RE.fullmatch(name) or name.endswith(".orphan"):
            paths.append(path)
    roots = [os.path.join(directory, n) for n in names if n.startswith("repair-")] + extra
    for root in roots:
        if os.path.isdir(root):
            paths += [
                os.path.join(root, n)
                for n in sorted(os.listdir(root))
                if os.path.isfile(os.path.join(root, n)) and n not in (MANIFEST_NAME, MARKS_NOTE)
            ]
        elif os.path.isfile(root):
            paths.append(root)
    return paths


def _kept_by_repair(path: str) -> int | float:
    """The seq the repair whose backup holds ``path`` kept (its
    ``MARKS_NOTE``), or infinity when ``path`` is no such backup's."""
    note = os.path.join(os.path.dirname(path), MARKS_NOTE)
    if not os.path.isfile(note):
        return float("inf")
    with open(note, encoding="utf-8") as f:
        return int(json.load(f).get("kept_seq", 0))


def _replayed_before(directory: str) -> set[tuple[int, int]]:
    """(seq, crc) of every record an earlier salvage replayed (its reports)."""
    done: set[tuple[int, int]] = set()
    for name in os.listdir(directory):
        if name.startswith(REPORT_PREFIX) and name.endswith(".json"):
            with open(os.path.join(directory, name), encoding="utf-8") as f:
                done.update((seq, crc) for seq, crc in json.load(f).get("replayed", []))
    return done


def _marks_before_repair(directory: str) -> int:
    """The highest mark a repair lowered (it keeps the marks it found in its
    backup as ``MARKS_NOTE``) and no salvage has dealt with since (one that
    started at or after the seq that repair kept): what was acknowledged
    before the loss."""
    bases = [-1]
    notes: list[dict[str, Any]] = []
    for name in os.listdir(directory):
        path = os.path.join(directory, name)
        if name.startswith(REPORT_PREFIX) and name.endswith(".json"):
            with open(path, encoding="utf-8") as f:
                bases.append(int(json.load(f).get("base_seq", -1)))
        elif name.startswith("repair-") and os.path.isfile(os.path.join(path, MARKS_NOTE)):
            with open(os.path.join(path, MARKS_NOTE), encoding="utf-8") as f:
                notes.append(json.load(f))
    open_notes = [n for n in notes if int(n.get("kept_seq", 0)) > max(bases)]
    return max((int(n.get("mark_seq", 0)) for n in open_notes), default=0)


def records(n: int) -> str:
    """``"1 record"``, ``"2 records"``.

    >>> records(1), records(0)
    ('1 record', '0 records')
    """
    return f"{n} record" + ("" if n == 1 else "s")


def _refuse_ledger(directory: str) -> None:
    """Salvage replays a board's changes: a ledger's events are refused by name."""
    if what_is_in(directory) == LEDGER:
        raise LogError(
            f"{directory} holds a ledger: salvage replays a durable board's records, not a "
            "ledger's events (nothing was changed); `rankengine repair DIR` keeps every "
            "event before the damage and sets the records after it aside in DIR/repair-*"
        )


def find(directory: str, *, extra: list[str] | None = None) -> Salvage:
    """Look for records past the board's consistent log; plan their replay.

    Reads only.  ``extra``: more files or directories to read (a
    ``--backup-dir`` given to ``repair``, a copy from elsewhere).

    Runtime complexity: O(size of the files read)
    """
    _refuse_ledger(directory)
    report = verify(directory)
    if report.manifest is None:
        raise LogError(f"{directory}: no readable MANIFEST or segment: `rankengine repair` first")
    kept = _consistent_seq(report)
    journal = _read_journal(directory)
    # resuming: the records of the interrupted salvage, and not the board's
    # own records after its start (they are those records, renumbered)
    only = None if journal is None else {(s, c) for s, c in journal["records"]}
    if journal is not None:
        kept = min(kept, int(journal["base_seq"]))
    mark = max(high_water(report.manifest)[0], _marks_before_repair(directory))
    plan = Salvage(directory, kept, mark, report.damaged)
    skip = _replayed_before(directory)
    found: dict[int, tuple[Event, int]] = {}
    for path in _sources(directory, extra or []):
        n = 0
        cut_at = _kept_by_repair(path)
        for event, crc in scan_file(path):
            if event.seq <= kept and cut_at < event.seq and (event.seq, crc) not in skip:
                plan.overtaken.append(event.seq)  # set aside, then written over
            if event.seq <= kept or (event.seq, crc) in skip:
                continue
            if only is not None and (event.seq, crc) not in only:
                continue
            have = found.get(event.seq)
            if have is None:
                found[event.seq] = (event, crc)
                n += 1
            elif have[1] != crc:
                plan.conflicts += 1
        if n:
            plan.sources[path] = n
    for seq in sorted(found):
        event, crc = found[seq]
        plan.events.append(event)
        plan.crcs.append(crc)
    end = max(mark, plan.events[-1].seq if plan.events else 0)
    previous = kept
    for seq in [*sorted(found), end + 1]:
        if seq > previous + 1:
            plan.lost.append((previous + 1, seq - 1))
        previous = seq
    _plan(plan)
    return plan


def _plan(plan: Salvage) -> None:
    """Replay the found records on a copy of the board as of ``kept_seq``:
    what each writes, what it leaves out, which members stay inexact."""
    if not plan.events:
        return
    board = rebuild(plan.directory, until_seq=plan.kept_seq)
    last_lost = plan.lost[-1][1] if plan.lost else 0
    exact: set[Any] = set()
    for event in plan.events:
        kept: list[Change] = []
        for change in event.changes:
            if change[0] != PUT and change[1] not in board:
                plan.dropped += 1
                continue
            board._apply([change])
            kept.append(change)
            if event.seq > last_lost:
                exact.add(change[1])
        if kept:
            plan.writes.append((event, kept))
    plan.after = board
    if last_lost > plan.kept_seq:
        plan.inexact = [m for m, _ in board.items() if m not in exact]


def _read_journal(directory: str) -> dict[str, Any] | None:
    try:
        with open(os.path.join(directory, JOURNAL_NAME), encoding="utf-8") as f:
            value = json.load(f)
    except FileNotFoundError:
        return None
    if not isinstance(value, dict) or type(value.get("base_seq")) is not int:
        raise LogError(f"{directory}: {JOURNAL_NAME} is not a salvage journal; move it aside")
    return value


def _write_json(directory: str, name: str, value: dict[str, Any], step: str) -> str:
    """Write ``value`` as ``directory/name`` atomically and durably."""
    path = os.path.join(directory, name)
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(value, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    crash_point(f"{step}_rename")
    os.replace(path + ".tmp", path)
    fsync_dir(directory)
    return path


def apply(directory: str, *, extra: list[str] | None = None) -> SalvageResult:
    """Replay the records :func:`find` finds after the gap, as new records.

    A damaged board is repaired first (:func:`~rankengine.durable.repair.repair`:
    it sets aside what it cuts, which this then reads).  Each record found
    becomes one write of the board, keeping its time; the report file
    names the lost sequence numbers, the records replayed (their old
    sequence numbers and identities) and the new ones.  Crash points:
    ``salvage_journal_rename``, ``salvage_record`` (after the first record),
    ``salvage_report_rename``.

    Runtime complexity: O(size of the files read) plus one write per record
    """
    _refuse_ledger(directory)
    repaired = None
    if verify(directory).damaged:
        repaired = repair(directory)
        if repaired.after is not None and repaired.after.damaged:
            raise LogError(f"{directory}: repair could not make the board open; see its report")
    for name in os.listdir(directory):  # a report a kill left half written
        if name.startswith(REPORT_PREFIX) and name.endswith(".json.tmp"):
            os.remove(os.path.join(directory, name))
    plan = find(directory, extra=extra)
    journal = _read_journal(directory)
    if journal is None and not plan.writes:
        return SalvageResult(repaired, plan, 0, 0, None)
    stamp = [0]
    board = DurableLeaderboard(
        directory, fsync="never", compact_min_bytes=None, now=lambda: stamp[0]
    )
    try:
        base = board.last_seq if journal is None else int(journal["base_seq"])
        done = board.last_seq - base
        if journal is None:
            _write_json(
                directory,
                JOURNAL_NAME,
                {"base_seq": base, "records": plan.identities},
                "salvage_journal",
            )
        else:
            _check_resume(board, plan, base, done, journal)
        for i, (event, changes) in enumerate(plan.writes[done:]):
            stamp[0] = event.time_ms
            with board._lock:
                board._commit(changes)
                clocks = [c[3] for c in changes if c[0] == PUT]
                board._clock = max([board._clock, *clocks])
            if i == 0:
                crash_point("salvage_record")
        board.flush()
        last = board.last_seq
    finally:
        board.close()
    report = _write_json(
        directory,
        f"{REPORT_PREFIX}{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}.json",
        {
            "base_seq": base,
            "new_seqs": [base + 1, last],
            "lost": plan.lost,
            "replayed": plan.identities,
            "left_out_changes": plan.dropped,
            "inexact_members": len(plan.inexact),
            "sources": plan.sources,
        },
        "salvage_report",
    )
    os.remove(os.path.join(directory, JOURNAL_NAME))
    fsync_dir(directory)
    return SalvageResult(repaired, plan, base + 1, last, report, resumed=journal is not None)


def _check_resume(
    board: DurableLeaderboard, plan: Salvage, base: int, done: int, journal: dict[str, Any]
) -> None:
    """Refuse to finish an interrupted salvage unless the board's records
    after ``base`` are the first ``done`` writes of this same plan."""
    wanted = plan.identities
    if journal.get("records") != wanted or done < 0 or done > len(plan.writes):
        raise LogError(
            f"{board.path}: an interrupted salvage ({JOURNAL_NAME}) started at seq {base}, but "
            "its records or the board changed since; nothing was changed. Look at "
            f"{JOURNAL_NAME}, then move it aside to start afresh"
        )
    logged = [event.changes for event in board.events(base + 1)]
    if logged != [changes for _, changes in plan.writes[:done]]:
        raise LogError(
            f"{board.path}: the records after seq {base} are not the interrupted salvage's "
            f"(was the board written to since?); nothing was changed. Move {JOURNAL_NAME} "
            "aside to start afresh"
        )
