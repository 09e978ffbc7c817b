"""Skip-list pictures as SVG: the text picture's layout, drawn in colour.

:func:`render_svg` draws one list (with a search on it, or changed links);
:func:`svg_document` puts several :class:`Panel` pictures in one
self-contained SVG file (the before and after of a narrated change).  The
layout -- one row per level, a column per node, the span on every link --
is :mod:`rankengine.teach.viz`'s; the colours are those of the text
picture's line styles: grey for a plain link, red for the search path,
orange for a changed span.

>>> from rankengine.teach.viz import HeightScript, teaching_list
>>> sl = teaching_list([10, 20, 5], rng=HeightScript(1).force(1, 2, 1))
>>> "<svg" in render_svg(sl) and render_svg(sl).rstrip().endswith("</svg>")
True
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final
from xml.sax.saxutils import escape as _xml_escape
from xml.sax.saxutils import quoteattr as _xml_quoteattr

from rankengine.index.skiplist import (
    SkipList,
)
from rankengine.teach.viz import (
    _FOLLOWED,
    _PLAIN,
    NIL,
    LabelMode,
    Shape,
    _style,
    shape_of,
    text_width,
)

if TYPE_CHECKING:
    from rankengine.teach.trace import Trace

__all__ = ["Panel", "counted", "render_svg", "svg_document"]


# ----------------------------------------------------------------------
# SVG pictures
# ----------------------------------------------------------------------

#: Pixel geometry of the SVG pictures.
_CHAR_W: Final = 8
_BOX_H: Final = 26
_ROW_H: Final = 46
_GAP: Final = 46
_LEFT: Final = 44
_COLORS: Final = ("#555555", "#d62728", "#e67e00")
_STYLE_NAMES: Final = ("plain", "followed", "changed")


@dataclass(frozen=True)
class Panel:
    """One picture in an SVG document: a shape, an optional search to draw
    on it, links to mark as changed, a title and caption lines."""

    shape: Shape
    trace: Trace | None = None
    changed: frozenset[tuple[int, int]] = frozenset()
    title: str = ""
    caption: tuple[str, ...] = ()


#: Characters XML 1.0 cannot hold at all, even escaped: C0 controls but tab,
#: newline and carriage return, lone surrogates, and U+FFFE/U+FFFF.
_NOT_XML: Final = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml_safe(text: str) -> str:
    """``text`` with what XML cannot hold written as ``\\xNN``/``\\uNNNN``."""
    return _NOT_XML.sub(lambda m: ascii(m.group())[1:-1], text)


def counted(n: int, singular: str, plural: str) -> str:
    """``n`` and the noun in the number it needs: "1 entry", "2 entries".

    Runtime complexity: O(1)

    >>> counted(1, "entry", "entries"), counted(0, "level", "levels")
    ('1 entry', '0 levels')
    """
    return f"{n} {singular if n == 1 else plural}"


def _escape(text: str) -> str:
    """``text`` as SVG character data (markup escaped, non-XML characters spelled out)."""
    return _xml_escape(_xml_safe(text))


def _quoteattr(text: str) -> str:
    """``text`` as a quoted SVG attribute value (see :func:`_escape`)."""
    return _xml_quoteattr(_xml_safe(text))


def render_svg(
    source: SkipList | Shape | Any,
    trace: Trace | None = None,
    *,
    changed: Iterable[tuple[int, int]] = (),
    title: str | None = None,
    label: LabelMode | None = None,
) -> str:
    """The same picture as :func:`render_text`, as a self-contained SVG file.

    Each node is one ``<g class="node">`` (a box per level it is on), NIL
    is a ``<g class="nil">``, each link one ``<g class="link">`` (an arrow
    and its span; class ``followed`` or ``changed`` added when it is one),
    each drop of a search one ``<path class="drop">``.  No scripts, fonts
    or external references; the output depends only on the input.

    Runtime complexity: O(N * level)

    >>> import xml.etree.ElementTree as ET
    >>> from rankengine.teach.trace import trace_key
    >>> from rankengine.teach.viz import teaching_list
    >>> sl = teaching_list([3, 1, 2], rng=1)
    >>> root = ET.fromstring(render_svg(sl, trace_key(sl, 2)))
    >>> root.tag
    '{http://www.w3.org/2000/svg}svg'
    """
    shape = shape_of(source, label)
    if title is None:
        title = (
            f"A skip list of {counted(shape.length, 'entry', 'entries')} "
            f"on {counted(shape.level, 'level', 'levels')}"
        )
        if trace is not None:
            title += (
                f": the search for {trace.target[0]}"
                if trace.kind == "key"
                else f": finding rank {trace.target}"
            )
    return svg_document([Panel(shape, trace, frozenset(changed), title)])


def svg_document(panels: Sequence[Panel]) -> str:
    """An SVG file showing ``panels`` one below the other."""
    parts: list[str] = []
    y = 12
    width = 0
    for panel in panels:
        body, w, h = _svg_panel(panel, y)
        parts.extend(body)
        width = max(width, w)
        y += h + 18
    height = y
    title = " / ".join(p.title for p in panels if p.title) or "A skip list"
    markers = "".join(
        f'<marker id="arrow-{name}" viewBox="0 0 10 10" refX="9" refY="5" '
        'markerUnits="userSpaceOnUse" markerWidth="10" markerHeight="10" '
        f'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="{color}"/></marker>'
        for name, color in zip(_STYLE_NAMES, _COLORS, strict=True)
    )
    head = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="DejaVu Sans Mono, Menlo, Consolas, '
        'monospace" font-size="13">',
        f"<title>{_escape(title)}</title>",
        f"<defs>{markers}</defs>",
        f'<rect class="background" x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
    ]
    return "\n".join([*head, *parts, "</svg>"]) + "\n"


def _svg_panel(panel: Panel, top: int) -> tuple[list[str], int, int]:
    shape, trace = panel.shape, panel.trace
    labels = shape.labels
    nil = shape.nil
    level = shape.level
    box = [max(40, _CHAR_W * text_width(lab) + 16) for lab in labels]
    x = [_LEFT]
    for k in range(nil):
        x.append(x[-1] + box[k] + _GAP)
    y0 = top + (24 if panel.title else 0)

    def row_y(i: int) -> int:
        return y0 + (level - 1 - i) * _ROW_H

    followed = {(s.level, s.src) for s in trace.steps} if trace else set()
    changed = set(panel.changed)
    out: list[str] = []
    if panel.title:
        out.append(f'<text class="title" x="{_LEFT}" y="{top + 14}" font-weight="bold">')
        out[-1] += f"{_escape(panel.title)}</text>"
    for i in range(level):
        out.append(f'<text class="level" x="8" y="{row_y(i) + 18}" fill="#777777">L{i}</text>')
    bottom = row_y(0) + _BOX_H
    # Nodes: one group per node, a box on every level it reaches.
    for k in range(nil):
        kind = "header" if k == 0 else "entry"
        fill = "#dfe6f3" if k == 0 else "#f6f6f6"
        attrs = f'class="node {kind}" data-rank="{k}" data-height="{shape.heights[k]}"'
        if k:
            attrs += f" data-label={_quoteattr(labels[k])}"
        group = [f"<g {attrs}>"]
        for i in range(shape.heights[k]):
            group.append(
                f'<rect x="{x[k]}" y="{row_y(i)}" width="{box[k]}" height="{_BOX_H}" rx="3" '
                f'fill="{fill}" stroke="#333333"/>'
            )
            group.append(
                f'<text x="{x[k] + box[k] // 2}" y="{row_y(i) + 18}" '
                f'text-anchor="middle">{_escape(labels[k])}</text>'
            )
        group.append(
            f'<text class="rank" x="{x[k] + box[k] // 2}" y="{bottom + 18}" text-anchor="middle" '
            f'fill="#777777">{k}</text>'
        )
        group.append("</g>")
        out.append("".join(group))
    out.append(
        f'<g class="nil"><rect x="{x[nil]}" y="{row_y(level - 1)}" width="{box[nil]}" '
        f'height="{bottom - row_y(level - 1)}" rx="3" fill="#eeeeee" stroke="#333333"/>'
        f'<text x="{x[nil] + box[nil] // 2}" y="{(row_y(level - 1) + bottom) // 2 + 5}" '
        f'text-anchor="middle">{NIL}</text></g>'
    )
    out.append(f'<text class="rank" x="8" y="{bottom + 18}" fill="#777777">rank</text>')
    # Links: one group per link, the arrow and its span.
    for link in shape.links():
        style = _style(link.level, link.src, followed, changed)
        name = _STYLE_NAMES[style]
        color = _COLORS[style]
        x1 = x[link.src] + box[link.src]
        x2 = x[link.dst] - 1
        y = row_y(link.level) + _BOX_H // 2
        classes = "link" if style == _PLAIN else f"link {name}"
        stroke = "1.4" if style == _PLAIN else "2.6"
        out.append(
            f'<g class="{classes}" data-level="{link.level}" data-from="{link.src}" '
            f'data-to="{link.dst}" data-span="{link.span}">'
            f'<line x1="{x1}" y1="{y}" x2="{x2}" y2="{y}" stroke="{color}" '
            f'stroke-width="{stroke}" marker-end="url(#arrow-{name})"/>'
            f'<text x="{(x1 + x2) // 2}" y="{y - 5}" text-anchor="middle" fill="{color}">'
            f"{link.span}</text></g>"
        )
    if trace is not None:
        color = _COLORS[_FOLLOWED]
        for lvl, node in trace.drops():
            cx = x[node] + box[node] // 2
            out.append(
                f'<path class="drop" d="M {cx} {row_y(lvl) + _BOX_H} L {cx} {row_y(lvl - 1) - 1}" '
                f'stroke="{color}" stroke-width="2.6" fill="none" '
                f'marker-end="url(#arrow-followed)"/>'
            )
        for lvl, node in trace.restarts():
            out.append(
                f'<circle class="start" cx="{x[node] + 6}" cy="{row_y(lvl) + 6}" r="4" '
                f'fill="{color}"/>'
            )
        end = trace.end
        out.append(
            f'<rect class="end" x="{x[end] - 4}" y="{row_y(0) - 4}" width="{box[end] + 8}" '
            f'height="{_BOX_H + 8}" rx="5" fill="none" stroke="{color}" stroke-width="2.6"/>'
        )
    y = bottom + 22
    legend = [f"the number on a link is its span; each level's spans add up to {shape.length}"]
    if trace is not None:
        legend.append("red: the links the search crossed and where it dropped; framed: its end")
        if trace.starts:
            legend.append("red dot: where it started a level from an old update[i]")
    if changed:
        legend.append("orange: links whose span changed")
    for line in [*legend, *panel.caption]:
        y += 18
        out.append(
            f'<text class="caption" x="{_LEFT}" y="{y}" fill="#444444">{_escape(line)}</text>'
        )
    lines = [panel.title, *legend, *panel.caption]
    width = max(x[nil] + box[nil], _LEFT + _CHAR_W * max(map(text_width, lines))) + 16
    return out, width, y - top
