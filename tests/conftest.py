"""The backend fixture shared by the behaviour suites.

Every behaviour test takes ``make_board`` and calls it like the
``Leaderboard`` constructor (``make_board(order="asc", tie_break="member")``);
the fixture is parametrized over :data:`BACKENDS`, so one test runs on every
backend.  Tests use only the public API (plus ``_check()``), so a backend
that is not an in-process ``Leaderboard`` (a board on a Redis server, say)
can join by adding its name to :data:`BACKENDS` and a factory to
:data:`FACTORIES`.

A backend whose module is not written yet is skipped with a reason; as soon
as the module exists its tests run (and an import error *inside* it fails
instead of skipping).
"""

from __future__ import annotations

import importlib
import itertools
import operator
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from listindex import ListIndex
from redis_service import redis_board

from rankengine import Leaderboard, ShardedLeaderboard
from rankengine.index.protocol import RUN_SCAN_LIMIT

#: Every backend the behaviour suites run on, in one place.
BACKENDS: list[str] = ["sortedlist", "skiplist", "reference", "redis"]

#: A factory builds boards: ``factory(**constructor_kwargs) -> board``.
BoardFactory = Callable[..., Any]

#: Modules a named in-process backend needs; skipped while missing.
_MODULES: dict[str, str] = {
    "sortedlist": "rankengine.index.sortedlist",
    "skiplist": "rankengine.index.skiplist",
    "redis": "rankengine.redis.board",
}


def _named(name: str) -> BoardFactory:
    def make(**kwargs: Any) -> Leaderboard:
        return Leaderboard(backend=name, **kwargs)  # type: ignore[arg-type]

    return make


def _reference(**kwargs: Any) -> Leaderboard:
    return Leaderboard(backend=ListIndex, **kwargs)


#: name -> factory.  Factories may call ``pytest.skip`` when a service is absent.
FACTORIES: dict[str, BoardFactory] = {
    "sortedlist": _named("sortedlist"),
    "skiplist": _named("skiplist"),
    "reference": _reference,
    "redis": redis_board,  # a real redis-server, started by the session
}


def missing_reason(name: str) -> str | None:
    """Why backend ``name`` cannot run yet, or None when it can."""
    module = _MODULES.get(name)
    if module is None:
        return None
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise  # the module exists but is broken: fail, do not skip
        return f"backend {name!r} not written yet ({module} is missing)"
    return None


def board_factory(name: str) -> BoardFactory:
    """The factory for backend ``name``; skips the calling test while it is missing."""
    reason = missing_reason(name)
    if reason is not None:
        pytest.skip(reason)
    return FACTORIES[name]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """The backend name of this parametrization."""
    return str(request.param)


@pytest.fixture
def make_board(backend: str) -> BoardFactory:
    """``make_board(**kwargs)`` builds an empty board on this test's backend."""
    return board_factory(backend)


@pytest.fixture(params=["board", "sharded"])
def make_or_sharded(request: pytest.FixtureRequest, make_board: BoardFactory) -> BoardFactory:
    """Like ``make_board``, and also a ``ShardedLeaderboard`` over three
    boards of this test's backend: the API both must answer alike."""
    if request.param == "board":
        return make_board

    def sharded(**kwargs: Any) -> ShardedLeaderboard:
        return ShardedLeaderboard([make_board(**kwargs) for _ in range(3)])

    return sharded


def untied_far_members(board: Any) -> list[Any]:
    """Members missing from a first-to-reach board's tie map although they lie
    ``RUN_SCAN_LIMIT`` or more entries from the oldest end of their run of
    equal scores.  After any history of ordinary writes (clocks that only
    grow) there are none: the index finds every member it was not given a
    tie for by a short scan (see ``rankengine.index.protocol``)."""
    if not isinstance(board, Leaderboard) or board.tie_break != "first":
        return []
    entries = board._index.iter_range(0, len(board._index))
    far: list[Any] = []
    for _, run in itertools.groupby(entries, key=operator.itemgetter(0)):
        members = [member for _, _, member in run]
        if board._desc:
            members.reverse()  # oldest end first
        far += [m for m in members[RUN_SCAN_LIMIT:] if m not in board._tie]
    return far


def snapshot(board: Any) -> tuple[Any, ...]:
    """Everything observable about a board's contents, to compare before/after."""
    items = board.items()
    metas = {member: board.meta(member) for member, _ in items}
    return items, metas, board.clock, len(board)


@pytest.fixture
def ctrl_c() -> Iterator[None]:
    """Python's own Ctrl-C handler for the test's duration: a test runner
    started in the background (``cmd &`` without job control) inherits
    SIGINT ignored, Python then leaves it ignored, and a test of what
    Ctrl-C does would see nothing happen."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


#: Runs its arguments as a command with SIGINT's default action: an ignored
#: signal stays ignored across exec, a default one stays default.
_DEFAULT_SIGINT = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.argv[1], sys.argv[1:])"
)


def with_default_sigint(argv: list[str]) -> list[str]:
    """``argv`` for a child that a test interrupts with SIGINT: it gets the
    default action whatever the test runner inherited (see ``ctrl_c``)."""
    return [sys.executable, "-c", _DEFAULT_SIGINT, *argv]


def _record_fsyncs(monkeypatch: pytest.MonkeyPatch, *modules: Any) -> list[tuple[str, list[str]]]:
    """Record the directory fsyncs of ``modules``, in one list in the order
    they happen, each as ``(directory, its entries at that moment)``; the
    fsyncs still happen."""
    from pathlib import Path

    calls: list[tuple[str, list[str]]] = []
    for module in modules:
        real = module.fsync_dir

        def recording(path: str, real: Any = real) -> None:
            calls.append((path, sorted(p.name for p in Path(path).iterdir())))
            real(path)

        monkeypatch.setattr(module, "fsync_dir", recording)
    return calls


@pytest.fixture
def dir_fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, list[str]]]:
    """The directory fsyncs that creating durable directories makes."""
    import rankengine.durable.board as durable_module
    import rankengine.durable.opening as opening_module
    import rankengine.durable.options as options_module
    import rankengine.durable.recovery as recovery_module

    return _record_fsyncs(
        monkeypatch, durable_module, opening_module, recovery_module, options_module
    )


@pytest.fixture
def repair_fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, list[str]]]:
    """The directory fsyncs a repair makes, in order: its own (the backup
    directory, the board directory after the new manifest) and those of the
    durable code it uses (the parents of a backup directory it creates)."""
    import rankengine.durable.board as durable_module
    import rankengine.durable.manifest as manifest_module
    import rankengine.durable.opening as opening_module
    import rankengine.durable.options as options_module
    import rankengine.durable.recovery as recovery_module
    import rankengine.durable.repair as repair_module

    return _record_fsyncs(
        monkeypatch,
        manifest_module,
        repair_module,
        durable_module,
        opening_module,
        recovery_module,
        options_module,
    )


@pytest.fixture
def periodic_fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, list[str]]]:
    """The directory fsyncs a periodic board makes itself (closed markers,
    archives, dropped periods), not those of its period boards."""
    import rankengine.timed.archive as archive_module
    import rankengine.timed.store as store_module

    return _record_fsyncs(monkeypatch, archive_module, store_module)


# -- loaders under python -O ----------------------------------------------------

#: The checkout these tests run from (put on the path of child interpreters).
ROOT = Path(__file__).resolve().parents[1]

LOAD_SCRIPT = """
import sys
from rankengine.trending.sketch import CountMinSketch
from rankengine.trending.topk import TopK
for name, blob in zip(sys.argv[1::2], sys.argv[2::2]):
    try:
        loaded = {"sketch": CountMinSketch, "topk": TopK}[name].from_bytes(bytes.fromhex(blob))
    except ValueError as exc:
        print("ValueError:", exc)
    else:
        print("loaded", loaded)
"""


def load_optimised(*blobs: tuple[str, bytes]) -> list[str]:
    """Load each ``(kind, blob)`` under ``python -O`` (asserts stripped): one line each."""
    args = [arg for kind, blob in blobs for arg in (kind, blob.hex())]
    out = subprocess.run(
        [sys.executable, "-O", "-c", LOAD_SCRIPT, *args],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return out.stdout.splitlines()


# ----------------------------------------------------------------------
# Redis-backed boards: fixtures for them go below this line.
# ----------------------------------------------------------------------
