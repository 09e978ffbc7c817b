"""Counts and positions take any integer type, as list indexing does.

An integer that is not a Python ``int`` (a NumPy ``int64`` from an array of
page numbers, say) says so by defining ``__index__``; ``operator.index``
turns it into an ``int``.  Every read and write that takes a count or a
position (``top(k)``, ``page(number, size)``, ``around(above, below)``,
``at(rank)``, ``by_rank(start, stop)``, ``by_score(offset, limit)``,
``pop_best(count)``, ``remove_by_rank``, ``keep_top(n)``) answers such a
value exactly as it answers the ``int`` it stands for, on every board kind.
``bool`` stays refused (``top(True)`` is more likely a bug than a request
for one row), and so do floats and strings.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from rankengine import Leaderboard


class Index:
    """An integer type that is not an ``int``: only ``__index__``."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value

    def __repr__(self) -> str:
        return f"Index({self.value})"


SCORES = {f"p{i}": (i * 7) % 23 for i in range(30)}

#: (name, call taking an int maker) for every read taking a count or position.
READS: list[tuple[str, Callable[[Any, Callable[[int], Any]], Any]]] = [
    ("top", lambda b, i: b.top(i(3))),
    ("page", lambda b, i: b.page(i(2), i(4))),
    ("page-negative", lambda b, i: b.page(i(-1), i(4))),
    ("pages", lambda b, i: b.pages(i(7))),
    ("around", lambda b, i: b.around("p5", i(2), i(3))),
    ("around-fill", lambda b, i: b.around("p0", i(2), i(3), fill=True)),
    ("at", lambda b, i: b.at(i(4))),
    ("at-negative", lambda b, i: b.at(i(-2))),
    ("by-rank", lambda b, i: b.by_rank(i(3), i(-5))),
    ("by-score", lambda b, i: b.by_score(5, 20, offset=i(2), limit=i(3))),
]

#: Writes, each with what it returns.
WRITES: list[tuple[str, Callable[[Any, Callable[[int], Any]], Any]]] = [
    ("pop-best", lambda b, i: b.pop_best(i(2))),
    ("pop-worst", lambda b, i: b.pop_worst(i(3))),
    ("remove-by-rank", lambda b, i: b.remove_by_rank(i(2), i(-4))),
    ("keep-top", lambda b, i: b.keep_top(i(9))),
]


def _plain(value: int) -> int:
    return value


def _filled(make: Any) -> Any:
    board = make()
    board.set_many(SCORES)
    return board


@pytest.mark.parametrize(("name", "read"), READS, ids=[name for name, _ in READS])
def test_reads_take_an_index_type(make_or_sharded: Any, name: str, read: Any) -> None:
    board = _filled(make_or_sharded)
    assert read(board, Index) == read(board, _plain)
    board._check()


@pytest.mark.parametrize(("name", "write"), WRITES, ids=[name for name, _ in WRITES])
def test_writes_take_an_index_type(make_or_sharded: Any, name: str, write: Any) -> None:
    given, plain = _filled(make_or_sharded), _filled(make_or_sharded)
    assert write(given, Index) == write(plain, _plain)
    assert given.items() == plain.items()
    given._check()


@pytest.mark.parametrize("bad", [True, 2.0, "2"], ids=repr)
def test_bool_float_and_str_stay_refused(make_or_sharded: Any, bad: Any) -> None:
    board = _filled(make_or_sharded)
    before = board.items()
    for call in (lambda: board.top(bad), lambda: board.page(1, bad), lambda: board.pop_best(bad)):
        with pytest.raises(TypeError, match="must be an int"):
            call()
    assert board.items() == before


def test_the_value_is_read_once() -> None:
    """The count used is the one ``__index__`` gave, even if it would give
    another next time."""
    calls = iter(range(1, 100))

    class Moving:
        def __index__(self) -> int:
            return next(calls)

    board = Leaderboard()
    board.set_many(SCORES)
    assert len(board.top(Moving())) == 1  # type: ignore[arg-type]
