"""A ledger's replay by folding against the event-by-event replay.

On open, :func:`rankengine.ledger.fold.replay_log` reads the log in bulk,
folds each exact board's events into its members' final states and loads
the boards in bulk; every other view takes the events one by one in the
same pass.  The result must be identical to giving every view every event
one by one (``Ledger._replay``, which ``add_view`` and ``rebuild_view``
still use): random event streams (increments and sets with ``when=``,
removals, metadata, ties, int and float scores, several view kinds and
routes, periods rolling, batches, compactions part way so that some
views start from a snapshot) are recorded, the ledger is reopened through
the fold and through the event-by-event replay, and every view must agree
-- members, scores with their types, tie clocks, metadata, the boards'
clocks, keyed boards and their order, periods, the views' clocks and seqs
-- with each other and with the ledger before it was closed, and pass
``_check()``; ``rebuild_view`` must then rebuild each to the same state.
An event a view refuses must change nothing and leave the ledger open.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rankengine.ledger.ledger as ledger_module
from rankengine import Ledger
from rankengine.durable.records import CorruptionError, LogError
from rankengine.ledger import fold as fold_module
from rankengine.ledger.events import make_event, to_change
from rankengine.ledger.storage import LogTail, encode, read_events
from rankengine.timed.lazy import is_unloaded

START_MS = 1_798_934_400_000  # 2027-01-03T00:00Z, a Sunday: a week ends a day in

VIEWS: list[tuple[str, str, dict[str, Any]]] = [
    ("all", "board", {}),
    ("asc", "board", {"order": "asc", "backend": "skiplist"}),
    ("bymember", "board", {"tie_break": "member"}),
    ("skipmember", "board", {"backend": "skiplist", "tie_break": "member", "order": "asc"}),
    ("region", "board", {"by": "region"}),
    ("eu", "board", {"where": {"region": "eu"}}),
    ("daily", "periodic", {"calendar": "daily", "grace": 3600}),
    ("weekly", "periodic", {"calendar": "weekly", "late": "drop"}),
    ("win", "window", {"calendar": "hourly", "buckets": 3}),
    ("hot", "decayed", {"half_life": 3600.0}),
    ("trend", "topk", {"k": 3}),
]

EVENT = st.tuples(
    st.sampled_from(["a", "b", "c", "d", "e"]),
    st.one_of(
        st.integers(-3, 6),
        st.sampled_from([0, 0.0, -0.0, 2.5, 1e308, -1e308, 4.0, float("inf")]),
    ),
    st.sampled_from(["incr"] * 5 + ["set", "set", "remove", "meta"]),
    # time steps: mostly forward, across hours, days and weeks, sometimes back
    st.one_of(
        st.integers(0, 1_800_000),
        st.sampled_from([-60_000, -3_700_000, 3_600_000, 86_400_000, 7 * 86_400_000]),
    ),
    st.sampled_from([None] * 4 + [{"region": "eu"}, {"region": "us"}]),
    st.sampled_from([None] * 6 + ["present", "new", "better", "worse"]),
    st.sampled_from([None, None, {"n": 1}, {"n": 1.0}, {"tag": "x"}]),
)
#: Steps: an event, a batch of events (one record), or a compaction.
STEPS = st.lists(
    st.one_of(
        EVENT.map(lambda e: ("one", [e])),
        st.lists(EVENT, min_size=1, max_size=4).map(lambda es: ("many", es)),
        st.just(("compact", [])),
    ),
    max_size=40,
)


def board_state(board: Any) -> Any:
    if board is None:
        return None
    members, scores, clocks, metas = board._export_columns()
    return repr((list(members), list(scores), list(clocks), metas, board._clock))


def state(ledger: Ledger) -> Any:
    views = []
    for name in ledger.views:
        view = ledger._views[name]
        parts = [(key, header, board_state(board)) for key, (header, board) in view.export()]
        views.append((name, view.seq, view.time_ms, repr(parts)))
    return ledger.last_seq, ledger._time, ledger._last_ms, views


class EventByEvent(Ledger):
    """A ledger whose open replays its log event by event: every record
    given to ``Ledger._replay``, as before the fold (and as ``add_view`` and
    ``rebuild_view`` still do)."""

    def _recover(self, on_torn_tail: Any) -> None:
        def replay(directory: str, manifest: Any, after: int, tail: LogTail, **_: Any) -> int:
            for record in read_events(directory, manifest, after, tail):
                self._replay(record)
            return self._time

        original = ledger_module.replay_log
        ledger_module.replay_log = replay  # type: ignore[assignment]
        try:
            super()._recover(on_torn_tail)
        finally:
            ledger_module.replay_log = original


def record(ledger: Ledger, events: list[Any], t: list[int]) -> None:
    """Record ``events`` (one, or a batch as one record); an event a view
    refuses must change nothing: no record, every view as it was, the
    ledger open."""
    items = []
    for member, value, op, step, attrs, when, meta in events:
        t[0] = max(0, t[0] + step)
        item: dict[str, Any] = {"member": member, "op": op, "t_ms": t[0], "attrs": attrs}
        if op in ("incr", "set"):
            item["value"] = value
            item["when"] = when
        if op in {"set", "meta"}:
            item["meta"] = meta
        items.append(item)
    before = state(ledger)
    try:
        if len(items) == 1:
            item = items[0]
            ledger.record(item.pop("member"), item.pop("value", None), **item)
        else:
            ledger.record_many(items)
    except (TypeError, ValueError, OverflowError, KeyError):
        # refused by a view: nothing was recorded, nothing changed
        assert not ledger.closed
        assert state(ledger) == before


def check_reopen(path: Path, live: Any = None) -> None:
    """Open ``path`` through the fold and event by event: the same state,
    and the state the ledger had before it was closed (``live``, if
    given): every board, the ledger's clock and every view's."""
    slow = EventByEvent(path, fsync="never", compact_min_bytes=None)
    want = state(slow)
    slow._check()
    slow.close()
    # (the last record's wall-clock stamp aside: a reopen just after a
    # compaction reads no record and starts it at 0; it only keeps the next
    # records' stamps from going back)
    if live is not None:
        assert want[:2] + want[3:] == live[:2] + live[3:]
    fast = Ledger.open(path, fsync="never", compact_min_bytes=None)
    try:
        assert state(fast) == want
        fast._check()
        for name in fast.views:  # the event-by-event rebuild, from the whole log
            fast.rebuild_view(name)
            assert state(fast) == want
        fast._check()
    finally:
        fast.close()


def same_error_both_ways(path: Path, error: type[Exception]) -> str:
    """Open ``path`` event by event and through the fold: both must raise
    ``error`` with the same message, which is returned."""
    errors = []
    for kind in (EventByEvent, Ledger):
        with pytest.raises(error) as caught:
            kind(path, fsync="never").close()
        errors.append(str(caught.value))
    assert errors[0] == errors[1]
    return errors[0]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    steps=STEPS,
    late_view=st.integers(0, 60),
    # one view (a plain board: the fast path of a one-view ledger), or several
    views=st.one_of(
        st.just([0]),
        st.lists(st.integers(0, len(VIEWS) - 1), min_size=1, max_size=6, unique=True),
    ),
)
def test_the_fold_matches_the_event_by_event_replay(
    tmp_path_factory: pytest.TempPathFactory, steps: list[Any], late_view: int, views: list[int]
) -> None:
    path = tmp_path_factory.mktemp("ledger")
    ledger = Ledger.open(path, fsync="never", compact_min_bytes=None)
    for i in views:
        name, kind, options = VIEWS[i]
        ledger.add_view(name, kind, **options)
    t = [START_MS]
    for i, (what, events) in enumerate(steps):
        if i == late_view:  # a view added part way: its snapshot is at a later seq
            ledger.add_view("late", "board", by="region")
        if what == "compact":
            ledger.compact()
        else:
            record(ledger, events, t)
    live = state(ledger)
    ledger.close()
    check_reopen(path, live)


#: A one-view ledger's log: mostly plain increments (the fast path's
#: records), with what must stop it: other ops, when=, a float past the
#: int's range, a value that keeps the score.
INCREMENTS = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "c", 7, b"d"]),
        st.one_of(st.integers(-2, 3), st.sampled_from([0, 0.0, -0.0, 0.5, 1e300, 2**70, 10**400])),
        st.sampled_from(["incr"] * 12 + ["set", "remove", "meta"]),
        st.sampled_from([None] * 12 + ["better"]),
    ),
    max_size=80,
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    events=INCREMENTS,
    options=st.sampled_from([{}, {"order": "asc", "backend": "skiplist"}]),
    compact_at=st.integers(0, 100),
)
def test_a_one_view_ledger_folds_as_it_replays(
    tmp_path_factory: pytest.TempPathFactory,
    events: list[Any],
    options: dict[str, Any],
    compact_at: int,
) -> None:
    path = tmp_path_factory.mktemp("ledger")
    ledger = Ledger.open(path, fsync="never", compact_min_bytes=None)
    ledger.add_view("all", "board", **options)
    for i, (member, value, op, when) in enumerate(events):
        if i == compact_at:  # (the replay then starts from a snapshot)
            ledger.compact()
        item: dict[str, Any] = {"op": op, "t_ms": START_MS + i}
        if op in ("incr", "set"):
            item.update(value=value, when=when)
        if op == "meta":
            item["meta"] = {"i": i}
        before = state(ledger)
        try:
            ledger.record(member, item.pop("value", None), **item)
        except (TypeError, ValueError, OverflowError):
            assert not ledger.closed  # refused: nothing changed
            assert state(ledger) == before
    live = state(ledger)
    ledger.close()
    check_reopen(path, live)


def test_int_and_float_scores_and_ties(tmp_path: Path) -> None:
    """The score kinds and tie clocks a board keeps, folded: an increment
    that keeps the score keeps the int, a set of an equal float keeps the
    int and the member's place, ties by first arrival."""
    events = [
        ("ann", 5, "incr", None),
        ("bob", 5, "incr", None),
        ("ann", 0.0, "incr", None),
        ("bob", 5.0, "set", None),
        ("cid", 2.5, "incr", None),
        ("cid", 2.5, "incr", None),
        ("dee", 5.0, "set", None),
        ("ann", 3, "set", "better"),
        ("eve", -0.0, "incr", None),
    ]
    with Ledger.open(tmp_path, fsync="never") as ledger:
        ledger.add_view("first", "board")
        ledger.add_view("member", "board", tie_break="member")
        for member, value, op, when in events:
            ledger.record(member, value, op=op, when=when, t_ms=START_MS)
        live = {name: ledger[name].items() for name in ledger.views}
    assert live["first"] == [("ann", 5), ("bob", 5), ("cid", 5.0), ("dee", 5.0), ("eve", 0.0)]
    assert live["member"] == [("dee", 5.0), ("cid", 5.0), ("bob", 5), ("ann", 5), ("eve", 0.0)]
    with Ledger.open(tmp_path, fsync="never") as ledger:
        assert {name: ledger[name].items() for name in ledger.views} == live
        assert [type(s) for _, s in ledger["first"].items()] == [int, int, float, float, float]
    check_reopen(tmp_path)


def test_the_fold_is_taken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparisons above compare something: a plain board's events go
    through a BoardFold (and its bulk load), not the view's apply."""
    with Ledger.open(tmp_path, fsync="never") as ledger:
        ledger.add_view("all")
        ledger.add_view("eu", "board", where={"region": "eu"})
        for i in range(50):
            ledger.record(f"p{i % 7}", i, attrs={"region": "eu"}, t_ms=START_MS + i)
    finished: list[int] = []
    original = fold_module.BoardFold.finish

    def finish(self: fold_module.BoardFold) -> None:
        finished.append(len(self.puts))
        original(self)

    monkeypatch.setattr(fold_module.BoardFold, "finish", finish)
    monkeypatch.setattr(
        ledger_module.View, "apply", lambda *a: pytest.fail("a board view applied an event")
    )
    with Ledger.open(tmp_path, fsync="never") as ledger:
        assert finished == [7, 7]
        assert ledger["all"].score("p6") == sum(range(6, 50, 7))
        ledger._check()


def test_an_event_the_fold_cannot_settle_goes_to_the_board(tmp_path: Path) -> None:
    """An int increment past the float range of a float score fails on the
    board.  ``record`` refuses it before logging it; a log that holds one
    anyway (written by an older version, which logged it first) is what the
    fold hands to the board, which names it as the event-by-event replay
    does."""
    with Ledger.open(tmp_path, fsync="never") as ledger:
        ledger.add_view("all")
        ledger.record("ann", 1e308, t_ms=START_MS)
        with pytest.raises(OverflowError, match="nothing was recorded"):
            ledger.record("ann", 10**400, t_ms=START_MS)
        assert ledger.last_seq == 1
        assert ledger._files is not None
        bad = make_event("ann", 10**400, t_ms=START_MS)
        ledger._files.append(encode(2, START_MS, [to_change(bad)]), 2)
        ledger._seq = 2
    assert "does not apply to view 'all'" in same_error_both_ways(tmp_path, LogError)


def test_a_bad_record_is_named_as_before(tmp_path: Path) -> None:
    """A record that is not an event (a board's change in a ledger's log)
    raises the event-by-event replay's error."""
    with Ledger.open(tmp_path, fsync="never") as ledger:
        ledger.add_view("all")
        ledger.record("ann", 1, t_ms=START_MS)
        assert ledger._files is not None
        ledger._files.append(encode(2, 0, [(0, "bob", 5, 1)]), 2)
        ledger._seq = 2
    assert "holds a board change" in same_error_both_ways(tmp_path, CorruptionError)


def test_a_late_event_loads_no_closed_period(tmp_path: Path) -> None:
    """A late event in the replayed tail (dropped by ``late="drop"``) is a
    barrier for its periodic view, and the closed period it is late for,
    left unloaded by the open, stays unloaded, as the event-by-event
    replay leaves it."""
    day = 86_400_000
    with Ledger.open(tmp_path, fsync="never") as ledger:
        ledger.add_view("daily", "periodic", calendar="daily", late="drop", keep=2)
        for i in range(3):
            ledger.record("ann", 1, t_ms=START_MS + i * day)
        ledger.compact()  # days 1 and 2 closed: saved, loaded on first read
        ledger.record("bob", 5, t_ms=START_MS)  # late for day 1: dropped
        ledger.record("cid", 2, t_ms=START_MS + 2 * day + 1)
        ledger.record("dee", 3, t_ms=START_MS + 1)  # late again, time moving on
        ledger.record("cid", 1, t_ms=START_MS + 2 * day + 2)
    for kind in (EventByEvent, Ledger):
        with kind(tmp_path, fsync="never") as ledger:
            periodic = ledger["daily"]
            held = periodic._boards
            closed = sorted(periodic._closed)
            assert len(closed) == 2
            assert all(is_unloaded(held.peek(name)) for name in closed), kind
            assert periodic.late_dropped == 2
            assert periodic.board().items() == [("cid", 3), ("ann", 1)]
    check_reopen(tmp_path)


def _event_change(member: Any, value: Any, t_ms: int = START_MS, **fields: Any) -> list[Any]:
    """An EVENT change as logged (``[EVENT, member, op, value, t_ms, attrs,
    when, meta]``), an increment unless ``fields`` say otherwise."""
    change = [3, member, 0, value, t_ms, None, None, None]
    for name, at in (("kind", 0), ("op", 2), ("attrs", 5), ("when", 6), ("meta", 7)):
        if name in fields:
            change[at] = fields[name]
    return change


#: Records the one-view fast path (fold._fold_increments) must not take as
#: they are: each either applies (the general path takes it) or is refused
#: with the event-by-event replay's error.  ``None`` for the seq: the
#: record's own.
ODD_RECORDS: dict[str, Any] = {
    "kind True": [None, 0, [_event_change("ann", 1, kind=True)]],
    "kind 3.0": [None, 0, [_event_change("ann", 1, kind=3.0)]],
    "op False": [None, 0, [_event_change("ann", 1, op=False)]],
    "op 0.0": [None, 0, [_event_change("ann", 1, op=0.0)]],
    "op set": [None, 0, [_event_change("ann", 7, op=1)]],
    "seq float": ["float", 0, [_event_change("ann", 1)]],
    "time negative": [None, -1, [_event_change("ann", 1)]],
    "time float": [None, 1.5, [_event_change("ann", 1)]],
    "change a map": [None, 0, [{str(i): i for i in range(8)}]],
    "change bytes": [None, 0, [bytes([3, 97, 0, 1, 1, 0, 0, 0])]],
    "changes a string": [None, 0, "x"],
    "two changes": [None, 0, [_event_change("ann", 1), _event_change("bob", 2)]],
    "no change": [None, 0, []],
    "member a list": [None, 0, [_event_change(["ann"], 1)]],
    "member an int": [None, 0, [_event_change(7, 1)]],
    "member bytes": [None, 0, [_event_change(b"ann", 1)]],
    "value None": [None, 0, [_event_change("ann", None)]],
    "set None": [None, 0, [_event_change("ann", None, op=1)]],
    "value True": [None, 0, [_event_change("ann", True)]],
    "value a string": [None, 0, [_event_change("ann", "1")]],
    "value NaN": [None, 0, [_event_change("ann", float("nan"))]],
    "value a float": [None, 0, [_event_change("ann", 0.5)]],
    "value past 64 bits": [None, 0, [_event_change("ann", 2**70)]],
    "event time float": [None, 0, [_event_change("ann", 1, START_MS + 0.5)]],
    "attrs a list": [None, 0, [_event_change("ann", 1, attrs=["eu"])]],
    "attrs with a list": [None, 0, [_event_change("ann", 1, attrs={"region": ["eu"]})]],
    "when present": [None, 0, [_event_change("zed", 1, when="present")]],
    "when bad": [None, 0, [_event_change("ann", 1, when="sometimes")]],
    "meta": [None, 0, [_event_change("ann", 1, meta={"n": 1})]],
    "trailing bytes": b"\xc0",
    "not msgpack": b"\xc1",
}


@pytest.mark.parametrize("name", sorted(ODD_RECORDS))
def test_an_odd_record_between_increments_replays_as_before(tmp_path: Path, name: str) -> None:
    """A one-view ledger replays a run of plain increments on its fast path
    (:func:`rankengine.ledger.fold._fold_increments`); a record of any
    other shape or type in the middle of the run -- valid or not -- must
    leave it for the general path, which applies it or names it as the
    event-by-event replay does, and the fast path takes the increments
    after it again."""
    from rankengine.durable.records import frame, pack

    odd = ODD_RECORDS[name]
    with Ledger.open(tmp_path, fsync="never", compact_min_bytes=None) as ledger:
        ledger.add_view("all")
        ledger.record("ann", 1, t_ms=START_MS)
        assert ledger._files is not None
        seq = 1
        for i in range(40):
            seq += 1
            if i == 20:
                if isinstance(odd, bytes):  # a good record, then bytes after it
                    payload = pack([seq, 0, [_event_change("ann", 1)]]) + odd
                else:
                    payload = pack([seq if odd[0] is None else float(seq), *odd[1:]])
                ledger._files.append(frame(payload), seq)
            else:
                change = _event_change(f"p{i % 7}", i, START_MS + i)
                ledger._files.append(encode(seq, START_MS + i, [change]), seq)
        ledger._seq = seq
    outcomes = []
    for kind in (EventByEvent, Ledger):
        try:
            opened = kind(tmp_path, fsync="never", compact_min_bytes=None)
        except (LogError, CorruptionError) as exc:
            outcomes.append((type(exc), str(exc)))
        else:
            outcomes.append(state(opened))
            opened._check()
            opened.close()
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("views", [["all"], ["all", "trend"]])
def test_an_increment_to_nan_in_the_log_is_named_as_before(
    tmp_path: Path, views: list[str]
) -> None:
    """``+inf`` then ``-inf`` makes a NaN score, which ``record`` refuses;
    a log that holds it anyway goes to the board on every path that folds
    increments (the one-view fast path, a fold beside another view), which
    names it as the event-by-event replay does."""
    with Ledger.open(tmp_path, fsync="never") as ledger:
        ledger.add_view("all")
        if "trend" in views:
            ledger.add_view("trend", "topk", k=3)
        ledger.record("bob", 1, t_ms=START_MS)
        ledger.record("ann", float("inf"), t_ms=START_MS)
        assert ledger._files is not None
        ledger._files.append(encode(3, 0, [_event_change("ann", float("-inf"))]), 3)
        ledger._seq = 3
    assert "does not apply to view 'all'" in same_error_both_ways(tmp_path, LogError)


def test_increments_into_a_board_restored_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fold into a board that had members when it began (restored from a
    snapshot, and larger than the folds take in whole: ``_TAKE_MAX`` made
    0 here) looks each member up on the board: increments of members on
    it, removed and back, new ones, beside a view that takes every event."""
    monkeypatch.setattr(fold_module, "_TAKE_MAX", 0)
    with Ledger.open(tmp_path, fsync="never", compact_min_bytes=None) as ledger:
        ledger.add_view("all")
        ledger.add_view("trend", "topk", k=3)
        for i in range(30):
            ledger.record(f"p{i}", i % 4, t_ms=START_MS + i)
        ledger.compact()
        for i in range(60):
            if i % 9 == 4:
                ledger.record(f"p{i % 35}", op="remove", t_ms=START_MS + i)
            else:
                ledger.record(f"p{i % 35}", i % 3, t_ms=START_MS + i)
        live = state(ledger)
    check_reopen(tmp_path, live)
