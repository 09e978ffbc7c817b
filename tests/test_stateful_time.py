"""Random operation sequences on the time boards, checked against a model.

A Hypothesis state machine drives a :class:`PeriodicLeaderboard` (in memory,
or durable through ``PeriodicLeaderboard.open`` with close and reopen) on an
hourly calendar with a fake clock, next to :class:`PeriodicModel`, a model
written from ``docs/time.md``: a ``tests/model.py`` board per period held,
which of them are closed, the late policy, ``grace`` and ``keep``.

* **Writes**: every write of the periodic board, without ``t=`` or with a
  ``t`` in the current period, in a past one (open in its grace, or closed:
  late) or in the next one (refused), each run on the model and on the
  board with the same result or the same error.
* **Time**: the clock moves by small steps, onto the edges where periods
  close (``end + grace``), jumps over many periods, and goes back (the
  board's "now" must not); ``tick()`` returns the periods it closed.
* **Reads** of the current period, of past ones still held or within
  ``keep`` (empty when nobody wrote), and of ones that are gone or not
  begun (``KeyError``); ``is_open``.
* **After every step** the board passes ``_check()`` and matches the model:
  the periods held, every held period's items (with score types) and
  metadata, the close callbacks run (once each, in order, with the final
  standings), ``late_dropped``, and the archived periods and their files.

A second machine drives a :class:`DecayedLeaderboard` (in memory, or durable
with close and reopen) next to :class:`DecayModel`, the direct formula
``sum points * e^(-(at - t) / tau)`` over each member's events: every write
(events stamped now, in the past, a little ahead, and so far ahead that
they must raise), ``rebase``, clock steps up to silences of 750 time
constants.  After every step the decayed values equal the formula to a
relative 1e-9, now and later, the board's order is the formula's except
between members that close in value, a re-base keeps the order exactly, and a reopen
brings back the same base and the same stored scores bit for bit.
"""

from __future__ import annotations

import itertools
import math
import shutil
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from model import Model
from test_stateful import exact, norm

from rankengine import Leaderboard
from rankengine.timed.decay import DecayedLeaderboard
from rankengine.timed.periodic import Hourly, LateEventError, Period, PeriodicLeaderboard

HOUR = 3_600
CALENDAR = Hourly()
START = float(datetime(2026, 11, 30, 10, tzinfo=UTC).timestamp())

MEMBERS = st.sampled_from(["a", "b", "c", "d", "e"])
SCORES = st.sampled_from([0, 1, 2, 2, 3, -1, 0.5, 2.0])
DELTAS = st.sampled_from([1, 1, 2, -1, 0, 0.5])
METAS = st.sampled_from([None, {"n": 1}, {"n": 2, "tags": ["x"]}])
WHENS = st.sampled_from([None, None, None, "new", "present", "better", "worse"])
RANKS = st.sampled_from([1, 2, 3, -1, -2])
FLAGS = st.booleans()
#: A write's time: None (now), or (periods back from the current one, where
#: in that period); -1 periods back is the next period, which has not begun.
STAMPS = st.one_of(
    st.none(),
    st.tuples(
        st.sampled_from([0, 0, 1, 1, 2, 3, -1]),
        st.sampled_from([0.0, 1.0, 1799.5, HOUR - 1.0, math.nextafter(HOUR, 0)]),
    ),
)

STATEFUL_TIME_SETTINGS = settings(
    max_examples=40,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


class FakeClock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def rows(board: Any) -> list[Any]:
    """A board's items with score types and metadata, best first."""
    return [(m, exact(s), board.meta(m)) for m, s in board.items()]


class CallbackFailed(Exception):
    """What an armed close callback raises."""


class PeriodicModel:
    """A periodic board as ``docs/time.md`` describes it, kept obvious.

    Every call first *advances*: now is the clock (never less than a time
    already seen); the current period is held; a held period closes once
    ``now >= end + grace`` (its callback records its final rows), oldest
    first; a closed period older than the ``keep`` periods before the
    current one is archived and dropped.
    """

    def __init__(self, clock: FakeClock, keep: int, grace: float, late: str) -> None:
        self.clock = clock
        self.keep, self.grace, self.late = keep, grace, late
        self.now = -math.inf
        self.boards: dict[str, Model] = {}
        self.periods: dict[str, Period] = {}
        self.closed: set[str] = set()
        self.callbacks: list[tuple[str, list[Any]]] = []
        self.archived: dict[str, list[Any]] = {}
        self.late_dropped = 0
        #: the next close callback raises (see :meth:`advance`)
        self.fail_next = False
        #: periods closed by a tick() that raised
        self.unreported: list[str] = []

    def advance(self, closed: list[str] | None = None) -> None:
        """Advance to the clock, appending the names of the periods it
        closes to ``closed``, oldest first.  An armed callback failure
        raises at the next close, which then does not happen (nor anything
        after it): the next call retries it."""
        self.now = max(self.now, self.clock())
        current = CALENDAR.period_of(self.now)
        self.hold(current)
        closing = [
            p
            for p in sorted(self.periods.values(), key=lambda p: p.start)
            if p.name not in self.closed and self.now >= p.end + self.grace
        ]
        for period in closing:
            if self.fail_next:
                self.fail_next = False
                raise CallbackFailed(period.name)
            self.callbacks.append((period.name, rows(self.boards[period.name])))
            self.closed.add(period.name)
            if closed is not None:
                closed.append(period.name)
        oldest = CALENDAR.shift(current, -self.keep).start
        for name in sorted(self.closed, key=lambda n: self.periods[n].start):
            if self.periods[name].start < oldest:
                self.archived[name] = rows(self.boards[name])
                del self.boards[name], self.periods[name]
                self.closed.discard(name)

    def tick(self) -> list[str]:
        """What ``tick()`` returns: the periods it closes, after those that a
        ``tick()`` which raised had closed."""
        closed, self.unreported = self.unreported, []
        try:
            self.advance(closed)
        except CallbackFailed:
            self.unreported = closed
            raise
        return closed

    def hold(self, period: Period) -> Model:
        if period.name not in self.boards:
            self.boards[period.name] = Model(tie_break="first")
            self.periods[period.name] = period
        return self.boards[period.name]

    def is_open(self, period: Period) -> bool:
        return period.start <= self.now < period.end + self.grace

    def route(self, t: float | None, *, redirect: bool = True) -> Period | None:
        """The period a write at ``t`` goes to, None if dropped; raises as the
        board must (a period not begun, or a late write rejected)."""
        current = CALENDAR.period_of(self.now)
        if t is None:
            return current
        period = CALENDAR.period_of(t)
        if period.start > self.now:
            raise ValueError("not begun")
        if self.now < period.end + self.grace and period.name not in self.closed:
            return period
        if self.late == "reject" or (self.late == "current" and not redirect):
            raise LateEventError(t, period, self.now)
        return None if self.late == "drop" else current

    def read(self, period: Period) -> Model:
        """The board a read of ``period`` sees: held, or empty when open or
        within ``keep`` (nobody wrote to it), else ``KeyError``."""
        if period.name in self.boards:
            return self.boards[period.name]
        current = CALENDAR.period_of(self.now)
        kept = CALENDAR.shift(current, -self.keep).start <= period.start <= current.start
        if self.is_open(period) or kept:
            return Model(tie_break="first")
        raise KeyError(period.name)

    def reopened(self) -> None:
        """A durable reopen: now restarts from what the files prove (a held
        period's start, a closed or archived one's end + grace)."""
        seen = [p.start for p in self.periods.values()]
        seen += [self.periods[n].end + self.grace for n in self.closed]
        seen += [CALENDAR.parse(n).end + self.grace for n in self.archived]
        self.now = max(seen, default=-math.inf)
        self.late_dropped = 0


class PeriodicMachine(RuleBasedStateMachine):
    """A periodic board and :class:`PeriodicModel`, step by step."""

    durable = False

    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock(START)
        self.path = tempfile.mkdtemp(prefix="rankengine-stateful-time-")
        self.board: PeriodicLeaderboard | None = None
        self.model = PeriodicModel(self.clock, 1, 0.0, "reject")
        self.callbacks: list[tuple[str, list[Any]]] = []
        self.options: dict[str, Any] = {}
        self.checked_archives: set[str] = set()
        self.fail_next = False

    def on_close(self, period: Period, board: Leaderboard) -> None:
        if self.fail_next:
            self.fail_next = False
            raise CallbackFailed(period.name)
        self.callbacks.append((period.name, rows(board)))

    def advanced(self, call: Callable[[], Any]) -> bool:
        """Advance the model; if a callback fails there, ``call`` (on the
        board) must fail the same way, and the step ends (False)."""
        try:
            self.model.advance()
        except CallbackFailed as exc:
            with pytest.raises(CallbackFailed, match=str(exc)):
                call()
            return False
        return True

    def open(self) -> PeriodicLeaderboard:
        if self.durable:
            return PeriodicLeaderboard.open(
                self.path, "hourly", clock=self.clock, fsync="never", **self.options
            )
        return PeriodicLeaderboard("hourly", clock=self.clock, archive=self.path, **self.options)

    @initialize(
        keep=st.integers(0, 2),
        grace=st.sampled_from([0.0, 600.0, 1.5 * HOUR]),
        late=st.sampled_from(["reject", "drop", "current"]),
        offset=st.sampled_from([0.0, 1.0, 1800.0, HOUR - 1.0]),
    )
    def setup(self, keep: int, grace: float, late: str, offset: float) -> None:
        """Draw the policy; the clock starts somewhere in an hour."""
        self.clock.t = START + offset
        self.options = {
            "keep": keep,
            "grace": grace,
            "late": late,
            "on_close": self.on_close,
            "tie_break": "first",
        }
        self.model = PeriodicModel(self.clock, keep, grace, late)
        self.board = self.open()

    def teardown(self) -> None:
        if self.board is not None:
            self.board.close()
        shutil.rmtree(self.path, ignore_errors=True)

    # ------------------------------------------------------------------
    # helpers
    # ------------------------------------------------------------------
    def stamp(self, when: tuple[int, float] | None) -> float | None:
        """The time of a write: None, or ``back`` periods before the
        current one (of the model's now after advancing), ``offset`` in."""
        if when is None:
            return None
        back, offset = when
        current = CALENDAR.period_of(self.model.now)
        return CALENDAR.shift(current, -back).start + offset

    def write(
        self,
        t_spec: tuple[int, float] | None,
        call: Callable[..., Any],
        dropped: Any,
        *,
        redirect: bool = True,
        check_dropped: bool = True,
    ) -> None:
        """Run a write on the model and on the board: the same result or the
        same error.  ``dropped`` is what a late write dropped returns; bad
        input still raises when dropped (checked on an empty model unless
        ``check_dropped`` is False)."""
        assert self.board is not None
        if not self.advanced(lambda: call(self.board)):
            return
        t = self.stamp(t_spec)
        model = self.model
        try:
            period = model.route(t, redirect=redirect)
            if period is None:
                if check_dropped:
                    call(Model(tie_break="first"))
                want: Any = dropped
            else:
                created = period.name not in model.boards
                target = Model(tie_break="first") if created else model.boards[period.name]
                want = call(target)
                if created and len(target):
                    model.boards[period.name] = target
                    model.periods[period.name] = period
        except (ValueError, KeyError) as exc:
            with pytest.raises(type(exc)):
                call(self.board) if t is None else call(self.board, t=t)
            return
        got = call(self.board) if t is None else call(self.board, t=t)
        if period is None:
            model.late_dropped += 1
        assert exact(norm(got)) == exact(want)

    # ------------------------------------------------------------------
    # writes
    # ------------------------------------------------------------------
    @rule(m=MEMBERS, s=SCORES, when=WHENS, meta=METAS, t=STAMPS)
    def set(self, m: str, s: Any, when: Any, meta: Any, t: Any) -> None:
        """``set`` (with ``when=`` and metadata) goes to the period of ``t``."""
        self.write(t, lambda x, **kw: x.set(m, s, when=when, meta=meta, **kw), False)

    @rule(m=MEMBERS, d=DELTAS, when=WHENS, t=STAMPS)
    def incr(self, m: str, d: Any, when: Any, t: Any) -> None:
        """``incr`` returns the new score (with its type) or None."""
        self.write(t, lambda x, **kw: x.incr(m, d, when=when, **kw), None)

    @rule(items=st.lists(st.tuples(MEMBERS, SCORES), max_size=4), when=WHENS, t=STAMPS)
    def set_many(self, items: list[Any], when: Any, t: Any) -> None:
        """``set_many``, an empty batch included (it leaves no period behind)."""
        self.write(t, lambda x, **kw: x.set_many(items, when=when, **kw), 0)

    @rule(items=st.lists(st.tuples(MEMBERS, DELTAS), max_size=4), t=STAMPS)
    def incr_many(self, items: list[Any], t: Any) -> None:
        """``incr_many`` returns every member's new score."""
        self.write(t, lambda x, **kw: x.incr_many(items, **kw), {})

    @rule(m=MEMBERS, t=STAMPS)
    def remove(self, m: str, t: Any) -> None:
        """``remove`` of a present or an absent member."""
        self.write(t, lambda x, **kw: x.remove(m, **kw), False)

    @rule(ms=st.lists(MEMBERS, max_size=3), t=STAMPS)
    def remove_many(self, ms: list[str], t: Any) -> None:
        """``remove_many`` counts the members that were present."""
        self.write(t, lambda x, **kw: x.remove_many(ms, **kw), 0)

    @rule(count=st.integers(0, 3), best=FLAGS, with_meta=FLAGS, t=STAMPS)
    def pop(self, count: int, best: bool, with_meta: bool, t: Any) -> None:
        """Pops pick by the standings: never moved to the current period."""
        name = "pop_best" if best else "pop_worst"
        self.write(
            t,
            lambda x, **kw: getattr(x, name)(count, with_meta=with_meta, **kw),
            [],
            redirect=False,
        )

    @rule(start=RANKS, stop=RANKS, t=STAMPS)
    def remove_by_rank(self, start: int, stop: int, t: Any) -> None:
        """``remove_by_rank``: picks by the standings, as a pop."""
        self.write(t, lambda x, **kw: x.remove_by_rank(start, stop, **kw), 0, redirect=False)

    @rule(low=st.none() | SCORES, high=st.none() | SCORES, inc=FLAGS, t=STAMPS)
    def remove_by_score(self, low: Any, high: Any, inc: bool, t: Any) -> None:
        """``remove_by_score``: picks by the standings, as a pop."""
        self.write(
            t,
            lambda x, **kw: x.remove_by_score(low, high, min_inclusive=inc, **kw),
            0,
            redirect=False,
        )

    @rule(n=st.integers(0, 4), t=STAMPS)
    def keep_top(self, n: int, t: Any) -> None:
        """``keep_top``: picks by the standings, as a pop."""
        self.write(t, lambda x, **kw: x.keep_top(n, **kw), 0, redirect=False)

    @rule(m=MEMBERS, meta=METAS, t=STAMPS)
    def set_meta(self, m: str, meta: Any, t: Any) -> None:
        """``set_meta`` needs the member on the board of ``t``; dropped late,
        it is checked as input only."""
        self.write(t, lambda x, **kw: x.set_meta(m, meta, **kw), None, check_dropped=False)

    # ------------------------------------------------------------------
    # time
    # ------------------------------------------------------------------
    @rule(step=st.sampled_from([0.0, 1.0, 59.5, 600.0, 1800.0, HOUR - 1.0, HOUR]))
    def step(self, step: float) -> None:
        """A small step of the clock."""
        self.clock.t += step

    @rule(periods=st.integers(2, 30), offset=st.sampled_from([0.0, 0.5, 1800.0]))
    def jump(self, periods: int, offset: float) -> None:
        """A jump over many periods."""
        self.clock.t = CALENDAR.period_of(self.clock.t).start + periods * HOUR + offset

    @rule(back=st.integers(0, 2), delta=st.sampled_from([-1.0, 0.0, 0.5]))
    def to_the_edge(self, back: int, delta: float) -> None:
        """The clock onto (or next to) the moment a period closes: ``end + grace``."""
        period = CALENDAR.shift(CALENDAR.period_of(self.model.now), -back)
        self.clock.t = max(self.clock.t, period.end + self.model.grace + delta)

    @rule(back=st.sampled_from([1.0, 600.0, 2 * HOUR]))
    def clock_goes_back(self, back: float) -> None:
        """The clock reads earlier: the board's now must not move back."""
        self.clock.t -= back

    @rule()
    def clock_back_before_the_last_close(self) -> None:
        """The clock reads just before the latest ``end + grace`` of a closed
        or archived period: no such period may open again (a durable reopen
        starts from the time its files prove was reached)."""
        model = self.model
        ends = [model.periods[n].end for n in model.closed]
        ends += [CALENDAR.parse(n).end for n in model.archived]
        if ends:
            self.clock.t = min(self.clock.t, max(ends) + model.grace - 1.0)

    @rule()
    def tick(self) -> None:
        """``tick()`` returns the periods it closed, oldest first."""
        assert self.board is not None
        try:
            closed = self.model.tick()
        except CallbackFailed as exc:
            with pytest.raises(CallbackFailed, match=str(exc)):
                self.board.tick()
            return
        assert [p.name for p in self.board.tick()] == closed

    @rule()
    def fail_next_callback(self) -> None:
        """The next close callback raises: the call that runs it raises, and
        the period closes at a later call (at-least-once)."""
        self.fail_next = self.model.fail_next = True

    # ------------------------------------------------------------------
    # reads
    # ------------------------------------------------------------------
    @rule(back=st.one_of(st.none(), st.integers(-1, 4)), m=MEMBERS, by_name=FLAGS)
    def reads(self, back: int | None, m: str, by_name: bool) -> None:
        """Reads of the current period (``period=None``) or one ``back``
        periods before it, given as a ``Period`` or its name."""
        assert self.board is not None
        board = self.board
        if not self.advanced(lambda: board.top(period=None)):
            return
        current = CALENDAR.period_of(self.model.now)
        period = current if back is None else CALENDAR.shift(current, -back)
        arg: Period | str | None = None
        if back is not None:
            arg = period.name if by_name else period
        assert self.board.is_open(period) == self.model.is_open(period)
        try:
            model = self.model.read(period)
        except KeyError:
            with pytest.raises(KeyError):
                self.board.top(period=arg)
            return
        assert exact(norm(self.board.top(3, period=arg, with_meta=True))) == exact(
            model.top(3, with_meta=True)
        )
        assert self.board.rank(m, period=arg) == model.rank(m)
        assert exact(self.board.score(m, period=arg)) == exact(model.score(m))
        assert self.board.meta(m, period=arg) == model.meta(m)
        assert self.board.count(period=arg) == len(model)
        assert exact(norm(self.board.around(m, 1, 1, period=arg, fill=True))) == exact(
            model.around(m, 1, 1, fill=True)
        )
        assert exact(norm(self.board.page(2, 2, period=arg))) == exact(model.page(2, 2))
        assert exact(norm(self.board.by_rank(2, -1, period=arg))) == exact(model.by_rank(2, -1))
        assert norm(self.board.entries([m, "zed"], period=arg)) == model.entries([m, "zed"])
        assert self.board.percentile(m, period=arg) == model.percentile(m)

    # ------------------------------------------------------------------
    # after every step
    # ------------------------------------------------------------------
    @invariant()
    def matches_model(self) -> None:
        """``_check()``, and the board holds what the model holds."""
        board, model = self.board, self.model
        if board is None:
            return
        board._check()
        if not self.advanced(board.periods):
            board._check()
            model.advance()
        assert [p.name for p in board.periods()] == sorted(
            model.boards, key=lambda n: model.periods[n].start
        )
        for name, period_model in model.boards.items():
            assert rows(board.board(name)) == rows(period_model), name
        assert self.callbacks == model.callbacks
        assert board.late_dropped == model.late_dropped
        assert board.archived() == sorted(model.archived, key=lambda n: CALENDAR.parse(n).start)
        for name in model.archived.keys() - self.checked_archives:
            assert rows(board.load_archived(name)) == model.archived[name], name
            self.checked_archives.add(name)
        board._check()


class DurablePeriodicMachine(PeriodicMachine):
    """The same on a durable board, closed and reopened now and then."""

    durable = True

    @rule(m=MEMBERS)
    def close_and_reopen(self, m: str) -> None:
        """After ``close()`` reads still work and writes raise; a reopen holds
        the same periods, runs no callback again, and starts from the time
        its files prove was reached."""
        assert self.board is not None
        board = self.board
        if not self.advanced(board.board):
            return
        before = rows(self.board.board())
        self.board.close()
        assert rows(self.board.board()) == before
        with pytest.raises(ValueError):
            self.board.incr(m, 1)  # would change the board
        self.model.reopened()
        self.board = self.open()


PeriodicMachine.TestCase.settings = STATEFUL_TIME_SETTINGS
DurablePeriodicMachine.TestCase.settings = STATEFUL_TIME_SETTINGS
TestPeriodic = PeriodicMachine.TestCase
TestPeriodicDurable = DurablePeriodicMachine.TestCase


# ----------------------------------------------------------------------
# Decayed boards
# ----------------------------------------------------------------------
HALF_LIFE = 60.0
TAU = HALF_LIFE / math.log(2)
POINTS = st.sampled_from([1.0, 1.0, 2.0, 0.5, 3, 10.0, -1.0])
#: How far from now a write is stamped, in time constants (1000: so far
#: ahead that the event's value now is not a double).
STAMP_OFFSETS = st.one_of(st.none(), st.sampled_from([0.0, -1.0, -3.5, -800.0, 0.5, 1.0, 1000.0]))
#: Relative tolerance of a decayed value against the direct formula.
REL = 1e-9


class DecayModel:
    """A decayed board as ``docs/time.md`` describes it, by the direct
    formula: each member's events ``(points, t)`` (a ``set`` replaces them
    with its value at its time), worth ``sum points * e^(-(at - t) / tau)``
    at time ``at``; no base time, no re-bases."""

    def __init__(self) -> None:
        self.events: dict[str, list[tuple[float, float]]] = {}
        self.metas: dict[str, Any] = {}

    def value(self, member: str, at: float) -> tuple[float, float]:
        """The member's value at ``at`` and the tolerance it is good to."""
        terms = [p * math.exp(-(at - t) / TAU) for p, t in self.events[member]]
        return math.fsum(terms), REL * sum(abs(x) for x in terms) + 1e-300

    def close_to(self, member: str, got: float, at: float) -> bool:
        want, tol = self.value(member, at)
        return abs(got - want) <= tol

    def remove(self, member: str) -> None:
        self.events.pop(member, None)
        self.metas.pop(member, None)


class DecayMachine(RuleBasedStateMachine):
    """A decayed board (tie-break by first to reach) and :class:`DecayModel`.

    Decayed values must equal the direct formula to a relative ``1e-9``;
    the board's order must be the model's except between members whose
    values are that close; a re-base (on demand, or due after 64 time
    constants) keeps the order exactly; a durable reopen brings back the
    very same stored scores under the very same base."""

    durable = False

    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock(START)
        self.path = tempfile.mkdtemp(prefix="rankengine-stateful-decay-")
        self.model = DecayModel()
        self.board = self.open()

    def open(self) -> DecayedLeaderboard:
        if self.durable:
            return DecayedLeaderboard.open(
                self.path, half_life=HALF_LIFE, clock=self.clock, fsync="never", tie_break="first"
            )
        return DecayedLeaderboard(half_life=HALF_LIFE, clock=self.clock, tie_break="first")

    def teardown(self) -> None:
        self.board.close()
        shutil.rmtree(self.path, ignore_errors=True)

    def stamp(self, offset: float | None) -> float:
        return self.clock.t if offset is None else self.clock.t + offset * TAU

    def order_agrees(self, before: list[str], at: float) -> None:
        """Members listed best first: each is at least the next one's model
        value, up to their tolerances."""
        for upper, lower in itertools.pairwise(before):
            (a, ta), (b, tb) = self.model.value(upper, at), self.model.value(lower, at)
            assert a >= b - ta - tb, (upper, a, lower, b)

    # ------------------------------------------------------------------
    # writes
    # ------------------------------------------------------------------
    @rule(m=MEMBERS, p=POINTS, offset=STAMP_OFFSETS)
    def add(self, m: str, p: float, offset: float | None) -> None:
        """``add`` returns the decayed value at now; one stamped so far
        ahead that it is not a double raises and changes nothing."""
        t = self.stamp(offset)
        if offset is not None and offset > 700:
            with pytest.raises(OverflowError):
                self.board.add(m, p, t=t)
            return
        got = self.board.add(m, p, t=None if offset is None else t)
        self.model.events.setdefault(m, []).append((p, t))
        assert self.model.close_to(m, got, self.clock.t)

    @rule(items=st.lists(st.tuples(MEMBERS, POINTS), max_size=4), offset=STAMP_OFFSETS)
    def add_many(self, items: list[tuple[str, float]], offset: float | None) -> None:
        """``add_many``: every item at one time (a member twice: both count)."""
        t = self.stamp(offset)
        if items and offset is not None and offset > 700:
            with pytest.raises(OverflowError):
                self.board.add_many(items, t=t)
            return
        got = self.board.add_many(items, t=None if offset is None else t)
        for m, p in items:
            self.model.events.setdefault(m, []).append((p, t))
        assert set(got) == {m for m, _ in items}
        assert all(self.model.close_to(m, v, self.clock.t) for m, v in got.items())

    @rule(m=MEMBERS, v=POINTS, offset=STAMP_OFFSETS)
    def set(self, m: str, v: float, offset: float | None) -> None:
        """``set`` makes the value at ``t`` equal ``v``."""
        t = self.stamp(offset)
        if offset is not None and offset > 700:
            with pytest.raises(OverflowError):
                self.board.set(m, v, t=t)
            return
        self.board.set(m, v, t=None if offset is None else t)
        self.model.events[m] = [(v, t)]

    @rule(items=st.lists(st.tuples(MEMBERS, POINTS), max_size=4), offset=STAMP_OFFSETS)
    def set_many(self, items: list[tuple[str, float]], offset: float | None) -> None:
        """``set_many`` is a loop of ``set`` (the last value of a member wins)."""
        t = self.stamp(offset)
        if items and offset is not None and offset > 700:
            with pytest.raises(OverflowError):
                self.board.set_many(items, t=t)
            return
        self.board.set_many(items, t=None if offset is None else t)
        for m, v in items:
            self.model.events[m] = [(v, t)]

    @rule(m=MEMBERS)
    def remove(self, m: str) -> None:
        """``remove`` says whether the member was there."""
        assert self.board.remove(m) == (m in self.model.events)
        self.model.remove(m)

    @rule(ms=st.lists(MEMBERS, max_size=3))
    def remove_many(self, ms: list[str]) -> None:
        """``remove_many`` counts the members that were present."""
        assert self.board.remove_many(ms) == len(set(ms) & self.model.events.keys())
        for m in ms:
            self.model.remove(m)

    @rule(m=MEMBERS, meta=METAS)
    def set_meta(self, m: str, meta: Any) -> None:
        """``set_meta`` of an absent member is a ``KeyError``."""
        if m not in self.model.events:
            with pytest.raises(KeyError):
                self.board.set_meta(m, meta)
            return
        self.board.set_meta(m, meta)
        if meta is None:
            self.model.metas.pop(m, None)
        else:
            self.model.metas[m] = meta

    @rule(count=st.integers(0, 3), best=FLAGS, with_meta=FLAGS)
    def pop(self, count: int, best: bool, with_meta: bool) -> None:
        """Pops take the board's best (worst) members, worth their decayed
        values at now, with their metadata when asked."""
        order = [m for m, _ in self.board.board.items()]
        popped = (self.board.pop_best if best else self.board.pop_worst)(count, with_meta=with_meta)
        taken = order[:count] if best else order[::-1][:count]
        assert [e.member for e in popped] == taken
        for e in popped:
            assert self.model.close_to(e.member, e.score, self.clock.t)
            assert e.meta == (self.model.metas.get(e.member) if with_meta else None)
            self.model.remove(e.member)

    @rule(n=st.integers(0, 4))
    def keep_top(self, n: int) -> None:
        """``keep_top`` removes all but the board's best ``n``."""
        order = [m for m, _ in self.board.board.items()]
        assert self.board.keep_top(n) == len(order[n:])
        for m in order[n:]:
            self.model.remove(m)

    @rule(start=RANKS, stop=RANKS)
    def remove_by_rank(self, start: int, stop: int) -> None:
        """``remove_by_rank`` removes the members in that rank window."""
        order = [m for m, _ in self.board.board.items()]
        n = len(order)
        first = start + n + 1 if start < 0 else start
        last = stop + n + 1 if stop < 0 else stop
        doomed = order[max(first, 1) - 1 : max(last, 0)]
        assert self.board.remove_by_rank(start, stop) == len(doomed)
        for m in doomed:
            self.model.remove(m)

    @rule(ahead=st.sampled_from([None, 0.0, 1.0, 70.0, -1.0]))
    def rebase(self, ahead: float | None) -> None:
        """``rebase`` (to now, or ``ahead`` time constants from ``t0``) keeps
        the order exactly and the values up to rounding; a ``t0`` before the
        current one is a ``ValueError``."""
        order = [m for m, _ in self.board.board.items()]
        target = self.clock.t if ahead is None else self.board.t0 + ahead * TAU
        if target < self.board.t0:
            with pytest.raises(ValueError):
                self.board.rebase(None if ahead is None else target)
            return
        self.board.rebase(None if ahead is None else target)
        assert self.board.t0 == target
        assert [m for m, _ in self.board.board.items()] == order

    # ------------------------------------------------------------------
    # time
    # ------------------------------------------------------------------
    @rule(taus=st.sampled_from([0.0, 0.25, 1.0, 3.0, 65.0, 750.0, -0.5]))
    def step(self, taus: float) -> None:
        """The clock moves (a long silence too, and back a little)."""
        self.clock.t += taus * TAU

    # ------------------------------------------------------------------
    # after every step
    # ------------------------------------------------------------------
    @invariant()
    def matches_model(self) -> None:
        """``_check()``; the same members and metadata; values to the direct
        formula now and later; the order the model's up to tolerance."""
        board, model = self.board, self.model
        board._check()
        now = self.clock.t
        for at in (None, now + 2 * TAU):
            items = board.items(at=at)
            assert {m for m, _ in items} == model.events.keys()
            for m, v in items:
                assert model.close_to(m, v, now if at is None else at), (m, v)
            self.order_agrees([m for m, _ in items], now if at is None else at)
        assert {m: board.meta(m) for m in model.events} == {
            m: model.metas.get(m) for m in model.events
        }
        assert [e.member for e in board.top(len(model.events) + 1)] == [m for m, _ in board.items()]


class DurableDecayMachine(DecayMachine):
    """The same on a durable board, closed and reopened now and then."""

    durable = True

    @rule(m=MEMBERS)
    def close_and_reopen(self, m: str) -> None:
        """After ``close()`` a write raises; a reopen has the same base, the
        same stored scores bit for bit, in the same order, and the metadata."""
        t0, stored = self.board.t0, exact(self.board.board.items())
        metas = {m: self.board.meta(m) for m in self.model.events}
        self.board.close()
        with pytest.raises(ValueError):
            self.board.add(m, 1.0)
        self.board = self.open()
        assert self.board.t0 == t0
        assert exact(self.board.board.items()) == stored
        assert {m: self.board.meta(m) for m in self.model.events} == metas


DecayMachine.TestCase.settings = STATEFUL_TIME_SETTINGS
DurableDecayMachine.TestCase.settings = STATEFUL_TIME_SETTINGS
TestDecay = DecayMachine.TestCase
TestDecayDurable = DurableDecayMachine.TestCase
