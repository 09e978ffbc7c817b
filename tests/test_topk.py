"""TopK tracker: bounds against an exact Counter, heavy hitters, merges, bad input."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import msgpack
import pytest
from conftest import load_optimised
from hypothesis import given, settings
from hypothesis import strategies as st

from rankengine.trending.merge import merge_topk
from rankengine.trending.sketch import CountMinSketch
from rankengine.trending.topk import TopItem, TopK

SMALL_KEYS = st.one_of(
    st.sampled_from([f"k{i}" for i in range(30)]),
    st.sampled_from([b"b0", b"b1", b"b2"]),
    st.integers(-3, 3),
)
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), SMALL_KEYS, st.integers(1, 20)),
        st.tuples(st.just("many"), st.lists(SMALL_KEYS, max_size=15)),
        st.tuples(st.just("counts"), st.dictionaries(SMALL_KEYS, st.integers(1, 9), max_size=8)),
    ),
    max_size=40,
)


def apply(tracker: TopK, ops: list[tuple[object, ...]], truth: Counter[object]) -> None:
    for op in ops:
        if op[0] == "add":
            tracker.add(op[1], op[2])  # type: ignore[arg-type]
            truth[op[1]] += op[2]  # type: ignore[operator]
        elif op[0] == "many":
            tracker.add_many(op[1])  # type: ignore[arg-type]
            truth.update(op[1])  # type: ignore[arg-type]
        else:
            tracker.add_counts(op[1])  # type: ignore[arg-type]
            truth.update(op[1])  # type: ignore[arg-type]
        tracker._check()


def assert_bounds(tracker: TopK, truth: Counter[object]) -> None:
    assert tracker.total == sum(truth.values())
    for key, count in truth.items():
        lower, upper = tracker.bounds(key)  # type: ignore[arg-type]
        assert lower <= count <= upper, (key, lower, count, upper)
        assert tracker.estimate(key) == upper  # type: ignore[arg-type]
    for item in tracker.top(tracker.capacity):
        assert item.lower <= truth[item.key] <= item.count


@settings(max_examples=40, deadline=None)
@given(ops=OPS, capacity=st.integers(1, 6), width=st.integers(1, 12), cons=st.booleans())
def test_bounds_hold_against_exact_counter(
    ops: list[tuple[object, ...]], capacity: int, width: int, cons: bool
) -> None:
    tracker = TopK(1, capacity=capacity, width=width, depth=2, seed=3, conservative=cons)
    truth: Counter[object] = Counter()
    apply(tracker, ops, truth)
    assert_bounds(tracker, truth)


@settings(max_examples=40, deadline=None)
@given(ops=OPS, capacity=st.integers(1, 6))
def test_plain_tracker_sketch_equals_plain_sketch_of_stream(
    ops: list[tuple[object, ...]], capacity: int
) -> None:
    # Candidates are counted exactly and written back lazily; with plain update
    # the folded sketch must equal a sketch that saw every event directly.
    tracker = TopK(1, capacity=capacity, width=7, depth=3, seed=5, conservative=False)
    truth: Counter[object] = Counter()
    apply(tracker, ops, truth)
    sketch = CountMinSketch(7, 3, seed=5)
    for key, count in truth.items():
        sketch.add(key, count)  # type: ignore[arg-type]
    assert tracker.sketch() == sketch
    tracker._check()  # sketch() leaves the tracker unchanged


@settings(max_examples=30, deadline=None)
@given(ops=OPS)
def test_conservative_tracker_sketch_is_an_upper_bound(ops: list[tuple[object, ...]]) -> None:
    tracker = TopK(1, capacity=2, width=5, depth=2, seed=5)
    truth: Counter[object] = Counter()
    apply(tracker, ops, truth)
    sketch = tracker.sketch()
    sketch._check()
    assert sketch.total == tracker.total
    for key, count in truth.items():
        assert sketch.query(key) >= count  # type: ignore[arg-type]


def test_with_room_for_every_key_counts_are_exact() -> None:
    rng = random.Random(2)
    stream = [f"key{rng.randrange(40)}" for _ in range(2000)]
    tracker = TopK(5, capacity=40, width=4096, depth=4)
    for key in stream:
        tracker.add(key)
    truth = Counter(stream)
    assert [(i.key, i.count, i.error) for i in tracker.top(40)] == sorted(
        ((key, count, 0) for key, count in truth.items()), key=lambda t: (-t[1], t[0])
    )
    tracker._check()


def zipf_stream(n: int, keys: int, skew: float, seed: int) -> list[str]:
    rng = random.Random(seed)
    names = [f"item:{i}" for i in range(keys)]
    rng.shuffle(names)
    return rng.choices(names, [1 / (r + 1) ** skew for r in range(keys)], k=n)


@pytest.mark.parametrize("batched", [False, True])
def test_finds_true_heavy_hitters_on_a_skewed_stream(batched: bool) -> None:
    stream = zipf_stream(60_000, 20_000, 1.1, seed=7)
    truth = Counter(stream)
    tracker = TopK(20, width=512, depth=4, seed=1)
    if batched:
        for i in range(0, len(stream), 5000):
            tracker.add_many(stream[i : i + 5000])
    else:
        for key in stream:
            tracker.add(key)
    tracker._check()
    top = tracker.top()
    assert [item.key for item in top[:10]] == [key for key, _ in truth.most_common(10)]
    reported = {item.key for item in top}
    assert len(reported & {key for key, _ in truth.most_common(20)}) >= 19
    for item in top:
        assert item.lower <= truth[item.key] <= item.count
        assert item.count - truth[item.key] <= 0.01 * truth[item.key] + 5


def test_add_returns_the_evicted_key() -> None:
    tracker = TopK(1, capacity=2, width=64, depth=2)
    assert tracker.add("a", 5) is None
    assert tracker.add("b", 3) is None
    assert tracker.add("c", 1) is None  # estimate 1 does not beat 3
    assert tracker.add("c", 3) == "b"  # estimate 4 > 3: the smallest goes
    assert "b" not in tracker and "c" in tracker
    assert tracker.bounds("c") == (3, 4)  # 3 counted exactly, 1 from the sketch
    tracker._check()
    # The evicted key's count was written back: its estimate still covers it.
    assert tracker.estimate("b") >= 3


def test_stale_heap_roots_are_refreshed_not_evicted() -> None:
    tracker = TopK(1, capacity=3, width=256, depth=3)
    tracker.add_counts({"a": 1, "b": 2, "c": 3})
    tracker.add("a", 10)  # "a" is the heap root with a stale stored count of 1
    assert tracker.add("d", 3) == "b"  # the real smallest is "b", not stale "a"
    tracker._check()
    assert [item.key for item in tracker.top(3)] == ["a", "c", "d"]


def test_ties_are_reported_in_a_deterministic_order() -> None:
    tracker = TopK(4, width=256, depth=3)
    tracker.add_counts({2: 5, "b": 5, b"x": 5, "a": 5})
    assert [item.key for item in tracker.top()] == ["a", "b", b"x", 2]


# -- merges ------------------------------------------------------------------------


def test_merge_requeries_keys_missing_from_some_local_heaps() -> None:
    # "x" is heavy overall but made only the first tracker's heap; adding the
    # stored heap counts would give it 10 and rank "m" first.
    a = TopK(1, capacity=2, width=256, depth=4, seed=2)
    b = TopK(1, capacity=2, width=256, depth=4, seed=2)
    a.add_counts({"x": 10, "z": 11})
    b.add_counts({"m": 15, "n": 14})
    b.add("x", 8)
    assert "x" in a and "x" not in b
    naive = Counter({"x": 10, "z": 11}) + Counter({"m": 15, "n": 14})
    assert naive.most_common(1)[0][0] == "m"
    merged = merge_topk([a, b])
    merged._check()
    top = merged.top(1)[0]
    assert top.key == "x"
    assert top.lower <= 18 <= top.count
    assert merged.total == 58


def test_merge_with_owner_uses_only_the_owning_tracker() -> None:
    a = TopK(2, width=8, depth=1, seed=0)
    b = TopK(2, width=8, depth=1, seed=0)
    a.add_counts({"k1": 40, "k2": 1})
    b.add_counts({"k3": 30})
    owner = {"k1": 0, "k2": 0, "k3": 1}.__getitem__
    exact = merge_topk([a, b], owner=owner)
    loose = merge_topk([a, b])
    assert exact.top()[0] == TopItem("k1", 40, 0)
    # Without owner the other tracker's sketch may add noise; never less.
    for item in exact.top():
        assert loose.estimate(item.key) >= item.count


@settings(max_examples=25, deadline=None)
@given(parts=st.lists(OPS, min_size=1, max_size=3), weights=st.lists(st.integers(1, 3)))
def test_merge_bounds_hold_against_exact_counter(
    parts: list[list[tuple[object, ...]]], weights: list[int]
) -> None:
    weights = (weights + [1] * len(parts))[: len(parts)]
    trackers, truth = [], Counter[object]()
    for ops, weight in zip(parts, weights, strict=True):
        tracker = TopK(2, capacity=4, width=9, depth=2, seed=1)
        local: Counter[object] = Counter()
        apply(tracker, ops, local)
        trackers.append(tracker)
        for key, count in local.items():
            truth[key] += weight * count
    merged = merge_topk(trackers, weights=weights)
    merged._check()
    assert_bounds(merged, truth)


def test_incompatible_merges_are_refused() -> None:
    a = TopK(1, width=64, depth=2, seed=1)
    for other, message in [
        (TopK(1, width=64, depth=3, seed=1), "depth differs"),
        (TopK(1, width=64, depth=2, seed=2), "seed differs"),
        (TopK(1, width=64, depth=2, seed=1, conservative=False), "conservative differs"),
    ]:
        with pytest.raises(ValueError, match=message):
            merge_topk([a, other])
    with pytest.raises(ValueError, match="at least one"):
        merge_topk([])
    with pytest.raises(ValueError, match="one weight per tracker"):
        merge_topk([a], weights=[1, 2])
    with pytest.raises(ValueError, match="weight must be"):
        merge_topk([a], weights=[0])


# -- serialisation -------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(ops=OPS)
def test_serialisation_round_trip(ops: list[tuple[object, ...]]) -> None:
    tracker = TopK(2, capacity=3, width=16, depth=2, seed=4)
    apply(tracker, ops, Counter())
    copy = TopK.from_bytes(tracker.to_bytes())
    copy._check()
    assert copy.top(3) == tracker.top(3)
    assert copy.to_bytes() == tracker.to_bytes()
    assert copy.sketch() == tracker.sketch()


def test_tampered_serialisation_is_refused() -> None:
    tracker = TopK(2, width=16, depth=2)
    tracker.add_many("aabbc")
    data = tracker.to_dict()
    for change, message in [
        ({"total": 99}, "does not match"),
        ({"format": 2}, "unsupported TopK format"),
        ({"candidates": [["a", 1, 1]]}, "bad candidate counts"),
        ({"candidates": [["a", 2, 0], ["a", 2, 0]]}, "duplicate candidate"),
        ({"candidates": [[1.5, 2, 0]]}, "unsupported key type float"),
        ({"capacity": 2, "k": 1}, "exceed capacity"),
        ({"candidates": 5}, "triples"),
        ({"candidates": [5]}, "triples"),
        ({"candidates": [["a", 2]]}, "triples"),
        ({"format": True}, "unsupported TopK format True"),
        ({"format": 1.0}, "unsupported TopK format 1.0"),
    ]:
        with pytest.raises(ValueError, match=message):
            TopK.from_dict({**data, **change})
    with pytest.raises(ValueError, match="lacks field"):
        TopK.from_dict({k: v for k, v in data.items() if k != "candidates"})


@pytest.mark.parametrize("key", [1.5, None, True, ["a"], {"a": 1}, 2**63])
def test_a_tampered_candidate_key_is_refused_with_value_error(key: object) -> None:
    """Any tampered input is refused with ValueError (as the docs say), a
    candidate key of a type no tracker could hold included: a list or a map
    from msgpack, a float, nil or a bool, an int past the signed 64-bit range."""
    tracker = TopK(2, width=16, depth=2)
    tracker.add_many("aabbc")
    data = tracker.to_dict()
    blob = msgpack.packb({**data, "candidates": [[key, 2, 0]]}, use_bin_type=True)
    with pytest.raises(ValueError, match="serialised TopK candidate"):
        TopK.from_bytes(blob)


def tampered_trackers() -> list[tuple[dict[str, Any], str]]:
    """Serialised trackers whose candidates disagree with their sketch, and the error."""
    tracker = TopK(2, width=16, depth=2)
    tracker.add_many("aabbc")
    data = tracker.to_dict()
    return [
        # A count above the sketch's estimate of the key: the sketch must cover it.
        ({**data, "candidates": [["a", 4, 0]]}, "candidates: 'a' counts 4, above"),
        # A key the sketch never saw.
        ({**data, "candidates": [["zzz", 1, 0]]}, "candidates: 'zzz' counts 1, above"),
    ]


def test_tampered_candidates_are_refused_with_value_error() -> None:
    for data, message in tampered_trackers():
        with pytest.raises(ValueError, match=message):
            TopK.from_dict(data)


def test_tampered_trackers_are_refused_under_python_optimise() -> None:
    """Asserts are stripped by ``python -O``: the loader's checks must not be asserts."""
    cases = tampered_trackers()
    # A tampered sketch inside a tracker is refused by the sketch's own checks.
    sketch = dict(cases[0][0]["sketch"])
    sketch["cells"] = b"\xff" + sketch["cells"][1:]  # cell 0 far above the total
    cases.append(({**cases[0][0], "sketch": sketch}, "serialised sketch is inconsistent"))
    lines = load_optimised(*(("topk", msgpack.packb(data)) for data, _ in cases))
    assert len(lines) == len(cases), lines
    for line, (_, message) in zip(lines, cases, strict=True):
        assert line.startswith("ValueError: serialised "), line
        assert message in line, (line, message)


# -- bad input ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda t: t.add(1.5), TypeError),
        (lambda t: t.add(None), TypeError),
        (lambda t: t.add(["a"]), TypeError),
        (lambda t: t.add(True), TypeError),
        (lambda t: t.add(2**64), ValueError),
        (lambda t: t.add("a", 0), ValueError),
        (lambda t: t.add("a", -3), ValueError),
        (lambda t: t.add("a", 1.0), ValueError),
        (lambda t: t.add_many(["a", "b", 1.0]), TypeError),
        (lambda t: t.add_many(["a", ["unhashable"]]), TypeError),
        (lambda t: t.add_counts({"a": 1, "b": 0}), ValueError),
        (lambda t: t.add_counts({"a": 1, "b": -1}), ValueError),
        (lambda t: t.add_counts({"a": 1, None: 1}), TypeError),
        (lambda t: t.add("a", 2**32), OverflowError),
        (lambda t: t.add_counts({"z": 2**32 - 4}), OverflowError),
        (lambda t: t.top(0), ValueError),
    ],
)
def test_bad_input_raises_and_changes_nothing(call: object, error: type) -> None:
    tracker = TopK(2, capacity=2, width=16, depth=2)
    tracker.add_many(["a", "a", "b", "c"])
    before = tracker.to_bytes()
    with pytest.raises(error):
        call(tracker)  # type: ignore[operator]
    assert tracker.to_bytes() == before
    tracker._check()


@pytest.mark.parametrize("counts", [[("a", 2), ("b", 1)], ["a", "b"], "ab"])
def test_add_counts_of_pairs_or_keys_says_it_takes_a_mapping(counts: object) -> None:
    """add_counts takes a mapping key -> count; pairs or bare keys are refused
    with an error that says so (not 'unsupported key type tuple'), and the
    tracker and a pipeline are left as they were."""
    from rankengine.trending.partitions import PartitionedTopK

    tracker = TopK(2, width=16, depth=2)
    tracker.add("a")
    before = tracker.to_bytes()
    with pytest.raises(TypeError, match="mapping") as caught:
        tracker.add_counts(counts)  # type: ignore[arg-type]
    assert "add_many" in str(caught.value)
    assert tracker.to_bytes() == before
    with PartitionedTopK(2, k=1, width=16, depth=1) as pipe:
        with pytest.raises(TypeError, match="mapping"):
            pipe.add_counts(counts)  # type: ignore[arg-type]
        assert pipe.snapshot().total == 0


@pytest.mark.parametrize("other", [1.0, True])
def test_a_batch_does_not_fold_equal_keys_of_other_types_into_an_int(other: object) -> None:
    # Counter([1, 1.0, True]) has the single key 1: the keys are checked before counting.
    tracker = TopK(2, width=16, depth=2)
    with pytest.raises(TypeError):
        tracker.add_many([1, other])  # type: ignore[list-item]
    assert tracker.total == 0 and 1 not in tracker


def test_candidate_keys_with_lone_surrogates_round_trip() -> None:
    # str keys are hashed as UTF-8 with lone surrogates allowed; they serialise the same way.
    tracker = TopK(2, width=16, depth=2)
    tracker.add_many(["\udcff", "\udcff", "caf\xe9"])
    copy = TopK.from_bytes(tracker.to_bytes())
    copy._check()
    assert copy.top() == tracker.top() == [TopItem("\udcff", 2, 0), TopItem("caf\xe9", 1, 0)]
    assert copy.to_bytes() == tracker.to_bytes()


def test_candidate_lookup_does_not_accept_equal_keys_of_other_types() -> None:
    tracker = TopK(2, width=16, depth=2)
    tracker.add(1)
    with pytest.raises(TypeError):
        tracker.add(1.0)  # equal to the candidate 1 as a dict key, still refused
    with pytest.raises(TypeError):
        tracker.add(True)
    assert 1.0 not in tracker and 1 in tracker


@pytest.mark.parametrize(
    "kwargs",
    [
        {"k": 0},
        {"k": 5, "capacity": 4},
        {"k": 2, "width": 0},
        {"k": 2, "counter_bits": 8},
        {"k": 2, "epsilon": 0.01},
    ],
)
def test_bad_configuration_is_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        TopK(**kwargs)  # type: ignore[arg-type]


def test_reset_and_memory_report() -> None:
    tracker = TopK(2, width=32, depth=2)
    empty = tracker.logical_bytes
    assert empty == 32 * 2 * 4
    tracker.add_many(["abc", "de"])
    assert tracker.logical_bytes == empty + (3 + 40 + 8) + (2 + 40 + 8)
    tracker.reset()
    tracker._check()
    assert (tracker.total, len(tracker), tracker.logical_bytes) == (0, 0, empty)


def test_merge_with_owner_refuses_a_key_counted_by_another_tracker() -> None:
    """With ``owner`` a key's count comes from its owner only: an owner that
    disagrees with where a key was counted must be refused, not give a count
    below the truth (here "x" was counted 10 times and would be reported 3)."""
    a = TopK(1, capacity=1, width=1, depth=1)
    b = TopK(1, capacity=1, width=1, depth=1)
    a.add("x", 10)
    b.add("y", 3)
    before = (a.to_bytes(), b.to_bytes())
    with pytest.raises(ValueError, match=r"owner\('x'\) is 1 but tracker 0 counted it"):
        merge_topk([a, b], owner=lambda key: 1)
    with pytest.raises(ValueError, match=r"owner\('x'\) is 2, not a tracker index in \[0, 2\)"):
        merge_topk([a, b], owner=lambda key: 2)
    assert (a.to_bytes(), b.to_bytes()) == before
    merged = merge_topk([a, b], owner={"x": 0, "y": 1}.__getitem__, capacity=2)
    merged._check()
    assert merged.top(2) == [TopItem("x", 10, 0), TopItem("y", 3, 0)]


@settings(max_examples=30, deadline=None)
@given(parts=st.lists(OPS, min_size=1, max_size=3), weights=st.lists(st.integers(1, 3)))
def test_plain_merge_sketch_equals_sketch_of_the_weighted_concatenated_stream(
    parts: list[list[tuple[object, ...]]], weights: list[int]
) -> None:
    """The guarantee of merge_topk: with plain update, the merged tracker's
    sketch is exactly the sketch of all the streams fed into one (weighted),
    and every key's bounds hold against the exact weighted counts."""
    weights = (weights + [1] * len(parts))[: len(parts)]
    trackers, truth = [], Counter[object]()
    for ops, weight in zip(parts, weights, strict=True):
        tracker = TopK(1, capacity=80, width=7, depth=3, seed=5, conservative=False)
        local: Counter[object] = Counter()
        apply(tracker, ops, local)
        trackers.append(tracker)
        for key, count in local.items():
            truth[key] += weight * count
    before = [t.to_bytes() for t in trackers]
    merged = merge_topk(trackers, weights=weights)
    merged._check()
    assert [t.to_bytes() for t in trackers] == before  # the inputs are untouched
    whole = CountMinSketch(7, 3, seed=5)
    for key, count in truth.items():
        whole.add(key, count)  # type: ignore[arg-type]
    assert merged.sketch() == whole
    assert_bounds(merged, truth)


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda t: setattr(t, "total", t.total + 1),
        lambda t: setattr(t, "k", t.capacity + 1),
        lambda t: t._heap[-1].__setitem__(1, t._heap[0][1]),  # a duplicate sequence number
        lambda t: setattr(t, "_seq", 0),
        lambda t: t._cands["a"].__setitem__(1, t._cands["a"][0]),  # error == count
        lambda t: t._heap[0].__setitem__(0, 99),  # a stored count above the count
        lambda t: t._sketch._table.__setitem__(0, t._sketch._table[0] + 1),
    ],
)
def test_check_catches_each_broken_invariant(corrupt: object) -> None:
    tracker = TopK(2, capacity=3, width=16, depth=2)
    tracker.add_counts({"a": 3, "b": 2, "c": 1})
    tracker._check()
    corrupt(tracker)  # type: ignore[operator]
    with pytest.raises(AssertionError):
        tracker._check()


@settings(max_examples=30, deadline=None)
@given(
    parts=st.lists(st.tuples(OPS, st.booleans(), OPS), min_size=1, max_size=3),
    weights=st.lists(st.integers(1, 3)),
    later=OPS,
    capacity=st.integers(1, 5),
    cons=st.booleans(),
)
def test_bounds_hold_through_round_trips_nested_merges_and_later_writes(
    parts: list[tuple[list[tuple[object, ...]], bool, list[tuple[object, ...]]]],
    weights: list[int],
    later: list[tuple[object, ...]],
    capacity: int,
    cons: bool,
) -> None:
    """count - error <= true <= count, and the estimate bounds every key, for a
    tracker that was serialised and written to again, for the merge of such
    trackers, for that merge written to again, merged again with an input,
    and merged with itself; merging is commutative (same bytes in any order)."""
    weights = (weights + [1] * len(parts))[: len(parts)]
    trackers, truths = [], []
    for before, reload, after in parts:
        tracker = TopK(1, capacity=capacity, width=6, depth=2, seed=8, conservative=cons)
        truth: Counter[object] = Counter()
        apply(tracker, before, truth)
        if reload:
            tracker = TopK.from_bytes(tracker.to_bytes())
            assert_bounds(tracker, truth)
        apply(tracker, after, truth)
        assert_bounds(tracker, truth)
        trackers.append(tracker)
        truths.append(truth)
    merged = merge_topk(trackers, weights=weights)
    assert merge_topk(trackers[::-1], weights=weights[::-1]).to_bytes() == merged.to_bytes()
    total: Counter[object] = Counter()
    for truth, weight in zip(truths, weights, strict=True):
        for key, count in truth.items():
            total[key] += weight * count
    merged._check()
    assert_bounds(merged, total)
    apply(merged, later, total)
    assert_bounds(merged, total)
    again = merge_topk([merged, trackers[0]])
    again._check()
    assert_bounds(again, total + truths[0])
    doubled = merge_topk([again, again])
    doubled._check()
    assert_bounds(doubled, Counter({key: 2 * n for key, n in (total + truths[0]).items()}))
