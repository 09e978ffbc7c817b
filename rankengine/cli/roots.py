"""What a directory that is not a board directory holds, for the log tools.

``rankengine inspect``, ``verify``, ``repair`` and ``replay`` take one board
directory (a ``MANIFEST``, segments, snapshots).  The time boards keep several
of those under a root of their own:

* a periodic board (:meth:`~rankengine.PeriodicLeaderboard.open`) and a
  sliding window (:meth:`~rankengine.SlidingWindowLeaderboard.open`): one
  board per period in ``periods/<name>/``, dropped periods as files in
  ``archive/`` (read with ``load_archived``);
* a decayed board (:meth:`~rankengine.DecayedLeaderboard.open`): its stored
  scores in ``epoch-<t0>/``.

Given such a root, :func:`root_hint` says what it is and which directories
to pass instead; any other directory holding board directories one level
down gets the list of those.

>>> root_hint("/nonexistent") is None
True
"""

from __future__ import annotations

import os
from typing import Final

from rankengine.durable.manifest import MANIFEST_NAME
from rankengine.timed.archive import ARCHIVE_SUFFIX

__all__ = ["root_hint"]

#: The sub-directory of a periodic board's or a window's root holding one
#: board directory per period, and the one holding archives.
PERIODS_DIR: Final = "periods"
ARCHIVE_DIR: Final = "archive"
#: The name prefix of a decayed board's board directory (``epoch-<t0>``).
EPOCH_PREFIX: Final = "epoch-"
#: Directories named in a hint, at most: a root of a year of daily periods
#: held in memory would otherwise print 365 lines.
MAX_NAMED: Final = 5


def _boards_in(path: str) -> list[str]:
    """Names of the board directories directly under ``path``, sorted."""
    try:
        names = sorted(os.listdir(path))
    except OSError:
        return []
    return [
        name
        for name in names
        if not name.startswith(".") and os.path.isfile(os.path.join(path, name, MANIFEST_NAME))
    ]


def _named(parent: str, names: list[str]) -> str:
    shown = [os.path.join(parent, name) for name in names[-MAX_NAMED:]]
    more = len(names) - len(shown)
    return ", ".join(shown) + (f" (and {more} older)" if more else "")


def root_hint(path: str) -> str | None:
    """What ``path`` holds, if it is the root of a time board or holds board
    directories one level down: the directories to pass instead.  ``None``
    when it holds neither.

    Runtime complexity: O(entries in path and in path/periods)
    """
    periods = os.path.join(path, PERIODS_DIR)
    if os.path.isdir(periods):
        held = _boards_in(periods)
        archive = os.path.join(path, ARCHIVE_DIR)
        archived = os.path.isdir(archive) and any(
            name.endswith(ARCHIVE_SUFFIX) for name in os.listdir(archive)
        )
        text = (
            "it is the root of a periodic board or a sliding window: each period "
            f"held in memory is a board directory in {periods}{os.sep}<name>{os.sep}"
        )
        text += f"; pass one of {_named(periods, held)}" if held else " (none is held now)"
        if archived:
            text += (
                f"; dropped periods are files in {archive}{os.sep}, read with "
                "PeriodicLeaderboard.load_archived(name)"
            )
        return text
    boards = _boards_in(path)
    epochs = [name for name in boards if name.startswith(EPOCH_PREFIX)]
    if epochs:
        return (
            "it is the root of a decayed board: its stored scores are the board "
            f"directory {_named(path, epochs)}; pass that"
        )
    if boards:
        return f"it holds board directories one level down: pass one of {_named(path, boards)}"
    return None
