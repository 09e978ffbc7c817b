"""Hooks the layers above fill in: how a lower layer reaches one above it.

The time boards' opens (``PeriodicLeaderboard.open``...) must open a
directory that holds a ledger as that ledger's one view, but the ledger
is built on the time boards, which therefore cannot import it.  The
package root, which sits on top of every layer, registers the ledger's
opener here when it is imported (this module is imported with the board
package, before any time board: registering costs no import of the
durable or ledger packages); :func:`rankengine.durable.kinds.as_ledger_view`
calls it.

>>> registered = ledger_view_opener()  # (the package root's, put back below)
>>> calls = []
>>> set_ledger_view_opener(lambda directory, kind, options: calls.append(kind))
>>> ledger_view_opener()("DIR", "periodic", {}), calls
(None, ['periodic'])
>>> set_ledger_view_opener(registered)
>>> ledger_view_opener() is registered
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["LedgerViewOpener", "ledger_view_opener", "set_ledger_view_opener"]

#: ``opener(directory, kind, options)``: the board of the ledger's one view.
LedgerViewOpener = Callable[[str, str, dict[str, Any]], Any]
_OPENER: list[LedgerViewOpener] = []


def set_ledger_view_opener(opener: LedgerViewOpener) -> None:
    """Register the opener of a ledger's one view as a board (the package
    root registers the ledger's).

    Runtime complexity: O(1)
    """
    _OPENER[:] = [opener]


def ledger_view_opener() -> LedgerViewOpener | None:
    """The registered opener, or None.

    Runtime complexity: O(1)
    """
    return _OPENER[0] if _OPENER else None
