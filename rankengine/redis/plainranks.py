"""Ranks of a member by plain commands, no script: what a node's capacity
is spent on when a rank need not run Lua.

On this Redis (7.0) a function call costs the server about as much as a
``ZREVRANK`` before it does anything, and each ``redis.call`` inside it
about as much again: a rank read through a function costs 3-5 times the
native command whatever its Lua does.  The reads here send only plain
commands, in two round trips:

1. ``HGET`` of the member's row in the members hash: its score's double,
   its kind and its element prefix (absent: the member is not on the
   board, and that is the answer);
2. the count, by one command the member's element makes exact:

   * unique rank: ``ZREVRANK`` (``ZRANK`` ascending) of the element;
   * competition rank: ``ZCOUNT`` of the ranking over the doubles strictly
     better than the member's, and ``ZSCORE`` of its element after it;
   * dense rank: the same ``ZCOUNT`` over the distinct scores (once a dense
     read built them: the state's ``dense`` flag, read before the count).

Why the answer is exact, and as of one moment:

* An element holds a tie clock that no later change reuses, so it is in
  the ranking only while the member holds the score read in step 1.  A
  ``ZREVRANK`` that finds it ranks the member as of that command; a
  ``ZSCORE`` that finds it after the ``ZCOUNT`` shows the member held that
  score when the count ran.  An element gone (another client moved the
  member in between) answers nil: the read falls back to the board's
  function, one more round trip, as before.
* A count by doubles is a count by scores when the member's score is a
  double below 2**53 in magnitude: an int score the double cannot hold
  (past 2**53) has a double of 2**53 or more, so none shares the member's
  double, and every other double orders as its exact score does.  The
  member's own score past that bound, or with an ordkey, takes the
  function.

First-to-reach boards with a scalar score only (the default board): on a
``tie_break="member"`` board the element is the member itself (the unique
rank is already one ``ZREVRANK``), which a later write of the same score
brings back, so nothing shows that the count saw the score read.

>>> _exact_double(b"95.0"), _exact_double(b"9007199254740992.0"), _exact_double(b"inf")
(True, False, False)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from rankengine.board.core import RankStyle
from rankengine.redis.decode import ReplyDecoding

__all__ = ["FALLBACK", "PlainRanks", "element_of"]

#: What a plain rank returns when the function must answer instead.
FALLBACK: Final = object()
#: Doubles at or past this magnitude may be shared by an int score that
#: carries an ordkey (see the module docstring): such counts take the function.
_EXACT_BOUND: Final = 2.0**53
#: The first byte of an ordkey (0x80 + its length; see redis/codec.py).
_ORDKEY_BYTE: Final = 0x80
#: Replies of the second round trip of a plain rank, by style (see _plain_count).
_REPLIES_OF: Final = {"unique": 1, "competition": 2, "dense": 3}


def _exact_double(text: bytes) -> bool:
    """Whether a stored double is one no ordkey-carrying score shares
    (finite, below 2**53 in magnitude).

    Runtime complexity: O(1)
    """
    value = float(text)
    return -_EXACT_BOUND < value < _EXACT_BOUND


class PlainRanks(ReplyDecoding):
    """Unique, competition and dense ranks of a member by plain commands
    (see the module docstring)."""

    def _plain_ranks(self) -> bool:
        """Whether this board's ranks may take the plain path: a
        first-to-reach board with scalar, unpacked scores."""
        return self._first and self._codec.columns is None and self._format.packing is None

    def _plain_rank_of(self, key: bytes, style: RankStyle) -> Any:
        """The member's rank in ``style`` by plain commands (two round
        trips), None when absent, or :data:`FALLBACK` when the function
        must answer (the member moved in between, its score is beyond the
        doubles' exact range, or the dense counts are not built yet).

        Runtime complexity: O(log N), two round trips.
        """
        keys = self._keys
        direct = self._direct
        if style == "unique" and direct is not None:
            # both round trips on one connection taken from the pool once
            pack = direct.pack_read
            command = self._rank_command

            def then(row: bytes | None) -> bytes | None:
                return None if row is None else pack(command, keys[0], element_of(row, key))

            row, found = direct.read_then(pack("HGET", keys[1], key), then)
            if row is None:
                return None
            return self._counted(key, element_of(row, key), "unique", [found])
        row = self._read("HGET", keys[1], key)
        if row is None:
            return None
        if style == "unique":  # one command: sent alone, no pipeline object
            element = element_of(row, key)
            found = self._read(self._rank_command, keys[0], element)
            return self._counted(key, element, "unique", [found])
        pipe = self._client.pipeline(transaction=False)
        count = self._plain_count(pipe.execute_command, key, row, style)
        return FALLBACK if count is None else count(pipe.execute())

    def _plain_count(
        self, read: Callable[..., Any], key: bytes, row: bytes, style: RankStyle
    ) -> Callable[[list[Any]], Any] | None:
        """Queue with ``read(command, key, *args)`` the second round trip of
        a plain rank, given the member's row (the first's answer), and
        return what turns those replies into the rank (or
        :data:`FALLBACK`); None when the rank cannot be counted plainly (the
        function must answer).

        Runtime complexity: O(1) (the commands run O(log N) on the server).
        """
        element = element_of(row, key)
        keys = self._keys
        if style == "unique":
            read(self._rank_command, keys[0], element)
            return lambda replies: self._counted(key, element, style, replies)
        text = row.split(b":", 2)[1]
        if element[0] >= _ORDKEY_BYTE or not _exact_double(text):
            return None
        if style == "dense":
            read("HGET", keys[5], "dense")
        counted = keys[3] if style == "dense" else keys[0]
        if self._desc:
            read("ZCOUNT", counted, b"(" + text, "+inf")
        else:
            read("ZCOUNT", counted, "-inf", b"(" + text)
        read("ZSCORE", keys[0], element)
        return lambda replies: self._counted(key, element, style, replies)

    def _counted(self, key: bytes, element: bytes, style: RankStyle, replies: list[Any]) -> Any:
        """The rank from the second round trip's replies (see _plain_count),
        or :data:`FALLBACK` when they show the member moved (its element is
        gone) or the dense counts are not built."""
        if style == "unique":
            if replies[0] is None:
                return FALLBACK
            self._seen(key, element)
            return int(replies[0]) + 1
        if style == "dense" and replies[0] != b"1":
            return FALLBACK
        ahead, score = replies[-2:]
        if score is None:
            return FALLBACK
        self._seen(key, element)
        return int(ahead) + 1

    def _replies_of(self, style: RankStyle) -> int:
        """How many replies the second round trip of a plain rank has."""
        return _REPLIES_OF[style]


def element_of(row: bytes, key: bytes) -> bytes:
    """A member's element from its row of the members hash (kind, double,
    element prefix) and its key.

    Runtime complexity: O(length of the row)

    >>> element_of(b"i:95.0:0000000000000007i", b"sann")
    b'0000000000000007isann'
    """
    return row.split(b":", 2)[2] + key
