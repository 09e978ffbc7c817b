"""Folded replay equals one-by-one replay (rankengine.durable.fold).

Hypothesis draws a board (backend, order -- scalar or composite --,
tie-break) and a run of writes: ``set`` with every ``when=``, ``incr``,
``set_many``, ``remove``, ``set_meta``, ``clear``, ``remove_by_rank``,
``keep_top``, with snapshots (``compact()``) between them, on few members
so that ties and rewrites are common.  The directory is then opened (the
fold: the newest snapshot, then the records after it folded into each
member's final state) and compared with a board that applied every logged
record one by one from seq 1, and with the board that wrote them: items in
order (so tie order), ranks, metadata, the logical clock, ``_check()``.
``rebuild(until_seq=S)`` (a fold that stops inside a chunk) is compared
with the one-by-one replay of the records up to ``S``.
"""

from __future__ import annotations

import tempfile
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rankengine import Leaderboard
from rankengine.board.checks import WHENS
from rankengine.durable.board import DurableLeaderboard, iter_events, rebuild
from rankengine.durable.fold import Fold
from rankengine.durable.records import CorruptionError, Event, encode_record

MEMBERS = ["ann", "bob", "cy", "dee", "eve", "fay"]
SCORES = st.one_of(st.integers(-3, 3), st.sampled_from([0.5, -0.0, 0.0, 2.0, 1e300]))

OPS = st.one_of(
    st.tuples(st.just("set"), st.sampled_from(MEMBERS), SCORES, st.sampled_from(WHENS)),
    st.tuples(st.just("incr"), st.sampled_from(MEMBERS), st.integers(-2, 2)),
    st.tuples(
        st.just("set_many"),
        st.lists(st.tuples(st.sampled_from(MEMBERS), SCORES), max_size=5),
        st.sampled_from(WHENS),
    ),
    st.tuples(st.just("remove"), st.sampled_from(MEMBERS)),
    st.tuples(
        st.just("meta"),
        st.sampled_from(MEMBERS),
        st.one_of(st.none(), st.dictionaries(st.sampled_from("xy"), st.integers(0, 3))),
    ),
    st.tuples(st.just("clear")),
    st.tuples(st.just("remove_by_rank"), st.integers(1, 3)),
    st.tuples(st.just("keep_top"), st.integers(0, 4)),
    st.tuples(st.just("compact")),
)


def composite(score: Any) -> Any:
    return (score, -score) if isinstance(score, int) else (score, 1)


def run(board: DurableLeaderboard, op: tuple[Any, ...], columns: bool) -> None:
    """Apply one drawn write; a write the board refuses is skipped (it
    logs nothing, which the comparison checks)."""
    name = op[0]
    score = composite if columns else (lambda s: s)
    try:
        if name == "set":
            board.set(op[1], score(op[2]), when=op[3])
        elif name == "incr":
            board.incr(op[1], score(op[2]))
        elif name == "set_many":
            board.set_many([(m, score(s)) for m, s in op[1]], when=op[2])
        elif name == "remove":
            board.remove(op[1])
        elif name == "meta":
            board.set_meta(op[1], op[2])
        elif name == "clear":
            board.clear()
        elif name == "remove_by_rank":
            board.remove_by_rank(1, op[1])
        elif name == "keep_top":
            board.keep_top(op[1])
        else:
            board.compact()
    except (KeyError, ValueError, TypeError, OverflowError):
        pass


def state(board: Leaderboard) -> tuple[Any, ...]:
    board._check()
    items = board.items()
    return (
        [(m, s, type(s)) for m, s in items],
        [board.rank(m) for m, _ in items],
        [board.meta(m) for m, _ in items],
        board.clock,
    )


def one_by_one(path: str, config: dict[str, Any], stop: int | None = None) -> Leaderboard:
    board = Leaderboard(**config)
    for event in iter_events(path, 1, stop):
        board._apply(event.changes)
    return board


@pytest.mark.parametrize("backend", ["sortedlist", "skiplist"])
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    order=st.sampled_from(["desc", "asc", ("desc", "asc")]),
    tie_break=st.sampled_from(["first", "member"]),
    ops=st.lists(OPS, max_size=40),
    cut=st.integers(0, 40),
)
def test_fold_equals_one_by_one(
    backend: str, order: Any, tie_break: str, ops: list[tuple[Any, ...]], cut: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        with DurableLeaderboard(
            tmp,
            fsync="never",
            order=order,
            tie_break=tie_break,
            backend=backend,
            retain_log=True,
            compact_min_bytes=None,
        ) as live:
            for op in ops:
                run(live, op, isinstance(order, tuple))
            config = live.config()
            expected = state(live)
            last = live.last_seq
        with DurableLeaderboard(tmp) as again:
            assert state(again) == expected
            assert again.last_seq == last
        assert state(one_by_one(tmp, config)) == expected
        # a fold that stops at seq S (rebuild from the log, and from the
        # newest snapshot at or before S)
        until = min(cut, last)
        for from_log in (True, False):
            try:
                rebuilt = rebuild(tmp, until_seq=until, from_log=from_log)
            except CorruptionError:  # pragma: no cover - never expected
                raise
            assert state(rebuilt) == state(one_by_one(tmp, config, until + 1))


def test_many_one_put_records_fold_like_one_by_one() -> None:
    """Thousands of increments (several read chunks, the fast path) into an
    empty board, on both backends and both directions, with many ties."""
    for backend in ("sortedlist", "skiplist"):
        for order in ("desc", "asc"):
            with tempfile.TemporaryDirectory() as tmp:
                with DurableLeaderboard(
                    tmp, fsync="never", order=order, backend=backend, compact_min_bytes=None
                ) as live:
                    for i in range(6000):
                        live.incr(f"p{(i * 7919) % 700}", (i % 3) - (i % 2) * 0.5)
                    expected = state(live)
                    config = live.config()
                with DurableLeaderboard(tmp) as again:
                    assert state(again) == expected
                assert state(one_by_one(tmp, config)) == expected


def frames_of(events: list[Event]) -> list[tuple[int, bytes]]:
    return [(i * 100, encode_record(e.seq, e.time_ms, e.changes)) for i, e in enumerate(events)]


@pytest.mark.parametrize(
    ("records", "reason"),
    [
        ([[1, 5, [[0, "a", 1, 1]]], [3, 5, [[0, "b", 1, 2]]]], "sequence jumps from 1 to 3"),
        ([[1, 5, [[0, "a", float("nan"), 1]]]], "NaN"),
        ([[1, 5, [[1, "a"]]]], "DEL of absent member"),
        ([[1, 5, [[0, "a", 1, 1]]], [2, 5, [[2, "b", {"x": 1}]]]], "META of absent member"),
        ([[1, 5, [[0, True, 1, 1]]]], "member of type bool"),
        ([[1, -5, [[0, "a", 1, 1]]]], "timestamp"),
    ],
)
def test_bad_records_are_refused_where_they_are(records: list[Any], reason: str) -> None:
    """A record that the one-by-one replay would refuse stops the fold at
    its offset, with the same reason; nothing after it is folded."""
    import msgpack  # (the raw records are written as they are, unchecked)

    frames = [(i * 100, msgpack.packb(r)) for i, r in enumerate(records)]
    fold = Fold(Leaderboard())
    with pytest.raises(CorruptionError, match=reason) as info:
        fold.add_batch(frames, "seg")
    assert info.value.offset == (len(records) - 1) * 100
    assert fold.records == len(records) - 1


def test_two_values_in_one_payload_are_refused() -> None:
    """Each payload must hold exactly one record, as decode_record demands."""
    good = encode_record(1, 5, [(0, "a", 1, 1)])
    two = encode_record(2, 5, [(0, "b", 1, 2)]) + encode_record(3, 5, [(0, "c", 1, 3)])
    fold = Fold(Leaderboard())
    with pytest.raises(CorruptionError, match="bad record") as info:
        fold.add_batch([(0, good), (50, two)], "seg")
    assert info.value.offset == 50
    assert fold.records == 1


def test_fast_path_resumes_after_a_record_it_does_not_take() -> None:
    """Removes, metadata, multi-change records and ints past 64 bits
    (which msgpack's defaults hand back as extension objects) among
    thousands of increments: each goes through the slow path on its own and
    the fast path takes over after it; the result is the one-by-one replay's."""
    for backend in ("sortedlist", "skiplist"):
        with tempfile.TemporaryDirectory() as tmp:
            with DurableLeaderboard(
                tmp, fsync="never", backend=backend, compact_min_bytes=None
            ) as live:
                for i in range(5000):
                    member = f"p{(i * 31) % 400}"
                    if i % 97 == 0 and member in live:
                        live.remove(member)
                    elif i % 89 == 0:
                        live.set_many({member: i, f"q{i % 7}": -i})
                    elif i % 83 == 0 and member in live:
                        live.set_meta(member, {"i": i})
                    elif i % 79 == 0:
                        live.set(member, 2**70 + i)
                    else:
                        live.incr(member, (i % 5) - 2)
                expected = state(live)
                config = live.config()
            with DurableLeaderboard(tmp) as again:
                assert state(again) == expected
            assert state(one_by_one(tmp, config)) == expected


def test_the_fast_path_takes_exactly_the_one_put_records() -> None:
    """Counted at the source: with a DEL and a META among plain PUTs, the
    fold takes every record and folds the same state as add() would."""
    import msgpack  # (the raw records are written as they are, unchecked)

    records = [
        [1, 5, [[0, "a", 1, 1]]],
        [2, 5, [[0, "b", 2, 2]]],
        [3, 6, [[1, "a"]]],
        [4, 6, [[0, "c", 2.5, 3]]],
        [5, 7, [[2, "b", {"x": 1}]]],
        [6, 8, [[0, "a", 9, 4]]],
    ]
    frames = [(i * 100, msgpack.packb(r)) for i, r in enumerate(records)]
    board = Leaderboard()
    fold = Fold(board)
    assert fold.add_batch(frames, "seg") == len(records)
    assert (fold.records, fold.last_seq, fold.last_ms, fold.clock) == (6, 6, 8, 4)
    fold.finish()
    board._check()
    assert board.items() == [("a", 9), ("c", 2.5), ("b", 2)]
    assert board.meta("b") == {"x": 1}


@pytest.mark.parametrize(
    "raw",
    [
        {"a": 1, "b": 2, "c": 3},  # a map of three keys in place of the record
        [2, 5, {"k": [0, "a", 1, 1]}],  # a map of one key in place of the changes
        [2, 5, [b"\x00\x01\x02\x03"]],  # 4 bytes in place of a PUT (they unpack to ints)
        [2, 5, ["\x00abc"]],  # a string of 4 characters in place of a PUT
        [2, 5, [[0, "a", 1, 1], [0, "b", 1, 2]], 9],  # four fields
        [2.0, 5, [[0, "a", 1, 1]]],  # a float seq (== 2)
        [2, 5, [[False, "a", 1, 1]]],  # a bool kind (== PUT)
        [2, 5, [[0, "a", True, 1]]],  # a bool score
        [2, 5, [[0, "a", 1, 1.0]]],  # a float clock
        [2, 5.0, [[0, "a", 1, 1]]],  # a float time
    ],
)
def test_shapes_that_unpack_are_still_refused(raw: Any) -> None:
    """A record whose shape the fast path's unpacking would accept, or
    whose values equal the right ones, is refused with the slow path's
    reason at its offset (never folded); the record before it is folded."""
    import msgpack  # (the raw records are written as they are, unchecked)

    frames = [(0, msgpack.packb([1, 5, [[0, "z", 1, 1]]])), (40, msgpack.packb(raw))]
    fold = Fold(Leaderboard())
    with pytest.raises(CorruptionError) as info:
        fold.add_batch(frames, "seg")
    assert info.value.offset == 40
    assert fold.records == 1
    assert list(fold.puts) == ["z"]


def test_a_bool_seq_is_refused() -> None:
    """``True == 1``: a first record numbered True is still refused."""
    import msgpack  # (the raw records are written as they are, unchecked)

    fold = Fold(Leaderboard())
    with pytest.raises(CorruptionError, match="sequence number"):
        fold.add_batch([(0, msgpack.packb([True, 5, [[0, "a", 1, 1]]]))], "seg")
    assert fold.records == 0


def test_a_run_of_other_records_is_not_decoded_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    """After the fast path takes nothing it waits, longer each time: in a
    chunk of two-change records it tries a handful of times, not once per
    record (each try decodes the record the slow path then decodes again)."""
    import msgpack  # (the raw records are written as they are, unchecked)

    records = [[i, 5, [[0, f"a{i}", i, 2 * i], [0, "b", i, 2 * i + 1]]] for i in range(1, 1001)]
    frames = [(i * 50, msgpack.packb(r)) for i, r in enumerate(records)]
    tries = []
    plain = msgpack.unpackb

    def counting(data: Any, **options: Any) -> Any:
        if not options:  # (the fast path's call; decode_record passes options)
            tries.append(data)
        return plain(data, **options)

    monkeypatch.setattr(msgpack, "unpackb", counting)
    board = Leaderboard()
    fold = Fold(board)
    assert fold.add_batch(frames, "seg") == 1000
    assert 5 <= len(tries) <= 30  # (about 7 + 1000 / 65, against 1000 without waiting)
    fold.finish()
    assert len(board) == 1001 and board.score("b") == 1000
