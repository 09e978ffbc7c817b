"""A periodic view holds the periods its events make, whatever was read.

The ledger's clock is the latest event time of any view, so a filtered or
keyed periodic view (or one whose member was forgotten) may be behind it.
A read used to make the current period's board at that clock: state no
replay of the events makes, so the same ledger reopened did not hold it
(``periods()`` and the standings differed).  Here: random events, reads,
compactions and forgets, then the live ledger's periods and standings
against the same ledger reopened, ``_check()`` on both.
"""

from __future__ import annotations

import contextlib
import tempfile
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rankengine import Ledger

DAY_MS = 86_400_000
PERIODIC = ("daily", "eu", "region")


def add_views(ledger: Ledger) -> None:
    ledger.add_view("all")
    ledger.add_view("daily", "periodic", calendar="daily", keep=2, grace=3600, late="drop")
    ledger.add_view("eu", "periodic", calendar="daily", keep=1, where={"region": "eu"})
    ledger.add_view("region", "periodic", calendar="daily", by="region")


def periods(ledger: Ledger) -> dict[Any, Any]:
    """Every periodic board's periods, each with its standings."""
    boards: list[tuple[Any, Any]] = [(n, ledger[n]) for n in ("daily", "eu")]
    boards += [(("region", k), b) for k, b in sorted(ledger["region"].items())]
    return {
        name: [(p.name, periodic.is_open(p), periodic.items(period=p)) for p in periodic.periods()]
        for name, periodic in boards
    }


def read(ledger: Ledger, view: str, back: int) -> None:
    """The current period's top, or a period ``back`` days before it."""
    boards = list(ledger[view].values()) if view == "region" else [ledger[view]]
    for periodic in boards:
        if back == 0:
            periodic.top(3)
        else:
            day = periodic.period_of(max(0, ledger._time - back * DAY_MS) / 1000)
            with contextlib.suppress(KeyError):  # (older than keep)
                periodic.top(3, period=day)


STEP = st.one_of(
    st.tuples(
        st.just("record"),
        st.sampled_from("abc"),
        st.sampled_from(["incr", "incr", "set", "remove"]),
        st.sampled_from([0, 1_000, DAY_MS // 2, DAY_MS, 2 * DAY_MS]),
        st.sampled_from(["eu", "us"]),
    ),
    st.tuples(st.just("read"), st.sampled_from(PERIODIC), st.integers(0, 2)),
    st.tuples(st.just("compact")),
    st.tuples(st.just("forget"), st.sampled_from("abc"), st.booleans()),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(STEP, max_size=14))
def test_reads_make_no_period_a_reopen_lacks(steps: list[tuple[Any, ...]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        t = 0
        with Ledger.open(tmp, fsync="never", compact_min_bytes=None, now=lambda: 0) as ledger:
            add_views(ledger)
            for step in steps:
                if step[0] == "record":
                    _, member, op, dt, region = step
                    t += dt
                    value = None if op == "remove" else 1 + t % 5
                    ledger.record(member, value, op=op, t_ms=t, attrs={"region": region})
                elif step[0] == "read":
                    read(ledger, step[1], step[2])
                elif step[0] == "compact":
                    ledger.compact()
                else:
                    ledger.forget(step[1], from_log=step[2])
                ledger._check()
            live = periods(ledger)
            ledger._check()
        with Ledger.open(tmp, fsync="never", compact_min_bytes=None) as again:
            again._check()
            assert periods(again) == live
            again._check()


def test_a_read_of_a_filtered_view_behind_the_clock_makes_no_period(tmp_path: Any) -> None:
    """The case first found: a read at the ledger's clock, a compaction,
    then an event the next day (the read's day stayed held, closed, live)."""
    with Ledger.open(tmp_path, fsync="never", now=lambda: 0) as ledger:
        ledger.add_view("eu", "periodic", calendar="daily", keep=1, where={"region": "eu"})
        ledger.record("ann", 1, t_ms=0, attrs={"region": "us"})
        assert ledger["eu"].top(3) == []
        ledger.compact()
        ledger.record("bob", 2, t_ms=DAY_MS, attrs={"region": "eu"})
        live = [p.name for p in ledger["eu"].periods()]
        ledger._check()
    with Ledger.open(tmp_path, fsync="never") as again:
        assert [p.name for p in again["eu"].periods()] == live == ["1970-01-02"]
        again._check()


def test_after_forgetting_a_periods_only_member_a_read_makes_no_period(tmp_path: Any) -> None:
    """The forgotten member's event stays the ledger's clock; the read of the
    current period answers empty and makes no board."""
    with Ledger.open(tmp_path, fsync="never", now=lambda: 0) as ledger:
        ledger.add_view("daily", "periodic", calendar="daily", keep=2)
        ledger.record("bob", 1, t_ms=0)
        ledger.record("ann", 5, t_ms=DAY_MS)
        ledger.forget("ann")
        assert ledger["daily"].top(3) == [] and ledger["daily"].current.name == "1970-01-02"
        ledger.record("cid", 1, t_ms=2 * DAY_MS)
        live = [(p.name, ledger["daily"].items(period=p)) for p in ledger["daily"].periods()]
        ledger._check()
    with Ledger.open(tmp_path, fsync="never") as again:
        got = [(p.name, again["daily"].items(period=p)) for p in again["daily"].periods()]
        assert got == live == [("1970-01-01", [("bob", 1)]), ("1970-01-03", [("cid", 1)])]
        again._check()
