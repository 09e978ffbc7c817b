"""Pictures of a skip list: its levels, links and spans, as text or SVG.

The text picture is the classic one: one line per level, the top level
first, each node in its own column so that a link visibly jumps over the
nodes it skips, and on each link its *span*, the number of level-0 steps
it jumps (see :mod:`rankengine.index.skiplist`):

>>> sl = teaching_list([10, 20, 5, 15, 25], rng=HeightScript(1).force(1, 2, 1, 3, 1))
>>> print(render_text(sl, legend=False))
L2    HEAD -------3-------> 15 --------2-------> NIL
L1    HEAD -------3-------> 15 -1> 20 ----1----> NIL
L0    HEAD -1> 5 -1> 10 -1> 15 -1> 20 -1> 25 -0> NIL
rank   0       1     2      3      4      5

A search from :func:`rankengine.teach.trace.trace_key` is drawn on top:
``=N=>`` for the links it crossed, ``v`` where it dropped a level, ``^``
where it ended; the spans it crossed add up to the rank it ends on.  A
finger search (:func:`rankengine.teach.trace.trace_finger`, the search for the
new place of a score increase) also marks with ``+`` each node it started a
level from: an old ``update[i]``, not the header.  Lists
too wide for the screen are drawn sideways (``layout="vertical"``): a line
per node, a column per level.  :func:`rankengine.teach.svg.render_svg` draws the same
picture as a self-contained SVG file.

Everything here reads a :class:`Shape`: a frozen copy of the list's nodes,
heights, spans and forward links (:func:`shape_of`), numbered by rank.
:func:`teaching_list` builds a small list from scores with reproducible
heights; :class:`HeightScript` lets an example choose them.

Invariant of a :class:`Shape` (the skip list's, copied)::

    node 0 is the header, nodes 1..n the entries in key order, n + 1 is NIL;
    forward[k][i] is the next node after k whose height is > i (or NIL), and
    spans[k][i] == forward[k][i] - k, except that a link to NIL spans n - k
"""

from __future__ import annotations

import contextlib
import math
import random
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias

from rankengine.board.checks import check_flag
from rankengine.index.protocol import Entry3
from rankengine.index.skiplist import (
    MAX_LEVEL,
    P,
    SkipList,
    node_entry,
    node_forwards,
    node_height,
    node_spans,
)

if TYPE_CHECKING:  # the search traces live with the narrations, which import this module
    from rankengine.teach.trace import Trace

__all__ = [
    "DEFAULT_WIDTH",
    "HeightScript",
    "LabelMode",
    "Layout",
    "Link",
    "Shape",
    "label_of",
    "ljust",
    "make_shape",
    "random_scores",
    "render_text",
    "shape_of",
    "teaching_list",
    "text_width",
]

#: How a node is labelled: its score (primary), its member, its full key
#: ``score/tie``, or any function of the stored ``(primary, tie, member)``.
LabelMode: TypeAlias = Literal["score", "member", "key"] | Callable[[Entry3], str]
#: ``"horizontal"`` (levels are lines), ``"vertical"`` (levels are columns,
#: nodes are lines: fits dozens of nodes in 80 columns) or ``"auto"``
#: (horizontal when it fits in the width, else vertical).
Layout: TypeAlias = Literal["auto", "horizontal", "vertical"]

HEAD: Final = "HEAD"
NIL: Final = "NIL"
#: Text pictures wider than this switch to the vertical layout in ``"auto"``.
DEFAULT_WIDTH: Final = 120
#: The narrowest link between two neighbouring columns: ``" -1> "``.  Only
#: neighbours can be that close, and a link between neighbours spans 0 or 1,
#: so one digit always fits; a longer span jumps over more columns.
_MIN_GAP: Final = 5

# Link styles: how a link is drawn in each layout.
_PLAIN: Final = 0
_FOLLOWED: Final = 1
_CHANGED: Final = 2
_H_FILL: Final = ("-", "=", "~")
_V_FILL: Final = ("|", "#", ":")


# ----------------------------------------------------------------------
# Shapes
# ----------------------------------------------------------------------


@dataclass(frozen=True)
class Link:
    """One link: on ``level``, from node ``src`` to node ``dst`` (node
    numbers as in :class:`Shape`), jumping ``span`` level-0 steps."""

    level: int
    src: int
    dst: int
    span: int


@dataclass(frozen=True)
class Shape:
    """A frozen copy of a skip list's structure, numbered by rank.

    Node 0 is the header, node ``k`` (1 to ``length``) the entry of rank
    ``k`` and node ``length + 1`` stands for NIL, the end of every level.
    ``heights[0]`` is the list's level (the header's links in use).

    >>> shape = shape_of(teaching_list([3, 1, 2], rng=HeightScript(0).force(2, 1, 1)))
    >>> shape.labels, shape.heights, shape.spans[0]
    (('HEAD', '1', '2', '3', 'NIL'), (2, 1, 1, 2), (1, 3))
    """

    entries: tuple[Entry3, ...]
    heights: tuple[int, ...]
    spans: tuple[tuple[int, ...], ...]
    forward: tuple[tuple[int, ...], ...]
    labels: tuple[str, ...]
    label_mode: LabelMode = field(default="score", compare=False, repr=False)

    @property
    def length(self) -> int:
        """Number of entries."""
        return len(self.entries)

    @property
    def level(self) -> int:
        """Number of levels in use."""
        return self.heights[0]

    @property
    def nil(self) -> int:
        """The node number that stands for NIL."""
        return len(self.entries) + 1

    def key(self, node: int) -> tuple[Any, Any]:
        """The key ``(primary, tie)`` of node ``node`` (1 to ``length``)."""
        primary, tie, _ = self.entries[node - 1]
        return (primary, tie)

    def links(self) -> Iterator[Link]:
        """Every link, level 0 first, left to right on each level.

        >>> [(l.level, l.src, l.dst, l.span) for l in shape_of(teaching_list([7])).links()]
        [(0, 0, 1, 1), (0, 1, 2, 0)]
        """
        for i in range(self.level):
            k = 0
            while k != self.nil:
                dst = self.forward[k][i]
                yield Link(i, k, dst, self.spans[k][i])
                k = dst

    def link(self, level: int, src: int) -> Link:
        """The link leaving node ``src`` on ``level``."""
        return Link(level, src, self.forward[src][level], self.spans[src][level])


def label_of(entry: Entry3, mode: LabelMode = "score") -> str:
    """The label of a stored entry.

    Runtime complexity: O(len(label))

    >>> entry = (10, 3, "ann")
    >>> label_of(entry), label_of(entry, "member"), label_of(entry, "key")
    ('10', 'ann', '10/3')
    >>> print(label_of((1, 0, "big bad\\x1b[7mwolf"), "member"))
    big_bad\\x1b[7mwolf
    """
    primary, tie, member = entry
    if mode == "score":
        text = str(primary)
    elif mode == "member":
        text = str(member)
    elif mode == "key":
        text = f"{primary}/{tie}"
    elif callable(mode):
        text = str(mode(entry))
    else:
        raise ValueError(f"label must be 'score', 'member', 'key' or a function, not {mode!r}")
    # One line, no spaces: a label must stay one column of the picture.  What
    # a terminal would not print as a character of its own (a control
    # character, an escape sequence's ESC, a lone surrogate, an accent with
    # no letter before it to mark) is spelled out.
    text = "_".join(text.split())
    if not text.isprintable():
        text = "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)
    if text and unicodedata.combining(text[0]):
        text = ascii(text[0])[1:-1] + text[1:]
    return text or "''"


def _char_width(ch: str) -> int:
    """Terminal columns of one character: 0 for a combining mark, 2 for a
    wide (East Asian wide or fullwidth) one, else 1."""
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def _cells(text: str) -> list[str]:
    """``text`` cut into terminal columns, one string each: a wide character
    fills two (itself, then ``""``), a combining mark joins the character it
    marks (a mark with none before it gets a space)."""
    if text.isascii():
        return list(text)
    cells: list[str] = []
    for ch in text:
        width = _char_width(ch)
        if width == 0:
            if cells:
                cells[-2 if cells[-1] == "" else -1] += ch
            else:
                cells.append(" " + ch)
        else:
            cells += [ch, ""][:width]
    return cells


def text_width(text: str) -> int:
    """How many terminal columns ``text`` takes (see :func:`label_of`): a
    wide character (CJK, fullwidth, most emoji) takes two, a combining
    accent none.  The pictures place labels by it.

    Runtime complexity: O(len(text))

    >>> text_width("bob"), text_width("漢字"), text_width("e\u0301te\u0301")
    (3, 4, 3)
    """
    return len(text) if text.isascii() else len(_cells(text))


def ljust(text: str, width: int) -> str:
    """``text`` padded with spaces to ``width`` terminal columns.

    Runtime complexity: O(len(text) + width)

    >>> ljust("漢字", 6) + "|"
    '漢字  |'
    """
    return text + " " * (width - text_width(text))


def forward_of(heights: Sequence[int]) -> tuple[tuple[int, ...], ...]:
    """The forward links implied by node heights (header first, NIL last).

    Runtime complexity: O(N * level)

    >>> forward_of([2, 1, 2, 1])
    ((1, 2), (2,), (3, 4), (4,))
    """
    nil = len(heights)
    nxt = [nil] * max(heights, default=1)
    out: list[tuple[int, ...]] = [()] * nil
    for k in range(nil - 1, -1, -1):
        h = heights[k]
        out[k] = tuple(nxt[:h])
        nxt[:h] = [k] * h
    return tuple(out)


def spans_of(forward: Sequence[Sequence[int]], length: int) -> tuple[tuple[int, ...], ...]:
    """The spans implied by forward links: rank distance, NIL at ``length``.

    Runtime complexity: O(N * level)

    >>> spans_of(((1, 2), (2,), (3, 3), ()), 2)
    ((1, 2), (1,), (0, 0))
    """
    nil = length + 1
    return tuple(
        tuple((length if dst == nil else dst) - k for dst in links)
        for k, links in enumerate(forward[:nil])
    )


def make_shape(
    entries: Sequence[Entry3], heights: Sequence[int], label: LabelMode = "score"
) -> Shape:
    """The shape of a skip list holding ``entries`` (in key order) with these
    node heights (``heights[0]`` is the header's: the list's level).

    Runtime complexity: O(N * level)

    >>> make_shape([(1, 0, "a"), (2, 0, "b")], [2, 2, 1]).spans
    ((1, 1), (1, 1), (0,))
    """
    heights = tuple(heights)
    forward = forward_of(heights)
    return Shape(
        entries=tuple(entries),
        heights=heights,
        spans=spans_of(forward, len(entries)),
        forward=forward,
        labels=(HEAD, *(label_of(e, label) for e in entries), NIL),
        label_mode=label,
    )


def shape_of(source: SkipList | Shape | Any, label: LabelMode | None = None) -> Shape:
    """Copy the structure of a skip list (or of a skip-list-backed
    :class:`~rankengine.Leaderboard`) into a :class:`Shape`.

    Reads the node structure (the ``header`` and the nodes' forward links,
    spans and entries, see :mod:`rankengine.index.skiplist`) once, holding a
    board's lock as its reads do; the links are the list's real forward
    pointers.

    Runtime complexity: O(N * level)

    >>> shape_of(teaching_list([2, 1], rng=HeightScript(0).force(1, 2))).heights
    (2, 2, 1)

    :param label: node labels (default: the score; members for a board).
    :raises TypeError: for a board on another backend.
    """
    if isinstance(source, Shape):
        if label is None or label == source.label_mode:
            return source
        return make_shape(source.entries, source.heights, label)
    if not isinstance(source, SkipList):
        index = getattr(source, "_index", None)
        if not isinstance(index, SkipList):
            raise TypeError(
                "expected a SkipList, a Shape, or a Leaderboard with backend='skiplist', "
                f"not {type(source).__name__}"
            )
        # the board's own lock, as its reads hold it: a write from another
        # thread must not change the list in the middle of the copy
        with getattr(source, "_lock", None) or contextlib.nullcontext():
            return _copy_shape(index, "member" if label is None else label)
    return _copy_shape(source, "score" if label is None else label)


def _copy_shape(source: SkipList, mode: LabelMode) -> Shape:
    """The body of :func:`shape_of`: copy the nodes of ``source``."""
    header = source.header
    level = source.level
    nodes = list(source._nodes())
    number = {id(x): k for k, x in enumerate(nodes, 1)}
    nil = len(nodes) + 1
    number[id(header)] = 0
    forward = [tuple(nil if f is None else number[id(f)] for f in node_forwards(header)[:level])]
    spans = [tuple(node_spans(header)[:level])]
    heights = [level]
    for x in nodes:
        forward.append(tuple(nil if f is None else number[id(f)] for f in node_forwards(x)))
        spans.append(tuple(node_spans(x)))
        heights.append(node_height(x))
    entries = tuple(node_entry(x) for x in nodes)
    return Shape(
        entries=entries,
        heights=tuple(heights),
        spans=tuple(spans),
        forward=tuple(forward),
        labels=(HEAD, *(label_of(e, mode) for e in entries), NIL),
        label_mode=mode,
    )


# ----------------------------------------------------------------------
# Teaching boards
# ----------------------------------------------------------------------


class HeightScript(random.Random):
    """A seeded ``random.Random`` whose next node heights can be chosen.

    Pass it as a skip list's ``rng``; :meth:`force` queues heights for the
    next level draws, after which the seeded draws resume.  The level draw
    flips a coin (:meth:`random`) until it comes up ``>= P`` or the height
    reaches ``max_level`` (Redis ``zslRandomLevel``), so height ``h`` is
    ``h - 1`` coins below ``P`` and one above.  A draw that reads random
    bits instead (:meth:`getrandbits`, counting trailing ``00`` bit pairs)
    gets the matching pattern.  :func:`rankengine.teach.narrate.narrate_insert`
    checks that the list really drew the height asked for.

    >>> rng = HeightScript(5).force(3, 1)
    >>> sl = SkipList(rng)
    >>> sl.insert(1, 0, "a"); sl.insert(2, 0, "b")
    >>> [len(spans) for *_, spans in sl.levels()]
    [3, 1]

    :param max_level: the ``max_level`` of the list it feeds (the draw stops
        there without flipping another coin).
    """

    #: A coin that climbs (below P) and one that stops (not below P).
    _CLIMB: Final = 0.0
    _STOP: Final = 0.9

    def __init__(self, seed: int | None = None, *, max_level: int = MAX_LEVEL) -> None:
        self._queue: list[int] = []
        self._coins = 0  # coins already given for the height at the queue's head
        self.max_level = max_level
        super().__init__(seed)

    def force(self, *heights: int) -> HeightScript:
        """Queue heights (1 to ``max_level``) for the next level draws;
        returns ``self``."""
        for h in heights:
            if not isinstance(h, int) or isinstance(h, bool) or not 1 <= h <= self.max_level:
                raise ValueError(f"a node height must be from 1 to {self.max_level}, not {h!r}")
        if self.max_level > 1:  # with one level the draw flips no coin at all
            self._queue.extend(heights)
        return self

    @property
    def pending(self) -> int:
        """How many forced heights are still queued."""
        return len(self._queue)

    def random(self) -> float:
        """The next coin of a forced height, or a seeded ``random()``."""
        if not self._queue:
            return super().random()
        height = self._queue[0]
        if self._coins < height - 1:
            self._coins += 1
            if self._coins == height - 1 == self.max_level - 1:
                # At max_level the draw stops without another coin.
                self._pop()
            return self._CLIMB
        self._pop()
        return self._STOP

    def draw(self) -> int:
        """Draw a height from the seeded stream with the skip list's law:
        1, plus one level per coin below ``P``, up to ``max_level``.

        Runtime complexity: O(1) expected

        >>> sorted({HeightScript(s).draw() for s in range(50)})
        [1, 2, 3]
        """
        height = 1
        while height < self.max_level and super().random() < P:
            height += 1
        return height

    def _pop(self) -> None:
        self._queue.pop(0)
        self._coins = 0

    def getrandbits(self, k: int, /) -> int:
        """A forced height as ``00`` bit pairs, or ``k`` seeded random bits."""
        if not self._queue or self._coins:
            return super().getrandbits(k)
        pairs = self._queue.pop(0) - 1
        return 0 if 2 * pairs >= k else 1 << (2 * pairs)


def teaching_list(
    scores: Iterable[Any],
    *,
    rng: random.Random | int | None = 0,
    max_level: int = MAX_LEVEL,
    members: Sequence[Any] | None = None,
) -> SkipList:
    """A skip list made by inserting ``scores`` one by one, in the order given.

    The ``i``-th score becomes the entry ``(score, i, member)``: equal
    scores are ordered by arrival.  With a seed (or a
    :class:`HeightScript`), every height is drawn by :meth:`HeightScript.draw`
    (after any heights already forced), so a picture depends only on the
    seed, not on how the skip list itself draws; with a plain
    ``random.Random`` the list draws its own heights.

    Runtime complexity: O(N log N)

    >>> [e for e in teaching_list([20, 10, 20], members="abc")]
    [(10, 1, 'b'), (20, 0, 'a'), (20, 2, 'c')]

    :param members: one member per score (default ``"s0"``, ``"s1"``, ...).
    """
    scores = list(scores)
    if members is None:
        members = [f"s{i}" for i in range(len(scores))]
    if len(members) != len(scores):
        raise ValueError(f"{len(scores)} scores but {len(members)} members")
    for score in scores:
        if isinstance(score, float) and math.isnan(score):
            raise ValueError("a score must not be NaN")
    if rng is None or isinstance(rng, int):
        rng = HeightScript(rng, max_level=max_level)
    if isinstance(rng, HeightScript):
        if rng.max_level != max_level:
            raise ValueError(f"the HeightScript is for max_level {rng.max_level}, not {max_level}")
        rng.force(*(rng.draw() for _ in range(len(scores) - rng.pending)))
    sl = SkipList(rng, max_level=max_level)
    for i, score in enumerate(scores):
        sl.insert(score, i, members[i])
    return sl


def random_scores(n: int, seed: int | None = 0) -> list[int]:
    """``n`` distinct scores in random order: two digits up to 20 scores.

    Runtime complexity: O(n)

    >>> random_scores(5, seed=1)
    [18, 73, 98, 9, 33]
    """
    if n < 0:
        raise ValueError(f"n must not be negative, got {n}")
    top = 100 if n <= 20 else 10 ** len(str(5 * n))
    return random.Random(seed).sample(range(1, top), n)


# ----------------------------------------------------------------------
# Text pictures
# ----------------------------------------------------------------------


def render_text(
    source: SkipList | Shape | Any,
    trace: Trace | None = None,
    *,
    layout: Layout = "auto",
    width: int = DEFAULT_WIDTH,
    legend: bool = True,
    ranks: bool = True,
    changed: Iterable[tuple[int, int]] = (),
    label: LabelMode | None = None,
) -> str:
    """Draw the levels, links and spans as text, with a search path on top.

    Horizontal layout: one line per level (top level first), a column per
    node, ``-N->`` a link of span N, ``=N=>`` a link the search crossed,
    ``~N~>`` a link in ``changed``, ``v`` a drop, ``^`` the end of the
    search.  Vertical layout: one line per node, a column per level, ``oN``
    a node whose link down that column spans N (``@N`` where the search
    stood, ``*N`` a changed link), ``|`` a link passing by (``#`` crossed,
    ``:`` changed), ``<`` a drop.

    Runtime complexity: O(N * level)

    >>> from rankengine.teach.trace import trace_key
    >>> sl = teaching_list([10, 20, 5, 15, 25], rng=HeightScript(1).force(1, 2, 1, 3, 1))
    >>> print(render_text(sl, trace_key(sl, 20), legend=False))
    L2    HEAD =======3=======> 15 --------2-------> NIL
                                v
    L1    HEAD -------3-------> 15 =1> 20 ----1----> NIL
    L0    HEAD -1> 5 -1> 10 -1> 15 -1> 20 -1> 25 -0> NIL
                                       ^
    rank   0       1     2      3      4      5

    :param trace: a search to draw (from :func:`trace_key` or :func:`trace_rank`).
    :param layout: ``"horizontal"``, ``"vertical"`` or ``"auto"`` (horizontal
        when it fits in ``width`` columns).
    :param changed: ``(level, node)`` of links to mark as changed.
    :param label: node labels (see :func:`shape_of`).
    """
    legend = check_flag(legend, "legend")
    ranks = check_flag(ranks, "ranks")
    shape = shape_of(source, label)
    changed = set(changed)
    if layout not in ("auto", "horizontal", "vertical"):
        raise ValueError(f"layout must be 'auto', 'horizontal' or 'vertical', not {layout!r}")
    if layout == "auto":
        layout = "horizontal" if _horizontal_width(shape) <= width else "vertical"
    if layout == "horizontal":
        lines = _horizontal(shape, trace, changed, ranks)
    else:
        lines = _vertical(shape, trace, changed, ranks)
    if legend:
        lines += ["", *_legend(shape, trace, changed, layout)]
    return "\n".join(lines)


def _style(
    level: int, src: int, followed: set[tuple[int, int]], changed: set[tuple[int, int]]
) -> int:
    if (level, src) in followed:
        return _FOLLOWED
    if (level, src) in changed:
        return _CHANGED
    return _PLAIN


def _columns(shape: Shape, prefix: int) -> list[int]:
    x = [prefix]
    for k in range(1, shape.nil + 1):
        x.append(x[-1] + text_width(shape.labels[k - 1]) + _MIN_GAP)
    return x


def _horizontal_width(shape: Shape) -> int:
    return _columns(shape, _prefix(shape))[-1] + len(NIL)


def _prefix(shape: Shape) -> int:
    return max(len(f"L{shape.level - 1}"), len("rank")) + 2


def _center(labels: Sequence[str], x: Sequence[int], k: int) -> int:
    return x[k] + (text_width(labels[k]) - 1) // 2


def _link_body(n: int, span: int, fill: str) -> str:
    """A link's text between two labels' surrounding spaces: ``--2-->``."""
    digits = str(span)
    free = n - 1  # the last character is the arrowhead
    if len(digits) > free:
        return fill * free + ">"
    at = (free - len(digits) + 1) // 2
    return fill * at + digits + fill * (free - at - len(digits)) + ">"


def _horizontal(
    shape: Shape, trace: Trace | None, changed: set[tuple[int, int]], ranks: bool
) -> list[str]:
    labels = shape.labels
    nil = shape.nil
    prefix = _prefix(shape)
    x = _columns(shape, prefix)
    total = x[nil] + len(NIL)
    followed = {(s.level, s.src) for s in trace.steps} if trace else set()
    drops = trace.drops() if trace else []
    # A finger search starts levels from old update[i] nodes: '+' above the
    # level's row, under the level above (or over the top level).
    restarts = trace.restarts() if trace else []
    rows: list[str] = []
    for i in range(shape.level - 1, -1, -1):
        if i == shape.level - 1 and restarts:
            spacer = [" "] * total
            for level, node in restarts:
                if level == i:
                    spacer[_center(labels, x, node)] = "+"
            rows.append("".join(spacer).rstrip())
        row = list(f"L{i}".ljust(prefix)) + [" "] * (total - prefix)
        k = 0
        while k != nil:
            # one item per terminal column (a wide character's second is "")
            cells = _cells(labels[k])
            row[x[k] : x[k] + len(cells)] = cells
            dst = shape.forward[k][i]
            start, end = x[k] + len(cells) + 1, x[dst] - 1
            fill = _H_FILL[_style(i, k, followed, changed)]
            row[start:end] = _link_body(end - start, shape.spans[k][i], fill)
            k = dst
        row[x[nil] :] = NIL
        rows.append("".join(row).rstrip())
        below = [node for level, node in drops if level == i]
        starts = [node for level, node in restarts if level == i - 1]
        if below or starts:
            spacer = [" "] * total
            for node in below:
                spacer[_center(labels, x, node)] = "v"
            for node in starts:
                spacer[_center(labels, x, node)] = "+"
            rows.append("".join(spacer).rstrip())
    if trace is not None:
        marker = [" "] * total
        marker[_center(labels, x, trace.end)] = "^"
        rows.append("".join(marker).rstrip())
    if ranks:
        row = list("rank".ljust(prefix)) + [" "] * (total - prefix)
        for k in range(nil):
            text = str(k)
            at = x[k] + max(0, (text_width(labels[k]) - len(text)) // 2)
            row[at : at + len(text)] = text
        rows.append("".join(row).rstrip())
    return rows


def _vertical(
    shape: Shape, trace: Trace | None, changed: set[tuple[int, int]], ranks: bool
) -> list[str]:
    labels = shape.labels
    nil = shape.nil
    level = shape.level
    followed = {(s.level, s.src) for s in trace.steps} if trace else set()
    drops = set(trace.drops()) if trace else set()
    restarts = set(trace.restarts()) if trace else set()
    stood: set[tuple[int, int]] = set()
    if trace is not None:
        for s in trace.steps:
            stood.update(((s.level, s.src), (s.level, s.dst)))
        stood.update((lvl, node) for lvl, node, _ in trace.stops)
    cells: list[list[str]] = []
    current = [0] * level  # the node whose link passes on each level
    for k in range(nil + 1):
        row = []
        for i in range(level):
            if k == nil:
                row.append(" o")
            elif shape.heights[k] > i:
                glyph = (
                    "+"
                    if (i, k) in restarts
                    else "@"
                    if (i, k) in stood
                    else "*"
                    if (i, k) in changed
                    else "o"
                )
                row.append(("<" if (i, k) in drops else " ") + glyph + str(shape.spans[k][i]))
                current[i] = k
            else:
                row.append(" " + _V_FILL[_style(i, current[i], followed, changed)])
        cells.append(row)
    cw = max(len(c) for row in cells for c in row) + 2
    lw = max(text_width(lab) for lab in labels)
    rw = max(len("rank"), len(str(shape.length)))
    head = (
        (f"{'rank':>{rw}}  " if ranks else "")
        + " " * lw
        + "".join(f" L{i}".ljust(cw) for i in range(level))
    )
    rows = [head.rstrip()]
    for k, row in enumerate(cells):
        rank = "" if k == nil else str(k)
        line = (f"{rank:>{rw}}  " if ranks else "") + ljust(labels[k], lw)
        line += "".join(c.ljust(cw) for c in row)
        if trace is not None and k == trace.end:
            if trace.found == k and not trace.strict:
                line = line.rstrip() + f"   <- found: rank {trace.rank}"
            else:
                line = line.rstrip() + "   <- the search ends here"
        rows.append(line.rstrip())
    return rows


def _legend(
    shape: Shape, trace: Trace | None, changed: set[tuple[int, int]], layout: str
) -> list[str]:
    total = f"each level's spans add up to {shape.length}"
    if layout == "horizontal":
        lines = [f"-N->  a link jumping N level-0 steps (its span); {total}"]
        if trace is not None:
            lines.append("=N=>  a link the search crossed   v  it dropped a level   ^  it ended")
            if trace.starts:
                lines.append("+     it started the level below from an old update[i]")
        if changed:
            lines.append("~N~>  a link whose span changed")
        return lines
    lines = [
        f"oN  a node on that level; its link down the column jumps N steps ({total})",
        "|   a link passing a node that is not on that level",
    ]
    if trace is not None:
        lines.append("@N  where the search stood   #  a link it crossed   <  it dropped a level")
        if trace.starts:
            lines.append("+N  where it started a level from an old update[i]")
    if changed:
        lines.append("*N  a link whose span changed (:  where it passes)")
    return lines
