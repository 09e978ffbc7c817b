"""Reads and writes of the board contract that another board answers.

Boards made of boards answer every read of the contract with the same
words: pick a board, ask it.  A periodic board is one board per period (its
reads take ``period=``); a sliding window reads its window board after a
refresh that is due.  :func:`routed` writes such a read once, from the
contract's method, keeping its signature, docstring and errors.

Their writes go to the board a time picks (the period or bucket of ``t=``),
with bookkeeping that differs per write, so each kind writes the body; the
time is the documented extension point.  :func:`at_time` declares such a
write the contract's: it checks the signature against the contract's (plus
``t=``) when the class is built, and gives the write the contract's rules
in its docstring.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Final, TypeVar

from rankengine.board.checks import check_flag

__all__ = ["TIME_KEYWORD", "at_time", "routed"]

_R = TypeVar("_R")
_F = TypeVar("_F", bound=Callable[..., Any])
#: The keyword-only argument a write routed by time adds to the contract's:
#: the time of the write in POSIX seconds (None: the board's "now").
TIME_KEYWORD: Final = "t"
#: Where the contract's rules end in its docstring: its costs, return
#: value, parameters and doctest are its own (the writer keeps its own).
_RULES_END: Final = ("Runtime complexity", ":return:", ":param", ":raises", ">>>")
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
    before: str | None = None,
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
    converts stored scores into values at that time).  ``before``, if
    given, names a method of the owner called with nothing after the flags
    are checked and before the lock is taken (a sliding window's due
    refresh, which takes the lock in short steps of its own).

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
        if before is not None:
            getattr(self, before)()
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


def _shape(signature: inspect.Signature) -> list[tuple[str, Any, Any]]:
    """Name, kind and default of each parameter (annotations aside: each
    module spells its own)."""
    return [(p.name, p.kind, p.default) for p in signature.parameters.values()]


def _rules(method: Callable[..., Any]) -> str:
    """The contract's rules: its docstring up to its costs and doctest."""
    doc = inspect.getdoc(method) or ""
    kept: list[str] = []
    for line in doc.splitlines():
        if line.lstrip().startswith(_RULES_END):
            break
        kept.append(line)
    return "\n".join(kept).strip()


def at_time(
    method: Callable[..., Any], *, keyword: str | None = TIME_KEYWORD
) -> Callable[[_F], _F]:
    """Declare the decorated write the contract's ``method``, answered by
    the board that the time ``keyword`` (``t=``) picks: a periodic board's
    period, a sliding window's bucket.

    The time is the time boards' extension point of the contract, stated
    here once: the write's signature must be the contract's plus the
    keyword-only ``keyword`` (with ``keyword=None``, the contract's
    exactly), checked when the class is built, so a change to the contract
    that a time board misses fails at import, not in a caller's hands.  Its
    docstring becomes its own first paragraph (what the time picks), then
    the contract's rules (the contract's docstring up to its costs), then
    the rest of its own (costs, notes, doctests).  The body stays the
    kind's, since each kind's bookkeeping differs per write; the arguments
    are checked by the board the time picks (the contract's own checks).

    Runtime complexity: O(1) per call (the decorated write is unchanged)

    >>> from rankengine import Leaderboard
    >>> class Daily:
    ...     @at_time(Leaderboard.remove)
    ...     def remove(self, member, *, t=None):
    ...         "Remove ``member`` from the day of ``t``."
    ...         return False
    >>> print(Daily.remove.__doc__.splitlines()[2])
    Remove a member and its metadata.
    >>> class Wrong:
    ...     @at_time(Leaderboard.remove)
    ...     def remove(self, who, *, t=None):
    ...         return False
    Traceback (most recent call last):
    ...
    TypeError: remove takes (self, who, *, t), not the contract's (self, member) plus t
    """
    contract = inspect.signature(method)
    rules = _rules(method)

    def declare(write: _F) -> _F:
        got = inspect.signature(write)
        own = [p for p in got.parameters.values() if p.name != keyword]
        if _shape(got.replace(parameters=own)) != _shape(contract) or (
            keyword is not None and keyword not in got.parameters
        ):
            plus = "" if keyword is None else f" plus {keyword}"
            raise TypeError(
                f"{write.__name__} takes {_names(got)}, not the contract's {_names(contract)}{plus}"
            )
        doc = inspect.cleandoc(write.__doc__ or "")
        first, _, rest = doc.partition("\n\n")
        write.__doc__ = "\n\n".join(part for part in (first, rules, rest) if part) + "\n"
        write.__dict__["__contract__"] = method
        return write

    return declare


def _names(signature: inspect.Signature) -> str:
    """``(self, member, *, t)``: a signature's parameter names, as read."""
    out: list[str] = []
    star = False
    for p in signature.parameters.values():
        if p.kind is inspect.Parameter.KEYWORD_ONLY and not star:
            out.append("*")
            star = True
        out.append(p.name)
    return f"({', '.join(out)})"
