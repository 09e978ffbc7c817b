"""Every bad input raises a clear error and leaves the board exactly as it was.

Each case asserts the error type, then compares the board's items, metadata
and logical clock before and after, and runs ``_check()``.
"""

from __future__ import annotations

import enum
import math
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest
from conftest import snapshot

NAN = math.nan
INF = math.inf


def seeded(make_board: Any, **kwargs: Any) -> Any:
    board = make_board(**kwargs)
    board.set_many([("ann", 50), ("bob", 30), ("cid", 30), ("dee", -INF), ("eve", INF)])
    board.set_meta("ann", {"name": "Ann"})
    board.set_meta("bob", {"name": "Bob", "tags": ["x"]})
    board._check()
    return board


def assert_rejected(board: Any, action: Any, error: Any) -> None:
    before = snapshot(board)
    with pytest.raises(error):
        action(board)
    board._check()
    assert snapshot(board) == before


def case(action: Any, error: type[Exception], name: str) -> Any:
    return pytest.param(action, error, id=name)


BAD_SCORES = [
    case(lambda b: b.set("new", NAN), ValueError, "set-nan-new"),
    case(lambda b: b.set("ann", NAN), ValueError, "set-nan-present"),
    case(lambda b: b.set("new", True), TypeError, "set-bool-true"),
    case(lambda b: b.set("ann", False), TypeError, "set-bool-false"),
    case(lambda b: b.set("new", "5"), TypeError, "set-str"),
    case(lambda b: b.set("new", None), TypeError, "set-none"),
    case(lambda b: b.set("new", Fraction(1, 3)), TypeError, "set-fraction"),
    case(lambda b: b.set("new", Decimal("1.5")), TypeError, "set-decimal"),
    case(lambda b: b.set("new", 1j), TypeError, "set-complex"),
    case(lambda b: b.set("new", (1, 2)), TypeError, "set-tuple-on-scalar-board"),
    case(lambda b: b.set("new", [1]), TypeError, "set-list"),
    case(lambda b: b.incr("eve", -INF), ValueError, "incr-inf-minus-inf"),
    case(lambda b: b.incr("dee", INF), ValueError, "incr-minus-inf-plus-inf"),
    case(lambda b: b.incr("new", NAN), ValueError, "incr-nan"),
    case(lambda b: b.incr("ann", True), TypeError, "incr-bool"),
    case(lambda b: b.incr("ann", "1"), TypeError, "incr-str"),
    case(lambda b: b.incr("ann", None), TypeError, "incr-none"),
    case(lambda b: b.incr("ann", Fraction(1, 2)), TypeError, "incr-fraction"),
    case(lambda b: b.incr("eve", -INF, when="better"), ValueError, "incr-nan-with-when"),
    case(lambda b: b.rank_for_score(NAN), ValueError, "rank-for-score-nan"),
    case(lambda b: b.rank_for_score("10"), TypeError, "rank-for-score-str"),
    case(lambda b: b.by_score(NAN, 5), ValueError, "by-score-nan-min"),
    case(lambda b: b.by_score(None, "5"), TypeError, "by-score-str-max"),
    case(lambda b: b.count(None, NAN), ValueError, "count-nan-max"),
    case(lambda b: b.count(True, None), TypeError, "count-bool-min"),
    case(lambda b: b.remove_by_score(NAN, INF), ValueError, "remove-by-score-nan"),
    case(lambda b: b.remove_by_score(0, "x"), TypeError, "remove-by-score-str"),
    case(lambda b: b.remove_by_score(0, 60, min_inclusive=1), TypeError, "inclusive-not-bool"),
    case(lambda b: b.count(0, 60, max_inclusive="yes"), TypeError, "count-inclusive-not-bool"),
]

BAD_MEMBERS = [
    case(lambda b: b.set(["a"], 1), TypeError, "set-list-member"),
    case(lambda b: b.set({"a": 1}, 1), TypeError, "set-dict-member"),
    case(lambda b: b.set(1.5, 1), TypeError, "set-float-member"),
    case(lambda b: b.set(True, 1), TypeError, "set-bool-member"),
    case(lambda b: b.set(None, 1), TypeError, "set-none-member"),
    case(lambda b: b.set(("a",), 1), TypeError, "set-tuple-member"),
    case(lambda b: b.set(bytearray(b"a"), 1), TypeError, "set-bytearray-member"),
    case(lambda b: b.incr(["a"], 1), TypeError, "incr-list-member"),
    case(lambda b: b.incr(2.0, 1), TypeError, "incr-float-member"),
    case(lambda b: b.remove(["ann"]), TypeError, "remove-list-member"),
    case(lambda b: b.remove(None), TypeError, "remove-none-member"),
    case(lambda b: b.set_meta(False, {"a": 1}), TypeError, "set-meta-bool-member"),
]

BAD_WHEN = [
    case(lambda b: b.set("ann", 1, when="always"), ValueError, "set-when-word"),
    case(lambda b: b.set("new", 1, when="NX"), ValueError, "set-when-redis-flag"),
    case(lambda b: b.set("ann", 1, when=True), ValueError, "set-when-bool"),
    case(lambda b: b.incr("ann", 1, when="gt"), ValueError, "incr-when"),
    case(lambda b: b.set_many({"ann": 1, "new": 2}, when="xx"), ValueError, "set-many-when"),
]

BAD_RANGES = [
    case(lambda b: b.by_rank(0, 3), ValueError, "by-rank-start-0"),
    case(lambda b: b.by_rank(1, 0), ValueError, "by-rank-stop-0"),
    case(lambda b: b.by_rank(1.0, 3), TypeError, "by-rank-float"),
    case(lambda b: b.by_rank(1, "3"), TypeError, "by-rank-str"),
    case(lambda b: b.remove_by_rank(0, 2), ValueError, "remove-by-rank-start-0"),
    case(lambda b: b.remove_by_rank(1, 0), ValueError, "remove-by-rank-stop-0"),
    case(lambda b: b.remove_by_rank(1.5, 2), TypeError, "remove-by-rank-float"),
    case(lambda b: b.remove_by_rank(True, 2), TypeError, "remove-by-rank-bool"),
    case(lambda b: b.remove_by_rank(1, None), TypeError, "remove-by-rank-none"),
    case(lambda b: b.at(0), IndexError, "at-0"),
    case(lambda b: b.at(6), IndexError, "at-past-end"),
    case(lambda b: b.at(-6), IndexError, "at-before-start"),
    case(lambda b: b.at(1.0), TypeError, "at-float"),
    case(lambda b: b.at(True), TypeError, "at-bool"),
    case(lambda b: b.page(1.5), TypeError, "page-number-float"),
    case(lambda b: b.page(None), TypeError, "page-number-none"),
]

BAD_COUNTS = [
    case(lambda b: b.top(-1), ValueError, "top-negative"),
    case(lambda b: b.top(2.0), TypeError, "top-float"),
    case(lambda b: b.page(1, 0), ValueError, "page-size-0"),
    case(lambda b: b.page(1, -3), ValueError, "page-size-negative"),
    case(lambda b: b.page(1, 2.5), TypeError, "page-size-float"),
    case(lambda b: b.pages(0), ValueError, "pages-size-0"),
    case(lambda b: b.pages(-1), ValueError, "pages-size-negative"),
    case(lambda b: b.by_score(offset=-1), ValueError, "by-score-offset-negative"),
    case(lambda b: b.by_score(limit=-1), ValueError, "by-score-limit-negative"),
    case(lambda b: b.by_score(offset=1.0), TypeError, "by-score-offset-float"),
    case(lambda b: b.around("ann", -1), ValueError, "around-above-negative"),
    case(lambda b: b.around("ann", 1, -1), ValueError, "around-below-negative"),
    case(lambda b: b.around("ann", 1.5), TypeError, "around-above-float"),
    case(lambda b: b.pop_best(-1), ValueError, "pop-best-negative"),
    case(lambda b: b.pop_worst(-2), ValueError, "pop-worst-negative"),
    case(lambda b: b.pop_best(1.0), TypeError, "pop-best-float"),
    case(lambda b: b.keep_top(-1), ValueError, "keep-top-negative"),
    case(lambda b: b.keep_top(2.5), TypeError, "keep-top-float"),
    case(lambda b: b.keep_top(None), TypeError, "keep-top-none"),
]

BAD_STYLES = [
    case(lambda b: b.rank("ann", style="olympic"), ValueError, "rank-style"),
    case(lambda b: b.entry("ann", style="Dense"), ValueError, "entry-style"),
    case(lambda b: b.entries(["ann"], style="1224"), ValueError, "entries-style"),
    case(lambda b: b.at(1, style="x"), ValueError, "at-style"),
    case(lambda b: b.top(3, style="x"), ValueError, "top-style"),
    case(lambda b: b.by_rank(1, 2, style="x"), ValueError, "by-rank-style"),
    case(lambda b: b.page(1, style="x"), ValueError, "page-style"),
    case(lambda b: b.around("ann", style="x"), ValueError, "around-style"),
    case(lambda b: b.by_score(style="x"), ValueError, "by-score-style"),
    case(lambda b: b.rank_for_score(5, style="x"), ValueError, "rank-for-score-style"),
    case(lambda b: b.rank("nobody", style="x"), ValueError, "rank-style-absent-member"),
    case(lambda b: b.around("nobody", style="x"), ValueError, "around-style-absent-member"),
    case(lambda b: b.by_score(99, 100, style="x"), ValueError, "by-score-style-empty-range"),
    case(lambda b: b.by_score(limit=0, style="x"), ValueError, "by-score-style-limit-0"),
    case(lambda b: b.entries([], style="x"), ValueError, "entries-style-no-members"),
]

#: ``fill`` is a flag like the inclusive ones: fill="no" filled the window.
BAD_FLAGS = [
    case(lambda b: b.around("bob", 5, 0, fill="no"), TypeError, "around-fill-str"),
    case(lambda b: b.around("bob", 5, 0, fill=1), TypeError, "around-fill-int"),
    case(lambda b: b.around("bob", 5, 0, fill=None), TypeError, "around-fill-none"),
    case(lambda b: b.around("nobody", fill="yes"), TypeError, "around-fill-absent-member"),
]


def _with_meta_calls(
    read: dict[str, Any] | None = None, pop: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Every read and write that takes ``with_meta``, called with ``v``:
    ``with_meta="no"`` returned the metadata and ``with_meta=None`` hid it.
    ``read``/``pop``: extra arguments (a period board's ``period=``/``t=``).
    The absent member, empty range and zero counts return early, and must
    refuse the flag all the same."""
    r, p = read or {}, pop or {}
    return {
        "entry": lambda b, v: b.entry("ann", with_meta=v, **r),
        "entry-absent": lambda b, v: b.entry("nobody", with_meta=v, **r),
        "entries": lambda b, v: b.entries(["ann", "nobody"], with_meta=v, **r),
        "entries-none": lambda b, v: b.entries([], with_meta=v, **r),
        "at": lambda b, v: b.at(1, with_meta=v, **r),
        "top": lambda b, v: b.top(3, with_meta=v, **r),
        "top-0": lambda b, v: b.top(0, with_meta=v, **r),
        "by-rank": lambda b, v: b.by_rank(1, 3, with_meta=v, **r),
        "by-rank-empty": lambda b, v: b.by_rank(3, 2, with_meta=v, **r),
        "page": lambda b, v: b.page(1, 2, with_meta=v, **r),
        "around": lambda b, v: b.around("bob", 1, 1, with_meta=v, **r),
        "around-absent": lambda b, v: b.around("nobody", with_meta=v, **r),
        "by-score": lambda b, v: b.by_score(0, 60, with_meta=v, **r),
        "by-score-empty": lambda b, v: b.by_score(99, 100, with_meta=v, **r),
        "pop-best": lambda b, v: b.pop_best(2, with_meta=v, **p),
        "pop-worst": lambda b, v: b.pop_worst(2, with_meta=v, **p),
        "pop-best-0": lambda b, v: b.pop_best(0, with_meta=v, **p),
    }


#: Values that are not a flag: "no" is true, 1 and None pass for one.
_NOT_FLAGS = [("str", "no"), ("int", 1), ("none", None)]

BAD_FLAGS += [
    case(lambda b, call=call, value=value: call(b, value), TypeError, f"{name}-with-meta-{kind}")
    for name, call in _with_meta_calls().items()
    for kind, value in _NOT_FLAGS
]

BAD_PERCENTILES = [
    case(lambda b: b.percentile("ann", method="median"), ValueError, "percentile-method"),
    case(lambda b: b.percentile("nobody", method="x"), ValueError, "percentile-method-absent"),
    case(lambda b: b.score_at_percentile(101), ValueError, "score-at-101"),
    case(lambda b: b.score_at_percentile(-0.5), ValueError, "score-at-negative"),
    case(lambda b: b.score_at_percentile(NAN), ValueError, "score-at-nan"),
    case(lambda b: b.score_at_percentile(INF), ValueError, "score-at-inf"),
    case(lambda b: b.score_at_percentile(True), ValueError, "score-at-bool"),
    case(lambda b: b.score_at_percentile("50"), ValueError, "score-at-str"),
    case(lambda b: b.score_at_percentile(None), ValueError, "score-at-none"),
]

BAD_META = [
    case(lambda b: b.set("ann", 1, meta={1: "x"}), TypeError, "set-meta-int-key"),
    case(lambda b: b.set("new", 1, meta={"a": object()}), TypeError, "set-meta-object"),
    case(lambda b: b.set("new", 1, meta={"a": {1, 2}}), TypeError, "set-meta-set-value"),
    case(lambda b: b.set("new", 1, meta={"a": {"b": {2: 1}}}), TypeError, "set-meta-nested-key"),
    case(lambda b: b.set("new", 1, meta={"a": [1, object()]}), TypeError, "set-meta-in-list"),
    case(lambda b: b.set("ann", 99, meta="Ann"), TypeError, "set-meta-str"),
    case(lambda b: b.set("ann", 99, meta=[("a", 1)]), TypeError, "set-meta-list"),
    case(lambda b: b.set_meta("ann", {None: 1}), TypeError, "set-meta-none-key"),
    case(lambda b: b.set_meta("ann", {"when": 1j}), TypeError, "set-meta-complex"),
    case(lambda b: b.set_meta("ann", 5), TypeError, "set-meta-int"),
    case(lambda b: b.set_meta("nobody", {"a": 1}), KeyError, "set-meta-absent-member"),
]


def _deep(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"x": value}
    return value


BAD_META.append(case(lambda b: b.set_meta("bob", _deep(40)), ValueError, "set-meta-too-deep"))

BAD_BATCHES = [
    case(lambda b: b.set_many([("new", 1), ("ann", 2), ("x", NAN)]), ValueError, "set-many-nan"),
    case(lambda b: b.set_many({"new": 1, "ann": "2"}), TypeError, "set-many-str-score"),
    case(lambda b: b.set_many([("new", 1), ("x", True)]), TypeError, "set-many-bool-score"),
    case(lambda b: b.set_many([("new", 1), (1.5, 2)]), TypeError, "set-many-float-member"),
    case(lambda b: b.set_many([("new", 1), (None, 2)]), TypeError, "set-many-none-member"),
    case(lambda b: b.set_many([("new", 1), ["x", 2]]), TypeError, "set-many-list-pair"),
    case(lambda b: b.set_many([("new", 1), ("x", 2, 3)]), TypeError, "set-many-triple"),
    case(lambda b: b.set_many([("new", 1), "x"]), TypeError, "set-many-str-pair"),
    case(lambda b: b.incr_many([("new", 1), ("eve", -INF)]), ValueError, "incr-many-nan"),
    case(
        lambda b: b.incr_many([("y", INF), ("ann", 1), ("y", -INF)]),
        ValueError,
        "incr-many-nan-dup",
    ),
    case(lambda b: b.incr_many({"ann": 1, "bob": "1"}), TypeError, "incr-many-str"),
    case(lambda b: b.incr_many([("ann", 1), ([1], 1)]), TypeError, "incr-many-list-member"),
    case(lambda b: b.remove_many(["ann", ["bob"]]), TypeError, "remove-many-list-member"),
    case(lambda b: b.remove_many(["ann", "bob", 1.5]), TypeError, "remove-many-float-member"),
    case(lambda b: b.remove_many(["ann", None]), TypeError, "remove-many-none-member"),
]


@pytest.mark.parametrize(
    ("action", "error"),
    BAD_SCORES
    + BAD_MEMBERS
    + BAD_WHEN
    + BAD_RANGES
    + BAD_COUNTS
    + BAD_STYLES
    + BAD_FLAGS
    + BAD_PERCENTILES
    + BAD_META
    + BAD_BATCHES,
)
def test_bad_input_changes_nothing(make_board: Any, action: Any, error: type[Exception]) -> None:
    assert_rejected(seeded(make_board), action, error)


@pytest.mark.parametrize(("action", "error"), BAD_STYLES + BAD_FLAGS)
def test_a_bad_style_or_flag_is_refused_by_every_board(
    make_or_sharded: Any, action: Any, error: type[Exception]
) -> None:
    # a sharded board checked the style of entries() member by member, so
    # entries([], style="x") returned [] where every other board refused it
    assert_rejected(seeded(make_or_sharded), action, error)


DAY = 86_400.0

#: Board kinds beyond a plain and a sharded board, and the calls of
#: ``_with_meta_calls`` each has (all of them unless listed).
_FLAG_KINDS: dict[str, list[str] | None] = {
    "durable": None,
    "periodic": None,
    "periodic-past": None,  # period= and t= of a past period still open
    "periodic-dropped": ["pop-best", "pop-worst", "pop-best-0"],  # t= of a closed one
    "window": ["entry", "entry-absent", "top", "top-0", "page", "around", "around-absent"],
    "decayed": [
        "entry",
        "entry-absent",
        "entries",
        "entries-none",
        "top",
        "top-0",
        "by-rank",
        "by-rank-empty",
        "page",
        "around",
        "around-absent",
        "pop-best",
        "pop-worst",
        "pop-best-0",
    ],
}


def _flag_board(kind: str, root: Any) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """A board of ``kind`` holding the ``seeded`` members and metadata, and
    the extra arguments its reads and its pops take."""
    from rankengine import Leaderboard
    from rankengine.timed.decay import DecayedLeaderboard
    from rankengine.timed.periodic import PeriodicLeaderboard
    from rankengine.timed.window import SlidingWindowLeaderboard

    now = [1000.0]
    read: dict[str, Any] = {}
    pop: dict[str, Any] = {}
    if kind == "durable":
        board: Any = Leaderboard.open(root, fsync="never")
    elif kind.startswith("periodic"):
        late = "drop" if kind == "periodic-dropped" else "reject"
        grace = 0.0 if kind == "periodic-dropped" else 2 * DAY
        board = PeriodicLeaderboard("daily", grace=grace, late=late, clock=lambda: now[0])
        if kind != "periodic":
            read, pop = {"period": board.current.name}, {"t": now[0]}
    elif kind == "window":
        board = SlidingWindowLeaderboard("daily", 3, clock=lambda: now[0])
    else:
        board = DecayedLeaderboard(half_life=60, clock=lambda: now[0])
        board.add_many({"ann": 50, "bob": 30, "cid": 30, "dee": 1, "eve": 99})
    if kind != "decayed":
        board.set_many([("ann", 50), ("bob", 30), ("cid", 30), ("dee", -INF), ("eve", INF)])
    board.set_meta("ann", {"name": "Ann"})
    board.set_meta("bob", {"name": "Bob", "tags": ["x"]})
    if kind == "window":
        board.refresh()
    if kind in ("periodic-past", "periodic-dropped"):
        now[0] += DAY  # the board's period is past now (and closed when dropped)
    return board, read, pop


def _flag_state(kind: str, board: Any) -> Any:
    """What a refused call must leave as it was."""
    if kind == "durable":
        return snapshot(board)
    if kind.startswith("periodic"):
        held = [(p.name, snapshot(board.board(p))) for p in board.periods()]
        return held, board.late_dropped
    if kind == "window":
        return snapshot(board.board), snapshot(board.bucket())
    return snapshot(board.board)


@pytest.mark.parametrize("value", [v for _, v in _NOT_FLAGS], ids=[k for k, _ in _NOT_FLAGS])
@pytest.mark.parametrize(
    ("kind", "call"),
    [
        pytest.param(kind, call, id=f"{kind}-{call}")
        for kind, calls in _FLAG_KINDS.items()
        for call in (calls or list(_with_meta_calls()))
    ]
    + [
        pytest.param(kind, "around-fill", id=f"{kind}-around-fill")
        for kind in ("durable", "periodic", "periodic-past", "window", "decayed")
    ],
)
def test_a_bad_flag_is_refused_by_every_time_and_durable_board(
    tmp_path: Any, kind: str, call: str, value: Any
) -> None:
    """Durable, periodic (with ``period=``/``t=``), window and decayed
    boards refuse a ``with_meta`` (or ``fill``) that is not a bool as a
    plain board does, with its words, before anything changes: a pop of a
    closed period that ``late="drop"`` drops returned ``[]``."""
    board, read, pop = _flag_board(kind, tmp_path / "board")
    try:
        calls = _with_meta_calls(read, pop)
        calls["around-fill"] = lambda b, v: b.around("bob", 5, 0, fill=v, **read)
        what = "fill" if call == "around-fill" else "with_meta"
        before = _flag_state(kind, board)
        with pytest.raises(TypeError, match=rf"^{what} must be a bool, not {type(value).__name__}"):
            calls[call](board, value)
        assert _flag_state(kind, board) == before
        board._check()
    finally:
        if hasattr(board, "close"):
            board.close()


@pytest.mark.parametrize("call", list(_with_meta_calls()))
def test_a_bad_with_meta_says_what_it_must_be(make_or_sharded: Any, call: str) -> None:
    board = seeded(make_or_sharded)
    with pytest.raises(TypeError, match=r"^with_meta must be a bool, not str$"):
        _with_meta_calls()[call](board, "no")


@pytest.mark.parametrize("order", ["asc", ("desc", "asc")])
def test_bad_input_on_other_orders(make_board: Any, order: Any) -> None:
    board = make_board(order=order)
    good = (1, 2) if isinstance(order, tuple) else 1
    board.set("ann", good, meta={"k": 1})
    assert_rejected(board, lambda b: b.set("ann", NAN), (ValueError, TypeError))
    assert_rejected(board, lambda b: b.set_many([("x", good), ("y", "bad")]), TypeError)
    assert_rejected(board, lambda b: b.by_rank(0, 1), ValueError)


# ----------------------------------------------------------------------
# Composite scores
# ----------------------------------------------------------------------
def composite(make_board: Any) -> Any:
    board = make_board(order=("desc", "asc"))
    board.set_many({"ann": (10, 30), "bob": (9, 1), "low": (-INF, 0)})
    board.set_meta("ann", {"n": 1})
    return board


@pytest.mark.parametrize(
    ("action", "error"),
    [
        case(lambda b: b.set("x", 5), TypeError, "scalar-on-composite"),
        case(lambda b: b.set("x", (1,)), ValueError, "too-few-columns"),
        case(lambda b: b.set("x", (1, 2, 3)), ValueError, "too-many-columns"),
        case(lambda b: b.set("ann", ()), ValueError, "no-columns"),
        case(lambda b: b.set("x", (1, NAN)), ValueError, "nan-column"),
        case(lambda b: b.set("x", (1, True)), TypeError, "bool-column"),
        case(lambda b: b.set("x", (1, "2")), TypeError, "str-column"),
        case(lambda b: b.set("x", "12"), TypeError, "str-score"),
        case(lambda b: b.incr("ann"), TypeError, "default-scalar-delta"),
        case(lambda b: b.incr("ann", (1,)), ValueError, "delta-arity"),
        case(lambda b: b.incr("low", (INF, 0)), ValueError, "delta-makes-nan"),
        case(lambda b: b.set_many([("x", (1, 2)), ("y", (1,))]), ValueError, "set-many-arity"),
        case(
            lambda b: b.incr_many([("x", (1, 2)), ("low", (INF, 1))]), ValueError, "incr-many-nan"
        ),
        case(lambda b: b.by_score((1,), None), ValueError, "by-score-arity"),
        case(lambda b: b.count(5, None), TypeError, "count-scalar-bound"),
        case(lambda b: b.remove_by_score((0, 0), (NAN, 0)), ValueError, "remove-by-score-nan"),
        case(lambda b: b.rank_for_score((1, 2, 3)), ValueError, "rank-for-score-arity"),
        case(lambda b: b.union([b]), TypeError, "union-of-composite"),
    ],
)
def test_bad_composite_input_changes_nothing(
    make_board: Any, action: Any, error: type[Exception]
) -> None:
    assert_rejected(composite(make_board), action, error)


# ----------------------------------------------------------------------
# Members that would not compare on a tie-by-member board
# ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("action", "error"),
    [
        case(lambda b: b.set(5, 1), TypeError, "int-among-str"),
        case(lambda b: b.set(b"ann", 1), TypeError, "bytes-among-str"),
        case(lambda b: b.incr(7, 1), TypeError, "incr-int-among-str"),
        case(lambda b: b.set_many([("zed", 1), (5, 1)]), TypeError, "set-many-mixed"),
        case(lambda b: b.incr_many([("zed", 1), (b"z", 1)]), TypeError, "incr-many-mixed"),
    ],
)
def test_member_types_on_tie_by_member_board(
    make_board: Any, action: Any, error: type[Exception]
) -> None:
    board = make_board(tie_break="member")
    board.set_many({"ann": 1, "bob": 1})
    assert_rejected(board, action, error)


@pytest.mark.parametrize(
    "action",
    [
        lambda b: b.set_many([("a", 1), (2, 1)]),
        lambda b: b.set_many([(b"a", 1), ("a", 1)]),
        lambda b: b.incr_many([(1, 1), ("1", 1)]),
        lambda b: b.set_many([(f"m{i}", 1) for i in range(50)] + [(1, 1)]),
    ],
)
def test_mixed_member_batch_on_empty_tie_by_member_board(make_board: Any, action: Any) -> None:
    board = make_board(tie_break="member")
    assert_rejected(board, action, TypeError)
    assert len(board) == 0
    # the board still works, with any one member type
    board.set_many([(2, 1), (1, 1)])
    board._check()
    assert list(board) == [2, 1]


# ----------------------------------------------------------------------
# Construction and combining
# ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs",
    [
        {"order": "up"},
        {"order": "DESC"},
        {"order": ()},
        {"order": ("desc", "sideways")},
        {"tie_break": "last"},
        {"rank_style": "olympic"},
    ],
)
def test_bad_construction(make_board: Any, kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        make_board(**kwargs)


def test_unknown_backend_name() -> None:
    from rankengine import Leaderboard

    with pytest.raises(ValueError, match="or a factory"):
        Leaderboard(backend="btree")  # type: ignore[arg-type]


def test_an_index_given_instead_of_its_factory() -> None:
    # backend= takes a factory; an index object itself is refused, saying so
    from listindex import ListIndex

    from rankengine import Leaderboard

    with pytest.raises(ValueError, match=r"a factory.*not an index.*ListIndex"):
        Leaderboard(backend=ListIndex())  # type: ignore[arg-type]


def _lacking(*names: str) -> type:
    from listindex import ListIndex

    body = {k: v for k, v in vars(ListIndex).items() if k not in names}
    return type("PartialIndex", (), body)


@pytest.mark.parametrize(
    ("factory", "missing"),
    [
        pytest.param(_lacking("move", "count_primary"), "move, count_primary", id="two-methods"),
        pytest.param(_lacking("_check"), "_check", id="check"),
        pytest.param(
            dict,
            "insert, remove, move, position, count_less, count_primary, entry, "
            "iter_range, build, _check",
            id="dict",
        ),
        pytest.param(lambda: None, "__len__, insert, remove", id="none"),
    ],
)
def test_a_factory_whose_index_lacks_protocol_methods(factory: Any, missing: str) -> None:
    # Without the check the board was created and failed later, at the first
    # call that needed the method (an AttributeError from deep in a write or
    # a read, or never for a method only _check uses); it now refuses at
    # once and names every missing method.
    from rankengine import Leaderboard

    with pytest.raises(TypeError, match=rf"lacks the OrderedIndex methods {missing}"):
        Leaderboard(backend=factory)


def test_a_partial_index_is_refused_before_a_durable_board_is_created(tmp_path: Any) -> None:
    from rankengine import Leaderboard

    with pytest.raises(TypeError, match="lacks the OrderedIndex methods move"):
        Leaderboard.open(tmp_path / "board", backend=_lacking("move"))
    board = Leaderboard.open(tmp_path / "board")  # nothing half made
    assert len(board) == 0
    board.close()


@pytest.mark.parametrize(
    ("call", "error"),
    [
        case(lambda a, b: a.union([a, b], weights=[1]), ValueError, "too-few-weights"),
        case(lambda a, b: a.union([a, b], weights=[1, 2, 3]), ValueError, "too-many-weights"),
        case(lambda a, b: a.union([a, b], weights=[NAN, 1]), ValueError, "nan-weight"),
        case(lambda a, b: a.union([a, b], weights=[True, 1]), TypeError, "bool-weight"),
        case(lambda a, b: a.union([a, b], weights=["1", 1]), TypeError, "str-weight"),
        case(lambda a, b: a.union([a, b], aggregate="avg"), ValueError, "aggregate"),
        case(lambda a, b: a.intersection([a, b], aggregate="SUM"), ValueError, "inter-aggregate"),
        case(lambda a, b: a.union([]), ValueError, "no-boards"),
        case(lambda a, b: a.intersection([a, "b"]), TypeError, "not-a-board"),
        case(lambda a, b: a.union([a, b], order="up"), ValueError, "bad-config"),
        case(lambda a, b: a.union(b), TypeError, "one-board-not-a-list"),
        case(lambda a, b: a.intersection(a), TypeError, "one-board-not-a-list-inter"),
        case(lambda a, b: a.union([a, b], weights=5), TypeError, "weights-not-a-list"),
    ],
)
def test_bad_union_leaves_inputs_alone(make_board: Any, call: Any, error: type[Exception]) -> None:
    a = seeded(make_board)
    b = make_board()
    b.set_many({"ann": 1, "zed": 2})
    before = (snapshot(a), snapshot(b))
    with pytest.raises(error):
        call(a, b)
    a._check()
    b._check()
    assert (snapshot(a), snapshot(b)) == before


def test_failed_writes_do_not_block_later_ones(make_board: Any) -> None:
    board = seeded(make_board)
    for bad in (lambda: board.set("x", NAN), lambda: board.incr_many([("x", 1), ("eve", -INF)])):
        with pytest.raises(ValueError):
            bad()
    assert board.set("x", 1) is True
    assert board.incr_many([("x", 1), ("eve", 1)]) == {"x": 2, "eve": INF}
    board._check()
    assert board.rank("x") == 5


@pytest.mark.parametrize("call", ["remove_many", "entries"])
def test_a_bare_string_is_not_a_list_of_members(make_board: Any, call: str) -> None:
    board = make_board()
    board.set_many({"a": 1, "b": 2, "abc": 3})
    before = board.items()
    with pytest.raises(TypeError, match="iterable of members"):
        getattr(board, call)("abc")
    assert board.items() == before


@pytest.mark.parametrize("kind", ["sortedlist", "skiplist", "redis", "sharded"])
@pytest.mark.parametrize("rank", [0, 6, -6, -10])
def test_at_names_the_rank_it_was_given(kind: str, rank: int) -> None:
    """The error repeats the caller's rank (not the position a negative one
    was turned into) and says which ranks the board has."""
    from conftest import board_factory

    from rankengine import Leaderboard
    from rankengine.sharded.board import ShardedLeaderboard

    def make() -> Any:
        if kind == "sharded":
            return ShardedLeaderboard([Leaderboard(), Leaderboard()])
        return board_factory(kind)()

    board = make()
    board.set_many({"ann": 50, "bob": 30, "cid": 30, "dee": 10, "eve": 5})
    with pytest.raises(IndexError) as caught:
        board.at(rank)
    message = str(caught.value)
    assert message.startswith(f"rank {rank} ")
    assert "1..5" in message and "-5..-1" in message
    with pytest.raises(IndexError, match="empty"):
        make().at(1)


def test_union_of_a_composite_board_says_why_without_blaming_weights() -> None:
    """No weights were given: the error names what is refused (composite
    scores) and that union and intersection take scalar boards only."""
    from rankengine import Leaderboard

    composite_board = Leaderboard(order=("desc", "asc"))
    composite_board.set("ann", (1, 2))
    for combine in (Leaderboard.union, Leaderboard.intersection):
        with pytest.raises(TypeError) as caught:
            combine([Leaderboard(), composite_board])
        message = str(caught.value)
        assert "weights" not in message
        assert "composite" in message and "scalar" in message


# ----------------------------------------------------------------------
# Reads given a member that cannot be one
# ----------------------------------------------------------------------
def _unhashable_board(kind: str, root: Any) -> Any:
    """A board of ``kind`` holding ann (50) and bob (30)."""
    from conftest import board_factory

    from rankengine import Leaderboard
    from rankengine.sharded.board import ShardedLeaderboard
    from rankengine.timed.decay import DecayedLeaderboard
    from rankengine.timed.periodic import PeriodicLeaderboard
    from rankengine.timed.window import SlidingWindowLeaderboard

    if kind == "durable":
        board: Any = Leaderboard.open(root, fsync="never")
    elif kind == "periodic":
        board = PeriodicLeaderboard("daily", clock=lambda: 1000.0)
    elif kind == "window":
        board = SlidingWindowLeaderboard("daily", 3, clock=lambda: 1000.0)
    elif kind == "decayed":
        board = DecayedLeaderboard(half_life=60, clock=lambda: 1000.0)
        board.add("ann", 50)
        board.add("bob", 30)
        return board
    elif kind == "sharded":
        board = ShardedLeaderboard([Leaderboard(), Leaderboard(), Leaderboard()])
    elif kind == "sharded-redis":
        from redis_service import redis_board

        board = ShardedLeaderboard([redis_board(), redis_board()])
    else:
        board = board_factory(kind)()
    board.set("ann", 50)
    board.set("bob", 30)
    return board


#: Every read that takes a member, called with ``m``.
_MEMBER_READS: dict[str, Any] = {
    "score": lambda b, m: b.score(m),
    "score-default": lambda b, m: b.score(m, 0),
    "rank": lambda b, m: b.rank(m),
    "rank-dense": lambda b, m: b.rank(m, style="dense"),
    "entry": lambda b, m: b.entry(m),
    "entries": lambda b, m: b.entries(["ann", m]),
    "around": lambda b, m: b.around(m, 1, 1),
    "contains": lambda b, m: m in b,
    "getitem": lambda b, m: b[m],
    "meta": lambda b, m: b.meta(m),
    "percentile": lambda b, m: b.percentile(m),
}

#: The reads each board kind has (a Leaderboard's whole set unless listed).
_READS_OF: dict[str, list[str]] = {
    "periodic": ["score", "score-default", "rank", "rank-dense", "entry", "around"],
    "window": ["score", "score-default", "rank", "rank-dense", "entry", "around", "contains"],
    "decayed": [
        "score",
        "score-default",
        "rank",
        "rank-dense",
        "entry",
        "entries",
        "around",
        "contains",
    ],
}

_KINDS = [
    "sortedlist",
    "skiplist",
    "redis",
    "durable",
    "periodic",
    "window",
    "decayed",
    "sharded",
    "sharded-redis",
]

_KIND_READS = [
    pytest.param(kind, read, id=f"{kind}-{read}")
    for kind in _KINDS
    for read in _READS_OF.get(kind, list(_MEMBER_READS))
]


@pytest.mark.parametrize(
    "bad", [["x"], {"x": 1}, bytearray(b"ann")], ids=lambda v: type(v).__name__
)
@pytest.mark.parametrize(("kind", "read"), _KIND_READS)
def test_reads_of_an_unhashable_member_say_what_a_member_is(
    tmp_path: Any, kind: str, read: str, bad: Any
) -> None:
    """A read given an unhashable value names its type and the member types
    accepted, as a write does (not Python's bare "unhashable type"), and
    changes nothing."""
    board = _unhashable_board(kind, tmp_path / "board")
    try:
        # a periodic board's items are those of its current period's board
        contents = board.board().items if kind == "periodic" else board.items
        before = contents()
        expected = f"member must be str, bytes or int, not {type(bad).__name__}$"
        with pytest.raises(TypeError, match=expected):
            _MEMBER_READS[read](board, bad)
        assert contents() == before
    finally:
        if hasattr(board, "close"):
            board.close()


_ABSENT_ANSWERS: dict[str, Any] = {
    "score": None,
    "score-default": 0,
    "rank": None,
    "rank-dense": None,
    "entry": None,
    "entries": None,  # the absent member's place
    "around": [],
    "contains": False,
    "getitem": KeyError,
    "meta": None,
    "percentile": None,
}


@pytest.mark.parametrize("absent", ["zed", ("ann",), 1.5, None], ids=repr)
@pytest.mark.parametrize(("kind", "read"), _KIND_READS)
def test_reads_of_an_absent_hashable_member_are_unchanged(
    tmp_path: Any, kind: str, read: str, absent: Any
) -> None:
    """Any hashable value that is not on the board is simply absent: None,
    the default, ``[]``, False or ``KeyError``, as before."""
    board = _unhashable_board(kind, tmp_path / "board")
    try:
        got = _assert_reads_absent(board, read, absent)
        if read == "entries":
            assert got[0] is not None and got[0].member == "ann"
    finally:
        if hasattr(board, "close"):
            board.close()


def _assert_reads_absent(board: Any, read: str, value: Any) -> Any:
    """``read`` of ``value`` gives the answer for an absent member (or raises
    ``KeyError`` where that is the answer); the read's result is returned
    (None for a ``KeyError``)."""
    answer = _ABSENT_ANSWERS[read]
    if answer is KeyError:
        with pytest.raises(KeyError):
            _MEMBER_READS[read](board, value)
        return None
    got = _MEMBER_READS[read](board, value)
    assert (got[1] if read == "entries" else got) == answer
    return got


#: Hashable values that are not members but equal one (``True == 1``,
#: ``1.0 == 1``, ``memoryview(b"ann") == b"ann"``) and hash alike, with
#: the member each equals.  A write refuses every one of them.
_LOOKALIKES = [
    pytest.param(True, 1, id="bool"),
    pytest.param(False, 0, id="bool-false"),
    pytest.param(1.0, 1, id="float"),
    pytest.param(Fraction(1), 1, id="fraction"),
    pytest.param(Decimal(1), 1, id="decimal"),
    pytest.param(complex(1, 0), 1, id="complex"),
    pytest.param(memoryview(b"ann"), b"ann", id="memoryview"),
]


@pytest.mark.parametrize(("value", "member"), _LOOKALIKES)
@pytest.mark.parametrize(("kind", "read"), _KIND_READS)
def test_a_value_that_only_equals_a_member_is_absent(
    tmp_path: Any, kind: str, read: str, value: Any, member: Any
) -> None:
    """A hashable value that is not a member is absent even when it equals
    one (``1.0 == 1``): an in-process board's reads looked it up in a dict
    and found the member (``rank(True)`` was member 1's rank, ``entry(1.0)``
    an ``Entry`` with member ``1.0``) while Redis and sharded boards, and
    the documented rule, answer that it is absent."""
    board = _unhashable_board(kind, tmp_path / "board")
    try:
        if kind == "decayed":
            board.add(member, 40)
        else:
            board.set(member, 40, **({"meta": {"team": "red"}} if read == "meta" else {}))
        if kind == "window":
            board.refresh()  # the window shows the buckets as of a refresh
        assert _MEMBER_READS[read](board, member) != _ABSENT_ANSWERS[read]  # present
        _assert_reads_absent(board, read, value)
    finally:
        if hasattr(board, "close"):
            board.close()


class _Name(str):
    """A ``str`` subclass: writes accept it as the ``str`` it equals."""


@pytest.mark.parametrize(("kind", "read"), _KIND_READS)
def test_reads_find_a_member_given_as_a_str_subclass(tmp_path: Any, kind: str, read: str) -> None:
    """A write takes a member of a ``str`` subclass as the ``str`` it equals;
    a read given it must find that member too (sharded and Redis boards
    answered as if it were absent)."""
    board = _unhashable_board(kind, tmp_path / "board")
    try:
        if kind == "decayed":
            board.add(_Name("cid"), 40)
        else:
            board.set(_Name("cid"), 40, **({"meta": {"team": "red"}} if read == "meta" else {}))
        if kind == "window":
            board.refresh()  # the window shows the buckets as of a refresh
        assert _MEMBER_READS[read](board, _Name("cid")) == _MEMBER_READS[read](board, "cid")
        assert _MEMBER_READS[read](board, _Name("cid")) != _ABSENT_ANSWERS[read]
    finally:
        if hasattr(board, "close"):
            board.close()


class _Level(enum.IntEnum):
    """An ``int`` subclass: writes accept it as the ``int`` it equals."""

    GOLD = 7


class _Blob(bytes):
    """A ``bytes`` subclass: writes accept it as the ``bytes`` it equals."""


#: A second member of each plain kind.
_OTHER: dict[type, Any] = {str: "dee", int: 8, bytes: b"dee"}


def _filler(member: Any, i: int) -> Any:
    """Member ``i`` of a batch alongside ``member``, of its plain kind."""
    if isinstance(member, str):
        return f"z{i}"
    return b"z%d" % i if isinstance(member, bytes) else 100 + i


#: Every write that adds a member, given ``m``: each path that takes one.
_MEMBER_WRITES: dict[str, Any] = {
    "set": lambda b, m: b.set(m, 40),
    "set-meta": lambda b, m: b.set(m, 40, meta={"k": 1}),
    "setitem": lambda b, m: b.__setitem__(m, 40),
    "incr": lambda b, m: b.incr(m, 40),
    "incr-float": lambda b, m: b.incr(m, 40.5),
    "incr-when": lambda b, m: b.incr(m, 40, when="better"),
    "set-many": lambda b, m: b.set_many([(m, 40)]),
    "set-many-when": lambda b, m: b.set_many([(m, 40)], when="new"),
    "set-many-bulk": lambda b, m: b.set_many([(m, 40)] + [(_filler(m, i), i) for i in range(9)]),
    "incr-many": lambda b, m: b.incr_many([(m, 40)]),
}


@pytest.mark.parametrize("write", list(_MEMBER_WRITES))
@pytest.mark.parametrize("tie_break", ["first", "member"])
@pytest.mark.parametrize(
    ("member", "plain"), [(_Name("cid"), "cid"), (_Level.GOLD, 7), (_Blob(b"cid"), b"cid")]
)
def test_a_member_given_as_a_subclass_is_stored_as_the_plain_value(
    make_board: Any, write: str, tie_break: str, member: Any, plain: Any
) -> None:
    """A write takes a ``str``/``bytes``/``int`` subclass as the plain value
    it equals, as the log and Redis keep it: reads return the plain value
    (as after a reopen), and a board that breaks ties by member, first given
    the subclass, takes plain members of the same kind (it refused them:
    "holds _Name members; str members would not compare")."""
    for empty in (True, False):
        board = make_board(tie_break=tie_break)
        if not empty:
            board.set(type(plain)(), 1)  # "" / 0 / b"": the plain kind first
        _MEMBER_WRITES[write](board, member)
        board.set(plain, 41)  # the same member, given plainly
        assert [type(m) for m in board] == [type(plain)] * len(board)
        assert board.score(plain) == 41 and board.rank(member) == 1
        board.set(_OTHER[type(plain)], 2)  # another plain one
        board._check()


@pytest.mark.parametrize(
    ("action", "error", "words"),
    [
        pytest.param(lambda b: b.set("x", (1, NAN)), ValueError, "score column 1 must not be NaN"),
        pytest.param(lambda b: b.set("x", (True, 2)), TypeError, "score column 0 must be an int"),
        pytest.param(lambda b: b.set("x", ((1, 2), 2)), TypeError, "score column 0 must be an int"),
        pytest.param(lambda b: b.set("x", (1, "2")), TypeError, "score column 1 must be an int"),
        pytest.param(
            lambda b: b.incr("ann", (1, NAN)), ValueError, "delta column 1 must not be NaN"
        ),
        pytest.param(
            lambda b: b.set_many([("x", (1, 2)), ("y", (1, None))]), TypeError, "column 1"
        ),
        pytest.param(
            lambda b: b.by_score((NAN, 0), None), ValueError, "min column 0 must not be NaN"
        ),
        pytest.param(lambda b: b.count(None, (0, "1")), TypeError, "max column 1 must be an int"),
    ],
)
def test_a_bad_composite_column_is_named(
    make_board: Any, action: Any, error: type[Exception], words: str
) -> None:
    """The error says which column of a composite score is wrong (a bare
    "score must not be NaN" leaves the caller to guess among the columns)."""
    board = composite(make_board)
    before = snapshot(board)
    with pytest.raises(error, match=words):
        action(board)
    assert snapshot(board) == before


def test_union_of_one_board_says_to_pass_a_list(make_board: Any) -> None:
    # a board given alone was iterated: "can only combine Leaderboards, not
    # str" (its first member), or "needs at least one board" when empty
    a, b = seeded(make_board), make_board()
    for call in (lambda: a.union(a), lambda: a.intersection(b), lambda: b.union(b)):
        with pytest.raises(TypeError, match=r"a list of boards, not one board"):
            call()
    with pytest.raises(TypeError, match=r"weights must be a list of numbers, one per board"):
        a.union([a, b], weights=5)  # was Python's "'int' object is not iterable"
    a._check()


@pytest.mark.parametrize(
    ("order", "match"),
    [
        (5, "not int"),
        (None, "not NoneType"),
        (b"desc", "not bytes"),
        # a set has no column order: {"desc", "asc"} would give each column
        # a direction by string hashing, different from run to run
        ({"desc", "asc"}, "not set"),
        (frozenset({"desc"}), "not frozenset"),
    ],
    ids=["int", "none", "bytes", "set", "frozenset"],
)
def test_an_order_of_the_wrong_type_is_named(make_board: Any, order: Any, match: str) -> None:
    # (5 and None failed with "'int' object is not iterable"; b"desc" was
    # read as the directions 100, 101, 115, 99)
    with pytest.raises(TypeError, match=rf"order must be 'desc', 'asc' or a tuple.*{match}"):
        make_board(order=order)
