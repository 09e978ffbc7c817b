"""The package's public names: every name in ``__all__`` resolves."""

from __future__ import annotations

import importlib
import subprocess
import sys

import rankengine


def test_every_public_name_resolves() -> None:
    for name in rankengine.__all__:
        assert getattr(rankengine, name) is not None, name


def test_lazy_names_are_the_module_objects() -> None:
    for name, module in rankengine._LAZY.items():
        assert getattr(rankengine, name) is getattr(importlib.import_module(module), name)


def test_import_does_not_need_the_redis_client() -> None:
    code = (
        "import sys; sys.modules['redis'] = None\n"
        "import rankengine\n"
        "b = rankengine.Leaderboard(); b.set('a', 1); print(b.rank('a'))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "1"
