"""Changes: the one vocabulary in which a board is ever mutated.

Every public write of a :class:`~rankengine.Leaderboard` is validated, then
turned into a list of *changes*, then handed to one method,
``Leaderboard._commit``, which first shows the list to the board's listener
(the event log, when the board is durable) and only then applies it.  Replay
applies the same changes, so a rebuilt board is identical to the live one.

A change records *results*, not requests: the absolute score a member ended
with (never only the increment, so float rounding cannot make a replay
differ) and the logical clock used for first-to-reach tie-breaks.

======================================  =====================================
change                                  meaning
======================================  =====================================
``(PUT, member, score, clock)``         member now has this score; its tie
                                        clock is ``clock``
``(DEL, member)``                       member (and its metadata) is gone
``(META, member, meta_or_None)``        member's metadata replaced/removed
======================================  =====================================

>>> (PUT, DEL, META)
(0, 1, 2)
"""

from __future__ import annotations

from typing import Any, Final, TypeAlias

__all__ = ["DEL", "META", "PUT", "Change"]

#: Member gets an absolute score and a tie clock.
PUT: Final = 0
#: Member removed, with its metadata.
DEL: Final = 1
#: Member's metadata set (a dict) or removed (``None``).
META: Final = 2

#: ``(kind, member, ...)``; see the table in the module docstring.
Change: TypeAlias = tuple[Any, ...]
