"""The command line: ``rankengine <command>``, one module per command group.

Owns the entry point (``main``), shared argument types (``args``), output
files (``files``), the log tools (``log``: inspect, verify, repair, replay),
trending (``trending``), the skip-list pictures (``viz``) and the demo
(``demo``).

May import: every other package; nothing imports it.
"""

from __future__ import annotations

__all__: list[str] = []
