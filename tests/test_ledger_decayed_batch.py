"""A decayed view checks a batch as it will apply it.

The ledger's rule: an event any view would refuse changes no view and
writes nothing.  A decayed view's check used to look at each event of a
``record_many`` batch against the board as it was before the batch, so two
increments that each fit passed, and the second overflowed the stored
score on apply, after the batch was logged (the ledger closed, and a reopen
met the same event).  Now the check simulates the batch's earlier writes
(their sums, sets, removals and re-bases: :class:`~rankengine.timed.state.DecayedBatch`),
and the test holds it to a model: the same events applied one by one to a
plain ``DecayedLeaderboard`` on the same clock, from scratch, for every
batch -- the batch must be refused exactly when one of its writes raises
there, and then nothing is logged, every view is unchanged and the ledger
stays open; otherwise the view holds what the model holds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from rankengine import DecayedLeaderboard, Ledger

T = 1_798_934_400_000  # 2027-01-03T00:00Z
HOUR = 3_600_000
HALF_LIFE = 3600.0


def views_state(ledger: Ledger) -> Any:
    return (
        ledger.last_seq,
        ledger._time,
        {name: (ledger[name].items(), ledger._views[name].seq) for name in ledger.views},
        ledger["hot"].board.items(),  # the stored scores
        ledger["hot"].t0,
    )


def test_a_batch_whose_sum_overflows_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    with Ledger.open(tmp_path, fsync="never") as ledger:
        ledger.add_view("all", "board")
        ledger.add_view("hot", "decayed", half_life=HALF_LIFE)
        ledger.record("bob", 1, t_ms=T)
        before = views_state(ledger)
        for batch in (
            [("ann", 1e308, "incr"), ("ann", 1e308, "incr")],  # each fits alone
            [("ann", 1e308, "set"), ("ann", 1e308, "incr")],  # the set, then more
            [("bob", 1e308, "incr"), ("cid", 1, "incr"), ("bob", 1e308, "incr")],
        ):
            items = [{"member": m, "value": v, "op": op, "t_ms": T} for m, v, op in batch]
            with pytest.raises(OverflowError, match="would be inf") as caught:
                ledger.record_many(items)
            note = f"(item {len(batch) - 1} of the batch, refused by view 'hot')"
            assert note in caught.value.__notes__
            assert not ledger.closed
            assert views_state(ledger) == before
            ledger._check()
        # the same events one batch at a time each are as they were: the
        # first fits, the second is refused alone
        ledger.record("ann", 1e308, t_ms=T)
        with pytest.raises(OverflowError, match="would be inf"):
            ledger.record("ann", 1e308, t_ms=T)
        ledger._check()
    with Ledger.open(tmp_path, fsync="never") as again:  # nothing refused was logged
        assert again.last_seq == 2
        assert again["hot"].score("ann") == 1e308
        assert again["all"].items() == [("ann", 1e308), ("bob", 1)]
        again._check()


def test_a_batch_that_removes_first_is_taken(tmp_path: Path) -> None:
    """The other way round: a write after the batch removed the member (or
    set it low) fits, though it would not on the score held before."""
    with Ledger.open(tmp_path, fsync="never") as ledger:
        ledger.add_view("hot", "decayed", half_life=HALF_LIFE)
        ledger.record("ann", 1e308, t_ms=T)
        done = ledger.record_many(
            [
                {"member": "ann", "op": "remove", "t_ms": T},
                {"member": "ann", "value": 1e308, "t_ms": T},
                {"member": "ann", "value": 1.0, "op": "set", "t_ms": T},
                {"member": "ann", "value": 1e308, "t_ms": T},
            ]
        )
        assert [d.outcomes[0].score for d in done] == [None, 1e308, 1.0, 1e308]
        ledger._check()
    with Ledger.open(tmp_path, fsync="never") as again:
        assert again["hot"].score("ann") == 1e308
        again._check()


def test_a_batch_is_checked_after_its_re_bases(tmp_path: Path) -> None:
    """An event far ahead re-bases the board in the middle of the batch;
    the writes after it are checked against the new base (stored scores
    shrink there: what did not fit before the re-base fits after it)."""
    with Ledger.open(tmp_path, fsync="never") as ledger:
        ledger.add_view("hot", "decayed", half_life=HALF_LIFE, rebase_after=1.0)
        ledger.record("ann", 1e308, t_ms=T)
        t0 = ledger["hot"].t0
        ledger.record_many(
            [
                {"member": "bob", "value": 1, "t_ms": T + 10 * HOUR},  # re-bases
                {"member": "ann", "value": 1e308, "t_ms": T + 10 * HOUR},
            ]
        )
        assert ledger["hot"].t0 > t0
        assert ledger["hot"].score("ann") == pytest.approx(1e308 + 1e308 / 1024)
        ledger._check()


MEMBERS = st.sampled_from(["a", "b", "c"])
VALUES = st.one_of(
    st.integers(-3, 3),
    st.sampled_from([0.5, 1e307, 1e308, -1e308, 1.7e308, 10**300, 2**1030]),
)
#: time steps in half-lives' worth: 1,000 half-lives is past the ~1,010
#: a weight can take (e^700): such an event re-bases or is refused
STEPS = st.sampled_from([0, 0, 1, -1, 30, -30, 100, 1000, 1100, -1000])
EVENT = st.tuples(MEMBERS, VALUES, st.sampled_from(["incr", "incr", "set", "remove"]), STEPS)
BATCHES = st.lists(st.lists(EVENT, min_size=1, max_size=4), min_size=1, max_size=8)


def model_items(events: list[tuple[str, Any, str, int]], rebase_after: float) -> Any:
    """A plain decayed board given ``events`` one by one, its clock the
    latest event time so far (the ledger's clock); raises as a write does."""
    now = [0.0]
    board = DecayedLeaderboard(half_life=HALF_LIFE, clock=lambda: now[0], rebase_after=rebase_after)
    for member, value, op, t_ms in events:
        t = t_ms / 1000
        now[0] = max(now[0], t)
        if op == "incr":
            board.add(member, value, t=t)
        elif op == "set":
            board.set(member, value, t=t)
        elif member in board:
            board.remove(member)
    return board.board.items(), board.t0


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=BATCHES, rebase_after=st.sampled_from([64.0, 1.0]))
def test_a_batch_is_refused_exactly_when_a_write_of_it_would_raise(
    tmp_path_factory: pytest.TempPathFactory, batches: list[Any], rebase_after: float
) -> None:
    path = tmp_path_factory.mktemp("ledger")
    taken: list[tuple[str, Any, str, int]] = []
    t = T
    with Ledger.open(path, fsync="never", compact_min_bytes=None) as ledger:
        ledger.add_view("hot", "decayed", half_life=HALF_LIFE, rebase_after=rebase_after)
        for batch in batches:
            events = []
            for member, value, op, step in batch:
                t = max(0, t + step * int(HALF_LIFE * 1000))
                events.append((member, value, op, t))
            try:
                want = model_items(taken + events, rebase_after)
            except (ValueError, OverflowError):
                want = None  # a write raises: the batch must be refused
            before = views_state(ledger)
            items = [
                {"member": m, "op": op, "t_ms": t_ms, **({} if op == "remove" else {"value": v})}
                for m, v, op, t_ms in events
            ]
            try:
                ledger.record_many(items)
            except (ValueError, OverflowError):
                event("a batch refused")
                assert want is None, (events, want)
                assert not ledger.closed
                assert views_state(ledger) == before
                continue
            assert want is not None, events
            event("a batch taken" + (" (re-based)" if want[1] != before[4] else ""))
            taken += events
            assert (ledger["hot"].board.items(), ledger["hot"].t0) == want
            ledger._check()
        live = views_state(ledger)
    with Ledger.open(path, fsync="never", compact_min_bytes=None) as again:
        assert views_state(again) == live
        again._check()
