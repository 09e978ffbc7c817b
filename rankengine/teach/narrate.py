"""Operations on a skip list, step by step: a search, an insert, a delete,
a score change.

:func:`trace_key` and :func:`trace_rank` follow a search and record every
link it crosses, where it drops a level and the rank summed from spans;
:func:`explain` tells it in numbered sentences and
:func:`rankengine.teach.viz.render_text` draws it.  :func:`trace_finger` follows
the finger search a score increase runs (``SkipList._move_ahead``): from the
old ``update[i]`` nodes, not from the header.

:func:`narrate_insert`, :func:`narrate_delete` and :func:`narrate_update`
perform the operation on a real :class:`SkipList` and return a
:class:`Narration`: the search that finds ``update[i]`` and ``rank[i]`` on
every level, the new node's height, every span that changes and why, and
pictures before and after.  A score change that moves the node tells the
searches the code runs: for an increase, the finger search from the old
``update[i]`` with the node still linked, then the unlink and the relink;
for a decrease, the unlink, a search from the header, and the relink.

A narration cannot describe something the code does not do.  It works out
the new shape twice from the old one: with the span arithmetic it prints
(that of ``SkipList._link`` and ``SkipList._unlink``), and by rebuilding
every span from the node heights (:func:`rankengine.teach.viz.make_shape`).  The
two must agree, and both must equal the real list after the operation;
otherwise it raises ``AssertionError``.

>>> from rankengine.teach.viz import HeightScript, teaching_list
>>> rng = HeightScript(1).force(1, 2, 1, 3, 1)
>>> sl = teaching_list([10, 20, 5, 15, 25], rng=rng)
>>> [(s.level, s.src, s.dst, s.span, s.rank) for s in trace_key(sl, 20).steps]
[(2, 0, 3, 3, 3), (1, 3, 4, 1, 4)]
>>> story = narrate_insert(sl, 17, height=2, rng=rng)
>>> [str(c) for c in story.changes]  # doctest: +NORMALIZE_WHITESPACE
['L0  15: span 1 -> 1 (now stops at the new node)',
 'L0  17: new link, span 1 (the rest of the old link)',
 'L1  15: span 1 -> 1 (now stops at the new node)',
 'L1  17: new link, span 1 (the rest of the old link)',
 'L2  15: span 2 -> 3 (passes over the new node)']
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from rankengine.board.checks import check_flag
from rankengine.index.protocol import Entry3
from rankengine.index.skiplist import P, SkipList
from rankengine.teach.viz import (
    DEFAULT_WIDTH,
    HeightScript,
    LabelMode,
    Layout,
    Panel,
    Shape,
    _ljust,
    _text_width,
    counted,
    label_of,
    make_shape,
    render_text,
    shape_of,
    svg_document,
)

__all__ = [
    "Narration",
    "SpanChange",
    "Step",
    "Trace",
    "explain",
    "narrate_delete",
    "narrate_insert",
    "narrate_update",
    "trace_finger",
    "trace_key",
    "trace_rank",
]

_INDENT: Final = "    "
#: Narration prose is wrapped to this many columns (pictures are not).
PROSE_WIDTH: Final = 88


@dataclass(frozen=True)
class SpanChange:
    """One link whose span changes: on ``level``, the link leaving the node
    labelled ``node`` goes from span ``old`` to ``new`` (``old`` is None for
    a link that did not exist, ``new`` None for one that is gone)."""

    level: int
    node: str
    old: int | None
    new: int | None
    why: str

    def __str__(self) -> str:
        if self.old is None:
            return f"L{self.level:<2} {self.node}: new link, span {self.new} ({self.why})"
        if self.new is None:
            return f"L{self.level:<2} {self.node}: link removed ({self.why})"
        return f"L{self.level:<2} {self.node}: span {self.old} -> {self.new} ({self.why})"


@dataclass(frozen=True)
class Narration:
    """The story of one operation.

    ``text`` is the full narration (numbered steps with text pictures);
    ``before`` and ``after`` are the shapes around the operation, ``trace``
    the search on ``before``, ``changes`` every span that changed, and
    ``marked`` the ``(level, node)`` links of ``after`` that are new or
    changed.  For a score change that moves the node, ``relink`` is the
    search for its new place: a finger search on ``before`` for a larger
    key (:func:`trace_finger`), a search from the header in the list
    without the node for a smaller one; otherwise None.
    """

    operation: Literal["insert", "delete", "update"]
    title: str
    text: str
    before: Shape
    after: Shape
    trace: Trace
    changes: tuple[SpanChange, ...]
    marked: frozenset[tuple[int, int]]
    in_place: bool = False
    relink: Trace | None = None

    def __str__(self) -> str:
        return self.text

    def svg(self) -> str:
        """The pictures as one SVG file: the search before, the finger
        search of a score increase (also before), the list after."""
        panels = [Panel(self.before, self.trace, title=f"{self.title}: the search (before)")]
        if self.relink is not None and self.relink.starts:
            panels.append(
                Panel(
                    self.before,
                    self.relink,
                    title=f"{self.title}: the finger search for the new place (before)",
                )
            )
        panels.append(Panel(self.after, None, self.marked, title=f"{self.title}: after"))
        return svg_document(panels)


# ----------------------------------------------------------------------
# Searches
# ----------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One link crossed by a search: on ``level`` from ``src`` to ``dst``;
    ``rank`` is the rank reached (the sum of the spans crossed so far)."""

    level: int
    src: int
    dst: int
    span: int
    rank: int


@dataclass(frozen=True)
class Trace:
    """The path of a search through a :class:`Shape`.

    ``stops`` has one ``(level, node, rank)`` per level visited, top down:
    the node where the search left that level and its rank.  For a strict
    key search these are exactly the ``update[i]`` and ``rank[i]`` of an
    insert or delete.  ``found`` is the node searched for, or None.

    ``starts`` is empty for a search from the header.  For a finger search
    (:func:`trace_finger`) it has one ``(level, node, rank)`` per level, top
    down: the node the walk on that level started from.
    """

    kind: Literal["key", "rank"]
    target: Any
    strict: bool
    steps: tuple[Step, ...]
    stops: tuple[tuple[int, int, int], ...]
    found: int | None
    rank: int
    starts: tuple[tuple[int, int, int], ...] = ()

    @property
    def end(self) -> int:
        """The node the search ended on."""
        return self.stops[-1][1]

    def drops(self) -> list[tuple[int, int]]:
        """``(level, node)`` of every drop to the level below."""
        return [(lvl, node) for lvl, node, _ in self.stops[:-1]]

    def update(self) -> list[int]:
        """``update[i]`` per level ``i`` (level 0 first), for strict searches."""
        return [node for _, node, _ in reversed(self.stops)]

    def restarts(self) -> list[tuple[int, int]]:
        """``(level, node)`` of every level a finger search started afresh
        from an old ``update[i]``: the top level, and each level where that
        node was ahead of where the level above stopped.  Empty for a
        search from the header."""
        if not self.starts:
            return []
        top, first, _ = self.starts[0]
        out = [(top, first)]
        for (_, stop, _), (level, start, _) in zip(self.stops, self.starts[1:], strict=False):
            if start != stop:
                out.append((level, start))
        return out


def _resolve_key(shape: Shape, primary: Any, tie: Any) -> tuple[Any, ...]:
    """The key searched for: ``(primary, tie)``, or, without a tie, the key of
    the first entry with that primary, or ``(primary,)`` (sorts before every
    entry with that primary) when there is none."""
    if tie is not None:
        return (primary, tie)
    for p, t, _ in shape.entries:
        if p == primary:
            return (p, t)
    return (primary,)


def trace_key(
    source: SkipList | Shape | Any, primary: Any, tie: Any = None, *, strict: bool = False
) -> Trace:
    """Follow the search for a key, recording every link crossed.

    Redis's rank walk (``zslGetRank``): on each level from the top, cross
    links while the next key is ``<=`` the target, adding their spans; stop
    as soon as the search stands on the target.  With ``strict=True`` it
    crosses only while the next key is ``<`` the target and walks every
    level: the walk of an insert or delete, whose stops are ``update[i]``.
    Without ``tie``, the target is the first entry with score ``primary``.

    Runtime complexity: O(log N) expected on a Shape with ``tie`` (without
    it, O(N) to find the entry); a SkipList is first copied into a Shape
    (:func:`~rankengine.teach.viz.shape_of`), O(N * level)

    >>> from rankengine.teach.viz import teaching_list
    >>> sl = teaching_list([10, 20, 5, 15, 25], rng=HeightScript(1).force(1, 2, 1, 3, 1))
    >>> t = trace_key(sl, 20)
    >>> [(s.level, s.span, s.rank) for s in t.steps], t.found, t.rank
    ([(2, 3, 3), (1, 1, 4)], 4, 4)
    """
    strict = check_flag(strict, "strict")
    shape = shape_of(source)
    key = _resolve_key(shape, primary, tie)
    nil = shape.nil
    steps: list[Step] = []
    stops: list[tuple[int, int, int]] = []
    x = r = 0
    found: int | None = None
    for i in range(shape.level - 1, -1, -1):
        while True:
            dst = shape.forward[x][i]
            if dst == nil:
                break
            k = shape.key(dst)
            if not (k < key if strict else k <= key):
                break
            r += shape.spans[x][i]
            steps.append(Step(i, x, dst, shape.spans[x][i], r))
            x = dst
        stops.append((i, x, r))
        if not strict and x != 0 and shape.key(x) == key:
            found = x
            break
    if strict:
        nxt = shape.forward[x][0]
        if nxt != nil and shape.key(nxt) == key:
            found = nxt
    return Trace("key", key, strict, tuple(steps), tuple(stops), found, r)


def trace_finger(source: SkipList | Shape | Any, primary: Any, tie: Any, start: Trace) -> Trace:
    """Follow the finger search of a move to the larger key ``(primary, tie)``
    (``SkipList._search_ahead``, run by ``SkipList._move_ahead``).

    ``start`` is the strict search for the old key (:func:`trace_key` with
    ``strict=True``): its stops are the old ``update[i]`` and ``rank[i]``.
    Each ``update[i]`` is before the old key, so before the new one too.
    The walk starts on the top level from ``update[top]``; on every level
    it starts from ``update[i]`` when that node is ahead of where the level
    above stopped (a higher rank), else from where it stopped, then crosses
    links while the next key is ``<`` the new one.  The node being moved is
    still linked: the walk may cross it and stop on it, and ranks past it
    count it.  The stops are the new ``update[i]`` and ``rank[i]``.

    Runtime complexity: O(log N) expected on a Shape, less for a small move;
    a SkipList is first copied into one (:func:`~rankengine.teach.viz.shape_of`),
    O(N * level)

    >>> from rankengine.teach.viz import teaching_list
    >>> sl = teaching_list([10, 20, 5, 15, 25], rng=HeightScript(1).force(1, 2, 1, 3, 1))
    >>> old = trace_key(sl, 20, 0, strict=True)  # update[i]: 15, 15, 15
    >>> t = trace_finger(sl, 22, 0, old)
    >>> t.starts[0][1], [(s.level, s.src, s.dst) for s in t.steps], t.update()
    (3, [(1, 3, 4)], [4, 4, 3])

    :raises ValueError: unless ``start`` is a strict key search on the same
        list for a key smaller than ``(primary, tie)``.
    """
    shape = shape_of(source)
    key = (primary, tie)
    if start.kind != "key" or not start.strict or len(start.stops) != shape.level:
        raise ValueError("the finger search needs the strict search for the old key")
    if not start.target < key:
        raise ValueError(f"the finger search is for a larger key than {start.target!r}")
    update = {level: (node, rank) for level, node, rank in start.stops}
    nil = shape.nil
    steps: list[Step] = []
    starts: list[tuple[int, int, int]] = []
    stops: list[tuple[int, int, int]] = []
    x, r = update[shape.level - 1]
    for i in range(shape.level - 1, -1, -1):
        u, ru = update[i]
        if ru > r:
            # The old predecessor on this level is ahead: start there.
            x, r = u, ru
        starts.append((i, x, r))
        while (dst := shape.forward[x][i]) != nil and shape.key(dst) < key:
            r += shape.spans[x][i]
            steps.append(Step(i, x, dst, shape.spans[x][i], r))
            x = dst
        stops.append((i, x, r))
    nxt = shape.forward[x][0]
    found = nxt if nxt != nil and shape.key(nxt) == key else None
    return Trace("key", key, True, tuple(steps), tuple(stops), found, r, tuple(starts))


def trace_rank(source: SkipList | Shape | Any, rank: int) -> Trace:
    """Follow the search for the node at 1-based ``rank`` (Redis
    ``zslGetElementByRank``): cross a link whenever its span does not
    overshoot the rank.

    Runtime complexity: O(log N) expected on a Shape; a SkipList is first
    copied into one (:func:`~rankengine.teach.viz.shape_of`), O(N * level)

    >>> from rankengine.teach.viz import teaching_list
    >>> sl = teaching_list([10, 20, 5, 15, 25], rng=HeightScript(1).force(1, 2, 1, 3, 1))
    >>> t = trace_rank(sl, 2)
    >>> [(s.level, s.src, s.dst) for s in t.steps], t.found
    ([(0, 0, 1), (0, 1, 2)], 2)

    :raises ValueError: unless ``1 <= rank <= length``.
    """
    shape = shape_of(source)
    if isinstance(rank, bool) or not isinstance(rank, int) or not 1 <= rank <= shape.length:
        raise ValueError(f"rank must be an integer from 1 to {shape.length}, not {rank!r}")
    steps: list[Step] = []
    stops: list[tuple[int, int, int]] = []
    x = r = 0
    for i in range(shape.level - 1, -1, -1):
        while shape.forward[x][i] != shape.nil and r + shape.spans[x][i] <= rank:
            r += shape.spans[x][i]
            steps.append(Step(i, x, shape.forward[x][i], shape.spans[x][i], r))
            x = shape.forward[x][i]
        stops.append((i, x, r))
        if r == rank:
            break
    return Trace("rank", rank, False, tuple(steps), tuple(stops), x, r)


def explain(trace: Trace, source: SkipList | Shape | Any) -> str:
    """The search as numbered sentences: each link crossed with the rank it
    reaches, each drop and why, and the result.

    Runtime complexity: O(N * (steps + level)) (each key is checked for equal scores)

    >>> from rankengine.teach.viz import teaching_list
    >>> sl = teaching_list([10, 20, 5, 15, 25], rng=HeightScript(1).force(1, 2, 1, 3, 1))
    >>> print(explain(trace_key(sl, 20), sl))
    Search for 20: on each level, cross links while the next key is <= 20,
    adding up their spans.
     1. L2  at HEAD  next is 15 <= 20: cross, span 3, rank 0 + 3 = 3
     2. L2  at 15    next is NIL: drop to L1
     3. L1  at 15    next is 20 <= 20: cross, span 1, rank 3 + 1 = 4
    Found 20 at rank 4 after crossing 2 links (of 5 nodes).
    """
    shape = shape_of(source)
    labels = shape.labels
    width = max(_text_width(labels[node]) for _, node, _ in trace.stops)
    width = max([width, *(_text_width(labels[s.src]) for s in trace.steps)])
    width = max([width, *(_text_width(labels[node]) for _, node, _ in trace.starts)])
    restarts = dict(trace.restarts())
    # the step numbers' width: at most a start and a drop per level, and the links
    nw = max(2, len(str(len(trace.steps) + 2 * len(trace.stops))))
    starts = {level: rank for level, _, rank in trace.starts}
    if trace.starts:
        target = _target_text(trace, shape)
        test = "<"
        lines = [
            _fill(
                f"Finger search for {target} from the old update[i]: on each level, start "
                "from update[i] if it is ahead of where the level above stopped, then cross "
                f"links while the next key is < {target}, adding up their spans."
            )
        ]
    elif trace.kind == "key":
        target = _target_text(trace, shape)
        test = "<" if trace.strict else "<="
        lines = [
            f"Search for {target}: on each level, cross links while the next key is "
            f"{test} {target},",
            "adding up their spans.",
        ]
    else:
        target = str(trace.target)
        lines = [f"Find rank {target}: on each level, cross a link while rank + span <= {target}."]
    n = 0
    above: tuple[int, int] | None = None  # (node, rank) where the level above stopped
    for level, stop, rank in trace.stops:
        if level in restarts:
            n += 1
            node = restarts[level]
            start = f"{n:>{nw}}. L{level:<2} at {_ljust(labels[node], width)}  "
            start += f"start at update[{level}], rank {starts[level]}"
            if above is not None:
                start += (
                    f": ahead of {labels[above[0]]} (rank {above[1]}), where L{level + 1} stopped"
                )
            lines.append(start)
        above = (stop, rank)
        for step in trace.steps:
            if step.level != level:
                continue
            n += 1
            before = step.rank - step.span
            if trace.kind == "key":
                cond = f"next is {_key_word(shape, step.dst, trace.target)} {test} {target}"
            else:
                cond = f"{before} + {step.span} <= {target}"
            lines.append(
                f"{n:>{nw}}. L{level:<2} at {_ljust(labels[step.src], width)}  {cond}: cross, "
                f"span {step.span}, rank {before} + {step.span} = {step.rank}"
            )
        if trace.found == stop and not trace.strict:
            break  # standing on the target: Redis returns here
        n += 1
        nxt = shape.forward[stop][level]
        if nxt == shape.nil:
            why = "next is NIL"
        elif trace.kind == "rank":
            why = f"{rank} + {shape.spans[stop][level]} > {target}"
        else:
            word = _key_word(shape, nxt, trace.target)
            why = f"next is {word} {'>=' if trace.strict else '>'} {target}"
        lines.append(
            f"{n:>{nw}}. L{level:<2} at {_ljust(labels[stop], width)}  {why}: "
            + (f"drop to L{level - 1}" if level else "end of the walk")
        )
    crossed = len(trace.steps)
    links = f"{counted(crossed, 'link', 'links')} (of {counted(shape.length, 'node', 'nodes')})"
    if trace.starts:
        lines.append(
            f"The walk crossed {links} and ended on {labels[trace.end]} (the new update[0], "
            f"rank {trace.rank})."
        )
    elif trace.kind == "rank":
        lines.append(f"Rank {target} is {labels[trace.end]}, reached after crossing {links}.")
    elif trace.found is not None and not trace.strict:
        lines.append(f"Found {target} at rank {trace.rank} after crossing {links}.")
    else:
        present = trace.found is not None
        lines.append(
            f"{target} {'is' if present else 'is not'} present; {trace.rank} "
            f"{'entry sorts' if trace.rank == 1 else 'entries sort'} before it, so it "
            f"{'has' if present else 'would have'} rank {trace.rank + 1}.  The walk crossed "
            f"{links} and ended on {labels[trace.end]} (update[0])."
        )
    lines[-1] = _fill(lines[-1])
    return "\n".join(lines)


def _key_word(shape: Shape, node: int, target: tuple[Any, ...]) -> str:
    """How a node's key reads in a comparison with ``target``: its score, or
    ``score/tie`` when another entry has the same score, or the target
    does with another tie (as the target is then written: see
    :func:`_target_text`)."""
    primary, tie = shape.key(node)
    if sum(1 for p, _, _ in shape.entries if p == primary) > 1 or (
        len(target) == 2 and target[0] == primary and target[1] != tie
    ):
        return f"{primary}/{tie}"
    return str(primary)


def _key_text(entries: Sequence[Entry3], primary: Any, tie: Any) -> str:
    """How the key ``(primary, tie)`` reads in a comparison: its score, or
    ``score/tie`` when another of ``entries`` has the same score (equal
    labels would make ``2 < 2`` of two different keys)."""
    if any(p == primary and t != tie for p, t, _ in entries):
        return f"{primary}/{tie}"
    return str(primary)


def _target_text(trace: Trace, shape: Shape) -> str:
    key = trace.target
    if len(key) == 1:
        return str(key[0])
    if sum(1 for p, _, _ in shape.entries if p == key[0]) > (0 if trace.found is None else 1):
        return f"{key[0]}/{key[1]}"
    return str(key[0])


# ----------------------------------------------------------------------
# Shared pieces
# ----------------------------------------------------------------------


def _find(shape: Shape, primary: Any, tie: Any) -> int:
    """Node number of the entry with this score (and tie, if given)."""
    for k in range(1, shape.nil):
        p, t = shape.key(k)
        if p == primary and (tie is None or t == tie):
            return k
    what = f"score {primary!r}" if tie is None else f"key {(primary, tie)!r}"
    raise ValueError(f"no entry with {what} in the skip list")


def _picture(shape: Shape, trace: Trace | None, marked: Any, layout: Layout, width: int) -> str:
    # indented: the picture has that much less room
    text = render_text(shape, trace, changed=marked, layout=layout, width=width - len(_INDENT))
    return "\n".join((_INDENT + line).rstrip() for line in text.splitlines())


def _table(rows: Sequence[Sequence[str]], minimum: Sequence[int]) -> list[str]:
    """Rows of cells as lines whose columns line up: every cell but a row's
    last is padded to its column's width (``minimum``, or the widest cell of
    the column: a long label or a large span), then two spaces.

    >>> _table([["level", "span"], ["L0", "1 -> 2"], ["L10", "9"]], [4])
    ['level  span', 'L0     1 -> 2', 'L10    9']
    """
    widths = [
        max([low, *(_text_width(row[j]) for row in rows if j < len(row) - 1)])
        for j, low in enumerate(minimum)
    ]
    return [
        "  ".join([*(_ljust(cell, w) for cell, w in zip(row[:-1], widths, strict=False)), row[-1]])
        for row in rows
    ]


def _update_table(trace: Trace, labels: Sequence[str]) -> str:
    rows = [["level", "update[i]", "rank[i]"]]
    for level, node, rank in trace.stops:
        rows.append([f"L{level}", labels[node], str(rank)])
    return _rows(_table(rows, [5, 9]))


def _check(predicted: Shape, real: Shape, operation: str) -> None:
    """The narration's picture after ``operation`` must be the real list's.

    (The span arithmetic is checked against the shape rebuilt from heights
    where it is done, in ``_link_changes`` and ``_unlink_changes``.)
    """
    assert predicted == real, (
        f"{operation}: the narration disagrees with the real skip list\n"
        f"{render_text(predicted, legend=False)}\n{render_text(real, legend=False)}"
    )


def _search_step(
    number: int, word: str, target: str, trace: Trace, shape: Shape, *, layout: Layout, width: int
) -> str:
    return _block(
        f"Step {number}: search.  Walk down from the top level as a search does, but cross a "
        f"link only while the next key is < {target}.  On each level, remember the node where "
        f"the walk leaves it, update[i] (the last node before {target} there: its link is the "
        f"one that {word}), and that node's rank, rank[i] (the sum of the spans crossed).",
        _picture(shape, trace, (), layout, width),
        _update_table(trace, shape.labels),
    )


def _block(prose: str, *blocks: str) -> str:
    """A paragraph wrapped to :data:`PROSE_WIDTH`, then indented blocks."""
    return "\n\n".join([_fill(prose), *blocks])


def _fill(text: str) -> str:
    """Wrap ``text`` without breaking a formula such as ``d + 1`` or ``x = 3``."""
    glue = "\0"
    for op in (" + ", " - ", " = ", " <= ", " < ", " > ", " >= "):
        text = text.replace(op, op.replace(" ", glue))
    return textwrap.fill(text, PROSE_WIDTH).replace(glue, " ")


def _rows(lines: Sequence[str]) -> str:
    return "\n".join((_INDENT + line).rstrip() for line in lines)


# ----------------------------------------------------------------------
# Insert
# ----------------------------------------------------------------------


def _link_changes(
    shape: Shape, trace: Trace, entry: Entry3, height: int, *, kept: bool = False
) -> tuple[Shape, list[SpanChange], set[tuple[int, int]], list[str]]:
    """The span arithmetic of linking a node of ``height`` at the place the
    strict search ``trace`` found; returns the predicted shape, the changes,
    the marked links and the explanation lines.  ``kept``: the levels above
    ``shape``'s were kept by the unlink (a move ahead), not added here."""
    labels = shape.labels
    length = shape.length
    new_label = label_of(entry, shape.label_mode)
    update = trace.update()  # update[i], level 0 first
    rank = [r for _, _, r in reversed(trace.stops)]
    r0 = rank[0]
    new = r0 + 1  # the new node's number (and rank) after the insert
    level = max(shape.level, height)
    # Spans per node number after the insert: nodes after the new one move
    # one number to the right.
    spans = [list(s) for s in shape.spans[:new]] + [[0] * height]
    spans += [list(s) for s in shape.spans[new:]]
    spans[0] += [length] * (level - shape.level)  # new levels: HEAD -> NIL
    changes: list[SpanChange] = []
    marked: set[tuple[int, int]] = set()
    rows = [["level", "update[i]", "rank[i]", "d", "update[i] span", f"{new_label} span"]]
    for i in range(level):
        u = update[i] if i < shape.level else 0
        ri = rank[i] if i < shape.level else 0
        d = r0 - ri
        old = spans[u][i]
        row = [f"L{i}", labels[u], str(ri)]
        if i < height:
            # u now stops at the new node, d steps behind update[0] plus one;
            # the new node takes the rest of u's old link.
            spans[u][i] = d + 1
            spans[new][i] = old - d
            row += [str(d), f"{old} -> {d} + 1 = {d + 1}", f"{old} - {d} = {old - d}"]
            if i >= shape.level:
                row[-1] += (
                    "   (HEAD -> NIL, kept from step 3)"
                    if kept
                    else f"   (new level: HEAD -> NIL spanned all {length})"
                )
            changes.append(SpanChange(i, labels[u], old, d + 1, "now stops at the new node"))
            changes.append(SpanChange(i, new_label, None, old - d, "the rest of the old link"))
            marked.update(((i, u), (i, new)))
        else:
            # Above the new node the link from update[i] passes over it.
            spans[u][i] = old + 1
            row += ["-", f"{old} -> {old} + 1 = {old + 1}", "-   (passes over it)"]
            changes.append(SpanChange(i, labels[u], old, old + 1, "passes over the new node"))
            marked.add((i, u))
        rows.append(row)
    lines = _table(rows, [5, 9, 7, 2, 16])
    entries = [*shape.entries[:r0], entry, *shape.entries[r0:]]
    heights = [level, *shape.heights[1:new], height, *shape.heights[new:]]
    rebuilt = make_shape(entries, heights, shape.label_mode)
    predicted = Shape(
        entries=rebuilt.entries,
        heights=rebuilt.heights,
        spans=tuple(tuple(s) for s in spans),
        forward=rebuilt.forward,
        labels=rebuilt.labels,
        label_mode=shape.label_mode,
    )
    assert predicted == rebuilt, "span arithmetic disagrees with the heights"
    return predicted, changes, marked, lines


def narrate_insert(
    sl: SkipList,
    primary: Any,
    tie: Any = None,
    member: Any = None,
    *,
    height: int | None = None,
    rng: HeightScript | None = None,
    label: LabelMode = "score",
    layout: Layout = "auto",
    width: int = DEFAULT_WIDTH,
) -> Narration:
    """Insert ``(primary, tie, member)`` into ``sl`` and tell how.

    Without ``tie`` the entry arrives last among equal scores (its tie is
    one more than the largest integer tie present).  To choose the new
    node's height, build the list with a :class:`~rankengine.teach.viz.HeightScript`
    and pass it as ``rng`` with ``height``.

    Runtime complexity: O(N * level) (the pictures)

    >>> from rankengine.teach.viz import teaching_list
    >>> sl = teaching_list([10, 20], rng=1)
    >>> print(narrate_insert(sl, 15).text.splitlines()[0])
    Insert 15 into a skip list of 2 entries.

    :raises ValueError: if the key is present, or ``height`` is given
        without ``rng``.
    """
    before = shape_of(sl, label)
    if tie is None:
        ties = [t for _, t, _ in before.entries if isinstance(t, int) and not isinstance(t, bool)]
        tie = max(ties, default=-1) + 1
    if member is None:
        member = f"s{tie}"
    chosen = height is not None
    if rng is not None:
        if rng.pending:
            raise ValueError("the HeightScript still has forced heights queued")
        height = rng.draw() if height is None else height
        rng.force(height)
    elif height is not None:
        raise ValueError("to choose a height, pass the list's HeightScript as rng")
    entry: Entry3 = (primary, tie, member)
    trace = trace_key(before, primary, tie, strict=True)
    if trace.found is not None:
        raise ValueError(f"key {(primary, tie)!r} is already present")
    sl.insert(primary, tie, member)
    real = shape_of(sl, before.label_mode)
    new = trace.rank + 1
    drawn = real.heights[new]
    if height is not None:
        assert drawn == height, f"asked for height {height}, the list drew {drawn}"
    predicted, changes, marked, lines = _link_changes(before, trace, entry, drawn)
    _check(predicted, real, "insert")
    name = label_of(entry, before.label_mode)
    title = f"Insert {name}"
    how = "chosen for this example" if chosen else "drawn at random"
    grow = (
        f"  The list grows from {before.level} to {drawn} levels." if drawn > before.level else ""
    )
    steps = [
        f"{title} into a skip list of {counted(before.length, 'entry', 'entries')}.",
        _search_step(
            1,
            "will point to the new node",
            _key_text(before.entries, primary, tie),
            trace,
            before,
            layout=layout,
            width=width,
        ),
        _block(
            f"Step 2: height.  The new node gets height {drawn}, levels 0 to {drawn - 1} "
            f"({how}: each extra level has probability P = {P}).{grow}"
        ),
        _block(
            f"Step 3: link {name} after update[i] on each of its levels; it lands at rank "
            f"rank[0] + 1 = {new}.  Only links leaving update[i] change.  Below its height, "
            f"update[i] now stops at {name}: span d + 1, where d = rank[0] - rank[i] is how "
            f"many level-0 steps update[i] is behind update[0]; {name} takes the rest of the "
            f"old link, old span - d.  Above its height, the link from update[i] passes over "
            f"{name}: span + 1.",
            _rows(lines),
        ),
        _block(
            f"Step 4: after.  {len(changes)} spans are new or changed (~N~>); every other link "
            "is untouched, which is why an insert costs O(log N).",
            _picture(real, None, marked, layout, width),
        ),
        "Checked: the spans above are those of the real skip list after insert().",
    ]
    return Narration(
        "insert",
        title,
        "\n\n".join(steps),
        before,
        real,
        trace,
        tuple(changes),
        frozenset(marked),
    )


# ----------------------------------------------------------------------
# Delete
# ----------------------------------------------------------------------


def _unlink_changes(
    shape: Shape, trace: Trace, x: int, *, keep: bool = False
) -> tuple[Shape, list[SpanChange], set[tuple[int, int]], list[str]]:
    """The span arithmetic of unlinking node ``x`` found by the strict search.

    ``keep``: the node is linked back at once (``SkipList._move_ahead``),
    which drops no level; the lines say so.  The predicted shape is that
    of the list without the node either way.
    """
    labels = shape.labels
    update = trace.update()
    height = shape.heights[x]
    spans = [list(s) for s in shape.spans]
    changes: list[SpanChange] = []
    marked: set[tuple[int, int]] = set()
    rows = [["level", "update[i]", f"{labels[x]} span", "update[i] span"]]
    for i in range(shape.level):
        u = update[i]
        old = spans[u][i]
        row = [f"L{i}", labels[u]]
        if i < height:
            # u takes over x's link: its own span plus x's, minus the step
            # that landed on x.
            xs = shape.spans[x][i]
            spans[u][i] = old + xs - 1
            row += [str(xs), f"{old} + {xs} - 1 = {old + xs - 1}"]
            changes.append(SpanChange(i, labels[u], old, old + xs - 1, "takes over the link"))
            changes.append(SpanChange(i, labels[x], xs, None, "the node is gone"))
        else:
            # Above x's height the link skipped over x: one step fewer.
            spans[u][i] = old - 1
            row += ["-", f"{old} - 1 = {old - 1}   (passed over it)"]
            changes.append(SpanChange(i, labels[u], old, old - 1, "one node fewer to pass"))
        rows.append(row)
        marked.add((i, u))
    lines = _table(rows, [5, 9, 0])  # the title is the widest span cell
    del spans[x]
    entries = [*shape.entries[: x - 1], *shape.entries[x:]]
    heights = [*shape.heights[1:x], *shape.heights[x + 1 :]]
    level = max(heights, default=1)
    if level < shape.level and keep:
        gone = (
            f"L{level} now holds no node"
            if level == shape.level - 1
            else f"L{level} to L{shape.level - 1} now hold no node"
        )
        lines.append(
            f"{gone}; SkipList._move_ahead keeps the level: the node comes back in step 4."
        )
    elif level < shape.level:
        gone = (
            f"Level {level} now holds no node, so it is"
            if level == shape.level - 1
            else f"Levels {level} to {shape.level - 1} now hold no node, so they are"
        )
        lines.append(f"{gone} dropped (level {shape.level} -> {level}).")
    spans[0] = spans[0][:level]
    marked = {(i, u) for i, u in marked if i < level}
    rebuilt = make_shape(entries, [level, *heights], shape.label_mode)
    predicted = Shape(
        entries=rebuilt.entries,
        heights=rebuilt.heights,
        spans=tuple(tuple(s) for s in spans),
        forward=rebuilt.forward,
        labels=rebuilt.labels,
        label_mode=shape.label_mode,
    )
    assert predicted == rebuilt, "span arithmetic disagrees with the heights"
    return predicted, changes, marked, lines


def narrate_delete(
    sl: SkipList,
    primary: Any,
    tie: Any = None,
    *,
    label: LabelMode = "score",
    layout: Layout = "auto",
    width: int = DEFAULT_WIDTH,
) -> Narration:
    """Delete the entry with score ``primary`` (the first one, or the one
    with ``tie``) from ``sl`` and tell how.

    Runtime complexity: O(N * level) (the pictures)

    >>> from rankengine.teach.viz import teaching_list
    >>> sl = teaching_list([10, 20, 30], rng=1)
    >>> story = narrate_delete(sl, 20)
    >>> [e[0] for e in sl], story.title
    ([10, 30], 'Delete 20')

    :raises ValueError: if there is no such entry.
    """
    before = shape_of(sl, label)
    x = _find(before, primary, tie)
    key = before.key(x)
    trace = trace_key(before, *key, strict=True)
    assert trace.found == x
    name = before.labels[x]
    predicted, changes, marked, lines = _unlink_changes(before, trace, x)
    sl.remove(*key)
    real = shape_of(sl, before.label_mode)
    _check(predicted, real, "delete")
    height = before.heights[x]
    steps = [
        f"Delete {name} from a skip list of {counted(before.length, 'entry', 'entries')}.",
        _search_step(
            1,
            f"jumps to {name}",
            _key_text(before.entries, *key),
            trace,
            before,
            layout=layout,
            width=width,
        ),
        _block(
            f"Step 2: unlink {name}, of height {height}.  On each of its levels, update[i] "
            f"takes over its link: update[i]'s span plus {name}'s, minus the one step that "
            f"landed on {name}.  Above its height, the link from update[i] jumped over "
            f"{name}: one step fewer.",
            _rows(lines),
        ),
        _block(
            "Step 3: after.  Changed links are marked ~N~>.",
            _picture(real, None, marked, layout, width),
        ),
        "Checked: the spans above are those of the real skip list after remove().",
    ]
    return Narration(
        "delete",
        f"Delete {name}",
        "\n\n".join(steps),
        before,
        real,
        trace,
        tuple(changes),
        frozenset(marked),
    )


# ----------------------------------------------------------------------
# Score change
# ----------------------------------------------------------------------


def _relinked(before: Shape, after: Shape, x: int, new: int) -> set[tuple[int, int]]:
    """The ``(level, node)`` links of ``after`` that are new or lead elsewhere
    or span differently than in ``before``, when node ``x`` of ``before``
    became node ``new`` of ``after`` (and every other node kept its order)."""

    def moved(k: int) -> int:  # node k of ``before`` in ``after``
        if k == x:
            return new
        if k > x:
            k -= 1  # one node fewer before it once x is unlinked
        return k + 1 if k >= new else k  # one more once x is linked before it

    old = {(link.level, moved(link.src)): (moved(link.dst), link.span) for link in before.links()}
    return {
        (link.level, link.src)
        for link in after.links()
        if old.get((link.level, link.src)) != (link.dst, link.span)
    }


def narrate_update(
    sl: SkipList,
    primary: Any,
    new_primary: Any,
    *,
    tie: Any = None,
    new_tie: Any = None,
    label: LabelMode = "score",
    layout: Layout = "auto",
    width: int = DEFAULT_WIDTH,
) -> Narration:
    """Change the score of an entry from ``primary`` to ``new_primary`` and tell how.

    When the new key still sorts between the node's two level-0 neighbours
    the node keeps its place and only its key changes (Redis's
    ``zslUpdateScore`` fast path): no link and no span moves.  Otherwise
    the node is unlinked and linked again at its new place, with the same
    height.  The entry keeps its tie unless ``new_tie`` is given.

    Runtime complexity: O(N * level) (the pictures)

    >>> from rankengine.teach.viz import teaching_list
    >>> sl = teaching_list([10, 20, 30], rng=1)
    >>> narrate_update(sl, 20, 25).in_place, narrate_update(sl, 25, 5).in_place
    (True, False)

    :raises ValueError: if there is no such entry, or the new key is taken.
    """
    before = shape_of(sl, label)
    x = _find(before, primary, tie)
    old_key = before.key(x)
    new_key = (new_primary, old_key[1] if new_tie is None else new_tie)
    _, _, member = before.entries[x - 1]
    old_label = before.labels[x]
    entry: Entry3 = (new_key[0], new_key[1], member)
    new_label = label_of(entry, before.label_mode)
    for k in range(1, before.nil):
        if k != x and before.key(k) == new_key:
            raise ValueError(f"key {new_key!r} is already present")
    trace = trace_key(before, *old_key, strict=True)
    prev = before.key(x - 1) if x > 1 else None
    nxt = before.key(x + 1) if x < before.length else None
    fits = (prev is None or prev < new_key) and (nxt is None or new_key < nxt)
    left = "HEAD" if prev is None else before.labels[x - 1]
    right = "NIL" if nxt is None else before.labels[x + 1]
    # The keys as the comparisons below read them (see _key_text).
    others = [*before.entries[: x - 1], *before.entries[x:], entry]
    old_word = _key_text(before.entries, *old_key)
    new_word = _key_text(others, *new_key)
    low = "HEAD" if prev is None else _key_text(others, *prev)
    high = "NIL" if nxt is None else _key_text(others, *nxt)
    title = f"Change {old_label} to {new_label}"
    intro = _fill(
        f"{title}.  First find the node, as a delete does, keeping update[i]; then look at "
        f"its two neighbours on level 0: {left} and {right}."
    )
    if fits:
        sl.move(*old_key, *new_key)
        real = shape_of(sl, before.label_mode)
        entries = list(before.entries)
        entries[x - 1] = entry
        _check(make_shape(entries, before.heights, before.label_mode), real, "update")
        steps = [
            intro,
            _search_step(
                1, f"jumps to {old_label}", old_word, trace, before, layout=layout, width=width
            ),
            _block(
                f"Step 2: {low} < {new_word} < {high}, so the node still sorts between its "
                "neighbours.  Every level is a sub-list of level 0, so the order stays right "
                "on all of them, and spans count nodes, not scores: nothing to relink.  Only "
                "the key changes, in place (Redis's zslUpdateScore fast path: O(log N) for "
                "the search, O(1) for the change).",
                _picture(real, None, (), layout, width),
            ),
            "Checked: the real skip list after move() has exactly these links and spans.",
        ]
        return Narration(
            "update", title, "\n\n".join(steps), before, real, trace, (), frozenset(), True
        )
    height = before.heights[x]
    ahead = old_key < new_key
    middle, out_changes, _, out_lines = _unlink_changes(before, trace, x, keep=ahead)
    relink = trace_key(middle, *new_key, strict=True)
    if ahead:
        finger = trace_finger(before, *new_key, trace)
        _check_finger(finger, trace, relink, x)
    predicted, in_changes, _, in_lines = _link_changes(middle, relink, entry, height, kept=ahead)
    # Both the unlink and the relink changed links, and the relink shifted
    # the nodes after the new place by one: compare the pictures node by node.
    marked = _relinked(before, predicted, x, relink.rank + 1)
    sl.move(*old_key, *new_key)
    real = shape_of(sl, before.label_mode)
    _check(predicted, real, "update")
    search = _search_step(
        1, f"jumps to {old_label}", old_word, trace, before, layout=layout, width=width
    )
    link = (
        f"link the same node (same height {height}, no new level draw) after update[i], "
        "as an insert does"
    )
    lands = f"lands at rank {relink.rank + 1}:"
    after = _block(
        "Step 5: after.  Changed links are marked ~N~>.",
        _picture(real, None, marked, layout, width),
    )
    checked = "Checked: the spans above are those of the real skip list after move()."
    if ahead:
        steps = [
            intro,
            search,
            _block(
                f"Step 2: {new_word} does not sort between {low} and {high}, so the node "
                f"must move.  The key grows, so the new place is found first, with the node "
                f"still in the list, by a finger search from the update[i] of step 1 (not "
                f"from the header): each of them is before {old_word}, so before "
                f"{new_word} too.  The walk starts on the top level from update[top]; on "
                f"each level below it starts from update[i] if that node is ahead of where "
                f"the level above stopped (+), else from where it stopped (v).  A small "
                f"increase crosses few links.",
                _picture(before, finger, (), layout, width),
                _rows(explain(finger, before).splitlines()),
                _update_table(finger, before.labels),
            ),
            _block(
                f"Step 3: unlink the node as a delete does (height {height}), with the "
                "update[i] of step 1:",
                _rows(out_lines),
            ),
            _block(
                f"Step 4: {link}, with the update[i] and rank[i] of step 2 taken into the "
                f"list without the node: where the walk stopped on {old_label} itself, "
                f"update[i] is the one of step 1 (the node stays after it on that level); "
                f"past {old_label}, rank[i] is one lower.  (SkipList._move_ahead does steps "
                f"3 and 4 in one pass, level by level.)  The node {lands}",
                _rows(in_lines),
            ),
            after,
            checked,
        ]
    else:
        steps = [
            intro,
            search,
            _block(
                f"Step 2: {new_word} does not sort between {low} and {high}, so the node must "
                f"move.  Unlink it as a delete does (height {height}):",
                _rows(out_lines),
            ),
            _block(
                f"Step 3: search again, for {new_label}, from the header, in the list "
                "without the node:",
                _picture(middle, relink, (), layout, width),
                _update_table(relink, middle.labels),
            ),
            _block(f"Step 4: {link}; it {lands}", _rows(in_lines)),
            after,
            checked,
        ]
    return Narration(
        "update",
        title,
        "\n\n".join(steps),
        before,
        real,
        trace,
        (*out_changes, *in_changes),
        frozenset(marked),
        False,
        finger if ahead else relink,
    )


def _check_finger(finger: Trace, old: Trace, relink: Trace, x: int) -> None:
    """The finger search for the new place must find the update[i] and
    rank[i] that a search from the header finds once node ``x`` is unlinked
    (as ``SkipList._move_ahead`` relies on): where it stopped on ``x``, the
    old update[i]; past ``x``, the same node one number and one rank lower."""
    update = {level: (node, rank) for level, node, rank in old.stops}
    derived = []
    for level, w, rank in finger.stops:
        if w == x:
            derived.append((level, *update[level]))
        elif w > x:
            derived.append((level, w - 1, rank - 1))
        else:
            derived.append((level, w, rank))
    # Levels x alone reached are gone from the list without it: there the
    # header is update[i], at rank 0.
    expected = [(lvl, 0, 0) for lvl in range(len(derived) - 1, len(relink.stops) - 1, -1)]
    expected += list(relink.stops)
    assert derived == expected, (
        f"the finger search found update[i] {derived}, the search from the header {expected}"
    )
