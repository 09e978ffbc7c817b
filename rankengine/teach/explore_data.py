"""What an explorer page holds: prepared scenarios for a board, the
operations a lecturer recorded, and boards pre-generated for other values of
``p`` and the max level (a static file cannot ask for new ones).

:func:`scenarios` picks, from the board as it stands, one of each operation
a lesson needs; :func:`parse_op` reads an operation typed as on the command
line; :func:`static_data` runs it all and returns the page's data.

>>> data = static_data(Explorer.random(10, seed=8), [parse_op("insert 50@3")])
>>> [r["title"] for r in data["boards"][0]["ops"]][:2]
['Insert 50', 'Search for 48']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from rankengine.teach.explore import MAX_SIZE, Explorer
from rankengine.teach.viz import shape_of

__all__ = [
    "OTHER_MAX_LEVELS",
    "OTHER_PS",
    "SMALL_BOARD",
    "board_data",
    "parse_op",
    "scenarios",
    "static_data",
]

#: Level probabilities a static page has boards for (the server takes any).
OTHER_PS: Final = (0.5, 0.25, 0.125)
#: Max levels a static page has boards for, besides the board's own: a low
#: cap crowds the top level.
OTHER_MAX_LEVELS: Final = (3,)
#: Boards up to this size get an insert and a delete on their other-``p``
#: boards too; larger ones only a search, which keeps a page of 60 entries
#: under 300 KB (each narrated write of a large board is ~10 KB).
SMALL_BOARD: Final = 30


def parse_op(text: str) -> dict[str, Any]:
    """An operation as typed: ``insert 35``, ``insert ann=35``, ``insert
    35@3`` (height 3), ``delete 25``, ``search 45``, ``update 40 48``,
    ``rank ann``, ``at 7``.

    Runtime complexity: O(len(text))

    >>> parse_op("insert ann=35@2")
    {'op': 'insert', 'score': 35, 'member': 'ann', 'height': 2}
    >>> parse_op("update 40 42.5")
    {'op': 'update', 'score': 40, 'new': 42.5}

    :raises ValueError: for anything else.
    """
    words = text.split()
    if not words:
        raise ValueError("empty operation")
    kind, args = words[0].lower(), words[1:]
    if kind == "find":
        kind = "search"
    wanted = {"insert": 1, "delete": 1, "search": 1, "update": 2, "rank": 1, "at": 1}
    if kind not in wanted:
        known = ", ".join(wanted)
        raise ValueError(f"unknown operation {words[0]!r} (one of {known})")
    if len(args) != wanted[kind]:
        raise ValueError(f"{kind} takes {wanted[kind]} argument(s): {text!r}")
    if kind == "insert":
        arg, _, height = args[0].partition("@")
        name, _, score = arg.rpartition("=")
        op: dict[str, Any] = {"op": "insert", "score": _num(score)}
        if name:
            op["member"] = name
        if height:
            op["height"] = int(height)
        return op
    if kind == "update":
        return {"op": "update", "score": _num(args[0]), "new": _num(args[1])}
    if kind == "rank":
        return {"op": "rank", "member": args[0]}
    if kind == "at":
        return {"op": "at", "rank": int(args[0])}
    return {"op": kind, "score": _num(args[0])}


def _num(text: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        value = float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"{text!r} is not a finite number")
    return value


def _between(low: Any, high: Any) -> Any:
    """A score strictly between two scores: an integer when one fits."""
    if isinstance(low, int) and isinstance(high, int) and high - low >= 2:
        return (low + high) // 2
    return (low + high) / 2


def scenarios(ex: Explorer) -> list[dict[str, Any]]:
    """Run one of each operation on ``ex``, chosen from its entries as they
    stand before each (a board of fewer than 4 entries gets fewer).

    Order: a search, the entry at a rank, a member's rank, an insert (with
    a height that reaches the top level), a score change in place, a change
    that moves the node up (a finger search) and one that moves it down,
    the delete of the tallest node (it may empty its level), the delete of
    the node inserted.

    Runtime complexity: O(N * level) per operation
    """
    out: list[dict[str, Any]] = []

    def entries() -> list[tuple[Any, Any, Any]]:
        return list(ex.sl)

    n = len(entries())
    if n == 0:
        out.append(ex.run({"op": "insert", "score": 10, "height": 1}))
        return out
    e = entries()
    out.append(ex.run({"op": "search", "score": e[(2 * n) // 3][0]}))
    out.append(ex.run({"op": "at", "rank": max(1, (n + 1) // 2)}))
    out.append(ex.run({"op": "rank", "member": e[n // 3][2]}))
    if n < 4:
        return out
    if n >= MAX_SIZE:
        return out  # a full board takes no insert
    m = n // 2
    new_score = _between(e[m - 1][0], e[m][0])
    height = min(ex.max_level, max(2, ex.sl.level))
    inserted = f"s{ex._next_tie}"
    out.append(ex.run({"op": "insert", "score": new_score, "height": height}))
    e = entries()
    for k in range(len(e) - 1):
        if e[k][2] != inserted and e[k + 1][0] != e[k][0]:
            new = _between(e[k][0], e[k + 1][0])
            out.append(ex.run({"op": "update", "member": e[k][2], "new": new}))
            break
    e = entries()
    k = len(e) // 4
    up = _between(e[(3 * len(e)) // 4][0], e[(3 * len(e)) // 4 + 1][0])
    out.append(ex.run({"op": "update", "member": e[k][2], "new": up}))
    moved = e[k][2]
    e = entries()
    k = (3 * len(e)) // 4
    if e[k][2] == moved:
        k -= 1
    down = _between(e[1][0], e[2][0]) if k > 2 else e[0][0] - 1
    out.append(ex.run({"op": "update", "member": e[k][2], "new": down}))
    tallest = max(
        (entry for entry in ex.sl if entry[2] != inserted),
        key=lambda entry: _height_of(ex, entry),
    )
    out.append(ex.run({"op": "delete", "member": tallest[2]}))
    if any(m == inserted for _, _, m in ex.sl):
        out.append(ex.run({"op": "delete", "member": inserted}))
    return out


def _height_of(ex: Explorer, entry: tuple[Any, Any, Any]) -> int:
    shape = shape_of(ex.sl)
    return shape.heights[shape.entries.index(entry) + 1]


def _slim(record: dict[str, Any]) -> dict[str, Any]:
    """A record as a static page keeps it: no full narration text (the
    frames carry it line by line) and no copy of the board after (the
    record's ``after`` shape and histogram are that board)."""
    out = {k: v for k, v in record.items() if k != "board"}
    out["skiplist"] = {k: v for k, v in record["skiplist"].items() if k != "text"}
    return out


def board_data(ex: Explorer, ops: Sequence[dict[str, Any]], *, full: bool = True) -> dict[str, Any]:
    """One board of the page: its state now, the recorded ``ops`` (run
    first, in order), then :func:`scenarios` (all of them with ``full``,
    else a search, and an insert and a delete up to :data:`SMALL_BOARD`
    entries).  A full board (``MAX_SIZE``) gets no insert.

    Runtime complexity: O(operations * N * level)
    """
    start = ex.board()
    records = [ex.run(op) for op in ops]
    if full:
        records += scenarios(ex)
    else:
        e = list(ex.sl)
        if not e:
            records.append(ex.run({"op": "insert", "score": 10}))
        else:
            records.append(ex.run({"op": "search", "score": e[len(e) // 2][0]}))
            if len(e) <= SMALL_BOARD:
                middle = _between(e[0][0], e[-1][0]) + 0.5
                records.append(ex.run({"op": "insert", "score": middle}))
                tallest = max(ex.sl, key=lambda entry: _height_of(ex, entry))
                records.append(ex.run({"op": "delete", "member": tallest[2]}))
    return {"board": start, "ops": [_slim(r) for r in records], "recorded": len(ops)}


def static_data(ex: Explorer, ops: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """The data of a static page: ``ex`` with ``ops`` and the scenarios,
    then the same scores with heights drawn for each other ``p`` of
    :data:`OTHER_PS` and max level of :data:`OTHER_MAX_LEVELS` (a search
    each, an insert and a delete on small boards).

    Runtime complexity: O(boards * operations * N * level)
    """
    scores = [p for p, _, _ in ex.sl]
    members = [m for _, _, m in ex.sl] if ex.label == "member" else None
    boards = [board_data(ex, ops)]
    for max_level in sorted({ex.max_level, *OTHER_MAX_LEVELS}):
        for p in OTHER_PS:
            if (p, max_level) == (ex.p, ex.max_level):
                continue
            other = Explorer(scores, members=members, p=p, max_level=max_level, seed=ex.seed)
            boards.append(board_data(other, (), full=False))
    return {
        "live": False,
        "boards": boards,
        "choices": {
            "p": sorted({ex.p, *OTHER_PS}, reverse=True),
            "max_level": sorted({ex.max_level, *OTHER_MAX_LEVELS}),
        },
    }
