"""Migrating a durable directory of an older kind into a one-view ledger.

``rankengine migrate DIR`` (:func:`migrate`) turns a directory written by
a durable board (``Leaderboard.open``), a durable periodic board, a
sliding window or a decayed board into a **ledger** directory with one
view holding exactly the same state: members, scores, tie order (the
boards' logical clocks), metadata, and the periods, buckets or decay base
with their clocks.

History: the state is carried as the view's **starting snapshot at the
ledger's seq 0**; the ledger's log starts empty.  The old change records
are not turned into events (a periodic board's, a window's and a decayed
board's records are not the events that made them: a record of a period
board holds no event time, a decayed board's holds stored values under a
base).  What that means:

* the migrated view is exact, and every event recorded after the
  migration is logged and replayed as in any ledger;
* a view added later is built from the events recorded after the
  migration only (it starts empty at seq 0);
* the starting snapshot (and each later snapshot of the view) is the
  only copy of the state before the migration: the manifest names the
  migrated view (``config["migrated"]``), and where a ledger would
  rebuild a view from its log -- an open that finds its snapshot
  damaged, ``rebuild_view``, ``forget(from_log=True)`` -- it refuses
  for that view instead of emptying it.

Crash-safety, the steps (each named by its crash point)::

    1. read      the old store opened by its own open and copied into memory,
                 then closed; the directory's lock taken          migrate_read
    2. stage     the ledger written whole in DIR/.migrate/ (manifest, an
                 empty first segment, the view's snapshot), fsynced
                                                                  migrate_staged
    3. commit    the journal DIR/MIGRATE (which files replace which, what
                 is removed) written and renamed into place: the switch
                                          migrate_journal_rename, after_migrate_journal
    4. apply     .migrate/MANIFEST, its segment and views/ renamed into DIR,
                 the old kind's files removed, the journal removed
                                                  migrate_rename, after_migrate

The journal is the forget's (:class:`~rankengine.durable.forget.ForgetPlan`,
under another name).  A kill before step 3's rename leaves the old
directory, which opens as before (the staging directory is removed by the
next ``migrate``); a kill after it leaves the journal, and the directory
is a ledger from then on: :func:`~rankengine.durable.kinds.what_is_in`
says so, and the next ledger open applies the journal to the end before
anything is read.  A second ``migrate`` of a ledger changes nothing.

>>> import tempfile
>>> from rankengine import Ledger, open_board
>>> with tempfile.TemporaryDirectory() as tmp:
...     with open_board(tmp, fsync="never") as board:
...         board.set_many({"ann": 5, "bob": 7})
...     migrate(tmp)
...     with Ledger.open(tmp) as ledger:
...         ledger["board"].items()
2
Migrated(found='a durable board', kind='board', view='board', members=2, done=True)
[('bob', 7), ('ann', 5)]
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
from collections.abc import Callable
from typing import Any, Final, NamedTuple

from rankengine.board.leaderboard import Leaderboard
from rankengine.durable.board import open_board_as
from rankengine.durable.forget import ForgetPlan, finish_journal
from rankengine.durable.kinds import (
    BOARD,
    DECAYED,
    LEDGER,
    MIGRATE_JOURNAL,
    MIGRATED_KEY,
    PERIODIC,
    what_is_in,
)
from rankengine.durable.manifest import LOCK_NAME, DirectoryLock, read_manifest
from rankengine.durable.records import LogError, crash_point
from rankengine.durable.snapshot import fsync_dir
from rankengine.ledger.adapters import BOARD_SETTINGS, Part
from rankengine.ledger.ledger import Ledger
from rankengine.ledger.routes import NO_KEY
from rankengine.ledger.storage import VIEWS_DIR
from rankengine.timed.decay import DecayedLeaderboard
from rankengine.timed.periodic import PeriodicLeaderboard
from rankengine.timed.state import decayed_state, periodic_state, window_state
from rankengine.timed.window import SlidingWindowLeaderboard

__all__ = ["STAGING_DIR", "Migrated", "migrate"]

#: Where the ledger is staged inside the directory (a hidden name: no
#: open of any kind reads it).
STAGING_DIR: Final = ".migrate"
#: What stays in the directory through a migration: the lock, and a
#: periodic board's archive of dropped periods (readable as before with
#: ``rankengine.timed.archive``; the ledger does not read it).
_KEPT: Final = (LOCK_NAME, "archive", STAGING_DIR, MIGRATE_JOURNAL)
#: The view kinds each old kind may become.
_KINDS: Final = {
    BOARD: ("board",),
    PERIODIC: ("periodic", "window"),
    DECAYED: ("decayed",),
}
#: The options each old open needs to read its directory.
_OPEN_OPTIONS: Final = {
    "periodic": ("calendar", "keep", "grace", "late"),
    "window": ("calendar", "buckets", "grace", "late"),
    "decayed": ("half_life", "tau", "rebase_after"),
}


def _still_clock() -> float:
    """The old time boards' clock while they are read: the epoch, so that
    their time is what their files say (no period closes, no window
    slides, no decay base moves on the wall clock of the migration)."""
    return 0.0


class _State(NamedTuple):
    """What was read of the old store: the view's options, its parts (as
    a ledger snapshot holds them) and its time (seconds)."""

    options: dict[str, Any]
    parts: list[Part]
    now: float


class Migrated(NamedTuple):
    """What :func:`migrate` did: the kind ``found`` in the directory, the
    view ``kind`` and name it became, its members, and ``done`` (False: the
    directory was a ledger already and nothing changed)."""

    found: str
    kind: str
    view: str
    members: int
    done: bool


def _signature(path: str) -> list[tuple[str, int, int]]:
    """Every file under ``path`` but the lock and the staging directory,
    with its size and modification time: what must not change between
    reading the old store and switching to the ledger."""
    out = []
    for directory, dirs, names in os.walk(path):
        if directory == path:
            dirs[:] = [d for d in dirs if d != STAGING_DIR]
        for name in names:
            full = os.path.join(directory, name)
            if directory == path and name in (LOCK_NAME, MIGRATE_JOURNAL + ".tmp"):
                continue
            st = os.lstat(full)
            out.append((os.path.relpath(full, path), st.st_size, st.st_mtime_ns))
    return sorted(out)


def _periods(board: PeriodicLeaderboard) -> tuple[float, list[Part]]:
    now, held = periodic_state(board)
    if not held:
        return now, [({"now": now}, None)]
    return now, [({"now": now, "period": n, "closed": c}, b.copy()) for n, c, b in held]


def _settings_of(board: Leaderboard | None, options: dict[str, Any]) -> dict[str, Any]:
    """The board settings of the view: the caller's, else the stored board's."""
    out = {k: options[k] for k in BOARD_SETTINGS if options.get(k) is not None}
    if board is not None:
        config = board.config()
        for key in ("order", "tie_break", "rank_style"):
            value = config.get(key)
            if key not in out and isinstance(value, (str, tuple, list)):
                out[key] = list(value) if isinstance(value, tuple) else value
    return out


def _read_board(path: str, options: dict[str, Any]) -> _State:
    stored = read_manifest(path).config
    settings = {k: stored[k] for k in BOARD_SETTINGS if isinstance(stored.get(k), (str, list))}
    settings.update({k: v for k, v in options.items() if k in BOARD_SETTINGS and v is not None})
    with open_board_as(Leaderboard, path, fsync="never", compact_min_bytes=None) as board:
        copy = board.copy()
    return _State(settings, [({}, copy)], 0.0)


def _read_periodic(path: str, kind: str, options: dict[str, Any]) -> _State:
    settings = {k: v for k, v in options.items() if k in BOARD_SETTINGS and v is not None}
    opened = {k: options[k] for k in _OPEN_OPTIONS[kind] if k in options}
    if "calendar" not in opened:
        raise TypeError(f"migrating a {kind} board needs its calendar= (as it was opened with)")
    cal = opened.pop("calendar")
    if kind == "periodic":
        with PeriodicLeaderboard.open(
            path, cal, fsync="never", clock=_still_clock, **opened, **settings
        ) as periodic:
            now, parts = _periods(periodic)
            first = next((b for _, b in parts if b is not None), None)
        return _State({"calendar": cal, **options, **_settings_of(first, settings)}, parts, now)
    if "buckets" not in opened:
        raise TypeError("migrating a window needs its buckets= (as it was opened with)")
    buckets = opened.pop("buckets")
    with SlidingWindowLeaderboard.open(
        path, cal, buckets, fsync="never", clock=_still_clock, **opened, **settings
    ) as window:
        window.refresh()
        now, parts = _periods(window.buckets)
        as_of, board = window_state(window)
        parts.append(({"window": True, "as_of": as_of}, board.copy()))
        first = next((b for _, b in parts if b is not None), None)
    return _State({"calendar": cal, **options, **_settings_of(first, settings)}, parts, now)


def _read_decayed(path: str, options: dict[str, Any]) -> _State:
    settings = {k: v for k, v in options.items() if k in BOARD_SETTINGS and v is not None}
    opened = {k: options[k] for k in _OPEN_OPTIONS["decayed"] if k in options}
    if opened.get("half_life") is None and opened.get("tau") is None:
        raise TypeError("migrating a decayed board needs its half_life= or tau=")
    with DecayedLeaderboard.open(
        path, fsync="never", clock=_still_clock, **opened, **settings
    ) as decayed:
        t0, rebases, stored = decayed_state(decayed)
        copy = stored.copy()
    view = {**options, **_settings_of(copy, settings), "t0": t0}
    return _State(view, [({"t0": t0, "rebases": rebases}, copy)], t0)


def _members(parts: list[Part], kind: str) -> int:
    if kind == "window":
        return sum(len(b) for h, b in parts if h.get("window") and b is not None)
    return sum(len(b) for _, b in parts if b is not None)


def _stage(staging: str, view: str, kind: str, state: _State, found: str) -> None:
    """Write the ledger whole in ``staging``: one view, its state as the
    snapshot at seq 0, the manifest naming it (every file fsynced)."""
    if os.path.lexists(staging):
        shutil.rmtree(staging)
    ledger = Ledger(staging, fsync="always", compact_min_bytes=None)
    try:
        ledger.add_view(view, kind, **state.options)
        made = ledger._views[view]
        made.restore([(NO_KEY, part) for part in state.parts])
        now = state.now
        ms = 0 if not math.isfinite(now) else max(0, int(now * 1000))
        ledger._time = made.time_ms = ms
        made._check()
        files = ledger._files
        assert files is not None
        files.manifest.config[MIGRATED_KEY] = {view: found}
        ledger._save_view(made)
        files.commit()
    finally:
        ledger.close()
    # the staged files' entries, so the journal never names a file a power
    # cut could take (the files themselves were fsynced as written)
    for directory, _, _ in os.walk(staging):
        fsync_dir(directory)
    os.remove(os.path.join(staging, LOCK_NAME))
    fsync_dir(staging)


def migrate(
    path: str | os.PathLike[str],
    *,
    view: str | None = None,
    kind: str | None = None,
    progress: Callable[[str], None] | None = None,
    **options: Any,
) -> Migrated:
    """Convert the durable directory ``path`` into a ledger with one view
    (see the module docstring), crash-safely.

    ``kind`` is the view kind: ``"board"`` and ``"decayed"`` are told from
    the directory; a periodic board's and a window's directories look
    alike, so ``"window"`` must be asked for (the default there is
    ``"periodic"``).  ``view`` names the view (default: its kind).
    ``options`` are what the old store was opened with (``calendar=``,
    ``keep=``, ``buckets=``, ``half_life=`` or ``tau=``, board settings);
    a durable board's are stored and need none.  ``progress`` is called
    with the name of each step.

    Runtime complexity: O(N) for N members held, plus the old store's open

    :raises FileNotFoundError: ``path`` holds no durable store.
    :raises ValueError: ``kind`` does not fit what is there.
    :raises TypeError: an option the old open needs is missing.
    :raises LogError: the directory is open elsewhere, or changed while
        being migrated (nothing was changed: run it again).
    """
    path = os.fspath(path)
    say = progress or (lambda _step: None)
    found = what_is_in(path)
    if found == LEDGER:
        if os.path.exists(os.path.join(path, MIGRATE_JOURNAL)):
            lock = DirectoryLock(path)
            try:
                finish_journal(path, MIGRATE_JOURNAL)
                say("finished the migration a crash interrupted")
            finally:
                lock.release()
        config = read_manifest(path).config
        name = next(iter(config.get(MIGRATED_KEY, {})), view or "")
        spec = config.get("views", {}).get(name, {})
        return Migrated(LEDGER, spec.get("kind", ""), name, 0, False)
    if found is None:
        raise FileNotFoundError(
            f"{path} holds no durable board, periodic board, window or decayed board to "
            "migrate (nothing was changed)"
        )
    kinds = _KINDS[found]
    kind = kinds[0] if kind is None else kind
    if kind not in kinds:
        raise ValueError(
            f"{path} holds {found}: it migrates to a view of kind "
            f"{' or '.join(map(repr, kinds))}, not {kind!r} (nothing was changed)"
        )
    view = kind if view is None else view
    if os.path.lexists(os.path.join(path, VIEWS_DIR)):
        raise LogError(
            f"{path} holds {VIEWS_DIR!r}, which {found} never writes: refusing to migrate "
            "over it (nothing was changed)"
        )
    # 1. read, with the old kind's own open (it settles what a crash left)
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(path, MIGRATE_JOURNAL + ".tmp"))
    if found == BOARD:
        state = _read_board(path, options)
    elif found == PERIODIC:
        state = _read_periodic(path, kind, options)
    else:
        state = _read_decayed(path, options)
    say("read")
    before = _signature(path)
    lock = DirectoryLock(path)
    try:
        if _signature(path) != before:
            raise LogError(
                f"{path} changed while it was being migrated (another process wrote to it): "
                "nothing was changed; run migrate again with the store closed"
            )
        crash_point("migrate_read")
        # 2. stage
        staging = os.path.join(path, STAGING_DIR)
        _stage(staging, view, kind, state, found)
        crash_point("migrate_staged")
        say("staged")
        # 3. commit and 4. apply
        plan = ForgetPlan(path, journal=MIGRATE_JOURNAL)
        moved = sorted(os.listdir(staging))
        for name in moved:
            plan.renames.append((os.path.join(staging, name), os.path.join(path, name)))
        for name in sorted(os.listdir(path)):
            if name not in _KEPT and name not in moved:
                plan.remove(os.path.join(path, name))
        plan.remove(staging)
        plan.commit()
        say("switched")
    finally:
        lock.release()
    return Migrated(found, kind, view, _members(state.parts, kind), True)
