"""``bench/replay.py`` on tiny logs: every kind (a durable board's log, a
one-view ledger's, a four-view ledger's) is written, opened with this tree
and with another tree's code in turn, and reported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("kind", ["board", "ledger", "ledger-four"])
def test_each_kind_opens_and_reports(kind: str) -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "replay.py"),
            *("--kind", kind, "--records", "300", "--players", "40", "--repeats", "1"),
            *("--baseline", "HEAD"),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert f"({kind}) ..." in done.stdout
    assert "old (HEAD):" in done.stdout
    assert "new / old (cpu):" in done.stdout
