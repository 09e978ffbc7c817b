"""What a directory holds: which kind of durable store, told by its files.

Every durable store of rankengine lives in a directory, and each kind
leaves its own mark there::

    MANIFEST (config without "kind")    a durable board
    MANIFEST (config "kind": "ledger")  a ledger (rankengine.ledger)
    MIGRATE                             a ledger: a migration to it, committed
    periods/ or closed/                 a periodic board or a sliding window
    epoch-<t0>/                         a decayed board

An open of one kind on a directory of another is refused with a message
that names what is there (:func:`refuse_other_kind`), instead of creating
its own files beside the other's and showing an empty store.

>>> import tempfile, os
>>> with tempfile.TemporaryDirectory() as tmp:
...     os.mkdir(os.path.join(tmp, "periods"))
...     what_is_in(tmp)
'a periodic board or sliding window'
"""

from __future__ import annotations

import os
from typing import Any, Final

from rankengine.board.hooks import ledger_view_opener
from rankengine.durable.manifest import MANIFEST_NAME, read_manifest
from rankengine.durable.records import CorruptionError

__all__ = [
    "BOARD",
    "DECAYED",
    "LEDGER",
    "LEDGER_KIND",
    "LEDGER_VIEWS",
    "MIGRATED_KEY",
    "MIGRATE_JOURNAL",
    "PERIODIC",
    "as_ledger_view",
    "fixed_config",
    "open_ledger_view",
    "refuse_other_kind",
    "what_is_in",
]

#: The manifest config's ``kind`` of a ledger directory.
LEDGER_KIND: Final = "ledger"
#: The folder of a ledger's view snapshots (``views/<view>/``).
LEDGER_VIEWS: Final = "views"
#: The journal of a migration into a ledger (``rankengine.ledger.migrate``):
#: once it exists the directory is a ledger, whose next open finishes the
#: switch before anything is read.
MIGRATE_JOURNAL: Final = "MIGRATE"
#: A ledger manifest config's map of the views a migration made, ``name ->
#: what the directory held``: their state before the migration is only in
#: their snapshots (the log starts at the migration), so they are never
#: rebuilt from the log.
MIGRATED_KEY: Final = "migrated"
BOARD: Final = "a durable board"
LEDGER: Final = "a ledger"
PERIODIC: Final = "a periodic board or sliding window"
DECAYED: Final = "a decayed board"
#: How each kind is opened, for the refusal's advice.
_OPENED_BY: Final = {
    BOARD: "rankengine.open_board(path)",
    LEDGER: "rankengine.Ledger.open(path)",
    PERIODIC: "PeriodicLeaderboard.open(path, ...) or SlidingWindowLeaderboard.open(path, ...)",
    DECAYED: "DecayedLeaderboard.open(path, ...)",
}


#: The parts of a ledger's manifest config that change as views come and go
#: and snapshots are taken (a segment header keeps only the rest).
_LEDGER_STATE: Final = ("views", "snapshots", MIGRATED_KEY)


def fixed_config(config: dict[str, object]) -> dict[str, object]:
    """``config`` without what a ledger's manifest changes over time (its
    views and their snapshots): what every segment header must agree on.

    >>> fixed_config({"kind": "ledger", "views": {"a": {}}, "snapshots": {}})
    {'kind': 'ledger'}
    >>> fixed_config({"order": "desc"})
    {'order': 'desc'}
    """
    if config.get("kind") != LEDGER_KIND:
        return config
    return {k: v for k, v in config.items() if k not in _LEDGER_STATE}


def what_is_in(directory: str) -> str | None:
    """The kind of store ``directory`` holds (one of :data:`BOARD`,
    :data:`LEDGER`, :data:`PERIODIC`, :data:`DECAYED`), or None when it holds
    none of them (missing, empty, or other files).

    Runtime complexity: O(files in the directory)
    """
    if not os.path.isdir(directory):
        return None
    if os.path.lexists(os.path.join(directory, MIGRATE_JOURNAL)):
        return LEDGER
    if os.path.lexists(os.path.join(directory, MANIFEST_NAME)):
        try:
            config = read_manifest(directory).config
        except (CorruptionError, OSError):
            return BOARD  # a damaged manifest: verify/repair say more
        return LEDGER if config.get("kind") == LEDGER_KIND else BOARD
    names = os.listdir(directory)
    if "periods" in names or "closed" in names:
        return PERIODIC
    if any(name.startswith("epoch-") for name in names):
        return DECAYED
    return None


def open_ledger_view(directory: str, kind: str, options: dict[str, Any]) -> Any:
    """Open the ledger in ``directory`` as a board of ``kind`` (its one
    view of that kind), through the opener the package root registers in
    :mod:`rankengine.board.hooks`; without one, refuse as
    :func:`refuse_other_kind` does.

    Runtime complexity: the ledger's open
    """
    opener = ledger_view_opener()
    if opener is None:
        refuse_other_kind(directory, PERIODIC if kind in ("periodic", "window") else DECAYED)
    assert opener is not None
    return opener(directory, kind, options)


def as_ledger_view(path: str | os.PathLike[str], kind: str, options: dict[str, Any]) -> Any:
    """A time board's open on ``path``: None when it holds no ledger (open
    it as usual), else :func:`open_ledger_view` of it.

    Runtime complexity: O(files in the directory), plus the ledger's open
    """
    directory = os.fspath(path)
    if what_is_in(directory) != LEDGER:
        return None
    return open_ledger_view(directory, kind, options)


def refuse_other_kind(directory: str, wanted: str) -> None:
    """Raise ``ValueError`` when ``directory`` holds a store of another kind
    than ``wanted``, naming it and how it is opened.

    Runtime complexity: O(files in the directory)

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     refuse_other_kind(tmp, LEDGER)        # empty: nothing to refuse
    """
    found = what_is_in(directory)
    if found is None or found == wanted:
        return
    raise ValueError(
        f"{directory} holds {found}, not {wanted}: open it with {_OPENED_BY[found]} "
        f"(nothing was created or changed there)"
    )
