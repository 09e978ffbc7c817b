"""A plain reference model of a leaderboard, for the behaviour tests.

Obviously correct rather than fast: the state is two dicts and a counter,
and every read sorts every member from scratch.  It shares no code with
rankengine; its rules are written from the ``Leaderboard`` docstrings:

* **Order.**  Scores are compared column by column, each column in its own
  direction (``"desc"``: higher first).  A scalar board is a board with one
  column.
* **Ties.**  ``tie_break="first"``: the member whose score changed earliest
  (the smallest stamp of the logical clock) ranks first; the clock ticks only
  when a member's score changes.  ``tie_break="member"``: tied members sorted
  by member, in reverse on a board whose first column is ``"desc"``.
* **Ranks.**  unique = position; competition = 1 + members with a strictly
  better score; dense = 1 + distinct scores strictly better.
* **Writes** go through one rule, :meth:`Model._write`: NX / XX / GT / LT as
  ``when`` = new / present / better / worse (better and worse never block a
  new member); an unchanged score changes nothing.  Batches are the same
  writes one after another, all or nothing.
* **Score ranges** compare in the direction of the first column (a column
  whose direction differs from the first is compared reversed).

Entries are plain tuples ``(member, score, rank, meta)``.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Mapping
from functools import cmp_to_key
from typing import Any

Row = tuple[Any, Any, int, Any]


def copy_meta(value: Any) -> Any:
    """A deep copy of metadata, tuples becoming lists (as the board stores them)."""
    if isinstance(value, Mapping):
        return {key: copy_meta(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [copy_meta(item) for item in value]
    return value


class Model:
    def __init__(
        self,
        *,
        order: Any = "desc",
        tie_break: str = "first",
        rank_style: str = "unique",
    ) -> None:
        self.order = order
        self.composite = not isinstance(order, str)
        self.directions: tuple[str, ...] = tuple(order) if self.composite else (order,)
        self.tie_break = tie_break
        self.rank_style = rank_style
        self.scores: dict[Any, Any] = {}
        self.stamps: dict[Any, int] = {}
        self.metas: dict[Any, Any] = {}
        self.clock = 0

    # ------------------------------------------------------------------
    # Comparing scores
    # ------------------------------------------------------------------
    def _columns(self, score: Any) -> tuple[Any, ...]:
        return tuple(score) if self.composite else (score,)

    def compare(self, a: Any, b: Any) -> int:
        """-1 when score ``a`` ranks ahead of ``b``, 1 when behind, 0 when equal."""
        for x, y, direction in zip(
            self._columns(a), self._columns(b), self.directions, strict=True
        ):
            if x != y:
                ahead = x > y if direction == "desc" else x < y
                return -1 if ahead else 1
        return 0

    def range_compare(self, a: Any, b: Any) -> int:
        """-1/0/1 for ``a`` below/equal/above ``b`` on a range's axis: each
        column in the direction of the first column."""
        for x, y, direction in zip(
            self._columns(a), self._columns(b), self.directions, strict=True
        ):
            if x != y:
                below = x < y if direction == self.directions[0] else x > y
                return -1 if below else 1
        return 0

    def in_range(self, score: Any, low: Any, high: Any, low_inc: bool, high_inc: bool) -> bool:
        if low is not None:
            c = self.range_compare(score, low)
            if c < 0 or (c == 0 and not low_inc):
                return False
        if high is not None:
            c = self.range_compare(score, high)
            if c > 0 or (c == 0 and not high_inc):
                return False
        return True

    def zero(self) -> Any:
        return (0,) * len(self.directions) if self.composite else 0

    def add(self, score: Any, delta: Any) -> Any:
        if self.composite:
            out = tuple(a + b for a, b in zip(score, delta, strict=True))
            if any(v != v for v in out):
                raise ValueError("increment would make the score NaN")
            return out
        total = score + delta
        if total != total:
            raise ValueError("increment would make the score NaN")
        return total

    # ------------------------------------------------------------------
    # Order and ranks (sorted from scratch on every call)
    # ------------------------------------------------------------------
    def ordered(self) -> list[Any]:
        """Members best first."""
        members = list(self.scores)
        if self.tie_break == "first":
            members.sort(key=lambda m: self.stamps[m])
        else:
            members.sort(reverse=self.directions[0] == "desc")
        # a stable sort by score keeps the tie order just made
        members.sort(key=cmp_to_key(lambda a, b: self.compare(self.scores[a], self.scores[b])))
        return members

    def _rank_of_score(self, score: Any, position: int, style: str) -> int:
        if style == "unique":
            return position + 1
        better = [s for s in self.scores.values() if self.compare(s, score) < 0]
        if style == "competition":
            return len(better) + 1
        distinct: list[Any] = []
        for s in better:
            if all(self.compare(s, d) != 0 for d in distinct):
                distinct.append(s)
        return len(distinct) + 1

    def rows(self, style: str | None = None, with_meta: bool = False) -> list[Row]:
        style = style or self.rank_style
        out = []
        for i, member in enumerate(self.ordered()):
            score = self.scores[member]
            meta = copy_meta(self.metas.get(member)) if with_meta else None
            out.append((member, score, self._rank_of_score(score, i, style), meta))
        return out

    # ------------------------------------------------------------------
    # Writes
    # ------------------------------------------------------------------
    def _stamp(self, member: Any, score: Any) -> None:
        self.clock += 1
        self.scores[member] = score
        self.stamps[member] = self.clock

    def _write(self, member: Any, score: Any, when: str | None) -> str:
        """One conditional score write: 'added', 'changed', 'same' or 'blocked'."""
        if member not in self.scores:
            if when == "present":
                return "blocked"
            self._stamp(member, score)
            return "added"
        if when == "new":
            return "blocked"
        c = self.compare(score, self.scores[member])
        if when == "better" and c >= 0:
            return "blocked"
        if when == "worse" and c <= 0:
            return "blocked"
        if c == 0:
            return "same"
        self._stamp(member, score)
        return "changed"

    def set(self, member: Any, score: Any, *, when: str | None = None, meta: Any = None) -> bool:
        outcome = self._write(member, score, when)
        if outcome == "blocked":
            return False
        changed = outcome != "same"
        meta = copy_meta(meta)
        if meta is not None and (changed or self.metas.get(member) != meta):
            self.metas[member] = meta
            return True
        return changed

    def incr(self, member: Any, delta: Any = 1, *, when: str | None = None) -> Any:
        present = member in self.scores
        if (when == "present" and not present) or (when == "new" and present):
            return None
        new = self.add(self.scores[member] if present else self.zero(), delta)
        if self._write(member, new, when) == "blocked":
            return None
        return self.scores[member]  # a sum equal to the old score keeps (and reports) it

    def _save(self) -> tuple[Any, ...]:
        return dict(self.scores), dict(self.stamps), dict(self.metas), self.clock

    def _load(self, state: tuple[Any, ...]) -> None:
        self.scores, self.stamps, self.metas, self.clock = state

    def set_many(self, items: Any, *, when: str | None = None) -> int:
        pairs = list(items.items()) if isinstance(items, Mapping) else list(items)
        changed = set()
        for member, score in pairs:
            if self._write(member, score, when) in ("added", "changed"):
                changed.add(member)
        return len(changed)

    def incr_many(self, items: Any) -> dict[Any, Any]:
        pairs = list(items.items()) if isinstance(items, Mapping) else list(items)
        saved = self._save()
        results = {}
        try:
            for member, delta in pairs:
                base = self.scores.get(member, self.zero())
                new = self.add(base, delta)
                self._write(member, new, None)
                results[member] = self.scores[member]
        except ValueError:
            self._load(saved)
            raise
        return results

    def remove(self, member: Any) -> bool:
        if member not in self.scores:
            return False
        del self.scores[member], self.stamps[member]
        self.metas.pop(member, None)
        return True

    def remove_many(self, members: Iterable[Any]) -> int:
        return sum(self.remove(m) for m in list(members))

    def clear(self) -> None:
        for member in list(self.scores):
            self.remove(member)

    def set_meta(self, member: Any, meta: Any) -> None:
        if member not in self.scores:
            raise KeyError(member)
        if meta is None:
            self.metas.pop(member, None)
        else:
            self.metas[member] = copy_meta(meta)

    def meta(self, member: Any) -> Any:
        return copy_meta(self.metas.get(member))

    # ------------------------------------------------------------------
    # Pops and pruning
    # ------------------------------------------------------------------
    def pop_best(self, count: int = 1, *, with_meta: bool = False) -> list[Row]:
        taken = self.rows("unique", with_meta)[:count]
        for row in taken:
            self.remove(row[0])
        return taken

    def pop_worst(self, count: int = 1, *, with_meta: bool = False) -> list[Row]:
        rows = self.rows("unique", with_meta)
        taken = rows[len(rows) - min(count, len(rows)) :][::-1]
        for row in taken:
            self.remove(row[0])
        return taken

    def _window(self, start: int, stop: int) -> range:
        """0-based positions of 1-based inclusive ranks (negative: from the bottom)."""
        n = len(self.scores)
        if start < 0:
            start += n + 1
        if stop < 0:
            stop += n + 1
        start, stop = max(start, 1), min(stop, n)
        return range(start - 1, stop) if start <= stop else range(0)

    def remove_by_rank(self, start: int, stop: int) -> int:
        order = self.ordered()
        doomed = [order[i] for i in self._window(start, stop)]
        return self.remove_many(doomed)

    def remove_by_score(
        self, min: Any, max: Any, *, min_inclusive: bool = True, max_inclusive: bool = True
    ) -> int:
        doomed = [
            m
            for m, s in self.scores.items()
            if self.in_range(s, min, max, min_inclusive, max_inclusive)
        ]
        return self.remove_many(doomed)

    def keep_top(self, n: int) -> int:
        return self.remove_many(self.ordered()[n:])

    # ------------------------------------------------------------------
    # Reads
    # ------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.scores)

    def __contains__(self, member: Any) -> bool:
        return member in self.scores

    def __iter__(self) -> Any:
        return iter(self.ordered())

    def items(self) -> list[tuple[Any, Any]]:
        return [(m, self.scores[m]) for m in self.ordered()]

    def score(self, member: Any, default: Any = None) -> Any:
        return self.scores.get(member, default)

    def entry(self, member: Any, *, style: str | None = None, with_meta: bool = False) -> Any:
        for row in self.rows(style, with_meta):
            if row[0] == member:
                return row
        return None

    def rank(self, member: Any, *, style: str | None = None) -> int | None:
        row = self.entry(member, style=style)
        return None if row is None else row[2]

    def entries(
        self, members: Iterable[Any], *, style: str | None = None, with_meta: bool = False
    ) -> list[Any]:
        return [self.entry(m, style=style, with_meta=with_meta) for m in members]

    def at(self, rank: int, *, style: str | None = None, with_meta: bool = False) -> Row:
        rows = self.rows(style, with_meta)
        if rank < 0:
            rank += len(rows) + 1
        if not 1 <= rank <= len(rows):
            raise IndexError(rank)
        return rows[rank - 1]

    def rank_for_score(self, score: Any, *, style: str | None = None) -> int:
        style = style or self.rank_style
        scores = list(self.scores.values())
        if style == "unique":  # a newcomer comes after everyone already on its score
            return 1 + sum(self.compare(s, score) <= 0 for s in scores)
        return self._rank_of_score(score, -1, style)

    def percentile(self, member: Any, *, method: str = "midpoint") -> float | None:
        if member not in self.scores:
            return None
        mine = self.scores[member]
        n = len(self.scores)
        below = sum(self.compare(s, mine) > 0 for s in self.scores.values())
        equal = sum(self.compare(s, mine) == 0 for s in self.scores.values())
        if method == "below":
            return 100.0 * below / n
        if method == "at_or_below":
            return 100.0 * (below + equal) / n
        return 100.0 * (below + equal / 2) / n

    def score_at_percentile(self, p: float) -> Any:
        worst_first = [self.scores[m] for m in reversed(self.ordered())]
        n = len(worst_first)
        if n == 0:
            return None
        x = (n - 1) * p / 100
        lo = math.floor(x)
        hi = min(lo + 1, n - 1)
        a, b = worst_first[lo], worst_first[hi]
        if self.composite or lo == x or a == b:
            return a
        if math.isinf(a) or math.isinf(b):
            return a if math.isinf(a) else b
        gap = b - a
        if (isinstance(gap, float) and math.isinf(gap)) or (
            isinstance(gap, int) and abs(gap) > sys.float_info.max
        ):  # finite, but the gap is beyond the float range
            return a * (1 - (x - lo)) + b * (x - lo)
        return a + (b - a) * (x - lo)

    def top(self, k: int = 10, *, style: str | None = None, with_meta: bool = False) -> list[Row]:
        return self.rows(style, with_meta)[:k]

    def by_rank(
        self,
        start: int = 1,
        stop: int = -1,
        *,
        style: str | None = None,
        with_meta: bool = False,
    ) -> list[Row]:
        rows = self.rows(style, with_meta)
        return [rows[i] for i in self._window(start, stop)]

    def pages(self, size: int = 25) -> int:
        return math.ceil(len(self.scores) / size)

    def page(
        self, number: int, size: int = 25, *, style: str | None = None, with_meta: bool = False
    ) -> list[Row]:
        number = min(max(number, 1), max(self.pages(size), 1))
        return self.rows(style, with_meta)[(number - 1) * size : number * size]

    def around(
        self,
        member: Any,
        above: int = 5,
        below: int = 5,
        *,
        fill: bool = False,
        style: str | None = None,
        with_meta: bool = False,
    ) -> list[Row]:
        if member not in self.scores:
            return []
        rows = self.rows(style, with_meta)
        n = len(rows)
        i = self.ordered().index(member)
        if not fill:
            return rows[max(0, i - above) : i + below + 1]
        width = min(above + below + 1, n)
        start = max(0, min(i - above, n - width))
        return rows[start : start + width]

    def by_score(
        self,
        min: Any = None,
        max: Any = None,
        *,
        min_inclusive: bool = True,
        max_inclusive: bool = True,
        offset: int = 0,
        limit: int | None = None,
        style: str | None = None,
        with_meta: bool = False,
    ) -> list[Row]:
        rows = [
            row
            for row in self.rows(style, with_meta)
            if self.in_range(row[1], min, max, min_inclusive, max_inclusive)
        ]
        return rows[offset:] if limit is None else rows[offset : offset + limit]

    def count(
        self,
        min: Any = None,
        max: Any = None,
        *,
        min_inclusive: bool = True,
        max_inclusive: bool = True,
    ) -> int:
        return sum(
            self.in_range(s, min, max, min_inclusive, max_inclusive) for s in self.scores.values()
        )


def combine(
    models: list[Model],
    *,
    weights: list[Any] | None = None,
    aggregate: str = "sum",
    intersect: bool = False,
    **config: Any,
) -> Model:
    """Redis ZUNION/ZINTER rules: weight * score (NaN -> 0), then sum (inf + -inf
    -> 0) / min / max; tie order by first appearance (inputs in order, each
    best first); metadata from the first input that has some."""
    weights = [1] * len(models) if weights is None else list(weights)
    totals: dict[Any, Any] = {}
    seen: dict[Any, int] = {}
    metas: dict[Any, Any] = {}
    for model, weight in zip(models, weights, strict=True):
        for member, score in model.items():
            value = weight * score
            if value != value:
                value = 0.0
            if member not in totals:
                totals[member], seen[member] = value, 1
            else:
                seen[member] += 1
                old = totals[member]
                if aggregate == "min":
                    totals[member] = min(old, value)
                elif aggregate == "max":
                    totals[member] = max(old, value)
                else:
                    total = old + value
                    totals[member] = 0.0 if total != total else total
            if member not in metas and model.metas.get(member) is not None:
                metas[member] = copy_meta(model.metas[member])
    first = models[0]
    settings = {"order": first.order, "tie_break": first.tie_break, "rank_style": first.rank_style}
    result = Model(**{**settings, **config})
    result.set_many([(m, s) for m, s in totals.items() if not intersect or seen[m] == len(models)])
    for member, data in metas.items():
        if member in result.scores:
            result.metas[member] = data
    return result
