"""Teaching: pictures and narration of the skip list.

Owns the text and SVG pictures (``viz``) and the step-by-step narration of
searches, inserts, deletes and score changes that checks itself against the
real list (``narrate``).

May import: :mod:`rankengine.index` and :mod:`rankengine.board`.
"""

from __future__ import annotations

__all__: list[str] = []
