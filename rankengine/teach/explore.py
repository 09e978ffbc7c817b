"""The skip-list explorer's data: every operation run on a real skip list,
exported step by step as JSON for a page that only draws.

An :class:`Explorer` holds a small board twice: in a real
:class:`~rankengine.index.skiplist.SkipList` (heights drawn with the level
probability ``p`` it was given) and in a real
:class:`~rankengine.index.sortedlist.SortedListIndex` with tiny blocks, so that
blocks show.  :meth:`Explorer.run` performs one operation (insert, delete,
search, score change, rank of a member, entry at a rank) on both and returns
a record:

* ``skiplist``: the shapes (``before``, ``after`` and, for a score decrease,
  ``middle``, the list without the node), the searches (:class:`Trace` as
  lists), and ``frames``: one per line the narration prints, each naming
  its kind (:data:`STEP_KINDS`), its text, the shape it is drawn on, how much
  of which search is done, the rank reached and its sum of spans, the links
  marked as changed;
* ``sorted``: what the same operation did to the blocks, recorded while it
  ran (:mod:`rankengine.teach.explore_sorted`);
* ``cost``: comparisons and memory touched, for each structure, counted
  while the real code ran on keys that count their comparisons.

The frames are cut from the narration's own text (:mod:`rankengine.teach.narrate`,
which checks itself against the real list), so the page shows what
``rankengine trace`` prints, one line at a time.  Nothing here decides where
a search goes: the traces do.

>>> ex = Explorer.random(8, seed=3)
>>> record = ex.run({"op": "insert", "score": 50, "height": 2})
>>> [f["kind"] for f in record["skiplist"]["frames"]][:3]
['intro', 'section', 'cross']
>>> record["skiplist"]["after"]["labels"][0], len(ex.sl)
('HEAD', 9)
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from rankengine.index.skiplist import MAX_LEVEL, P, SkipList
from rankengine.teach.explore_count import count_skiplist
from rankengine.teach.explore_sorted import SortedMirror
from rankengine.teach.narrate import Narration, narrate_delete, narrate_insert, narrate_update
from rankengine.teach.trace import Trace, explain, trace_key, trace_rank
from rankengine.teach.viz import HeightScript, LabelMode, Shape, make_shape, random_scores, shape_of

__all__ = [
    "DEFAULT_SIZE",
    "MAX_SIZE",
    "OPERATIONS",
    "STEP_KINDS",
    "Explorer",
    "draw_height",
    "histogram",
    "shape_json",
    "trace_json",
]

#: Entries of a random board: enough for three or four levels at p = 1/4,
#: few enough to fit a projector's width.
DEFAULT_SIZE: Final = 14
#: The largest board the explorer draws (the page scrolls sideways).
MAX_SIZE: Final = 200
#: The operations :meth:`Explorer.run` knows.
OPERATIONS: Final = ("insert", "delete", "search", "update", "rank", "at")
#: Every kind of frame, in the order a lesson meets them.  ``intro`` and
#: ``section`` are the narration's prose; ``start``, ``cross``, ``drop``,
#: ``end`` and ``result`` the lines of a search (:func:`explain`); ``table``
#: the update[i]/rank[i] table after a search; ``height`` the new node's
#: height; ``span`` one row of the span arithmetic of a link or an unlink;
#: ``level`` a level emptied by an unlink; ``inplace`` a score change that
#: keeps its place; ``after`` the list after, changed links marked;
#: ``checked`` the check against the real list.
STEP_KINDS: Final = (
    "intro",
    "section",
    "start",
    "cross",
    "drop",
    "end",
    "result",
    "table",
    "height",
    "span",
    "level",
    "inplace",
    "after",
    "checked",
)
_NUMBERED: Final = re.compile(r"^\s*\d+\. L(\d+)\s")
_ROW: Final = re.compile(r"^L(\d+)\s")
#: The comparison in a line of :func:`explain`: ``next is 25 <= 45``, ``5 + 4 > 7``.
_COMPARED: Final = re.compile(r"  (next is [^:]+|\S+ \+ \S+ [<>]=? \S+): ")


def draw_height(rng: random.Random, p: float, max_level: int) -> int:
    """A node height drawn with level probability ``p``: 1, plus one level
    per coin below ``p``, up to ``max_level`` (the law of
    ``SkipList._random_level``, whose ``P`` is fixed at 1/4).

    Runtime complexity: O(1) expected

    >>> sorted({draw_height(random.Random(s), 0.5, 3) for s in range(40)})
    [1, 2, 3]
    """
    height = 1
    while height < max_level and rng.random() < p:
        height += 1
    return height


def histogram(heights: Sequence[int], p: float, max_level: int) -> dict[str, Any]:
    """How many nodes reach exactly ``k`` levels above level 0, against the
    expected ``N * p^k * (1 - p)`` (at ``max_level - 1`` the draw stops, so
    that bar expects ``N * p^k``).

    Runtime complexity: O(N + level)

    >>> h = histogram([1, 1, 2, 1], 0.25, 32)
    >>> h["counts"], h["expected"][:2]
    ([3, 1], [3.0, 0.75])
    """
    n = len(heights)
    top = max([*heights, 1])
    shown = min(max_level, max(top, _expected_levels(n, p)))
    counts = [sum(1 for h in heights if h == k + 1) for k in range(shown)]
    expected = []
    for k in range(shown):
        share = p**k if k == max_level - 1 else p**k * (1 - p)
        expected.append(round(n * share, 3))
    return {"counts": counts, "expected": expected, "n": n, "p": p}


def _expected_levels(n: int, p: float) -> int:
    """Levels worth a bar: up to where fewer than half a node is expected."""
    if n < 1 or p <= 0:
        return 1
    return max(1, math.ceil(math.log(2 * n) / -math.log(p))) if p < 1 else n


def shape_json(shape: Shape) -> dict[str, Any]:
    """A :class:`Shape` as plain JSON: labels, heights, spans, forward links,
    scores.

    Runtime complexity: O(N * level)

    >>> from rankengine.teach.viz import teaching_list
    >>> shape_json(shape_of(teaching_list([2, 1], rng=1)))["labels"]
    ['HEAD', '1', '2', 'NIL']
    """
    return {
        "labels": list(shape.labels),
        "heights": list(shape.heights),
        "spans": [list(s) for s in shape.spans],
        "forward": [list(f) for f in shape.forward],
        "scores": [_json_value(p) for p, _, _ in shape.entries],
        "members": [str(m) for _, _, m in shape.entries],
    }


def _json_value(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    return value


def trace_json(trace: Trace) -> dict[str, Any]:
    """A :class:`Trace` as plain JSON (steps as ``[level, src, dst, span, rank]``).

    Runtime complexity: O(steps + level)
    """
    return {
        "steps": [[s.level, s.src, s.dst, s.span, s.rank] for s in trace.steps],
        "drops": [list(d) for d in trace.drops()],
        "restarts": [list(r) for r in trace.restarts()],
        "stops": [list(s) for s in trace.stops],
        "end": trace.end,
        "found": trace.found,
        "rank": trace.rank,
    }


# ----------------------------------------------------------------------
# Frames: the narration, line by line
# ----------------------------------------------------------------------


@dataclass
class _Frames:
    """Builds the frame list of one operation."""

    frames: list[dict[str, Any]]

    def add(self, kind: str, text: str, shape: str, **extra: Any) -> None:
        """A frame; fields left at their defaults (no search, nothing
        marked: None, 0 or empty) are left out, to keep pages small."""
        frame: dict[str, Any] = {"kind": kind, "text": text, "shape": shape}
        frame.update((k, v) for k, v in extra.items() if v is not None and v not in (0, []))
        self.frames.append(frame)

    def search(
        self, name: str, trace: Trace, shape: Shape, shape_name: str, prose: str = ""
    ) -> None:
        """One frame per line of ``explain(trace)`` (the first also shows
        ``prose``, the narration's step); checks that the lines and the
        trace's events agree one to one."""
        lines = explain(trace, shape).splitlines()
        numbered = [k for k, line in enumerate(lines) if _NUMBERED.match(line)]
        head = " ".join(line.strip() for line in lines[: numbered[0]]) if numbered else ""
        tail = lines[numbered[-1] + 1 :] if numbered else lines[1:]
        events = _events(trace)
        assert len(events) == len(numbered), (events, lines)
        base = {"trace": name}
        text = f"{prose}\n\n{head}" if prose else head
        self.add("section", text, shape_name, **base, at=list(_first_at(trace)))
        steps = drops = restarts = 0
        rank = 0
        terms: list[str] = ["0"]
        at: list[int] = list(_first_at(trace))
        for (kind, level, node, value), k in zip(events, numbered, strict=True):
            line = lines[k].strip()
            expect = {"cross": "cross", "start": "start at update", "drop": "drop to"}
            assert expect.get(kind, "end of the walk") in line, (kind, line)
            if kind == "start":
                restarts += 1
                rank = value
                terms = [str(value)]
                at = [level, node]
            elif kind == "cross":
                steps += 1
                rank = value
                terms.append(str(trace.steps[steps - 1].span))
                at = [level, node]
            elif kind == "drop":
                drops += 1
                at = [level - 1, node]
            compared = _COMPARED.search(line)
            self.add(
                kind,
                line,
                shape_name,
                **base,
                compare=compared.group(1) if compared else None,
                steps=steps,
                drops=drops,
                restarts=restarts,
                at=at,
                rank=rank,
                sum=_sum(terms, rank),
            )
        self.add(
            "result",
            " ".join(line.strip() for line in tail),
            shape_name,
            **base,
            steps=steps,
            drops=drops,
            restarts=restarts,
            at=[0, trace.end] if trace.kind == "rank" or trace.strict else at,
            rank=trace.rank,
            sum=_sum(terms, trace.rank),
            focus=trace.found,
        )


def _sum(terms: list[str], rank: int) -> str:
    return f"{' + '.join(terms)} = {rank}" if len(terms) > 1 else f"{terms[0]}"


def _first_at(trace: Trace) -> tuple[int, int]:
    if trace.starts:
        return (trace.starts[0][0], trace.starts[0][1])
    return (trace.stops[0][0], 0)


def _events(trace: Trace) -> list[tuple[str, int, int, int]]:
    """The numbered lines of :func:`explain`, as ``(kind, level, node, rank)``,
    in its order: a restart, the links crossed, then a drop (``end`` on
    level 0), per level; a search that stands on its target stops there."""
    restarts = dict(trace.restarts())
    starts = {level: rank for level, _, rank in trace.starts}
    out: list[tuple[str, int, int, int]] = []
    for level, stop, rank in trace.stops:
        if level in restarts:
            out.append(("start", level, restarts[level], starts[level]))
        out += [("cross", s.level, s.dst, s.rank) for s in trace.steps if s.level == level]
        if trace.found == stop and not trace.strict:
            break
        out.append(("drop" if level else "end", level, stop, rank))
    return out


def _paragraphs(text: str) -> list[tuple[str, list[str]]]:
    """The narration as ``(prose, indented blocks)`` pairs, prose unwrapped."""
    out: list[tuple[str, list[str]]] = []
    for para in text.split("\n\n"):
        if para.startswith("    "):
            out[-1][1].append(para)
        else:
            out.append((" ".join(line.strip() for line in para.splitlines()), []))
    return out


def _rows(blocks: list[str], header: str) -> tuple[str, list[str]]:
    """The table of ``blocks`` whose header starts with ``header``: the
    header line and the lines after it."""
    for block in blocks:
        lines = [line[4:] for line in block.splitlines()]
        if lines and lines[0].startswith(header):
            return lines[0], lines[1:]
    return "", []


# ----------------------------------------------------------------------
# The explorer
# ----------------------------------------------------------------------


class Explorer:
    """A small board on a real skip list and a real sorted list, whose
    operations are exported step by step (see the module documentation).

    Runtime complexity: each :meth:`run` is O(N * level) (the pictures)

    >>> ex = Explorer([30, 10, 20], seed=1)
    >>> ex.run({"op": "search", "score": 20})["skiplist"]["traces"]["search"]["rank"]
    2

    :param scores: the scores, inserted in this order.
    :param members: one name per score (default ``s0``, ``s1``, ...); nodes
        are labelled with them when given.
    :param p: the level probability of the heights (``SkipList`` itself
        draws with 1/4; here every height is drawn with ``p`` and forced).
    :raises ValueError: for a bad ``p``, ``max_level`` or size.
    """

    def __init__(
        self,
        scores: Sequence[int | float],
        *,
        members: Sequence[str] | None = None,
        p: float = P,
        max_level: int = MAX_LEVEL,
        seed: int = 0,
    ) -> None:
        if isinstance(p, bool) or not isinstance(p, int | float) or not 0 < p < 1:
            raise ValueError(f"p must be a number between 0 and 1, not {p!r}")
        if isinstance(max_level, bool) or not isinstance(max_level, int):
            raise ValueError(f"max_level must be an integer, not {max_level!r}")
        if not 1 <= max_level <= MAX_LEVEL:
            raise ValueError(f"max_level must be from 1 to {MAX_LEVEL}, not {max_level}")
        if len(scores) > MAX_SIZE:
            raise ValueError(f"at most {MAX_SIZE} entries (the page draws every node)")
        named = members is not None
        names = list(members) if members is not None else [f"s{i}" for i in range(len(scores))]
        if len(names) != len(scores) or len(set(names)) != len(names):
            raise ValueError("one distinct name per score")
        self.p = float(p)
        self.max_level = max_level
        self.seed = seed
        self.label: LabelMode = "member" if named else "score"
        self._heights = random.Random(seed)
        self.script = HeightScript(seed, max_level=max_level)
        heights = [draw_height(self._heights, self.p, max_level) for _ in scores]
        self.script.force(*heights)
        self.sl = SkipList(self.script, max_level=max_level)
        for i, score in enumerate(scores):
            self.sl.insert(score, i, names[i])
        self.sorted = SortedMirror(list(self.sl))
        self._next_tie = len(scores)

    @classmethod
    def random(
        cls, n: int = DEFAULT_SIZE, *, seed: int = 0, p: float = P, max_level: int = MAX_LEVEL
    ) -> Explorer:
        """A board of ``n`` random distinct scores (:func:`random_scores`)."""
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= MAX_SIZE:
            raise ValueError(f"n must be an integer from 0 to {MAX_SIZE}, not {n!r}")
        return cls(random_scores(n, seed), p=p, max_level=max_level, seed=seed)

    # ------------------------------------------------------------------

    def board(self) -> dict[str, Any]:
        """The board now: its shape, sorted blocks, histogram and settings.

        Runtime complexity: O(N * level)
        """
        shape = shape_of(self.sl, self.label)
        return {
            "p": self.p,
            "max_level": self.max_level,
            "seed": self.seed,
            "label": self.label,
            "shape": shape_json(shape),
            "sorted": self.sorted.blocks(),
            "histogram": histogram(shape.heights[1:], self.p, self.max_level),
        }

    def _check(self) -> None:
        """The two structures hold the same entries, and each is sound."""
        self.sl._check()
        self.sorted.check(list(self.sl))

    def _key(self, op: dict[str, Any], name: str = "score") -> tuple[Any, Any]:
        """The key an operation names: by ``member``, or by score (the first entry)."""
        member = op.get("member")
        entries = list(self.sl)
        if member is not None:
            for p, t, m in entries:
                if m == member:
                    return (p, t)
            raise ValueError(f"no member {member!r} on the board")
        score = _number(op.get(name), name)
        for p, t, _ in entries:
            if p == score:
                return (p, t)
        raise ValueError(f"no entry with score {score!r} on the board")

    def run(self, op: dict[str, Any]) -> dict[str, Any]:
        """Perform one operation on both structures and export it.

        ``op`` is ``{"op": "insert", "score": S[, "member": M][, "height": H]}``,
        ``{"op": "delete" | "search", "score": S}`` (or ``"member"``),
        ``{"op": "update", "score": OLD, "new": NEW}``, ``{"op": "rank",
        "member": M}`` or ``{"op": "at", "rank": R}``.

        Runtime complexity: O(N * level)

        :raises ValueError: for an unknown operation or bad arguments;
            nothing changes then.
        """
        kind = op.get("op")
        if kind not in OPERATIONS:
            raise ValueError(f"op must be one of {', '.join(OPERATIONS)}, not {kind!r}")
        before = shape_of(self.sl, self.label)
        record: dict[str, Any]
        if kind == "insert":
            record = self._insert(op, before)
        elif kind == "delete":
            key = self._key(op)
            count = count_skiplist(before, "remove", key)
            sorted_side = self.sorted.run("remove", key)
            story = narrate_delete(self.sl, *key, label=self.label)
            record = self._story(story, count, sorted_side)
        elif kind == "update":
            key = self._key(op)
            new = (_number(op.get("new"), "new"), key[1])
            if new != key and any((p, t) == new for p, t, _ in self.sl):
                raise ValueError(f"key {new!r} is already present")
            count = count_skiplist(before, "move", key, new)
            sorted_side = self.sorted.run("move", key, new)
            story = narrate_update(self.sl, key[0], new[0], tie=key[1], label=self.label)
            record = self._story(story, count, sorted_side)
        elif kind in ("search", "rank"):
            key = self._key(op)
            trace = trace_key(before, *key)
            record = self._read(kind, trace, before, key)
        else:
            rank = op.get("rank")
            if isinstance(rank, bool) or not isinstance(rank, int):
                raise ValueError(f"rank must be an integer, not {rank!r}")
            trace = trace_rank(before, rank)
            record = self._read(kind, trace, before, rank)
        self._check()
        if self.label == "member" and kind in ("insert", "delete", "update"):
            # member labels say who, not what score: the title says both
            moved = record["skiplist"]["before"], record["skiplist"]["after"]
            record["title"] += f" ({_score_change(kind, op, moved)})"
        record["op"] = dict(op)
        record["board"] = self.board()
        sl = record["skiplist"]
        # the histogram of each shape drawn, so the page shows the one in view
        sl["histograms"] = {
            name: histogram(sl[name]["heights"][1:], self.p, self.max_level)
            for name in ("before", "middle", "after")
            if name in sl
        }
        return record

    def _insert(self, op: dict[str, Any], before: Shape) -> dict[str, Any]:
        if len(self.sl) >= MAX_SIZE:
            raise ValueError(f"the board is full ({MAX_SIZE} entries: the page draws every node)")
        score = _number(op.get("score"), "score")
        tie = self._next_tie
        member = op.get("member")
        if member is None:
            member = f"s{tie}"
        if not isinstance(member, str) or not member:
            raise ValueError(f"member must be a non-empty string, not {member!r}")
        if any(m == member for _, _, m in self.sl):
            raise ValueError(f"member {member!r} is already on the board")
        height = op.get("height")
        if height is None:
            height = draw_height(self._heights, self.p, self.max_level)
        if isinstance(height, bool) or not isinstance(height, int):
            raise ValueError(f"height must be an integer, not {height!r}")
        if not 1 <= height <= self.max_level:
            raise ValueError(f"height must be from 1 to {self.max_level}, not {height}")
        count = count_skiplist(before, "insert", (score, tie), member, height=height)
        sorted_side = self.sorted.run("insert", (score, tie), member)
        story = narrate_insert(
            self.sl, score, tie, member, height=height, rng=self.script, label=self.label
        )
        self._next_tie += 1
        return self._story(story, count, sorted_side)

    def _read(self, kind: str, trace: Trace, shape: Shape, target: Any) -> dict[str, Any]:
        frames = _Frames([])
        if kind == "at":
            title = f"Entry at rank {target}"
            count = count_skiplist(shape, "entry", target)
            sorted_side = self.sorted.run("entry", target)
        else:
            name = shape.labels[trace.found] if trace.found is not None else str(target[0])
            title = f"Rank of {name}" if kind == "rank" else f"Search for {name}"
            count = count_skiplist(shape, "position", target)
            sorted_side = self.sorted.run("position", target)
        intro = title
        if kind == "rank":
            # a board finds a member's key in its hash map, then walks
            intro = (
                f"{title}: the hash map gives the member's key {target!r} (score, tie); "
                "then the rank walk (Redis's zslGetRank) adds up the spans it crosses."
            )
        frames.add("intro", intro, "before")
        frames.search("search", trace, shape, "before")
        return {
            "title": title,
            "skiplist": {
                "before": shape_json(shape),
                "after": shape_json(shape),
                "traces": {"search": trace_json(trace)},
                "frames": frames.frames,
                "text": explain(trace, shape),
            },
            "sorted": sorted_side,
            "cost": {"skiplist": count, "sorted": sorted_side["cost"]},
        }

    def _story(
        self, story: Narration, count: dict[str, int], sorted_side: dict[str, Any]
    ) -> dict[str, Any]:
        before, after = story.before, story.after
        shapes = {"before": shape_json(before), "after": shape_json(after)}
        traces = {"search": trace_json(story.trace)}
        middle: Shape | None = None
        relink = story.relink
        if relink is not None and not relink.starts:
            # A decrease: the node is unlinked first; the search for its new
            # place runs on the list without it.
            x = story.trace.found
            assert x is not None
            heights = [*before.heights[1:x], *before.heights[x + 1 :]]
            middle = make_shape(
                [*before.entries[: x - 1], *before.entries[x:]],
                [max(heights, default=1), *heights],
                before.label_mode,
            )
            assert trace_key(middle, *relink.target, strict=True) == relink
            shapes["middle"] = shape_json(middle)
        if relink is not None:
            traces["relink"] = trace_json(relink)
        frames = _Frames([])
        paragraphs = _paragraphs(story.text)
        frames.add("intro", paragraphs[0][0], "before")
        update = story.trace.update()
        marked = sorted(story.marked)
        for prose, blocks in paragraphs[1:]:
            if prose.startswith("Checked"):
                frames.add("checked", prose, "after", marked=marked)
                continue
            if prose.startswith("Step 1:"):
                frames.search("search", story.trace, before, "before", prose)
                self._table(frames, story.trace, blocks, "before", "search")
            elif "finger search" in prose:
                assert relink is not None
                frames.search("relink", relink, before, "before", prose)
                self._table(frames, relink, blocks, "before", "relink")
            elif "search again" in prose:
                assert relink is not None and middle is not None
                frames.search("relink", relink, middle, "middle", prose)
                self._table(frames, relink, blocks, "middle", "relink")
            elif re.match(r"Step \d+: height\.", prose):
                new = story.trace.rank + 1
                frames.add("height", prose, "after", focus=new)
            elif "still sorts between" in prose:
                x = story.trace.found
                frames.add("inplace", prose, "after", focus=x)
            elif re.match(r"Step \d+: after\.", prose):
                frames.add("after", prose, "after", marked=marked)
            else:
                self._span_rows(frames, prose, blocks, story, update)
        return {
            "title": story.title,
            "skiplist": {
                **shapes,
                "traces": traces,
                "frames": frames.frames,
                "text": story.text,
                "in_place": story.in_place,
                "changes": [
                    {"level": c.level, "node": c.node, "old": c.old, "new": c.new, "why": c.why}
                    for c in story.changes
                ],
            },
            "sorted": sorted_side,
            "cost": {"skiplist": count, "sorted": sorted_side["cost"]},
        }

    @staticmethod
    def _table(frames: _Frames, trace: Trace, blocks: list[str], shape: str, name: str) -> None:
        header, rows = _rows(blocks, "level  update[i]  rank[i]")
        if header and "  d  " not in header:
            n = len(trace.steps)
            frames.add(
                "table",
                "\n".join([header, *rows]),
                shape,
                trace=name,
                steps=n,
                drops=len(trace.drops()),
                restarts=len(trace.restarts()),
                at=[0, trace.end],
                rank=trace.rank,
                update=[list(s) for s in trace.stops],
            )

    @staticmethod
    def _span_rows(
        frames: _Frames, prose: str, blocks: list[str], story: Narration, update: list[int]
    ) -> None:
        """One frame per row of a link or unlink table (and one per level
        dropped): an unlink drawn on the list before, with ``update[i]``'s
        link marked level by level; a link on the list after, with the
        links marked up to that level."""
        frames.add("section", prose, "before" if "unlink" in prose.lower() else "after")
        for block in blocks:
            lines = [line[4:] for line in block.splitlines()]
            if not lines or not lines[0].startswith("level"):
                continue
            header = lines[0]
            unlink = "  d  " not in header
            for line in lines[1:]:
                match = _ROW.match(line)
                if match is None:
                    shape = "before" if unlink else "after"
                    frames.add("level", line.strip(), shape, focus=story.trace.found)
                    continue
                level = int(match.group(1))
                if unlink:
                    marked = [[i, update[i]] for i in range(level + 1)]
                    frames.add(
                        "span",
                        f"{header}\n{line}",
                        "before",
                        marked=marked,
                        focus=story.trace.found,
                        level=level,
                    )
                else:
                    marked = [[i, k] for i, k in sorted(story.marked) if i <= level]
                    frames.add("span", f"{header}\n{line}", "after", marked=marked, level=level)


def _score_change(kind: str, op: dict[str, Any], shapes: tuple[dict[str, Any], ...]) -> str:
    """The scores of a write on a member-labelled board: ``35``, ``80 -> 95``."""
    if kind == "insert":
        return str(op["score"])
    before, after = shapes
    gone = set(before["members"]) - set(after["members"])
    if kind == "delete":
        name = gone.pop() if gone else op.get("member")
        return str(before["scores"][before["members"].index(name)])
    name = op.get("member")
    if name is None:
        name = before["members"][before["scores"].index(op["score"])]
    old = before["scores"][before["members"].index(name)]
    return f"{old} -> {after['scores'][after['members'].index(name)]}"


def _number(value: Any, name: str) -> int | float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a number, not {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{name} must be finite, not {value!r}")
    return value
