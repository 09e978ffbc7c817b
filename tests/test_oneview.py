"""A one-view ledger opened as a board (``rankengine.ledger.oneview``).

Random write histories go to a :class:`LedgerBoard` and to an in-memory
``Leaderboard`` (the reference: the same code a plain board runs); every
answer, and the state -- order, ties, metadata, logical clock -- must
match, live and after a reopen (which rebuilds the view from the
ledger's events, so replay equals live).  Then the doors: a migrated
directory opens as a ``LedgerBoard`` through ``Leaderboard.open``; a
ledger that is not one board view is refused by name; ``format=`` is
checked against what the directory holds.
"""

from __future__ import annotations

import inspect
import math
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rankengine
from rankengine import (
    DecayedLeaderboard,
    Leaderboard,
    Ledger,
    PeriodicLeaderboard,
    SlidingWindowLeaderboard,
    open_board,
)
from rankengine.durable.board import DurableLeaderboard
from rankengine.ledger.migrate import migrate
from rankengine.ledger.oneview import LedgerBoard
from rankengine.ledger.timeview import LedgerDecayed, LedgerPeriodic, LedgerWindow
from rankengine.timed.state import periodic_state

#: An hour boundary (2027-01-04T00:00Z), in seconds.
T0 = 1_799_020_800.0

MEMBERS = [f"p{i}" for i in range(8)]
MEMBER = st.sampled_from(MEMBERS)
SCORE = st.sampled_from([0, 1, 2, 2.0, 5, -3, 10**20, math.inf])
WHEN = st.sampled_from([None, "gt", "lt", "new", "present"])
META = st.sampled_from([None, {"n": 1}, {"n": 2}, {}])
WRITE = st.one_of(
    st.tuples(st.just("set"), MEMBER, SCORE, WHEN, META),
    st.tuples(st.just("incr"), MEMBER, st.sampled_from([1, 2, -1, 0, 2.5]), WHEN),
    st.tuples(st.just("set_many"), st.lists(st.tuples(MEMBER, SCORE), max_size=4), WHEN),
    st.tuples(st.just("incr_many"), st.lists(st.tuples(MEMBER, st.sampled_from([1, 3])))),
    st.tuples(st.just("remove"), MEMBER),
    st.tuples(st.just("remove_many"), st.lists(MEMBER, max_size=3)),
    st.tuples(st.just("set_meta"), MEMBER, META),
    st.tuples(st.just("pop_best"), st.integers(0, 2)),
    st.tuples(st.just("pop_worst"), st.integers(0, 2)),
    st.tuples(st.just("remove_by_rank"), st.integers(1, 3), st.integers(1, 4)),
    st.tuples(st.just("remove_by_score"), SCORE, SCORE),
    st.tuples(st.just("keep_top"), st.integers(2, 6)),
    st.tuples(st.just("clear")),
)
CONFIG = st.fixed_dictionaries(
    {
        "order": st.sampled_from(["desc", "asc"]),
        "tie_break": st.sampled_from(["first", "member"]),
        "backend": st.sampled_from(["sortedlist", "skiplist"]),
    }
)


def run(board: Any, op: tuple[Any, ...]) -> Any:
    """The write ``op`` on ``board``: what it returned or the error type."""
    name, *args = op
    try:
        if name == "set":
            return board.set(args[0], args[1], when=args[2], meta=args[3])
        if name == "incr":
            return board.incr(args[0], args[1], when=args[2])
        if name == "set_many":
            return board.set_many(args[0], when=args[1])
        if name == "remove_by_score":
            return board.remove_by_score(min(args), max(args))
        return getattr(board, name)(*args)
    except (KeyError, TypeError, ValueError) as exc:
        return type(exc)


def state(board: Any) -> Any:
    items = board.items()
    return items, [board.meta(m) for m, _ in items], board.clock, [type(s) for _, s in items]


@given(config=CONFIG, ops=st.lists(WRITE, max_size=30))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_a_ledger_board_answers_as_a_board_live_and_after_a_reopen(
    config: dict[str, Any], ops: list[tuple[Any, ...]]
) -> None:
    reference = Leaderboard(**config)
    with tempfile.TemporaryDirectory() as tmp:
        with open_board(tmp, format="ledger", fsync="never", **config) as board:
            assert isinstance(board, LedgerBoard)
            for op in ops:
                assert run(board, op) == run(reference, op), op
                assert state(board) == state(reference), op
            board._check()
        with open_board(tmp) as again:  # the view rebuilt from the events
            assert isinstance(again, LedgerBoard)
            again._check()
            assert state(again) == state(reference)


def test_leaderboard_open_of_a_migrated_directory_is_a_ledger_board(tmp_path: Path) -> None:
    with open_board(tmp_path, fsync="never", order="asc") as board:
        assert isinstance(board, DurableLeaderboard)
        board.set_many({"ann": 3, "bob": 3, "cid": 1})
        board.set_meta("bob", {"team": "blue"})
        expected = state(board)
    migrate(tmp_path)
    with Leaderboard.open(tmp_path) as again:
        assert isinstance(again, LedgerBoard)
        assert state(again) == expected
        again.incr("cid", 5)
        assert again.ledger.last_seq == 1
    with Ledger.open(tmp_path) as ledger:
        assert ledger["board"].score("cid") == 6
    with pytest.raises(ValueError, match="holds a ledger"):
        open_board(tmp_path, format="log")
    with pytest.raises(ValueError, match="order='asc'"):
        open_board(tmp_path, order="desc")


def test_a_ledger_of_other_views_is_refused_by_name(tmp_path: Path) -> None:
    with Ledger.open(tmp_path, fsync="never") as ledger:
        ledger.add_view("alltime")
        ledger.add_view("weekly", "periodic", calendar="weekly")
    with pytest.raises(ValueError, match="'alltime': 'board', 'weekly': 'periodic'"):
        open_board(tmp_path)
    with open_board(tmp_path, view="alltime") as alltime:  # named: that view
        alltime.set("ann", 1)
    with pytest.raises(ValueError, match="holds a ledger"):
        PeriodicLeaderboard.open(tmp_path, "weekly")


def test_format_is_checked(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="format must be"):
        open_board(tmp_path / "x", format="sqlite")  # type: ignore[arg-type]
    assert not (tmp_path / "x").exists()
    with open_board(tmp_path / "log", fsync="never") as board:
        board.set("ann", 1)
    with pytest.raises(ValueError, match="rankengine migrate"):
        open_board(tmp_path / "log", format="ledger")
    with open_board(tmp_path / "new", format="ledger", fsync="never") as fresh:
        assert fresh.ledger.views == ["board"]
    assert rankengine.LedgerBoard is LedgerBoard


def test_a_refused_write_records_nothing(tmp_path: Path) -> None:
    with open_board(tmp_path, format="ledger", fsync="never") as board:
        board.set("ann", 1)
        for bad in (lambda: board.incr("ann", math.nan), lambda: board.set(None, 1)):
            with pytest.raises((TypeError, ValueError)):
                bad()
        with pytest.raises(KeyError):
            board.set_meta("zed", {"a": 1})
        assert board.ledger.last_seq == 1
        assert board.remove("zed") is False and board.ledger.last_seq == 1


# ----------------------------------------------------------------------
# PeriodicLeaderboard.open on a one-view ledger
# ----------------------------------------------------------------------
HOUR = 3600.0
#: (op, member, value, hour offset): writes across four hourly periods
PERIODIC_WRITE = st.tuples(
    st.sampled_from(["incr", "set", "remove", "set_meta", "pop_best", "keep_top"]),
    MEMBER,
    st.sampled_from([1, 2, 5, 2.5]),
    st.integers(0, 3),
)


def periodic_run(board: Any, op: tuple[Any, ...], t: float) -> Any:
    name, member, value, _ = op
    try:
        if name == "incr":
            return board.incr(member, value, t=t)
        if name == "set":
            return board.set(member, value, t=t, meta={"v": value})
        if name == "remove":
            return board.remove(member, t=t)
        if name == "set_meta":
            return board.set_meta(member, {"m": value}, t=t)
        if name == "pop_best":
            return board.pop_best(1, t=t)
        return board.keep_top(2, t=t)
    except (KeyError, TypeError, ValueError) as exc:
        return type(exc)


def periods(periodic: PeriodicLeaderboard) -> Any:
    """The periods holding members (an empty current period is made by
    time moving, which on a ledger moves with events only)."""
    _now, held = periodic_state(periodic)
    return sorted((n, c, state(b)) for n, c, b in held if len(b))


@given(ops=st.lists(PERIODIC_WRITE, max_size=30), grace=st.sampled_from([0.0, 600.0]))
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_a_ledger_periodic_answers_as_a_periodic_board_live_and_after_a_reopen(
    ops: list[tuple[Any, ...]], grace: float
) -> None:
    clock = [T0]
    reference = PeriodicLeaderboard("hourly", keep=2, grace=grace, clock=lambda: clock[0])
    with tempfile.TemporaryDirectory() as tmp:
        with Ledger.open(tmp, fsync="never") as ledger:
            ledger.add_view("periodic", "periodic", calendar="hourly", keep=2, grace=grace)
        opened = PeriodicLeaderboard.open(tmp, "hourly", keep=2, grace=grace, clock=lambda: T0)
        with opened as board:
            for op in sorted(ops, key=lambda op: op[3]):  # in time order, as events arrive
                t = T0 + op[3] * HOUR + 60.0
                clock[0] = max(clock[0], t)
                assert periodic_run(board, op, t) == periodic_run(reference, op, t), op
                if op[0] in ("incr", "set"):
                    # (an event moves the ledger's time, as the clock moved the
                    # reference's: periods closed and dropped alike)
                    assert periods(board.periodic) == periods(reference), op
            last = T0 + 4 * HOUR  # one event more, after every other
            clock[0] = last
            assert board.incr("zed", 1, t=last) == reference.incr("zed", 1, t=last)
            assert periods(board.periodic) == periods(reference)
            board._check()
        with PeriodicLeaderboard.open(
            tmp, "hourly", keep=2, grace=grace, clock=lambda: T0
        ) as again:
            assert periods(again.periodic) == periods(reference)


WINDOW_WRITE = st.tuples(
    st.sampled_from(["incr", "set", "remove", "set_meta"]),
    MEMBER,
    st.sampled_from([1, 2, 5, 2.5]),
    st.integers(0, 4),
)


def wstate(window: Any) -> Any:
    """A window's standings: sums over its buckets, with metadata (its tie
    clocks are its refreshes', not the writes')."""
    items = window.items()
    return items, [window.meta(m) for m, _ in items]


@given(ops=st.lists(WINDOW_WRITE, max_size=30))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_a_ledger_window_answers_as_a_window_live_and_after_a_reopen(
    ops: list[tuple[Any, ...]],
) -> None:
    clock = [T0]
    reference = SlidingWindowLeaderboard("hourly", 2, clock=lambda: clock[0])
    with tempfile.TemporaryDirectory() as tmp:
        with Ledger.open(tmp, fsync="never") as ledger:
            ledger.add_view("window", "window", calendar="hourly", buckets=2)
        with SlidingWindowLeaderboard.open(tmp, "hourly", 2, clock=lambda: T0) as board:
            for op in sorted(ops, key=lambda op: op[3]):  # in time order, as events arrive
                t = T0 + op[3] * HOUR + 60.0
                clock[0] = max(clock[0], t)
                assert periodic_run(board, op, t) == periodic_run(reference, op, t), op
                if op[0] in ("incr", "set"):
                    reference.refresh()
                    assert wstate(board.window) == wstate(reference), op
            last = T0 + 5 * HOUR
            clock[0] = last
            assert board.incr("zed", 1, t=last) == reference.incr("zed", 1, t=last)
            reference.refresh()
            assert wstate(board.window) == wstate(reference)
            board._check()
        with SlidingWindowLeaderboard.open(tmp, "hourly", 2, clock=lambda: T0) as again:
            assert wstate(again.window) == wstate(reference)


DECAYED_WRITE = st.tuples(
    st.sampled_from(["add", "set", "remove", "set_meta", "pop_best", "keep_top"]),
    MEMBER,
    st.sampled_from([1.0, 2.0, 5.5]),
    st.integers(0, 6),
)


def decayed_run(board: Any, op: tuple[Any, ...], t: float) -> Any:
    name, member, value, _ = op
    try:
        if name == "add":
            return board.add(member, value, t=t)
        if name == "set":
            return board.set(member, value, t=t)
        if name == "remove":
            return board.remove(member)
        if name == "set_meta":
            return board.set_meta(member, {"m": value})
        if name == "pop_best":
            return board.pop_best(1)
        return board.keep_top(2)
    except (KeyError, TypeError, ValueError) as exc:
        return type(exc)


def dstate(decayed: Any, at: float) -> Any:
    items = decayed.items(at=at)
    return items, [decayed.meta(m) for m, _ in items]


@given(ops=st.lists(DECAYED_WRITE, max_size=30))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_a_ledger_decayed_board_answers_as_one_live_and_after_a_reopen(
    ops: list[tuple[Any, ...]],
) -> None:
    clock = [T0]
    reference = DecayedLeaderboard(tau=HOUR, t0=T0, clock=lambda: clock[0])
    with tempfile.TemporaryDirectory() as tmp:
        with Ledger.open(tmp, fsync="never") as ledger:
            ledger.add_view("decayed", "decayed", tau=HOUR, t0=T0)
        with DecayedLeaderboard.open(tmp, tau=HOUR, clock=lambda: clock[0]) as board:
            for op in sorted(ops, key=lambda op: op[3]):  # in time order, as events arrive
                t = T0 + op[3] * 600.0
                clock[0] = max(clock[0], t)
                assert decayed_run(board, op, t) == decayed_run(reference, op, t), op
                # (read at the same time: a ledger view's own time is its last event's)
                assert dstate(board.decayed, clock[0]) == dstate(reference, clock[0]), op
            board._check()
        with DecayedLeaderboard.open(tmp, tau=HOUR, clock=lambda: clock[0]) as again:
            assert dstate(again.decayed, clock[0]) == dstate(reference, clock[0])


# ----------------------------------------------------------------------
# The time faces take the time boards' signatures
# ----------------------------------------------------------------------
#: Each face, the time board whose API it is, and what it refuses by name.
FACES: list[tuple[type, type, set[str]]] = [
    (LedgerPeriodic, PeriodicLeaderboard, set()),
    (
        LedgerWindow,
        SlidingWindowLeaderboard,
        {"pop_best", "pop_worst", "remove_by_rank", "remove_by_score", "keep_top"},
    ),
    (LedgerDecayed, DecayedLeaderboard, set()),
]


def _signature(function: Any) -> list[tuple[str, Any, Any]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]


@pytest.mark.parametrize(
    ("face", "kind", "refused"), FACES, ids=lambda x: getattr(x, "__name__", "")
)
def test_a_time_face_takes_its_boards_signatures(face: type, kind: type, refused: set[str]) -> None:
    """Every public method a face writes itself (the others are the view's
    own, read through) is the time board's: same parameter names, kinds and
    defaults, so a call written for ``PeriodicLeaderboard`` (``min=``,
    ``t=``...) works on the face; the window's pops and prunes are refused
    by name, as a window has none."""
    written = {
        name
        for cls in face.__mro__[:-1]
        for name, value in vars(cls).items()
        if not name.startswith("_") and callable(value)
    }
    assert written >= {"set", "remove", "set_meta"}
    for name in sorted(written - refused):
        assert _signature(getattr(face, name)) == _signature(getattr(kind, name)), name
    for name in refused:
        assert not hasattr(kind, name), name
