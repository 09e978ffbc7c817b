"""Following a search through a skip list, step by step.

:func:`trace_key` and :func:`trace_rank` follow a search and record every
link it crosses, where it drops a level and the rank summed from spans;
:func:`explain` tells it in numbered sentences and
:func:`rankengine.teach.viz.render_text` draws it.  :func:`trace_finger` follows
the finger search a score increase runs (``SkipList._move_ahead``): from the
old ``update[i]`` nodes, not from the header.  The narrations of inserts,
deletes and score changes (:mod:`rankengine.teach.narrate`) are told with
these searches.

>>> from rankengine.teach.viz import HeightScript, teaching_list
>>> sl = teaching_list([10, 20, 5, 15, 25], rng=HeightScript(1).force(1, 2, 1, 3, 1))
>>> [(s.level, s.src, s.dst, s.span, s.rank) for s in trace_key(sl, 20).steps]
[(2, 0, 3, 3, 3), (1, 3, 4, 1, 4)]
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from rankengine.board.checks import check_flag
from rankengine.index.protocol import Entry3
from rankengine.index.skiplist import SkipList
from rankengine.teach.svg import counted
from rankengine.teach.viz import Layout, Shape, ljust, render_text, shape_of, text_width

__all__ = [
    "PROSE_WIDTH",
    "Step",
    "Trace",
    "explain",
    "trace_finger",
    "trace_key",
    "trace_rank",
]

_INDENT: Final = "    "
#: Narration prose is wrapped to this many columns (pictures are not).
PROSE_WIDTH: Final = 88


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

    >>> from rankengine.teach.viz import HeightScript, teaching_list
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

    >>> from rankengine.teach.viz import HeightScript, teaching_list
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

    >>> from rankengine.teach.viz import HeightScript, teaching_list
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

    >>> from rankengine.teach.viz import HeightScript, teaching_list
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
    width = max(text_width(labels[node]) for _, node, _ in trace.stops)
    width = max([width, *(text_width(labels[s.src]) for s in trace.steps)])
    width = max([width, *(text_width(labels[node]) for _, node, _ in trace.starts)])
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
            start = f"{n:>{nw}}. L{level:<2} at {ljust(labels[node], width)}  "
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
                f"{n:>{nw}}. L{level:<2} at {ljust(labels[step.src], width)}  {cond}: cross, "
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
            f"{n:>{nw}}. L{level:<2} at {ljust(labels[stop], width)}  {why}: "
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
        max([low, *(text_width(row[j]) for row in rows if j < len(row) - 1)])
        for j, low in enumerate(minimum)
    ]
    return [
        "  ".join([*(ljust(cell, w) for cell, w in zip(row[:-1], widths, strict=False)), row[-1]])
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
