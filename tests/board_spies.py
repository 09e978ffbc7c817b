"""Spies on a Redis board: which of its functions (or library scripts) a
call ran, for the tests of paths that must run none or exactly one."""

from __future__ import annotations

from typing import Any


def functions_run(board: Any, monkeypatch: Any) -> list[str]:
    """Record the name of every function (or library script) ``board``
    runs from now on, in order, in the list returned."""
    ran: list[str] = []
    real = board._run

    def run(name: str, *args: Any) -> Any:
        ran.append(name)
        return real(name, *args)

    monkeypatch.setattr(board, "_run", run)
    return ran
