"""The package's public names: every name in ``__all__`` resolves, and every
name the documentation imports is in its module's ``__all__``."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

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


def test_every_name_the_docs_import_is_public() -> None:
    # docs/log-format.md imports write_prefix and docs/durability.md repair,
    # which their modules' __all__ left out (so ``import *`` and the API
    # reference's readers did not see them).
    root = Path(__file__).resolve().parent.parent
    pages = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    missing = []
    for page in pages:
        for module, names in re.findall(
            r"from (rankengine[\w.]*) import ([\w, ]+)", page.read_text()
        ):
            public = getattr(importlib.import_module(module), "__all__", [])
            missing += [
                (page.name, module, n.strip()) for n in names.split(",") if n.strip() not in public
            ]
    assert missing == []


def test_the_log_errors_a_durable_board_raises_are_exported() -> None:
    from rankengine.durable.eventlog import (
        CorruptionError,
        LogError,
        RecordTooLargeError,
        TornTailError,
    )

    assert (
        rankengine.LogError,
        rankengine.CorruptionError,
        rankengine.TornTailError,
        rankengine.RecordTooLargeError,
    ) == (LogError, CorruptionError, TornTailError, RecordTooLargeError)
    errors = {"LogError", "CorruptionError", "TornTailError", "RecordTooLargeError"}
    assert errors <= set(rankengine.__all__)
