"""Tumbling windows, sliding view, partitioned pipeline, and cross-process determinism."""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import subprocess
import sys
import textwrap
import threading
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankengine.trending.hashing import Key
from rankengine.trending.partitions import PartitionedTopK
from rankengine.trending.topk import TopK
from rankengine.trending.windows import (
    LocalSource,
    TumblingWindows,
    Window,
    WindowSource,
)

ROOT = Path(__file__).resolve().parents[1]


class FakeClock:
    """An injectable clock that only moves when told to."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def tops(window: Window) -> list[tuple[object, int]]:
    return [(item.key, item.count) for item in window.top]


# -- tumbling windows ------------------------------------------------------------


def test_window_rollover_publishes_and_starts_fresh() -> None:
    clock = FakeClock(100.0)
    seen: list[Window] = []
    tw = TumblingWindows(10.0, k=2, width=64, depth=2, clock=clock, on_publish=seen.append)
    tw.add("a")
    tw.add("a")
    tw.add("b")
    clock.now = 105.0
    tw.add_many(["b", "b", "c"])
    assert tw.windows() == []
    assert [(i.key, i.count) for i in tw.current_top()] == [("b", 3), ("a", 2)]
    clock.now = 110.0  # the next window starts exactly at its boundary
    tw.add("z")
    tw._check()
    assert len(seen) == 1 and seen[0] == tw.latest()
    window = seen[0]
    assert (window.index, window.start, window.end, window.total) == (10, 100.0, 110.0, 6)
    assert tops(window) == [("b", 3), ("a", 2)]
    assert [(i.key, i.count) for i in tw.current_top()] == [("z", 1)]


def test_event_time_wins_over_clock_and_origin_shifts_windows() -> None:
    tw = TumblingWindows(60.0, k=1, width=32, depth=2, origin=30.0, clock=FakeClock(1e9))
    assert tw.window_of(29.9) == -1 and tw.window_of(30.0) == 0 and tw.window_of(89.99) == 0
    tw.add("a", ts=40.0)
    tw.add("b", 2, ts=95.0)
    assert [(w.index, w.start, tops(w)) for w in tw.windows()] == [(0, 30.0, [("a", 1)])]


def test_an_event_at_a_window_start_belongs_to_that_window() -> None:
    # 3 * 0.7 / 0.7 rounds to 2.9999999999999996: the index must follow Window.start.
    tw = TumblingWindows(0.7, k=1, width=16, depth=1, clock=FakeClock())
    tw.add("a", ts=0.0)
    tw.add("b", ts=3 * 0.7)
    assert tw.current == 3 and [w.index for w in tw.windows()] == [0, 1, 2]
    assert tw.windows()[-1].end == 3 * 0.7
    assert tw.advance(now=tw.origin + 4 * tw.length)[0].start == 3 * 0.7
    tw._check()


@settings(max_examples=200, deadline=None)
@given(
    length=st.floats(1e-3, 1e4),
    origin=st.floats(-1e10, 1e10),
    index=st.integers(-(10**6), 10**6),
)
def test_window_of_agrees_with_the_published_bounds(
    length: float, origin: float, index: int
) -> None:
    tw = TumblingWindows(length, origin=origin, width=8, depth=1, clock=FakeClock())
    tw.add("a", ts=origin + index * length)
    tw.advance(now=origin + (index + 1) * length)
    window = tw.latest()
    assert window is not None and (window.index, window.total) == (index, 1)
    assert tw.window_of(window.start) == index == tw.window_of(window.end) - 1
    tw._check()


def test_late_events_are_dropped_counted_and_change_no_published_window() -> None:
    tw = TumblingWindows(10.0, k=2, width=64, depth=2, clock=FakeClock())
    tw.add("a", ts=1.0)
    tw.add("b", ts=12.0)
    published = tw.windows()
    tw.add("a", 5, ts=9.99)  # window 0 is already published
    tw.add_many(["x", "y"], ts=3.0)
    tw.add_counts({"q": 4}, ts=-50.0)
    assert tw.late_events == 5 + 2 + 4
    assert tw.windows() == published
    assert [(i.key, i.count) for i in tw.current_top()] == [("b", 1)]
    tw.add("c", ts=15.0)  # an event of the open window, out of order, is on time
    assert {i.key for i in tw.current_top()} == {"b", "c"}
    tw._check()


@pytest.mark.parametrize("pipeline", [False, True])
def test_a_published_window_tracker_is_read_only(pipeline: bool) -> None:
    first = TopK(2, width=64, depth=2)
    source: WindowSource = (
        PartitionedTopK(2, k=2, width=64, depth=2) if pipeline else LocalSource(first)
    )
    tw = TumblingWindows(10.0, k=2, source=source, clock=FakeClock())
    tw.add_counts({"a": 3, "b": 1}, ts=1.0)
    tw.add("a", ts=11.0)
    window = tw.latest()
    assert window is not None and window.tracker is not None
    tracker = window.tracker
    before = tracker.to_bytes()
    for write in [
        lambda: tracker.add("b", 10),
        lambda: tracker.add("zzz"),
        lambda: tracker.add_many(["b", "b"]),
        lambda: tracker.add_counts({"b": 10}),
        tracker.reset,
        lambda: setattr(tracker, "total", 0),
        lambda: setattr(tracker, "k", 1),
        lambda: delattr(tracker, "total"),
    ]:
        with pytest.raises(TypeError, match="read-only"):
            write()
    assert tracker.to_bytes() == before
    assert tracker.frozen
    if not pipeline:
        assert first.frozen  # the caller's handle on the first window's tracker, too
    # Reads, merges and writable copies still work; the open window still counts.
    assert [(i.key, i.count) for i in tracker.top()] == [("a", 3), ("b", 1)]
    assert tracker.estimate("a") == 3 and tracker.bounds("b") == (1, 1)
    assert [(i.key, i.count) for i in tw.sliding(2, include_current=True).top()] == [
        ("a", 4),
        ("b", 1),
    ]
    copy = TopK.from_bytes(tracker.to_bytes())
    copy.add("b", 5)
    assert not copy.frozen and copy.estimate("b") == 6 and tracker.estimate("b") == 1
    tw.add("a", ts=12.0)
    assert not tw._source.snapshot().frozen
    tw._check()


def test_empty_windows_are_published_and_long_gaps_are_bounded() -> None:
    tw = TumblingWindows(10.0, k=1, keep=4, width=16, depth=2, clock=FakeClock())
    tw.add("a", ts=5.0)
    tw.add("b", ts=35.0)
    assert [(w.index, w.total, w.top) for w in tw.windows()][1:] == [(1, 0, ()), (2, 0, ())]
    # A gap of a million windows publishes the open window and at most `keep`
    # empty ones, not a million; the history holds the last `keep` by time.
    published = tw.advance(now=10_000_035.0)
    assert [(w.index, w.total) for w in published] == [
        (3, 1),
        (999_999, 0),
        (1_000_000, 0),
        (1_000_001, 0),
        (1_000_002, 0),
    ]
    assert [w.index for w in tw.windows()] == [999_999, 1_000_000, 1_000_001, 1_000_002]
    assert all(w.total == 0 and w.tracker is None for w in tw.windows())
    assert tw.current == 1_000_003
    tw._check()


@pytest.mark.parametrize("pipeline", [False, True])
def test_a_failing_on_publish_leaves_every_window_published_once(pipeline: bool) -> None:
    """on_publish raising (a push that failed) must not tear the history: the
    windows of that roll-over are published once each, every one is handed to
    on_publish, the error reaches the caller, and the event that moved the
    windows is not counted (add raised), so adding it again counts it once."""
    seen: list[tuple[int, int]] = []

    def push(window: Window) -> None:
        seen.append((window.index, window.total))
        if len(seen) == 1:
            raise RuntimeError("push failed")

    source = PartitionedTopK(2, k=2, width=16, depth=2) if pipeline else None
    options = {} if pipeline else {"width": 16, "depth": 2}
    tw = TumblingWindows(
        10.0, k=2, keep=4, clock=FakeClock(), source=source, on_publish=push, **options
    )
    tw.add("a", 3, ts=1.0)
    with pytest.raises(RuntimeError, match="push failed"):
        tw.add("b", ts=25.0)
    assert seen == [(0, 3), (1, 0)]
    assert tw.current == 2
    assert [(w.index, w.total) for w in tw.windows()] == [(0, 3), (1, 0)]
    tw._check()
    tw.add("b", ts=25.0)  # the caller retries the event that raised
    tw.add("c", ts=31.0)
    assert [(w.index, w.total) for w in tw.windows()] == [(0, 3), (1, 0), (2, 1)]
    assert seen == [(0, 3), (1, 0), (2, 1)]
    assert tw.sliding(3).total == 4
    tw._check()


def test_advance_with_no_events_and_the_injectable_clock() -> None:
    clock = FakeClock(0.0)
    tw = TumblingWindows(5.0, k=3, keep=3, width=16, depth=2, clock=clock)
    assert tw.advance() == []
    assert tw.latest() is None and tw.current_top() == []
    clock.now = 4.0
    tw.add("a")  # no event time: the clock's
    clock.now = 21.0
    assert [(w.index, w.total) for w in tw.advance()] == [(0, 1), (1, 0), (2, 0), (3, 0)]
    assert tw.current == 4
    assert [w.index for w in tw.windows()] == [1, 2, 3]
    assert tw.advance() == []
    tw._check()


def test_keep_bounds_the_history() -> None:
    tw = TumblingWindows(1.0, k=1, keep=3, width=16, depth=2, clock=FakeClock())
    for t in range(10):
        tw.add(f"k{t}", ts=t + 0.5)
    assert [w.index for w in tw.windows()] == [6, 7, 8]
    assert [tops(w) for w in tw.windows()] == [[("k6", 1)], [("k7", 1)], [("k8", 1)]]


@settings(max_examples=25, deadline=None)
@given(
    events=st.lists(
        st.tuples(st.sampled_from("abcdefgh"), st.integers(1, 5), st.integers(0, 60)),
        max_size=60,
    ),
    n=st.integers(1, 4),
)
def test_windows_and_sliding_view_match_exact_counts(
    events: list[tuple[str, int, int]], n: int
) -> None:
    tw = TumblingWindows(10.0, k=3, keep=6, width=8, depth=2, clock=FakeClock())
    per_window: dict[int, Counter[str]] = {}
    late = 0
    for key, count, ts in sorted(events, key=lambda e: e[2]):
        tw.add(key, count, ts=float(ts))
        per_window.setdefault(ts // 10, Counter())[key] += count
        tw._check()
    for key, count, ts in events[:5]:  # replay a few as late events
        if tw.current is not None and ts // 10 < tw.current:
            tw.add(key, count, ts=float(ts))
            late += count
    assert tw.late_events == late
    for window in tw.windows():
        truth = per_window.get(window.index, Counter())
        assert window.total == sum(truth.values())
        for item in window.top:
            assert item.lower <= truth[item.key] <= item.count
    view = tw.sliding(n)
    view._check()
    last = [w.index for w in tw.windows()][-n:]
    truth = sum((per_window.get(i, Counter()) for i in last), Counter())
    assert view.total == sum(truth.values())
    for key, count in truth.items():
        lower, upper = view.bounds(key)
        assert lower <= count <= upper


def test_bad_input_to_windows_changes_nothing() -> None:
    tw = TumblingWindows(10.0, k=2, width=16, depth=2, clock=FakeClock())
    tw.add("a", ts=1.0)
    state = (tw.current, tw.late_events)
    before = tw._source.snapshot().to_bytes()
    for call, error in [
        (lambda: tw.add(1.5, ts=2.0), TypeError),
        (lambda: tw.add("a", 0, ts=2.0), ValueError),
        (lambda: tw.add("a", ts=float("nan")), ValueError),
        (lambda: tw.add("a", ts="soon"), ValueError),
        (lambda: tw.add("a", ts=float("inf")), ValueError),
        (lambda: tw.add_many(["a", None], ts=50.0), TypeError),
        (lambda: tw.add_many([1, 1.0], ts=2.0), TypeError),
        (lambda: tw.add_counts({"a": -1}, ts=50.0), ValueError),
        (lambda: tw.sliding(0), ValueError),
        (lambda: tw.sliding(tw.keep + 1), ValueError),
        (lambda: tw.sliding(tw.keep + 2, include_current=True), ValueError),
    ]:
        with pytest.raises(error):
            call()  # type: ignore[no-untyped-call]
        assert (tw.current, tw.late_events) == state
        assert tw._source.snapshot().to_bytes() == before
    for kwargs in [
        {"length": 0.0},
        {"length": float("inf")},
        {"length": True},
        {"length": 1.0, "keep": 0},
    ]:
        with pytest.raises(ValueError):
            TumblingWindows(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["no", 1, None], ids=["str", "int", "none"])
def test_flags_of_the_trending_api_must_be_bools(value: object) -> None:
    """``include_current=1`` counted as True (and ``keep + 1`` windows),
    ``None`` failed with Python's ``unsupported operand``; ``processes="no"``
    started worker processes.  Each is refused, as a board refuses a
    ``with_meta`` that is not a bool, before anything starts or changes."""
    tw = TumblingWindows(10.0, k=2, width=16, depth=2, clock=FakeClock())
    tw.add("a", ts=1.0)
    state = (tw.current, tw.late_events, tw._source.snapshot().to_bytes())
    words = rf"^include_current must be a bool, not {type(value).__name__}$"
    with pytest.raises(TypeError, match=words):
        tw.sliding(1, include_current=value)  # type: ignore[arg-type]
    assert (tw.current, tw.late_events, tw._source.snapshot().to_bytes()) == state
    children = multiprocessing.active_children()
    with pytest.raises(TypeError, match=rf"^processes must be a bool, not {type(value).__name__}$"):
        PartitionedTopK(2, k=2, width=16, depth=2, processes=value)  # type: ignore[arg-type]
    assert multiprocessing.active_children() == children


# -- partitioned pipeline --------------------------------------------------------


def zipf_stream(n: int, keys: int, skew: float, seed: int) -> list[str]:
    rng = random.Random(seed)
    names = [f"item:{i}" for i in range(keys)]
    rng.shuffle(names)
    return rng.choices(names, [1 / (r + 1) ** skew for r in range(keys)], k=n)


def test_partitions_merge_to_the_true_top_and_route_each_key_once() -> None:
    stream = zipf_stream(40_000, 10_000, 1.1, seed=3)
    truth = Counter(stream)
    single = TopK(10, width=256, depth=4)
    with PartitionedTopK(4, k=10, width=256, depth=4, flush_events=7_000) as pipe:
        for i in range(0, len(stream), 5_000):
            pipe.add_many(stream[i : i + 5_000])
            single.add_many(stream[i : i + 5_000])
        for key in stream[:500]:
            pipe.add(key)
            truth[key] += 1
            single.add(key)
        pipe._check()
        merged = pipe.snapshot()
        pipe._check()
    merged._check()
    assert merged.total == len(stream) + 500
    true_top = [key for key, _ in truth.most_common(10)]
    assert [item.key for item in merged.top()] == true_top
    assert [item.key for item in single.top()] == true_top
    for item in merged.top():
        assert item.lower <= truth[item.key] <= item.count


def test_pipeline_roll_starts_every_partition_fresh() -> None:
    pipe = PartitionedTopK(3, k=2, width=32, depth=2)
    pipe.add_many("aaabbc")
    first = pipe.roll()
    assert first.total == 6 and [i.key for i in first.top()] == ["a", "b"]
    assert pipe.snapshot().total == 0
    pipe._check()


def test_pipeline_bad_input_and_overflow_change_nothing() -> None:
    pipe = PartitionedTopK(2, k=2, width=16, depth=2, flush_events=10**9)
    pipe.add_many(["a", "b"])
    state = (dict(pipe._buffer), pipe._buffered)
    for call, error in [
        (lambda: pipe.add(1.5), TypeError),
        (lambda: pipe.add("a", -1), ValueError),
        (lambda: pipe.add_many(["c", None]), TypeError),
        (lambda: pipe.add_many([1, True]), TypeError),
        (lambda: pipe.add_counts({"c": 0}), ValueError),
        (lambda: pipe.add("c", 2**32), OverflowError),
        (lambda: pipe.add_counts({"c": 2**32 - 2}), OverflowError),
    ]:
        with pytest.raises(error):
            call()  # type: ignore[no-untyped-call]
        assert (pipe._buffer, pipe._buffered) == state
    pipe._check()


def test_windows_over_a_pipeline() -> None:
    clock = FakeClock()
    pipe = PartitionedTopK(2, k=2, width=32, depth=2)
    tw = TumblingWindows(10.0, k=2, source=pipe, clock=clock)
    tw.add_many(["a", "a", "b"], ts=1.0)
    tw.add_many(["c"], ts=11.0)
    tw.add("c", ts=12.0)
    assert tops(tw.windows()[0]) == [("a", 2), ("b", 1)]
    assert [(i.key, i.count) for i in tw.current_top()] == [("c", 2)]
    view = tw.sliding(2, include_current=True)
    assert [(i.key, i.count) for i in view.top()] == [("a", 2), ("c", 2)]


class PlainSource:
    """A window source with only the protocol's methods (no ``capacity`` or ``limit``)."""

    def __init__(self, tracker: TopK) -> None:
        self.local = LocalSource(tracker)

    def add(self, key: Key, n: int = 1) -> object:
        return self.local.add(key, n)

    def add_counts(self, counts: Mapping[Key, int]) -> None:
        self.local.add_counts(counts)

    def snapshot(self) -> TopK:
        return self.local.snapshot()

    def roll(self) -> TopK:
        return self.local.roll()


def test_windows_with_a_source_refuse_tracker_options() -> None:
    """Tracker options configure the TopK made when no source is given; with
    a source they would be silently ignored, so they are refused."""
    with pytest.raises(TypeError, match=r"tracker options \(depth, width\) are for the TopK"):
        TumblingWindows(
            10.0, k=2, source=PartitionedTopK(2, k=2), width=64, depth=2, clock=FakeClock()
        )
    tw = TumblingWindows(10.0, k=2, width=64, depth=2, clock=FakeClock())  # no source: used
    assert tw._source.snapshot().sketch().width == 64


def test_windows_refuse_a_k_larger_than_the_source_can_hold() -> None:
    sources: list[tuple[Callable[[], WindowSource], int]] = [
        (lambda: PartitionedTopK(2, k=2, width=32, depth=2), 18),
        (lambda: LocalSource(TopK(2, width=32, depth=2)), 18),
        (lambda: PlainSource(TopK(2, capacity=5, width=32, depth=2)), 5),
    ]
    for make_source, capacity in sources:
        message = f"k=50 is above the source's capacity {capacity}: no window could report 50"
        with pytest.raises(ValueError, match=message):
            TumblingWindows(10.0, k=50, source=make_source(), clock=FakeClock())
        # Up to the capacity, windows and sliding views report k keys.
        tw = TumblingWindows(10.0, k=capacity, source=make_source(), clock=FakeClock())
        tw.add_counts({f"key{i}": 100 - i for i in range(capacity + 3)}, ts=1.0)
        tw.add("late", ts=11.0)
        latest = tw.latest()
        assert latest is not None and len(latest.top) == capacity
        assert len(tw.sliding(1).top()) == capacity
        assert len(tw.sliding(2, include_current=True).top()) == capacity
        tw._check()


def test_local_source_rolls_to_an_empty_tracker() -> None:
    source = LocalSource(TopK(1, width=8, depth=1))
    source.add("a")
    assert source.roll().total == 1 and source.snapshot().total == 0


def test_worker_processes_give_the_same_bytes_as_in_process() -> None:
    stream = zipf_stream(20_000, 5_000, 1.1, seed=9)
    results = []
    for processes in (False, True):
        with PartitionedTopK(
            2, k=5, width=128, depth=3, processes=processes, flush_events=3_000
        ) as pipe:
            assert pipe.processes is processes
            for i in range(0, len(stream), 2_500):
                pipe.add_many(stream[i : i + 2_500])
            pipe.add("late-key", 3)
            parts = [t.to_bytes() for t in pipe.partition_trackers()]
            rolled = pipe.roll()
            results.append((parts, rolled.to_bytes(), pipe.snapshot().total))
    assert results[0] == results[1]
    assert results[0][2] == 0


@pytest.mark.skipif(sys.platform == "win32", reason="fork start method")
def test_a_worker_that_fails_a_request_answers_it_and_leaves_no_stale_reply(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Fault injection through fork: each worker inherits a to_bytes that
    # fails once, for a tracker holding exactly one event.
    real = TopK.to_bytes
    failed = [False]  # per process, after the fork

    def flaky(self: TopK) -> bytes:
        if self.total == 1 and not failed[0]:
            failed[0] = True
            raise OSError("disk on fire")
        return real(self)

    monkeypatch.setattr(TopK, "to_bytes", flaky)
    with PartitionedTopK(2, k=3, width=32, depth=2, processes=True, mp_context="fork") as pipe:
        first = next(f"k{i}" for i in range(100) if pipe.owner(f"k{i}") == 0)
        second = next(f"k{i}" for i in range(100) if pipe.owner(f"k{i}") == 1)
        pipe.add(first)  # partition 0 holds 1 event: its reply fails
        pipe.add(second, 2)
        result: list[object] = []

        def snapshot() -> None:
            try:
                result.append(pipe.snapshot())
            except RuntimeError as exc:
                result.append(exc)

        worker = threading.Thread(target=snapshot, daemon=True)
        worker.start()
        worker.join(30)
        assert not worker.is_alive(), "the parent waits for a reply that never comes"
        assert isinstance(result[0], RuntimeError) and "disk on fire" in str(result[0])
        pipe.add(second, 5)  # partition 1 changes: a stale reply would show 2
        assert {t.key: t.count for t in pipe.snapshot().top()} == {first: 1, second: 7}


# -- determinism across processes ------------------------------------------------

DETERMINISM_SCRIPT = textwrap.dedent(
    """
    import hashlib, json, random
    from rankengine.trending.sketch import CountMinSketch
    from rankengine.trending.topk import TopK
    from rankengine.trending.partitions import PartitionedTopK
    from rankengine.trending.windows import TumblingWindows

    rng = random.Random(5)
    keys = [f"tag:{i}" for i in range(3000)] + [b"raw:%d" % i for i in range(50)] + [7, -7]
    stream = rng.choices(keys, [1 / (r + 1) ** 1.1 for r in range(len(keys))], k=20000)
    sketch = CountMinSketch(512, 4, seed=3)
    tracker = TopK(10, width=512, depth=4, seed=3)
    for key in stream:
        sketch.add(key)
        tracker.add(key)
    pipe = PartitionedTopK(3, k=10, width=256, depth=4)
    windows = TumblingWindows(100.0, k=5, source=pipe, clock=lambda: 0.0)
    for i, key in enumerate(stream):
        windows.add(key, ts=i / 50)
    digest = lambda b: hashlib.sha256(b).hexdigest()
    print(json.dumps({
        "hash_seed": __import__("os").environ.get("PYTHONHASHSEED"),
        "sketch": digest(sketch.to_bytes()),
        "tracker": digest(tracker.to_bytes()),
        "top": [[repr(i.key), i.count, i.error] for i in tracker.top()],
        "windows": [[w.index, [repr(i.key) for i in w.top]] for w in windows.windows()],
        "window_bytes": [digest(w.tracker.to_bytes()) for w in windows.windows() if w.tracker],
    }))
    """
)


def run_with_hash_seed(seed: str) -> dict[str, object]:
    env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", DETERMINISM_SCRIPT],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    result: dict[str, object] = json.loads(out.stdout)
    return result


def test_same_bytes_and_tops_under_different_python_hash_seeds() -> None:
    first, second = run_with_hash_seed("1"), run_with_hash_seed("4242")
    assert (first.pop("hash_seed"), second.pop("hash_seed")) == ("1", "4242")
    assert first == second
    assert len(first["windows"]) == 3  # type: ignore[arg-type]


def test_pipeline_merge_refuses_trackers_of_another_routing() -> None:
    """merge() reads each key from the partition its router names: trackers of
    a pipeline with another partition count or routing seed are refused with a
    clear error (they used to raise IndexError or 'bad candidate counts')."""
    stream = [f"k{i % 11}" for i in range(200)]
    four = PartitionedTopK(4, k=3, width=64, depth=2)
    two = PartitionedTopK(2, k=3, width=64, depth=2)
    reseeded = PartitionedTopK(2, k=3, width=64, depth=2, route_seed=1)
    for pipe in (four, two, reseeded):
        pipe.add_many(stream)
    with pytest.raises(ValueError, match="4 trackers for 2 partitions"):
        two.merge(four.partition_trackers())
    with pytest.raises(ValueError, match="2 trackers for 4 partitions"):
        four.merge(two.partition_trackers())
    with pytest.raises(ValueError, match=r"but tracker \d counted it"):
        two.merge(reseeded.partition_trackers())
    merged = two.merge(two.partition_trackers())
    merged._check()
    truth = Counter(stream)
    assert merged.total == len(stream)
    assert [i.count for i in merged.top()] == [count for _, count in truth.most_common(3)]
    for key, count in truth.items():
        lower, upper = merged.bounds(key)
        assert lower <= count <= upper
    two._check()


@pytest.mark.parametrize("pipeline", [False, True])
def test_a_batch_past_the_counter_limit_publishes_no_window(pipeline: bool) -> None:
    """An event that opens a new window but cannot fit in one raises
    OverflowError before the open window is published: nothing changes."""
    seen: list[Window] = []
    shape = {"width": 16, "depth": 2}
    if pipeline:
        tw = TumblingWindows(
            10.0,
            k=2,
            clock=FakeClock(),
            source=PartitionedTopK(2, k=2, **shape),
            on_publish=seen.append,
        )
    else:
        tw = TumblingWindows(10.0, k=2, clock=FakeClock(), on_publish=seen.append, **shape)
    with pytest.raises(OverflowError):
        tw.add("a", 2**32, ts=1.0)  # the first event: not even the clock moves
    assert tw.current is None
    tw.add("a", ts=1.0)
    for call in [
        lambda: tw.add("b", 2**32, ts=15.0),
        lambda: tw.add_counts({"b": 2**31, "c": 2**31}, ts=15.0),
        lambda: tw.add_counts({"b": 2**32}, ts=1e6),
    ]:
        with pytest.raises(OverflowError, match="counter limit"):
            call()  # type: ignore[no-untyped-call]
        assert (tw.current, tw.windows(), seen, tw.late_events) == (0, [], [], 0)
        assert [(i.key, i.count) for i in tw.current_top()] == [("a", 1)]
        tw._check()
    tw.add("b", 2**32 - 1, ts=15.0)  # exactly at the limit fits in the new window
    assert [(w.index, w.total) for w in tw.windows()] == [(0, 1)]
    tw._check()


@pytest.mark.parametrize("counts", [[("a", 2), ("b", 1)], ["a", "b"], "ab"])
def test_windows_add_counts_of_pairs_or_keys_says_it_takes_a_mapping(counts: object) -> None:
    """As for TopK and the pipeline: pairs or bare keys given to add_counts are
    refused as not a mapping (a str used to fail with AttributeError)."""
    tw = TumblingWindows(10.0, k=2, width=16, depth=2, clock=FakeClock())
    tw.add("a", ts=1.0)
    before = tw._source.snapshot().to_bytes()
    with pytest.raises(TypeError, match="mapping"):
        tw.add_counts(counts, ts=15.0)  # type: ignore[arg-type]
    assert (tw.current, tw.windows(), tw.late_events) == (0, [], 0)
    assert tw._source.snapshot().to_bytes() == before
    tw._check()


def test_times_that_do_not_fit_a_float_window_index_are_refused_with_value_error() -> None:
    """An int time too large for a float, or a finite time so far from the
    origin that its window index is infinite, is a bad event time: ValueError
    (as for NaN), not an OverflowError from float conversion, and nothing changes."""
    tw = TumblingWindows(1e-300, k=1, width=8, depth=1, clock=FakeClock())
    tw.add("a", ts=0.0)
    before = tw._source.snapshot().to_bytes()
    for call in [
        lambda: tw.add("a", ts=10**400),
        lambda: tw.add("a", ts=1e300),
        lambda: tw.add_many(["a"], ts=-1e300),
        lambda: tw.advance(now=1e300),
        lambda: tw.window_of(1e300),
    ]:
        with pytest.raises(ValueError, match="event time"):
            call()  # type: ignore[no-untyped-call]
        assert (tw.current, tw.windows(), tw.late_events) == (0, [], 0)
        assert tw._source.snapshot().to_bytes() == before
    tw._check()
    for kwargs in [{"length": 10**400}, {"length": 1.0, "origin": 10**400}]:
        with pytest.raises(ValueError):
            TumblingWindows(**kwargs)  # type: ignore[arg-type]


PIPE_KEYS = st.one_of(st.sampled_from([f"k{i}" for i in range(12)]), st.integers(-3, 3))
PIPE_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), PIPE_KEYS, st.integers(1, 9)),
        st.tuples(st.just("many"), st.lists(PIPE_KEYS, max_size=10)),
        st.tuples(st.just("counts"), st.dictionaries(PIPE_KEYS, st.integers(1, 9), max_size=6)),
        st.tuples(st.just("flush")),
        st.tuples(st.just("snapshot")),
        st.tuples(st.just("roll")),
    ),
    max_size=30,
)


@settings(max_examples=30, deadline=None)
@given(ops=PIPE_OPS, partitions=st.integers(1, 4), flush_events=st.integers(1, 20))
def test_pipeline_matches_an_exact_counter_step_by_step(
    ops: list[tuple[object, ...]], partitions: int, flush_events: int
) -> None:
    """The pipeline's promise: every key is counted by one partition, and the
    merged snapshot is as exact as the owning partition: with room for every
    key and a sketch where these keys never share all their cells, exact."""
    pipe = PartitionedTopK(
        partitions, k=2, capacity=40, width=4096, depth=2, flush_events=flush_events
    )
    truth: Counter[object] = Counter()
    for op in ops:
        if op[0] == "add":
            pipe.add(op[1], op[2])  # type: ignore[arg-type]
            truth[op[1]] += op[2]  # type: ignore[operator]
        elif op[0] == "many":
            pipe.add_many(op[1])  # type: ignore[arg-type]
            truth.update(op[1])  # type: ignore[arg-type]
        elif op[0] == "counts":
            pipe.add_counts(op[1])  # type: ignore[arg-type]
            truth.update(op[1])  # type: ignore[arg-type]
        elif op[0] == "flush":
            pipe.flush()
        else:
            merged = pipe.snapshot() if op[0] == "snapshot" else pipe.roll()
            merged._check()
            assert merged.total == sum(truth.values())
            assert {i.key: (i.count, i.error) for i in merged.top(40)} == {
                key: (count, 0) for key, count in truth.items()
            }
            if op[0] == "roll":
                truth = Counter()
        pipe._check()
    assert pipe.snapshot().total == sum(truth.values())
    pipe._check()


WINDOW_OPS = st.lists(
    st.one_of(
        # (key, count, window offset from the last time, fraction of a window)
        st.tuples(
            st.just("add"),
            st.sampled_from(["a", "b", "c", "d", b"e", -1, 2**63 - 1]),
            st.integers(1, 4),
            st.sampled_from([-2, -1, 0, 0, 0, 1, 1, 2, 10**6]),
            st.sampled_from([0.0, 0.0, 0.25, 0.5, 0.999]),
        ),
        st.tuples(st.just("advance"), st.integers(0, 3)),
    ),
    max_size=40,
)


@settings(max_examples=40, deadline=None)
@given(ops=WINDOW_OPS, keep=st.integers(1, 4), pipeline=st.booleans())
def test_windows_over_either_source_match_exact_counts_per_window(
    ops: list[tuple[object, ...]], keep: int, pipeline: bool
) -> None:
    """Against an exact Counter per window: events on window starts, out of
    order, after gaps of a million windows, and quiet periods closed by
    advance.  Every event is counted in the window of its time or, if that
    window was published, in late_events; published windows are consecutive,
    each handed to on_publish once, with bounds that hold; the sliding view
    with and without the open window holds the last windows' counts."""
    length, origin = 0.7, -0.3
    source = (
        PartitionedTopK(2, k=2, capacity=3, width=8, depth=2, flush_events=3) if pipeline else None
    )
    options = {} if pipeline else {"capacity": 3, "width": 8, "depth": 2}
    seen: list[Window] = []
    tw = TumblingWindows(
        length,
        k=2,
        keep=keep,
        origin=origin,
        clock=FakeClock(),
        source=source,
        on_publish=seen.append,
        **options,
    )
    per: dict[int, Counter[object]] = {}
    late, current, index = 0, None, 0
    for op in ops:
        if op[0] == "advance":
            index += op[1]  # type: ignore[operator]
            tw.advance(now=origin + index * length)
            current = index if current is None else max(current, index)
            continue
        _, key, n, step, fraction = op
        index += step  # type: ignore[operator]
        ts = origin + (index + fraction) * length  # type: ignore[operator]
        where = tw.window_of(ts)
        assert tw._start(where) <= ts < tw._start(where + 1)
        tw.add(key, n, ts=ts)  # type: ignore[arg-type]
        if current is not None and where < current:
            late += n  # type: ignore[operator]
        else:
            current = where
            per.setdefault(where, Counter())[key] += n  # type: ignore[operator]
        tw._check()
    assert (tw.current, tw.late_events) == (current, late)
    indexes = [w.index for w in tw.windows()]
    if indexes:  # consecutive, up to the open window
        assert indexes == list(range(current - len(indexes), current))  # type: ignore[operator]
    assert [w.index for w in seen] == sorted({w.index for w in seen})
    for window in seen:
        truth = per.get(window.index, Counter())
        assert window.total == sum(truth.values())
        assert (window.top == ()) == (window.total == 0)
        for item in window.top:
            assert item.lower <= truth[item.key] <= item.count
    open_window = [current] if current is not None else []
    for n in range(1, keep + 1):
        for include_current, last in [(False, indexes[-n:]), (True, (indexes + open_window)[-n:])]:
            view = tw.sliding(n, include_current=include_current)
            view._check()
            truth = sum((per.get(i, Counter()) for i in last), Counter())
            assert view.total == sum(truth.values())
            for key, count in truth.items():
                lower, upper = view.bounds(key)  # type: ignore[arg-type]
                assert lower <= count <= upper


@pytest.mark.skipif(sys.platform == "win32", reason="fork start method")
def test_a_closed_process_pipeline_says_so_and_changes_nothing() -> None:
    """After close() has stopped the workers, every call that would count
    or read raises a clear ValueError (a flush raised IndexError), and a
    refused add leaves the buffer as it was.  In-process, close() is a
    no-op and the pipeline keeps working."""
    pipe = PartitionedTopK(2, k=3, width=32, depth=2, processes=True, mp_context="fork")
    pipe.add("a")
    pipe.close()
    for call in (
        lambda: pipe.add("b"),
        lambda: pipe.add_counts({"b": 2}),
        pipe.flush,
        pipe.snapshot,
        pipe.roll,
    ):
        with pytest.raises(ValueError, match="closed"):
            call()
    assert pipe._buffer == {"a": 1}
    pipe.close()  # twice is fine
    local = PartitionedTopK(2, k=3, width=32, depth=2)
    local.add("a")
    local.close()
    local.add("a")
    assert [(t.key, t.count) for t in local.snapshot().top()] == [("a", 2)]


@pytest.mark.skipif(sys.platform == "win32", reason="fork start method")
def test_a_dead_worker_is_named_not_a_broken_pipe() -> None:
    """A worker that died (killed, or a script without the
    ``if __name__ == "__main__":`` guard that spawn needs) surfaces as a
    RuntimeError naming its partition, not a bare BrokenPipeError or
    EOFError from the pipe."""
    pipe = PartitionedTopK(2, k=3, width=32, depth=2, processes=True, mp_context="fork")
    try:
        pipe._procs[1].kill()
        pipe._procs[1].join(10)
        key = next(f"k{i}" for i in range(100) if pipe.owner(f"k{i}") == 1)
        pipe.add(key)
        for call in (pipe.flush, pipe.snapshot, pipe.roll):
            with pytest.raises(RuntimeError, match=r"partition 1's worker process .*exit code -9"):
                call()
    finally:
        pipe.close()
