"""The package type-checks under mypy --strict and is ruff clean.

These run the real tools on the real tree, so a change that breaks typing
or lint fails the suite like any other test.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, check=False
    )


def test_mypy_strict_is_clean() -> None:
    result = _run("mypy")  # files and strictness come from pyproject.toml
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_check_is_clean() -> None:
    result = _run("ruff", "check", "rankengine", "tests", "bench")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_is_clean() -> None:
    result = _run("ruff", "format", "--check", "rankengine", "tests", "bench")
    assert result.returncode == 0, result.stdout + result.stderr


def test_incr_without_when_is_typed_as_a_score(tmp_path: Path) -> None:
    """``incr`` without ``when=`` returns the new score, never None, and its
    type says so: ``total: Score = board.incr(...)`` type-checks.  With
    ``when=`` the result may be None (a blocked write)."""
    snippet = tmp_path / "uses_incr.py"
    snippet.write_text(
        "from typing import assert_type\n"
        "from rankengine import Leaderboard, RedisLeaderboard, ShardedLeaderboard\n"
        "from rankengine.board.scoring import Score\n"
        "\n"
        "def use(b: Leaderboard, r: RedisLeaderboard, s: ShardedLeaderboard) -> None:\n"
        "    for board in (b, r, s):\n"
        "        assert_type(board.incr('ann'), Score)\n"
        "        assert_type(board.incr('ann', 2.5, when=None), Score)\n"
        "        assert_type(board.incr('ann', 1, when='present'), Score | None)\n"
    )
    result = _run("mypy", "--strict", str(snippet))
    assert result.returncode == 0, result.stdout + result.stderr


def test_open_and_connect_options_are_typed(tmp_path: Path) -> None:
    """``rankengine.open_board`` and ``connect_board`` take ``**options``
    typed with the durable and Redis boards' keywords: a type checker
    refuses a misspelt option or a bad value before the code runs."""
    snippet = tmp_path / "uses_open.py"
    snippet.write_text(
        "from rankengine import connect_board, open_board\n"
        "\n"
        "def use(path: str) -> None:\n"
        "    open_board(path, fsync='never', retain_log=True, order=('desc', 'asc'))\n"
        "    connect_board('redis://localhost', 'daily', prefix='app:', fsync='always')\n"
        "    open_board(path, retian_log=True)\n"
        "    open_board(path, fsync='sometimes')\n"
        "    connect_board('redis://localhost', 'daily', prefx='app:')\n"
    )
    result = _run("mypy", "--strict", str(snippet))
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    assert [line.split(":")[1] for line in errors] == ["6", "7", "8"], result.stdout
