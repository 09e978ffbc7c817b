"""Forgetting a member in a ledger: every view, every file, crash-safely.

A ledger keeps a member in its log (every event of theirs, with their
attributes and metadata), in every view's snapshot (a row of theirs in a
board, a candidate in a trending view) and in every view in memory (each
routed per-key board, each period, a Redis view's serving copy).
:func:`forget_member` (``Ledger.forget``) removes them from all of it:

1. **rebuild** every view without the member: from each view's snapshot
   with the member's rows and trending candidate removed, then the log
   after it without their events (the cost of an open); or, with
   ``from_log=True`` (the ledger must hold its whole history, as it does
   by default), from the whole log without their events, so that every
   view is exactly what a ledger that never saw the member holds, a
   trending view's count-min sketch included.  An in-memory ledger
   rebuilds from its events always;
2. **stage** (the durable board's :class:`~rankengine.durable.forget.ForgetPlan`):
   each segment that holds an event of theirs is rewritten as
   ``NAME.forget`` (a record left with no event stays, empty, so every
   sequence number is unchanged), a snapshot of every rebuilt view at the
   ledger's seq is written as ``views/<view>/s<seq>-<n>.snap.forget``, and
   the manifest naming those snapshots as ``MANIFEST.forget``; every older
   snapshot file, every file of an unregistered view and every leftover
   ``.tmp`` is listed for removal;
3. **commit**: the journal ``FORGET`` (names of files only, never the
   member) is written and renamed into place; that rename is the switch;
   then the staged files are renamed over their originals, the leftovers
   removed, the journal removed;
4. **swap**: the rebuilt views replace the ledger's, and a Redis view's
   board is made the rebuilt shadow's state again (the member leaves it).

A kill before step 3's rename leaves the old history and staged files the
next open removes; a kill after it leaves the journal, which the next open
applies before anything is read (``LedgerFiles`` calls
:func:`~rankengine.durable.forget.finish_forget` on the ledger's directory
and ``views/`` under it).

What cannot be forgotten exactly: a trending view rebuilt from its snapshot
(the default) keeps the count-min sketch's counters, in which the member's
increments were added into cells shared with other members; the sketch
holds no member id (only hashed counters), and the member is no longer a
candidate, so it never shows in ``top()`` again, but its counts stay
smeared into those cells (and into ``total``).  ``from_log=True`` rebuilds
the sketch without them.

>>> from rankengine import Ledger
>>> ledger = Ledger()
>>> ledger.add_view("alltime")
>>> ledger.add_view("region", by="region")
>>> _ = ledger.record("ann", 5, attrs={"region": "eu"}, t_ms=1_000)
>>> _ = ledger.record("bob", 3, attrs={"region": "eu"}, t_ms=2_000)
>>> ledger.forget("ann")
Forgotten(present=True, records=1, rows=2, files=0)
>>> [e.member for e in ledger["alltime"].top()], [e.member for e in ledger["region"]["eu"].top()]
(['bob'], ['bob'])
>>> ledger.last_seq
2
"""

from __future__ import annotations

import dataclasses
import os
import time
from array import array
from collections.abc import Iterable, Iterator
from typing import Any, Final

from rankengine.board.scoring import check_member
from rankengine.durable.forget import (
    FORGET_JOURNAL,
    STAGED_SUFFIX,
    ForgetPlan,
    Forgotten,
    holds_member,
    set_aside_files,
    stale_files,
)
from rankengine.durable.kinds import MIGRATED_KEY
from rankengine.durable.manifest import MANIFEST_MAGIC, MANIFEST_NAME, Manifest
from rankengine.durable.records import Event, LogError, frame, pack, write_prefix
from rankengine.durable.snapshot import Snapshot, write_snapshot_columns
from rankengine.ledger.storage import (
    VIEWS_DIR,
    LedgerFiles,
    read_events,
    snapshot_clock,
    snapshot_entry,
)
from rankengine.ledger.views import View
from rankengine.trending.topk import TopK

#: (The ledger is typed ``Any`` here: this module is below ``ledger.py``,
#: whose ``Ledger.forget`` calls :func:`forget_member`.)
Ledger = Any

__all__ = ["forget_member", "scrub_topk"]

#: The header key under which a trending view's part holds its TopK.
_TOPK_KEY: Final = "topk"


def _same(value: Any, member: Any) -> bool:
    return type(value) is type(member) and value == member


def scrub_topk(blob: bytes, member: Any) -> bytes:
    """``blob`` (``TopK.to_bytes``) without ``member`` as a candidate; the
    sketch's counters are kept (they hold no member id).

    Runtime complexity: O(width * depth + k')

    >>> top = TopK(k=2, width=16, depth=2, seed=1)
    >>> top.add_many(["ann", "ann", "bob"])
    >>> [item.key for item in TopK.from_bytes(scrub_topk(top.to_bytes(), "ann")).top()]
    ['bob']
    """
    data = TopK.from_bytes(blob).to_dict()
    data["candidates"] = [c for c in data["candidates"] if not _same(c[0], member)]
    return TopK.from_dict(data).to_bytes()


def _without(column: Any, keep: list[int]) -> Any:
    if hasattr(column, "typecode"):
        return array(column.typecode, (column[i] for i in keep))
    return [column[i] for i in keep]


def _scrubbed_board(view: View, snap: Snapshot, member: Any) -> Any:
    """The board of a snapshot part, without ``member``'s row and metadata."""
    board = view.template.new_board()
    members, scores, clocks, metas = snap.columns()
    keep = [i for i, m in enumerate(members) if not _same(m, member)]
    if len(keep) != len(members):
        members, scores, clocks = (_without(c, keep) for c in (members, scores, clocks))
    metas = {m: v for m, v in metas.items() if not _same(m, member)}
    board._restore_columns(
        members, scores, clocks, metas, int(snap.header["clock"]), negated=snap.negated_clocks
    )
    return board


def _held_in(views: Iterable[View], member: Any) -> int:
    """How many boards (and trending views) of ``views`` hold ``member``."""
    count = 0
    for view in views:
        for adapter in view.adapters.values():
            for header, board in adapter.export():
                if board is not None:
                    count += member in board
                elif _TOPK_KEY in header:
                    count += member in adapter.board
    return count


def _filtered(records: Iterable[Event], member: Any) -> Iterator[Event]:
    for record in records:
        kept = [c for c in record.changes if not holds_member(c, member)]
        yield (
            record if len(kept) == len(record.changes) else Event(record.seq, record.time_ms, kept)
        )


def _rebuild(ledger: Ledger, member: Any, from_log: bool) -> dict[str, View]:
    """Every view of ``ledger`` as it would be had the member never been
    recorded (see the module docstring, step 1)."""
    files = ledger._files
    fresh = {name: View.from_spec(name, view.spec()) for name, view in ledger._views.items()}
    saved_views, saved_time = ledger._views, ledger._time
    ledger._views = fresh
    try:
        records: Iterable[Event]
        emptied: set[tuple[str, Any]] = set()
        ledger._time = 0
        if files is None:
            records = ledger._history
        else:
            start = 0
            if not from_log:
                start, emptied = _restore_scrubbed(ledger, files, fresh, member)
            elif files.manifest.config.get(MIGRATED_KEY):
                raise LogError(
                    f"{ledger.path}: from_log=True rebuilds the views from the log, and the "
                    "views a migration made hold state the log does not: forget without "
                    "from_log (from the views' snapshots)"
                )
            elif files.manifest.segments[0][1] != 1:
                raise LogError(
                    f"{ledger.path}: from_log=True needs the whole history, and the events "
                    "before the first segment were compacted away (retain_log=False): "
                    "forget without from_log (from the views' snapshots)"
                )
            records = read_events(ledger.path, files.manifest, start)
        for record in _filtered(records, member):
            ledger._replay(record)
    finally:
        ledger._views, ledger._time = saved_views, saved_time
    for name, key in emptied:  # a routed board only the member had made
        adapter = fresh[name].adapters.get(key)
        if adapter is not None and _is_empty(adapter):
            del fresh[name].adapters[key]
    for view in fresh.values():
        view.seq = ledger._seq
        view.time_ms = saved_time
    return fresh


def _is_empty(adapter: Any) -> bool:
    parts = adapter.export()
    return any(b is not None for _, b in parts) and all(b is None or not len(b) for _, b in parts)


def _restore_scrubbed(
    ledger: Ledger, files: LedgerFiles, fresh: dict[str, View], member: Any
) -> tuple[int, set[tuple[str, Any]]]:
    """Load each view of ``fresh`` from its snapshot without ``member``;
    return the seq to replay the log from (the oldest snapshot's), and the
    ``(view, key)`` of routed boards the member alone was in (a board of a
    routing key only their events carried: the key, an attribute of
    theirs, must not stay in a file, so the board goes unless a later
    event of another member writes to it)."""
    emptied: set[tuple[str, Any]] = set()
    snapshots = files.manifest.config.get("snapshots", {})
    seqs: list[tuple[int, int | None]] = []
    for name, view in fresh.items():
        entry = snapshots.get(name)
        if entry is None:
            raise LogError(
                f"view {name!r} has no snapshot and the log's history was compacted away: "
                "it cannot be rebuilt without the member"
            )
        seq, listed, clock = snapshot_entry(entry)
        board = view.template.board
        columns = board._codec.columns if hasattr(board, "_codec") else None
        parts = []
        held: set[Any] = set()  # keys of the boards the member was in
        snaps = files.read_parts(name, listed, columns)
        for snap in snaps:
            header = dict(snap.header.get("part", {}))
            if _TOPK_KEY in header:
                header[_TOPK_KEY] = scrub_topk(header[_TOPK_KEY], member)
            restored = None
            if snap.header.get("board"):
                if any(_same(m, member) for m in snap.columns()[0]):
                    held.add(snap.header.get("key"))
                restored = _scrubbed_board(view, snap, member)
            parts.append((snap.header.get("key"), (header, restored)))
        if view.route.keyed:
            for key in held:
                boards = [b for k, (_, b) in parts if k == key and b is not None]
                if boards and not any(len(b) for b in boards):
                    emptied.add((name, key))
        view.restore(parts)
        view.seq = seq
        ms = snapshot_clock(clock, snaps)
        view.time_ms = 0 if ms is None else ms
        seqs.append((seq, ms))
    start = min((seq for seq, _ in seqs), default=ledger._seq)
    # the ledger's clock at that seq: any snapshot's of it that says (one of
    # a view with no part, written before the manifest kept it, does not)
    known = [ms for seq, ms in seqs if seq == start and ms is not None]
    ledger._time = max(known, default=0 if seqs else ledger._time)
    return start, emptied


def _stage_views(
    files: LedgerFiles, plan: ForgetPlan, views: dict[str, View], seq: int, ledger_ms: int
) -> dict[str, list[Any]]:
    """Stage a snapshot of every view at ``seq`` (the layout of
    ``LedgerFiles.write_parts``); list every other file under ``views/``
    for removal.  Returns the manifest's ``snapshots`` map."""
    snapshots: dict[str, list[Any]] = {}
    for name, view in views.items():
        directory = files.view_dir(name)
        os.makedirs(directory, exist_ok=True)
        listed: list[list[Any]] = []
        for n, (key, (part, board)) in enumerate(view.export()):
            file_name = f"s{seq:020d}-{n:05d}.snap"
            header = {
                "seq": seq,
                "clock": 0 if board is None else board.clock,
                "view": name,
                "key": key,
                "part": part,
                "board": board is not None,
                "ledger_ms": ledger_ms,
            }
            columns: Any = ([], [], [], {}) if board is None else board._export_columns()
            final = os.path.join(directory, file_name)
            staged = final + STAGED_SUFFIX
            plan.renames.append((staged, final))
            write_snapshot_columns(staged, header, columns)
            listed.append([key, file_name])
        snapshots[name] = [seq, listed, ledger_ms]
    root = os.path.join(files.path, VIEWS_DIR)
    kept = {
        os.path.join(files.view_dir(name), file_name)
        for name, (_, listed, *_) in snapshots.items()
        for _, file_name in listed
    }
    for directory, _, names in os.walk(root):
        for file_name in sorted(names):
            path = os.path.join(directory, file_name)
            if path not in kept and not path.endswith(STAGED_SUFFIX):
                plan.remove(path)
    return snapshots


def _stage_log(ledger: Ledger, files: LedgerFiles, plan: ForgetPlan, member: Any) -> Manifest:
    """Stage every segment without ``member``'s events; return the manifest
    with the rewritten segments' marks (to stage once the views are)."""
    assert files.writer is not None
    manifest = files.manifest
    active = manifest.segments[-1][0]
    ends: dict[str, tuple[int, int]] = {}
    for name, _ in manifest.segments:
        limit = files.writer.end if name == active else None
        mark = manifest.ends.get(name, (None, 0))[0]
        length = plan.stage_segment(os.path.join(files.path, name), member, limit=limit, mark=mark)
        if length is not None and mark is not None:
            ends[name] = (mark, length)
    return dataclasses.replace(
        manifest,
        config=dict(manifest.config),
        segments=list(manifest.segments),
        ends={**manifest.ends, **ends},
        generation=manifest.generation + 1,
        written_ms=time.time_ns() // 1_000_000,
    )


def forget_member(ledger: Ledger, member: Any, *, from_log: bool = False) -> Forgotten:
    """Remove ``member`` from every view of ``ledger`` and every file under
    its directory (``Ledger.forget``; see the module docstring).
    ``from_log``: rebuild the views from the whole log (exact for a
    trending view's sketch too; O(E) replays) instead of from their
    snapshots and the log after them.

    Runtime complexity: O(E + N) for E events logged and N members held
    (the log is read and rewritten; the views rebuilt from their snapshots
    and the events after them, or with ``from_log`` from every event)

    :raises TypeError: ``member`` is not a str, bytes or int.
    :raises ValueError: the ledger is closed.
    :raises LogError: the directory holds files set aside by ``repair`` or
        an open (they may hold the member), or a view cannot be rebuilt.
    :return: ``present`` (some view held the member), ``records`` (log
        records that held an event of theirs), ``rows`` (boards and trending
        views the member was removed from), ``files`` (files rewritten).
    """
    member = check_member(member)
    # (a compaction replaying the log in a child ends first: this rewrites it)
    with ledger._compact_lock, ledger._lock:
        ledger._check_open()
        rows = _held_in(ledger._views.values(), member)
        files = ledger._files
        if files is None:
            assert ledger._history is not None
            fresh = _rebuild(ledger, member, True)
            touched = sum(any(holds_member(c, member) for c in r.changes) for r in ledger._history)
            ledger._history = list(_filtered(ledger._history, member))
            _swap(ledger, fresh)
            return Forgotten(rows > 0, touched, rows, 0)
        files.check_writable()
        held = set_aside_files(files.path)
        if held:
            raise LogError(
                f"{files.path} holds files set aside by repair or recovery ({', '.join(held)}); "
                "they may hold the member and forget cannot rewrite them: look at them, "
                "delete them, and forget again"
            )
        files.sync()
        if not rows and not _any_trace(files.path, member):
            return Forgotten(False, 0, 0, 0)
        fresh = _rebuild(ledger, member, from_log)
        plan = ForgetPlan(files.path)
        try:
            for leftover in stale_files(files.path, files.manifest):
                plan.remove(leftover)
            new = _stage_log(ledger, files, plan, member)
            new.config["snapshots"] = _stage_views(files, plan, fresh, ledger._seq, ledger._time)
            data = write_prefix(MANIFEST_MAGIC) + frame(pack(new.to_map()))
            plan.stage_bytes(os.path.join(files.path, MANIFEST_NAME), data)
        except BaseException:
            plan.discard()
            raise
        try:
            plan.commit()
        except BaseException:
            if not os.path.exists(os.path.join(files.path, FORGET_JOURNAL)):
                plan.discard()
            else:  # committed, not applied: the next open finishes it
                ledger._closed = True
            raise
        _settle(files, new, plan)
        _swap(ledger, fresh)
        return Forgotten(rows > 0, plan.records, rows, plan.files)


def _any_trace(root: str, member: Any) -> bool:
    """True when a file under ``root`` holds ``member``'s msgpack bytes."""
    needle = pack(member)
    for directory, _, names in os.walk(root):
        for name in names:
            with open(os.path.join(directory, name), "rb") as handle:
                if needle in handle.read():
                    return True
    return False


def _settle(files: LedgerFiles, new: Manifest, plan: ForgetPlan) -> None:
    """After the commit: the new manifest, and the writer on the rewritten
    active segment."""
    files.use_manifest(new)
    active = os.path.join(files.path, new.segments[-1][0])
    if any(final == active for _, final in plan.renames):
        files.reopen_active()


def _swap(ledger: Ledger, fresh: dict[str, View]) -> None:
    """Put the rebuilt views in place; bring outside copies (Redis) to them."""
    old = ledger._views
    ledger._views = fresh
    ledger._plan = None
    for view in old.values():
        view.close(ledger._seq)
    for view in fresh.values():
        view.attach(ledger._seq)
        for adapter in view.adapters.values():
            adapter.rebuild(ledger._seq)
