"""The board A/B tool (``bench/ab_board.py``) on tiny inputs: it loads the
whole package of a git ref twice under private names, and reports each
workload for this tree and for the control copy against the ref."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

import ab_board  # noqa: E402

import rankengine  # noqa: E402


def test_a_run_reports_every_workload_for_both_sides(capsys: pytest.CaptureFixture[str]) -> None:
    ab_board.main(["--ref", "HEAD", "--size", "300", "--ops", "40", "--rounds", "2"])
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split() for line in out.strip().splitlines()[1:]}
    assert sorted(rows) == ["incr", "mixed", "rank", "top10"]
    for row in rows.values():
        # "<name> this/ref <x> control/ref <y> ns/op: ..."
        assert float(row[2]) > 0 and float(row[4]) > 0
    # The ref's packages are copies of their own, not this tree's.
    for name in ab_board.SIDES:
        ref = sys.modules[name]
        assert ref.Leaderboard is not rankengine.Leaderboard
        assert ref.Leaderboard.__module__.startswith(name)
    board = sys.modules[ab_board.SIDES[0]].Leaderboard()
    board.set_many({"ann": 3, "bob": 5})
    assert board.rank("bob") == 1
    board._check()
