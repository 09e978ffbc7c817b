"""Key validation of the approximate structures: count_keys against the
per-key check it stands for."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rankengine.trending.hashing import INT_KEY_MAX, check_key, count_keys


class _Text(str):
    """A str subclass: not a key type (keys are exactly str, bytes or int)."""


_ANY_KEY = st.one_of(
    st.text(max_size=3),
    st.binary(max_size=3),
    st.integers(-3, 3),
    st.integers(INT_KEY_MAX, INT_KEY_MAX + 1),
    st.sampled_from([1.0, 0.0, True, False, None, (1,), _Text("a"), ["x"]]),
)


def _first_error(keys: list[Any]) -> type[Exception] | None:
    """What check_key raises for the first bad key, or None."""
    for key in keys:
        try:
            check_key(key)
        except (TypeError, ValueError) as exc:
            return type(exc)
    return None


@given(st.lists(_ANY_KEY, max_size=12))
def test_count_keys_refuses_exactly_what_the_per_key_check_refuses(keys: list[Any]) -> None:
    """count_keys checks the distinct keys when they are all text, else all
    keys: either way it must raise what check_key raises for the first bad
    key (including a float or bool that Counter merged into an equal int),
    and otherwise count like Counter."""
    expected = _first_error(keys)
    if expected is None:
        assert count_keys(keys) == Counter(keys)
        assert count_keys(iter(keys)) == Counter(keys)
    else:
        with pytest.raises(expected):
            count_keys(keys)


@pytest.mark.parametrize(
    "keys",
    [[1, 1.0], [1.0, 1], [1, True], [True, 1], ["a", 1, 1.0], [0, False], ["a", _Text("a")]],
)
def test_count_keys_sees_a_key_merged_into_an_equal_one(keys: list[Any]) -> None:
    """Counter keeps one of two equal keys; the other must still be refused."""
    with pytest.raises(TypeError):
        count_keys(keys)
