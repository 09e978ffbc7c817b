"""Append keys: pruned past the horizon, and never a retry stored twice (real server).

A key is deleted once the server stored it more than a horizon ago; a
retry whose key is that old is refused before anything is sent (its key
may be gone), and a retry inside the horizon finds its key and stores
nothing again, pruning or not.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest
from postgres_service import postgres_url_fixture  # noqa: F401

import rankengine.pg.store as store_module
from rankengine.pg.events import NewEvent
from rankengine.pg.keys import KEY_BYTES, KEY_MARGIN, StaleKeyError, key_time, new_key
from rankengine.pg.store import EventStore

pytestmark = pytest.mark.postgres

HORIZON = KEY_MARGIN + 60.0


@pytest.fixture
def store(postgres_url: str) -> Iterator[EventStore]:
    s = EventStore(postgres_url, table=f"k_{uuid.uuid4().hex[:12]}", key_horizon=HORIZON)
    try:
        yield s
    finally:
        s.drop()
        s.close()


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _age_keys(store: EventStore, seconds: float, key: bytes | None = None) -> None:
    """Make the server's record of a key (or of all) ``seconds`` older."""
    where = "" if key is None else " WHERE ident = %s"
    params: tuple[object, ...] = (seconds,) if key is None else (seconds, key)
    store._writer_conn().execute(
        f"UPDATE {store.table}_batches SET made = made - make_interval(secs => %s){where}", params
    )


def _keys(store: EventStore) -> int:
    return int(store.select(f"SELECT count(*) FROM {store.table}_batches")[0][0])


def test_a_key_carries_the_time_it_was_made() -> None:
    before = _now_ms()
    key = new_key()
    assert len(key) == KEY_BYTES and before <= (key_time(key) or 0) <= _now_ms()
    assert new_key() != new_key()
    assert key_time(b"short") is None


def test_old_keys_are_pruned_and_a_retry_past_the_horizon_is_refused(store: EventStore) -> None:
    events = [NewEvent("incr", "ann", 1), NewEvent("incr", "bob", 2)]
    made = _now_ms() - 200_000  # this append's first attempt was 200 s ago ...
    old_key = new_key(made)
    # (sent then, when its key was young: the store of the time took it)
    young_then = EventStore(store.conninfo, table=store.table, create=False)
    first = young_then.append_many(events, key=old_key)
    young_then.close()
    _age_keys(store, 200, old_key)  # ... and the server stored it then
    fresh_key = new_key()
    fresh = store.append_many(events, key=fresh_key)
    assert _keys(store) == 2
    assert store.prune_keys() == 1  # the old key only
    assert _keys(store) == 1
    # the old append sent again: its key may be gone, so it is refused, unsent
    with pytest.raises(StaleKeyError, match="horizon"):
        store.append_many(events, key=old_key)
    # the fresh one sent again: found, stored once
    assert store.append_many(events, key=fresh_key) == fresh
    assert [e.seq for e in store.read(0)] == first + fresh


def test_a_retry_inside_the_horizon_is_never_stored_twice(store: EventStore) -> None:
    events = [NewEvent("incr", "ann", 1)]
    key = new_key(_now_ms() - int((HORIZON - KEY_MARGIN - 5) * 1000))  # near the limit
    seqs = store.append_many(events, key=key)
    _age_keys(store, HORIZON - KEY_MARGIN - 5, key)
    assert store.prune_keys() == 0  # not past the horizon on the server either
    assert store.append_many(events, key=key) == seqs
    assert len(store.read(0)) == 1


def test_a_shorter_horizon_than_the_store_s_is_refused(store: EventStore) -> None:
    with pytest.raises(ValueError, match="shorter"):
        store.prune_keys(HORIZON - 1)
    with pytest.raises(ValueError, match="key_horizon"):
        EventStore(store.conninfo, table=store.table, key_horizon=KEY_MARGIN)


def test_a_store_prunes_by_itself_every_so_often(
    store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "PRUNE_EVERY", 3)
    store.append("incr", "ann", 1)
    _age_keys(store, HORIZON + 1)
    store.append("incr", "ann", 1)
    assert _keys(store) == 2
    store.append("incr", "ann", 1)  # the third: the old key goes
    assert _keys(store) == 2
    assert len(store.read(0)) == 3


def test_a_version_1_table_has_no_key_times_to_prune(postgres_url: str) -> None:
    store = EventStore(postgres_url, table=f"k_{uuid.uuid4().hex[:12]}", create=False)
    store.create_legacy()
    try:
        store.append("incr", "ann", 1)
        assert store.prune_keys() == 0 and _keys(store) == 1
        store.upgrade()
        _age_keys(store, 7200)
        assert store.prune_keys() == 1
    finally:
        store.drop()
        store.close()
