"""Reads of the board contract that another board answers.

Boards made of boards answer every read of the contract with the same
words: pick a board, ask it.  A periodic board is one board per period (its
reads take ``period=``); a sliding window reads its window board after a
refresh that is due.  :func:`routed` writes such a read once, from the
contract's method, keeping its signature, docstring and errors.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Final, TypeVar

from rankengine.board.checks import check_flag

__all__ = ["routed"]

_R = TypeVar("_R")
#: The flags a routed read checks before it routes (a bad flag is a
#: ``TypeError`` whatever the route would have said), in this order.
_EARLY_FLAGS: Final = ("fill", "with_meta")
#: A routed read without a routing keyword (see :func:`routed`).
_NO_ROUTE: Final = object()


def routed(
    method: Callable[..., _R],
    *,
    keyword: str | None,
    route: str,
    about: str,
    annotation: str = "",
    finish: str | None = None,
) -> Callable[..., _R]:
    """A public read of the contract answered by another board: the board
    that ``route`` (the name of a method of the owner, called with the
    value of the keyword-only argument ``keyword`` typed ``annotation``, or
    with nothing when ``keyword`` is None) picks, under the owner's ``_lock``.

    Boards made of boards -- a periodic board is one board per period --
    answer every read of the contract with the same words: pick a board,
    ask it.  Written once here, each such read keeps

    * the contract's signature, plus ``keyword`` if any (shown by
      ``inspect.signature`` and ``help()``),
    * the contract's docstring (without its doctest, which runs on the
      contract) after one line ``about`` the route, and
    * the contract's errors: the arguments go to the picked board, which
      checks them; ``fill`` and ``with_meta`` are checked first, so that a
      bad flag is a ``TypeError`` whatever the route would have raised.

    ``method`` is the contract's method (``Leaderboard.top``): its name is
    the method called on the picked board, and its return type the read's.
    ``finish``, if given, names a method of the owner that the answer goes
    through, called with it and the value of ``keyword`` (a decayed board
    converts stored scores into values at that time).

    Runtime complexity: O(1) plus the route and the read

    >>> import threading
    >>> from rankengine import Leaderboard
    >>> class Two:
    ...     def __init__(self):
    ...         self._lock = threading.RLock()
    ...         self.boards = {"a": Leaderboard(), "b": Leaderboard()}
    ...     def pick(self, name):
    ...         return self.boards[name or "a"]
    ...     top = routed(Leaderboard.top, keyword="which", annotation="str | None",
    ...                  route="pick", about="Of one of two boards.")
    >>> two = Two()
    >>> two.boards["b"].set("ann", 3)
    True
    >>> two.top(1, which="b"), two.top(which="a")
    ([Entry(member='ann', score=3, rank=1, meta=None)], [])
    >>> inspect.signature(Two.top)
    <Signature (self, k: 'int' = 10, *, which: 'str | None' = None, style: \
'RankStyle | None' = None, with_meta: 'bool' = False) -> 'list[Entry]'>
    >>> two.top(with_meta=1, which="c")
    Traceback (most recent call last):
    ...
    TypeError: with_meta must be a bool, not int
    """
    name = method.__name__
    contract = inspect.signature(method)
    flags = [flag for flag in _EARLY_FLAGS if flag in contract.parameters]

    def read(self: Any, /, *args: Any, **kwargs: Any) -> Any:
        target = kwargs.pop(keyword, None) if keyword is not None else _NO_ROUTE
        for flag in flags:
            if flag in kwargs:
                check_flag(kwargs[flag], flag)
        with self._lock:  # the board picked and its read: one step
            pick = getattr(self, route)
            board = pick() if target is _NO_ROUTE else pick(target)
            answer = getattr(board, name)(*args, **kwargs)
            return answer if finish is None else getattr(self, finish)(answer, target)

    read.__name__ = read.__qualname__ = name
    doc = inspect.getdoc(method) or ""
    prose = doc.split("\n\n>>>")[0].split("\n>>>")[0].rstrip()
    read.__doc__ = f"{about}\n\n{prose}\n"
    if keyword is None:
        read.__signature__ = contract  # type: ignore[attr-defined]
        return read
    params = list(contract.parameters.values())
    where = next(
        (i for i, p in enumerate(params) if p.kind is inspect.Parameter.KEYWORD_ONLY),
        len(params),
    )
    params.insert(
        where,
        inspect.Parameter(
            keyword, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation
        ),
    )
    read.__signature__ = contract.replace(parameters=params)  # type: ignore[attr-defined]
    return read
