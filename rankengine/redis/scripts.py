"""The server side of :class:`~rankengine.redis.board.RedisLeaderboard`: its
Lua scripts, and the runner that calls them by SHA.

Every operation that reads and then writes runs as one Lua script, so it is
atomic on the server (Redis runs a script to the end before any other
command) and costs one round trip.  Reads that need more than one command (a
page with its tie-aware ranks, an entry with its rank) are scripts too, for
the same single round trip.  A script touches only the board's own keys, all
of which share one ``{hash tag}``, so every script is legal on Redis Cluster.

Key layout (``KEYS``, the same six for every script, and a seventh for
writes)::

    KEYS[1]  Z  sorted set  element -> double          the ranking itself
    KEYS[2]  H  hash        member -> kind ":" double ":" element prefix
    KEYS[3]  M  hash        member -> metadata (msgpack)
    KEYS[4]  D  sorted set  distinct score -> double   (dense ranks, built on
    KEYS[5]  C  hash        distinct score -> count     the first dense read)
    KEYS[6]  S  hash        config, clock, writes, inexact, dense (and
                            loading, between the chunks of one LOAD)
    KEYS[7]  R  string      the caller's last write: call number, reply
                            (writes of a client that may send them
                            again; one per handle, process and thread;
                            expires after 300 s)

An element of ``Z`` is ``ordkey + tie + member`` (see
:mod:`rankengine.redis.codec` for the encodings):

``ordkey``
    The exact remainder of the score that the double cannot hold, in bytes
    that sort like the remainder.  Empty for every score a double holds
    exactly (floats, and ints below 2**53: the common case costs nothing).
``tie``
    ``tie_break="first"``: 16 decimal digits of the tie clock, inverted
    (``MAXCLOCK - clock``) on a descending board, then the score's *kind*
    (``i`` int, ``f`` float, ``z`` -0.0; a letter per column), so a range
    read needs no other key; ``"member"``: nothing.
``member``
    The encoded member (a type tag byte, then its bytes).

Redis sorts by ``(double, element bytes)``, which is therefore exactly the
engine's order ``(score, tie)``.  Two members never share a clock, so the
kind and the member bytes decide only on ``tie_break="member"`` boards (no
kind there: it lives in ``H``).

A write reads the state hash once (``HMGET``) and writes it once at the
end: a ``set`` is seven or eight Redis calls inside the script (two of them
the caller's reply key, ``R``: see ``lib_core.lua``).  A read reads the
state only when it needs it (dense counts, ties of inexact scores): a
unique rank is two Redis calls, ``top`` on a first-to-reach board none (a
plain ``ZREVRANGE``, see :mod:`rankengine.redis.board`).

``ARGV[1]`` of every script is the board's mode: ``d``/``a`` (order of the
first column), ``f``/``m`` (tie-break), the number of columns whose ordkey
the element carries (``1`` for scalar and packed boards), the number of
kind letters, then, on a write, ``#`` and the call number (a call sent
again after a lost reply gets its first run's reply; ``!`` instead of
``#`` on a call's first sending, which keeps its reply and looks for
none; no call number, and no reply key, from a client that never sends a
call again: see :mod:`rankengine.redis.direct`), ``@`` and the SHA1
of the settings the handle opened the board with, as stored (a write
refuses a board stored again with others: Redis lost it and another
process created it), then, on a write to a board with an event log, ``:``
and the log's last sequence number (the write guard).  Scripts raise ``RANKENGINE_<CODE>
<detail>`` before any write (Redis does not roll back a script that fails
half-way).

The Lua source is package data in ``rankengine/redis/lua/``: a file per script
(``set.lua`` is ``SET``), its arguments and reply described at its top, and
the helper sections the scripts share (``lib_*.lua``).  A script is sent
with the sections it uses in front of it (defining a Lua function costs
about as much as a Redis call, so each script defines only what it needs).

>>> sorted(SCRIPTS)[:4]
['CLEAR', 'CLOCK', 'COMMIT', 'ENTRIES']
>>> "local function put" in SCRIPTS["SET"], "local function put" in SCRIPTS["RANGE"]
(True, False)
"""

from __future__ import annotations

import hashlib
from importlib.resources import files
from typing import Any, Final

from rankengine.redis.direct import DirectCalls
from rankengine.redis.resp import Packer, array

__all__ = [
    "EXACT",
    "LIBRARY",
    "LIBRARY_NAME",
    "SCRIPTS",
    "ScriptError",
    "ScriptRunner",
    "library_sections",
    "refusal_of",
]


def _source(name: str) -> str:
    """The text of ``rankengine/redis/lua/<name>.lua``."""
    return (files("rankengine.redis") / "lua" / f"{name}.lua").read_text(encoding="utf-8")


#: The helper sections (``lib_<section>.lua``), in the order a script gets
#: them; each uses only the ones before it.
_SECTIONS: Final[dict[str, str]] = {
    section: _source(f"lib_{section}")
    for section in (
        "core",
        "order",
        "dense",
        "clock",
        "tags",
        "lookup",
        "write",
        "read",
        "count",
        "sum",
    )
}


def library_sections() -> list[str]:
    """The helper sections' Lua, in the order the library defines them
    (``bench/redis_write_ab.py --parts`` builds functions of them that stop
    after each step of an increment).

    Runtime complexity: O(1)

    >>> library_sections()[0].startswith("-- Helper section 'core'")
    True
    """
    return list(_SECTIONS.values())


#: Sections each script needs besides the core (which every script gets).
_WRITER: Final = ("order", "dense", "clock", "tags", "lookup", "write")
_NEEDS: Final[dict[str, tuple[str, ...]]] = {
    "INIT": (),
    "SIZE": (),
    "CLOCK": (),
    "SET": _WRITER,
    "INCR": (*_WRITER, "sum"),
    "SET_MANY": _WRITER,
    "INCR_MANY": (*_WRITER, "sum"),
    "REMOVE": _WRITER,
    "COMMIT": _WRITER,
    "LOAD": _WRITER,
    "CLEAR": (),
    "SET_META": ("order", "tags"),
    "REMOVE_RANGE": ("order", "dense", "clock", "lookup", "write", "read", "count"),
    "RANGE": ("order", "dense", "clock", "lookup", "read", "count"),
    "ENTRIES": ("order", "dense", "clock", "lookup", "read", "count"),
    "PERCENTILE": ("order", "dense", "clock", "lookup", "count"),
    "RANK_FOR": ("order", "dense", "clock", "count"),
    "SHARD": ("order", "dense", "clock", "count"),
    "SCORE_AT": ("order", "read"),
    "RANK": (),
}


def _prelude(name: str) -> str:
    """The helper sections script ``name`` needs, in their order."""
    wanted = {"core", *_NEEDS[name]}
    return "".join(text for section, text in _SECTIONS.items() if section in wanted)


#: Every script by name, as sent to a server without functions (EVALSHA):
#: the helper sections it needs, the call's begin, then its body.  (The
#: script's KEYS and ARGV are taken before the core's own names hide them.)
SCRIPTS: Final[dict[str, str]] = {
    name: "local KEYS_IN, ARGV_IN = KEYS, ARGV\n"
    + _prelude(name)
    + "begin(KEYS_IN, ARGV_IN)\n"
    + _source(name.lower())
    for name in _NEEDS
}

#: Every helper section once, then every script as a function of the
#: library: its body behind the call's begin.
_LIBRARY_CODE: Final = "".join(_SECTIONS.values()) + "".join(
    f"redis.register_function('{{fn}}{name.lower()}', function(keys, argv)\n"
    f"begin(keys, argv)\n{_source(name.lower())}\nend)\n"
    for name in _NEEDS
)
#: The library's name carries the SHA1 of its code, so that two versions of
#: rankengine sharing a server each call their own functions.
LIBRARY_NAME: Final = (
    "rankengine_" + hashlib.sha1(_LIBRARY_CODE.encode(), usedforsecurity=False).hexdigest()[:12]
)
#: The function library, as ``FUNCTION LOAD`` takes it.
LIBRARY: Final = f"#!lua name={LIBRARY_NAME}\n" + _LIBRARY_CODE.replace("{fn}", LIBRARY_NAME + "_")


#: Encoded call heads a runner keeps (one per script and reply key: one
#: reply key per thread that writes; past this the table starts again,
#: as a bound only).
_HEADS_KEPT: Final = 1024

#: What the client makes of an INCR reply asking it to add exactly (the
#: server cannot: a score past 2**53); see RedisLeaderboard._exact_incr.
EXACT: Final = object()


class ScriptError(Exception):
    """A script refused its input: ``code`` is ``TYPE``, ``VALUE`` or ``RANGE``.

    >>> str(ScriptError("TYPE", "si"))
    'TYPE si'
    """

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(f"{code} {detail}")
        self.code = code
        self.detail = detail


class ScriptRunner:
    """Calls the scripts as functions of one library (``FCALL``), loading it
    (``FUNCTION LOAD``) when the server lacks it; on a server without
    functions (before Redis 7), as scripts by SHA1 (``EVALSHA``).

    A function library is compiled once, its helpers defined once: a call
    runs only its own body.  A script sent by ``EVALSHA`` defines the helpers
    it needs on every call (about 50 us of server time for a write, measured
    by ``bench/redis_cost.py``).

    A server that restarted without persistence, or a replica promoted by a
    failover before the library reached it, lacks the library (or its script
    cache is empty): the first call after it loads it again (``FUNCTION
    LOAD`` and ``SCRIPT LOAD`` go to every master on a cluster) and retries
    once.

    ``sha`` maps a script's name to what a call sends after the command: the
    function's name, or the script's SHA1 on a server without functions.

    Runtime complexity: O(1) besides the script's own work.

    >>> runner = ScriptRunner(client=None)
    >>> runner.command("SET")[0], runner.sha["SET"].endswith("_set")
    ('FCALL', True)
    """

    def __init__(self, client: Any) -> None:
        self.client = client
        #: True until the server answers FCALL with "unknown command".  A
        #: cluster client calls scripts: redis-py finds an EVALSHA's slot
        #: from its arguments, but asks a node (COMMAND GETKEYS, one more
        #: round trip) for every FCALL's.
        self.functions = not hasattr(client, "get_node_from_key")
        self.script_sha = {
            name: hashlib.sha1(source.encode(), usedforsecurity=False).hexdigest()
            for name, source in SCRIPTS.items()
        }
        self.function_name = {name: f"{LIBRARY_NAME}_{name.lower()}" for name in SCRIPTS}
        self.sha = self.function_name if self.functions else self.script_sha
        #: The encoded head of each function's (or script's) call: see packed().
        self._heads: dict[tuple[Any, ...], bytes] = {}

    def command(self, name: str) -> tuple[str, str]:
        """The command and its first argument that call script ``name``."""
        if self.functions:
            return "FCALL", self.function_name[name]
        return "EVALSHA", self.script_sha[name]

    def call_args(self, name: str, keys: list[str], args: list[Any]) -> list[Any]:
        """The whole command that calls script ``name`` with a board's keys
        (its six, then a write's reply key) and ``args``.  A function gets
        the ranking's key and the reply key only: it derives the others
        (see ``lib_core.lua``)."""
        if self.functions:
            keys = keys[:1] + keys[6:]
            return ["FCALL", self.function_name[name], len(keys), *keys, *args]
        return ["EVALSHA", self.script_sha[name], len(keys), *keys, *args]

    def packed(self, packer: Packer, name: str, keys: list[str], args: list[Any]) -> bytes:
        """:meth:`call_args`, encoded by ``packer`` (see
        :mod:`rankengine.redis.resp`): the command, the function's name (or
        script's SHA1), the key count and the keys are encoded once per
        packer, the arguments on each call.

        Runtime complexity: O(size of the command)
        """
        if self.functions:
            keys = keys[:1] + keys[6:]
        # (the command, the function, the key count and the keys: the
        # same for every call of one function on one board, encoded once)
        known = (name, self.functions, *keys)
        head = self._heads.get(known)
        if head is None:
            command = (
                ("FCALL", self.function_name[name])
                if self.functions
                else ("EVALSHA", self.script_sha[name])
            )
            head = b"".join(packer.arg(part) for part in (*command, len(keys), *keys))
            if len(self._heads) >= _HEADS_KEPT:
                self._heads.clear()
            self._heads[known] = head
        return b"".join((array(3 + len(keys) + len(args)), head, packer.args(args)))

    def _scripts_only(self) -> None:
        """The server has no functions: call the scripts by SHA1 from now on."""
        self.functions = False
        self.sha = self.script_sha

    def load(self) -> None:
        """Load the library (or every script, on a server without functions),
        in one pipelined round trip where the client allows."""
        from redis.exceptions import ResponseError  # noqa: PLC0415 -- optional: redis-py is the [redis] extra

        if self.functions:
            try:
                self.client.function_load(LIBRARY, replace=True)
                return
            except ResponseError as exc:
                if not _no_functions(exc):
                    raise
                self._scripts_only()
        try:
            pipe = self.client.pipeline(transaction=False)
            for source in SCRIPTS.values():
                pipe.script_load(source)
            pipe.execute()
        except Exception:  # e.g. a cluster pipeline: load them one by one
            for source in SCRIPTS.values():
                self.client.script_load(source)

    def missing(self, reply: object) -> bool:
        """Whether a reply (or error) says the server lacks the library or
        the script (it restarted, or never had it), or lacks functions."""
        from redis.exceptions import NoScriptError, ResponseError  # noqa: PLC0415 -- optional: redis-py is the [redis] extra

        if isinstance(reply, NoScriptError):
            return True
        if not isinstance(reply, ResponseError):
            return False
        if _no_functions(reply):
            self._scripts_only()
            return True
        return str(reply).startswith("Function not found")

    def __call__(self, name: str, keys: list[str], args: list[Any]) -> Any:
        # The call itself, with nothing in front of it (each call of a board
        # passes here); the errors are sorted out after (see _failed).
        try:
            return self.client.execute_command(*self.call_args(name, keys, args))
        except Exception as exc:
            return self._failed(name, keys, args, exc)

    def direct(
        self, calls: DirectCalls, name: str, keys: list[str], mode: str, args: tuple[Any, ...]
    ) -> Any:
        """Call script ``name`` as :meth:`__call__` does, through ``calls``
        (see :mod:`rankengine.redis.direct`): a write (``mode`` with ``#``
        and its call number) goes out marked as sent for the first time
        (``!``: its function keeps its reply but looks for no earlier run)
        and with ``#`` if the connection sends it again; on a connection
        that never sends a call again, with no call number and no reply
        key (nothing to keep).  ``LOAD`` always keeps its reply: its chunks
        are told apart by the call number.

        Runtime complexity: O(size of the command), one round trip.
        """

        packed = self.packed
        packer = calls.packer

        def command(resent: bool, resends: bool) -> bytes:
            if resent or mode[4:5] != "#":
                return packed(packer, name, keys, [mode, *args])
            if resends or name == "LOAD":
                return packed(packer, name, keys, [f"{mode[:4]}!{mode[5:]}", *args])
            rest = mode[5:]
            at = len(rest) - len(rest.lstrip("0123456789"))
            return packed(packer, name, keys[:6], [mode[:4] + rest[at:], *args])

        try:
            return calls.call(command)
        except Exception as exc:
            return self._failed(name, keys, [mode, *args], exc)

    def _failed(self, name: str, keys: list[str], args: list[Any], exc: Exception) -> Any:
        """After a call of script ``name`` raised ``exc``: load the library
        and call again if the server lacks it; raise a script's refusal as
        a :class:`ScriptError`; raise anything else as it is."""
        from redis.exceptions import ResponseError  # noqa: PLC0415 -- optional: redis-py is the [redis] extra

        if not isinstance(exc, ResponseError):
            raise exc
        try:
            if not self.missing(exc):
                raise exc
            self.load()
            return self.client.execute_command(*self.call_args(name, keys, args))
        except ResponseError as error:
            refusal = refusal_of(error)
            if refusal is not None:
                raise refusal from None
            raise

    def transaction(self, name: str, keys: list[str], calls: list[list[Any]]) -> list[Any]:
        """Run script ``name`` once per argument list of ``calls``, all in one
        MULTI/EXEC transaction: one round trip, and Redis runs the calls back
        to back, no other client's command in between.  On a missing library
        or script (which every call alike meets: none of them ran) it is
        loaded and the transaction is sent again.  Raises the first call's
        error.  A transaction is not rolled back: a call that fails does not
        undo the calls before it, so callers check everything first.

        Runtime complexity: O(1) round trips besides the scripts' own work.
        """
        for attempt in range(2):
            pipe = self.client.pipeline(transaction=True)
            for args in calls:
                # (a cluster pipeline refuses its evalsha method, but runs a
                # transaction of commands on one slot: the board's hash tag)
                pipe.execute_command(*self.call_args(name, keys, args))
            replies = list(pipe.execute(raise_on_error=False))
            if attempt == 0 and any(self.missing(reply) for reply in replies):
                self.load()
                continue
            break
        for reply in replies:
            if isinstance(reply, Exception):
                raise refusal_of(reply) or reply
        return replies


def _no_functions(exc: Exception) -> bool:
    """Whether an error says the server has no functions (before Redis 7).

    >>> _no_functions(Exception("unknown command 'FCALL', with args beginning with: "))
    True
    """
    message = str(exc).lower()
    return "unknown command" in message and ("fcall" in message or "function" in message)


def refusal_of(exc: Exception) -> ScriptError | None:
    """The :class:`ScriptError` of a script that refused its input
    (``RANKENGINE_<CODE> <detail>``), or None for any other error.

    Runtime complexity: O(length of the message)

    >>> refusal_of(Exception("RANKENGINE_VALUE NaN script: 1a2b, on @user_script:9."))
    ScriptError('VALUE NaN')
    >>> refusal_of(Exception("OOM command not allowed")) is None
    True
    """
    message = str(exc)
    if not message.startswith("RANKENGINE_"):
        return None
    head = message.split(" script:", maxsplit=1)[0]
    code, _, detail = head[len("RANKENGINE_") :].partition(" ")
    return ScriptError(code, detail)
