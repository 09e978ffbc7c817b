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
