"""An increment's function call, packed once per board and sent on a pooled
connection: the common ``incr`` with as little client work as redis-py's
``zincrby``.

The general way a board calls a function (``RedisHandle._send``, then
:meth:`ScriptRunner.direct <rankengine.redis.scripts.ScriptRunner.direct>`)
builds the call's mode, its list of keys and of arguments, looks up the
encoded head of the command and encodes each argument by its type: about
3 us of client CPU per increment.  An increment of a scalar board on a
plain ``redis.Redis`` (see :mod:`rankengine.redis.direct`) always sends the
same shape::

    FCALL <library>_incr 1 <ranking key> <mode> <member> <step> <kind> <when> <clock floor>

(``2 <ranking key> <reply key>`` and a call number in the mode on a
connection that may send a call again).  :class:`IncrCall` keeps
everything before ``<member>`` encoded per settings SHA1 (the mode carries
it), and encodes the rest with one ``%`` of ``bytes``.  The call number,
the reply key and what a first sending and a resend send are those of the
general path (see :mod:`rankengine.redis.direct`): a resend carries ``#``
and the call number of its first sending, and its function looks for that
run's reply.

An error reply that says the function did not run (the server lost the
library) or refused before any write (the board's settings changed, a
refusal) gets None back: the caller sends the increment again by the
general path, which loads the library, reads the settings again or raises
the refusal, so nothing is applied twice.  Any other error reply is
raised, as the general path raises it.

Runtime complexity: O(size of the command), one round trip (one more per
attempt the connection's ``Retry`` makes after a dropped connection).

>>> from rankengine.redis.resp import Packer
>>> runner = ScriptRunner(client=None)
>>> call = IncrCall(Packer(), runner, "{w}:z", "df11")
>>> function = runner.function_name["INCR"]
>>> args = [b"sann", "1.0", "i", "", 0]
>>> packed = call.pack("abc", args, None, None, "")
>>> packed == Packer().command(["FCALL", function, 1, "{w}:z", "df11@abc", *args])
True
>>> packed = call.pack("abc", args, 7, "{w}:r", "#")
>>> packed == Packer().command(["FCALL", function, 2, "{w}:z", "{w}:r", "df11#7@abc", *args])
True
"""

from __future__ import annotations

from typing import Any, Final

from rankengine.redis.direct import DirectCalls
from rankengine.redis.resp import Packer
from rankengine.redis.scripts import ScriptRunner, refusal_of

__all__ = ["IncrCall"]

#: Encoded heads kept per call (one per settings SHA1 and reply key; past
#: this the table starts again, as a bound only).
_HEADS_KEPT: Final = 64

#: The arguments after the mode: the member, the step, its kind, ``when``
#: and the clock floor (the kind is one letter; the others vary).
_TAIL: Final = b"$%d\r\n%b\r\n$%d\r\n%b\r\n$1\r\n%b\r\n$%d\r\n%b\r\n$%d\r\n%b\r\n"


class IncrCall:
    """The ``INCR`` function's call of one board (see the module docstring):
    ``runner`` the board's script runner (the function's name, and whether
    an error says the server lacks it), ``ranking`` the board's ranking key
    (a function derives the others from it), ``mode`` the board's mode
    (order, ties, columns, kinds)."""

    __slots__ = ("_fcall", "_heads", "_mode", "_packer", "_ranking", "_runner")

    def __init__(self, packer: Packer, runner: ScriptRunner, ranking: str, mode: str) -> None:
        self._packer = packer
        self._runner = runner
        self._fcall = packer.constant("FCALL") + packer.constant(runner.function_name["INCR"])
        self._ranking = packer.constant(ranking)
        self._mode = mode
        #: (settings SHA1, reply key or None) -> the encoded head
        self._heads: dict[tuple[str, str | None], bytes] = {}

    def _head(self, sha: str, reply_key: str | None) -> bytes:
        """Everything before the arguments that vary: the command, the
        function, the keys and, with no reply key (no call number), the
        mode."""
        known = (sha, reply_key)
        head = self._heads.get(known)
        if head is None:
            packer = self._packer
            if reply_key is None:
                mode = f"{self._mode}@{sha}" if sha else self._mode
                keys = b"$1\r\n1\r\n" + self._ranking + packer.constant(mode)
                head = b"*10\r\n" + self._fcall + keys
            else:
                keys = b"$1\r\n2\r\n" + self._ranking + packer.constant(reply_key)
                head = b"*11\r\n" + self._fcall + keys
            if len(self._heads) >= _HEADS_KEPT:
                self._heads.clear()
            self._heads[known] = head
        return head

    def pack(
        self, sha: str, args: list[Any], number: int | None, reply_key: str | None, mark: str
    ) -> bytes:
        """The whole command, ``args`` the increment's (the member's key, the
        step's text, its kind, ``when``, the clock floor): with no call
        number (``number`` None) and no reply key for a connection that
        never sends a call again, else with the reply key and ``mark``
        (``!`` a first sending, ``#`` a resend) and ``number`` in the mode.

        Runtime complexity: O(size of the command)
        """
        key, step, kind, when, floor = args
        bstep, bwhen, bfloor = step.encode(), when.encode(), b"%d" % floor
        tail = _TAIL % (
            len(key),
            key,
            len(bstep),
            bstep,
            kind.encode(),
            len(bwhen),
            bwhen,
            len(bfloor),
            bfloor,
        )
        if number is None:
            return self._head(sha, None) + tail
        mode = f"{self._mode}{mark}{number}@{sha}" if sha else f"{self._mode}{mark}{number}"
        bmode = mode.encode()
        return self._head(sha, reply_key) + b"$%d\r\n%b\r\n" % (len(bmode), bmode) + tail

    def send(
        self, calls: DirectCalls, sha: str, args: list[Any], numbers: Any, reply_key: Any
    ) -> Any:
        """Send the increment (``args`` as for :meth:`pack`) on a connection
        of ``calls`` and return the function's raw reply, or None on an
        error reply (see the module docstring).  ``numbers`` gives the call
        number and ``reply_key()`` the reply key, taken only on a
        connection that may send the call again.

        Runtime complexity: O(size of the command), one round trip per attempt.
        """
        taken: list[Any] = []

        def command(resent: bool, resends: bool) -> bytes:
            if not resends:
                return self.pack(sha, args, None, None, "")
            if not taken:
                taken.extend((next(numbers), reply_key()))
            return self.pack(sha, args, taken[0], taken[1], "#" if resent else "!")

        try:
            return calls.call(command)
        except calls.error as exc:  # (redis-py's ResponseError: see above)
            if self._runner.missing(exc) or refusal_of(exc) is not None:
                return None
            raise
