"""A durable board reopened from its log equals an in-memory board given the
same writes, and goes on writing as that board would.

Each example runs a random sequence of writes (every kind the API logs:
sets with ``meta=`` and ``when=``, increments, batches, removals, pops,
removals by rank and score, ``keep_top``, ``clear``, metadata) on a durable
board and on an in-memory twin, with compactions and reopens at random
points.  A reopen either closes the board or copies its directory after a
flush while the board is still open (what a killed process leaves).  After
every reopen the board must equal the twin in everything observable --
items with score types, the rank of every member in every style,
metadata, the logical clock -- and keep ``last_seq``; the writes after it
(whose tie clocks must lie above every clock used before) are checked the
same way at the next reopen.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import untied_far_members
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rankengine import Leaderboard
from rankengine.board.core import BULK_REBUILD_FRACTION
from rankengine.durable.board import DurableLeaderboard, rebuild

_SCALAR = [0, 1, 2, 2.0, -1, 0.5]
_COMPOSITE = [(0, 1), (1, 0), (1, 1), (1, 1.0), (2, -1)]


def observed(board: Leaderboard) -> tuple[Any, ...]:
    """Everything observable about ``board``'s contents."""
    board._check()
    items = board.items()
    typed = [(m, repr(s)) for m, s in items]  # 2 and 2.0 differ
    ranks = [
        tuple(board.rank(m, style=style) for style in ("unique", "dense", "competition"))
        for m, _ in items
    ]
    top = [(e.member, repr(e.score), e.rank) for e in board.top(3)]
    return typed, ranks, [board.meta(m) for m, _ in items], board.clock, len(board), top


def _op(members: list[Any], scores: list[Any]) -> st.SearchStrategy[tuple[Any, ...]]:
    member = st.sampled_from(members)
    score = st.sampled_from(scores)
    meta = st.none() | st.fixed_dictionaries({"v": st.integers(0, 2)})
    when = st.sampled_from([None, "new", "present", "better", "worse"])
    pairs = st.lists(st.tuples(member, score), max_size=6)
    return st.one_of(
        st.tuples(st.just("set"), member, score, meta, when),
        st.tuples(st.just("set"), member, score, meta, when),
        st.tuples(st.just("incr"), member, score),
        st.tuples(st.just("set_many"), pairs, when),
        st.tuples(st.just("incr_many"), pairs),
        st.tuples(st.just("remove"), member),
        st.tuples(st.just("remove_many"), st.lists(member, max_size=3)),
        st.tuples(st.just("set_meta"), member, meta),
        st.tuples(st.just("clear")),
        st.tuples(st.just("pop_best"), st.integers(0, 2)),
        st.tuples(st.just("pop_worst"), st.integers(0, 2)),
        st.tuples(st.just("remove_by_rank"), st.integers(-3, 3), st.integers(-3, 3)),
        st.tuples(st.just("remove_by_score"), score, score),
        st.tuples(st.just("keep_top"), st.integers(0, 4)),
        st.tuples(st.just("compact")),
        st.tuples(st.just("reopen"), st.booleans()),
    )


def _write(board: Leaderboard, op: tuple[Any, ...]) -> Any:
    kind, args = op[0], op[1:]
    if kind == "set":
        member, score, meta, when = args
        return board.set(member, score, meta=meta, when=when)
    if kind == "incr":
        return board.incr(*args)
    if kind == "set_many":
        return board.set_many(args[0], when=args[1])
    if kind == "incr_many":
        return board.incr_many(args[0])
    if kind == "remove":
        return board.remove(args[0])
    if kind == "remove_many":
        return board.remove_many(args[0])
    if kind == "set_meta":
        return board.set_meta(*args) if args[0] in board else None
    if kind == "clear":
        return board.clear()
    if kind in ("pop_best", "pop_worst"):
        return [(e.member, repr(e.score), e.rank, e.meta) for e in getattr(board, kind)(args[0])]
    if kind == "remove_by_rank":
        return board.remove_by_rank(*args) if len(board) else 0
    if kind == "remove_by_score":
        low, high = sorted(args)
        return board.remove_by_score(low, high)
    assert kind == "keep_top"
    return board.keep_top(args[0])


def _open(path: Path, backend: str, **settings_: Any) -> DurableLeaderboard:
    board = Leaderboard.open(
        path, fsync="never", compact_min_bytes=None, backend=backend, retain_log=True, **settings_
    )
    assert isinstance(board, DurableLeaderboard)
    return board


@st.composite
def _runs(draw: st.DrawFn) -> tuple[dict[str, Any], list[tuple[Any, ...]]]:
    tie_break = draw(st.sampled_from(["first", "member"]))
    order: Any = draw(st.sampled_from(["desc", "asc", ("desc", "asc")]))
    members: list[Any] = draw(
        st.sampled_from(
            [["a", "b", "c", "d", "e"], [1, 2, 3, 4, 5], [b"x", b"y", b"z"], ["a", "b", 1, 2, b"x"]]
        )
    )
    scores = _COMPOSITE if isinstance(order, tuple) else _SCALAR
    ops = draw(st.lists(_op(members, scores), max_size=40))
    return {"tie_break": tie_break, "order": order}, ops


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(run=_runs(), backend=st.sampled_from(["sortedlist", "skiplist"]))
def test_reopened_board_equals_the_writes(
    tmp_path_factory: pytest.TempPathFactory,
    run: tuple[dict[str, Any], list[tuple[Any, ...]]],
    backend: str,
) -> None:
    settings_, ops = run
    path = tmp_path_factory.mktemp("board")
    twin = Leaderboard(**settings_)
    board = _open(path, backend, **settings_)
    copies = 0
    try:
        for op in [*ops, ("reopen", True)]:
            if op[0] == "compact":
                board.compact()
                continue
            if op[0] == "reopen":
                seq = board.last_seq
                if op[1]:
                    board.close()
                else:  # what a killed process leaves: the files as they are
                    board.flush()
                    copies += 1
                    copy = path.with_name(f"{path.name}-copy{copies}")
                    shutil.copytree(path, copy, ignore=shutil.ignore_patterns("LOCK"))
                    board.close()
                    path = copy
                board = _open(path, backend)
                assert board.last_seq == seq
                assert observed(board) == observed(twin)
                assert untied_far_members(board) == []
                # the whole log from seq 1, without the snapshots, says the same
                assert observed(rebuild(path, from_log=True, backend=backend)) == observed(twin)
                continue
            outcomes = []
            for target in (board, twin):
                try:
                    outcomes.append(("ok", _write(target, op)))
                except (TypeError, ValueError, KeyError) as exc:
                    outcomes.append(("error", type(exc).__name__))
            assert outcomes[0] == outcomes[1], op
            assert observed(board) == observed(twin)
    finally:
        board.close()


@pytest.mark.parametrize("backend", ["sortedlist", "skiplist"])
@pytest.mark.parametrize("order", ["desc", "asc"])
@pytest.mark.parametrize("tie_break", ["first", "member"])
def test_a_tail_at_the_bulk_threshold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str, order: str, tie_break: str
) -> None:
    """Tails that put one member fewer than the board bulk-loads, just
    enough, and one more give the board the writes left: the two ways of
    applying the net puts (change by change, bulk load) agree, with members
    of the snapshot deleted and put back (their metadata gone), metadata
    kept from the snapshot, and scores put back with a new clock."""
    size = 40
    # the tail deletes two members and puts them back: the puts then land on
    # a board of size - 2; the fewest puts it bulk-loads there
    least = next(k for k in range(2, size) if k >= BULK_REBUILD_FRACTION * (size - 2 + k))
    bulk_loads: list[int] = []
    rebuild_with = Leaderboard._rebuild_with

    def counted(self: Leaderboard, puts: list[Any]) -> None:
        bulk_loads.append(len(puts))
        rebuild_with(self, puts)

    for puts in (least - 1, least, least + 1):
        where = tmp_path / str(puts)
        twin = Leaderboard(order=order, tie_break=tie_break)  # type: ignore[arg-type]
        board = _open(where, backend, order=order, tie_break=tie_break)
        for target in (board, twin):
            target.set_many({f"p{i:02}": i % 3 for i in range(size)})
            for i in range(0, size, 4):
                target.set_meta(f"p{i:02}", {"i": i})
        board.compact()
        for target in (board, twin):
            target.remove("p00")  # deleted: its metadata goes
            target.set("p00", 1)
            target.set_meta("p04", {"i": -4})
            target.remove("p04")
            target.set("p04", 2)  # no metadata after the delete
            for i in range(8, 8 + puts - 2):
                target.incr(f"p{i:02}", 1)
                target.incr(f"p{i:02}", -1)  # back to its score with a new clock
        assert observed(board) == observed(twin)
        board.close()
        bulk_loads.clear()
        with monkeypatch.context() as patch:
            patch.setattr(Leaderboard, "_rebuild_with", counted)
            again = _open(where, backend)
        assert bulk_loads == ([] if puts < least else [puts])
        assert observed(again) == observed(twin)
        assert untied_far_members(again) == []
        again.set("p01", 1)
        twin.set("p01", 1)
        assert observed(again) == observed(twin)
        again.close()
