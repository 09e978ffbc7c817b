"""Pictures in notebooks: a small skip list or board draws itself.

Jupyter shows an object by calling its ``_repr_html_``.
:class:`~rankengine.index.skiplist.SkipList` and the in-process boards
(``Leaderboard`` and its kin, through ``BoardCore``) answer with
:func:`html_of`: the SVG picture of :func:`rankengine.teach.svg.render_svg`
(levels, links and spans) while the list has at most :data:`MAX_DRAWN`
entries, and a short summary beyond (a picture of thousands of nodes would
only be a wide grey band).  A board on the sorted-list backend has no links
to draw: it shows its best entries as a table.

>>> from rankengine.teach.viz import teaching_list
>>> html = teaching_list([3, 1, 2], rng=1)._repr_html_()
>>> html.startswith("<svg"), 'class="link"' in html
(True, True)
"""

from __future__ import annotations

from html import escape
from typing import Any, Final

from rankengine.index.skiplist import SkipList
from rankengine.teach.svg import counted, render_svg

__all__ = ["MAX_DRAWN", "TOP_SHOWN", "html_of"]

#: Most entries drawn: about two screens wide at the SVG's node spacing.
MAX_DRAWN: Final = 64
#: Rows of the table shown for a board that is not drawn.
TOP_SHOWN: Final = 10


def _summary(text: str, note: str) -> str:
    return f"<pre>{escape(text)}</pre><p><small>{escape(note)}</small></p>"


def html_of(source: Any) -> str:
    """The notebook view of a skip list or a board (see the module).

    Runtime complexity: O(N * level) when drawn, else O(log N + TOP_SHOWN)

    >>> from rankengine import Leaderboard
    >>> board = Leaderboard(backend="sortedlist")
    >>> board.set_many({"ann": 3, "bob": 5})
    2
    >>> print(html_of(board).splitlines()[0])
    <table><caption>Leaderboard: 2 members (sortedlist backend: no links to draw)</caption>
    """
    index = source if isinstance(source, SkipList) else getattr(source, "_index", None)
    n = len(source)
    name = type(source).__name__
    if isinstance(index, SkipList):
        if n <= MAX_DRAWN:
            svg = render_svg(source)
            return svg[svg.index("<svg") :]  # inline: no XML declaration in HTML
        return _summary(
            repr(source),
            f"{counted(n, 'entry', 'entries')} on {counted(index.level, 'level', 'levels')}: "
            f"more than {MAX_DRAWN}, so not drawn.  "
            "rankengine.teach.viz.render_text(x, layout='vertical') draws any size as text.",
        )
    top = getattr(source, "top", None)
    if not callable(top):
        return _summary(repr(source), "")
    rows = "".join(
        f"<tr><td>{e.rank}</td><td>{escape(str(e.member))}</td><td>{escape(str(e.score))}</td></tr>"
        for e in top(TOP_SHOWN)
    )
    backend = type(index).__name__.replace("Index", "").lower() if index is not None else "?"
    caption = f"{name}: {counted(n, 'member', 'members')} ({backend} backend: no links to draw)"
    more = f"<tr><td colspan=3>... {n - TOP_SHOWN} more</td></tr>" if n > TOP_SHOWN else ""
    return (
        f"<table><caption>{escape(caption)}</caption>\n"
        f"<tr><th>rank</th><th>member</th><th>score</th></tr>{rows}{more}</table>"
    )
