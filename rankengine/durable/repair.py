"""Repairing a board directory: what ``rankengine repair`` does.

:func:`repair` keeps every record before the first damage, moves (or cuts
off) what it cannot keep into a backup directory -- nothing is discarded
without a file that keeps it -- and writes a manifest that names what is
left, so the board opens again.  Each step is crash-safe; the
:class:`RepairResult` says what was kept, moved and cut.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from rankengine.board.checks import check_flag
from rankengine.durable.eventlog import SegmentWriter
from rankengine.durable.kinds import LEDGER_KIND, LEDGER_VIEWS, MIGRATED_KEY
from rankengine.durable.manifest import (
    MANIFEST_NAME,
    DirectoryLock,
    Manifest,
    segment_name,
    write_manifest,
)
from rankengine.durable.marks import high_water, settle
from rankengine.durable.options import make_directory
from rankengine.durable.records import (
    LogError,
)
from rankengine.durable.snapshot import fsync_dir
from rankengine.durable.verify import (
    Report,
    board_files,
    verify,
)

__all__ = [
    "MARKS_NOTE",
    "RepairResult",
    "ctrl_c_held",
    "repair",
]


@dataclass
class RepairResult:
    """What :func:`repair` did (or, with ``dry_run``, would do).

    ``actions`` are its steps, each an imperative phrase ("cut ...", "move
    ...", "write the new MANIFEST"); ``notes`` say why there is nothing to
    do, when there is not.  ``backup`` is the directory that holds (or
    would hold) what it moves or cuts, None when it saves nothing.
    ``after`` is :func:`verify`'s report after the repair (None for a dry
    run, or when nothing was done).
    """

    actions: list[str]
    backup: str | None
    before: Report
    after: Report | None
    notes: list[str] = field(default_factory=list)


#: What a repair that lowers the manifest's marks keeps of them, in its
#: backup directory: JSON ``{"mark_seq": S, "kept_seq": K, "why": ...}``.
MARKS_NOTE = "marks-before-repair.json"


def _chain_of(segments: list[tuple[str, int]], seq: int) -> int:
    return Manifest({}, [], segments).chain_start(seq)


@contextlib.contextmanager
def ctrl_c_held() -> Iterator[None]:
    """Hold Ctrl-C (SIGINT) while the block runs; raise KeyboardInterrupt after it.

    Repair's file steps (move, cut a tail, write the manifest) are short,
    and a directory left between two of them is neither the old state nor
    the repaired one.  Only the main thread of a process that has Python's
    default SIGINT handler is changed; elsewhere the block runs as it is.
    """
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return
    caught: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, _frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if caught:
        raise KeyboardInterrupt


def _views_past(
    directory: str, config: dict[str, Any], end: int, save: Callable[[str, str], None]
) -> None:
    """A ledger cut back to seq ``end``: each view whose snapshot reflects
    a later seq would show events the log no longer holds, so its snapshot
    files go to the backup and it is rebuilt from the log on open; a view
    a migration made cannot be (its state before the migration is only in
    its snapshot), and the repair is refused, naming it.

    Runtime complexity: O(views)
    """
    snapshots = config.get("snapshots", {})
    migrated = config.get(MIGRATED_KEY, {})
    for view, (seq, files, *_) in sorted(snapshots.items()):
        if seq <= end:
            continue
        if view in migrated:
            raise LogError(
                f"{directory}: the log would end at seq {end}, before the snapshot of view "
                f"{view!r} (seq {seq}), which `rankengine migrate` made from {migrated[view]}: "
                "its state before the migration is only in that snapshot, so repair refuses "
                "(nothing was changed); restore the damaged segment from a backup"
            )
        for _key, name in files:
            rel = f"{LEDGER_VIEWS}/{view}/{name}"
            if os.path.exists(os.path.join(directory, rel)):
                save(rel, f"view {view!r}'s snapshot is of seq {seq}, past the log's new end")
        del snapshots[view]


def repair(
    directory: str,
    *,
    backup_dir: str | None = None,
    dry_run: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
) -> RepairResult:
    """Cut a damaged board directory back to its last good record.

    Keeps everything before the first damage and moves everything it cuts
    (the tail bytes of a segment, later segments, damaged snapshots, a
    damaged manifest) into ``backup_dir`` (default ``DIR/repair-<time>``),
    so nothing is destroyed (it refuses, changing nothing, when
    ``backup_dir`` already holds a file of a name it would save under).
    The backup directory is fsynced after each file it receives, before
    the cut it saves is made and before the new manifest, and a backup
    directory it creates is fsynced into its parent, so a power cut cannot
    lose what was saved.  Takes the directory lock, but not in a directory
    that holds no ``MANIFEST`` and no snapshot or segment: that is no
    board, and repair raises :class:`~rankengine.durable.records.LogError`,
    leaving it as it was.

    Every step is decided before any file is touched, so a repair that
    cannot work (:class:`~rankengine.durable.records.LogError` when no consistent
    state is left) changes nothing.  If a step itself fails (an I/O error),
    the :class:`~rankengine.durable.records.LogError` lists the steps already done
    and where the backup is.

    Ctrl-C while the file steps run is held until the last one is done
    (the directory is repaired), then raised as :class:`KeyboardInterrupt`;
    during the checks before and after, it stops the repair at once.

    ``progress(name, done, total)``, if given, follows the reading of each
    file, as for :func:`verify` (the check before the repair and the one
    after it).

    Runtime complexity: O(size of the directory)
    """

    # dry_run=None repaired for real, "no" only pretended to
    dry_run = check_flag(dry_run, "dry_run")
    if not os.path.lexists(os.path.join(directory, MANIFEST_NAME)) and not board_files(directory):
        # checked before taking the lock, which would leave a LOCK file in
        # a directory that is no board (nothing here to repair from)
        raise LogError(
            f"{directory} is not a board directory (no {MANIFEST_NAME}, no snapshot or "
            "segment): nothing to repair from; nothing was changed"
        )
    lock = DirectoryLock(directory)
    try:
        before = verify(directory, progress=progress)
        manifest = before.manifest
        if (
            manifest is None
            and not before.damaged
            and not before.torn
            and board_files(directory)  # more than the LOCK repair just took
        ):
            # only what a kill while creating the board leaves (verify's note):
            # no write is lost, and opening creates the board afresh
            note = "nothing to repair: " + "; ".join(f.message for f in before.findings)
            return RepairResult([], None, before, None, [note])
        if manifest is None:
            raise LogError(f"{directory}: no readable segment: nothing to repair from")
        if (
            not before.damaged
            and not before.fallback
            and not before.torn
            and os.path.exists(os.path.join(directory, MANIFEST_NAME))
            and not any(f.path.endswith(MANIFEST_NAME) for f in before.findings)
        ):
            note = "nothing to repair"
            if before.history_damaged:
                note += (
                    ": only the retained history is damaged (see the HISTORY findings), "
                    "and repair leaves history as it is"
                )
            return RepairResult([], None, before, None, [note])
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        backup = backup_dir or os.path.join(directory, f"repair-{stamp}")
        # the plan: (action, the step that does it, or None for no file change)
        plan: list[tuple[str, Callable[[], None] | None]] = []
        saves = False  # whether a step puts anything in the backup

        def make_backup() -> None:
            # a directory it creates is fsynced into its parent (and each
            # missing parent into its own), as a new board directory is
            make_directory(backup)

        def move(name: str) -> None:
            make_backup()
            source, target = os.path.join(directory, name), os.path.join(backup, name)
            if os.path.dirname(target) != backup:  # a ledger's views/<view>/ file
                make_directory(os.path.dirname(target))
            try:
                os.rename(source, target)
            except OSError as exc:
                if exc.errno != errno.EXDEV:
                    raise
                # The backup is on another filesystem: copy.  Once the
                # original is deleted the copy is all there is, so it is
                # made durable first (its data, then its directory entry).
                shutil.copy2(source, target)
                with open(target, "rb") as f:
                    os.fsync(f.fileno())
                fsync_dir(os.path.dirname(target))
                os.remove(source)
            else:
                # the file's new entry: else a power cut can lose it
                fsync_dir(os.path.dirname(target))

        def claim(name: str) -> None:
            # decided before any file moves: a copy an earlier repair saved
            # under this name must not be replaced (shutil.move would)
            if os.path.lexists(os.path.join(backup, name)):
                raise LogError(
                    f"{directory}: the backup directory {backup} already holds {name} "
                    "(from an earlier repair?); give another --backup-dir / backup_dir; "
                    "nothing was changed"
                )

        def save(name: str, why: str) -> None:
            nonlocal saves
            claim(name)
            saves = True
            plan.append((f"move {name} to the backup ({why})", lambda: move(name)))

        def cut_tail(path: str, good: int, saved: str) -> None:
            make_backup()
            with open(path, "r+b") as f, open(os.path.join(backup, saved), "wb") as out:
                f.seek(good)
                shutil.copyfileobj(f, out)
                out.flush()
                os.fsync(out.fileno())
                fsync_dir(backup)  # the copy is durable before the tail is cut
                f.truncate(good)
                os.fsync(f.fileno())

        if any(f.path.endswith(MANIFEST_NAME) for f in before.findings if f.severity == "damage"):
            plan.append(("rebuild MANIFEST from the files present", None))
            if os.path.exists(os.path.join(directory, MANIFEST_NAME)):
                save(MANIFEST_NAME, "damaged")
        for info in before.snapshots:
            if not info.ok:
                if os.path.exists(os.path.join(directory, info.name)):
                    save(info.name, "damaged snapshot")
                manifest.snapshots.remove((info.name, info.seq))
        base = max((seq for _, seq in manifest.snapshots), default=0)
        chain = manifest.chain_start(base)
        keep: list[tuple[str, int]] = []
        cut = False
        previous: int | None = None
        for i, (info, entry) in enumerate(
            zip(before.segments, list(manifest.segments), strict=True)
        ):
            in_chain = i >= chain
            if cut and in_chain:
                if os.path.exists(os.path.join(directory, info.name)):
                    save(info.name, "after the first damage")
                continue
            gap = previous is not None and info.seq != previous + 1
            if gap and in_chain:
                cut = True
                missing = f"records {(previous or 0) + 1}..{info.seq - 1} are missing before it"
                save(info.name, missing)
                continue
            previous = info.last_seq
            if info.ok and info.good_end is None:
                keep.append(entry)
                continue
            path = os.path.join(directory, info.name)
            if not os.path.exists(path) or info.good_end in (None, 0):
                if os.path.exists(path):
                    save(info.name, "unreadable header")
                else:
                    plan.append((f"drop {info.name} from the manifest (the file is missing)", None))
                cut = cut or in_chain
                previous = None
                continue
            good = int(info.good_end or 0)
            size = os.path.getsize(path)
            saved = f"{info.name}.cut-at-{good}"
            claim(saved)
            plan.append(
                (
                    f"cut {info.name} at offset {good}, saving the {size - good} bytes after "
                    f"seq {info.last_seq} as {saved}",
                    functools.partial(cut_tail, path, good, saved),
                )
            )
            saves = True
            keep.append(entry)
            cut = cut or in_chain
        last_of = {info.name: info.last_seq for info in before.segments}
        chain = _chain_of(keep, base)
        if chain == len(keep) or last_of[keep[chain][0]] < base:
            if not manifest.snapshots:
                raise LogError(
                    f"{directory}: nothing consistent is left to keep "
                    "(no snapshot, and the log does not start at seq 1); nothing was changed"
                )
            for name, first in keep:
                if first > base:
                    save(name, "cannot follow the snapshot")
            keep = [s for s in keep if s[1] <= base]
            name = segment_name(base + 1)

            def start_segment(name: str = name, first: int = base + 1) -> None:
                header: dict[str, Any] = {"first_seq": first, "config": manifest.config}
                header["created_ms"] = time.time_ns() // 1_000_000
                SegmentWriter.create(os.path.join(directory, name), header).close()

            plan.append(
                (f"start an empty segment {name} after the snapshot (seq {base})", start_segment)
            )
            keep.append((name, base + 1))
        manifest.segments = keep
        infos = {info.name: info for info in before.segments}
        kept = [
            (name, infos[name].last_seq, infos[name].good_end or infos[name].size)
            for name, _ in keep
            if name in infos
        ]
        if manifest.config.get("kind") == LEDGER_KIND:
            end = max((last for _, last, _ in kept), default=0)
            _views_past(directory, manifest.config, end, save)
        why = high_water(manifest)[1]
        old_mark, new_mark = settle(manifest, kept)
        if new_mark < old_mark:
            claim(MARKS_NOTE)
            saves = True

            def note_marks(old: int = old_mark, new: int = new_mark, why: str = why) -> None:
                make_backup()
                note = {"mark_seq": old, "kept_seq": new, "why": why}
                with open(os.path.join(backup, MARKS_NOTE), "w", encoding="utf-8") as f:
                    json.dump(note, f)
                    f.flush()
                    os.fsync(f.fileno())
                fsync_dir(backup)

            plan.append(
                (
                    f"lower the MANIFEST's marks from seq {old_mark} to seq {new_mark}: "
                    f"seq {new_mark + 1}..{old_mark} ({old_mark - new_mark} acknowledged "
                    "records) are lost from the board (the old marks are kept as "
                    f"{MARKS_NOTE}); `rankengine salvage DIR` shows any that were found "
                    "and set aside",
                    note_marks,
                )
            )

        def new_manifest() -> None:
            write_manifest(directory, manifest, step="repair_manifest")

        plan.append(("write the new MANIFEST", new_manifest))
        actions = [action for action, _ in plan]
        if dry_run:
            return RepairResult(actions, backup if saves else None, before, None)
        done: list[str] = []
        with ctrl_c_held():
            for action, step in plan:
                try:
                    if step is not None:
                        step()
                except OSError as exc:
                    did = "; ".join(done) or "nothing"
                    raise LogError(
                        f"{directory}: repair failed at {action!r} ({exc}); done before it: "
                        f"{did}; what it moved or cut is in {backup}"
                    ) from exc
                done.append(action)
        after = verify(directory, progress=progress)
        return RepairResult(actions, backup if saves else None, before, after)
    finally:
        lock.release()
