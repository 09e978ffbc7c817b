"""Replay by folding: a ledger's log read in bulk, each exact board's events
folded into its members' final states, the boards loaded in bulk.

Invariant: after :func:`replay_log`, every view is exactly what giving it
the events one by one (``Ledger._replay``, the path ``add_view`` and
``rebuild_view`` still take) would have made it -- every member's score
(``int`` or ``float`` as the board holds it), tie clock, metadata, the
boards' logical clocks, the keyed boards and the order they were made in --
and every record was checked as that path checks it (the same errors, at
the same records).

Why a fold is exact
-------------------
An event is a request ("ann scored 30"), but on an exact board its effect
depends only on the member's own state: its score (absent or a number),
its metadata, and the board's logical clock, which ticks once per score
change (:mod:`rankengine.board.leaderboard`).  So the events can be
*played* against a small map -- member -> ``(score, clock)`` of its last
change, the members removed, the metadata set -- with the board's rules
(``when=``, an increment that keeps the score, a ``set`` of an equal
score, metadata only on a present member) and without touching the
ordered index; the map is then exactly the state the durable log's fold
(:class:`~rankengine.durable.fold.Fold`) keeps of ``PUT``/``DEL``/``META``
records, and its :meth:`~rankengine.durable.fold.Fold.finish` applies it:
into an empty board as sorted columns (the bulk load snapshots use), into
a board restored from a snapshot as one batch of changes::

    events     incr ann 5 | incr bob 5 | incr ann 0 | set ann 9 when=better | remove bob
    played     ann (5, clock 1) | bob (5, 2) | (no change) | ann (9, 3) | bob removed
    applied    ann 9 tie 3, board clock 3

Members do not depend on each other on one board, so no event is a
*barrier* there; an event the play cannot settle -- one that would raise
(a score out of range, members that do not compare), a member of another
type on a board that breaks ties by member -- first applies what was
folded so far, then goes to the board as the event-by-event path gives
it (which raises the same error, or writes it), and the fold starts again
on the board as it now is.  (A ledger logs no event that spans members:
each is about one.)

Which views fold
----------------
``board`` views with scalar scores, keyed or filtered (one fold per key's
board, the boards made in the order the events first reach them, as the
live path makes them), and ``periodic`` views, one fold per period board:
an event goes to the board of its period when the write would ask
nothing more of the periodic board than moving its time
(:func:`~rankengine.timed.state.held_period_board`, the test ``record``
uses: no period opens, closes or drops, the period is open and held);
any other event of a periodic view -- one that opens a period, closes or
drops one, a late one -- is a *barrier* for that view: its folds go to
their boards first, then the event goes through the view as before.
Every other view -- window, decayed, trending (a ``TopK``'s heap depends
on the order of its counts), Redis, composite scores -- takes the events
one by one in the same single pass over the decoded records, its clock
set before each event as the live path sets it.

Reading
-------
The frames come from the segments a chunk at a time
(:meth:`~rankengine.durable.eventlog.SegmentReader.batches`: checksums
checked, torn tails told from damage as ever), and each payload is
decoded with one ``msgpack.unpackb`` call; a record of the common shape
(events of plain members with numbers, route attributes of ``str`` and
``int``, no metadata) is checked field by field here, anything else goes
through :func:`~rankengine.durable.records.decode_record`, which checks it
as the event-by-event path does (or raises the same error).

Runtime complexity: O(1) amortised per event on a folded view, plus a
bulk load, O(M log M) for the M members an empty board ends with; the
other views' own costs per event.

>>> from rankengine.board.leaderboard import Leaderboard
>>> board = Leaderboard()
>>> fold = BoardFold(board)
>>> for member, delta in [("ann", 5), ("bob", 5), ("ann", 0)]:
...     fold.write(member, INCR, delta, None, None)
>>> fold.write("ann", SET, 9, "better", None)
>>> fold.write("bob", REMOVE, None, None, None)
>>> fold.finish()
>>> board.items(), board.clock
([('ann', 9)], 3)
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any, Final

import msgpack

from rankengine.board.checks import WHENS
from rankengine.board.core import MISSING
from rankengine.board.leaderboard import Leaderboard
from rankengine.board.scoring import check_meta, same_meta
from rankengine.durable.fold import Fold
from rankengine.durable.manifest import Manifest
from rankengine.durable.records import EVENT, CorruptionError, LogError, decode_record
from rankengine.ledger.adapters import Adapter, PeriodicAdapter
from rankengine.ledger.events import OPS, LedgerEvent
from rankengine.ledger.routes import NO_KEY
from rankengine.ledger.storage import LogTail, log_segments
from rankengine.ledger.views import View
from rankengine.timed.calendars import Period
from rankengine.timed.state import held_period_board

__all__ = ["INCR", "META_OP", "REMOVE", "SET", "BoardFold", "foldable", "replay_log"]

#: The logged op codes (the order of :data:`~rankengine.ledger.events.OPS`).
INCR: Final = OPS.index("incr")
SET: Final = OPS.index("set")
REMOVE: Final = OPS.index("remove")
META_OP: Final = OPS.index("meta")
#: Members a record may hold as they are (the decoder admits no other type).
_MEMBER_TYPES: Final = frozenset((str, bytes, int))
#: Route attribute values taken as they are (an int past 64 bits comes back
#: from ``unpackb`` as an ``ExtType``: the decoder's path widens it).
_ATTR_TYPES: Final = frozenset((str, int))
#: The longest the fast path waits (in records left to the general path)
#: before trying again after it took nothing: a log of other records then
#: decodes at most one record in this many twice (as the durable fold does).
_FAST_RETRY_MAX: Final = 64
#: The most members a board may hold for its fold to take them in and load
#: the board whole at the end (see _take_small): a board this small reloads
#: in well under a millisecond, while a batch merged into it costs a merge
#: of the batch's rows.
_TAKE_MAX: Final = 1024
#: Fields of a logged event: ``[EVENT, member, op, value, t_ms, attrs, when, meta]``.
_EVENT_FIELDS: Final = 8
#: The codes :func:`_fold_increments` tests by identity: CPython keeps one
#: object per small int (-5 to 256) and msgpack returns that object for a
#: decoded int, so ``kind is EVENT`` holds exactly when ``kind`` is the int
#: ``EVENT`` -- never for ``True``, ``3.0`` or a string -- in one test
#: instead of a compare and a type test.  Where an int were not that one
#: object, the test would only fail, sending the record to the general
#: path: never a wrong answer.  Measured with the tuples of
#: :func:`_fold_increments` (``unpackb(use_list=False)``), the fast loop
#: alone over 400,000 increments, old and new taking turns: 453 -> 420 ms
#: (min of 15), 504 -> 446 ms (median), on a shared 2-core machine.
_EVENT_CODE: Final = EVENT
_INCR_CODE: Final = INCR


class _Unsettled(Exception):
    """An event the fold cannot play (it would raise, or needs the board)."""


def foldable(adapter: Adapter) -> bool:
    """True when ``adapter``'s board takes its events through a
    :class:`BoardFold`: a plain exact board with scalar scores.

    Runtime complexity: O(1)

    >>> from rankengine.ledger.adapters import make_adapter
    >>> foldable(make_adapter("board", {}, lambda: 0.0)), foldable(make_adapter("topk", {}, float))
    (True, False)
    """
    return type(adapter) is Adapter and _plain_board(adapter.board)


def _plain_board(board: Any) -> bool:
    return type(board) is Leaderboard and board._scalar


def foldable_fast(adapter: Adapter) -> bool:
    """True when ``adapter`` is :func:`foldable` and its board breaks ties
    by time (its increments fold with no member type to check).

    Runtime complexity: O(1)
    """
    return foldable(adapter) and adapter.board._first


def _take_small(board: Leaderboard) -> tuple[dict[Any, Any], dict[Any, Any]] | None:
    """Empty a board of at most :data:`_TAKE_MAX` members and return them
    as a fold's state (member -> ``(score, clock)``, member -> metadata),
    so that the fold loads it whole at the end; None (nothing done) for an
    empty or a larger board.

    A periodic view's new period board holds the one member the event that
    made it wrote (that event went through the view: it opened the period)
    when its fold starts; merging the rest of the period into it at the
    end took a batch merge per period (measured: a sixth of a four-view
    replay's profile), loading it whole takes the bulk load an empty board
    takes.

    Runtime complexity: O(M) for its M members
    """
    if not 0 < len(board._primary) <= _TAKE_MAX:
        return None
    members, scores, clocks, metas = board._export_columns()
    if not board._first:
        clocks = [0] * len(members)  # (ties by member: no clocks kept)
    elif board._desc:
        clocks = [-tie for tie in clocks]  # (kept negated on a descending board)
    state = dict(zip(members, zip(scores, clocks, strict=True), strict=True))
    data = {members[row]: meta for row, meta in metas.items()}
    board._clear_all()  # (the clock stays: the fold goes on from it)
    return state, data


class BoardFold:
    """The events of one exact board (scalar scores) played against its
    members' final states, applied by :meth:`finish` (the board is not
    changed before it).  The state is a durable
    :class:`~rankengine.durable.fold.Fold`'s: ``puts`` (member ->
    ``(score, clock)`` of its last score change since its last removal:
    present), ``deleted`` (members of the board before the fold that a
    removal took out), ``metas`` (member -> its metadata set since its
    last removal), and the clock of the last change.

    Runtime complexity: O(1) per event
    """

    def __init__(self, board: Leaderboard) -> None:
        self.board = board
        #: the members' type, on a board that breaks ties by member (None:
        #: not fixed yet, or ties by time, where any plain members compare)
        self.member_type = board._member_type if board._primary and not board._first else None
        self.by_member = not board._first
        taken = _take_small(board)
        self.fold = Fold(board)
        self.puts = self.fold.puts
        self.deleted = self.fold.deleted
        self.metas = self.fold.metas
        if taken is not None:
            self.puts.update(taken[0])
            self.metas.update(taken[1])
        #: the board's members before the fold (member -> score)
        self.before = board._primary
        #: the board's clock, then the clock of the last change played
        self.clock = board._clock
        self.codec = board._codec
        #: True when an increment of a member absent from ``puts`` is one of
        #: a new member (the board was empty: nothing before to look up)
        self.fresh = not board._primary

    def score(self, member: Any) -> Any:
        """The member's score as the events so far leave it (MISSING: absent).

        Runtime complexity: O(1)
        """
        held = self.puts.get(member)
        if held is not None:
            return held[0]
        if member in self.deleted:
            return MISSING
        return self.before.get(member, MISSING)

    def _meta(self, member: Any) -> Any:
        if member in self.metas:
            return self.metas[member]
        if member in self.deleted or member not in self.before:
            return None
        return self.board._meta.get(member)

    def _put(self, member: Any, score: Any) -> None:
        self.clock += 1
        self.puts[member] = (score, self.clock)

    def write(self, member: Any, op: int, value: Any, when: Any, meta: Any) -> None:
        """Play one event (fields as logged, checked for shape) as the board
        would take it; raises ``_Unsettled`` (nothing played) when it
        cannot say what the board would do without the board.

        Runtime complexity: O(1) plus the size of the metadata
        """
        if self.by_member:
            held = self.member_type
            if held is None:
                self.member_type = type(member)
            elif type(member) is not held:
                raise _Unsettled  # the board says whether they compare
        if when is not None and when not in WHENS:
            raise _Unsettled  # the board names a bad when=
        if value is None and op in (INCR, SET):
            raise _Unsettled  # an increment or set of nothing: the board names it
        old = self.score(member)
        if op == INCR:
            if when == "present" and old is MISSING:
                return
            if when == "new" and old is not MISSING:
                return
            try:
                new = (0 if old is MISSING else old) + value
            except OverflowError:
                raise _Unsettled from None
            if new != new:
                raise _Unsettled  # NaN: the board raises
            held = None if old is MISSING else old
            if when is not None and self.codec.blocks(when, held, new):
                return
            if old is MISSING or new != old:
                self._put(member, new)
        elif op == SET:
            held = None if old is MISSING else old
            if when is not None and self.codec.blocks(when, held, value):
                return
            changed = old is MISSING or value != old
            if changed:
                self._put(member, value)
            if meta is not None:
                clean = check_meta(meta)
                if changed or not same_meta(self._meta(member), clean):
                    self.metas[member] = clean
        elif op == REMOVE:
            if old is not MISSING:
                self.puts.pop(member, None)
                self.metas.pop(member, None)
                if member in self.before:
                    self.deleted.add(member)
        elif old is not MISSING:  # (metadata: only on a present member)
            data = None if meta is None else check_meta(meta)
            if not same_meta(self._meta(member), data):
                self.metas[member] = data

    def incr(self, member: Any, value: Any) -> None:
        """:meth:`write` of an increment with no ``when=`` by a number
        (``value`` checked for shape), on a board that breaks ties by time
        and was empty when the fold began (:attr:`fresh`): a member absent
        from ``puts`` is then absent from the board, so nothing else is
        looked up.  The same rules, one call instead of three: the common
        event of a view that folds beside others (the four-view replay).

        Runtime complexity: O(1)
        """
        if self.by_member or not self.fresh:
            self.write(member, INCR, value, None, None)
            return
        held = self.puts.get(member)
        try:
            new = (0 if held is None else held[0]) + value
        except (OverflowError, TypeError):
            raise _Unsettled from None
        if new != new:
            raise _Unsettled  # NaN: the board raises
        if held is None or new != held[0]:
            self.clock += 1
            self.puts[member] = (new, self.clock)

    def finish(self) -> None:
        """Apply the folded state to the board (the durable fold's finish:
        a bulk load into an empty board, one batch of changes otherwise).

        Runtime complexity: O(M log M) for the M members folded
        """
        fold = self.fold
        fold.clock = self.clock
        fold.finish()


class _Sink:
    """One view's share of the replay: its folds (per board) or none."""

    def __init__(self, view: View) -> None:
        self.view = view
        #: the seq the view reflects before the replay: it takes every record after it
        self.after = view.seq
        #: id(board) -> fold, for the boards written since the last flush
        self.folds: dict[int, BoardFold] = {}
        template = view.template
        #: True for a periodic view: each event folds into its period's board
        self.periodic = type(template) is PeriodicAdapter
        if self.periodic:
            self.folding = _plain_board(template.new_board())
        else:
            self.folding = foldable(template) and all(map(foldable, view.adapters.values()))
        #: the fold of the one board of a view that takes every event, once made
        self.main: BoardFold | None = None
        #: True when :func:`replay_log`'s fast path may play its events into
        #: :attr:`main` (ties by time: no member type to check)
        self.hot = (
            self.folding and not self.periodic and view.takes_everything and foldable_fast(template)
        )
        #: ``(start, end, period)`` of the period last routed to (periodic)
        self.span: tuple[float, float, Period] | None = None

    def fold_of(self, board: Leaderboard) -> BoardFold:
        fold = self.folds.get(id(board))
        if fold is None:
            fold = self.folds[id(board)] = BoardFold(board)
            if self.view.takes_everything and not self.periodic:
                self.main = fold
        return fold

    def finish(self) -> None:
        """What was folded goes to the boards (at the end, and before an
        event the folds cannot take: its board, and the periodic board's
        periods, are then as the event-by-event path would leave them)."""
        folds, self.folds, self.main = self.folds, {}, None
        for fold in folds.values():
            fold.finish()

    def period_board(self, adapter: Adapter, t_ms: int, now: int) -> Leaderboard | None:
        """The period board a periodic view's event at ``t_ms`` goes to
        when the ledger's time is ``now``, if the write would ask nothing
        more of the periodic board than moving its time to ``now`` (see
        :func:`~rankengine.timed.state.held_period_board`: no period opens,
        closes or is made, the period is open); None otherwise.

        Runtime complexity: O(1) (a calendar look-up when the period changes)
        """
        periodic = adapter.board
        t = t_ms / 1000
        span = self.span
        if span is not None and span[0] <= t < span[1]:
            period = span[2]
        else:
            period = periodic.period_of(t)
            self.span = (period.start, period.end, period)
        if period.name in periodic._closed:
            return None  # a late event (and a closed period is not loaded for it)
        board = held_period_board(periodic, period, now / 1000)
        return board if type(board) is Leaderboard else None


def _event(change: Any) -> LedgerEvent:
    _, member, code, value, t_ms, attrs, when, meta = change
    return LedgerEvent(member, OPS[code], value, t_ms, attrs, when, meta)


def _apply(sink: _Sink, change: Any, seq: int, now: int) -> None:
    """``change`` given to the sink's view one by one, as ``Ledger._replay``
    gives it (the view's clock set first; an error named as it names it)."""
    view = sink.view
    view.time_ms = now
    try:
        view.apply(_event(change), False)
    except Exception as exc:
        raise LogError(
            f"event {seq} does not apply to view {view.name!r} ({exc}): "
            "was the ledger written by another version?"
        ) from exc


def _take(sink: _Sink, change: Any, seq: int, now: int) -> None:
    """One event to one view: folded where it can be, else one by one."""
    if not sink.folding:
        _apply(sink, change, seq, now)
        return
    view = sink.view
    if view.takes_everything:
        adapter: Adapter | None = view.adapters[NO_KEY]
    else:
        taken, key = view.route.target(change[5])
        if not taken:
            return
        adapter = view.adapters.get(key)
        if adapter is None:  # made now, as the live path makes it
            adapter = view._adapter(key, True)
    assert adapter is not None
    board = sink.period_board(adapter, change[4], now) if sink.periodic else adapter.board
    if board is not None:
        try:
            fold = sink.fold_of(board)
            if change[2] is _INCR_CODE and change[6] is None:  # (see _EVENT_CODE)
                fold.incr(change[1], change[3])
            else:
                fold.write(change[1], change[2], change[3], change[6], change[7])
            return
        except _Unsettled:
            pass
    # what was folded goes to the boards first, then the event as the
    # event-by-event path gives it (which makes, closes or drops periods
    # as it does, or raises its error), then new folds on the boards as
    # they are
    sink.finish()
    _apply(sink, change, seq, now)


def _plain_change(change: Any) -> bool:
    """True when a change fast-decoded by ``unpackb`` has the fields the
    decoder would return as they are (an event of a plain member, a number
    or no value, route attributes of str and int, no metadata)."""
    if type(change) is not list or len(change) != _EVENT_FIELDS:
        return False
    kind, member, op, value, t_ms, attrs, when, meta = change
    if kind != EVENT or type(kind) is not int or type(op) is not int or not 0 <= op <= META_OP:
        return False
    if type(member) not in _MEMBER_TYPES or type(t_ms) is not int or meta is not None:
        return False
    if value is not None:
        kind_of = type(value)
        if kind_of is not int and (kind_of is not float or value != value):
            return False
    if when is not None and type(when) is not str:
        return False
    if attrs is not None:
        if type(attrs) is not dict:
            return False
        for name, attr in attrs.items():
            if type(attr) not in _ATTR_TYPES or type(name) is not str:
                return False
    return True


def _fold_increments(
    frames: list[tuple[int, bytes]], start: int, fold: BoardFold, last: int, now: int
) -> tuple[int, int, int, int]:
    """The fast path of :func:`replay_log` for a ledger whose one view
    replaying is a plain board folding from empty (a one-view ledger):
    fold the records from ``frames[start]`` on that are one increment of
    a plain member by a number (no ``when=`` or metadata; the view takes
    every event, so the attributes are not read, only checked to be a map
    as the decoder checks them) and
    follow seq ``last``; stop at the first other record.  Returns the
    index of the first frame not taken, the last seq and record time
    taken, and the ledger's time (``now``) after them.

    The checks are the general path's, written out with the state in
    local variables (the fold's ``puts`` and clock): what
    :meth:`BoardFold.write` does for such an increment, each payload
    decoded by one ``unpackb`` (its default options are the log's, but for
    extension types: an int past 64 bits comes back as an ``ExtType``,
    which the type tests send to the general path).  Measured
    (``bench/replay.py --kind ledger``): see ``docs/ledger.md``.

    Runtime complexity: O(records taken)
    """
    unpackb = msgpack.unpackb
    member_types = _MEMBER_TYPES
    event, incr = _EVENT_CODE, _INCR_CODE
    puts = fold.puts
    get = puts.get
    clock = fold.clock
    fresh = fold.fresh
    first = last
    ms = -1
    try:
        for _, payload in itertools.islice(frames, start, None):
            # (arrays as tuples: cheaper to make and to unpack, measured
            # ~25 ns a record; the shape tests below ask for tuples)
            seq, time_ms, changes = unpackb(payload, use_list=False)
            (change,) = changes
            kind, member, op, value, t_ms, attrs, when, meta = change
            kind_of = type(value)
            if (
                seq != last + 1
                or type(seq) is not int
                or type(time_ms) is not int
                or time_ms < 0
                or type(change) is not tuple
                # (identity with the small-int objects: see _EVENT_CODE)
                or kind is not event
                or op is not incr
                or (type(member) is not str and type(member) not in member_types)
                or type(t_ms) is not int
                or (attrs is not None and type(attrs) is not dict)
                or when is not None
                or meta is not None
                or (kind_of is not int and (kind_of is not float or value != value))
            ):
                break
            held = get(member)
            if held is None:
                if not fresh:
                    break  # (a member of the board before: BoardFold.write looks it up)
                clock += 1
                puts[member] = (0 + value, clock)
            else:
                old = held[0]
                new = old + value  # (an OverflowError ends the fast path here)
                if new != old:
                    if new != new:
                        break  # NaN: the general path raises
                    clock += 1
                    puts[member] = (new, clock)
            if t_ms > now:  # noqa: PLR1730 - a compare, not a max() call, per record
                now = t_ms
            last, ms = seq, time_ms
    except Exception:  # msgpack raises several types: the general path reports it
        pass
    fold.clock = clock
    # (each record taken continues the sequence: the count is the seqs')
    return start + last - first, last, ms, now


def replay_log(
    directory: str,
    manifest: Manifest,
    after: int,
    tail: LogTail,
    *,
    views: Iterable[View],
    time_ms: int,
) -> int:
    """Give the records after seq ``after`` to the views that do not
    reflect them yet (those whose ``seq`` is before the record's), folding
    the exact boards' events (see the module docstring); fill ``tail`` as
    :func:`~rankengine.ledger.storage.read_events` does.  ``time_ms`` is
    the ledger's time before the records; returns it after them.  Each
    view that took an event has its clock (``time_ms``) at the last one.

    Runtime complexity: O(records) plus the views' costs (see above)
    """
    sinks = sorted((_Sink(view) for view in views), key=lambda s: s.after)
    waiting = list(reversed(sinks))  # next to start last
    active: list[_Sink] = []
    only: BoardFold | None = None  # the fold of the fast path, if it applies
    unpackb = msgpack.unpackb
    now = time_ms
    changed = 0  # the last record with an event
    ms = 0
    wait = backoff = 0  # records before the fast path tries again
    for reader in log_segments(directory, manifest, after, tail):
        path = reader.path
        last = reader.first_seq - 1
        for batch in reader.batches():
            i, count = 0, len(batch)
            while i < count:
                if only is not None and only.fresh and not wait:
                    j, last, taken_ms, now = _fold_increments(batch, i, only, last, now)
                    if taken_ms >= 0:
                        ms, changed = taken_ms, last
                    # (when it takes nothing it waits before trying again, twice
                    # as long each time: a run of other records is not decoded
                    # twice, one record in _FAST_RETRY_MAX at most)
                    backoff = 0 if j > i else min(2 * backoff or 1, _FAST_RETRY_MAX)
                    wait, i = backoff, j
                    if i == count:
                        break
                elif wait:
                    wait -= 1
                at, payload = batch[i]
                i += 1
                try:
                    seq, ms, changes = unpackb(payload)
                    plain = (
                        seq == last + 1
                        and type(seq) is int
                        and type(ms) is int
                        and ms >= 0
                        and type(changes) is list
                        and all(map(_plain_change, changes))
                    )
                except Exception:  # msgpack raises several types: the decoder reports it
                    plain = False
                if not plain:
                    try:
                        record = decode_record(payload)
                    except ValueError as exc:
                        raise CorruptionError(path, at, f"bad record: {exc}") from None
                    if record.seq != last + 1:
                        raise CorruptionError(
                            path, at, f"sequence jumps from {last} to {record.seq}"
                        )
                    seq, ms, changes = record
                last = seq
                if seq <= after:
                    continue
                if waiting and waiting[-1].after < seq:  # views that start here
                    while waiting and waiting[-1].after < seq:
                        active.append(waiting.pop())
                    only = None
                for change in changes:
                    if change[0] != EVENT:
                        raise CorruptionError(
                            directory, 0, f"record {seq} holds a board change, not an event"
                        )
                    changed = seq
                    t_ms = change[4]
                    if t_ms > now:  # noqa: PLR1730 - a compare, not a max() call, per event
                        now = t_ms
                    for sink in active:
                        _take(sink, change, seq, now)
                if not waiting and len(active) == 1 and active[0].hot:
                    only = active[0].main  # (None until its first event)
            tail.last_seq, tail.last_ms = last, ms
        reader.last_seq = last
    for sink in active:
        sink.finish()
        if sink.after < changed:  # (it took an event)
            sink.view.time_ms = now
        sink.view.seq = max(sink.view.seq, tail.last_seq)
    return now
