"""The tie map's stops harness (``bench/tie_stops.py``) runs, small, and
reports what it measured; no wall-clock figure is asserted."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

import tie_stops  # noqa: E402


def test_maps_and_board_runs_report(capsys: pytest.CaptureFixture[str]) -> None:
    tie_stops.main(["maps", "--entries", "30000", "--rounds", "2"])
    out = capsys.readouterr().out
    assert "dict doublings" in out and "    21,846:" in out  # one of a dict's doublings
    assert "TieMap: inserts >= 100 us per round" in out
    tie_stops.main(["board", "-n", "3000", "--calls", "20000", "--show-ns", "0"])
    out = capsys.readouterr().out
    assert "20,000 calls back to back, tie map (256 shards)" in out
    assert "tie map resizes: " in out and "resized to" in out  # every resize listed
