"""Replaying a log applies the tail's net effect (each member's last
record), not record after record: the board must come out exactly as the
writes left it, at the end and at every point in time.

The cases aim at what a net replay could get wrong: a member deleted and
put back (its metadata must go), metadata set between a put and a delete,
a board emptied and refilled with members of another type (on a board that
breaks ties by member), long runs of equal scores (the tie map), tails
small enough to be applied change by change and large enough to be
bulk-loaded, and a snapshot in the middle, so that the tail deletes and
moves members the snapshot holds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import untied_far_members
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from listindex import ListIndex

from rankengine import Leaderboard
from rankengine.board.changes import DEL, PUT
from rankengine.durable.board import DurableLeaderboard, rebuild
from rankengine.durable.eventlog import CorruptionError


@pytest.fixture(
    params=["sortedlist", "skiplist", ListIndex], ids=["sortedlist", "skiplist", "reference"]
)
def backend(request: pytest.FixtureRequest) -> Any:
    """Both backends and the reference index (a plain sorted list)."""
    return request.param


def state(board: Leaderboard) -> tuple[Any, ...]:
    """Everything a replay must reproduce: order, scores, ranks, metadata, clock."""
    board._check()
    items = board.items()
    ranks = [(board.rank(m, style="dense"), board.rank(m, style="competition")) for m, _ in items]
    return (items, ranks, [board.meta(m) for m, _ in items], board.clock)


_NAMES = [f"m{i}" for i in range(4)]
_NUMBERS = list(range(4))

#: One write: (kind, member index, value).  Scores come from a small set, so
#: that runs of equal scores form.
_OPS = st.lists(
    st.tuples(
        st.sampled_from(["set", "incr", "remove", "meta", "unmeta", "clear", "compact"]),
        st.integers(0, 3),
        st.sampled_from([0, 1, 2, 2.0, -1]),
    ),
    max_size=30,
)


def _write(board: Leaderboard, op: tuple[str, int, Any], members: list[Any]) -> None:
    kind, i, value = op
    member = members[i]
    if kind == "set":
        board.set(member, value)
    elif kind == "incr":
        board.incr(member, value)
    elif kind == "remove":
        board.remove(member)
    elif kind == "meta":
        if member in board:
            board.set_meta(member, {"v": value})
    elif kind == "unmeta":
        if member in board:
            board.set_meta(member, None)
    elif kind == "clear":
        board.clear()


@pytest.mark.parametrize("tie_break", ["first", "member"])
@pytest.mark.parametrize("order", ["desc", "asc"])
@example(  # metadata in a snapshot, then the member deleted and put back
    ops=[("set", 0, 1), ("meta", 0, 1), ("compact", 0, 0), ("remove", 0, 0), ("set", 0, 1)],
    ints_after=30,
)
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(ops=_OPS, ints_after=st.integers(0, 40))
def test_replay_gives_the_board_the_writes_left(
    tmp_path_factory: pytest.TempPathFactory,
    backend: Any,
    *,
    order: str,
    tie_break: str,
    ops: list[tuple[str, int, Any]],
    ints_after: int,
) -> None:
    """Reopen and point-in-time rebuilds at every record equal an in-memory
    board given the same writes.  After ``ints_after`` writes the members
    become ints: on a board that breaks ties by member a write of one is
    refused until the board is empty (``clear``), which exercises a board
    emptied and refilled with another member type."""
    path = Path(tmp_path_factory.mktemp("board"))
    settings_ = {"order": order, "tie_break": tie_break, "backend": backend}
    twin = Leaderboard(**settings_)  # type: ignore[arg-type]
    seen: dict[int, tuple[Any, ...]] = {}  # seq -> the state after it
    board = Leaderboard.open(path, fsync="never", compact_min_bytes=None, **settings_)
    assert isinstance(board, DurableLeaderboard)
    with board:
        for n, op in enumerate(ops):
            if op[0] == "compact":
                board.compact()
                continue
            members = _NAMES if n < ints_after else _NUMBERS
            outcomes = []
            for target in (board, twin):
                try:
                    _write(target, op, members)
                    outcomes.append(None)
                except TypeError as exc:  # members that would not compare
                    outcomes.append(str(exc))
            assert outcomes[0] == outcomes[1]
            seen[board.last_seq] = state(twin)
        assert state(board) == state(twin)
    with Leaderboard.open(path, fsync="never", compact_min_bytes=None) as again:
        assert state(again) == state(twin)
    for seq, expected in seen.items():
        try:
            past = rebuild(path, until_seq=seq, backend=backend)
        except Exception as exc:  # compacted away: only history from the snapshot on
            assert "compacted away" in str(exc) or "snapshot" in str(exc), exc
            continue
        assert state(past) == expected, seq


@pytest.mark.parametrize("members", [2_000, 30])
def test_a_long_tail_over_few_or_many_members(tmp_path: Path, backend: Any, members: int) -> None:
    """A tail of 6,000 records over many members (bulk-loaded) or a few
    (applied change by change), with a snapshot before it, deletions of
    members the snapshot holds, and long runs of equal scores."""
    twin = Leaderboard(backend=backend)
    with Leaderboard.open(tmp_path, fsync="never", compact_min_bytes=None, backend=backend) as b:
        for target in (b, twin):
            target.set_many({f"p{i}": i % 5 for i in range(members)})
        b.compact()
        for i in range(6_000):
            member = f"p{(i * 7) % (members + 10)}"
            for target in (b, twin):
                if i % 13 == 0:
                    target.remove(member)
                elif i % 17 == 0 and member in target:
                    target.set_meta(member, {"i": i})
                else:
                    target.incr(member, i % 3 - 1)
        assert state(b) == state(twin)
    with Leaderboard.open(tmp_path, fsync="never", compact_min_bytes=None) as again:
        assert state(again) == state(twin)


@pytest.mark.parametrize("order", ["desc", "asc"])
def test_a_short_tail_keeps_the_tie_map_of_long_runs(
    tmp_path: Path, backend: Any, order: str
) -> None:
    """A tail too small to bulk-load is applied member by member; it must go
    in log order.  Here 20 members join a run of equal scores one after
    another, then the first of them leaves and comes back last: applied in
    the order of their first records instead, the others would be linked in
    ahead of it and push it deep into the run without a tie-map entry (the
    index then finds it by a long scan)."""
    twin = Leaderboard(backend=backend, order=order)  # type: ignore[arg-type]
    with Leaderboard.open(
        tmp_path, fsync="never", compact_min_bytes=None, backend=backend, order=order
    ) as b:
        for target in (b, twin):
            target.set_many({f"p{i}": 1 for i in range(400)})
        b.compact()
        for target in (b, twin):
            for i in range(20):
                target.set(f"x{i}", 9)
            target.set("x0", 8)
            target.set("x0", 9)
        assert state(b) == state(twin)
    with Leaderboard.open(tmp_path, fsync="never", compact_min_bytes=None) as again:
        assert state(again) == state(twin)
        assert untied_far_members(again) == []


@pytest.mark.parametrize(
    "changes",
    [
        [(PUT, "b", 1, 1), (PUT, 1, 2, 2)],  # scores apart: the index never compares them
        [(PUT, "b", 1, 1), (PUT, 1, 1, 2), (DEL, "b")],  # the str member gone at the end
    ],
    ids=["apart", "deleted"],
)
def test_a_batch_of_members_that_would_not_compare_is_damage(
    tmp_path: Path, changes: list[tuple[Any, ...]]
) -> None:
    """On a board that breaks ties by member, the members of one record must
    compare with each other even when the board is empty, as a batch write
    checks them: a record mixing str and int members is damage at that
    record, whatever the records after it do (here the log is written
    through the board's log hook, bypassing the write's checks)."""
    with Leaderboard.open(tmp_path, fsync="never", tie_break="member") as board:
        assert isinstance(board, DurableLeaderboard)
        assert board._listener is not None
        board._listener(changes)
    with pytest.raises(CorruptionError, match="record 1 does not apply"):
        Leaderboard.open(tmp_path)
    with pytest.raises(CorruptionError, match="record 1 does not apply"):
        rebuild(tmp_path)
