"""The options of a durable board, and the checks every durable open shares.

A durable board, and every board made of durable boards (periodic, window,
decayed), takes the same settings and log options; each is checked here
before anything is created, locked or written, so a bad value never reaches
a manifest (where it would break every later open of the directory).

>>> check_fsync("everysec")
>>> check_fsync("sometimes")
Traceback (most recent call last):
...
ValueError: fsync must be one of ('always', 'everysec', 'never'), not 'sometimes'
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable
from typing import Any, Final, Literal, TypeAlias, TypedDict

from rankengine.board.core import BoardCore, RankStyle, TieBreak
from rankengine.board.scoring import Order
from rankengine.durable.forked import SnapshotMode, check_snapshot_mode
from rankengine.durable.snapshot import fsync_dir

__all__ = [
    "BOARD_SETTINGS",
    "COMPACT_MIN_BYTES",
    "COMPACT_RATIO",
    "FLUSH_INTERVAL_S",
    "FSYNC_STALL_S",
    "LOG_OPTIONS",
    "POLICIES",
    "TORN_POLICIES",
    "DurableOptions",
    "FsyncPolicy",
    "TornPolicy",
    "check_fsync",
    "check_log_options",
    "check_options",
    "check_settings",
    "make_directory",
    "pop_log_options",
]

FsyncPolicy: TypeAlias = Literal["always", "everysec", "never"]
TornPolicy: TypeAlias = Literal["truncate", "refuse"]


class DurableOptions(TypedDict, total=False):
    """The keyword options of :class:`DurableLeaderboard` (and so of
    ``Leaderboard.open(path, **options)``), for type checkers: a misspelt
    option is an error before the code runs."""

    fsync: FsyncPolicy
    order: Order | tuple[Order, ...]
    tie_break: TieBreak
    rank_style: RankStyle
    backend: Any
    on_torn_tail: TornPolicy
    compact_min_bytes: int | None
    compact_ratio: float
    retain_log: bool
    snapshot_mode: SnapshotMode
    create: bool
    now: Callable[[], int] | None


#: ``everysec``: seconds between background fsyncs (Redis's appendfsync everysec).
FLUSH_INTERVAL_S: Final = 1.0
#: ``everysec``: a write waits for a background fsync that has run longer
#: than this, bounding the loss window on a stalling disk (Redis: 2 s).
FSYNC_STALL_S: Final = 2.0
#: Automatic compaction starts when the records since the last snapshot
#: exceed both this many bytes and :data:`COMPACT_RATIO` times the snapshot
#: size (Redis's auto-aof-rewrite-min-size 64mb / percentage 100).
COMPACT_MIN_BYTES: Final = 64 << 20
#: See :data:`COMPACT_MIN_BYTES`.
COMPACT_RATIO: Final = 1.0

#: The fsync policies (Redis's appendfsync values).
POLICIES: Final = ("always", "everysec", "never")
#: What an open does with a torn tail.
TORN_POLICIES: Final = ("truncate", "refuse")
#: A board's settings: every kind of board takes them (the periodic, window
#: and decayed boards pass them to the boards they make).
BOARD_SETTINGS: Final = ("order", "tie_break", "rank_style", "backend")
#: What a durable board's event log takes on top of the settings (its path,
#: ``fsync``, ``create`` and ``now`` are the opener's to give).
LOG_OPTIONS: Final = (
    "on_torn_tail",
    "compact_min_bytes",
    "compact_ratio",
    "retain_log",
    "snapshot_mode",
)


def check_options(options: Iterable[str], allowed: tuple[str, ...], caller: str) -> None:
    """Refuse an option not in ``allowed`` as Python refuses an unexpected
    keyword: a misspelt option (``retian_log``) is an error when the board
    is made, not at its first write, and before anything is on disk.

    Runtime complexity: O(len(options))

    >>> check_options(["order"], BOARD_SETTINGS, "PeriodicLeaderboard")
    >>> check_options(["retian_log"], BOARD_SETTINGS + LOG_OPTIONS, "open")
    Traceback (most recent call last):
    ...
    TypeError: open() got an unexpected keyword argument 'retian_log'
    """
    for name in options:
        if name not in allowed:
            raise TypeError(f"{caller}() got an unexpected keyword argument {name!r}")


def pop_log_options(options: dict[str, Any]) -> dict[str, Any]:
    """Take the :data:`LOG_OPTIONS` out of ``options`` and return them,
    refusing a bad value (the callers make nothing on disk before this)."""
    log_options: dict[str, Any] = {
        name: options.pop(name) for name in LOG_OPTIONS if name in options
    }
    check_log_options(**log_options)
    return log_options


def check_fsync(policy: object) -> None:
    """Refuse an fsync policy that is not one of :data:`FsyncPolicy`'s
    (the periodic, window and decayed opens call it before touching disk)."""
    if policy not in POLICIES:
        raise ValueError(f"fsync must be one of {POLICIES}, not {policy!r}")


def check_settings(explicit: dict[str, Any]) -> None:
    """Run a board's own checks on the settings given (None: not given)
    before anything is on disk: a bad one stored in a new board's manifest
    made every later open of the directory fail.  A backend that is not a
    name is left to the board itself: it is not stored, and a factory is
    the caller's code, called once.

    Runtime complexity: O(1)
    """
    given = {k: v for k, v in explicit.items() if v is not None}
    if not isinstance(given.get("backend", ""), str):
        del given["backend"]
    BoardCore(**given)


def check_log_options(
    on_torn_tail: object = "truncate",
    compact_min_bytes: object = COMPACT_MIN_BYTES,
    compact_ratio: object = COMPACT_RATIO,
    retain_log: object = False,
    snapshot_mode: object = "auto",
) -> None:
    """Refuse a bad value of a :data:`LOG_OPTIONS` option before anything is
    on disk (a bad compaction threshold used to surface at the first write,
    after its record was logged).

    Runtime complexity: O(1)

    >>> check_log_options(compact_min_bytes=0, compact_ratio=0)
    >>> check_log_options(compact_ratio=-1.0)
    Traceback (most recent call last):
    ...
    ValueError: compact_ratio must be a finite number >= 0, not -1.0
    """
    if on_torn_tail not in TORN_POLICIES:
        raise ValueError(f"on_torn_tail must be one of {TORN_POLICIES}, not {on_torn_tail!r}")
    if compact_min_bytes is not None:
        if isinstance(compact_min_bytes, bool) or not isinstance(compact_min_bytes, (int, float)):
            raise TypeError(
                f"compact_min_bytes must be a number or None, not {compact_min_bytes!r}"
            )
        if not compact_min_bytes >= 0:  # (NaN too)
            raise ValueError(f"compact_min_bytes must be >= 0 or None, not {compact_min_bytes!r}")
    if isinstance(compact_ratio, bool) or not isinstance(compact_ratio, (int, float)):
        raise TypeError(f"compact_ratio must be a number, not {compact_ratio!r}")
    if not (math.isfinite(compact_ratio) and compact_ratio >= 0):
        raise ValueError(f"compact_ratio must be a finite number >= 0, not {compact_ratio!r}")
    if not isinstance(retain_log, bool):
        raise TypeError(f"retain_log must be True or False, not {retain_log!r}")
    check_snapshot_mode(snapshot_mode)


def make_directory(path: str) -> None:
    """Create directory ``path`` and its missing parents, making each new
    entry durable with an fsync of the directory holding it (without that,
    a power cut can lose a new board with every write acknowledged in it).

    Runtime complexity: one fsync per directory created
    """
    if os.path.exists(path) and not os.path.isdir(path):
        raise NotADirectoryError(f"{path} is not a directory")
    missing = []
    head = os.path.abspath(path)
    while not os.path.isdir(head) and os.path.dirname(head) != head:
        missing.append(head)
        head = os.path.dirname(head)
    os.makedirs(path, exist_ok=True)
    for created in reversed(missing):
        fsync_dir(os.path.dirname(created))
