"""Everything a board stores prints, replays and exports (issue 22).

Ints beyond Python's int-to-string limit (4,300 digits by default) and the
infinities are accepted by every board; ``repr`` of an ``Entry`` and
``rankengine replay`` (text, CSV, JSON) must then write them exactly, and
the JSON must be strict JSON (read here with a parser that refuses
``Infinity`` and ``NaN``).
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from redis_service import redis_board

from rankengine import DurableLeaderboard, Entry, Leaderboard
from rankengine.board.plain import from_json, int_text, plain_repr, to_json
from rankengine.cli.log import main

HUGE = 2**100_000 + 12_345  # 30,103 decimal digits: past the default limit of 4,300


def _no_constants(name: str) -> Any:
    raise ValueError(f"not JSON: {name}")


def strict_loads(text: str) -> Any:
    """``json.loads`` that refuses ``Infinity``, ``-Infinity`` and ``NaN``."""
    return json.loads(text, parse_constant=_no_constants)


def _cli(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def huge_board(tmp_path: Path) -> Path:
    """A closed durable board holding huge ints, infinities and odd metadata."""
    path = tmp_path / "board"
    with DurableLeaderboard(str(path)) as board:
        board.set("big", HUGE, meta={"n": -HUGE, "nan": math.nan, "b": b"\xff"})
        board.set("neg", -HUGE)
        board.set("top", math.inf, meta={"$int": "0x10"})
        board.set("bottom", -math.inf)
        board.set(HUGE, 7)  # an int member past the limit
    return path


def test_int_text_is_exact_and_reads_back() -> None:
    limit = sys.get_int_max_str_digits()
    cases = [(0, False), (-1, False), (10**limit - 1, False), (-(10**limit - 1), False)]
    cases += [(10**limit, True), (HUGE, True), (-HUGE, True)]  # limit + 1 digits and more
    for value, in_hex in cases:
        text = int_text(value)
        assert int(text, 0) == value
        assert text.startswith(("0x", "-0x")) == in_hex


def test_repr_of_an_entry_holds_huge_ints(huge_board: Path) -> None:
    with DurableLeaderboard(str(huge_board)) as board:
        entries = board.top(len(board), with_meta=True)
    text = repr(entries)
    assert hex(HUGE) in text and hex(-HUGE) in text
    # the repr is a Python expression of the same values
    again = eval(text, {"Entry": Entry, "inf": math.inf, "nan": math.nan})
    assert repr(again) == text
    assert again[0] == entries[0] and again[2:] == entries[2:]  # (entries[1] holds a NaN)
    assert repr(entries[0]) == "Entry(member='top', score=inf, rank=1, meta={'$int': '0x10'})"


@pytest.mark.parametrize("fmt", ["text", "csv", "json"])
def test_replay_prints_every_stored_value(huge_board: Path, fmt: str) -> None:
    code, out, err = _cli(["replay", str(huge_board), "--format", fmt])
    assert (code, err) == (0, "")
    assert len(out.splitlines()) == 5 + (fmt == "csv")
    if fmt == "text":
        assert hex(HUGE) in out and hex(-HUGE) in out and "-inf" in out
    elif fmt == "csv":
        rows = list(csv.reader(io.StringIO(out)))[1:]
        assert [(int(r[1], 0) if r[1].startswith("0x") else r[1]) for r in rows] == [
            "top",
            "big",
            HUGE,
            "neg",
            "bottom",
        ]
        assert [float(r[2]) if "inf" in r[2] else int(r[2], 0) for r in rows] == [
            math.inf,
            HUGE,
            7,
            -HUGE,
            -math.inf,
        ]


def test_replay_json_is_strict_json_and_reads_back(huge_board: Path) -> None:
    code, out, _ = _cli(["replay", str(huge_board), "--format", "json"])
    assert code == 0
    rows = [from_json(strict_loads(line)) for line in out.splitlines()]
    got = {row["member"]: (row["score"], row["meta"]) for row in rows}
    with DurableLeaderboard(str(huge_board)) as board:
        want = {e.member: (e.score, e.meta) for e in board.top(len(board), with_meta=True)}
    assert {member: score for member, (score, _) in got.items()} == {
        member: score for member, (score, _) in want.items()
    }
    big_meta = got["big"][1]
    assert big_meta["n"] == -HUGE and math.isnan(big_meta["nan"]) and big_meta["b"] == "\\xff"
    # a dict that looks like an encoding is kept as the dict it was
    assert got["top"][1] == {"$int": "0x10"}


def _times_huge(k: int) -> int:
    return k * HUGE


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.text(max_size=5)
    | st.integers()
    | st.integers(-3, 3).map(_times_huge)  # (Hypothesis cannot print HUGE itself)
    | st.floats(allow_nan=False),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(["a", "$int", "$float", "$dict"]), inner, max_size=2)
    ),
    max_leaves=10,
)


@given(json_values)
def test_to_json_round_trips_through_a_strict_parser(value: Any) -> None:
    text = json.dumps(to_json(value), allow_nan=False)
    assert from_json(strict_loads(text)) == value


def test_nan_round_trips() -> None:
    back = from_json(strict_loads(json.dumps(to_json([math.nan]), allow_nan=False)))
    assert math.isnan(back[0])


@pytest.mark.parametrize(
    "bad", [{"$int": "twelve"}, {"$float": "1.5"}, {"$float": "x"}, {"$int": 5}]
)
def test_from_json_refuses_a_malformed_encoding(bad: Any) -> None:
    with pytest.raises(ValueError, match=r"\$|invalid"):
        from_json(bad)


def test_plain_repr_of_composite_scores() -> None:
    assert plain_repr((HUGE, 1.5)) == f"({hex(HUGE)}, 1.5)"
    assert plain_repr((1,)) == "(1,)"
    board = Leaderboard()
    board.set("a", -HUGE)
    assert repr(board.entry("a")) == f"Entry(member='a', score={hex(-HUGE)}, rank=1, meta=None)"


def test_errors_about_huge_ints_print() -> None:
    """An error that shows a score or member (an out-of-range score, an
    overflow) describes a huge int by its size instead of failing."""
    board = Leaderboard()
    board.set("a", HUGE)
    with pytest.raises(OverflowError, match=r"a positive int of 100001 bits"):
        board.incr("a", 0.5)


@pytest.mark.redis
def test_a_redis_board_refuses_a_huge_int_with_a_message() -> None:
    """A Redis board holds scores in a double's range: a huge int is refused
    (nothing stored), with a message that prints."""
    board = redis_board()
    with pytest.raises(ValueError, match=r"a positive int of 100001 bits is outside the range"):
        board.set("x", HUGE)
    with pytest.raises(ValueError, match=r"a negative int of 100001 bits"):
        board.set(-HUGE, 1)
    assert board.items() == []
