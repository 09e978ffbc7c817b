"""A board's calls sent on a pooled connection of its redis-py client: no
generic command layers in front of the socket, and the call knows whether
it is being sent for the first time.

redis-py's ``execute_command`` takes a connection from the pool, sends the
command, parses the reply through the command's callback, and, when the
connection drops before the reply, sends the command again through the
connection's ``Retry`` (``redis.Redis(host, port)`` retries by default).  A
board's function call needs all of that but the callback (a function's
reply has none), and one thing more: to know which sending this is.

* A write sent for the first time cannot have run before, so it is marked
  so (``!`` before its call number instead of ``#``): its function keeps
  its reply for a resend but does not look for an earlier run, one Redis
  call fewer per write.  Sent again (the connection dropped), it carries
  ``#`` and its function looks first, as every write did before.
* A connection whose ``Retry`` never sends a call again (``retries=0``:
  ``redis.Redis(..., retry=Retry(NoBackoff(), 0))``) gets writes with no
  call number and no reply key: no second sending can come, so there is
  no reply to keep (two Redis calls fewer per write).

What is kept of redis-py's path: the pool (``get_connection`` /
``release``), the connection's health check and reconnect, its
``send_packed_command`` and its reply parser (pure Python or hiredis),
and its ``Retry`` object (the same errors retried the same number of
times, with its backoff, the connection closed before each new attempt).
What is left out: redis-py's command packing (the board encodes its
commands itself, as redis-py would, with constant parts encoded once: see
:mod:`rankengine.redis.resp`), the command callbacks (none applies to
``FCALL``/``EVALSHA`` or the plain reads sent here), and redis-py's
per-command observability hooks (OpenTelemetry metrics of redis-py 7 and
later do not count a board's calls; the server's ``INFO commandstats``
does).  A unique rank's two plain reads (:meth:`DirectCalls.read_then`)
share one connection taken from the pool once.

Taking a connection from redis-py's pool and giving it back costs about
7.5 us of client CPU per call with redis-py 8 (as much as the rest of a
``zincrby``): most of it is the pool's observability hooks (four
connection counts recorded per call, the pool's name formatted twice),
which do nothing unless OpenTelemetry metrics are configured.  On a plain
``redis.ConnectionPool`` and while no metrics collector exists, a board
takes and gives back its connection as the pool's own methods do, under
the pool's lock, with the same checks (the process that owns the pool, the
connection connected, nothing left unread on it, a reconnect asked for on
release, the release event that re-authenticates), and leaves out the
hooks: about 3.5 us (:meth:`DirectCalls.take` and :meth:`DirectCalls.give`).
Any other pool, or a configured collector, gets ``get_connection`` and
``release`` as before.

Used only for a plain ``redis.Redis`` client (or a subclass that does not
change how commands are executed) with a connection pool; a cluster
client, a single-connection client, a client with client-side caching
(``cache_config``) and any other object take redis-py's
``execute_command`` as before.

Runtime complexity: O(size of the command) per call, one round trip
(one more per attempt the ``Retry`` makes after a dropped connection).

>>> may_resend(None), may_resend(_Retries(0)), may_resend(_Retries(3)), may_resend(_Retries(-1))
(True, False, True, True)
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Final

from rankengine.redis.resp import Packer, array

__all__ = ["LIGHT_POOL_MAJORS", "DirectCalls", "Parse", "direct_calls", "may_resend"]

#: How a batch reads one reply: None for the raw reply, or a redis-py
#: pipeline's ``(command name, options)`` for its response callbacks.
Parse = tuple[str, dict[str, Any]] | None

#: The redis-py version whose pools hand out a connection without a
#: command name (earlier ones need it; later ones warn when given one).
_NAMELESS_FROM: Final = (5, 3)


class _Retries:
    """A stand-in ``Retry`` for the doctest: only its number of retries."""

    def __init__(self, retries: int) -> None:
        self._retries = retries

    def get_retries(self) -> int:
        return self._retries


def may_resend(retry: Any) -> bool:
    """Whether a connection's ``Retry`` may send a call again after a
    dropped connection: every ``Retry`` but one of 0 retries (-1 is
    forever); unknown objects are taken to resend.

    Runtime complexity: O(1)
    """
    get_retries = getattr(retry, "get_retries", None)
    return get_retries is None or get_retries() != 0


LIGHT_POOL_MAJORS: Final = frozenset({"7", "8"})
"""redis-py major versions whose pool :meth:`DirectCalls.take` and
:meth:`DirectCalls.give` copy (read from redis-py 8.1's ``ConnectionPool``):
a later major may keep the attribute names and change what the pool does
with them, so it gets redis-py's own ``get_connection`` and ``release``
until its pool is read again and added here (a test fails meanwhile)."""


def _light_pool(pool: Any) -> Any:
    """The ``(recorder module, release event, connection errors, whether
    data left unread is refused)`` that :meth:`DirectCalls.take` and
    :meth:`DirectCalls.give` need when ``pool`` is a plain
    ``redis.ConnectionPool`` of the layout they know (redis-py 7 and 8),
    with no client-side cache; None for any other pool.

    Runtime complexity: O(1)
    """
    try:
        import redis as redis_py  # noqa: PLC0415 -- optional: redis-py is the [redis] extra
        from redis.event import AfterConnectionReleasedEvent  # noqa: PLC0415 -- the same
        from redis.observability import recorder  # noqa: PLC0415 -- the same (redis-py 7+)
    except ImportError:
        return None
    if type(pool) is not redis_py.ConnectionPool or getattr(pool, "cache", None) is not None:
        return None
    major = str(getattr(redis_py, "__version__", "0")).split(".")[0]
    if major not in LIGHT_POOL_MAJORS:
        return None
    known = (
        "_lock",
        "_available_connections",
        "_in_use_connections",
        "_checkpid",
        "_event_dispatcher",
        "make_connection",
        "pid",
    )
    if (
        not all(hasattr(pool, name) for name in known)
        or not hasattr(recorder, "_metrics_collector")
        or not hasattr(pool.connection_class, "should_reconnect")
    ):
        return None
    notified = getattr(pool, "maint_notifications_enabled", None)
    # (data left unread is refused, as redis-py refuses it, only where no
    # maintenance notification can be waiting there: they are off)
    unread_refused = notified is None or not notified()
    errors = (redis_py.ConnectionError, redis_py.TimeoutError, OSError)
    return recorder, AfterConnectionReleasedEvent, errors, unread_refused


class DirectCalls:
    """Calls on connections of one redis-py connection pool (see the
    module docstring), each command encoded by the board's own
    :class:`~rankengine.redis.resp.Packer` (``packer``) and written with
    the connection's ``send_packed_command``."""

    __slots__ = ("_error", "_get", "_light", "_pool", "packer")

    def __init__(
        self, pool: Any, error: type[Exception], packer: Packer, takes_name: bool = False
    ) -> None:
        self._pool = pool
        #: redis-py's ResponseError: an error reply, kept in its place by batch()
        self._error = error
        #: Encodes commands in the client's encoding (see rankengine.redis.resp).
        self.packer = packer
        # redis-py before 5.3 needs a command name to hand out a connection,
        # and warns about one from 5.3 on
        get = pool.get_connection
        self._get: Callable[[], Any] = (lambda: get("FCALL")) if takes_name else get
        self._light = _light_pool(pool)

    @property
    def error(self) -> type[Exception]:
        """redis-py's ``ResponseError``: what an error reply raises."""
        return self._error

    def take(self) -> tuple[Any, Any]:
        """A connection of the pool, and how :meth:`give` gives it back:
        taken without the pool's observability hooks (the
        :func:`_light_pool` tuple) when the pool allows it and no metrics
        collector exists now, else by ``get_connection`` (None).  The
        steps are redis-py's ``get_connection``'s: a child process resets
        the pool it inherited, the connection is connected, and one with
        data left unread is connected again (and refused if it still has
        some).

        Runtime complexity: O(1)
        """
        light = self._light
        if light is None or light[0]._metrics_collector is not None:
            return self._get(), None
        pool = self._pool
        if pool.pid != os.getpid():
            pool._checkpid()  # (a forked child: the pool is made new, as redis-py does)
        with pool._lock:
            available = pool._available_connections
            # (a new connection counts itself idle, as it is again once given back)
            conn = available.pop() if available else pool.make_connection()
            pool._in_use_connections.add(conn)
        try:
            conn.connect()
            errors, refused = light[2], light[3]
            try:
                if conn.can_read() and refused:
                    raise errors[0]("Connection has data")
            except errors:
                conn.disconnect()
                conn.connect()
                if conn.can_read() and refused:
                    raise errors[0]("Connection not ready") from None
        except BaseException:
            self.give(conn, light)
            raise
        return conn, light

    def give(self, conn: Any, light: Any) -> None:
        """Give back ``conn``, taken by :meth:`take` (``light`` as it
        returned it), as the pool's ``release`` does (without its hooks
        when taken without them).

        Runtime complexity: O(1)
        """
        pool = self._pool
        if light is None:
            pool.release(conn)
            return
        with pool._lock:
            try:
                pool._in_use_connections.remove(conn)
            except KeyError:  # (the pool was reset meanwhile: not the pool's any more)
                return
            if conn.pid == pool.pid:
                if conn.should_reconnect():
                    conn.disconnect()
                pool._available_connections.append(conn)
                pool._event_dispatcher.dispatch(light[1](conn))
                return
            pool._in_use_connections.add(conn)  # (not the pool's: its release drops it)
        pool.release(conn)

    def call(self, command: Callable[[bool, bool], bytes]) -> Any:
        """Send the command ``command(resent, resends)`` packs and return its
        raw reply.

        ``resent`` is False for the first attempt and True for every one
        the connection's ``Retry`` makes after it; ``resends`` says whether
        that ``Retry`` makes any (see :func:`may_resend`).  An error reply
        raises redis-py's ``ResponseError`` (not retried, as in redis-py);
        a dropped connection is retried as redis-py retries it.

        Runtime complexity: O(size of the command), one round trip per attempt.
        """
        conn, light = self.take()
        try:
            retry = conn.retry
            resends = may_resend(retry)
            attempts = 0

            def attempt() -> Any:
                nonlocal attempts
                packed = command(attempts > 0, resends)
                attempts += 1
                conn.send_packed_command([packed])
                return conn.read_response()

            return retry.call_with_retry(attempt, lambda error: conn.disconnect())
        finally:
            self.give(conn, light)

    def batch(
        self, client: Any, build: Callable[[bool, bool], tuple[bytes, list[Parse]]]
    ) -> list[Any]:
        """Send the commands ``build(resent, resends)`` packs (and how each
        reply is read: None for the raw reply, or a redis-py pipeline's
        ``(command name, options)`` for the reply parsed as ``client``
        parses it, its response callbacks), in one round trip, and return
        their replies, an error reply as the exception in its place (as
        ``execute(raise_on_error=False)``).  ``resent`` and ``resends`` are
        as for :meth:`call`: a dropped connection sends the whole batch
        again, built again with ``resent`` True.

        Runtime complexity: O(size of the commands), one round trip per attempt.
        """
        conn, light = self.take()
        try:
            retry = conn.retry
            resends = may_resend(retry)
            attempts = 0
            error = self._error

            def attempt() -> list[Any]:
                nonlocal attempts
                packed, parsing = build(attempts > 0, resends)
                attempts += 1
                conn.send_packed_command([packed])
                replies: list[Any] = []
                read = conn.read_response
                for parse in parsing:
                    try:
                        if parse is None:
                            replies.append(read())
                        else:
                            replies.append(client.parse_response(conn, parse[0], **parse[1]))
                    except error as exc:
                        replies.append(exc)
                return replies

            out: list[Any] = retry.call_with_retry(attempt, lambda error: conn.disconnect())
            return out
        finally:
            self.give(conn, light)

    def read(self, command: str, key: str, *args: Any) -> Any:
        """Send one plain read command of a board's ``key`` and return its
        raw reply (sent again after a dropped connection as the
        connection's ``Retry`` allows: a read sent twice answers twice).

        Runtime complexity: O(size of the command), one round trip per attempt.
        """
        packed = self.pack_read(command, key, *args)
        return self.call(lambda resent, resends: packed)

    def pack_read(self, command: str, key: str, *args: Any) -> bytes:
        """A read command of a board's ``key``, packed: the command's name
        and the key encoded once (see :meth:`Packer.constant`).

        Runtime complexity: O(size of the command)
        """
        packer = self.packer
        return b"".join(
            [
                array(2 + len(args)),
                packer.constant(command),
                packer.constant(key),
                packer.args(args),
            ]
        )

    def read_then(self, first: bytes, then: Callable[[Any], bytes | None]) -> tuple[Any, Any]:
        """Two plain reads on one connection, the second packed from the
        first's reply: send ``first``, then ``then(reply)`` (None: no second
        read), and return both raw replies (the second None when not sent).
        One connection taken from the pool for both round trips; a dropped
        connection sends both again, as the ``Retry`` allows.

        Runtime complexity: O(size of the commands), two round trips per attempt.
        """
        conn, light = self.take()
        try:

            def attempt() -> tuple[Any, Any]:
                conn.send_packed_command([first])
                reply = conn.read_response()
                second = then(reply)
                if second is None:
                    return reply, None
                conn.send_packed_command([second])
                return reply, conn.read_response()

            out: tuple[Any, Any] = conn.retry.call_with_retry(
                attempt, lambda error: conn.disconnect()
            )
            return out
        finally:
            self.give(conn, light)


def direct_calls(client: Any) -> DirectCalls | None:
    """A :class:`DirectCalls` on ``client``'s connection pool, or None when
    the client must be called through ``execute_command`` (not a plain
    ``redis.Redis``, or one that holds a single connection).

    Runtime complexity: O(1)
    """
    try:
        import redis as redis_py  # noqa: PLC0415 -- optional: redis-py is the [redis] extra
    except ImportError:  # pragma: no cover - a client without redis-py installed
        return None
    base = redis_py.Redis
    kind = type(client)
    if (
        not isinstance(client, base)
        or kind.execute_command is not base.execute_command
        or getattr(kind, "_execute_command", None) is not getattr(base, "_execute_command", None)
        or getattr(client, "connection", None) is not None
    ):
        return None
    pool = getattr(client, "connection_pool", None)
    if pool is None or not hasattr(pool, "get_connection") or not hasattr(pool, "release"):
        return None
    if getattr(pool, "cache", None) is not None:  # client-side caching: redis-py's to run
        return None
    version = tuple(int(part) for part in redis_py.__version__.split(".")[:2] if part.isdigit())
    kwargs = getattr(pool, "connection_kwargs", {})
    packer = Packer(kwargs.get("encoding", "utf-8"), kwargs.get("encoding_errors", "strict"))
    return DirectCalls(
        pool, redis_py.exceptions.ResponseError, packer, takes_name=version < _NAMELESS_FROM
    )
