"""Decayed scores: ranks equal a brute-force recomputation, re-basing keeps
numbers finite over a simulated year, and a durable board replays exactly."""

from __future__ import annotations

import itertools
import math
import random
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankengine import Leaderboard
from rankengine.durable.manifest import LOCK_NAME, read_manifest
from rankengine.timed.decay import REBASE_AFTER, DecayedLeaderboard

HOUR = 3_600.0
DAY = 86_400.0


class FakeClock:
    def __init__(self, t: float) -> None:
        self.t = float(t)

    def __call__(self) -> float:
        return self.t


def member_desc_key(item: tuple[str, float]) -> tuple[float, list[int]]:
    """Sort key of a descending board with tie_break="member" (ties by member, reversed)."""
    return (-item[1], [-ord(c) for c in item[0]])


events_strategy = st.lists(
    st.tuples(
        st.sampled_from(["ann", "bob", "cid", "dee"]),
        st.integers(-20, 50) | st.floats(-1e3, 1e3, allow_nan=False),
        st.floats(0, 5 * HOUR),  # clock step before the event
        st.floats(0, 2 * HOUR),  # how far back its timestamp lies
    ),
    max_size=50,
)


@settings(max_examples=150, deadline=None)
@given(events=events_strategy, rebase_after=st.sampled_from([1.0, 3.0, REBASE_AFTER]))
def test_same_formula_recomputation_is_bit_identical(
    events: list[tuple[str, float, float, float]], rebase_after: float
) -> None:
    clock = FakeClock(0.0)
    tau = HOUR
    board = DecayedLeaderboard(
        tau=tau, t0=0.0, clock=clock, rebase_after=rebase_after, tie_break="member"
    )
    stored: dict[str, float] = {}
    t0 = 0.0
    for member, points, step, back in events:
        clock.t += step
        t = clock.t - back
        if (t - t0) / tau > rebase_after:  # the documented re-base rule, replayed
            scale = math.exp(-(t - t0) / tau)
            stored = {m: s * scale for m, s in stored.items()}
            t0 = t
        stored[member] = stored.get(member, 0) + points * math.exp((t - t0) / tau)
        board.add(member, points, t=t)
        assert board.t0 == t0
        assert dict(board.board.items()) == stored  # bit-identical
        board._check()
    expected = sorted(stored.items(), key=member_desc_key)
    assert board.board.items() == expected
    assert [board.rank(m) for m, _ in expected] == list(range(1, len(expected) + 1))
    factor = math.exp(-(clock.t - t0) / tau)
    assert board.items() == [(m, s * factor) for m, s in expected]


@settings(max_examples=100, deadline=None)
@given(
    events=st.lists(
        st.tuples(
            st.sampled_from(["ann", "bob", "cid", "dee", "eve"]),
            st.integers(1, 1000),
            st.floats(0, 10 * HOUR),
        ),
        min_size=1,
        max_size=60,
    )
)
def test_ranks_match_the_direct_formula_within_tolerance(
    events: list[tuple[str, int, float]],
) -> None:
    clock = FakeClock(1_796_000_000.0)
    half_life = 2 * HOUR
    board = DecayedLeaderboard(half_life=half_life, clock=clock, rebase_after=2.0)
    raw: list[tuple[str, int, float]] = []
    for member, points, step in events:
        clock.t += step
        board.add(member, points)
        raw.append((member, points, clock.t))
    tau = half_life / math.log(2)
    now = clock.t
    truth: dict[str, float] = {}
    for member, points, t in raw:
        truth[member] = truth.get(member, 0.0) + points * math.exp(-(now - t) / tau)
    got = board.items()
    assert {m for m, _ in got} == set(truth)
    for member, value in got:
        assert math.isclose(value, truth[member], rel_tol=1e-9)
    # the board's order is a valid descending order of the true values,
    # up to members whose true values are within the tolerance
    for (a, _), (b, _) in itertools.pairwise(got):
        assert truth[a] >= truth[b] * (1 - 1e-9)


def test_a_simulated_year_never_overflows() -> None:
    rng = random.Random(2026)
    start = 1_767_225_600.0  # 2026-01-01
    clock = FakeClock(start)
    half_life = HOUR
    board = DecayedLeaderboard(half_life=half_life, clock=clock)
    tau = half_life / math.log(2)
    # without re-basing the weight of an event a year in would be e^(year / tau)
    with pytest.raises(OverflowError):
        math.exp(365 * DAY / tau)
    last: dict[str, list[tuple[int, float]]] = {}
    members = [f"p{i}" for i in range(30)]
    for _ in range(365 * 24 * 3):  # an event every 20 minutes
        clock.t += 20 * 60
        member = rng.choice(members)
        points = rng.randint(1, 10**6)
        board.add(member, points)
        last.setdefault(member, []).append((points, clock.t))
    board._check()
    assert board.rebases >= 365 * 24 * math.log(2) / REBASE_AFTER - 1
    # brute force at the end: only the last few days matter (older ones are < 1e-100)
    now = clock.t
    truth = {
        m: sum(p * math.exp(-(now - t) / tau) for p, t in evs if now - t < 30 * DAY)
        for m, evs in last.items()
    }
    got = board.items()
    for member, value in got:
        assert math.isclose(value, truth[member], rel_tol=1e-9, abs_tol=1e-300)
    ranked = sorted(truth, key=lambda m: -truth[m])
    assert [m for m, _ in got[:10]] == ranked[:10]
    # reading far from t0 neither overflows nor raises
    assert 0 <= board.score(ranked[0], at=now + 2000 * tau) < 1e-300
    assert board.score(ranked[0], at=board.t0 - 1000 * tau) == math.inf


def test_rebase_keeps_ties_in_first_to_reach_order() -> None:
    clock = FakeClock(0.0)
    board = DecayedLeaderboard(half_life=HOUR, t0=0.0, clock=clock)
    board.add("bob", 10)
    board.add("ann", 10)  # same value, reached later
    board.add("cid", 5)
    assert [e.member for e in board.top()] == ["bob", "ann", "cid"]
    board.board.set_meta("ann", {"name": "Ann"})
    clock.t = 10 * HOUR
    board.rebase()
    assert board.t0 == 10 * HOUR and board.rebases == 1
    assert [e.member for e in board.top()] == ["bob", "ann", "cid"]
    assert board.board.meta("ann") == {"name": "Ann"}
    assert math.isclose(board.score("bob"), 10 / 2**10)
    board.rebase()  # same t0: nothing to do
    assert board.rebases == 1
    with pytest.raises(ValueError, match="forward"):
        board.rebase(0.0)


def test_reads_writes_and_views() -> None:
    clock = FakeClock(1000.0)
    board = DecayedLeaderboard(tau=100.0, clock=clock, rank_style="competition")
    assert board.t0 == 1000.0 and math.isclose(board.half_life, 100 * math.log(2))
    assert board.add_many({"ann": 4, "bob": 2}) == {"ann": 4.0, "bob": 2.0}
    assert board.add_many([("cid", 1), ("cid", 1)]) == {"cid": 2.0}
    assert board.set("dee", 8.0, t=1100.0)  # worth 8 at t=1100
    assert math.isclose(board.score("dee", at=1100.0), 8.0)
    assert math.isclose(board.score("dee"), 8.0 * math.e)
    assert board.rank("bob") == 3 and board.rank("cid") == 3  # competition ranks tie
    clock.t = 1100.0
    assert math.isclose(board.factor(), math.exp(-1))
    entry = board.entry("ann")
    assert entry is not None and math.isclose(entry.score, 4 / math.e) and entry.rank == 2
    assert board.entry("zed") is None and board.score("zed", -1) == -1
    found = board.entries(["bob", "zed"])
    assert found[1] is None and found[0] is not None and found[0].rank == 3
    assert [e.member for e in board.by_rank(2, 3)] == ["ann", "bob"]
    assert [e.member for e in board.page(2, 2)] == ["bob", "cid"]
    assert [e.member for e in board.around("ann", 1, 1)] == ["dee", "ann", "bob"]
    assert [round(e.score, 9) for e in board.top(1, at=1000.0)] == [round(8 * math.e, 9)]
    assert len(board) == 4 and "ann" in board
    assert board.remove("ann") and "ann" not in board
    assert "DecayedLeaderboard(tau=100.0" in repr(board)
    board._check()


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        DecayedLeaderboard()
    with pytest.raises(ValueError, match="exactly one"):
        DecayedLeaderboard(half_life=1, tau=1)
    with pytest.raises(ValueError, match="positive"):
        DecayedLeaderboard(tau=-1)
    with pytest.raises(TypeError):
        DecayedLeaderboard(tau="1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="order"):
        DecayedLeaderboard(tau=1, order="asc")
    with pytest.raises(ValueError, match="rebase_after"):
        DecayedLeaderboard(tau=1, rebase_after=800)
    board = DecayedLeaderboard(tau=1, t0=0, clock=lambda: 0.0)
    with pytest.raises(ValueError, match="finite"):
        board.add("ann", math.inf)
    with pytest.raises(TypeError):
        board.add("ann", "3")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="finite"):
        board.add("ann", 1, t=math.nan)
    with pytest.raises(OverflowError, match="too large"):
        board.add("ann", 1e308, t=50.0)  # weight e^50 * 1e308 is not a double
    assert "ann" not in board


def test_durable_board_replays_decay_exactly(tmp_path: Path) -> None:
    clock = FakeClock(1_796_000_000.0)
    path = tmp_path / "hot"
    rng = random.Random(7)
    options: dict[str, Any] = {"half_life": HOUR, "clock": clock, "fsync": "never"}
    with DecayedLeaderboard.open(path, rebase_after=3.0, **options) as board:
        for _ in range(200):
            clock.t += rng.uniform(0, 1200)
            board.add(rng.choice("abcdefg"), rng.randint(1, 100))
        board.board.set_meta("a", {"team": "red"})
        stored, t0, rebases = board.board.items(), board.t0, board.rebases
    assert rebases > 3
    assert [p.name for p in path.iterdir() if p.name != LOCK_NAME] == [f"epoch-{t0!r}"]
    with DecayedLeaderboard.open(path, rebase_after=3.0, **options) as again:
        assert again.t0 == t0
        assert again.board.items() == stored  # bit-identical stored scores and order
        assert again.board.meta("a") == {"team": "red"}
        again._check()
        # a crash mid re-base leaves a staging directory and maybe the old base
        (path / ".tmp-epoch-5.0").mkdir()
        older = path / "epoch-1.0"
        older.mkdir()
    with DecayedLeaderboard.open(path, rebase_after=3.0, **options) as third:
        assert third.board.items() == stored
        assert sorted(p.name for p in path.iterdir() if p.name != LOCK_NAME) == [f"epoch-{t0!r}"]


def test_set_refuses_a_value_whose_stored_score_would_not_be_finite() -> None:
    board = DecayedLeaderboard(tau=1.0, t0=0.0, clock=lambda: 50.0)
    board.set("ann", 1.0)
    before = board.board.items()
    with pytest.raises(OverflowError, match="too large"):
        board.set("ann", 1e300)  # stored: 1e300 * e^50, not a double
    assert board.board.items() == before
    board._check()


@pytest.mark.parametrize(
    "batch",
    [[("bob", 1), ("cid", math.nan)], [("bob", 1), ("cid", math.inf)], [("bob", 1), ("cid", "2")]],
)
def test_a_batch_with_a_bad_item_changes_nothing_even_when_it_is_due_a_rebase(
    batch: list[tuple[str, Any]],
) -> None:
    board = DecayedLeaderboard(tau=1.0, t0=0.0, clock=lambda: 100.0)  # 100 tau: due a re-base
    board.add("ann", 3, t=1.0)
    before = (board.t0, board.rebases, board.board, board.board.items())
    with pytest.raises((TypeError, ValueError)):
        board.add_many(batch)
    assert (board.t0, board.rebases, board.board, board.board.items()) == before
    board._check()


def tree(path: Path) -> list[tuple[str, int]]:
    """Every file under ``path`` with its size."""
    return sorted((str(p.relative_to(path)), p.stat().st_size) for p in path.rglob("*"))


@pytest.mark.parametrize("durable", [False, True], ids=["memory", "durable"])
@pytest.mark.parametrize(
    "write",
    [
        pytest.param(lambda b: b.add_many([("bob", 1e308), ("bob", 1e308)]), id="batch-sum"),
        pytest.param(lambda b: b.add_many([("bob", 1), ("cid", 10**400)]), id="batch-big-int"),
        pytest.param(lambda b: b.add("bob", 10**400), id="add-big-int"),
        pytest.param(lambda b: b.set("bob", -(10**400)), id="set-big-int"),
        pytest.param(lambda b: b.add(["bob"], 1), id="add-bad-member"),
        pytest.param(lambda b: b.add_many([("bob", 1), (["bob"], 1)]), id="batch-bad-member"),
    ],
)
def test_a_write_that_fails_changes_nothing_even_when_it_is_due_a_rebase(
    write: Any, durable: bool, tmp_path: Path
) -> None:
    # Two 1e308 points for one member at the new base add up to inf: the
    # error used to come after the re-base, which had already moved t0 and
    # (on a durable board) replaced the epoch directory.
    clock = FakeClock(1.0)
    path = tmp_path / "hot"
    if durable:
        board = DecayedLeaderboard.open(path, tau=1.0, clock=clock, fsync="never")
    else:
        board = DecayedLeaderboard(tau=1.0, t0=0.0, clock=clock)
    board.add("ann", 3)
    clock.t = 100.0  # 99 tau later: a write now is due a re-base
    if durable:
        board.board.flush()  # type: ignore[attr-defined]
    before = (board.t0, board.rebases, board.board, board.board.items())
    files = tree(path) if durable else []
    with pytest.raises((OverflowError, TypeError), match=r"'bob'|'cid'|member must be"):
        write(board)
    assert (board.t0, board.rebases, board.board, board.board.items()) == before
    if durable:
        assert tree(path) == files
    board._check()
    board.add("bob", 1)  # a good write re-bases as before
    assert board.rebases == 1 and board.t0 == 100.0
    board.close()


@pytest.mark.parametrize("silence", [680.0, 700.0])
def test_a_rebase_after_a_long_silence_keeps_old_values_to_the_direct_formula(
    silence: float,
) -> None:
    """The re-base factor e^-(60 + silence) underflows (to a subnormal, or to
    0 past ~745), but the old members' decayed values are normal doubles."""
    clock = FakeClock(60.0)
    board = DecayedLeaderboard(tau=1.0, t0=0.0, clock=clock, tie_break="member")
    board.add("ann", 2)  # stored 2 * e^60
    board.add("bob", 1)
    clock.t += silence
    board.add("cid", 1)  # re-bases to now
    assert board.rebases == 1
    for member, points in (("ann", 2), ("bob", 1)):
        assert math.isclose(board.score(member), points * math.exp(-silence), rel_tol=1e-12)
    assert [m for m, _ in board.items()] == ["cid", "ann", "bob"]  # no tie at 0 to reorder
    board._check()


def test_durable_board_with_an_int_clock_keeps_its_scores_on_reopen(tmp_path: Path) -> None:
    """A base time that is an int (an int clock, or ``rebase(150)``) names its
    epoch directory so that reopening finds it again."""
    path = tmp_path / "hot"
    options: dict[str, Any] = {"tau": 10.0, "fsync": "never"}
    with DecayedLeaderboard.open(path, clock=lambda: 100, **options) as board:
        board.add("ann", 5)
        stored = board.board.items()
    for _ in range(2):  # the second reopen used to delete the first base
        with DecayedLeaderboard.open(path, clock=lambda: 100, **options) as again:
            assert (again.t0, again.board.items()) == (100.0, stored)
    with DecayedLeaderboard.open(path, clock=lambda: 160, **options) as board:
        board.rebase(150)
        stored = board.board.items()
    with DecayedLeaderboard.open(path, clock=lambda: 160, **options) as again:
        assert (again.t0, again.board.items()) == (150.0, stored)
        assert [p.name for p in path.iterdir() if p.name != LOCK_NAME] == ["epoch-150.0"]


class _Killed(BaseException):
    """Stands for the process dying (nothing after it runs)."""


def test_a_crash_while_deleting_the_old_base_leaves_no_half_deleted_epoch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed while a re-base deletes the old base: no ``epoch-*`` directory
    is left half deleted (one that ``rankengine verify`` calls damaged), and
    the reopen keeps the new base."""
    from rankengine.durable.verify import verify

    clock = FakeClock(1_796_000_000.0)
    path = tmp_path / "hot"
    options: dict[str, Any] = {"tau": 10.0, "clock": clock, "fsync": "never", "rebase_after": 2.0}
    board = DecayedLeaderboard.open(path, **options)
    board.add("ann", 5)

    def killed_midway(doomed: Any, *args: Any, **kwargs: Any) -> None:
        (Path(doomed) / "log-00000000000000000001.seg").unlink()  # half deleted
        raise _Killed

    monkeypatch.setattr("rankengine.timed.epochs.shutil.rmtree", killed_midway)
    clock.t += 100.0
    with pytest.raises(_Killed):
        board.add("bob", 1)  # re-bases: the new base is in place, the old one goes
    monkeypatch.undo()
    board.close()
    for epoch in path.glob("epoch-*"):
        report = verify(str(epoch))
        assert report.healthy, [str(f) for f in report.findings]
    with DecayedLeaderboard.open(path, **options) as again:
        assert again.t0 == clock.t
        assert [m for m, _ in again.items()] == ["ann"]
        again._check()
    assert [p.name for p in path.iterdir() if p.name != LOCK_NAME] == [f"epoch-{clock.t!r}"]


def test_an_event_stamped_far_ahead_never_moves_the_base_past_now() -> None:
    now = 1_796_000_000.0
    board = DecayedLeaderboard(half_life=HOUR, t0=now - 100 * HOUR, clock=lambda: now)
    board.add("ann", 100, t=now)  # 100 half-lives after t0: re-bases to now
    assert board.t0 == now
    tau = board.tau
    # ahead by 70 tau, so due a re-base: worth 100 * e^70 now, as the formula says
    ahead = board.add("early", 1, t=now + 70 * tau)
    assert math.isclose(ahead, math.exp(70), rel_tol=1e-9)
    assert board.t0 <= now
    assert math.isclose(board.score("ann"), 100, rel_tol=1e-12)
    assert math.isclose(board.add("bob", 50), 50, rel_tol=1e-12)  # present events keep counting
    board._check()


def test_an_event_whose_value_now_is_not_a_double_is_refused_and_changes_nothing() -> None:
    now = 1_796_000_000.0
    board = DecayedLeaderboard(half_life=HOUR, t0=now - 100 * HOUR, clock=lambda: now)
    board.add("ann", 100)
    before = (board.t0, board.rebases, board.board.items())
    for t in (now * 1000, now + 800 * board.tau):  # a clock in milliseconds; ~550 half-lives
        with pytest.raises(OverflowError, match="ahead"):
            board.add("typo", 1, t=t)
        with pytest.raises(OverflowError, match="ahead"):
            board.add_many({"typo": 1}, t=t)
        with pytest.raises(OverflowError, match="ahead"):
            board.set("typo", 1, t=t)
    assert (board.t0, board.rebases, board.board.items()) == before
    assert board.score("ann") == 100
    assert math.isclose(board.add("bob", 50), 50, rel_tol=1e-12)
    board._check()


@pytest.mark.parametrize("t", [10**400, -(10**400)])
def test_a_time_beyond_the_float_range_is_a_clear_value_error(t: int) -> None:
    board = DecayedLeaderboard(tau=1.0, t0=0.0, clock=lambda: 0.0)
    board.add("ann", 1)
    with pytest.raises(ValueError, match="finite number of POSIX seconds"):
        board.add("ann", 1, t=t)
    with pytest.raises(ValueError, match="finite number of POSIX seconds"):
        board.score("ann", at=t)
    with pytest.raises(ValueError, match="finite number of POSIX seconds"):
        board.rebase(t)
    assert board.board.items() == [("ann", 1.0)]


@settings(max_examples=100, deadline=None)
@given(
    events=st.lists(
        st.tuples(
            st.sampled_from(["ann", "bob", "cid", "dee"]),
            st.integers(1, 1000),
            st.floats(-2 * HOUR, 10 * HOUR),  # clock step (backwards too)
            st.floats(-3 * HOUR, 3 * HOUR),  # how far back the event lies (ahead if < 0)
        ),
        min_size=1,
        max_size=40,
    ),
    read_at=st.floats(-5 * HOUR, 20 * HOUR),
)
def test_values_and_order_match_the_direct_formula_at_any_time(
    events: list[tuple[str, int, float, float]], read_at: float
) -> None:
    """``points * 2**(-(now - t) / half_life)`` summed per member, for events
    stamped before or after the clock, with the clock stepping back and
    re-bases on the way: values agree to the documented tolerance and the
    order is one of the model's at any reading time."""
    start = 1_796_000_000.0
    clock = FakeClock(start)
    half_life = HOUR
    board = DecayedLeaderboard(half_life=half_life, clock=clock, rebase_after=2.0)
    raw: list[tuple[str, int, float]] = []
    latest = start
    for member, points, step, back in events:
        clock.t += step
        latest = max(latest, clock.t)
        t = clock.t - back
        board.add(member, points, t=t)
        raw.append((member, points, t))
        assert board.t0 <= latest  # a re-base never moves the base past the clock
    at = clock.t + read_at
    truth: dict[str, float] = {}
    for member, points, t in raw:
        truth[member] = truth.get(member, 0.0) + points * 2 ** (-(at - t) / half_life)
    got = board.items(at=at)
    assert {m for m, _ in got} == set(truth)
    for member, value in got:
        assert math.isclose(value, truth[member], rel_tol=1e-9)
    for (a, _), (b, _) in itertools.pairwise(got):
        assert truth[a] >= truth[b] * (1 - 1e-9)
    assert [board.rank(m) for m, _ in got] == list(range(1, len(got) + 1))
    board._check()


def test_events_stamped_ahead_do_not_rebase_on_every_write() -> None:
    """A client whose clock runs more than 64 time constants ahead made
    every write re-base (to a now a second later than the last base): an
    O(N log N) rewrite, and a new epoch directory on a durable board, per
    write.  The base only needs to move when now itself is far past it."""
    now = [0.0]
    board = DecayedLeaderboard(half_life=HOUR, t0=0.0, clock=lambda: now[0])
    for i in range(100):
        board.add(f"m{i}", 1)
    stamps = []
    for _ in range(10):
        now[0] += 1.0
        stamps.append(now[0] + 100 * HOUR)  # a clock 100 hours ahead
        board.add("fast", 1, t=stamps[-1])
    assert board.rebases == 0 and board.t0 == 0.0

    def direct(at: float) -> float:
        return sum(2 ** (-(at - t) / HOUR) for t in stamps)

    assert math.isclose(board.score("fast"), direct(now[0]), rel_tol=1e-12)
    assert math.isclose(board.score("m0"), 2 ** (-now[0] / HOUR), rel_tol=1e-12)
    now[0] += (REBASE_AFTER + 1) * board.tau  # now is due a re-base: the next write does it
    board.add("ann", 1, t=now[0] + 100 * HOUR)
    assert board.rebases == 1 and board.t0 == now[0]
    assert math.isclose(board.score("fast"), direct(now[0]), rel_tol=1e-12)
    assert [m for m, _ in board.items()[:2]] == ["ann", "fast"]
    board._check()


decay_ops = st.lists(
    st.tuples(
        st.sampled_from(["add", "add", "add_many", "set", "remove", "rebase", "reopen"]),
        st.sampled_from(["ann", "bob", "cid", "dee"]),
        st.sampled_from([-3, -1, 0, 1, 2, 5]),  # small ints: equal sums, so ties
        st.sampled_from([0.0, 0.0, HOUR, 3 * HOUR, 50 * HOUR]),  # clock step
        st.sampled_from([0.0, 0.0, HOUR / 2, -HOUR / 2, -100 * HOUR]),  # back (ahead if < 0)
    ),
    max_size=30,
)


@settings(max_examples=60, deadline=None)
@given(ops=decay_ops, durable=st.booleans(), rebase_after=st.sampled_from([1.0, 3.0, REBASE_AFTER]))
def test_reads_equal_a_model_with_first_to_reach_ties_across_rebases_and_reopens(
    tmp_path_factory: pytest.TempPathFactory,
    ops: list[tuple[str, str, int, float, float]],
    durable: bool,
    rebase_after: float,
) -> None:
    """Stored scores replayed with the documented formula and re-base rule,
    ties ranked by who reached the score first (a re-base keeps that order),
    and every read (top, rank, score, page, by_rank, around, entries) equal
    to a sort of the model, in memory and across reopens of a durable board."""
    clock = FakeClock(1_796_000_000.0)
    path = tmp_path_factory.mktemp("decayed")

    def make() -> DecayedLeaderboard:
        if durable:
            return DecayedLeaderboard.open(
                path, tau=HOUR, clock=clock, fsync="never", rebase_after=rebase_after
            )
        return DecayedLeaderboard(tau=HOUR, t0=clock.t, clock=clock, rebase_after=rebase_after)

    board = make()
    t0 = clock.t
    stored: dict[str, float] = {}
    reached: dict[str, int] = {}  # a logical clock: when the member's score last changed
    ticks = itertools.count()

    def rebase(target: float) -> None:
        nonlocal t0
        scale = math.exp(-(target - t0) / HOUR)
        stored.update({m: s * scale for m, s in stored.items()})
        t0 = target

    def put(member: str, score: float) -> None:
        if stored.get(member) != score:
            reached[member] = next(ticks)
        stored[member] = score

    try:
        for op, member, points, step, back in ops:
            clock.t += step
            t = clock.t - back
            if op in ("add", "add_many", "set"):
                target = min(t, clock.t)
                if target > t0 and ((target - t0) / HOUR > rebase_after or (t - t0) / HOUR > 700):
                    rebase(target)
                weight = math.exp((t - t0) / HOUR)
            if op == "add":
                put(member, stored.get(member, 0.0) + points * weight)
                board.add(member, points, t=t)
            elif op == "add_many":
                pair = [member, "eve"]
                for m in pair:
                    put(m, stored.get(m, 0.0) + points * weight)
                board.add_many([(m, points) for m in pair], t=t)
            elif op == "set":
                put(member, points * weight)
                board.set(member, points, t=t)
            elif op == "remove":
                stored.pop(member, None)
                reached.pop(member, None)
                board.remove(member)
            elif op == "rebase":
                if clock.t > t0:
                    rebase(clock.t)
                board.rebase()
            elif durable:
                board.close()
                board = make()
            assert board.t0 == t0
            assert dict(board.board.items()) == stored  # bit-identical
            order = sorted(stored, key=lambda m: (-stored[m], reached[m]))
            factor = math.exp(-(clock.t - t0) / HOUR)
            assert board.items() == [(m, stored[m] * factor) for m in order]
            assert [(e.member, e.rank) for e in board.top(10)] == [
                (m, i) for i, m in enumerate(order, 1)
            ]
            assert [board.rank(m) for m in order] == list(range(1, len(order) + 1))
            assert [board.score(m) for m in order] == [stored[m] * factor for m in order]
            second = min(2, max(1, -(-len(order) // 2)))  # a page past the end: the last
            assert [e.member for e in board.page(2, 2)] == order[2 * second - 2 : 2 * second]
            assert [e.member for e in board.by_rank(2, 3)] == order[1:3]
            if order:
                assert [e.member for e in board.around(order[-1], 1, 0)] == order[-2:]
            found = board.entries(["ann", "zed"])
            assert [None if e is None else e.member for e in found] == [
                "ann" if "ann" in stored else None,
                None,
            ]
        board._check()
    finally:
        board.close()


def test_compact_snapshots_the_stored_scores(tmp_path: Path) -> None:
    clock = FakeClock(1_000_000.0)
    path = tmp_path / "decayed"
    options: dict[str, Any] = {"half_life": HOUR, "clock": clock, "fsync": "never"}
    with DecayedLeaderboard.open(path, **options) as board:
        for i, member in enumerate(["ann", "bob", "cid"]):
            board.add(member, 10 * (i + 1))
        stored = board.board.items()
        seq = board.compact()
        assert seq == board.board.last_seq == 3
        epoch = path / f"epoch-{board.t0!r}"
        assert [s for _, s in read_manifest(str(epoch)).snapshots] == [3]
    assert board.compact() is None  # closed
    with DecayedLeaderboard.open(path, **options) as again:
        assert again.board.items() == stored
    assert DecayedLeaderboard(half_life=HOUR).compact() is None  # in memory


def test_rank_waits_for_a_rebase_in_progress() -> None:
    """Every read takes the board's lock, which a re-base holds while it
    swaps the board of stored scores; ``rank`` read the board without it."""
    board = DecayedLeaderboard(half_life=HOUR, t0=0, clock=lambda: 0.0)
    board.add("ann", 1)
    answers: list[int | None] = []
    with board._lock:  # as a re-base holds it
        reader = threading.Thread(target=lambda: answers.append(board.rank("ann")))
        reader.start()
        reader.join(timeout=0.2)
        assert reader.is_alive() and answers == []
    reader.join()
    assert answers == [1]


def test_an_empty_batch_is_no_write_and_no_rebase(tmp_path: Path) -> None:
    """``add_many([])`` changes nothing, even when the board is due a
    re-base: on a durable board a re-base makes a new epoch directory."""
    clock = FakeClock(0.0)
    path = tmp_path / "decayed"
    with DecayedLeaderboard.open(path, half_life=HOUR, clock=clock, fsync="never") as board:
        board.add("ann", 1)
        clock.t = 100 * HOUR  # far past REBASE_AFTER time constants
        before = (board.t0, board.rebases, sorted(p.name for p in path.iterdir()))
        assert board.add_many([]) == {} and board.add_many({}) == {}
        assert (board.t0, board.rebases, sorted(p.name for p in path.iterdir())) == before
        board.add_many([("bob", 1)])  # a real write re-bases as before
        assert board.rebases == 1


# ----------------------------------------------------------------------
# The writes a Leaderboard has: each equals a sequence of existing calls
# ----------------------------------------------------------------------
def _twins(durable: bool, root: Path, clock: FakeClock) -> tuple[Any, Any, Any]:
    """Two decayed boards on one clock (``a`` gets the new write, ``b`` the
    equivalent calls), each holding the same events with ties, and a
    function that reopens both (durable) or returns them as they are."""

    def make(name: str) -> DecayedLeaderboard:
        if durable:
            return DecayedLeaderboard.open(
                root / name, half_life=HOUR, clock=clock, fsync="never", rebase_after=3.0
            )
        return DecayedLeaderboard(half_life=HOUR, t0=clock.t, clock=clock, rebase_after=3.0)

    a, b = make("a"), make("b")
    start = clock.t
    for board in (a, b):
        clock.t = start
        board.add_many({"ann": 8, "bob": 4, "cid": 4, "dee": 2})
        clock.t = start + HOUR
        board.add_many({"eve": 2, "fay": 1, "gus": 3.5})  # eve ties bob, after him
        board.add("hal", 1, t=start)
        board.board.set_meta("bob", {"team": "red"})
        board.board.set_meta("fay", {"team": "blue"})

    def reopen(pair: tuple[Any, Any]) -> tuple[Any, Any]:
        if not durable:
            return pair
        for board in pair:
            board.close()
        return make("a"), make("b")

    return a, b, reopen


def _same(a: DecayedLeaderboard, b: DecayedLeaderboard) -> None:
    """The same base, stored scores (bit for bit, in rank order), metadata
    and decayed reads."""
    assert (a.t0, a.rebases) == (b.t0, b.rebases)
    assert a.board.items() == b.board.items()
    assert {m: a.board.meta(m) for m in a.board} == {m: b.board.meta(m) for m in b.board}
    assert a.top(20, with_meta=True) == b.top(20, with_meta=True)
    a._check()
    b._check()


def _removed_in_turn(board: DecayedLeaderboard, entries: list[Any]) -> int:
    return sum(board.remove(entry.member) for entry in entries)


def _popped_in_turn(board: DecayedLeaderboard, entries: list[Any]) -> list[Any]:
    """``entries`` (read before), after removing each of them in turn."""
    assert _removed_in_turn(board, entries) == len(entries)
    return entries


def _with_meta(board: DecayedLeaderboard, entries: list[Any]) -> list[Any]:
    return [e._replace(meta=board.board.meta(e.member)) for e in entries]


#: Each new write on ``a`` and the existing calls that do the same on ``b``;
#: both return values must be equal.
_EQUIVALENT_WRITES: dict[str, tuple[Any, Any]] = {
    "set_many": (
        lambda a: a.set_many([("ann", 1.5), ("zed", 6), ("bob", 4), ("ann", 2)]),
        # distinct members whose stored score changed: ann, zed, bob
        lambda b: len(
            {m for m, v in [("ann", 1.5), ("zed", 6), ("bob", 4), ("ann", 2)] if b.set(m, v)}
        ),
    ),
    "set_many-at-t": (
        lambda a: a.set_many({"cid": 9, "ivy": 3}, t=a.t0 + 600),
        lambda b: sum(b.set(m, v, t=b.t0 + 600) for m, v in {"cid": 9, "ivy": 3}.items()),
    ),
    "set_many-empty": (lambda a: a.set_many([]), lambda b: 0),
    "set_meta": (
        lambda a: [a.set_meta("ann", {"n": 1}), a.set_meta("bob", None)],
        lambda b: [b.board.set_meta("ann", {"n": 1}), b.board.set_meta("bob", None)],
    ),
    "remove_many": (
        lambda a: a.remove_many(["bob", "zed", "fay", "bob"]),
        lambda b: sum(b.remove(m) for m in ["bob", "zed", "fay", "bob"]),
    ),
    "pop_best": (
        lambda a: a.pop_best(3, with_meta=True),
        lambda b: _popped_in_turn(b, b.top(3, style="unique", with_meta=True)),
    ),
    "pop_best-all": (
        lambda a: a.pop_best(99),
        lambda b: _popped_in_turn(b, b.top(99, style="unique")),
    ),
    "pop_worst": (
        lambda a: a.pop_worst(4, with_meta=True),
        lambda b: _popped_in_turn(b, _with_meta(b, b.by_rank(-4, -1, style="unique"))[::-1]),
    ),
    "keep_top": (
        lambda a: a.keep_top(3),
        lambda b: _removed_in_turn(b, b.by_rank(4, -1)),
    ),
    "remove_by_rank": (
        lambda a: a.remove_by_rank(2, 5),
        lambda b: _removed_in_turn(b, b.by_rank(2, 5)),
    ),
    "remove_by_rank-from-bottom": (
        lambda a: a.remove_by_rank(-2, -1),
        lambda b: _removed_in_turn(b, b.by_rank(-2, -1)),
    ),
}


@pytest.mark.parametrize("durable", [False, True], ids=["memory", "durable"])
@pytest.mark.parametrize("name", list(_EQUIVALENT_WRITES))
def test_each_new_write_equals_the_existing_calls_it_stands_for(
    tmp_path: Path, name: str, durable: bool
) -> None:
    clock = FakeClock(1_796_000_000.0)
    a, b, reopen = _twins(durable, tmp_path, clock)
    try:
        _same(a, b)
        clock.t += 1800  # decayed reads and popped scores at this now, on both
        new, old = _EQUIVALENT_WRITES[name]
        got, expected = new(a), old(b)
        assert got == expected
        if name.startswith("pop_"):
            assert got and all(e.member not in a for e in got)
        _same(a, b)
        a, b = reopen((a, b))
        _same(a, b)
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize("durable", [False, True], ids=["memory", "durable"])
def test_set_many_due_a_rebase_equals_a_loop_of_set(tmp_path: Path, durable: bool) -> None:
    """The first set of the loop re-bases; the batch re-bases once, to the
    same base, before writing every value with the same weight."""
    clock = FakeClock(1_796_000_000.0)
    a, b, reopen = _twins(durable, tmp_path, clock)
    try:
        clock.t += 10 * HOUR  # more than rebase_after (3) time constants after t0
        rebases = a.rebases
        batch = [("ann", 1.0), ("zed", 0.25), ("cid", 7.0)]
        for t in (clock.t - 1800, clock.t):
            assert a.set_many(batch, t=t) == sum(b.set(m, v, t=t) for m, v in batch)
            _same(a, b)
        assert a.rebases == rebases + 1 and a.t0 == clock.t - 1800
        assert a.score("zed", at=clock.t) == pytest.approx(0.25, rel=1e-12)
        a, b = reopen((a, b))
        _same(a, b)
    finally:
        a.close()
        b.close()


def test_popped_scores_are_decayed_values_at_now() -> None:
    clock = FakeClock(0.0)
    board = DecayedLeaderboard(half_life=HOUR, t0=0.0, clock=clock)
    board.add_many({"ann": 8.0, "bob": 4.0, "cid": 2.0})
    clock.t = 2 * HOUR  # two half-lives: a quarter is left
    best = board.pop_best()
    assert [(e.member, e.rank) for e in best] == [("ann", 1)]
    assert best[0].score == pytest.approx(2.0, rel=1e-12)
    worst = board.pop_worst(2)
    assert [(e.member, e.rank) for e in worst] == [("cid", 2), ("bob", 1)]
    assert [e.score for e in worst] == pytest.approx([0.5, 1.0], rel=1e-12)
    assert len(board) == 0


@pytest.mark.parametrize("durable", [False, True], ids=["memory", "durable"])
@pytest.mark.parametrize(
    ("write", "error"),
    [
        (lambda b: b.set_many([("ann", 1), ("bob", math.nan)]), ValueError),
        (lambda b: b.set_many([("ann", 1), ("bob", "2")]), TypeError),
        (lambda b: b.set_many([("ann", 1), (["bob"], 2)]), TypeError),
        (lambda b: b.set_many([("ann", 1), ("bob", 10**400)]), OverflowError),
        (lambda b: b.set_many([("ann", 1), "bob"]), TypeError),
        (lambda b: b.set_many([("ann", 1)], t=math.inf), ValueError),
        (lambda b: b.set_meta("zed", {"n": 1}), KeyError),
        (lambda b: b.set_meta("ann", {"n": 1j}), TypeError),
        (lambda b: b.remove_many(["ann", ["bob"]]), TypeError),
        (lambda b: b.pop_best(-1), ValueError),
        (lambda b: b.pop_worst(1.0), TypeError),
        (lambda b: b.keep_top(-1), ValueError),
        (lambda b: b.remove_by_rank(0, 2), ValueError),
        (lambda b: b.remove_by_rank(1, "2"), TypeError),
    ],
)
def test_a_new_write_given_bad_input_changes_nothing(
    tmp_path: Path, write: Any, error: type[Exception], durable: bool
) -> None:
    clock = FakeClock(1.0)
    path = tmp_path / "hot"
    if durable:
        board = DecayedLeaderboard.open(path, tau=1.0, clock=clock, fsync="never")
    else:
        board = DecayedLeaderboard(tau=1.0, t0=0.0, clock=clock)
    try:
        board.add_many({"ann": 3, "bob": 2})
        board.board.set_meta("ann", {"n": 0})
        clock.t = 100.0  # 99 tau later: a set_many now is due a re-base
        if durable:
            board.board.flush()  # type: ignore[attr-defined]
        before = (board.t0, board.rebases, board.board, board.board.items())
        files = tree(path) if durable else []
        with pytest.raises(error):
            write(board)
        assert (board.t0, board.rebases, board.board, board.board.items()) == before
        assert board.board.meta("ann") == {"n": 0}
        if durable:
            assert tree(path) == files
        board._check()
    finally:
        board.close()


def test_meta_reads_a_members_metadata_as_a_copy() -> None:
    board = DecayedLeaderboard(tau=10.0, t0=0, clock=lambda: 0.0)
    board.add("ann", 3)
    board.set_meta("ann", {"name": "Ann", "tags": ["a"]})
    got = board.meta("ann")
    assert got == {"name": "Ann", "tags": ["a"]}
    assert got is not None
    got["tags"].append("b")  # a copy: the board keeps its own
    assert board.meta("ann") == {"name": "Ann", "tags": ["a"]}
    assert board.meta("bob") is None
    with pytest.raises(TypeError):
        board.meta(["not", "a", "member"])  # type: ignore[arg-type]


#: The decayed board's reads that take ``with_meta=``, each called with
#: ``kw`` on the decayed board or on a plain board of its stored scores.
_DECAYED_META_READS: dict[str, Any] = {
    "top": lambda b, **kw: b.top(5, **kw),
    "entry": lambda b, **kw: [b.entry("bob", **kw)],
    "entries": lambda b, **kw: b.entries(["cid", "nobody", "ann", "bob"], **kw),
    "by_rank": lambda b, **kw: b.by_rank(2, -1, style="dense", **kw),
    "page": lambda b, **kw: b.page(1, 2, **kw),
    "page-2": lambda b, **kw: b.page(2, 1, **kw),
    "around": lambda b, **kw: b.around("bob", 1, 1, **kw),
    "around-fill": lambda b, **kw: b.around("ann", 0, 2, fill=True, **kw),
}


@pytest.mark.parametrize("at", [None, 5 * HOUR], ids=["now", "at"])
@pytest.mark.parametrize("read", list(_DECAYED_META_READS))
def test_decayed_reads_return_the_metadata_on_request(read: str, at: float | None) -> None:
    # entries, by_rank, page and around took no with_meta=, unlike top and entry
    board = DecayedLeaderboard(half_life=HOUR, t0=0, clock=FakeClock(2 * HOUR))
    board.add_many({"ann": 40, "bob": 20, "cid": 10}, t=0.0)
    board.set_meta("ann", {"name": "Ann", "tags": ["a"]})
    board.set_meta("bob", {"name": "Bob"})
    plain = Leaderboard()
    plain.set_many(board.board.items())  # the stored scores
    plain.set_meta("ann", {"name": "Ann", "tags": ["a"]})
    plain.set_meta("bob", {"name": "Bob"})
    call = _DECAYED_META_READS[read]
    kw = {} if at is None else {"at": at}

    def decayed(rows: list[Any]) -> list[Any]:
        """``rows`` of the plain board, their scores the decayed values."""
        return [None if e is None else e._replace(score=board.score(e.member, **kw)) for e in rows]

    got = call(board, with_meta=True, **kw)
    assert got == decayed(call(plain, with_meta=True))
    assert any(e is not None and e.meta is not None for e in got)
    assert all(e is None or e.score < plain.score(e.member) for e in got)  # decayed
    for e in got:  # copies: changing them changes nothing
        if e is not None and e.meta is not None:
            e.meta["name"] = "changed"
            e.meta.setdefault("tags", []).append("b")
    assert call(board, with_meta=True, **kw) == decayed(call(plain, with_meta=True))
    assert board.meta("ann") == {"name": "Ann", "tags": ["a"]}
    assert call(board, **kw) == decayed(call(plain))
    assert all(e is None or e.meta is None for e in call(board, **kw))
    assert call(board, with_meta=False, **kw) == call(board, **kw)
    board._check()
