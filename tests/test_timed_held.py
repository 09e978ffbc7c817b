"""``held_period_incr`` against ``held_period_board`` plus ``direct_incr``.

``held_period_incr`` carries the body of ``held_period_board`` inlined (a
call less per periodic write of a ledger's int increment), so the two must
decline and accept in the same states: two periodic boards with the same
settings and clock take the same random steps -- public writes that open
and close periods (late ones dropped or refused), reads, and the held
write of a member at a time and a clock reading -- one through
``held_period_incr``, the other through ``held_period_board`` and then
``direct_incr`` on the board it returns.  After each step both return the
same value and hold the same state (now, horizon, periods held and closed,
every board's items and clock), and both pass ``_check()``.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from rankengine import PeriodicLeaderboard
from rankengine.board.direct import direct_incr
from rankengine.timed.state import held_period_board, held_period_incr

HOUR = 3600.0
MEMBERS = st.sampled_from(["a", "b", "c"])
#: times over four hours, so hourly periods open, close and drop out of keep
TIMES = st.floats(0.0, 4 * HOUR, allow_nan=False).map(lambda t: round(t, 1))
OFFSETS = st.one_of(st.integers(0, 60), st.integers(0, 60), st.integers(-600, 2 * 3600)).map(float)

STEPS = st.lists(
    st.one_of(
        # the held write: member, delta, its time and the clock reading
        # after the time of the last public write (mostly soon after it,
        # where a held write is taken; up to past the period's close)
        st.tuples(st.just("held"), MEMBERS, st.integers(-3, 5), OFFSETS, OFFSETS),
        # ... or with the clock at the board's horizon (a period's close due)
        st.tuples(st.just("held"), MEMBERS, st.integers(-3, 5), OFFSETS, st.none()),
        # a public write at a time (moves the board's time: opens, closes)
        st.tuples(st.just("incr"), MEMBERS, st.integers(-3, 5), TIMES, st.none()),
        st.tuples(st.just("top"), st.none(), st.none(), st.none(), st.none()),
    ),
    max_size=40,
)


def state(board: PeriodicLeaderboard) -> Any:
    return (
        board._now,
        board._horizon,
        sorted(board._closed),
        {name: (b.items(), b.clock) for name, b in board._boards.items()},
    )


def step(board: PeriodicLeaderboard, clock: list[float], item: Any, inlined: bool) -> Any:
    op, member, delta, t, now = item
    try:
        if op == "held":
            at_horizon = now is None and board._horizon < float("inf")
            t, now = clock[0] + t, board._horizon if at_horizon else clock[0] + t + (now or 0)
            period = board.period_of(t)
            if inlined:
                return held_period_incr(board, period, now, member, delta)
            target = held_period_board(board, period, now)
            return None if target is None else direct_incr(target, member, delta)
        if op == "incr":
            clock[0] = max(clock[0], t)
            return board.incr(member, delta, t=t)
        return [(e.member, e.score) for e in board.top(2)]
    except Exception as exc:  # the same refusal, word for word
        return ("raised", type(exc).__name__, str(exc))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    steps=STEPS,
    grace=st.sampled_from([0.0, 600.0]),
    keep=st.integers(1, 2),
    late=st.sampled_from(["reject", "drop", "current"]),
)
def test_held_period_incr_is_held_period_board(
    steps: list[Any], grace: float, keep: int, late: str
) -> None:
    clock = [0.0]
    boards = [
        PeriodicLeaderboard("hourly", keep=keep, grace=grace, late=late, clock=lambda: clock[0])  # type: ignore[arg-type]
        for _ in range(2)
    ]
    taken = 0
    for item in steps:
        got = step(boards[0], clock, item, True)
        want = step(boards[1], clock, item, False)
        assert got == want, item
        taken += item[0] == "held" and got is not None
        assert state(boards[0]) == state(boards[1])
        for board in boards:
            board._check()
    event(f"held writes taken: {min(taken, 3)}{'+' if taken > 3 else ''}")


def test_held_period_incr_declines_as_held_period_board() -> None:
    """Each way of declining, on its own: the period's close is due (the
    clock at the horizon), the period not held, the period closed, a write
    hook; nothing changes."""
    clock = [100.0]
    board = PeriodicLeaderboard("hourly", keep=2, clock=lambda: clock[0])
    board.incr("a", 1, t=100.0)
    first = board.period_of(100.0)
    assert held_period_incr(board, first, 200.0, "a", 2) == 3  # taken, time moved
    assert board._now == 200.0
    before = state(board)
    assert held_period_incr(board, first, HOUR, "a", 2) is None  # its close is due
    assert held_period_incr(board, board.period_of(2 * HOUR), 300.0, "a", 2) is None  # not held
    assert state(board) == before
    clock[0] = HOUR + 10
    board.incr("b", 1, t=HOUR + 10)  # closes the first hour
    assert first.name in board._closed
    before = state(board)
    assert held_period_incr(board, first, HOUR + 20, "a", 2) is None  # closed
    assert held_period_board(board, first, HOUR + 20) is None
    board._write_hook = lambda *args: None  # (a sliding window's buckets have one)
    assert held_period_incr(board, board.period_of(HOUR + 10), HOUR + 20, "b", 2) is None
    board._write_hook = None
    assert state(board) == before
    board._check()
