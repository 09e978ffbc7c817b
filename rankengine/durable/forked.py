"""A snapshot written by a forked child, as Redis's BGSAVE writes one.

The sliced export (:mod:`rankengine.durable.sliced`) keeps each lock hold
short, but its CPU (seconds at N = 1,000,000) runs in the serving process
and competes with the serving thread for the interpreter lock.  With
``snapshot_mode="fork"`` a compaction instead forks, under the board's lock,
at the instant the snapshot is of (the log is rotated in the same hold); the
child writes the snapshot from its copy-on-write image of the board, on
another core, while the parent goes on serving.  The parent waits for the
child from the compacting thread (the background compactor, or the caller
of ``compact()``) and only then swaps the manifest, as the sliced path does.

The child touches nothing but the snapshot file: it takes no lock another
thread may hold (only the forking thread exists in it), logs nothing, runs
no flusher, closes its copy of the directory lock's descriptor (so that a
killed parent's directory can be opened again while the child still runs)
and leaves with ``os._exit`` (no atexit handlers, no buffered output written
twice).  It gives up when its parent is gone.  A child that fails or is
killed leaves the old snapshot in force: the parent raises
:class:`ForkedSnapshotError`, and the next compaction retries.

Where ``os.fork`` is missing (Windows) ``snapshot_mode="fork"`` means
slices: the option names how a snapshot is made where it can be, and the
file written is the same either way.

Runtime complexity: O(1) under the lock plus the fork itself (copying the
page tables: 45 ms at an RSS of 275 MB on a loaded 2-core VM, N = 10^6);
O(N) in the child.

>>> SNAPSHOT_MODES
('auto', 'slices', 'fork', 'replay')
>>> check_snapshot_mode("bgsave")
Traceback (most recent call last):
...
ValueError: snapshot_mode must be one of ('auto', 'slices', 'fork', 'replay'), not 'bgsave'
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import os
import signal
import warnings
from typing import Any, Final, Literal, TypeAlias

from rankengine.board.core import BoardCore
from rankengine.durable.snapshot import write_snapshot_columns

__all__ = [
    "CHILD_FAILED",
    "CHILD_NICE",
    "FORK_AVAILABLE",
    "SNAPSHOT_MODES",
    "ForkedChild",
    "ForkedSnapshotError",
    "SnapshotMode",
    "check_snapshot_mode",
    "fork_snapshot",
    "wait_snapshot",
]

SnapshotMode: TypeAlias = Literal["auto", "slices", "fork", "replay"]
#: How a compaction makes its snapshot: read in slices between writes in
#: this process, written by a forked child, or built by a fresh process
#: replaying the log (:mod:`rankengine.durable.replayed`); "auto" (the
#: default) replays for a large board, slices a small one
#: (:func:`~rankengine.durable.replayed.snapshot_kind`).
SNAPSHOT_MODES: Final = ("auto", "slices", "fork", "replay")
#: Whether this platform can fork; without it "fork" falls back to slices.
FORK_AVAILABLE: Final = hasattr(os, "fork")
#: The child's exit code when writing the snapshot failed (0: written).
CHILD_FAILED: Final = 70  # (EX_SOFTWARE)
#: The child's exit code when its parent died before the snapshot was done.
CHILD_ORPHANED: Final = 71
#: How much the child lowers its CPU priority: it is background work, and
#: the kernel may share one CPU budget between it and the serving parent
#: (the same autogroup or cgroup), where a sliced snapshot's thread gives
#: way to the serving thread.  An idle core still runs it at full speed.
CHILD_NICE: Final = 10


class ForkedSnapshotError(RuntimeError):
    """The forked child did not write the snapshot (it failed or was killed);
    the previous snapshot stays in force."""


def check_snapshot_mode(mode: object) -> None:
    """Refuse a ``snapshot_mode`` that is not one of :data:`SNAPSHOT_MODES`.

    Runtime complexity: O(1)
    """
    if mode not in SNAPSHOT_MODES:
        raise ValueError(f"snapshot_mode must be one of {SNAPSHOT_MODES}, not {mode!r}")


@dataclasses.dataclass(frozen=True)
class ForkedChild:
    """A child forked by :func:`fork_snapshot`, for :func:`wait_snapshot`."""

    pid: int
    #: whether the parent unfreezes the collector's objects when it exits
    #: (False when the program had frozen objects itself before the fork)
    unfreeze: bool = False


def fork_snapshot(board: BoardCore, path: str, header: dict[str, Any], lock_fd: int) -> ForkedChild:
    """Fork a child that writes ``board``'s snapshot to ``path`` and exits.
    Call it holding the board's lock, the log switched to the segment after
    ``header["seq"]``: the child's image is the board at that instant (the
    manifest names the file only once the child and the rotation are done).

    ``gc.freeze()`` moves every object to the permanent generation just
    before the fork, and the parent unfreezes them once the child has
    exited (:func:`wait_snapshot`): a collection in the child, or in the
    parent while the child runs, would otherwise write to the header of
    every tracked object, copying every page of the heap (Instagram's reason
    for adding ``gc.freeze``).  A program that had frozen objects itself
    (the collector advice of ``docs/performance.md``) keeps them frozen: no
    unfreeze then.  The child also turns the collector off: it is
    short-lived and makes few cycles.

    Runtime complexity: the fork (page tables: O(resident memory))
    """
    parent = os.getpid()
    unfreeze = gc.get_freeze_count() == 0
    gc.freeze()
    try:
        with warnings.catch_warnings():
            # (Python 3.12+ warns that forking a threaded process may
            # deadlock the child; this child takes no lock, see the module)
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # pragma: no cover -- the child (its exit code is tested)
            _child(board, path, header, lock_fd, parent)
    except BaseException:
        if unfreeze:
            gc.unfreeze()
        raise
    return ForkedChild(pid, unfreeze)


def _child(
    board: BoardCore, path: str, header: dict[str, Any], lock_fd: int, parent: int
) -> None:  # pragma: no cover -- runs in the forked child
    code = CHILD_FAILED
    try:
        gc.disable()
        with contextlib.suppress(OSError):
            os.nice(CHILD_NICE)
        if lock_fd >= 0:
            # the parent's descriptor keeps the lock; this copy would keep it
            # after a killed parent, and block the directory's next open
            os.close(lock_fd)

        def orphaned() -> None:
            if os.getppid() != parent:
                os._exit(CHILD_ORPHANED)

        columns = board._export_columns()
        write_snapshot_columns(path, header, columns, pause=orphaned)
        code = 0
    except BaseException:
        pass  # (the exit code says it failed)
    finally:
        os._exit(code)


def wait_snapshot(child: ForkedChild, path: str) -> int:
    """Wait for the ``child`` that writes ``path``; return the file's size
    once it exited with 0, or raise :class:`ForkedSnapshotError` (after
    removing what it left half-written).

    Runtime complexity: the child's run
    """
    try:
        _, status = os.waitpid(child.pid, 0)
    finally:
        if child.unfreeze:
            gc.unfreeze()
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
        return os.path.getsize(path)
    with contextlib.suppress(OSError):
        os.remove(path + ".tmp")
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            how = f"was killed by {signal.Signals(sig).name}"
        except ValueError:
            how = f"was killed by signal {sig}"
    else:
        how = f"exited with code {os.WEXITSTATUS(status)}"
    raise ForkedSnapshotError(
        f"{path}: the forked child writing the snapshot {how}; the previous snapshot stays in force"
    )
