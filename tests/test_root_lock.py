"""One writer per root of a durable periodic, decayed or sliding-window board.

These boards keep several board directories under one root and clean up
the root when they open (leftovers of a killed drop, archive or re-base).
A second process opening a root in use must be refused *before* that
cleanup: otherwise it deletes a temporary archive or epoch that the first
process is still writing.  The refusal is the same as for a board
directory (``LogError``: "... is already open for writing"), the lock goes
with ``close()``, and a failed open does not leave the root locked.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rankengine import Entry, Leaderboard
from rankengine.durable.board import DurableLeaderboard
from rankengine.durable.eventlog import LogError
from rankengine.durable.manifest import LOCK_NAME, verify
from rankengine.timed.decay import DecayedLeaderboard
from rankengine.timed.periodic import PeriodicLeaderboard
from rankengine.timed.window import SlidingWindowLeaderboard

ROOT = Path(__file__).resolve().parent.parent

#: 2026-11-30T12:00:00Z: every board below runs at this fixed time.
NOON: float = 1_796_040_000.0

#: A child process that opens the root given as argv[1] with the board
#: kind of argv[2], and prints what happened (it must not get in).
OPENER = """
import sys
from rankengine import Entry
from rankengine.timed.decay import DecayedLeaderboard
from rankengine.timed.periodic import PeriodicLeaderboard
from rankengine.timed.window import SlidingWindowLeaderboard

root, kind = sys.argv[1], sys.argv[2]
clock = lambda: 1_796_040_000.0
try:
    if kind == "periodic":
        board = PeriodicLeaderboard.open(root, "daily", clock=clock, fsync="never")
    elif kind == "window":
        board = SlidingWindowLeaderboard.open(root, "hourly", 3, clock=clock, fsync="never")
    else:
        board = DecayedLeaderboard.open(root, half_life=3600, clock=clock, fsync="never")
except Exception as exc:
    print(type(exc).__name__, exc)
    sys.exit(1)
board.close()
print("opened")
"""


def open_elsewhere(root: Path, kind: str) -> subprocess.CompletedProcess[str]:
    """Open ``root`` in another process (a real second writer)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("RANKENGINE_CRASH_AT", None)
    return subprocess.run(
        [sys.executable, "-c", OPENER, str(root), kind],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def refused(result: subprocess.CompletedProcess[str], root: Path) -> bool:
    """Did the child fail on the root's own lock (not a period's or epoch's)?"""
    return result.returncode == 1 and result.stdout.startswith(
        f"LogError {root} is already open for writing"
    )


def open_periodic(root: Path) -> PeriodicLeaderboard:
    return PeriodicLeaderboard.open(root, "daily", clock=lambda: NOON, fsync="never")


def open_decayed(root: Path) -> DecayedLeaderboard:
    return DecayedLeaderboard.open(root, half_life=3600, clock=lambda: NOON, fsync="never")


def open_window(root: Path) -> SlidingWindowLeaderboard:
    return SlidingWindowLeaderboard.open(root, "hourly", 3, clock=lambda: NOON, fsync="never")


@pytest.mark.parametrize("kind", ["periodic", "window"])
def test_a_second_process_cannot_open_a_periodic_root_or_clean_it_up(
    tmp_path: Path, kind: str
) -> None:
    root = tmp_path / "board"
    board = open_periodic(root) if kind == "periodic" else open_window(root)
    try:
        board.incr("ann", 3)
        # what this process may be in the middle of: writing an archive,
        # deleting a dropped period (the other's open would remove both)
        writing = root / "archive" / ".tmp-abc-2026-11-29.rkarchive"
        writing.write_bytes(b"half an archive")
        dropping = root / "periods" / ".dropped-2026-11-28"
        dropping.mkdir()
        result = open_elsewhere(root, kind)
        assert refused(result, root), (result.stdout, result.stderr)
        assert writing.read_bytes() == b"half an archive"
        assert dropping.is_dir()
        assert board.incr("ann", 1) == 4  # the first process carries on
    finally:
        board.close()
    assert open_elsewhere(root, kind).stdout.strip() == "opened"  # released by close()


def test_a_second_process_cannot_open_a_decayed_root_or_clean_it_up(tmp_path: Path) -> None:
    root = tmp_path / "hot"
    board = open_decayed(root)
    try:
        board.add("ann", 3)
        # what this process may be in the middle of: building the next base
        # (and an old base a finished re-base has not deleted yet)
        staging = root / ".tmp-epoch-1796043600.0"
        staging.mkdir()
        (staging / "log-00000000000000000001.seg").write_bytes(b"being written")
        older = root / "epoch-1.0"
        older.mkdir()
        result = open_elsewhere(root, "decayed")
        assert refused(result, root), (result.stdout, result.stderr)
        assert (staging / "log-00000000000000000001.seg").read_bytes() == b"being written"
        assert older.is_dir()
        assert board.add("ann", 1) == pytest.approx(4.0)
    finally:
        board.close()
    staging_gone = open_elsewhere(root, "decayed")  # released by close(): cleans up
    assert staging_gone.stdout.strip() == "opened", staging_gone
    assert not staging.exists() and not older.exists()


@pytest.mark.parametrize(
    ("opener", "name"),
    [(open_periodic, "periodic"), (open_window, "window"), (open_decayed, "decayed")],
)
def test_one_writer_per_root_in_one_process_too(tmp_path: Path, opener: object, name: str) -> None:
    root = tmp_path / name
    assert callable(opener)
    with opener(root), pytest.raises(LogError, match=f"{root} is already open for writing"):
        opener(root)
    opener(root).close()  # released by close(), and by the refused open


OPENERS = pytest.mark.parametrize(
    "opener",
    [
        lambda root, **kw: PeriodicLeaderboard.open(root, "daily", **kw),
        lambda root, **kw: SlidingWindowLeaderboard.open(root, "hourly", 24, **kw),
        lambda root, **kw: DecayedLeaderboard.open(root, half_life=3600, **kw),
    ],
    ids=["periodic", "window", "decayed"],
)


@OPENERS
@pytest.mark.parametrize(
    "option",
    [{"archive": "elsewhere"}, {"board_factory": lambda period: Leaderboard()}],
    ids=["archive", "board_factory"],
)
def test_open_refuses_the_options_it_would_ignore(
    tmp_path: Path, opener: Any, option: dict[str, Any]
) -> None:
    # the periodic and window opens took archive= (and made that directory)
    # but archived under their own root, and took board_factory= but opened
    # their own boards
    option = {k: tmp_path / v if k == "archive" else v for k, v in option.items()}
    with pytest.raises(TypeError, match=f"'{next(iter(option))}'"):
        opener(tmp_path / "root", fsync="never", **option)
    assert list(tmp_path.iterdir()) == []  # neither the root nor the archive made


@OPENERS
def test_a_bad_fsync_policy_is_refused_before_the_root_is_touched(
    tmp_path: Path, opener: Any
) -> None:
    # The periodic open accepted any policy and refused it only at the first
    # write, which opens a period's board; the window and decayed opens
    # refused it after creating the root and its lock file.
    root = tmp_path / "root"
    with pytest.raises(ValueError, match=r"fsync must be one of .* not 'sometimes'"):
        opener(root, fsync="sometimes")
    assert not root.exists()


@OPENERS
def test_an_unknown_option_is_refused_before_the_root_is_touched(
    tmp_path: Path, opener: Any
) -> None:
    # A misspelt option: the periodic open accepted it and failed at the
    # first write; the decayed open refused it after creating the root.
    root = tmp_path / "root"
    with pytest.raises(TypeError, match="unexpected keyword argument 'retian_log'"):
        opener(root, retian_log=True)
    assert not root.exists()


@OPENERS
@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"compact_ratio": "x"}, TypeError),
        ({"compact_min_bytes": -1}, ValueError),
        ({"retain_log": "yes"}, TypeError),
        ({"on_torn_tail": "ignore"}, ValueError),
        ({"order": "up"}, ValueError),
        ({"tie_break": "last"}, ValueError),
    ],
)
def test_a_bad_option_value_is_refused_before_the_root_is_touched(
    tmp_path: Path, opener: Any, options: dict[str, Any], error: type[Exception]
) -> None:
    # A bad log option: the periodic open accepted it and failed at the
    # first write, the window and decayed opens after creating the root and
    # its lock file; a bad setting: the decayed open, after creating them.
    root = tmp_path / "root"
    with pytest.raises(error):
        opener(root, fsync="never", **options)
    assert not root.exists()


@OPENERS
@pytest.mark.parametrize(
    "bad",
    [{"tie_break": "sideways"}, {"rank_style": "sideways"}, {"backend": "sideways"}],
    ids=["tie_break", "rank_style", "backend"],
)
def test_a_bad_board_setting_is_refused_before_the_root_is_touched(
    tmp_path: Path, opener: Any, bad: dict[str, Any]
) -> None:
    # The decayed open refused a bad board setting only when it opened its
    # first base, after creating the root and its lock file.
    root = tmp_path / "root"
    with pytest.raises(ValueError, match=r"tie.break|rank style|backend"):
        opener(root, **bad)
    assert not root.exists()


@pytest.mark.parametrize(
    "bad",
    [{"half_life": -1.0}, {"half_life": None}, {"rebase_after": 1e9}],
    ids=["negative", "missing", "rebase_after"],
)
def test_a_bad_decay_setting_is_refused_before_the_root_is_touched(
    tmp_path: Path, bad: dict[str, Any]
) -> None:
    root = tmp_path / "root"
    with pytest.raises(ValueError):
        DecayedLeaderboard.open(root, **{"half_life": 3600.0, **bad})
    assert not root.exists()


@OPENERS
def test_the_log_options_reach_the_durable_boards(tmp_path: Path, opener: Any) -> None:
    # The window open refused every log option: its window board, which
    # stays in memory, was made with them.
    root = tmp_path / "root"
    options = {"retain_log": True, "compact_ratio": 3.0, "on_torn_tail": "refuse"}
    with opener(root, fsync="never", **options) as board:
        if isinstance(board, DecayedLeaderboard):
            board.add("ann", 1)
            durable = board.board
        else:
            board.incr("ann", 1)
            periods = board if isinstance(board, PeriodicLeaderboard) else board.buckets
            durable = periods.board()
        assert isinstance(durable, DurableLeaderboard)
        assert durable._retain is True and durable._compact_ratio == 3.0


@pytest.mark.parametrize(
    "make",
    [
        lambda **kw: PeriodicLeaderboard("daily", **kw),
        lambda **kw: SlidingWindowLeaderboard("hourly", 24, **kw),
    ],
    ids=["periodic", "window"],
)
def test_an_in_memory_time_board_takes_board_settings_only(make: Any) -> None:
    # An in-memory periodic board accepted anything and failed at the first
    # read or write, which makes a period's board.
    for option in ("retian_log", "retain_log"):
        with pytest.raises(TypeError, match=f"unexpected keyword argument '{option}'"):
            make(**{option: True})
    board = make(order="asc", tie_break="member")
    board.incr("ann", 1)
    if isinstance(board, SlidingWindowLeaderboard):
        board.refresh()  # a window's reads see its last refresh
    assert board.top() == [Entry("ann", 1, 1, None)]


def test_a_failed_periodic_open_releases_the_root_and_the_periods_it_opened(
    tmp_path: Path,
) -> None:
    root = tmp_path / "board"
    with open_periodic(root) as board:
        board.incr("ann", 3)
    # a period directory that is not a board: the open fails after it has
    # locked the root and opened the period before it
    broken = root / "periods" / "2026-12-01"
    broken.mkdir()
    (broken / "notes.txt").write_text("not a board")
    with pytest.raises(LogError, match="refusing to create"):
        open_periodic(root)
    shutil.rmtree(broken)
    with open_periodic(root) as again:  # neither the root nor 2026-11-30 stayed locked
        assert again.score("ann") == 3
        with pytest.raises(LogError, match=f"{root} is already open for writing"):
            open_periodic(root)


def test_a_failed_window_open_releases_the_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "window"
    with open_window(root) as window:
        window.incr("ann", 3)

    def broken_refresh(self: SlidingWindowLeaderboard) -> None:
        raise OSError("the refresh failed")

    monkeypatch.setattr(SlidingWindowLeaderboard, "refresh", broken_refresh)
    with pytest.raises(OSError, match="the refresh failed"):
        open_window(root)
    monkeypatch.undo()
    with open_window(root) as again:
        assert again.score("ann") == 3
        with pytest.raises(LogError, match=f"{root} is already open for writing"):
            open_window(root)


def test_a_failed_decayed_open_releases_the_root(tmp_path: Path) -> None:
    root = tmp_path / "hot"
    with open_decayed(root) as board:
        board.add("ann", 3)
        t0 = board.t0
    epoch = root / f"epoch-{t0!r}"
    (epoch / "notes.txt").write_text("not a board")  # the base refuses to open
    (epoch / "MANIFEST").rename(root / "MANIFEST.saved")
    with pytest.raises(LogError):
        open_decayed(root)
    (epoch / "notes.txt").unlink()
    (root / "MANIFEST.saved").rename(epoch / "MANIFEST")
    with open_decayed(root) as again:
        assert again.score("ann") == pytest.approx(3.0)
        with pytest.raises(LogError, match=f"{root} is already open for writing"):
            open_decayed(root)


def test_the_root_lock_is_not_a_board_and_board_tools_ignore_it(tmp_path: Path) -> None:
    """The root's lock file sits beside the board directories, not in one:
    reopening keeps it (and everything else), and each period's and epoch's
    directory still verifies healthy, with no note about a stray file."""
    periodic, decayed = tmp_path / "periodic", tmp_path / "decayed"
    for _ in range(2):
        with open_periodic(periodic) as board:
            board.incr("ann", 1)
        with open_decayed(decayed) as hot:
            hot.add("ann", 1)
    assert sorted(p.name for p in periodic.iterdir()) == [LOCK_NAME, "archive", "closed", "periods"]
    assert sorted(p.name for p in decayed.iterdir()) == [LOCK_NAME, f"epoch-{NOON!r}"]
    for directory in [*(periodic / "periods").iterdir(), *decayed.glob("epoch-*")]:
        report = verify(str(directory))
        assert report.healthy and not report.findings, [str(f) for f in report.findings]


@pytest.mark.parametrize("kind", ["periodic", "window", "decayed"])
def test_a_new_root_is_made_durable_in_its_parent(
    tmp_path: Path, dir_fsyncs: list[tuple[str, list[str]]], kind: str
) -> None:
    """open() creates a missing root (and its missing parents); each new
    entry reaches the disk only with an fsync of the directory holding it,
    as for a board directory, or a power cut can lose the whole root with
    every period (or base) acknowledged in it."""
    from rankengine.timed.periodic import PeriodicLeaderboard
    from rankengine.timed.window import SlidingWindowLeaderboard

    calls = dir_fsyncs
    root = tmp_path / "a" / "root"
    board: Any
    if kind == "periodic":
        board = PeriodicLeaderboard.open(root, "daily", fsync="never")
    elif kind == "window":
        board = SlidingWindowLeaderboard.open(root, "hourly", 4, fsync="never")
    else:
        board = DecayedLeaderboard.open(root, half_life=3600.0, fsync="never")
    board.close()
    assert (str(tmp_path / "a"), ["root"]) in calls
    assert (str(tmp_path), ["a"]) in calls
