"""Replay on several cores: a segment split at frame boundaries, each part
folded by its own process, the folds composed in order.

Invariant: the board a split replay makes is exactly the one the
one-process fold (:mod:`rankengine.durable.fold`) makes from the same
files -- the same members, scores, tie clocks, metadata, clock and last
seq, and the same error or torn tail at the same offset -- because every
record is still checked and folded by the same code, in seq order, and
anything a helper process did not take is read again by the parent::

    segment  | header | part 0 .......... | part 1 .......... | part 2 ...... |
    process    parent folds it             child 1 folds it    child 2 folds it
                 (add_batch, as ever)        (one-PUT records only; stops at
                                              anything else, or at damage)
    then       parent: part 0's fold + child 1's puts + child 2's puts, in
               order; from where a child stopped short, the parent reads on
               itself (so it meets the same record, error or torn tail as
               a one-process replay would)

Why the parts compose
---------------------
A record holds results (a ``PUT`` carries the member's absolute score and
tie clock), so a run of one-``PUT`` records only sets each member's last
``(score, clock)`` and raises the clock: after any state, applying the
later run's last puts over the earlier state is the same as replaying the
run (:meth:`~rankengine.durable.fold.Fold.merge_puts`).  A child takes
only such records -- the fold's fast path, with its checks -- and stops at
the first other one (a ``DEL``, a ``META``, a ``set_many``, a bad record);
the parent folds from there on.  No record of this log format spans
members (see :mod:`rankengine.durable.fold`), so there is no other barrier.

Where a part starts
-------------------
Frames have no markers, so a split point is a guess: the first offset at
or after ``size * i / procs`` where two frames in a row have valid
checksums (a false match needs two 64-bit checksum pairs to agree by
chance).  A guess is never trusted: the parent folds up to it and uses the
child's fold only when its own frames end exactly there and the child's
first record continues its seq; otherwise it discards the children's work
and reads on itself.

When it forks
-------------
Only with ``os.fork`` (POSIX), only while the process runs one thread
(forking a process whose other threads hold locks can deadlock the child;
Python warns of it), only for segments of at least
:data:`PARALLEL_MIN_BYTES`, only for boards whose records take the fold's
fast path (scalar scores, ties by time) and only for whole segments after
the snapshot, with no ``until_seq`` / ``until_ms``.  The environment
variable :data:`PROCS_ENV` sets the number of processes (``1``: never
fork); the default is the CPUs this process may run on that the load
average says are free (:func:`replay_procs`), at most :data:`MAX_PROCS`:
on a busy machine a split does not shorten the wall time (the kernel
shares the CPU among sessions, and a child takes its time from its
parent's share) and adds work.  A child opens its own file, sends its fold as three
msgpack columns through a pipe and leaves with ``os._exit`` (no cleanup
of the parent's state runs twice); a child that fails or is slow to start
costs only speed.

Runtime complexity: O(records / procs) wall time for the parts on idle
cores, plus O(members) per child to send and merge its fold.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import threading
import zlib
from collections.abc import Callable, Generator
from typing import Any, Final

import msgpack

from rankengine.durable.eventlog import SegmentReader
from rankengine.durable.fold import Fold
from rankengine.durable.records import FRAME, FRAME_HEADER_BYTES, MAX_FRAME_BYTES

__all__ = [
    "BUSY_LOAD",
    "MAX_PROCS",
    "PARALLEL_MIN_BYTES",
    "PROCS_ENV",
    "find_boundary",
    "replay_procs",
    "split_batches",
]

#: Environment variable: how many processes a replay may use (``1``: one,
#: never fork).  Unset: the CPUs this process may run on, up to MAX_PROCS.
PROCS_ENV: Final = "RANKENGINE_REPLAY_PROCS"
#: At most this many processes per segment: each child's fold costs the
#: parent a decode and a merge of up to every member, so more parts than
#: cores only add that.
MAX_PROCS: Final = 8
#: A segment with fewer bytes of records than this replays in one process.
#: Measured (CPU seconds, min of 9, shared 2-core machine at load ~8,
#: increments over a quarter as many players): at 4 MiB (86,000 records)
#: a split takes the parent from 0.129 s to 0.095 s, but the child's 0.089 s
#: (its fork, its own fold's dict, its exit) make 0.184 s in all, 40% more
#: work; at 19.6 MB (400,000 records, ``bench/replay.py``) the total is
#: 0-12% more than one process spends and the parent's share falls by
#: ~31-38%.  16 MiB (~340,000 such records) keeps the split to logs where
#: the work grows little.
PARALLEL_MIN_BYTES: Final = 16 << 20
#: How much load beyond the replaying process's own counts a core as
#: taken.  Measured (``bench/replay.py --procs 2``, 2 cores shared with
#: other work): a split's wall time was 0.87-1.58x one process's across
#: four runs at load average 5-7, and it added 0-12% CPU in all -- the
#: kernel shares the CPU among sessions, so a child takes its time from its
#: own parent's share -- so a machine with no idle core replays in one
#: process.  (With
#: :data:`PROCS_ENV` set, the count is the caller's, whatever the load.)
BUSY_LOAD: Final = 0.5
#: A child sends a run of one-PUT records only when it holds at least this
#: many: a shorter one costs the parent about as much to merge (a read of
#: the frames around it, a dict update) as to fold.
MIN_RUN: Final = 64
#: The descriptor a child writes its fold to (0-2 are closed in it too:
#: it prints nothing and reads no input).
_CHILD_FD: Final = 3
#: How far past a guessed split point :func:`find_boundary` looks: a
#: boundary of one-change records (~50 bytes) is found within ~100 bytes;
#: inside a record longer than this (a ``set_many`` of thousands of
#: members) it gives up and that part is not split.  Most offsets tried
#: are refused by their length field alone: 256 KiB of random bytes took
#: 0.064 s of CPU to search (a shared machine at load ~7).
_SEARCH_BYTES: Final = 1 << 18


def replay_procs() -> int:
    """How many processes a replay may use now: 1 without ``os.fork`` or
    while other threads run; else :data:`PROCS_ENV` when set; else the
    CPUs free by the load average (the CPUs available less the 1-minute
    load beyond this process, a core counted taken from :data:`BUSY_LOAD`
    on: 1 on a busy machine, where a split only adds work), at most
    :data:`MAX_PROCS`.

    Runtime complexity: O(1)
    """
    if not hasattr(os, "fork") or threading.active_count() > 1:
        return 1
    asked = os.environ.get(PROCS_ENV, "").strip()
    if asked:
        try:
            return max(1, min(int(asked), MAX_PROCS))
        except ValueError:
            return 1
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    try:
        load = os.getloadavg()[0]
    except OSError:  # (not known here: assume the cores are free)
        load = 0.0
    # (the replaying process itself is one of the tasks the load counts; a
    # core with BUSY_LOAD or more of the other load on it is taken)
    free = (cpus or 1) - max(load - 1.0, 0.0)
    return max(1, min(math.ceil(free - BUSY_LOAD), MAX_PROCS))


def _frame_ok(buf: bytes, pos: int) -> int:
    """The offset just past a frame with valid checksums at ``buf[pos]``
    that lies whole in ``buf``, or -1."""
    if len(buf) - pos < FRAME_HEADER_BYTES:
        return -1
    length, length_crc, payload_crc = FRAME.unpack_from(buf, pos)
    end: int = pos + FRAME_HEADER_BYTES + length
    if (
        length > MAX_FRAME_BYTES
        or end > len(buf)
        or zlib.crc32(buf[pos : pos + 4]) != length_crc
        or zlib.crc32(buf[pos + FRAME_HEADER_BYTES : end]) != payload_crc
    ):
        return -1
    return end


def find_boundary(path: str, near: int, size: int) -> int | None:
    """The first offset at or after ``near`` where two whole frames in a row
    have valid checksums (a guess at a frame boundary: the caller checks
    it), or None within :data:`_SEARCH_BYTES` and ``size``.

    >>> import tempfile, os
    >>> from rankengine.durable.eventlog import SegmentWriter
    >>> from rankengine.durable.records import encode_record, frame
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "log.seg")
    ...     w = SegmentWriter.create(path, {"first_seq": 1})
    ...     for seq in range(1, 4):
    ...         w.append(frame(encode_record(seq, 5, [(0, "ann", seq, seq)])))
    ...     w.close()
    ...     with SegmentReader(path) as r:
    ...         ends = [r.end for _ in r.batches()]
    ...         first = r.start + len(frame(encode_record(1, 5, [(0, "ann", 1, 1)])))
    ...         find_boundary(path, r.start + 1, r.size) == first
    True

    Runtime complexity: O(bytes searched)
    """
    with open(path, "rb") as f:
        f.seek(near)
        buf = f.read(min(_SEARCH_BYTES, max(0, size - near)))
    for pos in range(len(buf)):
        end = _frame_ok(buf, pos)
        if end >= 0 and _frame_ok(buf, end) >= 0:
            return near + pos
    return None


def _reap(pid: int) -> int | None:
    """Wait for child ``pid``; its wait status, or None when the process
    reaps its children itself (``SIGCHLD`` ignored): then only the data it
    sent, which must decode whole, says it finished."""
    try:
        return os.waitpid(pid, 0)[1]
    except ChildProcessError:
        return None


class _Part:
    """A child folding the frames from ``start`` to ``stop``."""

    def __init__(self, start: int, stop: int, pid: int, fd: int) -> None:
        self.start, self.stop, self.pid, self.fd = start, stop, pid, fd

    def result(self) -> list[Any] | None:
        """The child's fold, once it is done (None if it failed)."""
        chunks = []
        try:
            while chunk := os.read(self.fd, 1 << 20):
                chunks.append(chunk)
        finally:
            os.close(self.fd)
            self.fd = -1
            status = _reap(self.pid)
            self.pid = 0
        if status not in {0, None}:
            return None
        try:
            done: list[Any] = msgpack.unpackb(b"".join(chunks))
        except Exception:  # msgpack raises several types: the parent reads on
            return None
        return done

    def end(self) -> None:
        """Stop and reap the child (it is no longer needed)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if self.pid:
            with contextlib.suppress(ProcessLookupError):  # (already gone)
                os.kill(self.pid, signal.SIGKILL)
            _reap(self.pid)
            self.pid = 0


def _pack_run(mine: Fold, start: int, end: int) -> list[Any]:
    """One run of a child's fold, as the parent merges it: ``[start, end,
    first_seq, last_seq, last_ms, clock, records, members, scores,
    clocks]`` (the offsets of its first frame and just past its last)."""
    puts = mine.puts
    scores, clocks = zip(*puts.values(), strict=True)
    first = mine.last_seq - mine.records + 1
    return [
        *(start, end, first, mine.last_seq, mine.last_ms, mine.clock, mine.records),
        *(list(puts), list(scores), list(clocks)),
    ]


def _max_fd() -> int:
    """One past the largest descriptor this process may have."""
    try:
        return max(int(os.sysconf("SC_OPEN_MAX")), _CHILD_FD + 1)
    except (ValueError, OSError):
        return 1 << 16


def _fold_part(fold: Fold, path: str, start: int, stop: int, parent: int) -> bytes:
    """In a child: fold the runs of one-PUT records from ``start`` up to
    ``stop`` and pack them for the parent (:func:`_pack_run`, in order).

    A run ends at a record the fold's fast path does not take (a DEL, a
    META, a ``set_many``, a bad record: the parent folds those itself) and
    at the end of the part or at damage; the next starts after it, from the
    seq its first record says (the parent checks it continues).  Runs
    shorter than :data:`MIN_RUN` records are left to the parent.  It gives
    up (raises) once ``parent`` is gone."""
    runs: list[list[Any]] = []
    mine: Fold | None = None
    run_start = start
    with SegmentReader(path) as reader:  # (its own file offset, not the parent's)
        for batch in reader.frames_between(start, stop):
            if os.getppid() != parent:
                raise ChildProcessError("the replaying process is gone")
            i = 0
            while i < len(batch):
                if mine is None:
                    head = msgpack.unpackb(batch[i][1])
                    if type(head) is not list or not head or type(head[0]) is not int:
                        i += 1
                        continue
                    mine = Fold(fold.board)
                    mine.last_seq = head[0] - 1
                    run_start = batch[i][0]
                taken = mine.add_puts(batch, i)
                if taken == len(batch):
                    break
                if mine.records >= MIN_RUN:
                    runs.append(_pack_run(mine, run_start, batch[taken][0]))
                mine, i = None, taken + 1
        if mine is not None and mine.records >= MIN_RUN:
            runs.append(_pack_run(mine, run_start, reader.end))
    packed: bytes = msgpack.packb(runs)
    return packed


def _fork_part(fold: Fold, path: str, start: int, stop: int) -> _Part:
    """Start a child folding ``start`` to ``stop`` (see :func:`_fold_part`)."""
    rfd, wfd = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the caller's code
        code = 1
        try:
            # Only the pipe is kept: a copy of the directory lock's
            # descriptor would keep the directory locked after a killed
            # parent until this child ends (flock locks belong to the open
            # file, which the copy shares); none of the others is its own.
            os.dup2(wfd, _CHILD_FD)
            os.closerange(_CHILD_FD + 1, _max_fd())
            os.closerange(0, _CHILD_FD)
            wfd = _CHILD_FD
            data = memoryview(_fold_part(fold, path, start, stop, parent))
            while data:
                data = data[os.write(wfd, data) :]
            code = 0
        finally:
            os._exit(code)
    os.close(wfd)
    return _Part(start, stop, pid, rfd)


def split_batches(
    reader: SegmentReader,
    fold: Fold,
    procs: int,
    progress: Callable[[int], None] | None = None,
) -> Generator[list[tuple[int, bytes]], None, None]:
    """The frames of ``reader`` for ``fold`` to :meth:`~Fold.add_batch`, as
    :meth:`SegmentReader.batches` yields them, with parts of the segment
    folded by ``procs - 1`` child processes and merged into ``fold`` in
    between (the caller needs no other change; see the module docstring).
    ``fold`` must take the fast path and read the whole segment, every
    record after its snapshot, with no window.

    Runtime complexity: O(bytes read)
    """
    size = reader.size
    span = size - reader.start
    starts: list[int] = []
    if procs > 1 and fold.fast and span >= PARALLEL_MIN_BYTES:
        for i in range(1, procs):
            at = find_boundary(reader.path, reader.start + span * i // procs, size)
            if at is not None and at > (starts[-1] if starts else reader.start):
                starts.append(at)
    parts: list[_Part] = []
    try:
        for start, stop in zip(starts, [*starts[1:], size][: len(starts)], strict=True):
            parts.append(_fork_part(fold, reader.path, start, stop))
        at = reader.start
        trusted = True  # (every offset so far is a frame boundary and seqs continue)
        for part in parts:
            # the parent's part, or what the child before left (read before
            # waiting for this child: the two run side by side), then the
            # child's runs, each after the records before it that it left
            yield from reader.frames_between(at, part.start)
            at = reader.end
            if at != part.start:
                break  # (not a boundary, or damage: read on from here)
            for run in part.result() or []:
                yield from reader.frames_between(at, run[0])
                at = reader.end
                if at != run[0]:
                    trusted = False  # (damage: read on from here)
                    break
                _, end, first, last_seq, last_ms, clock, records, members, scores, clocks = run
                if not fold.merge_puts(
                    members,
                    scores,
                    clocks,
                    first_seq=first,
                    last_seq=last_seq,
                    last_ms=last_ms,
                    clock=clock,
                    records=records,
                ):
                    trusted = False  # (the parent reads the run and meets what is wrong)
                    break
                at = end
                if progress is not None:
                    progress(at)
            if not trusted:
                break
    finally:
        for part in parts:
            part.end()
    yield from reader.batches(progress, start=at)
