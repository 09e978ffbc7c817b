"""Messages that name the next step (issue 22).

* reading a period that left memory says how to read it (``load_archived``),
  or why it cannot be read;
* ``rankengine inspect``/``verify``/``repair``/``replay`` on the root of a
  periodic board, a sliding window or a decayed board say what the root is
  and name the board directories to pass.

(A bad item of a batch write is named on every board kind in
``tests/test_board_conformance.py``.)
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from rankengine import DecayedLeaderboard, PeriodicLeaderboard, SlidingWindowLeaderboard
from rankengine.cli.log import main

DAY = 86_400.0
#: Monday 2026-11-30 12:00 UTC: in week 2026-W49.
MONDAY = 1_796_040_000.0


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def _cli(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


def test_an_archived_period_names_load_archived(tmp_path: Path) -> None:
    clock = Clock(MONDAY)
    board = PeriodicLeaderboard("weekly", keep=1, clock=clock, archive=tmp_path / "archive")
    board.set("ann", 5)
    name = board.periods()[0].name
    clock.t += 21 * DAY
    board.tick()
    assert board.archived() == [name]
    with pytest.raises(KeyError) as raised:
        board.board(name)
    text = str(raised.value)
    assert f"load_archived({name!r})" in text and "keep=1" in text
    assert board.load_archived(name).items() == [("ann", 5)]  # and that is how it reads


def test_a_dropped_period_without_an_archive_says_so() -> None:
    clock = Clock(MONDAY)
    board = PeriodicLeaderboard("weekly", keep=0, clock=clock)
    board.set("ann", 5)
    name = board.periods()[0].name
    clock.t += 21 * DAY
    board.tick()
    with pytest.raises(KeyError, match=r"no archive .*pass archive="):
        board.board(name)
    with pytest.raises(KeyError, match="has not started yet"):
        board.board("2030-W01")


@pytest.fixture
def roots(tmp_path: Path) -> dict[str, Path]:
    clock = Clock(MONDAY)
    made = {"periodic": tmp_path / "periodic", "window": tmp_path / "window"}
    made["decayed"] = tmp_path / "decayed"
    with contextlib.closing(PeriodicLeaderboard.open(made["periodic"], "daily", clock=clock)) as p:
        p.set("ann", 1)
    window = SlidingWindowLeaderboard.open(made["window"], "hourly", 3, clock=clock)
    with contextlib.closing(window) as w:
        w.incr("ann", 1)
    with contextlib.closing(DecayedLeaderboard.open(made["decayed"], half_life=60.0)) as d:
        d.add("ann", 1)
    return made


@pytest.mark.parametrize("command", ["inspect", "verify", "repair", "replay"])
@pytest.mark.parametrize("kind", ["periodic", "window", "decayed"])
def test_log_tools_on_a_time_board_root_name_the_boards_inside(
    roots: dict[str, Path], kind: str, command: str
) -> None:
    root = roots[kind]
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    code, out, err = _cli([command, str(root)])
    assert code == (1 if command == "repair" else 2)  # as for any directory holding no board
    assert out == ""
    assert "is not a board directory" in err
    inside = root / "periods" if kind != "decayed" else root
    boards = [p for p in inside.iterdir() if (p / "MANIFEST").exists()]
    assert len(boards) == 1
    assert str(boards[0]) in err, err  # the directory to pass instead
    assert ("periodic board" in err) == (kind != "decayed")
    assert ("decayed board" in err) == (kind == "decayed")
    # and that directory is one the command takes
    assert _cli([command, str(boards[0])])[0] == 0
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before  # nothing changed


def test_a_directory_of_boards_names_them(tmp_path: Path) -> None:
    with contextlib.closing(DecayedLeaderboard.open(tmp_path / "d", half_life=60.0)) as d:
        d.add("ann", 1)
    (epoch,) = (tmp_path / "d").glob("epoch-*")
    epoch.rename(tmp_path / "plain")
    code, _, err = _cli(["verify", str(tmp_path)])
    assert code == 2
    assert "board directories one level down" in err and str(tmp_path / "plain") in err


def test_an_empty_directory_keeps_its_message(tmp_path: Path) -> None:
    code, _, err = _cli(["verify", str(tmp_path)])
    assert code == 2 and "not a board directory (" in err and "MANIFEST" in err
