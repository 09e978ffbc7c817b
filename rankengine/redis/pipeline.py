"""Many calls of one Redis board in one round trip: :meth:`RedisLeaderboard.pipeline`.

A round trip to Redis costs more than most board calls do on the server
(tens of microseconds on a local socket, a millisecond across a data
centre).  A pipeline queues calls and sends them together; each keeps its
guarantees:

* every argument is checked when the call is queued (bad input raises
  there, and nothing of the pipeline is sent);
* a write is numbered and keeps its reply for a resend, as alone: the k-th
  write of a round trip keeps it in a reply key of its own (the handle's,
  with ``.k``), so redis-py sending the whole pipeline again after a lost
  connection finds every write's first reply, and applies none twice;
* a write names the settings its handle opened the board with (the
  settings guard), and one refused (the board lost, or stored again) is
  run again alone, as the board does (the reads queued behind it in that
  round trip are read again, after it);
* a run of at least ``RUN_MIN`` plain increments in a row (a scalar
  board, no ``when=``, a finite step, no member twice, members of one type
  on a board that breaks ties by member) is one ``INCR_MANY`` call, one
  write with one call number and reply key (a resend applies none of it
  twice), that answers each increment as alone: its new score, the tie
  clock it would have taken, one write counted per change.  A member met
  twice ends the run (the call answers each member's last score only: its
  second increment starts the next run).  An increment of the run the
  server cannot add exactly is left to the client, the others applied,
  as an INCR's would be (below).  A run refused for the members' type is
  that refusal in each call's place, as each call alone would be; one
  refused for the settings, or for the tie clock past 2**53 - 1, runs
  again call by call, as a refused write does (below: for the clock, the
  writes queued behind it in that round trip have run before it);
* an increment of a composite or packed score, or of a step the server
  cannot add exactly (past 2**53), is added exactly by the client, alone,
  in its place in the queue: the calls before it are sent first, those
  after it next.  An increment of a score past 2**53 the server finds
  only when it runs: the client then adds it exactly right away, and the
  reads queued behind it in that round trip are read again (after it);
  the writes queued behind it have run before it (each exactly, and
  atomically, as calls of two clients may interleave);
* on a board with an event log the calls run one by one (the write guard
  counts the writes Redis has seen: it must see them one at a time);
* the ranks of members that end a round trip, on a first-to-reach board,
  take a second round trip of plain commands instead of a function each
  (see :mod:`rankengine.redis.plainranks`): the round trip reads their
  members' rows after the calls before them (one ``HMGET`` per
  ``ROWS_PER_READ`` of them), the second counts; a unique rank of a member
  whose element the handle has seen (and that no write of the round trip
  moves) is one ``ZREVRANK`` in the first, and read again only if the
  element is gone.  Nothing
  queued after them answers before they do, so the order of the calls
  holds.  A rank with a write queued behind it runs its function in the
  first round trip.

A pipeline is not a transaction: another client's command may run between
two of its calls, as between two calls sent alone (each call is atomic).

>>> import redis                                  # doctest: +SKIP
>>> board = RedisLeaderboard(redis.Redis(), "weekly")  # doctest: +SKIP
>>> with board.pipeline() as p:                   # doctest: +SKIP
...     p.incr("ann", 5)
...     p.rank("ann")
...     p.top(3)
>>> p.results                                     # doctest: +SKIP
[5, 1, [Entry(member='ann', score=5, rank=1, meta=None)]]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from rankengine.board.checks import check_count, check_flag, check_int, check_size
from rankengine.board.reads import DEFAULT_PAGE_SIZE
from rankengine.redis.plainranks import FALLBACK, element_of
from rankengine.redis.resp import array
from rankengine.redis.scripts import EXACT, refusal_of

if TYPE_CHECKING:
    from rankengine.board.core import RankStyle
    from rankengine.board.leaderboard import When
    from rankengine.board.scoring import Member, Score
    from rankengine.redis.board import RedisLeaderboard
    from rankengine.redis.direct import DirectCalls, Parse

__all__ = ["ROWS_PER_READ", "RUN_MIN", "RedisPipeline"]

#: The scripts a pipeline sends that write.
_WRITES = frozenset(("SET", "INCR", "INCR_MANY"))
#: Plain increments in a row sent as one INCR_MANY call (see _runs): from
#: three on.  Server time per increment in pipelines of 100 at 100,000
#: members (bench/redis_runs.py, smallest chunk of 6-8 rounds, two runs at
#: load 3.1-3.2): 17.1-17.7 us as INCR calls; as INCR_MANY calls of 1
#: increment 19.1-20.2, of 2 15.1-15.4, of 3 13.6-13.7, of 10 11.3-11.6, of
#: 100 10.1-10.4.  A pair saved a little (12-13%; 0-5% before the run
#: mode's fast path), and nothing since a run's Redis calls are batched:
#: server instructions per increment (bench/redis_run_instructions.py)
#: 121-124k as INCR calls, 128-130k as runs of 2, 104-105k of 3, on a
#: first-to-reach board (110k, 110k, 97k by member); one call saves the
#: client 6-11% of its CPU (docs/redis.md).  So a pair stays two calls,
#: each with its own call number and reply, as tests/test_redis_direct.py's
#: resend test pins them.
RUN_MIN: Final = 3
#: A step's text (repr of a float) that is not finite: such an increment
#: is sent alone (inf + -inf is refused as NaN, and a run is refused whole).
_NOT_FINITE = frozenset(("inf", "-inf", "nan"))
#: Members' rows per HMGET of the ranks that end a round trip (see _queue):
#: one command per chunk, each short on the server (about 1.5 us a row
#: measured at 100,000 members: 1.5 ms a chunk) however long the pipeline.
ROWS_PER_READ: Final = 1000
#: Refusals after which a write is run again alone (nothing of it ran):
#: the board stores its settings again, or reads them again, first.
_AGAIN = frozenset(("CONFIG", "SETTINGS"))


class _Call(NamedTuple):
    """One queued call: a script (``name``, ``args`` after the mode) or a
    plain read (``name`` None, ``args`` the function that queues it on a
    redis-py pipeline; none for a call that needs no server), what its reply
    becomes (``finish``), and the board call that does all of it alone
    (``alone``: on a logged board, after a refusal, on the exact path)."""

    name: str | None
    args: list[Any]
    finish: Callable[[Any], Any]
    alone: Callable[[], Any]
    #: A member's rank that plain commands may answer (its key and style):
    #: in the run of such ranks that ends a round trip, it is read in two
    #: (see _send), else by its function.
    plain: tuple[bytes, RankStyle] | None = None
    #: The increments an INCR_MANY call sends (see _runs), each answered
    #: by its own ``finish`` and ``alone``.
    parts: tuple[_Call, ...] = ()
    #: An increment's member (a run's answers are made from it: see
    #: _run_answers).
    member: Member | None = None


class RedisPipeline:
    """Board calls queued, then sent in one round trip (see the module).

    Use it as a context manager (the calls are sent when the block ends
    without an exception) or call :meth:`execute`; the answers are in
    :attr:`results`, in the order of the calls, each as the board's own
    method returns it.

    Runtime complexity: one round trip per :meth:`execute` (plus one per
    increment on the exact path, and per refused write), besides each
    call's own work on the server.
    """

    def __init__(self, board: RedisLeaderboard) -> None:
        self._board = board
        self._queued: list[_Call] = []
        #: The answers of the calls sent by the last :meth:`execute`.
        self.results: list[Any] = []

    def __enter__(self) -> RedisPipeline:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is None:
            self.execute()

    def __len__(self) -> int:
        """Calls queued and not sent yet."""
        return len(self._queued)

    # ------------------------------------------------------------------
    # Writes
    # ------------------------------------------------------------------
    def set(
        self,
        member: Member,
        score: Score,
        *,
        when: When | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> RedisPipeline:
        """Queue :meth:`RedisLeaderboard.set`; its answer: changed or not."""
        board = self._board
        args, done = board._set_call(member, score, when, meta)
        alone = lambda: board.set(member, score, when=when, meta=meta)  # noqa: E731
        self._queued.append(_Call("SET", args, done, alone))
        return self

    def incr(self, member: Member, delta: Score = 1, *, when: When | None = None) -> RedisPipeline:
        """Queue :meth:`RedisLeaderboard.incr`; its answer: the new score."""
        board = self._board
        key, step, args = board._incr_call(member, delta, when)
        # (partials of module functions, not closures: fewer objects for
        # the garbage collector per queued increment)
        finish = partial(_incr_finish, board, (member, key, step, when))
        alone = partial(_incr_alone, board, member, delta, when)
        name = None if args is None else "INCR"
        self._queued.append(_Call(name, args or [], finish, alone, None, (), member))
        return self

    # ------------------------------------------------------------------
    # Reads
    # ------------------------------------------------------------------
    def score(self, member: Member, default: Any = None) -> RedisPipeline:
        """Queue :meth:`RedisLeaderboard.score`."""
        self._entry(member, "-", False, lambda e: default if e is None else e.score)
        return self

    def rank(self, member: Member, *, style: RankStyle | None = None) -> RedisPipeline:
        """Queue :meth:`RedisLeaderboard.rank`."""
        board = self._board
        chosen = board._style(style)
        code = _code(chosen)
        key = board._key_or_none(member)
        plain = (key, chosen) if key is not None and board._plain_ranks() else None
        if code != "u" or key is None:
            self._entry(member, code, False, lambda e: None if e is None else e.rank, plain)
            return self
        finish = lambda reply: board._rank_of(key, reply)  # noqa: E731
        alone = lambda: board.rank(member, style="unique")  # noqa: E731
        self._queued.append(_Call("RANK", [key], finish, alone, plain))
        return self

    def entry(
        self, member: Member, *, style: RankStyle | None = None, with_meta: bool = False
    ) -> RedisPipeline:
        """Queue :meth:`RedisLeaderboard.entry`."""
        with_meta = check_flag(with_meta, "with_meta")
        self._entry(member, _code(self._board._style(style)), with_meta, lambda e: e)
        return self

    def top(
        self, k: int = 10, *, style: RankStyle | None = None, with_meta: bool = False
    ) -> RedisPipeline:
        """Queue :meth:`RedisLeaderboard.top`."""
        board = self._board
        with_meta = check_flag(with_meta, "with_meta")
        k = check_count(k, "k")
        chosen = board._style(style)
        alone = lambda: board.top(k, style=chosen, with_meta=with_meta)  # noqa: E731
        if board._plain_range and not with_meta:
            if k == 0:
                self._queued.append(_Call(None, [], lambda _: [], list))
                return self

            def read(pipe: Any) -> None:
                send = pipe.zrevrange if board._desc else pipe.zrange
                stop = min(k - 1, 2**62)  # (Redis takes 64-bit indexes)
                send(board._keys[0], 0, stop, withscores=True, score_cast_func=bytes)

            finish = lambda rows: board._plain_entries(0, rows, chosen)  # noqa: E731
            self._queued.append(_Call(None, [read], finish, alone))
            return self
        args = [_code(chosen), "1" if with_meta else "0", "win", 0, k]
        finish = lambda result: board._range_of(result, chosen, with_meta)  # noqa: E731
        self._queued.append(_Call("RANGE", args, finish, alone))
        return self

    def page(
        self,
        number: int,
        size: int = DEFAULT_PAGE_SIZE,
        *,
        style: RankStyle | None = None,
        with_meta: bool = False,
    ) -> RedisPipeline:
        """Queue :meth:`RedisLeaderboard.page`."""
        board = self._board
        with_meta = check_flag(with_meta, "with_meta")
        number = check_int(number, "page number")
        size = check_size(size)
        chosen = board._style(style)
        alone = lambda: board.page(number, size, style=chosen, with_meta=with_meta)  # noqa: E731
        args = [_code(chosen), "1" if with_meta else "0", "page", number, size]
        finish = lambda result: board._range_of(result, chosen, with_meta)  # noqa: E731
        self._queued.append(_Call("RANGE", args, finish, alone))
        return self

    def around(
        self,
        member: Member,
        above: int = 5,
        below: int = 5,
        *,
        fill: bool = False,
        style: RankStyle | None = None,
        with_meta: bool = False,
    ) -> RedisPipeline:
        """Queue :meth:`RedisLeaderboard.around`."""
        board = self._board
        with_meta = check_flag(with_meta, "with_meta")
        above = check_count(above, "above")
        below = check_count(below, "below")
        fill = check_flag(fill, "fill")
        chosen = board._style(style)
        key = board._key_or_none(member)
        alone = lambda: board.around(  # noqa: E731
            member, above, below, fill=fill, style=chosen, with_meta=with_meta
        )
        if key is None:
            self._queued.append(_Call(None, [], lambda _: [], list))
            return self
        flags = ("1" if with_meta else "0", "around", key, above, below, "1" if fill else "0")
        finish = lambda result: board._range_of(result, chosen, with_meta)  # noqa: E731
        self._queued.append(_Call("RANGE", [_code(chosen), *flags], finish, alone))
        return self

    def _entry(
        self,
        member: Member,
        code: str,
        with_meta: bool,
        answer: Callable[[Any], Any],
        plain: tuple[bytes, RankStyle] | None = None,
    ) -> None:
        """Queue an ENTRIES read of one member, answered by ``answer(entry)``."""
        board = self._board
        key = board._key_or_none(member)
        if key is None:
            self._queued.append(_Call(None, [], lambda _: answer(None), lambda: answer(None)))
            return

        def finish(result: Any) -> Any:
            return answer(board._decode_entries([member], [key], result, with_meta)[0])

        alone = lambda: answer(board._entries([member], code, with_meta)[0])  # noqa: E731
        args = [code, "1" if with_meta else "0", key]
        self._queued.append(_Call("ENTRIES", args, finish, alone, plain))

    # ------------------------------------------------------------------
    # Sending
    # ------------------------------------------------------------------
    def execute(self) -> list[Any]:
        """Send the queued calls and return their answers (also kept in
        :attr:`results`).  A call that fails does not stop the others (they
        ran on the server); the first failure is raised once every answer
        is in, and its place in :attr:`results` holds the exception.

        Runtime complexity: one round trip per stretch of calls between two
        exact increments, besides each call's work on the server.
        """
        queued, self._queued = self._queued, []
        board = self._board
        results: list[Any] = []
        if board._log is not None:  # the write guard must see the writes one by one
            self.results = [call.alone() for call in queued]
            return self.results
        start = 0
        while start < len(queued):
            end = start
            while end < len(queued) and (queued[end].name is not None or queued[end].args):
                end += 1
            results += self._send(queued[start:end])
            if end < len(queued):  # a call that runs alone: the exact path, no round trip
                results.append(_answer(queued[end].alone))
            start = end + 1
        self.results = results
        for result in results:
            if isinstance(result, Exception):
                raise result
        return results

    def _send(self, calls: list[_Call]) -> list[Any]:
        """One round trip for ``calls`` (scripts and plain commands)."""
        if not calls:
            return []
        board = self._board
        runner = board._scripts
        calls = _runs(board, calls)
        # The ranks that end the round trip, when plain commands may read
        # them: here their members' rows, in a second round trip the counts
        # (see rankengine.redis.plainranks).  Nothing queued after them
        # answers before they do.
        tail = len(calls)
        while tail and calls[tail - 1].plain is not None:
            tail -= 1
        # Of those, the unique ranks of members whose element this handle
        # has seen, and that no write of this round trip moves: one
        # ZREVRANK each, in this round trip, no row to read.
        written = {key for call in calls[:tail] for key in _written(call)}
        known: list[bytes | None] = []
        for call in calls[tail:]:
            key, style = call.plain  # type: ignore[misc]  # (a tail call's)
            fresh = style == "unique" and key not in written
            known.append(board._elements.get(key) if fresh else None)
        direct = board._direct
        for attempt in range(2):
            numbers = [next(board._calls) for call in calls[:tail] if call.name in _WRITES]
            if direct is None:
                pipe = board._client.pipeline(transaction=False)
                wired = _Piped(board, pipe)
                self._queue(wired, calls, tail, known, numbers, mark="#", record=True)
                replies = pipe.execute(raise_on_error=False)
            else:
                # (sent first with '!', again with '#': see rankengine.redis.direct)
                def build(
                    resent: bool, resends: bool, numbers: list[int] = numbers
                ) -> tuple[bytes, list[Parse]]:
                    wire = _Wire(board, direct)
                    mark = "#" if resent else "!"
                    self._queue(wire, calls, tail, known, numbers, mark=mark, record=resends)
                    return wire.packed()

                replies = direct.batch(board._client, build)
            failed = [reply for reply in replies if isinstance(reply, Exception)]
            if attempt == 0 and any(runner.missing(reply) for reply in failed):
                runner.load()  # (no script or function ran: every one of them failed alike)
                continue
            break
        seen = [call for call, element in zip(calls[tail:], known, strict=True) if element]
        unseen = [call for call, element in zip(calls[tail:], known, strict=True) if not element]
        counted = iter(replies[tail : tail + len(seen)])
        rows: list[Any] = []
        chunks = replies[tail + len(seen) :]
        for at, found in zip(range(0, len(unseen), ROWS_PER_READ), chunks, strict=True):
            # a chunk's rows (see _queue), or its error in each rank's place
            chunk = min(ROWS_PER_READ, len(unseen) - at)
            rows += [found] * chunk if isinstance(found, Exception) else found
        out, stale = self._answers(calls[:tail], replies[:tail])
        if stale:  # a write ran alone after the rows were read: the ranks are read again
            return out + [_answer(call.alone) for call in calls[tail:]]
        plain = iter(self._plain_ranks(unseen, rows))
        for call, element in zip(calls[tail:], known, strict=True):
            if not element:
                out.append(next(plain))
                continue
            key = call.plain[0]  # type: ignore[index]
            out.append(_unique_rank(board, key, element, next(counted), call.alone))
        return out

    def _queue(
        self,
        wire: _Wire | _Piped,
        calls: list[_Call],
        tail: int,
        known: list[bytes | None],
        numbers: list[int],
        *,
        mark: str,
        record: bool,
    ) -> None:
        """Queue on ``wire`` the round trip of ``calls`` (see _send): the
        writes numbered ``numbers`` after ``mark`` (``#``, or ``!`` on a
        first sending) with a reply key each, or, when no resend can come
        (not ``record``), with neither; then the ranks from ``tail`` on, by
        their elements ``known``, or their rows."""
        board = self._board
        writes = 0
        base_keys, base_mode, sha = board._keys, board._mode, board._stored_sha
        settings = f"@{sha}" if sha else ""
        for call in calls[:tail]:
            if call.name is None:  # a plain read: it queues itself
                wire.plain(call.args[0])
                continue
            keys, mode = base_keys, base_mode
            if call.name in _WRITES:
                # numbered, bound to the settings, a reply key each (see the module)
                if record:
                    reply_key = board._reply_key() + (f".{writes}" if writes else "")
                    keys = [*keys, reply_key]
                    mode += f"{mark}{numbers[writes]}"
                mode += settings
                writes += 1
            wire.script(call.name, keys, [mode, *call.args])
        # (after the calls before them: their writes are in) the ranks'
        # rows by HMGET, ROWS_PER_READ at a time: a command and a reply per
        # chunk, not per rank
        members = []
        for call, element in zip(calls[tail:], known, strict=True):
            if element:
                wire.rank(element)
            else:
                members.append(call.plain[0])  # type: ignore[index]
        for at in range(0, len(members), ROWS_PER_READ):
            wire.read("HMGET", base_keys[1], *members[at : at + ROWS_PER_READ])

    def _plain_ranks(self, calls: list[_Call], rows: list[Any]) -> list[Any]:
        """The second round trip of the ranks that ended a round trip, given
        their members' rows (see _send): counts by plain commands, or a
        member's function where they cannot answer."""
        board = self._board
        direct = board._direct
        wire: _Wire | _Piped
        if direct is None:
            pipe = board._client.pipeline(transaction=False)
            wire = _Piped(board, pipe)
        else:
            wire = _Wire(board, direct)
        counts: list[Any] = []
        for call, row in zip(calls, rows, strict=True):
            if row is None or isinstance(row, Exception):
                counts.append(row)  # absent (None), or the error in its place
                continue
            key, style = call.plain  # type: ignore[misc]
            if style == "unique":  # one ZREVRANK of its element, read below
                element = element_of(row, key)
                wire.rank(element)
                counts.append((key, element))
                continue
            count = board._plain_count(wire.read, key, row, style)
            counts.append(call.alone if count is None else (count, board._replies_of(style)))
        if not len(wire):
            replies: Any = iter(())
        elif direct is None:
            replies = iter(pipe.execute(raise_on_error=False))
        else:  # (reads only: sent again as they are)
            packed = wire.packed()  # type: ignore[union-attr]  # (a _Wire: direct is set)
            replies = iter(direct.batch(board._client, lambda resent, resends: packed))
        out: list[Any] = []
        for call, count in zip(calls, counts, strict=True):
            if count is None or isinstance(count, Exception):
                out.append(count)
            elif callable(count):
                out.append(_answer(count))
            elif type(count[0]) is bytes:  # a unique rank's ZREVRANK (see above)
                out.append(_unique_rank(board, count[0], count[1], next(replies), call.alone))
            else:
                decode, n = count
                mine = [next(replies) for _ in range(n)]
                error = next((r for r in mine if isinstance(r, Exception)), None)
                found = error if error is not None else _answer(partial(decode, mine))
                out.append(_answer(call.alone) if found is FALLBACK else found)
        return out

    def _answers(self, calls: list[_Call], replies: list[Any]) -> tuple[list[Any], bool]:
        """The answers of calls sent in one round trip, from their replies,
        and whether a write among them ran alone, after the calls behind it."""
        board = self._board
        out: list[Any] = []
        # a write ran alone (added exactly, or refused and sent again) after
        # the calls behind it ran: the reads among them are read again
        stale = False
        for call, reply in zip(calls, replies, strict=True):
            if stale and call.name not in _WRITES:
                out.append(_answer(call.alone))  # a read: again, after that increment
                continue
            if call.name == "INCR_MANY":  # a run of increments, an answer each
                answers, again = _run_answers(board, call, reply)
                out += answers
                stale = stale or again
                continue
            if call.name == "INCR" and not isinstance(reply, Exception) and int(reply[0]) == 3:
                stale = True
            if isinstance(reply, Exception):
                refusal = refusal_of(reply)
                if refusal is not None and refusal.code in _AGAIN:
                    out.append(_answer(call.alone))
                    stale = True
                else:
                    out.append(reply if refusal is None else board._error(refusal))
                continue
            out.append(_answer(lambda call=call, reply=reply: call.finish(reply)))  # type: ignore[misc]
        return out, stale


class _Wire:
    """A round trip packed by the board (see rankengine.redis.direct and
    rankengine.redis.resp): each command's bytes, and how its reply is read."""

    __slots__ = ("_board", "_direct", "_parsing", "_parts", "_pipe", "_rank_head")

    def __init__(self, board: RedisLeaderboard, direct: DirectCalls) -> None:
        self._board = board
        self._direct = direct
        self._parts: list[bytes] = []
        self._parsing: list[Parse] = []
        self._pipe: Any = None
        self._rank_head: bytes | None = None

    def __len__(self) -> int:
        return len(self._parts)

    def script(self, name: str, keys: list[str], args: list[Any]) -> None:
        """A function (or script) call; its raw reply."""
        self._parts.append(self._board._scripts.packed(self._direct.packer, name, keys, args))
        self._parsing.append(None)

    def read(self, command: str, key: str, *args: Any) -> None:
        """A plain read of a board's key; its raw reply."""
        self._parts.append(self._direct.pack_read(command, key, *args))
        self._parsing.append(None)

    def rank(self, element: bytes) -> None:
        """A unique rank by one ``ZREVRANK`` (``ZRANK`` ascending) of an
        element; its raw reply.  The command's head is encoded once per
        round trip, the element in one format: the hot path of a pipeline
        of ranks."""
        head = self._rank_head
        if head is None:
            board, packer = self._board, self._direct.packer
            head = array(3) + packer.constant(board._rank_command) + packer.constant(board._keys[0])
            self._rank_head = head
        self._parts.append(b"%s$%d\r\n%s\r\n" % (head, len(element), element))
        self._parsing.append(None)

    def plain(self, queue: Callable[[Any], None]) -> None:
        """A read that queues itself on a redis-py pipeline (its reply goes
        through the client's response callback, with its options)."""
        if self._pipe is None:
            self._pipe = self._board._client.pipeline(transaction=False)
        queue(self._pipe)
        args, options = self._pipe.command_stack.pop()
        self._parts.append(self._direct.packer.command(args))
        self._parsing.append((args[0], options))

    def packed(self) -> tuple[bytes, list[Parse]]:
        """The round trip's bytes, and how each reply is read."""
        return b"".join(self._parts), self._parsing


class _Piped:
    """The same three ways of queuing a command, on a redis-py pipeline
    (a client the board cannot send on itself: see rankengine.redis.direct)."""

    __slots__ = ("_board", "_pipe")

    def __init__(self, board: RedisLeaderboard, pipe: Any) -> None:
        self._board = board
        self._pipe = pipe

    def __len__(self) -> int:
        return len(self._pipe)

    def script(self, name: str, keys: list[str], args: list[Any]) -> None:
        self._pipe.execute_command(*self._board._scripts.call_args(name, keys, args))

    def read(self, command: str, key: str, *args: Any) -> None:
        self._pipe.execute_command(command, key, *args)

    def rank(self, element: bytes) -> None:
        board = self._board
        self._pipe.execute_command(board._rank_command, board._keys[0], element)

    def plain(self, queue: Callable[[Any], None]) -> None:
        queue(self._pipe)


def _runs(board: RedisLeaderboard, calls: list[_Call]) -> list[_Call]:
    """``calls`` with each run of at least ``RUN_MIN`` plain increments in a
    row (see :func:`_plain_incr`), of distinct members with one clock floor
    and one type tag, made one INCR_MANY call.  A run ends at a call that is
    not a plain increment, and at a member met again (the call answers each
    member's last score only), another floor or another type.

    Runtime complexity: O(len(calls))
    """
    out: list[_Call] = []
    run: list[_Call] = []
    members: set[bytes] = set()
    first = board._first

    def close() -> None:
        if len(run) >= RUN_MIN:
            # ARGV: the clock floor, the members' type tag (none on a
            # first-to-reach board), a write counted per change, then
            # (member, step, kind) each
            head = run[0].args
            args: list[Any] = [head[4], b"" if first else head[0][:1], "n"]
            for part in run:
                args += part.args[:3]
            out.append(_Call("INCR_MANY", args, _unused, _unused, parts=tuple(run)))
        else:
            out.extend(run)
        run.clear()
        members.clear()

    for call in calls:
        if not _plain_incr(call):
            close()
            out.append(call)
            continue
        key, head = call.args[0], run[0].args if run else call.args
        if key in members or call.args[4] != head[4] or (not first and key[:1] != head[0][:1]):
            close()  # a member met again, another clock floor, another type
        run.append(call)
        members.add(key)
    close()
    return out


def _incr_finish(
    board: RedisLeaderboard, call: tuple[Member, bytes, Score, When | None], reply: Any
) -> Any:
    """An increment's answer from its INCR reply (the exact path where the
    server left it to the client); ``call`` is its member, the member's
    key, the checked step and the condition."""
    member, key, step, when = call
    new = board._incr_done(member, key, reply)
    return board._exact_incr(member, key, step, when) if new is EXACT else new


def _incr_alone(board: RedisLeaderboard, member: Member, delta: Score, when: When | None) -> Any:
    """An increment made alone."""
    return board.incr(member, delta, when=when)


def _plain_incr(call: _Call) -> bool:
    """An INCR call that a run may take: no ``when`` and a finite step
    (args: member key, step text, kind, when, clock floor)."""
    return call.name == "INCR" and call.args[3] == "" and call.args[1] not in _NOT_FINITE


def _unused(*_: Any) -> Any:
    """(An INCR_MANY call is answered by its parts: see _run_answers.)"""
    raise AssertionError("a run of increments is answered by its parts")


def _written(call: _Call) -> list[bytes]:
    """The member keys a call sent in a round trip writes."""
    if call.name == "INCR_MANY":
        return call.args[3::3]
    return [call.args[0]] if call.name in _WRITES else []


def _run_answers(board: RedisLeaderboard, run: _Call, reply: Any) -> tuple[list[Any], bool]:
    """The answers of the increments of ``run``, an INCR_MANY call (see
    _runs), from its reply, and whether they ran alone, after the calls
    behind them in the round trip.

    Each increment's answer is its INCR call's, from the reply's row of its
    member: ``[1, stored, kind, clock]`` where it changed the score (its
    tie clock the batch's base plus its step among the changes, the clock
    it would have taken alone), ``[2, score, kind]`` where it left it, and
    ``[3]`` where the server left it to the client (a sum past 2**53, or a
    score with an ordkey): added exactly in its place, as an INCR's, the
    reads behind it in the round trip read again.  Nothing of a run that
    failed ran (INCR_MANY checks every sum before any write): refused for
    the members' type (each would be, alone), that refusal in each place;
    another refusal (the settings guard, the tie clock past 2**53 - 1),
    each call again alone, in order; any other error in each place, as
    each call would have met it.

    Runtime complexity: O(len(parts)), or the calls made alone
    """
    parts = run.parts
    if isinstance(reply, Exception):
        refusal = refusal_of(reply)
        if refusal is None:
            return [reply] * len(parts), False
        if refusal.code == "TYPE":
            return [board._error(refusal) for _ in parts], False
        return [_answer(part.alone) for part in parts], True
    # (each increment's INCR reply, decoded in one loop: see
    # RedisLeaderboard._run_done; the exact path by the part's own finish)
    members = [part.member for part in parts]
    out = board._run_done(members, run.args[3::3], reply)
    stale = False
    for at, answer in enumerate(out):
        if answer is EXACT:
            out[at] = _answer(partial(parts[at].finish, [3]))
            stale = True
    return out, stale


def _unique_rank(
    board: RedisLeaderboard, key: bytes, element: bytes, reply: Any, alone: Callable[[], Any]
) -> Any:
    """A unique rank from the reply of a ``ZREVRANK`` of the member's
    ``element``: the rank (the element noted as seen), the error in its
    place, or, when the element is gone (the member moved or left), the
    call made again alone (``alone``), the element forgotten.

    Runtime complexity: O(1), or the call made alone
    """
    if reply is None:
        board._elements.pop(key, None)
        return _answer(alone)
    if isinstance(reply, Exception):
        return reply
    board._seen(key, element)
    return int(reply) + 1


def _answer(compute: Callable[[], Any]) -> Any:
    """The answer of one call, or the exception it raised (kept in place)."""
    try:
        return compute()
    except Exception as exc:
        return exc


#: A rank style's letter in a script's arguments.
_CODES: Final = {"unique": "u", "competition": "c", "dense": "d"}


def _code(style: RankStyle) -> str:
    return _CODES[style]
