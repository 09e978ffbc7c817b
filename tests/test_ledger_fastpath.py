"""The ledger's fast path for int increments against its general path.

:meth:`Ledger.record` sends an int increment of a str member (no route
attributes, no ``when``, no subscriber; with or without ranks) down a path that feeds
each view as its :class:`~rankengine.ledger.fastpath.IncrPlan` says,
writing a periodic view's period board directly when nothing else is due.
It must be indistinguishable from the general path (``Ledger._record``,
which every other event takes): two in-memory ledgers with the same views
and the same clock are given the same random events, one through
``record`` and one through the general path, and after every event they
must agree on the outcome (or the error, with nothing changed), the log,
every view's clock and seq, and every board's state (items, metadata,
write clocks, periods held and closed, the trending sketch's bytes).
"""

from __future__ import annotations

import copy
import operator
import pickle
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rankengine import Ledger
from rankengine.board.direct import DIRECT_DELTA_LIMIT, direct_incr
from rankengine.ledger import fastpath
from rankengine.ledger.events import LedgerEvent, make_event
from rankengine.ledger.fastpath import CODE_NAMES, IncrPlan
from rankengine.ledger.front import LazyRecorded, Recorded, first_score
from rankengine.timed import state as timed_state

START_MS = 1_798_934_400_000  # 2027-01-03T00:00Z, a Sunday: a week ends a day in

VIEWS: list[tuple[str, str, dict[str, Any]]] = [
    ("all", "board", {}),
    ("skip", "board", {"backend": "skiplist", "tie_break": "member"}),
    ("daily", "periodic", {"calendar": "daily", "grace": 3600}),
    ("weekly", "periodic", {"calendar": "weekly", "late": "drop"}),
    ("hourly", "periodic", {"calendar": "hourly", "late": "current", "keep": 2}),
    ("win", "window", {"calendar": "hourly", "buckets": 3}),
    ("hot", "decayed", {"half_life": 3600.0}),
    ("trend", "topk", {"k": 3}),
    ("weighted", "topk", {"k": 3, "weight": "value"}),
    ("region", "board", {"by": "region"}),
    ("eu", "periodic", {"calendar": "daily", "where": {"region": "eu"}}),
]

#: Mostly the fast path's event (an int increment of a str member), and
#: what it must fall back from: other ops, floats, NaN, int members,
#: route attributes, when=, the default time.
EVENTS = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "c", "d", 7]),
        st.one_of(
            st.integers(-5, 20),
            st.integers(-5, 20),
            # (past DIRECT_DELTA_LIMIT an int has no float value: refused
            # once a score is a float, by both paths, nothing written)
            st.sampled_from([0, 2**64, 2.5, float("nan"), DIRECT_DELTA_LIMIT, 10**400]),
        ),
        st.sampled_from(["incr"] * 6 + ["set", "remove"]),
        # time steps: mostly forward, across hours, days and weeks, sometimes back
        st.one_of(
            st.integers(0, 1_800_000),
            st.sampled_from([-60_000, -3_700_000, -2 * 86_400_000, 86_400_000, 7 * 86_400_000]),
        ),
        st.sampled_from([None] * 6 + [{"region": "eu"}, {"region": "us"}]),
        st.sampled_from([None] * 8 + ["present", "better"]),
        st.booleans(),  # the default time (now) rather than t_ms=
        st.booleans(),  # ranks
    ),
    max_size=60,
)


def make_ledger(clock: list[int]) -> Ledger:
    ledger = Ledger(now=lambda: clock[0])
    for name, kind, options in VIEWS:
        ledger.add_view(name, kind, **options)
    return ledger


def general(ledger: Ledger, member: Any, value: Any, *, ranks: bool, **fields: Any) -> Any:
    """What ``record`` does for an event it does not send down the fast path."""
    with ledger._lock:
        ledger._check_open()
        t_ms = fields.pop("t_ms")
        event = make_event(member, value, t_ms=ledger._now() if t_ms is None else t_ms, **fields)
        return ledger._record([event], ranks)[0]


def board_state(board: Any) -> Any:
    if board is None:
        return None
    return (
        [(m, s, board.meta(m)) for m, s in board.items()],
        board._clock,
        [(e.member, e.rank) for e in board.top(len(board) or 1)],
    )


def state(ledger: Ledger) -> Any:
    views = []
    for name in ledger.views:
        view = ledger._views[name]
        parts = [(key, header, board_state(board)) for key, (header, board) in view.export()]
        views.append((name, view.seq, view.time_ms, repr(parts)))
    log = [(e.seq, e.time_ms, e.changes) for e in ledger._history or []]
    return ledger.last_seq, ledger._time, ledger._last_ms, repr(log), views


def outcome(call: Any, *args: Any, **fields: Any) -> Any:
    try:
        done = call(*args, **fields)
    except Exception as exc:  # the same refusal, word for word
        return ("raised", type(exc).__name__, str(exc))
    # (read first through the tuple, then by name: the fast path's outcomes
    # are made on the first read, whichever it is)
    return ("recorded", repr(done), tuple(done), done.seq, done.event, done.outcomes)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(EVENTS)
def test_fast_path_matches_the_general_path(events: list[Any]) -> None:
    clock = [START_MS]
    fast, slow = make_ledger(clock), make_ledger(clock)
    t = START_MS
    for member, value, op, step, attrs, when, default_time, ranks in events:
        t = max(0, t + step)
        clock[0] = max(clock[0], t)
        value = None if op == "remove" else value  # noqa: PLW2901 -- remove takes none
        fields = {"op": op, "t_ms": None if default_time else t, "attrs": attrs, "when": when}
        got = outcome(fast.record, member, value, ranks=ranks, **fields)
        want = outcome(general, slow, member, value, ranks=ranks, **fields)
        assert got == want
        assert state(fast) == state(slow)
        fast._check()
        slow._check()


def test_the_fast_path_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test above compares something: the fast path's own writes run
    (a periodic view's period board is written directly)."""
    clock = [START_MS]
    ledger = make_ledger(clock)
    plan = IncrPlan(ledger._views.values())
    codes = {view.name: CODE_NAMES[code] for code, view, _, _ in plan.feeds}
    assert codes == {
        "all": "board",
        "skip": "generic",
        "daily": "periodic",
        "weekly": "periodic",
        "hourly": "periodic",
        "win": "generic",
        "hot": "generic",
        "trend": "topk",
        "weighted": "generic",
        "region": "generic",
        "eu": "generic",
    }
    assert [view.name for _, view, _ in plan.checks] == [
        "skip",
        "daily",
        "weekly",
        "hourly",
        "win",
        "hot",
        "trend",
        "weighted",
        "region",
        "eu",
    ]
    calls: list[Any] = []
    daily = ledger["daily"]
    ledger.record("ann", 1, t_ms=START_MS, ranks=False)  # opens the day (general write)
    period = daily.period_of(START_MS / 1000)
    board = daily.board(period)
    through = daily.incr
    daily.incr = lambda *a, **k: calls.append(("periodic", a)) or through(*a, **k)
    monkeypatch.setattr(
        timed_state, "direct_incr", lambda *a: calls.append(("direct", a)) or direct_incr(*a)
    )
    done = ledger.record("ann", 2, t_ms=START_MS + 1000, ranks=False)
    # the period's board, written directly (not through the periodic board)
    # (the three periodic views each so: daily, weekly, hourly)
    assert [kind for kind, _ in calls] == ["direct"] * 3
    assert [a for _, a in calls if a[0] is board] == [(board, "ann", 2)]
    assert done.outcome("daily").score == 3 and daily.now() == (START_MS + 1000) / 1000


def test_the_plan_follows_the_views() -> None:
    """Views added, removed and rebuilt between fast increments are fed as
    they are now (the plan is worked out again)."""
    clock = [START_MS]
    ledger = Ledger(now=lambda: clock[0])
    ledger.add_view("all")
    ledger.record("ann", 5, ranks=False)
    ledger.add_view("day", "periodic", calendar="daily")  # built from the history
    done = ledger.record("ann", 1, ranks=False)
    assert [(o.view, o.score) for o in done.outcomes] == [("all", 6), ("day", 6)]
    ledger.remove_view("all")
    done = ledger.record("ann", 1, ranks=False)
    assert [(o.view, o.score) for o in done.outcomes] == [("day", 7)]
    ledger.rebuild_view("day")
    done = ledger.record("bob", 1, ranks=False)
    assert [(o.view, o.score) for o in done.outcomes] == [("day", 1)]
    assert ledger["day"].items() == [("ann", 7), ("bob", 1)]
    ledger._check()


def test_a_full_trending_view_refuses_before_anything_is_written() -> None:
    """A trending view whose counters are full refuses an increment in its
    check, on both paths: nothing is logged and no view changes (it used
    to pass the check, fail in the write and close the ledger)."""
    clock = [START_MS]
    ledger = Ledger(now=lambda: clock[0])
    ledger.add_view("all")
    ledger.add_view("trend", "topk", k=3)
    ledger.add_view("heavy", "topk", k=3, weight="value")
    ledger.record("ann", 2**32 - 2, ranks=False)  # "heavy" counts 2**32 - 2 of 2**32 - 1
    for call in (
        lambda: ledger.record("bob", 2, ranks=False),  # the fast path
        lambda: ledger.record("bob", 2, ranks=True),  # the general path
        lambda: ledger.record_many([("bob", 1), ("cid", 1)]),  # a batch: the sum counts
    ):
        try:
            call()
        except OverflowError as exc:
            assert "limit 4294967295" in str(exc)
        else:
            raise AssertionError("a full trending view took an increment")
        assert ledger.last_seq == 1 and ledger["all"].items() == [("ann", 2**32 - 2)]
    ledger.record("bob", 1, ranks=False)  # exactly full: taken
    (trend,) = ledger._views["trend"].adapters.values()
    trend.board.total = trend.limit  # (as after 2**32 - 1 increments)
    try:
        ledger.record("cid", 1, ranks=False)
    except OverflowError:
        pass
    else:
        raise AssertionError("a full trending view took an increment")
    assert ledger.last_seq == 2 and not ledger.closed


#: Batches for ``record_many``: mostly int increments of str members (its
#: fast path), and what must fall back from it or be refused: floats, NaN,
#: an int member, route attributes, a bad item (no value).
BATCHES = st.lists(
    st.tuples(
        st.lists(
            st.one_of(
                st.tuples(st.sampled_from(["a", "b", "c", "d"]), st.integers(-5, 20)),
                st.tuples(st.sampled_from(["a", 7]), st.sampled_from([2.5, float("nan"), 2**64])),
                st.fixed_dictionaries(
                    {"member": st.sampled_from(["a", "e"]), "value": st.integers(0, 9)},
                    optional={
                        "t_ms": st.integers(START_MS - 86_400_000, START_MS + 9 * 86_400_000),
                        "attrs": st.sampled_from([{"region": "eu"}, {"region": "us"}]),
                    },
                ),
                st.just({"member": "a", "op": "set"}),  # no value: a bad item
            ),
            max_size=8,
        ),
        st.integers(0, 3_700_000),  # the clock's step before the batch
        st.booleans(),  # ranks
    ),
    max_size=25,
)


def general_many(ledger: Ledger, items: list[Any], *, ranks: bool) -> Any:
    """What ``record_many`` does for a batch it does not send down the fast path."""
    with ledger._lock:
        ledger._check_open()
        events = ledger._events_of(items)
        return ledger._record(events, ranks) if events else []


def outcome_many(call: Any, *args: Any, **fields: Any) -> Any:
    try:
        done = call(*args, **fields)
    except Exception as exc:  # the same refusal, word for word, notes too
        return ("raised", type(exc).__name__, str(exc), getattr(exc, "__notes__", None))
    return ("recorded", [(d.seq, d.event, d.outcomes) for d in done])


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(BATCHES)
def test_batch_fast_path_matches_the_general_path(batches: list[Any]) -> None:
    """``record_many`` of int increments (checked each after the ones
    before it, one record, every view fed as ``record``'s fast path feeds
    it) against the general path: the same outcomes or refusal (a batch
    with one bad item changes nothing), the same log and views."""
    clock = [START_MS]
    fast, slow = make_ledger(clock), make_ledger(clock)
    for items, step, ranks in batches:
        clock[0] += step
        got = outcome_many(fast.record_many, items, ranks=ranks)
        want = outcome_many(general_many, slow, items, ranks=ranks)
        assert got == want
        assert state(fast) == state(slow)
        fast._check()
        slow._check()


def test_the_batch_fast_path_is_taken_and_refuses_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison above compares something: a batch of int increments
    writes a periodic view's period board directly; a batch a full
    trending view cannot take is refused whole, nothing written."""
    clock = [START_MS]
    ledger = Ledger(now=lambda: clock[0])
    ledger.add_view("all")
    ledger.add_view("daily", "periodic", calendar="daily")
    ledger.add_view("trend", "topk", k=2)
    ledger.record("ann", 1, ranks=False)  # opens the day (general write)
    board = ledger["daily"].board(ledger["daily"].period_of(START_MS / 1000))
    calls: list[Any] = []
    monkeypatch.setattr(timed_state, "direct_incr", lambda *a: calls.append(a) or direct_incr(*a))
    done = ledger.record_many([("ann", 2), ("bob", 3)])
    assert calls == [(board, "ann", 2), (board, "bob", 3)]
    assert [d.outcome("daily").score for d in done] == [3, 3]
    assert done[0].seq == done[1].seq == 2  # one record
    topk = ledger._views["trend"].adapters[next(iter(ledger._views["trend"].adapters))]
    topk.limit = topk.board.total + 1  # room for one more, not two
    before = state(ledger)
    try:
        ledger.record_many([("cat", 1), ("dan", 1)])
    except Exception as exc:
        assert "item 1 of the batch, refused by view 'trend'" in "".join(exc.__notes__)
    else:
        raise AssertionError("a full trending view took the batch")
    assert state(ledger) == before
    ledger._check()


def _past_the_grace(record: Any) -> tuple[Ledger, Any]:
    """A ledger whose daily view (an hour's grace, late writes refused) last
    routed an event to the first day, and whose clock is then moved past
    that day's end and grace without the view seeing an event: a state the
    views' own checks keep from arising today, which the fast path must not
    rely on (its "within the open period" test also asks that the clock be
    before the period's close).  ``record(ledger)`` then records an int
    increment inside the first day; returns the ledger and what it did."""
    clock = [START_MS]
    ledger = Ledger(now=lambda: clock[0])
    ledger.add_view("all")
    ledger.add_view("daily", "periodic", calendar="daily", grace=3600)
    ledger.record("ann", 1, t_ms=START_MS, ranks=False)  # routes to the first day
    ledger._time = START_MS + 86_400_000 + 3_600_000  # the first day closed, grace over
    try:
        return ledger, record(ledger)
    except ValueError as exc:
        return ledger, exc


@pytest.mark.parametrize(
    "record",
    [
        lambda ledger: ledger.record("ann", 1, t_ms=START_MS + 1000, ranks=False),
        lambda ledger: ledger.record_many([{"member": "ann", "value": 1, "t_ms": START_MS + 1000}]),
    ],
    ids=["record", "record_many"],
)
def test_a_write_past_its_period_close_is_refused_on_the_fast_path(record: Any) -> None:
    """Within the period last routed to but after it closed: refused as
    late by the view's check, nothing written, the ledger still open (a
    check that took it would leave the periodic board to refuse it in the
    write, after the record was logged: the ledger would close)."""
    ledger, done = _past_the_grace(record)
    assert isinstance(done, ValueError) and "late" in str(done), done
    assert ledger.last_seq == 1 and not ledger.closed
    assert ledger["all"].items() == [("ann", 1)]
    ledger._check()


def test_a_lazy_recorded_reads_as_a_recorded() -> None:
    """``record(..., ranks=False)``'s fast path returns a LazyRecorded (its
    outcomes made on the first read): it reads as the general path's
    Recorded of the same event whichever way it is read first."""
    clock = [START_MS]
    probe = general(make_ledger(clock), "ann", 3, ranks=False, t_ms=START_MS).outcomes
    readers: list[Any] = [
        lambda d: d.outcomes,
        lambda d: d.outcome("daily"),
        lambda d: d[2],
        lambda d: d[-1:],
        list,
        lambda d: [*d],
        lambda d: d == d,
        repr,
        lambda d: d._asdict(),
        lambda d: d._replace(seq=9),
        copy.copy,
        lambda d: pickle.loads(pickle.dumps(d)),
        lambda d: operator.add(d, ("more",)),
        lambda d: d * 2,
        lambda d: operator.add(("first",), d),
        lambda d: 2 * d,
        lambda d: d.count(probe),
        lambda d: d.index(probe),
        lambda d: probe in d,
        lambda d: d < (d.seq, d.event, [*probe, None]),
        lambda d: d <= (d.seq, d.event, probe),
        lambda d: d > (d.seq, d.event, probe[:1]),
        lambda d: d >= (d.seq, d.event, probe),
    ]
    for read in readers:
        clock = [START_MS]
        fast, slow = make_ledger(clock), make_ledger(clock)
        done = fast.record("ann", 3, t_ms=START_MS, ranks=False)
        want = general(slow, "ann", 3, ranks=False, t_ms=START_MS)
        assert type(done) is LazyRecorded and type(want) is Recorded
        assert first_score(done) == first_score(want) == want.outcomes[0].score
        assert read(done) == read(want)
        assert done == want and want == done and (done != want) is False
        seq, event, outcomes = done
        assert (seq, event, outcomes) == tuple(want) and done[2] is outcomes is done.outcomes
        # the event, kept as its fields until read, reads as the event
        for made in (event, done.event, done[1], done[-2:][0], done._replace(seq=9).event):
            assert type(made) is LedgerEvent and made == want.event
        assert repr(done) == repr(want) and pickle.loads(pickle.dumps(done)) == want
        assert done._asdict() == want._asdict() and hash_fails(done) == hash_fails(want)


def hash_fails(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return True
    return False


def test_first_score_skips_the_views_that_took_no_part() -> None:
    """``first_score`` is ``outcomes[0].score`` (None without outcomes)
    when the first views took no part, on both paths."""
    for views in (["eu", "all"], ["eu"], ["all", "eu"]):
        ledger = Ledger(now=lambda: START_MS)
        for name in views:
            ledger.add_view(name, where={"region": "eu"} if name == "eu" else None)
        for ranks in (False, True):
            done = ledger.record("ann", 2, ranks=ranks)
            want = done.outcomes[0].score if done.outcomes else None
            assert type(done) is (Recorded if ranks else LazyRecorded)
            assert first_score(ledger.record("bob", 2, ranks=ranks)) == want


@pytest.mark.parametrize("ranks", [False, True])
def test_an_int_past_the_float_range_is_refused_on_a_float_score(ranks: bool) -> None:
    """``1.5 + 10**400`` has no float value: every path refuses the event
    before writing anything (the fast path leaves such ints to the general
    path, whose checks do the sum), and the ledger stays open."""
    clock = [START_MS]
    ledger = Ledger(now=lambda: clock[0])
    ledger.add_view("all")
    ledger.add_view("daily", "periodic", calendar="daily")
    ledger.record("ann", 1.5, ranks=False)
    for write in (
        lambda: ledger.record("ann", 10**400, ranks=ranks),
        lambda: ledger.record_many([("bob", 1), ("ann", -(10**400))], ranks=ranks),
    ):
        with pytest.raises(OverflowError, match="has no float value"):
            write()
        assert ledger.last_seq == 1 and ledger["all"].items() == [("ann", 1.5)]
        ledger._check()
    assert ledger.record("ann", 10**300, ranks=ranks).seq == 2  # within the range: a float
    assert ledger["all"].score("ann") == 1e300
    ledger._check()


def test_a_ledger_without_views_records() -> None:
    """The fast path with no view at all: the record is logged, nothing fed."""
    ledger = Ledger(now=lambda: START_MS)
    done = ledger.record("ann", 2, ranks=False)
    assert (done.seq, done.outcomes) == (1, [])
    assert ledger.record("ann", 3).outcomes == [] and ledger.last_seq == 2
    assert ledger.record_many([("ann", 1), ("bob", 2)])[1].seq == 3
    ledger._check()


@pytest.mark.parametrize("late", ["drop", "current"])
def test_a_late_event_is_not_written_to_the_period_last_routed_to(late: str) -> None:
    """A periodic view's check remembers the period it last routed to; an
    event outside it is routed again (a late one dropped, or sent to the
    current period), and the feed writes where that routing says, as the
    general path does -- never to the remembered period because it is open."""
    day_ms = 86_400_000
    clock = [START_MS + 2 * day_ms]
    fast, slow = (Ledger(now=lambda: clock[0]) for _ in range(2))
    for ledger in (fast, slow):
        ledger.add_view("daily", "periodic", calendar="daily", late=late)
    t = START_MS + 2 * day_ms + 1000
    for when in (t, t + 1000, t - day_ms, t + 2000):  # the third is a day late
        got = outcome(fast.record, "ann", 1, t_ms=when, ranks=False)
        want = outcome(general, slow, "ann", 1, ranks=False, t_ms=when)
        assert got == want
        assert state(fast) == state(slow)
        fast._check()
    daily = fast["daily"]
    today = daily.period_of(t / 1000)
    assert daily.board(today).score("ann") == (3 if late == "drop" else 4)


def test_the_trending_view_counts_directly(monkeypatch: pytest.MonkeyPatch) -> None:
    """A trending view's count on the fast path (with ranks or without) is
    ``direct_add``'s (compared with ``TopK.add`` in test_trending_direct)."""
    real = fastpath.direct_add
    calls: list[Any] = []
    monkeypatch.setattr(fastpath, "direct_add", lambda *a: calls.append(a[1]) or real(*a))
    ledger = Ledger()
    ledger.add_view("trend", "topk", k=3)
    ledger.record("ann", 2, ranks=False)
    assert ledger.record("bob", 1).outcome("trend").score == 1
    assert calls == ["ann", "bob"] and ledger["trend"].total == 2


def test_the_fast_path_compacts_when_due(tmp_path: Any) -> None:
    """The fast path starts a size-triggered compaction as the general path
    does: once the active segment holds ``compact_min_bytes``."""
    ledger = Ledger.open(tmp_path, compact_min_bytes=2000)
    ledger.add_view("all")
    compactions: list[int] = []
    real = ledger.compact
    ledger.compact = lambda *a, **k: compactions.append(ledger._seq) or real(*a, **k)  # type: ignore[method-assign]
    for k in range(100):  # ~60 bytes a record: due after ~30
        ledger.record(f"m{k}", 1, ranks=False)
    assert compactions and ledger._files is not None
    assert ledger._files.active_bytes < 2000
    ledger.close()
    with Ledger.open(tmp_path) as reopened:
        assert len(reopened["all"]) == 100
