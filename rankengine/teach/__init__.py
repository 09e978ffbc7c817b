"""Teaching: pictures and narration of the skip list.

Owns the shapes and text pictures (``viz``) and their SVG drawing
(``svg``), traced searches (``trace``), the
step-by-step narration of inserts, deletes and score changes that checks
itself against the real list (``narrate``), the explorer's data, counted costs, scenarios and
page (``explore``, ``explore_count``, ``explore_sorted``, ``explore_data``,
``explore_page``) and the notebook pictures (``notebook``).

May import: :mod:`rankengine.index` and :mod:`rankengine.board`.
"""

from __future__ import annotations

__all__: list[str] = []
