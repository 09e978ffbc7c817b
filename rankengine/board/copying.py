"""Copying and pickling boards: what each kind of board does.

An in-memory :class:`~rankengine.Leaderboard` is a container of immutable
scores and copied metadata, so ``board.copy()``, ``copy.copy(board)``,
``copy.deepcopy(board)`` and a pickle round trip all give an independent
board with the same settings, members, scores, metadata, tie order and
logical clock.  They move the state as whole columns (the export and bulk
restore that snapshots use), never by replaying writes, and leave out the
lock and the read caches.

Boards that own something a copy could not own -- a directory and its lock
(durable boards), keys on a Redis server, a clock function and callbacks
(periodic, sliding-window and decayed boards) -- inherit :class:`Uncopyable`:
``copy.copy``, ``copy.deepcopy`` and pickling raise a :class:`TypeError`
that says what to copy instead, never a bare ``cannot pickle
'_thread.RLock' object`` and never a copy that silently shares state.

>>> import pickle
>>> from rankengine import Leaderboard
>>> board = Leaderboard()
>>> board.set_many({"ann": 5, "bob": 5})
2
>>> pickle.loads(pickle.dumps(board)).items()
[('ann', 5), ('bob', 5)]
"""

from __future__ import annotations

from typing import Any, ClassVar, NoReturn

__all__ = ["Uncopyable"]


class Uncopyable:
    """Refuse ``copy.copy``, ``copy.deepcopy`` and pickling with advice.

    A subclass sets :attr:`_copy_advice` to what to do instead; the error
    reads ``"<Class> cannot be copied or pickled: <advice>"``.

    Runtime complexity: O(1)
    """

    #: What to do instead, for the error message.
    _copy_advice: ClassVar[str] = "it holds resources a copy cannot share"

    def _refuse_copy(self) -> NoReturn:
        raise TypeError(f"{type(self).__name__} cannot be copied or pickled: {self._copy_advice}")

    def __copy__(self) -> NoReturn:
        self._refuse_copy()

    def __deepcopy__(self, memo: dict[int, Any]) -> NoReturn:
        self._refuse_copy()

    def __reduce__(self) -> NoReturn:
        self._refuse_copy()
