"""Opening a board directory, up to loading it: the settings, the clock,
and the manifest -- read, or a new board created.

A directory's stored settings win over the ones an open passes, and one
that would change what the stored data means is an error
(:func:`resolve_config`).  A directory without a ``MANIFEST`` becomes a new
board only if it holds nothing but what an interrupted creation leaves
(:func:`_open_manifest`): its first segment is made durable before the
manifest that names it, so a crash at any step leaves either no board or a
whole one.  Loading what the manifest names is
:mod:`rankengine.durable.recovery`'s; the board that opens it all is
:mod:`rankengine.durable.board`'s.

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as tmp:
...     manifest = _open_manifest(tmp, _stored_config(resolve_config(None, {}, tmp)), True)
...     print(manifest.segments, resolve_config(manifest.config, {}, tmp)["order"])
[('log-00000000000000000001.seg', 1)] desc
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any, Final

from rankengine.durable.eventlog import SegmentWriter
from rankengine.durable.kinds import BOARD, refuse_other_kind
from rankengine.durable.manifest import (
    MANIFEST_NAME,
    Manifest,
    read_manifest,
    segment_name,
    write_manifest,
)
from rankengine.durable.records import LogError, crash_point
from rankengine.durable.snapshot import fsync_dir
from rankengine.durable.verify import creation_leftovers

__all__ = [
    "resolve_config",
]

#: Settings that change what the stored data means; a reopen must agree.
_BINDING: Final = ("order", "tie_break", "rank_style")
_DEFAULTS: Final[dict[str, Any]] = {
    "order": "desc",
    "tie_break": "first",
    "rank_style": "unique",
    "backend": "sortedlist",
}


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _checked_clock(now: Callable[[], int]) -> Callable[[], int]:
    """``now``, refusing a stamp that is not an int of milliseconds (a
    float from ``time.time() * 1000``, say): the write raises before its
    record is logged, instead of leaving a record no open can read.

    Runtime complexity: O(1) per call

    >>> _checked_clock(lambda: 1_000)()
    1000
    >>> _checked_clock(lambda: 1e12)()
    Traceback (most recent call last):
    ...
    TypeError: now() must return an int of milliseconds, not 1000000000000.0
    """

    def checked() -> int:
        stamp = now()
        if isinstance(stamp, bool) or not isinstance(stamp, int):
            raise TypeError(f"now() must return an int of milliseconds, not {stamp!r}")
        return int(stamp)

    return checked


def _stored_config(config: dict[str, Any]) -> dict[str, Any]:
    order = config["order"]
    backend = config["backend"]
    return {
        "order": list(order) if isinstance(order, tuple) else order,
        "tie_break": config["tie_break"],
        "rank_style": config["rank_style"],
        "backend": backend if isinstance(backend, str) else None,
    }


def resolve_config(
    stored: dict[str, Any] | None, explicit: dict[str, Any], path: str
) -> dict[str, Any]:
    """The board settings: stored ones win; an explicit conflicting one is an error.

    The backend is only the in-memory structure, so it may differ.
    """
    out = dict(_DEFAULTS)
    if stored is not None:
        for key in _BINDING:
            value = stored.get(key)
            out[key] = tuple(value) if isinstance(value, list) else value
        if isinstance(stored.get("backend"), str):
            out["backend"] = stored["backend"]
    for key, value in explicit.items():
        if value is None:
            continue
        if stored is not None and key in _BINDING:
            have = out[key]
            want = tuple(value) if isinstance(value, list) else value
            if have != want:
                raise ValueError(
                    f"{path} holds a board with {key}={have!r}; it cannot be opened "
                    f"with {key}={want!r} (leave {key} out to use the stored setting)"
                )
        out[key] = value
    return out


def _no_board(directory: str) -> FileNotFoundError:
    return FileNotFoundError(f"{directory} holds no rankengine board (no {MANIFEST_NAME})")


def _not_fresh(directory: str, other: str) -> LogError:
    return LogError(
        f"{directory} has no {MANIFEST_NAME} but holds {other!r}: refusing to create a "
        "new board over it (run `rankengine verify` / `rankengine repair` on it)"
    )


def _check_before_locking(directory: str, create: bool) -> None:
    """Refuse what :func:`_open_manifest` would refuse in a directory that
    holds no board, before the lock is taken: taking it would leave a
    ``LOCK`` file in a directory an open does not use (as :func:`repair`
    avoids too).  The open checks again under the lock.

    A board being created concurrently never shows a name other than its
    first segment (header only), temporary files and ``LOCK`` before its
    ``MANIFEST`` exists, so a directory refused here holds no board.

    Runtime complexity: O(files in the directory)
    """
    refuse_other_kind(directory, BOARD)  # a ledger's, a periodic board's: named
    manifest = os.path.join(directory, MANIFEST_NAME)
    if os.path.lexists(manifest):
        return
    if not create:
        raise _no_board(directory)
    _, other = creation_leftovers(directory)
    if other is not None and not os.path.lexists(manifest):
        raise _not_fresh(directory, other)


def _open_manifest(directory: str, config: dict[str, Any], create: bool) -> Manifest:
    """Read the manifest, or create a new board if the directory holds none."""
    try:
        return read_manifest(directory)
    except FileNotFoundError:
        pass
    if not create:
        raise _no_board(directory)
    # A crash while creating leaves only a header-only first segment and
    # temporary files; anything else means this is not a fresh directory.
    stale, other = creation_leftovers(directory)
    if other is not None:
        raise _not_fresh(directory, other)
    for path in stale:
        if not path.endswith("LOCK"):
            os.remove(path)
    name = segment_name(1)
    header = {"first_seq": 1, "created_ms": _now_ms(), "config": config}
    SegmentWriter.create(os.path.join(directory, name), header).close()
    fsync_dir(directory)
    crash_point("after_create_segment")
    manifest = Manifest(config, [], [(name, 1)])
    write_manifest(directory, manifest, step="create_manifest")
    return manifest
