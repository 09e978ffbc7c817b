"""Count-min sketch and key hashing: invariants, bounds, merges, hash quality, bad input."""

from __future__ import annotations

import random
import re
import struct
import zlib
from collections import Counter
from collections.abc import Callable
from hashlib import blake2b
from typing import Any

import msgpack
import pytest
from conftest import load_optimised
from hypothesis import given, settings
from hypothesis import strategies as st

from rankengine.trending.hashing import HASH_ID, KeyHasher, check_keys, make_indexer
from rankengine.trending.sketch import CountMinSketch, make_updater, shape_for

KEYS = st.one_of(
    st.text(max_size=6),
    st.binary(max_size=6),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
)
STREAM = st.lists(st.tuples(KEYS, st.integers(min_value=1, max_value=50)), max_size=80)


def feed(sketch: CountMinSketch, stream: list[tuple[object, int]]) -> Counter[object]:
    truth: Counter[object] = Counter()
    for key, n in stream:
        sketch.add(key, n)  # type: ignore[arg-type]
        truth[key] += n
        sketch._check()
    return truth


# -- invariants against an exact Counter --------------------------------------------


@settings(max_examples=40, deadline=None)
@given(stream=STREAM, conservative=st.booleans(), width=st.integers(1, 40))
def test_estimate_never_below_true_count(
    stream: list[tuple[object, int]], conservative: bool, width: int
) -> None:
    sketch = CountMinSketch(width, 3, seed=11, conservative=conservative)
    truth = feed(sketch, stream)
    assert sketch.total == sum(truth.values())
    for key, count in truth.items():
        assert sketch.query(key) >= count  # type: ignore[arg-type]


@settings(max_examples=30, deadline=None)
@given(stream=STREAM)
def test_conservative_never_above_plain(stream: list[tuple[object, int]]) -> None:
    plain = CountMinSketch(16, 3, seed=5)
    cons = CountMinSketch(16, 3, seed=5, conservative=True)
    feed(plain, stream)
    truth = feed(cons, stream)
    for key in truth:
        assert truth[key] <= cons.query(key) <= plain.query(key)  # type: ignore[arg-type]


@pytest.mark.parametrize("conservative", [False, True])
def test_documented_error_bound_holds_on_seeded_stream(conservative: bool) -> None:
    epsilon, delta = 0.005, 0.01
    sketch = CountMinSketch(epsilon=epsilon, delta=delta, seed=3, conservative=conservative)
    assert (sketch.width, sketch.depth) == shape_for(epsilon, delta)
    rng = random.Random(1234)
    keys = [f"user:{i}" for i in range(5000)]
    weights = [1 / (i + 1) ** 0.9 for i in range(len(keys))]
    stream = rng.choices(keys, weights, k=40_000)
    truth = Counter(stream)
    for key in stream:
        sketch.add(key)
    bound = epsilon * sketch.total
    assert sketch.error_bound() == pytest.approx(sketch.epsilon * sketch.total)
    over = [key for key in keys if sketch.query(key) - truth[key] > bound]
    # Each key fails with probability <= delta; allow no more than that fraction.
    assert len(over) <= delta * len(keys)
    sketch._check()


def test_error_bound_fails_when_sketch_is_too_small() -> None:
    # The bound test above can fail: a sketch far narrower than epsilon asks for
    # over-counts many keys by more than epsilon * total.
    sketch = CountMinSketch(8, 1, seed=3)
    keys = [f"user:{i}" for i in range(2000)]
    for key in keys:
        sketch.add(key)
    assert sum(sketch.query(k) - 1 > 0.005 * sketch.total for k in keys) > 0.5 * len(keys)


# -- merges ---------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(a=STREAM, b=STREAM, weight=st.integers(1, 3))
def test_plain_merge_equals_sketch_of_concatenated_stream(
    a: list[tuple[object, int]], b: list[tuple[object, int]], weight: int
) -> None:
    left, right, whole = (CountMinSketch(13, 3, seed=8) for _ in range(3))
    feed(left, a)
    feed(right, b)
    feed(whole, a + b * weight)
    left.merge(right, weight=weight)
    left._check()
    assert left == whole
    assert left.to_bytes() == whole.to_bytes()


@settings(max_examples=40, deadline=None)
@given(a=STREAM, b=STREAM)
def test_conservative_merge_is_an_upper_bound(
    a: list[tuple[object, int]], b: list[tuple[object, int]]
) -> None:
    left = CountMinSketch(13, 3, seed=8, conservative=True)
    right = CountMinSketch(13, 3, seed=8, conservative=True)
    truth = feed(left, a) + feed(right, b)
    left.merge(right)
    left._check()
    for key, count in truth.items():
        assert left.query(key) >= count  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "other",
    [
        CountMinSketch(32, 3, seed=1),
        CountMinSketch(64, 2, seed=1),
        CountMinSketch(64, 3, seed=2),
        CountMinSketch(64, 3, seed=1, conservative=True),
        CountMinSketch(64, 3, seed=1, counter_bits=64),
    ],
)
def test_incompatible_merge_is_refused_and_changes_nothing(other: CountMinSketch) -> None:
    sketch = CountMinSketch(64, 3, seed=1)
    sketch.add("a", 3)
    other.add("a", 1)
    before = sketch.to_bytes()
    with pytest.raises(ValueError, match="incompatible count-min sketches"):
        sketch.merge(other)
    assert sketch.to_bytes() == before


def test_merge_refuses_bad_weight_and_non_sketch() -> None:
    sketch = CountMinSketch(8, 2)
    with pytest.raises(ValueError, match="weight"):
        sketch.merge(CountMinSketch(8, 2), weight=0)
    with pytest.raises(ValueError, match="cannot merge a dict"):
        sketch.merge({})  # type: ignore[arg-type]


def test_serialised_sketch_from_another_hash_or_shape_is_refused() -> None:
    sketch = CountMinSketch(16, 2, seed=4)
    sketch.add("x", 2)
    data = sketch.to_dict()
    assert data["hash"] == HASH_ID
    for field, value, message in [
        ("hash", "crc32/v1", "hashed with 'crc32/v1'"),
        ("format", 99, "unsupported sketch format"),
        ("cells", b"\0" * 3, "wrong number of cell bytes"),
        ("total", -1, "bad total"),
        ("depth", 99, "wrong number of cell bytes"),
        ("width", 2**32, "wrong number of cell bytes"),  # 32 GB: refused before allocating
        ("width", "16", "wrong number of cell bytes"),
    ]:
        with pytest.raises(ValueError, match=message):
            CountMinSketch.from_dict({**data, field: value})
    with pytest.raises(ValueError, match="lacks field"):
        CountMinSketch.from_dict({k: v for k, v in data.items() if k != "seed"})
    with pytest.raises(ValueError, match="not a serialised"):
        CountMinSketch.from_bytes(sketch.to_bytes()[:-5])


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("conservative", 1, "conservative must be a bool, got 1"),
        ("conservative", 0, "conservative must be a bool, got 0"),
        ("conservative", "no", "conservative must be a bool, got 'no'"),
        ("conservative", None, "conservative must be a bool, got None"),
        ("format", True, "unsupported sketch format True"),
        ("format", 1.0, "unsupported sketch format 1.0"),
    ],
)
def test_serialised_fields_of_the_wrong_type_are_refused(
    field: str, value: object, message: str
) -> None:
    data = CountMinSketch(16, 2, seed=4).to_dict()
    with pytest.raises(ValueError, match=re.escape(message)):
        CountMinSketch.from_dict({**data, field: value})
    with pytest.raises(ValueError, match=re.escape(message)):
        CountMinSketch.from_bytes(msgpack.packb({**data, field: value}))


def tampered_sketches() -> list[tuple[dict[str, Any], str]]:
    """Serialised sketches whose cells disagree with their total, and the expected error."""
    cases = []
    plain = CountMinSketch(16, 2, seed=4)
    plain.add("x", 2)
    data = plain.to_dict()
    cells = bytearray(data["cells"])
    cells[4 * plain._table.index(0)] = 1  # row 0 no longer sums to the total
    cases.append(({**data, "cells": bytes(cells)}, "cells: row 0 sums to"))
    conservative = CountMinSketch(16, 2, seed=4, conservative=True)
    conservative.add("x", 2)
    data = conservative.to_dict()
    cells = bytearray(data["cells"])
    cells[4 * 5] = 200  # a cell far above the total of 2 (rows may sum below it)
    cases.append(({**data, "cells": bytes(cells)}, "cells: cell 5 is 200, above the total 2"))
    data = conservative.to_dict()
    cases.append(({**data, "total": 1}, "cells: cell .* above the total 1"))
    return cases


def test_tampered_cells_are_refused_with_value_error() -> None:
    for data, message in tampered_sketches():
        with pytest.raises(ValueError, match=message):
            CountMinSketch.from_dict(data)


def test_tampered_cells_are_refused_under_python_optimise() -> None:
    """Asserts are stripped by ``python -O``: the loader's checks must not be asserts."""
    cases = tampered_sketches()
    lines = load_optimised(*(("sketch", msgpack.packb(data)) for data, _ in cases))
    assert len(lines) == len(cases), lines
    for line, (_, message) in zip(lines, cases, strict=True):
        assert line.startswith("ValueError: serialised sketch is inconsistent: "), line
        assert re.search(message, line), (line, message)


@settings(max_examples=30, deadline=None)
@given(stream=STREAM, conservative=st.booleans(), bits=st.sampled_from([32, 64]))
def test_serialisation_round_trip(
    stream: list[tuple[object, int]], conservative: bool, bits: int
) -> None:
    sketch = CountMinSketch(10, 4, seed=99, conservative=conservative, counter_bits=bits)
    feed(sketch, stream)
    copy = CountMinSketch.from_bytes(sketch.to_bytes())
    assert copy == sketch
    assert copy.to_bytes() == sketch.to_bytes()


# -- counters never wrap --------------------------------------------------------------


def test_32_bit_counters_refuse_to_overflow_and_change_nothing() -> None:
    sketch = CountMinSketch(8, 2, conservative=True)
    sketch.add("a", 2**32 - 2)
    before = sketch.to_bytes()
    with pytest.raises(OverflowError, match="counter_bits=64"):
        sketch.add("b", 2)
    assert sketch.to_bytes() == before
    sketch.add("b", 1)  # exactly at the limit is fine
    assert sketch.total == 2**32 - 1
    other = sketch.copy()
    with pytest.raises(OverflowError):
        sketch.merge(other)
    assert sketch == other


def test_64_bit_counters_take_large_counts() -> None:
    sketch = CountMinSketch(8, 2, counter_bits=64)
    sketch.add("a", 2**40)
    sketch.add("a", 2**40)
    assert sketch.query("a") == 2**41
    sketch._check()


def test_64_bit_overflow_does_not_advise_64_bit_counters() -> None:
    """At the 64-bit limit the advice is shorter windows, not the setting
    the sketch already has."""
    sketch = CountMinSketch(8, 2, counter_bits=64)
    sketch.add("a", 2**64 - 2)
    before = sketch.to_bytes()
    with pytest.raises(OverflowError, match="64-bit counter limit") as caught:
        sketch.add("b", 2)
    assert "counter_bits=64" not in str(caught.value)
    assert "shorter windows" in str(caught.value)
    assert sketch.to_bytes() == before


# -- bad input ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "error"),
    [
        (1.5, TypeError),
        (None, TypeError),
        (["unhashable"], TypeError),
        ({"a": 1}, TypeError),
        (True, TypeError),
        (("tuple",), TypeError),
        (2**63, ValueError),
        (-(2**63) - 1, ValueError),
    ],
)
def test_unsupported_keys_raise_and_change_nothing(key: object, error: type) -> None:
    sketch = CountMinSketch(16, 2, conservative=True)
    sketch.add("a")
    before = sketch.to_bytes()
    with pytest.raises(error):
        sketch.add(key)  # type: ignore[arg-type]
    with pytest.raises(error):
        sketch.query(key)  # type: ignore[arg-type]
    with pytest.raises(error):
        check_keys(["ok", key])
    assert sketch.to_bytes() == before


@pytest.mark.parametrize("n", [0, -1, 1.0, "1", True, None])
def test_bad_counts_raise_and_change_nothing(n: object) -> None:
    sketch = CountMinSketch(16, 2)
    before = sketch.to_bytes()
    with pytest.raises(ValueError, match="positive int"):
        sketch.add("a", n)  # type: ignore[arg-type]
    assert sketch.to_bytes() == before


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"width": 10},
        {"width": 0, "depth": 2},
        {"width": 10, "depth": 17},
        {"width": 10, "depth": 2, "epsilon": 0.1},
        {"epsilon": 0.1, "delta": 1e-9},
        {"epsilon": 0.0, "delta": 0.1},
        {"width": 10, "depth": 2, "counter_bits": 16},
        {"width": 10, "depth": 2, "counter_bits": 32.0},
        {"width": 10, "depth": 2, "counter_bits": "32"},
        {"width": 10, "depth": 2, "seed": -1},
        {"width": 10, "depth": 2, "seed": 2**64},
        {"width": 10, "depth": 2, "conservative": 1},
        {"width": 10, "depth": 2, "conservative": "no"},
        {"width": 10, "depth": 2, "conservative": None},
    ],
)
def test_bad_shapes_are_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        CountMinSketch(**kwargs)  # type: ignore[arg-type]


# -- hashing: determinism and quality ---------------------------------------------------


def test_hash_values_are_pinned() -> None:
    # The scheme is the contract that makes sketches mergeable across machines
    # and releases: keyed BLAKE2b, type as personalisation, little-endian words.
    def reference(seed: int, nvalues: int, person: bytes, data: bytes) -> tuple[int, ...]:
        digest = blake2b(
            data, digest_size=4 * nvalues, key=seed.to_bytes(8, "little"), person=person
        ).digest()
        return struct.unpack(f"<{nvalues}I", digest)

    assert KeyHasher(0, 4).values("spam") == (3925711936, 1927761490, 3167874001, 3415475047)
    assert KeyHasher(0, 4).values("spam") == reference(0, 4, b"rankengine:str", b"spam")
    assert KeyHasher(42, 2).values(b"spam") == reference(42, 2, b"rankengine:bytes", b"spam")
    assert KeyHasher(42, 2).values(-7) == reference(
        42, 2, b"rankengine:int", (-7).to_bytes(8, "little", signed=True)
    )
    assert KeyHasher(42, 2).values("\ud800") == reference(
        42, 2, b"rankengine:str", "\ud800".encode("utf-8", "surrogatepass")
    )
    indexer = make_indexer(42, 2, 1000)
    for key in ["spam", b"spam", -7, "\ud800", "ünïcode"]:
        values = KeyHasher(42, 2).values(key)
        assert indexer(key) == (values[0] % 1000, 1000 + values[1] % 1000)


def full_collision_pairs(indexes: Callable[[str], tuple[int, ...]], keys: list[str]) -> int:
    """Pairs of keys that share their cell in every row (they can never be told apart)."""
    groups = Counter(indexes(key) for key in keys)
    return sum(c * (c - 1) // 2 for c in groups.values())


def spread_ok(indexes: Callable[[str], tuple[int, ...]], keys: list[str], width: int) -> bool:
    """Every row uses about as many columns as a random function would."""
    cells = [indexes(key) for key in keys]
    expected = width * (1 - (1 - 1 / width) ** len(keys))
    for row in range(len(cells[0])):
        used = len({idx[row] for idx in cells})
        if used < 0.97 * expected:
            return False
    return full_collision_pairs(indexes, keys) <= 2


def crc32_double_hashing(width: int, depth: int) -> Callable[[str], tuple[int, ...]]:
    """The known-bad scheme: two CRC32s with different seeds, combined by double hashing."""

    def indexes(key: str) -> tuple[int, ...]:
        data = key.encode()
        h1, h2 = zlib.crc32(data, 0x1234), zlib.crc32(data, 0xBEEF)
        return tuple(r * width + (h1 + r * h2) % width for r in range(depth))

    return indexes


def test_same_length_keys_spread_over_columns_in_every_row() -> None:
    width, depth = 1024, 4
    keys = [f"key{i:05d}" for i in range(20_000)]  # all of length 8
    assert spread_ok(make_indexer(7, depth, width), keys, width)
    assert spread_ok(CountMinSketch(width, depth, seed=7).indexes, keys, width)


def test_quality_check_catches_crc32_double_hashing() -> None:
    # The check above must be able to fail: CRC32 is affine, so for equal-length
    # keys crc32(x, s2) == crc32(x, s1) ^ constant and the rows are not
    # independent: keys colliding in one row collide in all of them.
    width, depth = 1024, 4
    keys = [f"key{i:05d}" for i in range(20_000)]
    bad = crc32_double_hashing(width, depth)
    assert not spread_ok(bad, keys, width)
    assert full_collision_pairs(bad, keys) > 1000
    assert full_collision_pairs(make_indexer(7, depth, width), keys) <= 2


def test_seed_changes_the_columns() -> None:
    keys = [f"k{i}" for i in range(200)]
    a, b = make_indexer(1, 3, 4096), make_indexer(2, 3, 4096)
    assert sum(a(k) == b(k) for k in keys) <= 1


def test_generated_updater_matches_the_definition() -> None:
    rng = random.Random(5)
    for depth in (1, 2, 5):
        for conservative in (False, True):
            update = make_updater(depth, conservative)
            from array import array

            table = array("Q", [rng.randrange(10) for _ in range(depth * 3)])
            for _ in range(50):
                idx = tuple(r * 3 + rng.randrange(3) for r in range(depth))
                n = rng.randrange(1, 4)
                expected = list(table)
                m = min(expected[i] for i in idx)
                for i in idx:
                    expected[i] = max(expected[i], m + n) if conservative else expected[i] + n
                est = update(table, idx, n)
                assert list(table) == expected
                assert est == min(expected[i] for i in idx)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"width": 10}, "depth is missing"),
        ({"depth": 3}, "width is missing"),
        ({"epsilon": 0.01}, "delta is missing"),
        ({"delta": 0.01}, "epsilon is missing"),
        ({"width": 10, "depth": 3, "epsilon": 0.01}, "not a mix"),
        ({}, "give width and depth, or epsilon and delta"),
    ],
)
def test_a_half_given_shape_names_what_is_missing(options: dict[str, Any], message: str) -> None:
    # CountMinSketch(10) said "not a mix" though nothing was mixed
    with pytest.raises(ValueError, match=message):
        CountMinSketch(**options)
