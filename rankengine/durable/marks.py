"""Marks of what was acknowledged: the seal, segment ends and high-water marks.

A log can only show what it holds.  A segment cut at a record boundary
reads as a healthy, shorter log; one cut mid-record reads as a torn tail,
exactly what a crash in the middle of the last append leaves.  So the
manifest also says how far the log reached (see ``docs/log-format.md``)::

    marks = {"durable_seq": s,                       high-water mark
             "sealed": bool,                         a clean close() wrote it
             "ends": [[segment, last_seq, length]]}  a closed segment's end

and these are written only where a manifest write happens anyway:

========================  =================================================
when                      what it records
========================  =================================================
a new segment starts      the previous segment's last seq and byte length,
                          and the high-water mark (that segment is fsynced)
a snapshot (compaction)   the high-water mark: the snapshot's seq
``close()`` (the seal)    the last segment's last seq and length, the
                          high-water mark, ``sealed``: one manifest write
every :data:`CHECKPOINT_  the high-water mark of what the ``everysec``
INTERVAL_S` (everysec)    flusher made durable
========================  =================================================

Open, :func:`~rankengine.durable.events.rebuild` and ``rankengine verify``
compare the log with them: a log that ends before the high-water mark is
**damage**, ``N acknowledged records missing after seq S``
(:class:`AcknowledgedLossError`), never a torn tail and never silence.  A
torn tail stays what it is only past the last mark, which a board that was
not closed cleanly can have (its last records came after the last mark).
The marks are lower bounds: a reopened board appends past its seal without
writing the manifest again until it closes.

The per-write path is not touched: no write waits for a mark.

>>> m = Manifest({}, [], [("log-00000000000000000001.seg", 1)])
>>> record_end(m, "log-00000000000000000001.seg", 40, 1234)
>>> high_water(m)
(40, 'the log reached seq 40 when its segment log-00000000000000000001.seg was closed')
>>> print(str(missing_after("seg", 99, 30, 40, "the manifest says so")).split(":")[1])
 10 acknowledged records missing after seq 30 (seq 31..40)
"""

from __future__ import annotations

import dataclasses
import os
import time
import warnings
from typing import Any, Final

from rankengine.durable.manifest import Manifest, write_manifest
from rankengine.durable.records import CorruptionError, LogError, TornTail

__all__ = [
    "CHECKPOINT_INTERVAL_S",
    "NEXT_STEPS",
    "AcknowledgedLossError",
    "Checkpoints",
    "check_loaded",
    "high_water",
    "missing_after",
    "record_end",
    "seal",
    "settle",
]

#: Seconds between two high-water checkpoints of an ``everysec`` board (only
#: when it was written to meanwhile).  Each costs one fdatasync and one
#: manifest write (two fsyncs) beside the flusher's one fsync a second, so
#: at most 3 extra fsyncs in 10 s; in exchange a cut that removes more than
#: the last ~10 s of a crashed board's writes is reported.
CHECKPOINT_INTERVAL_S: Final = 10.0
#: What every loss message tells the operator to do next.
NEXT_STEPS: Final = (
    "Nothing was changed. Next: `rankengine verify DIR` shows the damage and any records "
    "found past it; restore a backup if you have one, or run `rankengine repair DIR` "
    "(keeps the records before the damage, sets aside what it cuts) and then "
    "`rankengine salvage DIR` (shows, and with --apply replays, the records found past "
    "the damage). See 'When to salvage and when to restore a backup' in the durability docs"
)


class AcknowledgedLossError(CorruptionError):
    """The log ends before what the manifest says was acknowledged (or
    records are missing between two segments): ``missing`` records after
    seq ``last_seq`` (seq ``last_seq + 1`` to ``mark_seq``) are gone.

    ``why`` says which mark (or which later record) proves they existed.
    A :class:`~rankengine.durable.records.CorruptionError`: the board
    refuses to open.
    """

    def __init__(self, path: str, offset: int, last_seq: int, mark_seq: int, why: str) -> None:
        self.path, self.offset = path, offset
        self.last_seq, self.mark_seq = last_seq, mark_seq
        self.missing = mark_seq - last_seq
        self.why = why
        self.reason = (
            f"{self.missing} acknowledged records missing after seq {last_seq} "
            f"(seq {last_seq + 1}..{mark_seq})"
        )
        LogError.__init__(
            self,
            f"{path}: {self.reason}: the log ends at offset {offset}, but {why}. "
            f"Scores of the members those records touched are lost. {NEXT_STEPS}",
        )


def missing_after(path: str, offset: int, last_seq: int, mark_seq: int, why: str) -> Exception:
    """The :class:`AcknowledgedLossError` for a log that reaches only
    ``last_seq`` (ending at ``offset`` of ``path``) where ``why`` proves
    ``mark_seq`` was written."""
    return AcknowledgedLossError(path, offset, last_seq, mark_seq, why)


def record_end(manifest: Manifest, name: str, last_seq: int, length: int) -> None:
    """Note that segment ``name`` ends at ``last_seq`` after ``length``
    bytes, all durable (the caller fsynced it): its end and the high-water
    mark.  Written with the manifest write that follows.

    Runtime complexity: O(1)
    """
    manifest.ends[name] = (last_seq, length)
    manifest.durable_seq = max(manifest.durable_seq, last_seq)


def settle(manifest: Manifest, kept: list[tuple[str, int, int]]) -> tuple[int, int]:
    """Set ``manifest``'s marks to exactly the log ``kept`` (``(segment,
    last seq, length)`` of each segment a repair keeps, oldest first), as a
    seal does: a repaired board is consistent and closed.  Returns the
    high-water marks before and after (a repair reports the records
    between as lost).

    Runtime complexity: O(segments)

    >>> m = Manifest({}, [], [("a", 1)], durable_seq=9)
    >>> settle(m, [("a", 5, 300)]), m.ends, m.durable_seq, m.sealed
    ((9, 5), {'a': (5, 300)}, 5, True)
    """
    before = high_water(manifest)[0]
    manifest.ends = {name: (last, length) for name, last, length in kept}
    snapshots = [seq for _, seq in manifest.snapshots]
    manifest.durable_seq = max([last for _, last, _ in kept] + snapshots + [0])
    manifest.sealed = True
    return before, manifest.durable_seq


def high_water(manifest: Manifest) -> tuple[int, str]:
    """The highest seq the manifest's marks say the log reached, and which
    mark says so (for the message); ``(0, "")`` without marks.

    Runtime complexity: O(segments)
    """
    listed = {name for name, _ in manifest.segments}
    ends = [(last, name) for name, (last, _) in manifest.ends.items() if name in listed]
    last, name = max(ends, default=(0, ""))
    if manifest.sealed and last >= manifest.durable_seq and name == manifest.segments[-1][0]:
        return last, f"the board was closed cleanly at seq {last} (its seal in the MANIFEST)"
    if last >= manifest.durable_seq and last:
        return last, f"the log reached seq {last} when its segment {name} was closed"
    seq = manifest.durable_seq
    if not seq:
        return 0, ""
    return seq, f"the MANIFEST records seq {seq} as durable (a snapshot or checkpoint)"


def check_loaded(
    directory: str,
    manifest: Manifest,
    last_seq: int,
    active: tuple[str, int, int, int] | None,
    torn: TornTail | None,
) -> None:
    """Raise :class:`AcknowledgedLossError` when a log read to its end
    stops at ``last_seq`` (in segment ``active``: name, first seq, start,
    end, as a :class:`~rankengine.durable.recovery.Loaded` says), before
    the manifest's high-water mark.

    Runtime complexity: O(segments)
    """
    mark, why = high_water(manifest)
    if last_seq >= mark:
        return
    name, _, _, end = active or (manifest.segments[-1][0], 0, 0, 0)
    if torn is not None:
        why += f" (what follows seq {last_seq} is {torn.cut_bytes} bytes that do not read)"
    raise missing_after(os.path.join(directory, name), end, last_seq, mark, why)


def _write(board: Any, manifest: Manifest, step: str) -> None:
    """Write ``manifest`` (a copy of the board's) and take its new
    generation into the board's."""
    write_manifest(board.path, manifest, step=step)
    # (no lock: only the caller writes the manifest now, and readers of the
    # board's copy use its file lists, which this leaves as they are)
    live = board._manifest
    live.durable_seq, live.sealed, live.ends = manifest.durable_seq, manifest.sealed, manifest.ends
    live.generation, live.written_ms = manifest.generation, manifest.written_ms


def seal(board: Any) -> None:
    """The seal of a clean close: the last segment's last seq and length
    and the high-water mark, in one manifest write.  The caller fsynced
    the log and holds the sync lock; no write or compaction can start.
    Nothing is written when the manifest says so already (a board closed
    without writes since its last seal).  Crash points:
    ``seal_manifest_rename``, ``after_seal_manifest``.

    Runtime complexity: one manifest write (two fsyncs)
    """
    manifest = board._manifest
    name = manifest.segments[-1][0]
    end = (board._seq, board._writer.end)
    if manifest.sealed and manifest.ends.get(name) == end and manifest.durable_seq == end[0]:
        return
    sealed = dataclasses.replace(manifest, sealed=True, ends=dict(manifest.ends))
    record_end(sealed, name, *end)
    _write(board, sealed, "seal_manifest")


class Checkpoints:
    """The ``everysec`` board's periodic high-water mark.

    :meth:`maybe` runs on the fsync thread after its fsync: once
    :attr:`interval` seconds have passed and the board was written to since
    the last mark, it fsyncs the log (little is left to write back) and
    records the seq that fsync covered in the manifest.  It skips a round
    when a compaction holds the manifest (which records a mark itself).
    A failure is a warning: the log is fine, only the mark is older.
    Crash points: ``checkpoint_manifest_rename``, ``after_checkpoint_manifest``.
    """

    def __init__(self, interval: float = CHECKPOINT_INTERVAL_S) -> None:
        self.interval = interval
        self.last = time.monotonic()

    def maybe(self, board: Any) -> None:
        """Record a high-water mark of ``board`` if one is due.

        Runtime complexity: O(1), or one fsync and one manifest write when due
        """
        now = time.monotonic()
        if now - self.last < self.interval or board._seq <= board._manifest.durable_seq:
            return
        if not board._compact_lock.acquire(blocking=False):
            return
        try:
            if board._closed or board._failure is not None:
                return
            with board._sync_lock:
                seq = board._seq  # (read before the fsync: it covers every record up to it)
                try:
                    board._writer.sync()
                except OSError as exc:
                    board._failure = exc  # as the flusher's own failed fsync does
                    raise
            self.last = now
            manifest = dataclasses.replace(board._manifest, durable_seq=seq)
            _write(board, manifest, "checkpoint_manifest")
        except OSError as exc:
            warnings.warn(
                f"{board.path}: a high-water checkpoint failed ({exc}); the log is intact, "
                "its mark is older",
                RuntimeWarning,
                stacklevel=1,
            )
        finally:
            board._compact_lock.release()
