"""The sliced export (``rankengine.durable.sliced``): read a board slice by slice
while writes land between the slices, and the result must equal the board's
own export at the end, row for row (members, scores, clocks, metadata).

Slices here are one to three entries long (``slice_seconds=0``), so that
every kind of write lands between them: members moving ahead of and behind
the slice boundary, removals, re-additions, metadata changes, large batches
(the index's bulk-rebuild path) and ``clear()``.
"""

from __future__ import annotations

import gc
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rankengine import Leaderboard
from rankengine.durable.sliced import SlicedExport

CONFIGS = [
    {"backend": "sortedlist"},
    {"backend": "skiplist"},
    {"backend": "sortedlist", "order": "asc"},
    {"backend": "skiplist", "order": "asc", "tie_break": "member"},
    {"backend": "sortedlist", "tie_break": "member"},
    {"backend": "sortedlist", "order": ("desc", "asc")},
]

MEMBERS = [f"m{i}" for i in range(30)]

ops = st.lists(
    st.one_of(
        st.tuples(st.just("step"), st.integers(1, 3)),
        st.tuples(st.just("set"), st.sampled_from(MEMBERS), st.integers(0, 20)),
        st.tuples(st.just("incr"), st.sampled_from(MEMBERS), st.integers(-5, 5)),
        st.tuples(st.just("remove"), st.sampled_from(MEMBERS)),
        st.tuples(st.just("meta"), st.sampled_from(MEMBERS), st.integers(0, 3)),
        st.tuples(
            st.just("batch"),
            st.lists(st.tuples(st.sampled_from(MEMBERS), st.integers(0, 20)), max_size=25),
        ),
        st.tuples(st.just("clear")),
    ),
    max_size=60,
)


def _score(config: dict[str, Any], value: int) -> Any:
    return (value, value % 3) if isinstance(config.get("order"), tuple) else value


def _apply(board: Leaderboard, config: dict[str, Any], op: tuple[Any, ...]) -> None:
    name = op[0]
    if name == "set":
        board.set(op[1], _score(config, op[2]))
    elif name == "incr" and not isinstance(config.get("order"), tuple):
        board.incr(op[1], op[2])
    elif name == "remove":
        board.remove(op[1])
    elif name == "meta" and op[1] in board:
        board.set_meta(op[1], None if op[2] == 0 else {"v": op[2]})
    elif name == "batch":
        board.set_many([(m, _score(config, v)) for m, v in op[1]])
    elif name == "clear":
        board.clear()


def _plain(columns: tuple[Any, ...]) -> tuple[Any, ...]:
    members, scores, clocks, metas = columns
    return list(members), [_norm(s) for s in scores], list(clocks), dict(metas)


def _norm(score: Any) -> Any:
    return tuple(score) if isinstance(score, (list, tuple)) else score


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "-".join(map(str, c.values())))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(start=st.lists(st.tuples(st.sampled_from(MEMBERS), st.integers(0, 20))), script=ops)
def test_sliced_export_equals_the_board_at_its_end(
    config: dict[str, Any], start: list[tuple[str, int]], script: list[tuple[Any, ...]]
) -> None:
    board = Leaderboard(**config)
    board.set_many([(m, _score(config, v)) for m, v in start])
    for member, value in start[::3]:
        board.set_meta(member, {"start": value})
    export = SlicedExport(board, slice_seconds=0.0, entries=1)
    board._listener = export.capture
    done = False
    for op in script:
        if op[0] == "step":
            for _ in range(op[1]):
                if not done:
                    with board._lock:
                        done = export.step()
            export.replay()
        else:
            _apply(board, config, op)
    with board._lock:
        board._listener = None
        export.finish()
        expected = _plain(board._export_columns())
    got = _plain(export.columns())
    assert got == expected
    board._check()


def test_columns_before_finish_is_refused() -> None:
    board = Leaderboard()
    export = SlicedExport(board)
    with pytest.raises(RuntimeError, match="finish"):
        export.columns()


@pytest.mark.parametrize("backend", ["sortedlist", "skiplist"])
def test_metadata_set_then_member_removed_and_added_again(backend: str) -> None:
    """A removal takes the metadata with it, even when the member comes
    back before the export ends (its metadata changed meanwhile too)."""
    board = Leaderboard(backend=backend)
    board.set_many([(m, i) for i, m in enumerate(MEMBERS)])
    board.set_meta("m5", {"old": 1})
    export = SlicedExport(board, slice_seconds=0.0, entries=1)
    board._listener = export.capture
    with board._lock:
        export.step()
    board.set_meta("m5", {"new": 2})
    export.replay()
    board.remove("m5")
    board.set("m5", 100)
    with board._lock:
        board._listener = None
        export.finish()
        expected = _plain(board._export_columns())
    assert _plain(export.columns()) == expected
    assert board.meta("m5") is None


@pytest.mark.parametrize("backend", ["sortedlist", "skiplist"])
def test_slices_leave_the_collector_nothing_to_visit(backend: str) -> None:
    """The slices read are kept where the collector no longer looks (a
    young collection reading every row's header again made the longest
    lock holds of a snapshot at 10^6; docs/performance.md, pauses)."""
    board = Leaderboard(backend=backend)
    board.set_many((f"p{i}", i % 97) for i in range(2_000))
    export = SlicedExport(board, slice_seconds=0.0, entries=300)
    was = gc.isenabled()
    gc.enable()
    try:
        with board._lock:
            while not export.step():
                pass
        assert len(export.slices) == 7
        if backend == "skiplist":  # a walk's slices: untracked at once
            assert not any(gc.is_tracked(c) for read in export.slices for c in read)
        gc.collect(0)  # any slice: untracked at the collector's first look
    finally:
        if not was:
            gc.disable()
    for column in (c for read in export.slices for c in read):
        assert not gc.is_tracked(column)


@pytest.mark.parametrize("backend", ["sortedlist", "skiplist"])
def test_pieces_hand_the_slices_over_once(backend: str) -> None:
    """pieces() gives the board's rows a slice at a time, frees what the
    export kept as it goes, and refuses a second call (the slices are gone:
    a second answer would be an empty board)."""
    board = Leaderboard(backend=backend)
    board.set_many([(m, i) for i, m in enumerate(MEMBERS)])
    board.set_meta("m7", {"k": 1})
    export = SlicedExport(board, slice_seconds=0.0, entries=4)
    board._listener = export.capture
    with board._lock:
        export.step()
    board.incr("m0", 100)
    board.remove("m29")
    with board._lock:
        board._listener = None
        export.finish()
        expected = _plain(board._export_columns())
    pieces, metas = export.pieces()
    assert len(pieces) > 1
    joined = tuple([v for piece in pieces for v in piece[c]] for c in range(3))
    assert _plain((*joined, metas)) == expected
    assert export.slices == [] and export.captured == [] and not export.final
    with pytest.raises(RuntimeError, match="once"):
        export.pieces()


def test_settle_untracks_the_new_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    """Once SETTLE_ROWS rows are in new tuples, settle() makes the young
    collection that stops the collector tracking them (one slice's rows
    read at a time, not a hundred slices' in whichever call made it run)."""
    from rankengine.durable import sliced

    monkeypatch.setattr(sliced, "SETTLE_ROWS", 8)
    board = Leaderboard(backend="sortedlist")
    board.set_many([(m, i) for i, m in enumerate(MEMBERS)])
    export = SlicedExport(board, slice_seconds=0.0, entries=5)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        with board._lock:
            export.step()
        export.settle()  # 5 rows: not yet
        assert export.fresh == 5 and gc.is_tracked(export.slices[0][2])
        with board._lock:
            export.step()
        gc.enable()
        export.settle()
        assert export.fresh == 0
        assert not any(gc.is_tracked(column) for read in export.slices for column in read)
    finally:
        if not was_enabled:
            gc.disable()
        else:
            gc.enable()


def test_pacer_rests_as_long_as_it_worked(monkeypatch: pytest.MonkeyPatch) -> None:
    """The compaction's pause lets go of the GIL only once SLICE_SECONDS of
    the thread's CPU time ran, and then for REST_RATIO times that long."""
    import time

    from rankengine.durable import sliced

    rests: list[float] = []
    monkeypatch.setattr(sliced, "let_go", rests.append)
    pace = sliced.Pacer()
    pace()
    assert rests == []  # (microseconds of work: no rest yet)
    start = time.thread_time()
    while time.thread_time() - start < 2 * sliced.SLICE_SECONDS:
        pass
    pace()
    pace()
    assert len(rests) == 1
    assert rests[0] >= 2 * sliced.SLICE_SECONDS * sliced.REST_RATIO
    pace.rest()
    assert len(rests) == 2 and rests[1] < rests[0]
