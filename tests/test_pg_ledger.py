"""The ledger's views and record API over the PostgreSQL store (real server).

Two ledgers on one table stand for two processes (each with its own
connections and views); a one-process :class:`rankengine.Ledger` fed the
same events in the store's order is the reference.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from postgres_service import postgres_url_fixture  # noqa: F401

from rankengine import Ledger
from rankengine.pg.ledger import PgLedger, ledger_event
from rankengine.pg.store import EventStore

pytestmark = pytest.mark.postgres

DAY_MS = 86_400_000
T0 = 1_800_000_000_000


def _views(ledger: Any) -> None:
    ledger.add_view("alltime", "board")
    ledger.add_view("eu", "board", where={"region": "eu"})
    ledger.add_view("daily", "periodic", calendar="daily", keep=3, late="drop")
    ledger.add_view("by_mode", "board", by="mode")


def _state(ledger: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "alltime": ledger["alltime"].items(),
        "eu": ledger["eu"].items(),
        "by_mode": {k: ledger["by_mode"][k].items() for k in sorted(ledger["by_mode"])},
    }
    daily = ledger["daily"]
    out["daily"] = {p.name: daily.board(p).items() for p in daily.periods()}
    return out


@pytest.fixture
def table(postgres_url: str) -> Iterator[str]:
    name = f"l_{uuid.uuid4().hex[:12]}"
    yield name
    store = EventStore(postgres_url, table=name)
    store.drop()
    store.close()


def _ledger(url: str, table: str) -> PgLedger:
    return PgLedger(EventStore(url, table=table))


def test_two_processes_record_into_one_stream_and_agree(postgres_url: str, table: str) -> None:
    a, b = _ledger(postgres_url, table), _ledger(postgres_url, table)
    for ledger in (a, b):
        _views(ledger)
    rng = random.Random(7)
    for i in range(400):
        ledger = a if rng.random() < 0.5 else b
        attrs = {"region": rng.choice(["eu", "us"]), "mode": rng.choice(["solo", "duo"])}
        t_ms = T0 + i * DAY_MS // 60
        if rng.random() < 0.9:
            ledger.record(f"p{rng.randrange(25)}", rng.choice([1, 2, 5]), t_ms=t_ms, attrs=attrs)
        else:
            ledger.record(f"p{rng.randrange(25)}", op="remove", t_ms=t_ms, attrs=attrs)
    batch = [{"member": "p1", "value": 3, "t_ms": T0 + 400 * DAY_MS // 60}, ("p2", 4)]
    a.record_many(batch)
    for ledger in (a, b):
        ledger.sync()
        ledger._check()
    assert a.last_seq == b.last_seq
    assert _state(a) == _state(b)
    # the reference: one local ledger, the same events in the store's order
    reference = Ledger()
    _views(reference)
    for chunk in a.reader.chunks(0):
        for stored in chunk:
            e = ledger_event(stored)
            reference.record(
                e.member, e.value, op=e.op, t_ms=e.t_ms, attrs=e.attrs, when=e.when, meta=e.meta
            )
    assert _state(a) == _state(reference)
    # a process joining late, and a view added after the events
    late = _ledger(postgres_url, table)
    late.add_view("alltime", "board")
    late.sync()
    late.add_view("eu", "board", where={"region": "eu"})
    assert late["alltime"].items() == a["alltime"].items()
    assert late["eu"].items() == a["eu"].items()
    for ledger in (a, b, late):
        ledger.close()


def test_record_returns_the_outcomes_and_a_refusal_writes_nothing(
    postgres_url: str, table: str
) -> None:
    ledger = _ledger(postgres_url, table)
    ledger.add_view("alltime", "board")
    ledger.add_view("eu", "board", where={"region": "eu"})
    done = ledger.record("ann", 30, attrs={"region": "eu"}, t_ms=T0)
    assert [(o.view, o.score, o.rank_after) for o in done.outcomes] == [
        ("alltime", 30, 1),
        ("eu", 30, 1),
    ]
    with pytest.raises(ValueError, match="NaN"):
        ledger.record("bob", float("nan"))
    with pytest.raises(ValueError, match="item 1"):
        ledger.record_many([("bob", 1), ("bob", float("nan"))])
    assert len(ledger.reader.read(0)) == 1  # nothing of either was appended
    with pytest.raises(ValueError, match="one applier"):
        ledger.add_view("serving", "redis", url="redis://127.0.0.1:1/0", board="b")
    # another process's event comes first when it committed first
    other = _ledger(postgres_url, table)
    other.record("bob", 50, t_ms=T0)
    done = ledger.record("ann", 1, t_ms=T0)
    assert done.outcome("alltime") is not None
    assert ledger["alltime"].items() == [("bob", 50), ("ann", 31)]
    ledger.close()
    other.close()


def test_subscriptions_see_every_process_s_events(postgres_url: str, table: str) -> None:
    ledger, other = _ledger(postgres_url, table), _ledger(postgres_url, table)
    for each in (ledger, other):
        each.add_view("alltime", "board")
    notices: list[Any] = []
    ledger.subscribe("alltime", notices.append, on="overtaken")
    ledger.record("ann", 10, t_ms=T0)
    other.record("bob", 5, t_ms=T0)
    other.record("bob", 20, t_ms=T0)  # passes ann: a notice in the other process
    assert ledger.poll(5) == 2
    assert len(notices) == 1 and "bob" in repr(notices[0]) and "ann" in repr(notices[0])
    ledger.close()
    other.close()
