"""Reading a board directory's events back: iterating them
(:func:`iter_events`, and :meth:`DurableLeaderboard.events
<rankengine.durable.board.DurableLeaderboard.events>`) and rebuilding an
in-memory board as the log says it was (:func:`rebuild`, with
point-in-time recovery).

Nothing here writes: the segments are opened read-only at the call (so a
later compaction does not cut an iteration short) and a torn tail is
reported with a :class:`~rankengine.durable.records.TornTailWarning` and
left in place.

>>> import tempfile
>>> from rankengine.durable.board import DurableLeaderboard
>>> with tempfile.TemporaryDirectory() as tmp:
...     with DurableLeaderboard(tmp, fsync="never") as board:
...         board.set("ann", 5)
...         board.incr("ann", 2)
...     print([event.seq for event in iter_events(tmp)], rebuild(tmp, until_seq=1).items())
True
7
[1, 2] [('ann', 5)]
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Generator, Iterator
from typing import Any

from rankengine.board.checks import check_flag
from rankengine.board.leaderboard import Leaderboard
from rankengine.durable.eventlog import SegmentReader
from rankengine.durable.manifest import Manifest, read_manifest
from rankengine.durable.marks import check_loaded
from rankengine.durable.opening import resolve_config
from rankengine.durable.records import Event, LogError, RecoveryWarning, TornTailWarning
from rankengine.durable.recovery import load_board

__all__ = [
    "EventReader",
    "iter_events",
    "open_readers",
    "rebuild",
]


def open_readers(
    directory: str, manifest: Manifest, start: int, stop: int | None
) -> list[SegmentReader]:
    if isinstance(start, bool) or not isinstance(start, int) or start < 1:
        raise ValueError(f"start must be a seq of 1 or more, not {start!r}")
    if stop is not None and (isinstance(stop, bool) or not isinstance(stop, int) or stop < 1):
        raise ValueError(f"stop must be a seq of 1 or more, or None, not {stop!r}")
    segments = manifest.segments
    if not segments:
        return []
    if start < segments[0][1]:
        raise LogError(
            f"{directory}: events before seq {segments[0][1]} were compacted away "
            "(open with retain_log=True to keep them)"
        )
    first = max(0, manifest.chain_start(start - 1))
    readers: list[SegmentReader] = []
    try:
        for name, _ in segments[first:]:
            readers.append(SegmentReader(os.path.join(directory, name)))
    except BaseException:
        for reader in readers:
            reader.close()
        raise
    return readers


class EventReader(Iterator[Event]):
    """The events of segments opened at the call: the end of the events,
    :meth:`close` or dropping it closes the files, also before the first
    event was read (a generator's own ``close()`` runs nothing until it has
    started, which left the files to the garbage collector)."""

    def __init__(self, readers: list[SegmentReader], start: int, stop: int | None) -> None:
        self._readers = readers
        self._events = _iterate(readers, start, stop)

    def __next__(self) -> Event:
        return next(self._events)

    def close(self) -> None:
        """Stop the iteration and close the files (idempotent).

        Runtime complexity: O(number of segments)
        """
        self._events.close()
        for reader in self._readers:
            reader.close()

    def __del__(self) -> None:
        self.close()


def _iterate(
    readers: list[SegmentReader], start: int, stop: int | None
) -> Generator[Event, None, None]:
    try:
        for reader in readers:
            for event in reader.events():
                if event.seq < start:
                    continue
                if stop is not None and event.seq >= stop:
                    return
                yield event
            if reader.torn is not None:
                warnings.warn(
                    f"{reader.torn.path}: log ends in a torn tail at offset {reader.torn.offset}",
                    TornTailWarning,
                    stacklevel=3,  # (the caller of EventReader.__next__)
                )
    finally:
        for reader in readers:
            reader.close()


def iter_events(
    path: str | os.PathLike[str], start: int = 1, stop: int | None = None
) -> Iterator[Event]:
    """Events with ``start <= seq < stop`` from a board directory (read only).

    Runtime complexity: O(size of the segments read)
    """
    directory = os.fspath(path)
    return EventReader(open_readers(directory, read_manifest(directory), start, stop), start, stop)


def _check_point_in_time(until_seq: object, until_ms: object) -> None:
    """Refuse an ``until_seq`` that is not a sequence number (an int >= 0:
    0 is before the first record) and an ``until_ms`` that is not a time in
    milliseconds (an int or a float, not NaN).

    Runtime complexity: O(1)

    >>> _check_point_in_time(0, 1.7e12)
    >>> _check_point_in_time(2.5, None)
    Traceback (most recent call last):
    ...
    TypeError: until_seq must be an int (a sequence number), not 2.5
    """
    if until_seq is not None:
        if isinstance(until_seq, bool) or not isinstance(until_seq, int):
            raise TypeError(f"until_seq must be an int (a sequence number), not {until_seq!r}")
        if until_seq < 0:
            raise ValueError(f"until_seq must be >= 0, not {until_seq!r}")
    if until_ms is not None:
        if isinstance(until_ms, bool) or not isinstance(until_ms, (int, float)):
            raise TypeError(f"until_ms must be a number of milliseconds, not {until_ms!r}")
        if until_ms != until_ms:
            raise ValueError("until_ms must not be NaN")


def rebuild(
    path: str | os.PathLike[str],
    *,
    until_seq: int | None = None,
    until_ms: int | None = None,
    from_log: bool = False,
    backend: Any = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> Leaderboard:
    """An in-memory :class:`Leaderboard` as the directory's log says it was.

    ``until_seq``/``until_ms``: stop after that record / the last record
    stamped at or before that time (point-in-time recovery).  ``from_log``:
    ignore snapshots and replay every record from seq 1 (needs
    ``retain_log=True`` history).  Nothing is written: a torn tail is
    reported with a warning and left in place.

    Runtime complexity: O(N + k) for N snapshot rows and k replayed changes
    """
    _check_point_in_time(until_seq, until_ms)
    from_log = check_flag(from_log, "from_log")  # "no" ignored the snapshots
    directory = os.fspath(path)
    manifest = read_manifest(directory)
    config = resolve_config(manifest.config, {"backend": backend}, directory)
    board = Leaderboard(**config)
    loaded = load_board(
        board,
        directory,
        manifest,
        until_seq=until_seq,
        until_ms=until_ms,
        from_log=from_log,
        progress=progress,
    )
    if until_seq is None and until_ms is None:  # the end: it must reach the marks
        check_loaded(directory, manifest, loaded.last_seq, loaded.active, loaded.torn)
    if loaded.torn is not None:
        warnings.warn(
            f"{loaded.torn.path}: ignored a torn tail at offset {loaded.torn.offset} "
            f"({loaded.torn.reason})",
            TornTailWarning,
            stacklevel=2,
        )
    if until_seq is not None and loaded.last_seq < until_seq:
        # a point in time past the end is the end, but a sequence number
        # past it is more often a typo than a request for the whole log
        warnings.warn(
            f"{directory}: the log ends at seq {loaded.last_seq}, before seq {until_seq}: "
            "this is the board at the end of the log",
            RecoveryWarning,
            stacklevel=2,
        )
    return board
