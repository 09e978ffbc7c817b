"""Log rotation: the switch to a new segment under the board's lock, its
fsyncs after it is let go.

A compaction ends the active segment at the snapshot's seq ``s`` and starts
segment ``s + 1``.  Only the *switch* needs the board's lock (no write may
land in the old segment after ``s``, and the next one must land in the new
one); the fsyncs that make the rotation durable do not, and on a loaded disk
they took 10-89 ms of wall time under the lock (measured at N = 1,000,000
with ``bench/snapshot_holds.py``).  So a rotation is two halves::

    under the board lock   (O(1): one file created, its header written)
      1. create log-<s+1>.seg, header written, no fsync
      2. the writer becomes the new segment; the in-memory manifest lists it
    after the lock is let go   (writes go on, into the new segment)
      3. the old segment: reserved zeros given back, fsynced, closed
         -> every record up to s is durable (waiters up to s are released)
      4. the new segment and the directory fsynced
      5. the manifest naming the new segment (and the old one's end) written
         -> records after s may be acknowledged from here on

Crash safety, step by step (the crash points of ``docs/durability.md``):

* Until step 5 the manifest on disk does not name the new segment, yet
  writes have gone into it.  An open *adopts* such a segment: one the
  manifest does not name, numbered after its last segment, whose header
  reads and whose first record follows the last record of the log exactly
  (:func:`~rankengine.durable.recovery.load_board`).  So a process kill
  anywhere loses nothing (every record is in the page cache).
* A power cut can lose the old segment's tail while the OS already wrote
  some of the new segment back: the new segment then does not follow the
  log, is not adopted, and the next open sets it aside (as it does any
  unnamed segment that holds records).  Nothing acknowledged is in it:
* under ``fsync="always"`` a write after ``s`` is acknowledged only once
  the whole rotation is done (:func:`sync_active` waits for it), and one at
  or before ``s`` once step 3 is.  A failure at any step fails the board
  (as any failed fsync does): it refuses further writes, and the next open
  keeps what it can prove.

Runtime complexity: O(1) under the board's lock; four fsyncs and a
manifest write (two more) after it.

>>> import tempfile
>>> from rankengine.durable.board import DurableLeaderboard
>>> with tempfile.TemporaryDirectory() as tmp:
...     with DurableLeaderboard(tmp, fsync="always") as board:
...         _ = board.set("ann", 1)
...         board.compact()
...         _ = board.set("bob", 2)
...         [name for name, _ in board._manifest.segments]
1
['log-00000000000000000002.seg']
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
import time
from collections.abc import Callable
from typing import Any, Final

from rankengine.durable.manifest import segment_name, write_manifest
from rankengine.durable.marks import record_end
from rankengine.durable.records import LogError, crash_point
from rankengine.durable.snapshot import fsync_dir

__all__ = [
    "ROTATION_STEPS",
    "Rotation",
    "finish_rotation",
    "hooks",
    "switch_segment",
    "sync_active",
]

#: The named steps of a rotation after the switch, in order: a crash point
#: each (``RANKENGINE_CRASH_AT``), and where :attr:`Rotation.hook` runs.
ROTATION_STEPS: Final = (
    "after_segment_create",
    "after_old_segment_sync",
    "after_new_segment_sync",
)


#: Called as ``hook(step, rotation)`` at each of :data:`ROTATION_STEPS`,
#: before its crash point: tests hold a rotation at a step with one (or let
#: writes land in the new segment before a kill).  Empty in production.
hooks: list[Callable[[str, Rotation], None]] = []


class Rotation:
    """One rotation between its switch and the manifest naming the new
    segment (see the module docstring).

    :param old: the writer of the segment that ends at ``seq``
    :param new: the writer of segment ``seq + 1``
    :param seq: the last record of the old segment
    :param old_name: the old segment's file name
    """

    def __init__(self, old: Any, new: Any, seq: int, old_name: str) -> None:
        self.old, self.new, self.seq, self.old_name = old, new, seq, old_name
        self.name = segment_name(seq + 1)
        #: the error that stopped the rotation (the board is failed then)
        self.error: BaseException | None = None
        #: True once the new segment and its name are fsynced (step 4): a
        #: manifest written from then on may name it
        self.ready = False
        self._done = threading.Event()

    def step(self, name: str) -> None:
        """Reach step ``name``: :data:`hooks`, then the crash point."""
        for hook in hooks:
            hook(name, self)
        crash_point(name)

    def settle(self, error: BaseException | None = None) -> None:
        """End the rotation: durable, or stopped by ``error``; wakes
        every :meth:`wait`.

        Runtime complexity: O(waiters)
        """
        if error is not None:
            self.error = error
        self._done.set()

    def fail(self, error: BaseException, sync_lock: contextlib.AbstractContextManager[Any]) -> None:
        """End the rotation stopped by ``error``: the old segment closed
        under ``sync_lock`` (a flusher may hold it), then :meth:`settle`.
        The owner keeps the rotation set, so that its syncs raise from now
        on, and fails itself.

        Runtime complexity: O(waiters)
        """
        with sync_lock, contextlib.suppress(Exception):
            self.old.close()
        self.settle(error)

    def wait(self) -> None:
        """Return once the rotation is durable; raise
        :class:`~rankengine.durable.records.LogError` if it failed.

        Runtime complexity: the wait for the rotation's fsyncs
        """
        self._done.wait()
        if self.error is not None:
            raise LogError(
                f"the log rotation to {self.name} failed ({self.error}); writes after it "
                "are not acknowledged"
            ) from self.error


def switch_segment(board: Any, seq: int, created_ms: int) -> Rotation:
    """Start segment ``seq + 1`` and make it the board's writer (the caller
    holds the board's lock, and the compaction lock; ``seq`` is the last
    record logged).  Its header is written, not fsynced: that is
    :func:`finish_rotation`'s, after the lock is let go.

    A failure to create the file raises with nothing changed.

    Runtime complexity: O(1): one file created and written
    """
    manifest = board._manifest
    name = segment_name(seq + 1)
    new = board._writer_class.create(
        os.path.join(board.path, name),
        {"first_seq": seq + 1, "created_ms": created_ms, "config": manifest.config},
        sync=False,
    )
    rotation = Rotation(board._writer, new, seq, segment_name(board._active_first))
    # The rotation is set before the writer changes: a thread that sees the
    # new writer sees the rotation too (see sync_active).
    board._rotation = rotation
    board._writer = new
    board._active_first = seq + 1
    # events() reads the new segment at once; the file names it at step 5
    manifest.segments.append((name, seq + 1))
    return rotation


def finish_rotation(board: Any, rotation: Rotation) -> None:
    """Make ``rotation`` durable: steps 3-5 of the module docstring, without
    the board's lock (the caller holds the compaction lock, so that nothing
    else writes the manifest meanwhile).  A failure fails the board.

    Runtime complexity: four fsyncs and a manifest write
    """
    directory, manifest = board.path, board._manifest
    try:
        rotation.step("after_segment_create")
        _sync_old(board, rotation)
        board._synced(rotation.seq)
        rotation.step("after_old_segment_sync")
        rotation.new.sync()  # (its header and the records so far)
        fsync_dir(directory)  # (its name)
        rotation.step("after_new_segment_sync")
        written = dataclasses.replace(
            manifest, segments=list(manifest.segments), ends=dict(manifest.ends)
        )
        record_end(written, rotation.old_name, rotation.seq, rotation.old.end)
        write_manifest(directory, written, step="rotate_manifest")
        with board._lock:
            manifest.ends, manifest.durable_seq = written.ends, written.durable_seq
            manifest.generation, manifest.written_ms = written.generation, written.written_ms
    except BaseException as exc:
        if board._failure is None:
            board._failure = exc
        rotation.fail(exc, board._sync_lock)  # (board._rotation stays set)
        raise
    board._rotation = None
    rotation.settle()


def _sync_old(board: Any, rotation: Rotation) -> None:
    """Step 3: the old segment trimmed, fsynced and closed, under the sync
    lock (a flusher may be syncing it).  Under ``"everysec"`` it is timed
    like the flusher's fsync: writes wait for it once it stalls past
    ``FSYNC_STALL_S``, so the window a crash can lose stays bounded.

    Runtime complexity: one fsync
    """
    timed = board._flusher is not None
    with board._sync_lock:
        if timed:
            board._sync_started = time.monotonic()
        try:
            # zeros reserved ahead of the records are given back first: an
            # open cuts them only from the last segment (and the fsync then
            # makes the new length durable too)
            rotation.old.trim()
            rotation.old.sync()
        finally:
            if timed:
                with board._sync_cond:
                    board._sync_started = None
                    board._sync_cond.notify_all()
        rotation.old.close()


def sync_active(board: Any) -> None:
    """fsync the log so that every record appended before the call is
    durable *and* reachable by an open when it returns: during a rotation,
    once it is done (see the module docstring).  Raises the fsync's error,
    or :class:`~rankengine.durable.records.LogError` if a rotation failed.

    The switch sets the rotation before the writer, and this reads them in
    the other order, under the sync lock (which the old segment's close
    takes): a caller that finds the old writer syncs it (every record it
    must cover is there), one that finds the new writer waits for the
    rotation first.

    Runtime complexity: one fsync, plus the wait for a rotation
    """
    while True:
        with board._sync_lock:
            writer = board._writer
            rotation = board._rotation
            if rotation is None or writer is not rotation.new:
                board._dirty = False
                writer.sync()
                return
        rotation.wait()
