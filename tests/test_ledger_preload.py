"""Loading a ledger's unloaded periods before anyone reads them.

``Ledger.preload()`` loads every closed period the open left unloaded
(rankengine.ledger.preload); ``preload=True`` / ``AsyncLedger.open`` does it
on a daemon thread.  Here, on real files: after a preload every period is
loaded and every read equals the model's (an in-memory ledger fed the same
events); a background preload racing with records, compactions and
``forget`` leaves ``_check()`` passing and the model's results; ``close()``
stops it with no thread left; a failed load is raised, not swallowed; from
asyncio the loads run off the loop's thread.
"""

from __future__ import annotations

import asyncio
import os
import random
import threading
from array import array
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_ledger_lazy import (
    DAY_MS,
    T0_MS,
    all_unloaded,
    fill,
    make,
    reads,
    record,
    unloaded,
    without_clocks,
)

from rankengine import DecayedLeaderboard, Ledger, PeriodicLeaderboard, SlidingWindowLeaderboard
from rankengine.ledger.aio import AsyncLedger
from rankengine.ledger.front import sliced_map
from rankengine.timed.lazy import Unloaded

THREAD = "rankengine-preload"


def opened(path: Path, **options: Any) -> Ledger:
    return Ledger.open(str(path), fsync="never", compact_min_bytes=None, **options)


def written(path: Path, days: int, members: int = 6) -> Ledger:
    """A ledger with ``days`` days of events in ``path`` (compacted, so a
    reopen leaves the closed periods unloaded), and its model."""
    model = make(None)
    with make(str(path)) as ledger:
        for event in fill(ledger, days, members):
            record(model, event)
        ledger.compact()
    return model


def preload_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == THREAD]


@pytest.mark.parametrize(("days", "members"), [(1, 3), (2, 6), (3, 6), (9, 4), (10, 40)])
def test_preload_loads_every_period_and_reads_as_a_full_reopen(
    tmp_path: Path, days: int, members: int
) -> None:
    model = written(tmp_path, days, members)
    with make(str(tmp_path)) as lazy:
        expected = reads(lazy)  # (every read loads: a fully loaded reopen)
        assert not any(all_unloaded(lazy).values())
    assert expected == reads(model)
    with make(str(tmp_path)) as again:
        had = all_unloaded(again)
        assert any(had.values()) == (days > 1)
        assert again.preload() is None
        assert not any(all_unloaded(again).values())
        again._check()
        assert again.preload() is None  # idempotent: nothing left to load
        assert reads(again) == expected


def test_preload_with_nothing_unloaded_is_a_no_op(tmp_path: Path) -> None:
    memory = make(None)
    fill(memory, 3)
    before = reads(memory)
    assert memory.preload() is None
    done = memory.preload(background=True)
    assert done is not None and done.wait(30) and done.error is None
    assert reads(memory) == before


@pytest.mark.parametrize("seed", range(6))
def test_background_preload_racing_with_writes_compaction_and_forget(
    tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    model = written(tmp_path, 4, 30)
    with make(str(tmp_path)) as again:
        assert any(all_unloaded(again).values())
        preloader = again.preload(background=True)
        assert preloader is not None
        # a second call returns the running one; a new one only once the first has finished
        second = again.preload(background=True)
        assert second is preloader or not preloader.running
        forgot = False
        for step in range(60):
            action = rng.random()
            if action < 0.05:
                again.compact()
            elif action < 0.08 and not forgot:
                member = f"p{rng.randrange(30)}"
                again.forget(member)
                model.forget(member)
                forgot = True
            else:
                # into the open day, the next ones (which drop the oldest
                # periods, maybe while they load), or late into an earlier
                # one (refused or dropped as they would be without a preload)
                day = rng.choice([3, 3, 3, 2, 4, 5])
                event = {
                    "member": f"p{rng.randrange(40)}",
                    "value": rng.randrange(1, 9),
                    "t_ms": T0_MS + day * DAY_MS + 7_200_000 + step,
                    "attrs": {"region": rng.choice(["eu", "us"])},
                }
                try:
                    record(model, event)
                except ValueError:
                    continue
                record(again, event)
            if step % 10 == 0:
                again._check()
        assert preloader.wait(60)
        assert not any(all_unloaded(again).values())
        again._check()
        assert without_clocks(reads(again), not forgot) == without_clocks(reads(model), not forgot)
    with make(str(tmp_path)) as third:
        assert without_clocks(reads(third), not forgot) == without_clocks(reads(model), not forgot)


def test_close_stops_a_running_preload(tmp_path: Path) -> None:
    written(tmp_path, 4)
    errors: list[BaseException] = []
    hook = threading.excepthook
    threading.excepthook = lambda args: errors.append(args.exc_value)  # type: ignore[assignment]
    try:
        again = make(str(tmp_path))
        daily = again["daily"]
        before = all_unloaded(again)
        assert len(before["daily"]) == 2
        with daily._lock:  # the preloader waits here, at its first period
            preloader = again.preload(background=True)
            assert preloader is not None and preloader.running
            closer = threading.Thread(target=again.close)
            closer.start()
            while not preloader._stop.is_set():
                closer.join(0.01)
        closer.join(60)
        assert not closer.is_alive() and not preloader.running
        assert preload_threads() == []
        assert errors == [] and preloader.error is None
        # stopped after the load under way: the rest is still unloaded
        left = all_unloaded(again)
        assert sum(map(len, left.values())) >= sum(map(len, before.values())) - 1
        again._check()
    finally:
        threading.excepthook = hook


def test_a_failed_background_load_is_raised_not_swallowed(tmp_path: Path) -> None:
    written(tmp_path, 3)
    with make(str(tmp_path)) as again:
        asc = again["asc"]
        (name,) = unloaded(asc)
        peeked = asc._boards.peek(name)
        assert isinstance(peeked, Unloaded)
        hidden = str(tmp_path / "hidden.snap")
        os.replace(peeked.path, hidden)
        preloader = again.preload(background=True)
        assert preloader is not None
        with pytest.raises(OSError):
            preloader.wait(60)
        assert isinstance(preloader.error, OSError)
        assert [(v, p) for v, p, _ in preloader.failed] == [("asc", name)]
        assert unloaded(asc) == [name]  # the rest loaded, this one left as it was
        assert not unloaded(again["daily"])
        with pytest.raises(OSError):  # its read raises the same, as a lazy read would
            asc.board(name)
        with pytest.raises(OSError):
            again.preload()
        os.replace(hidden, peeked.path)
        again.preload()
        assert unloaded(asc) == [] and asc.board(name).items()
        again._check()


def _watch_loads(ledger: Ledger, threads: list[int]) -> int:
    """Note the thread of every period load of ``ledger`` (the loads
    themselves unchanged); return how many periods are unloaded."""
    count = 0
    for view in ledger.views:
        boards = ledger[view]
        for periodic in boards.values() if view == "region" else [boards]:
            if not hasattr(periodic, "_boards"):
                continue
            for name in periodic.unloaded():
                waiting = periodic._boards.peek(name)
                real = waiting.load_from

                def load(path: str, real: Any = real) -> Any:
                    threads.append(threading.get_ident())
                    return real(path)

                waiting.load_from = load
                count += 1
    return count


@pytest.mark.parametrize("preload", [True, False])
def test_async_open_preloads_off_the_loop(tmp_path: Path, preload: bool) -> None:
    model = written(tmp_path, 3)
    expected = reads(model)
    loads: list[int] = []

    async def main() -> tuple[int, int, dict[str, Any]]:
        loop_thread = threading.get_ident()
        aledger = await AsyncLedger.open(str(tmp_path), fsync="never", preload=preload)
        ledger = aledger.ledger
        if preload:
            await aledger.preloaded()
            count = 0
        else:
            # nothing preloads: the first reads load, on the loop's thread
            assert ledger.preloader is None
            count = _watch_loads(ledger, loads)
            assert count
        state = reads(ledger)
        await aledger.aclose()
        return loop_thread, count, state

    loop_thread, count, state = asyncio.run(main())
    assert state == expected
    assert preload_threads() == []
    if not preload:
        assert len(loads) == count and set(loads) == {loop_thread}


def test_async_preload_loads_on_another_thread_than_the_loops(tmp_path: Path) -> None:
    written(tmp_path, 3)
    loads: list[int] = []

    async def main() -> tuple[int, int, Any]:
        loop_thread = threading.get_ident()
        # opened by hand (to watch the loads before they start), as
        # AsyncLedger.open does: the open, then the background preload
        ledger = await asyncio.to_thread(opened, tmp_path)
        count = _watch_loads(ledger, loads)
        ledger.preload(background=True)
        aledger = AsyncLedger(ledger)
        await aledger.arecord("late", 1, t_ms=T0_MS + 2 * DAY_MS + 3)
        await aledger.preloaded()
        left = all_unloaded(ledger)
        await aledger.aclose()
        return loop_thread, count, left

    loop_thread, count, left = asyncio.run(main())
    assert count and not any(left.values())
    assert len(loads) == count and loop_thread not in loads


@given(
    st.lists(st.tuples(st.sampled_from("abcdefgh"), st.integers(-(2**40), 2**40)), max_size=40),
    st.integers(1, 9),
    st.booleans(),
)
def test_sliced_map_is_dict_zip(rows: list[tuple[str, int]], size: int, typed: bool) -> None:
    members = [m for m, _ in rows]
    scores: Any = array("q", [s for _, s in rows]) if typed else [s for _, s in rows]
    pauses: list[int] = []
    built = sliced_map(members, scores, lambda: pauses.append(1), size)
    assert built == dict(zip(members, list(scores), strict=True))
    assert list(built) == list(dict(zip(members, list(scores), strict=True)))
    assert len(pauses) == max(0, (len(rows) - 1) // size)


def test_a_period_dropped_while_it_loads_is_not_put_back(tmp_path: Path) -> None:
    model = written(tmp_path, 3)
    with make(str(tmp_path)) as again:
        daily = again["daily"]
        assert unloaded(daily) == ["2027-01-04", "2027-01-05"]
        oldest = daily._boards.peek("2027-01-04")
        assert isinstance(oldest, Unloaded)
        started, go = threading.Event(), threading.Event()
        real = oldest.load_from

        def load(path: str) -> Any:  # the real load, once the period is dropped
            started.set()
            go.wait(60)
            return real(path)

        oldest.load_from = load
        done: list[bool] = []
        loader = threading.Thread(target=lambda: done.append(daily.load_unloaded("2027-01-04")))
        loader.start()
        assert started.wait(60)
        # two days on: both closed days fall out of keep=2 while it loads
        event = {"member": "p1", "value": 2, "t_ms": T0_MS + 4 * DAY_MS}
        record(again, event)
        record(model, event)
        assert "2027-01-04" not in [p.name for p in daily.periods()]
        go.set()
        loader.join(60)
        assert done == [False]  # loaded, but not put back: it was dropped
        assert daily._boards.peek("2027-01-04") is None
        again._check()
        assert reads(again) == reads(model)


def test_a_read_and_a_compaction_during_a_load_wait_for_it(tmp_path: Path) -> None:
    model = written(tmp_path, 3)
    with make(str(tmp_path)) as again:
        daily = again["daily"]
        name = "2027-01-05"
        waiting = daily._boards.peek(name)
        assert isinstance(waiting, Unloaded)
        started, go = threading.Event(), threading.Event()
        real = waiting.load_from
        loads: list[str] = []

        def load(path: str) -> Any:  # the real load, held until told
            loads.append(path)
            started.set()
            go.wait(60)
            return real(path)

        waiting.load_from = load
        preloader = again.preload(background=True)
        assert preloader is not None and started.wait(60)
        # during the load the open period answers and takes records
        event = {"member": "p7", "value": 3, "t_ms": T0_MS + 2 * DAY_MS + 5_000_000}
        record(again, event)
        record(model, event)
        assert daily.items() == model["daily"].items()
        # (a read of the loading period waits for it holding the view's lock:
        # records into the view would wait too)
        seen: list[Any] = []
        reader = threading.Thread(target=lambda: seen.append(daily.board(name)))
        compactor = threading.Thread(target=again.compact)
        reader.start()
        compactor.start()
        go.set()
        for thread in (reader, compactor):
            thread.join(60)
            assert not thread.is_alive()
        assert preloader.wait(60)
        assert len(loads) == 1  # one load: the read took the preload's board
        assert seen == [daily._boards.peek(name)] and not unloaded(daily)
        again._check()
        assert reads(again) == reads(model)
    with make(str(tmp_path)) as third:
        assert reads(third) == reads(model)


# ----------------------------------------------------------------------
# The periodic face of a one-view ledger: PeriodicLeaderboard.open(..., preload=)
# ----------------------------------------------------------------------
def one_view(path: Path, days: int = 4, members: int = 300) -> tuple[float, dict[str, Any]]:
    """A one-view ledger (daily, keep=3) with ``days`` days of events,
    compacted; return the clock of its last day and every period's rows."""
    with Ledger.open(str(path), fsync="never", compact_min_bytes=None) as ledger:
        ledger.add_view("daily", "periodic", calendar="daily", keep=3)
        for day in range(days):
            t_ms = T0_MS + day * DAY_MS + 3_600_000
            ledger.record_many(
                [
                    {"member": f"p{i}", "value": (i * 7 + day) % 13 + 1, "t_ms": t_ms}
                    for i in range(members)
                ]
            )
        ledger.compact()
        daily = ledger["daily"]
        rows = {p.name: daily.items(period=p) for p in daily.periods()}
    return (T0_MS + (days - 1) * DAY_MS + 7_200_000) / 1000, rows


def face_rows(face: Any) -> dict[str, Any]:
    return {p.name: face.items(period=p) for p in face.periods()}


def test_the_periodic_face_preloads_now_or_not_at_all_by_default(tmp_path: Path) -> None:
    now, rows = one_view(tmp_path)
    with PeriodicLeaderboard.open(tmp_path, "daily", clock=lambda: now, fsync="never") as face:
        assert face.preloader is None  # the default, as Ledger.open's: each loads on first read
        assert len(face.unloaded()) == 3
        assert face.ledger.preload() is None
        assert face.unloaded() == [] and face.preloader is None
        face._check()
        assert face_rows(face) == rows


def test_the_periodic_face_preloads_in_the_background_and_reads_meanwhile(
    tmp_path: Path,
) -> None:
    now, rows = one_view(tmp_path)
    opened_face = PeriodicLeaderboard.open(
        tmp_path, "daily", clock=lambda: now, fsync="never", preload=True
    )
    with opened_face as face:
        preloader = face.preloader
        assert preloader is not None and preloader is face.ledger.preloader
        while preloader.running:  # reads during the preload (each period's rows)
            for name, expected in rows.items():
                assert face.items(period=name) == expected
        assert preloader.wait(60) and face.unloaded() == []
        face._check()
        assert face_rows(face) == rows
    assert not preload_threads()


def test_the_periodic_face_reads_a_period_the_preload_is_loading(tmp_path: Path) -> None:
    now, rows = one_view(tmp_path)
    with PeriodicLeaderboard.open(tmp_path, "daily", clock=lambda: now, fsync="never") as face:
        names = sorted(face.unloaded())
        waiting = face.periodic._boards.peek(names[0])
        assert isinstance(waiting, Unloaded)
        started, go = threading.Event(), threading.Event()
        real = waiting.load_from

        def load(path: str) -> Any:  # the real load, held until told
            started.set()
            go.wait(60)
            return real(path)

        waiting.load_from = load
        preloader = face.ledger.preload(background=True)
        assert preloader is not None and preloader is face.preloader and started.wait(60)
        assert face.items(period=names[1]) == rows[names[1]]  # another period: loads itself
        assert face.incr("late-comer", 2) == 2  # the open period takes writes
        seen: list[Any] = []
        reader = threading.Thread(target=lambda: seen.append(face.items(period=names[0])))
        reader.start()
        go.set()
        reader.join(60)
        assert not reader.is_alive() and seen == [rows[names[0]]]
        assert preloader.wait(60) and face.unloaded() == []
        face._check()


def test_preload_on_other_directories(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="preload"):
        PeriodicLeaderboard.open(tmp_path / "bad", "daily", preload="yes")  # type: ignore[arg-type]
    assert not (tmp_path / "bad").exists()  # refused before anything is made
    # a periodic board's own directory loads every period at the open: no-op
    with PeriodicLeaderboard.open(tmp_path / "own", "daily", preload=True) as own:
        own.incr("ann", 1)
        assert own.unloaded() == []
    # a window view's buckets are never left unloaded: its open takes no preload=
    with Ledger.open(str(tmp_path / "win")) as ledger:
        ledger.add_view("win", "window", calendar="hourly", buckets=3)
    with pytest.raises(TypeError, match="preload"):
        SlidingWindowLeaderboard.open(tmp_path / "win", "hourly", buckets=3, preload=True)
    # nor a decayed board's (it was taken and ignored, as any unknown option was)
    with Ledger.open(str(tmp_path / "hot")) as ledger:
        ledger.add_view("hot", "decayed", half_life=3600.0)
    for option in ("preload", "bogus"):
        with pytest.raises(TypeError, match=option):
            DecayedLeaderboard.open(tmp_path / "hot", half_life=3600.0, **{option: True})
