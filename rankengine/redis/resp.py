"""A board's commands in the Redis protocol (RESP), encoded by the board.

Every command a client sends is an array of bulk strings::

    *3\\r\\n$4\\r\\nHGET\\r\\n$16\\r\\nrankengine:{w}:h\\r\\n$4\\r\\nsann\\r\\n

redis-py builds this for every command it sends: each argument goes
through its encoder, then its packer (hiredis's, or a pure-Python one),
about 3 us for an increment's eleven-argument ``FCALL`` on the machine
the figures in ``docs/redis.md`` come from.  A board sends few kinds of
command, and most of each is the same every time: the command's name, the
function's name, the key count, the board's keys.  :class:`Packer` keeps
those parts encoded once (:meth:`Packer.constant`) and encodes only what
varies: an increment's ``FCALL`` is one ``bytes`` join, about 1 us.

Arguments are encoded as redis-py encodes them: ``bytes`` as they are,
``str`` in the client's encoding, ``int`` and ``float`` as their ``repr``.

Runtime complexity: O(size of the command).

>>> packer = Packer()
>>> packer.command(["HGET", "h", b"sann"])
b'*3\\r\\n$4\\r\\nHGET\\r\\n$1\\r\\nh\\r\\n$4\\r\\nsann\\r\\n'
>>> head = [array(4), packer.constant("ZADD"), packer.constant("z")]
>>> packer.command(["ZADD", "z", 1.5, b"x"]) == b"".join([*head, packer.args([1.5, b"x"])])
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

__all__ = ["Packer", "array"]

#: Constant parts kept encoded per packer (keys, names, modes: a board
#: uses a few dozen; past this the table starts again, as a bound only).
_CONSTANTS_KEPT: Final = 4096
#: Short str arguments kept encoded per packer by :meth:`Packer.args` (a
#: step's text, a kind letter: the same few in every increment of a
#: pipeline's run; past this the table starts again, as a bound only).
_TEXTS_KEPT: Final = 1024
#: The longest str argument kept: steps and kinds, not the modes and the
#: members that change from call to call.
_TEXT_KEPT_LENGTH: Final = 24


def array(count: int) -> bytes:
    """The header of a command of ``count`` arguments.

    Runtime complexity: O(1)

    >>> array(3)
    b'*3\\r\\n'
    """
    return b"*%d\r\n" % count


class Packer:
    """Encodes commands as redis-py would send them (see the module docstring)."""

    __slots__ = ("_constants", "_encoding", "_errors", "_texts")

    def __init__(self, encoding: str = "utf-8", errors: str = "strict") -> None:
        self._encoding = encoding
        self._errors = errors
        self._constants: dict[object, bytes] = {}
        self._texts: dict[str, bytes] = {}

    def arg(self, value: object) -> bytes:
        """One argument as a bulk string.

        Runtime complexity: O(length of the argument)
        """
        kind = type(value)
        if kind is bytes:
            data: bytes = value  # type: ignore[assignment]
        elif kind is str:
            data = value.encode(self._encoding, self._errors)  # type: ignore[attr-defined]
        elif kind is int or kind is float:
            data = repr(value).encode()
        elif isinstance(value, (bytearray, memoryview)):
            data = bytes(value)
        else:
            raise TypeError(f"a Redis command takes bytes, str, int or float, not {kind.__name__}")
        return b"$%d\r\n%s\r\n" % (len(data), data)

    def constant(self, value: object) -> bytes:
        """:meth:`arg` of a value sent again and again (a key, a command's
        name), encoded once.

        Runtime complexity: O(1) once encoded
        """
        # (by type too: 1 and 1.0 are one dict key, not one argument)
        key = (type(value), value)
        known = self._constants.get(key)
        if known is None:
            known = self.arg(value)
            if len(self._constants) >= _CONSTANTS_KEPT:
                self._constants.clear()
            self._constants[key] = known
        return known

    def args(self, values: Sequence[object]) -> bytes:
        """Arguments as bulk strings, one after the other (:meth:`arg`,
        inlined for the common types: one call per command, not per
        argument).

        Runtime complexity: O(size of the arguments)
        """
        parts: list[bytes] = []
        encoding, errors, texts = self._encoding, self._errors, self._texts
        for value in values:
            kind = type(value)
            if kind is bytes:
                data: bytes = value  # type: ignore[assignment]
            elif kind is str:
                # a short text met before (a step, a kind), as encoded then:
                # 0.3 us less client CPU per increment of a pipeline's run
                known = texts.get(value)  # type: ignore[call-overload]
                if known is not None:
                    parts.append(known)
                    continue
                data = value.encode(encoding, errors)  # type: ignore[attr-defined]
                if len(data) <= _TEXT_KEPT_LENGTH:
                    if len(texts) >= _TEXTS_KEPT:
                        texts.clear()
                    texts[value] = b"$%d\r\n%s\r\n" % (len(data), data)  # type: ignore[index]
            elif kind is int:
                data = b"%d" % value  # type: ignore[str-format]  # (an int: its repr)
            else:
                parts.append(self.arg(value))
                continue
            parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
        return b"".join(parts)

    def command(self, values: Sequence[object]) -> bytes:
        """A whole command: its array header, then its arguments.

        Runtime complexity: O(size of the command)
        """
        return array(len(values)) + self.args(values)
