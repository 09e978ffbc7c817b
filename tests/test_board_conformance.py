"""One behaviour suite over every board kind: the board contract's tests.

``rankengine/board/contract.py`` states the API once; this suite holds every
kind to it with the same tests: point and range reads, ranks in three
styles, ``with_meta``, writes, and bad input (a clear error, and nothing
changed).  The kinds (:data:`KINDS`):

* ``sortedlist``, ``skiplist`` -- the in-memory board on both indexes;
* ``durable`` -- the board with an event log (``rankengine.open_board``);
* ``ledger`` -- a one-view ledger opened as a board
  (``rankengine.open_board(path, format="ledger")``: each write an event);
* ``redis``, ``sharded-redis`` -- on a real redis-server (started by
  ``tests/redis_service.py``);
* ``sharded`` -- three in-process shards;
* ``periodic`` -- the current period of a daily periodic board (reads and
  writes with no ``period=``/``t=`` go to it);
* ``ledger-periodic`` -- the same on a one-view ledger
  (``PeriodicLeaderboard.open`` of a ledger directory: each write an event);
* ``window`` -- a one-day sliding window over daily buckets, refreshed
  before every read (``refresh_every=0``), so it reads as the sum of the
  writes of the current bucket;
* ``ledger-window`` -- the same on a one-view ledger
  (``SlidingWindowLeaderboard.open`` of a ledger directory);
* ``decayed`` -- a decayed board read at its base time (the decay factor
  is 1.0, so its values are the points given, as floats; ``incr`` is its
  ``add``);
* ``ledger-decayed`` -- the same on a one-view ledger
  (``DecayedLeaderboard.open`` of a ledger directory: each write an event).

The oracle is ``tests/model.py`` (a dict and a sort, written from the
docstrings), not numbers written into the tests.  An operation a kind does
not have is skipped with the reason (see :data:`LACKS`).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from listindex import ListIndex
from model import Model
from outcomes import exact
from redis_service import redis_board

import rankengine
from rankengine import Leaderboard, Ledger
from rankengine.board import routing
from rankengine.board.contract import EXTENSION_POINTS, Board, BoardAPI
from rankengine.board.writes import WRITE_PRIMITIVES, BoardWrites
from rankengine.durable.board import DurableLeaderboard
from rankengine.ledger.oneview import LedgerBoard
from rankengine.redis.board import RedisLeaderboard
from rankengine.sharded.board import ShardedLeaderboard
from rankengine.timed.decay import DecayedLeaderboard
from rankengine.timed.periodic import PeriodicLeaderboard
from rankengine.timed.window import SlidingWindowLeaderboard

INF = math.inf
NAN = math.nan
#: Monday 2026-12-28 00:00 UTC: "now" for the time boards (mid-period writes
#: would do as well; a period start keeps the arithmetic plain).
NOW = 1_798_416_000.0 + 3600.0

KINDS = [
    "sortedlist",
    "skiplist",
    "durable",
    "ledger",
    pytest.param("redis", marks=pytest.mark.redis),
    "sharded",
    pytest.param("sharded-redis", marks=pytest.mark.redis),
    "periodic",
    "ledger-periodic",
    "window",
    "ledger-window",
    "decayed",
    "ledger-decayed",
]

#: Board settings every test runs under; a kind that cannot take one skips it.
CONFIGS = {
    "desc-first": {},
    "asc-member-dense": {"order": "asc", "tie_break": "member", "rank_style": "dense"},
    "composite": {"order": ("desc", "asc")},
}

_PRUNES = (
    "a window's standings are sums over buckets: removing a member from one "
    "bucket leaves its others counting, so pops and removals by rank or score "
    "are asked of one bucket (window.buckets)"
)
_PERIODIC_CONTAINER = (
    "a periodic board holds one board per period: len(), in, iter() and [] "
    "are asked of one period's board (board(period))"
)
#: kind -> {operation: why the kind does not have it}.
LACKS: dict[str, dict[str, str]] = {
    "periodic": {
        "container": _PERIODIC_CONTAINER,
        "clear": "periods start afresh on their own: a periodic board has no clear()",
        "setitem": _PERIODIC_CONTAINER,
    },
    "window": {
        **dict.fromkeys(
            ("pop_best", "pop_worst", "remove_by_rank", "remove_by_score", "keep_top"), _PRUNES
        ),
        "clear": "a window is cleared by its buckets sliding out, not by clear()",
        "composite": "a window sums scores: composite scores cannot be summed",
        "setitem": "a window is written through set()/incr() with a time, not board[m] = s",
    },
    "decayed": {
        "composite": "a decayed board's order is always highest decayed value first",
        "asc": "a decayed board's order is always highest decayed value first",
        "when": "a decayed board's set() and set_many() take no when= condition",
        "meta-on-set": "a decayed board's set() takes no meta=; set_meta() sets it",
        "incr_many": "a decayed board adds many with add_many(), tested in test_decay.py",
        "remove_by_score": "its bounds would be decayed values (see DecayedLeaderboard)",
        "at": "a decayed board has no at(): read top() or by_rank()",
        "by_score": "its bounds would be decayed values (see DecayedLeaderboard)",
        "count": "its bounds would be decayed values (see DecayedLeaderboard)",
        "rank_for_score": "a hypothetical score would be a decayed value (see DecayedLeaderboard)",
        "percentile": "a decayed board has no percentile reads",
        "score_at_percentile": "a decayed board has no percentile reads",
        "pages": "a decayed board has no pages(): read page()",
        "clear": "a decayed board is emptied by remove_many(), not clear()",
        "setitem": "a decayed board is written through add() and set(), not board[m] = s",
    },
}


LACKS["ledger-periodic"] = LACKS["periodic"]
LACKS["ledger-window"] = LACKS["window"]
LACKS["ledger-decayed"] = LACKS["decayed"]
#: The decayed kinds (float values, finite points).
DECAYED_KINDS = ("decayed", "ledger-decayed")


def need(kind: str, *ops: str) -> None:
    """Skip the test, with the reason, if ``kind`` lacks one of ``ops``."""
    for op in ops:
        reason = LACKS.get(kind, {}).get(op)
        if reason is not None:
            pytest.skip(f"{kind}: no {op}: {reason}")


class _Decayed(DecayedLeaderboard):
    """A decayed board whose ``incr`` is ``add`` (points earned now)."""

    def incr(self, member: Any, delta: Any = 1, *, when: Any = None) -> Any:
        if when is not None:
            pytest.skip(f"decayed: no when: {LACKS['decayed']['when']}")
        return self.add(member, delta)


def _ledger_incr(face: Any) -> Callable[..., Any]:
    """A decayed face's ``incr``: its ``add`` (as ``_Decayed`` has it)."""

    def incr(member: Any, delta: Any = 1, *, when: Any = None) -> Any:
        if when is not None:
            pytest.skip(f"decayed: no when: {LACKS['decayed']['when']}")
        return face.add(member, delta)

    return incr


def build(kind: str, root: Path, config: dict[str, Any]) -> Any:
    """An empty board of ``kind`` with the settings ``config``."""
    if kind in ("sortedlist", "skiplist"):
        return Leaderboard(backend=kind, **config)
    if kind == "reference":
        return Leaderboard(backend=ListIndex, **config)
    if kind.startswith("sharded-") and kind != "sharded-redis":
        return ShardedLeaderboard([build(kind[8:], root, config) for _ in range(3)])
    if kind == "durable":
        return rankengine.open_board(root / "durable", fsync="never", **config)
    if kind == "ledger":
        return rankengine.open_board(root / "ledger", format="ledger", fsync="never", **config)
    if kind == "redis":
        return redis_board(**config)
    if kind == "sharded":
        return ShardedLeaderboard.local(3, **config)
    if kind == "sharded-redis":
        return ShardedLeaderboard([redis_board(**config), redis_board(**config)])
    if kind == "periodic":
        return PeriodicLeaderboard("daily", clock=lambda: NOW, **config)
    if kind == "ledger-periodic":
        with Ledger.open(root / "ledger", fsync="never") as ledger:
            ledger.add_view("periodic", "periodic", calendar="daily", **config)
        return PeriodicLeaderboard.open(root / "ledger", "daily", clock=lambda: NOW, fsync="never")
    if kind == "window":
        return SlidingWindowLeaderboard("daily", 1, refresh_every=0, clock=lambda: NOW, **config)
    if kind == "ledger-window":
        with Ledger.open(root / "ledger", fsync="never") as ledger:
            ledger.add_view("window", "window", calendar="daily", buckets=1, **config)
        return SlidingWindowLeaderboard.open(
            root / "ledger", "daily", 1, clock=lambda: NOW, fsync="never"
        )
    if kind == "ledger-decayed":
        with Ledger.open(root / "ledger", fsync="never", now=lambda: int(NOW * 1000)) as ledger:
            ledger.add_view("decayed", "decayed", half_life=3600.0, t0=NOW, **config)
        face = DecayedLeaderboard.open(
            root / "ledger", half_life=3600.0, clock=lambda: NOW, fsync="never"
        )
        face.incr = _ledger_incr(face)
        return face
    assert kind == "decayed"
    return _Decayed(half_life=3600.0, t0=NOW, clock=lambda: NOW, **config)


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=list(CONFIGS))
def config(request: pytest.FixtureRequest, kind: str) -> dict[str, Any]:
    settings = CONFIGS[request.param]
    if isinstance(settings.get("order"), tuple):
        need(kind, "composite")
    if settings.get("order") == "asc":
        need(kind, "asc")
    return dict(settings)


@pytest.fixture
def make(kind: str, tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """``make(config)`` -> an empty board of this test's kind (closed after)."""
    made: list[Any] = []

    def factory(config: dict[str, Any]) -> Any:
        board = build(kind, tmp_path / str(len(made)), config)
        made.append(board)
        return board

    factory.kind = kind  # type: ignore[attr-defined]
    yield factory
    for board in made:
        close = getattr(board, "close", None)
        if close is not None:
            close()


# ----------------------------------------------------------------------
# Seeds and comparisons
# ----------------------------------------------------------------------
MEMBERS = ["ann", "bob", "cid", "dee", "eve", "fay", "gus"]
#: Points of the seeded members: runs of ties, an infinity, a negative.
POINTS = [50, 50, 30, 30, 10, -5, INF]
ABSENT = "zed"


def value(config: dict[str, Any], points: float, second: int = 0) -> Any:
    """A score of ``points`` for a board with ``config`` (a pair on a composite board)."""
    return (points, second) if isinstance(config.get("order"), tuple) else points


def seed_pairs(config: dict[str, Any], kind: str) -> list[tuple[str, Any]]:
    # the composite boards' second column splits some ties and keeps others;
    # a decayed board holds finite values only (its scores are rescaled)
    points = [70 if p == INF and kind in DECAYED_KINDS else p for p in POINTS]
    return [
        (m, value(config, p, i % 2)) for i, (m, p) in enumerate(zip(MEMBERS, points, strict=True))
    ]


METAS = {"ann": {"name": "Ann"}, "cid": {"name": "Cid", "tags": ["x", "y"]}}


def seeded(make: Callable[..., Any], config: dict[str, Any]) -> tuple[Any, Model]:
    """A board and the model holding the seed members and metadata."""
    board, model = make(config), Model(**config)
    pairs = seed_pairs(config, getattr(make, "kind", ""))
    assert board.set_many(pairs) == model.set_many(pairs)
    for member, data in METAS.items():
        board.set_meta(member, data)
        model.set_meta(member, data)
    board._check()
    return board, model


def same(kind: str, got: Any, want: Any) -> None:
    """``got`` answers as ``want``: typed numbers (``1`` is not ``1.0``) on
    the exact kinds, plain equality on the decayed board (its values are
    floats); Entry rows equal the model's plain tuples."""
    if kind in DECAYED_KINDS:
        assert got == want
    else:
        assert exact(got, containers=False) == exact(want, containers=False)


def outcome(call: Callable[[], Any]) -> Any:
    """What ``call()`` returned, or the type of the error it raised."""
    try:
        return "returned", call()
    except (TypeError, ValueError, KeyError, IndexError) as exc:
        return "raises", type(exc)


def state(board: Any) -> Any:
    """Everything a refused call must leave as it was (and the logical
    clock, on a kind that shows one)."""
    items = board.items()
    clock = board.clock if isinstance(getattr(board, "clock", None), int) else None
    return items, {member: board.meta(member) for member, _ in items}, clock


STYLES = ["unique", "dense", "competition"]


# ----------------------------------------------------------------------
# Reads
# ----------------------------------------------------------------------
def test_point_reads(kind: str, config: dict[str, Any], make: Callable[..., Any]) -> None:
    board, model = seeded(make, config)
    for member in [*MEMBERS, ABSENT]:
        same(kind, board.score(member), model.score(member))
        same(kind, board.score(member, "none"), model.score(member, "none"))
        same(kind, board.rank(member), model.rank(member))
        same(kind, board.meta(member), model.meta(member))
        for style in STYLES:
            same(kind, board.rank(member, style=style), model.rank(member, style=style))
            same(kind, board.entry(member, style=style), model.entry(member, style=style))
    for style in STYLES:
        wanted = [ABSENT, *MEMBERS[::-1]]
        same(kind, board.entries(wanted, style=style), model.entries(wanted, style=style))


@pytest.mark.parametrize("style", STYLES)
def test_ranks_in_three_styles(kind: str, make: Callable[..., Any], style: str) -> None:
    """Scores 50, 50, 30, 30, 10: the docs' example of the three styles."""
    board, model = make({}), Model()
    pairs = [("ann", 50), ("bob", 50), ("cid", 30), ("dee", 30), ("eve", 10)]
    board.set_many(pairs)
    model.set_many(pairs)
    ranks = [board.rank(member, style=style) for member, _ in pairs]
    assert ranks == [model.rank(member, style=style) for member, _ in pairs]
    assert (
        ranks
        == {
            "unique": [1, 2, 3, 4, 5],
            "dense": [1, 1, 2, 2, 3],
            "competition": [1, 1, 3, 3, 5],
        }[style]
    )
    same(kind, board.top(5, style=style), model.top(5, style=style))


def test_default_rank_style(kind: str, make: Callable[..., Any]) -> None:
    """A board made with ``rank_style`` ranks in it when a read names none."""
    board, model = make({"rank_style": "competition"}), Model(rank_style="competition")
    pairs = [("ann", 5), ("bob", 5), ("cid", 1)]
    board.set_many(pairs)
    model.set_many(pairs)
    same(kind, [board.rank(m) for m, _ in pairs], [model.rank(m) for m, _ in pairs])
    same(kind, board.top(), model.top())
    same(kind, board.around("cid", 2, 0), model.around("cid", 2, 0))


def test_positional_reads(kind: str, config: dict[str, Any], make: Callable[..., Any]) -> None:
    need(kind, "at")
    board, model = seeded(make, config)
    n = len(MEMBERS)
    for position in [1, 2, n, -1, -n, 0, n + 1, -n - 1]:
        for style in STYLES:
            got = outcome(lambda p=position, s=style: board.at(p, style=s))
            want = outcome(lambda p=position, s=style: model.at(p, style=s))
            assert got[0] == want[0], position
            same(kind, got[1], want[1])


def test_rank_reads(kind: str, config: dict[str, Any], make: Callable[..., Any]) -> None:
    board, model = seeded(make, config)
    for style in STYLES:
        for k in [0, 1, 3, len(MEMBERS), 100]:
            same(kind, board.top(k, style=style), model.top(k, style=style))
        for start, stop in [(1, -1), (2, 4), (-3, -1), (5, 99), (3, 2), (-99, 2)]:
            got = board.by_rank(start, stop, style=style)
            same(kind, got, model.by_rank(start, stop, style=style))
        for number, size in [(1, 2), (2, 2), (9, 2), (0, 4), (-1, 3), (1, 25)]:
            same(kind, board.page(number, size, style=style), model.page(number, size, style=style))
        for member, above, below, fill in [
            ("ann", 2, 2, False),
            ("ann", 2, 2, True),
            ("eve", 0, 3, True),
            ("gus", 1, 1, False),
            ("dee", 9, 9, False),
            (ABSENT, 1, 1, True),
        ]:
            got = board.around(member, above, below, fill=fill, style=style)
            same(kind, got, model.around(member, above, below, fill=fill, style=style))


def test_pages(kind: str, config: dict[str, Any], make: Callable[..., Any]) -> None:
    need(kind, "pages")
    board, model = seeded(make, config)
    for size in [1, 2, 4, 25]:
        assert board.pages(size) == model.pages(size)
    assert board.pages() == model.pages()


def test_score_reads(kind: str, config: dict[str, Any], make: Callable[..., Any]) -> None:
    need(kind, "by_score", "count")
    board, model = seeded(make, config)
    bounds = [
        (None, None, True, True),
        (value(config, 10), value(config, 50), True, True),
        (value(config, 10), value(config, 50), False, False),
        (value(config, 30), None, True, False),
        (None, value(config, 30), False, True),
        (value(config, -INF), value(config, INF), True, True),
        (value(config, 50), value(config, 10), True, True),
    ]
    for low, high, low_in, high_in in bounds:
        flags = {"min_inclusive": low_in, "max_inclusive": high_in}
        assert board.count(low, high, **flags) == model.count(low, high, **flags)
        for offset, limit in [(0, None), (1, 2), (0, 0), (9, None)]:
            for style in STYLES:
                got = board.by_score(low, high, offset=offset, limit=limit, style=style, **flags)
                want = model.by_score(low, high, offset=offset, limit=limit, style=style, **flags)
                same(kind, got, want)


def test_hypothetical_ranks(kind: str, config: dict[str, Any], make: Callable[..., Any]) -> None:
    need(kind, "rank_for_score")
    board, model = seeded(make, config)
    for points in [60, 50, 40, 30, 10, -5, -INF, INF]:
        probe = value(config, points)
        for style in STYLES:
            assert board.rank_for_score(probe, style=style) == model.rank_for_score(
                probe, style=style
            )


def test_percentiles(kind: str, config: dict[str, Any], make: Callable[..., Any]) -> None:
    need(kind, "percentile", "score_at_percentile")
    board, model = seeded(make, config)
    for member in [*MEMBERS, ABSENT]:
        for method in ["below", "at_or_below", "midpoint"]:
            same(
                kind,
                board.percentile(member, method=method),
                model.percentile(member, method=method),
            )
    for p in [0, 10, 25, 50, 90, 100, 33.3]:
        same(kind, board.score_at_percentile(p), model.score_at_percentile(p))


def test_container_reads(kind: str, config: dict[str, Any], make: Callable[..., Any]) -> None:
    need(kind, "container")
    board, model = seeded(make, config)
    assert len(board) == len(model)
    assert [member in board for member in [*MEMBERS, ABSENT]] == [
        member in model for member in [*MEMBERS, ABSENT]
    ]
    same(kind, list(board), list(model))
    same(kind, board.items(), model.items())
    same(kind, [board[member] for member in MEMBERS], [model.score(m) for m in MEMBERS])
    with pytest.raises(KeyError):
        board[ABSENT]


def test_empty_board_reads(kind: str, make: Callable[..., Any]) -> None:
    board, model = make({}), Model()
    same(kind, board.items(), model.items())
    same(kind, board.top(), model.top())
    same(kind, board.by_rank(1, -1), model.by_rank(1, -1))
    same(kind, board.page(1), model.page(1))
    same(kind, board.around(ABSENT), model.around(ABSENT))
    same(kind, board.entry(ABSENT), model.entry(ABSENT))
    assert board.rank(ABSENT) is None
    assert board.score(ABSENT) is None
    assert board.meta(ABSENT) is None
    if "score_at_percentile" not in LACKS.get(kind, {}):
        assert board.score_at_percentile(50) is None
        assert board.percentile(ABSENT) is None
    if "at" not in LACKS.get(kind, {}):
        with pytest.raises(IndexError):
            board.at(1)


# ----------------------------------------------------------------------
# with_meta
# ----------------------------------------------------------------------
def _with_meta_reads(board: Any, flag: Any) -> dict[str, Callable[[], Any]]:
    return {
        "entry": lambda: [board.entry(m, with_meta=flag) for m in MEMBERS],
        "entries": lambda: board.entries(MEMBERS, with_meta=flag),
        "at": lambda: [board.at(r, with_meta=flag) for r in (1, -1)],
        "top": lambda: board.top(99, with_meta=flag),
        "by_rank": lambda: board.by_rank(1, -1, with_meta=flag),
        "page": lambda: board.page(1, 3, with_meta=flag),
        "around": lambda: board.around("cid", 2, 2, with_meta=flag),
        "by_score": lambda: board.by_score(with_meta=flag),
    }


def test_with_meta(kind: str, config: dict[str, Any], make: Callable[..., Any]) -> None:
    """Every read that takes ``with_meta`` gives each row its member's
    metadata with ``True`` and None with ``False``."""
    board, model = seeded(make, config)
    model_reads = _with_meta_reads(model, True)
    for name, read in _with_meta_reads(board, True).items():
        if name in LACKS.get(kind, {}):
            continue  # (the kind lacks the read: see LACKS)
        same(kind, read(), model_reads[name]())
        plain = _with_meta_reads(board, False)[name]()
        rows = [row for row in (plain if isinstance(plain, list) else [plain]) if row is not None]
        assert rows and all(row.meta is None for row in rows), name


def test_metadata_reads_are_copies(kind: str, make: Callable[..., Any]) -> None:
    board = make({})
    board.set("ann", value({}, 1))
    board.set_meta("ann", {"name": "Ann", "tags": ["x"]})
    board.meta("ann")["tags"].append("changed")
    board.top(1, with_meta=True)[0].meta["name"] = "changed"
    assert board.meta("ann") == {"name": "Ann", "tags": ["x"]}


@pytest.mark.parametrize("flag", [1, 0, None, "yes"], ids=repr)
def test_a_with_meta_that_is_not_a_bool_is_refused(
    kind: str, make: Callable[..., Any], flag: Any
) -> None:
    board, _ = seeded(make, {})
    before = state(board)
    reads = _with_meta_reads(board, flag)
    reads["pop_best"] = lambda: board.pop_best(1, with_meta=flag)
    reads["pop_worst"] = lambda: board.pop_worst(1, with_meta=flag)
    for name, read in reads.items():
        if name in LACKS.get(kind, {}):
            continue  # (the kind lacks the call: see LACKS)
        with pytest.raises(
            TypeError, match=rf"^with_meta must be a bool, not {type(flag).__name__}"
        ):
            read()
        assert state(board) == before, name
    with pytest.raises(TypeError, match=r"^fill must be a bool"):
        board.around("ann", 1, 1, fill=flag)
    board._check()


# ----------------------------------------------------------------------
# Writes, each against the model
# ----------------------------------------------------------------------
def _writes(config: dict[str, Any]) -> dict[str, list[tuple[Any, ...]]]:
    """Write scripts by operation: ``(method, args, kwargs)`` each."""
    v = lambda p: value(config, p)  # noqa: E731
    return {
        "set": [
            ("set", ("new", v(7)), {}),
            ("set", ("new", v(7)), {}),  # the same score: no change, keeps its place
            ("set", ("ann", v(5)), {}),
            ("set", ("bob", v(0)), {}),
        ],
        "when": [
            ("set", ("ann", v(99)), {"when": "new"}),
            ("set", ("new", v(99)), {"when": "present"}),
            ("set", ("new", v(99)), {"when": "new"}),
            ("set", ("bob", v(10)), {"when": "better"}),
            ("set", ("bob", v(70)), {"when": "better"}),
            ("set", ("cid", v(90)), {"when": "worse"}),
            ("set", ("cid", v(20)), {"when": "worse"}),
            ("set", ("dee", v(30)), {"when": "present"}),
        ],
        "meta-on-set": [
            ("set", ("ann", v(50)), {"meta": {"level": 3}}),  # same score, new meta
            ("set", ("new", v(1)), {"meta": {"name": "New"}}),
            ("set", ("cid", v(2)), {"meta": None}),  # None keeps the metadata
        ],
        "incr": [
            ("incr", ("ann", v(5)), {}),
            ("incr", ("new", v(3)), {}),
            ("incr", ("new", v(-3)), {}),
            ("incr", ("eve", v(0)), {}),
            ("incr", ("fay", v(0.5)), {}),
        ],
        "incr-when": [
            ("incr", ("ann", v(1)), {"when": "new"}),
            ("incr", ("new", v(1)), {"when": "present"}),
            ("incr", ("bob", v(-1)), {"when": "better"}),
            ("incr", ("bob", v(1)), {"when": "better"}),
        ],
        "set_many": [
            ("set_many", ([("x1", v(3)), ("ann", v(1)), ("x1", v(4))],), {}),
            ("set_many", ({"bob": v(50), "x2": v(60)},), {}),
            ("set_many", ([],), {}),
        ],
        "incr_many": [
            ("incr_many", ([("ann", v(1)), ("x1", v(2)), ("ann", v(3))],), {}),
            ("incr_many", ({"bob": v(-50)},), {}),
        ],
        "remove": [
            ("remove", ("ann",), {}),
            ("remove", ("ann",), {}),
            ("remove", (ABSENT,), {}),
        ],
        "remove_many": [
            ("remove_many", (["bob", ABSENT, "bob", "eve"],), {}),
            ("remove_many", ([],), {}),
        ],
        "set_meta": [
            ("set_meta", ("bob", {"name": "Bob"}), {}),
            ("set_meta", ("ann", None), {}),
            ("set_meta", ("cid", {"name": "Cid", "tags": ["x", "y"]}), {}),
        ],
        "pop_best": [("pop_best", (), {}), ("pop_best", (2,), {"with_meta": True})],
        "pop_worst": [("pop_worst", (), {}), ("pop_worst", (2,), {"with_meta": True})],
        "remove_by_rank": [("remove_by_rank", (2, 3), {}), ("remove_by_rank", (-1, -1), {})],
        "remove_by_score": [
            ("remove_by_score", (v(30), v(50)), {"min_inclusive": False}),
            ("remove_by_score", (None, v(0)), {}),
        ],
        "keep_top": [("keep_top", (99,), {}), ("keep_top", (3,), {}), ("keep_top", (0,), {})],
        "clear": [("clear", (), {}), ("clear", (), {})],
    }


#: write script -> the operations a kind must have for it.
_NEEDS = {"when": ("when",), "incr-when": ("when",), "meta-on-set": ("meta-on-set",)}


@pytest.mark.parametrize("script", list(_writes({})))
def test_writes(kind: str, config: dict[str, Any], make: Callable[..., Any], script: str) -> None:
    need(kind, *_NEEDS.get(script, (script,)))
    board, model = seeded(make, config)
    for name, args, kwargs in _writes(config)[script]:
        got = getattr(board, name)(*args, **kwargs)
        want = getattr(model, name)(*args, **kwargs)
        same(kind, got, want)
        board._check()
        same(kind, board.items(), model.items())
        same(
            kind,
            [board.meta(m) for m, _ in model.items()],
            [model.meta(m) for m, _ in model.items()],
        )
        for style in STYLES:
            same(kind, board.top(99, style=style), model.top(99, style=style))


def test_item_writes(kind: str, make: Callable[..., Any]) -> None:
    need(kind, "setitem")
    board, model = seeded(make, {})
    board["new"] = 5
    model.set("new", 5)
    del board["ann"]
    model.remove("ann")
    with pytest.raises(KeyError):
        del board[ABSENT]
    same(kind, board.items(), model.items())
    board._check()


# ----------------------------------------------------------------------
# Bad input: a clear error, and nothing changed
# ----------------------------------------------------------------------
#: (operation the call needs, the call).  Each raises on the in-memory board;
#: every kind must raise the same error type and change nothing.
BAD: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "rank-bad-style": ("rank", lambda b: b.rank("ann", style="best")),
    "entry-bad-style": ("entry", lambda b: b.entry("ann", style="Unique")),
    "top-negative": ("top", lambda b: b.top(-1)),
    "top-float": ("top", lambda b: b.top(2.0)),
    "top-bool": ("top", lambda b: b.top(True)),
    "top-bad-style": ("top", lambda b: b.top(3, style="x")),
    "by-rank-zero": ("by_rank", lambda b: b.by_rank(0, 3)),
    "by-rank-float": ("by_rank", lambda b: b.by_rank(1, 2.0)),
    "page-size-zero": ("page", lambda b: b.page(1, 0)),
    "page-number-none": ("page", lambda b: b.page(None)),
    "pages-size-zero": ("pages", lambda b: b.pages(0)),
    "around-negative": ("around", lambda b: b.around("ann", -1)),
    "around-absent-bad-style": ("around", lambda b: b.around(ABSENT, style="bad")),
    "around-unhashable": ("around", lambda b: b.around(["ann"])),
    "entries-bare-string": ("entries", lambda b: b.entries("ann")),
    "at-zero": ("at", lambda b: b.at(0)),
    "at-past-end": ("at", lambda b: b.at(99)),
    "at-float": ("at", lambda b: b.at(1.0)),
    "by-score-nan": ("by_score", lambda b: b.by_score(NAN, None)),
    "by-score-str": ("by_score", lambda b: b.by_score(None, "5")),
    "by-score-flag": ("by_score", lambda b: b.by_score(min_inclusive=1)),
    "by-score-negative-offset": ("by_score", lambda b: b.by_score(offset=-1)),
    "count-nan": ("count", lambda b: b.count(None, NAN)),
    "count-flag": ("count", lambda b: b.count(max_inclusive="yes")),
    "rank-for-nan": ("rank_for_score", lambda b: b.rank_for_score(NAN)),
    "percentile-method": ("percentile", lambda b: b.percentile("ann", method="median")),
    "score-at-101": ("score_at_percentile", lambda b: b.score_at_percentile(101)),
    "score-at-nan": ("score_at_percentile", lambda b: b.score_at_percentile(NAN)),
    "set-nan": ("set", lambda b: b.set("new", NAN)),
    "set-str": ("set", lambda b: b.set("new", "5")),
    "set-bool": ("set", lambda b: b.set("ann", True)),
    "set-list-member": ("set", lambda b: b.set(["a"], 1)),
    "set-float-member": ("set", lambda b: b.set(1.5, 1)),
    "set-when": ("when", lambda b: b.set("ann", 1, when="always")),
    "set-with-meta-not-a-dict": ("meta-on-set", lambda b: b.set("ann", 1, meta=["x"])),
    "incr-nan": ("incr", lambda b: b.incr("ann", NAN)),
    "incr-inf-minus-inf": ("incr", lambda b: b.incr("gus", -INF)),
    "incr-str": ("incr", lambda b: b.incr("ann", "1")),
    "set-many-one-bad": ("set_many", lambda b: b.set_many([("new", 1), ("bob", NAN)])),
    "set-many-bad-pair": ("set_many", lambda b: b.set_many([("new", 1, 2)])),
    "incr-many-one-bad": ("incr_many", lambda b: b.incr_many([("ann", 1), ("bob", "x")])),
    "remove-list-member": ("remove", lambda b: b.remove(["ann"])),
    "remove-many-bare-string": ("remove_many", lambda b: b.remove_many("ann")),
    "remove-many-one-bad": ("remove_many", lambda b: b.remove_many(["ann", None])),
    "set-meta-absent": ("set_meta", lambda b: b.set_meta(ABSENT, {"a": 1})),
    "set-meta-not-a-dict": ("set_meta", lambda b: b.set_meta("ann", "x")),
    "pop-best-negative": ("pop_best", lambda b: b.pop_best(-1)),
    "pop-worst-float": ("pop_worst", lambda b: b.pop_worst(1.0)),
    "remove-by-rank-zero": ("remove_by_rank", lambda b: b.remove_by_rank(0, 2)),
    "remove-by-rank-bool": ("remove_by_rank", lambda b: b.remove_by_rank(True, 2)),
    "remove-by-score-nan": ("remove_by_score", lambda b: b.remove_by_score(NAN, INF)),
    "remove-by-score-flag": ("remove_by_score", lambda b: b.remove_by_score(0, 9, max_inclusive=0)),
    "keep-top-negative": ("keep_top", lambda b: b.keep_top(-1)),
    # several bad arguments: the first one checked decides (the same on every
    # kind): the bound before the flags, the style before the range and for
    # an absent member
    "by-score-nan-bound-and-flag": ("by_score", lambda b: b.by_score(None, NAN, min_inclusive=0)),
    "count-nan-bound-none-flag": ("count", lambda b: b.count(NAN, None, max_inclusive=None)),
    "remove-by-score-nan-bound-and-flag": (
        "remove_by_score",
        lambda b: b.remove_by_score(None, NAN, min_inclusive=0),
    ),
    "around-non-member-bad-style": ("around", lambda b: b.around(1.5, style="bad")),
    "around-unhashable-bad-style": ("around", lambda b: b.around(["x"], style="bad")),
    "by-score-bad-style-and-flag": ("by_score", lambda b: b.by_score(min_inclusive=0, style="x")),
    "by-rank-bad-style-and-zero": ("by_rank", lambda b: b.by_rank(0, 1, style="x")),
    "at-bad-style-and-float": ("at", lambda b: b.at(1.0, style="x")),
    "entries-bad-style-bare-string": ("entries", lambda b: b.entries("ann", style="x")),
    "rank-unhashable-bad-style": ("rank", lambda b: b.rank(["ann"], style="x")),
    # the container reads (BoardAPI's extension points, and what it makes of them)
    "score-unhashable": ("score", lambda b: b.score(["ann"])),
    "meta-unhashable": ("meta", lambda b: b.meta(["ann"])),
    "getitem-absent": ("container", lambda b: b[ABSENT]),
    "getitem-unhashable": ("container", lambda b: b[["ann"]]),
    "getitem-lookalike": ("container", lambda b: b[True]),
    "contains-unhashable": ("container", lambda b: ["ann"] in b),
    "page-bad-flag-and-size": ("page", lambda b: b.page(1, 0, with_meta=1)),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_raises_and_changes_nothing(
    kind: str, make: Callable[..., Any], case: str
) -> None:
    op, call = BAD[case]
    need(kind, op)
    reference, _ = seeded(lambda config: Leaderboard(**config), {})
    want = outcome(lambda: call(reference))
    assert want[0] == "raises", f"{case} does not raise on the in-memory board"
    board, _ = seeded(make, {})
    before = state(board)
    assert outcome(lambda: call(board)) == want
    assert state(board) == before
    board._check()


#: (operation, the call, the member its error must name).  A batch write
#: with one bad item changes nothing, and says which item was bad: its
#: index in the batch and its member.
BAD_BATCHES: dict[str, tuple[str, Callable[[Any], Any], str]] = {
    "set-many-bad-score": ("set_many", lambda b: b.set_many({"ok": 1, "bad": "x"}), "'bad'"),
    "set-many-nan": ("set_many", lambda b: b.set_many([("ok", 1), ("bad", NAN)]), "'bad'"),
    "set-many-bad-member": ("set_many", lambda b: b.set_many([("ok", 1), (1.5, 2)]), "1.5"),
    # not a pair: no member to name; the item itself is shown
    "set-many-bad-pair": ("set_many", lambda b: b.set_many([("ok", 1), ("x", 1, 2)]), ""),
    "incr-many-bad-delta": ("incr_many", lambda b: b.incr_many({"ok": 1, "bad": "x"}), "'bad'"),
    "remove-many-bad-member": ("remove_many", lambda b: b.remove_many(["ann", None]), "None"),
}


@pytest.mark.parametrize("case", list(BAD_BATCHES))
def test_a_bad_batch_item_is_named_and_changes_nothing(
    kind: str, make: Callable[..., Any], case: str
) -> None:
    op, call, member = BAD_BATCHES[case]
    if kind in DECAYED_KINDS and op == "incr_many":
        op, call = "add_many", lambda b: b.add_many({"ok": 1, "bad": "x"})
    need(kind, op)
    board, _ = seeded(make, {})
    before = state(board)
    with pytest.raises((TypeError, ValueError)) as raised:
        call(board)
    text = str(raised.value)
    assert "the batch's item at index 1" in text, text
    assert f"(member {member})" in text if member else "got ('x', 1, 2)" in text, text
    assert text.endswith("nothing was changed"), text
    assert state(board) == before
    board._check()


# ----------------------------------------------------------------------
# A bad style or flag, on every kind (and on the third index and sharded
# boards over each in-memory index): refused before anything changes
# ----------------------------------------------------------------------
#: The kinds above, plus the board on the reference index (tests/listindex.py)
#: and sharded boards over the skip list and the reference index.
FLAG_KINDS = [*KINDS, "reference", "sharded-skiplist", "sharded-reference"]

#: name -> (operation, call): a rank style no board has.  An absent member,
#: an empty range and no members return early, and refuse it all the same.
BAD_STYLES: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "rank-style": ("rank", lambda b: b.rank("ann", style="olympic")),
    "entry-style": ("entry", lambda b: b.entry("ann", style="Dense")),
    "entries-style": ("entries", lambda b: b.entries(["ann"], style="1224")),
    "at-style": ("at", lambda b: b.at(1, style="x")),
    "top-style": ("top", lambda b: b.top(3, style="x")),
    "by-rank-style": ("by_rank", lambda b: b.by_rank(1, 2, style="x")),
    "page-style": ("page", lambda b: b.page(1, style="x")),
    "around-style": ("around", lambda b: b.around("ann", style="x")),
    "by-score-style": ("by_score", lambda b: b.by_score(style="x")),
    "rank-for-score-style": ("rank_for_score", lambda b: b.rank_for_score(5, style="x")),
    "rank-style-absent-member": ("rank", lambda b: b.rank("nobody", style="x")),
    "around-style-absent-member": ("around", lambda b: b.around("nobody", style="x")),
    "by-score-style-empty-range": ("by_score", lambda b: b.by_score(99, 100, style="x")),
    "by-score-style-limit-0": ("by_score", lambda b: b.by_score(limit=0, style="x")),
    "entries-style-no-members": ("entries", lambda b: b.entries([], style="x")),
}

#: Values that are not a flag: "no" is true, 1 and None pass for one.
NOT_FLAGS = [("str", "no"), ("int", 1), ("none", None)]

#: name -> (operation, call(board, value)): ``fill`` is a flag like the
#: inclusive ones (fill="no" filled the window).
BAD_FILLS: dict[str, tuple[str, Callable[[Any, Any], Any]]] = {
    "around-fill": ("around", lambda b, v: b.around("bob", 5, 0, fill=v)),
    "around-fill-absent-member": ("around", lambda b, v: b.around("nobody", fill=v)),
}

#: Which operation each call of :func:`with_meta_calls` needs.
WITH_META_OPS = {
    "entry": "entry",
    "entry-absent": "entry",
    "entries": "entries",
    "entries-none": "entries",
    "at": "at",
    "top": "top",
    "top-0": "top",
    "by-rank": "by_rank",
    "by-rank-empty": "by_rank",
    "page": "page",
    "around": "around",
    "around-absent": "around",
    "by-score": "by_score",
    "by-score-empty": "by_score",
    "pop-best": "pop_best",
    "pop-worst": "pop_worst",
    "pop-best-0": "pop_best",
}


def with_meta_calls(
    read: dict[str, Any] | None = None, pop: dict[str, Any] | None = None
) -> dict[str, Callable[[Any, Any], Any]]:
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


def _style_and_flag_cases() -> dict[str, tuple[str, str | None, Callable[[Any], Any]]]:
    """name -> (operation, the error a flag gets or None for a style, call)."""
    cases: dict[str, tuple[str, str | None, Callable[[Any], Any]]] = {
        name: (op, None, call) for name, (op, call) in BAD_STYLES.items()
    }
    calls = with_meta_calls()
    for label, value in NOT_FLAGS:
        for name, (op, fill) in BAD_FILLS.items():
            cases[f"{name}-{label}"] = (
                op,
                f"fill must be a bool, not {type(value).__name__}",
                lambda b, f=fill, v=value: f(b, v),
            )
        for name, op in WITH_META_OPS.items():
            cases[f"{name}-with-meta-{label}"] = (
                op,
                f"with_meta must be a bool, not {type(value).__name__}",
                lambda b, c=calls[name], v=value: c(b, v),
            )
    return cases


STYLE_AND_FLAG_CASES = _style_and_flag_cases()


@pytest.mark.parametrize("case", list(STYLE_AND_FLAG_CASES))
@pytest.mark.parametrize("kind", FLAG_KINDS)
def test_a_bad_style_or_flag_is_refused(kind: str, make: Callable[..., Any], case: str) -> None:
    """A style no board has is a ``ValueError``; a flag that is not a bool a
    ``TypeError`` that says so (a sharded board checked the style of
    ``entries()`` member by member, so ``entries([], style="x")`` returned
    ``[]`` where every other board refused it).  Nothing changes."""
    op, message, call = STYLE_AND_FLAG_CASES[case]
    need(kind, op)
    board, _ = seeded(make, {})
    before = state(board)
    if message is None:
        with pytest.raises(ValueError, match=r"^rank style must be one of"):
            call(board)
    else:
        with pytest.raises(TypeError, match=rf"^{message}$"):
            call(board)
    assert state(board) == before
    board._check()


# ----------------------------------------------------------------------
# The contract's signatures and docstrings, on every kind
# ----------------------------------------------------------------------
#: The contract's public methods (the Board protocol's, but the dunders).
CONTRACT_METHODS = sorted(
    name
    for name, member in vars(Board).items()
    if callable(member) and not name.startswith("_") and name != "config"
)


def _parameters(function: Any) -> list[tuple[str, Any, Any]]:
    """Name, kind and default of each parameter (annotations aside: each
    module spells its own)."""
    return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]


@pytest.mark.parametrize(
    "cls",
    [Leaderboard, DurableLeaderboard, RedisLeaderboard, ShardedLeaderboard, LedgerBoard],
    ids=lambda cls: cls.__name__,
)
def test_exact_kinds_have_the_contract_signatures(cls: type) -> None:
    """Every public method of the Board protocol exists on the kind, takes
    the same parameters (names, kinds, defaults) and has a docstring (its
    own, or the contract's that ``inspect.getdoc`` finds)."""
    for name in CONTRACT_METHODS:
        method = getattr(cls, name)
        # (the protocol states incr as two overloads, which mypy checks;
        # at run time they leave no signature: Leaderboard's is the reference)
        reference = Leaderboard.incr if name == "incr" else getattr(Board, name)
        assert _parameters(method) == _parameters(reference), name
        assert inspect.getdoc(method), name


@pytest.mark.parametrize(
    ("cls", "keyword", "least"),
    [
        (PeriodicLeaderboard, "period", 17),
        (SlidingWindowLeaderboard, None, 17),
        (DecayedLeaderboard, "at", 6),
    ],
    ids=["periodic", "window", "decayed"],
)
def test_routed_reads_keep_the_contract_signatures(
    cls: type, keyword: str | None, least: int
) -> None:
    """A periodic board's, a window's and a decayed board's reads are the
    contract's, plus ``period=`` on a periodic board and ``at=`` on a
    decayed one: signature and docstring."""
    reads = [
        name
        for name in CONTRACT_METHODS
        if name in vars(cls)
        and name not in WRITES
        and getattr(cls, name).__doc__.startswith(":meth:")
    ]
    assert len(reads) >= least
    for name in reads:
        contract = _parameters(getattr(Leaderboard, name))
        got = _parameters(getattr(cls, name))
        if keyword is not None:
            got = [p for p in got if p[0] != keyword]
            assert keyword in inspect.signature(getattr(cls, name)).parameters, name
        assert got == contract, name
        assert inspect.getdoc(getattr(cls, name)), name


#: The contract's writes (a periodic board's and a window's take ``t=``).
WRITES = {
    "set",
    "incr",
    "set_many",
    "incr_many",
    "remove",
    "remove_many",
    "set_meta",
    "clear",
    "pop_best",
    "pop_worst",
    "remove_by_rank",
    "remove_by_score",
    "keep_top",
}


@pytest.mark.parametrize(
    "cls",
    [Leaderboard, DurableLeaderboard, ShardedLeaderboard, RedisLeaderboard, LedgerBoard],
    ids=lambda cls: cls.__name__,
)
def test_writes_are_the_contracts(cls: type) -> None:
    """The in-memory, durable, sharded and Redis boards take their public
    writes from BoardWrites: each supplies every write primitive (none is
    left to the contract's stub), and each write's docstring is the
    contract's (the in-memory board's fused ``set`` and ``incr`` included);
    the durable board's ``clear`` alone adds its own (its log record's size
    limit).  Only the in-memory board fuses a write; the others' public
    writes are the contract's own methods."""
    assert issubclass(cls, BoardWrites)
    for name in WRITE_PRIMITIVES:
        assert getattr(cls, name) is not getattr(BoardWrites, name), name
    if cls in (ShardedLeaderboard, RedisLeaderboard, LedgerBoard):
        for name in [n for n in vars(BoardWrites) if not n.startswith("_")]:
            assert getattr(cls, name) is getattr(BoardWrites, name), name
    for name in [n for n in vars(BoardWrites) if not n.startswith("_")]:
        if cls is DurableLeaderboard and name == "clear":
            continue
        assert inspect.getdoc(getattr(cls, name)) == inspect.getdoc(getattr(BoardWrites, name)), (
            name
        )


@pytest.mark.parametrize(
    "cls",
    [Leaderboard, DurableLeaderboard, RedisLeaderboard, ShardedLeaderboard, LedgerBoard],
    ids=lambda cls: cls.__name__,
)
def test_container_reads_are_the_contracts(cls: type) -> None:
    """The container reads are stated once, in BoardAPI: each kind writes
    the extension points' bodies (none is left to the contract's stub) under
    the contract's docstrings (no kind restates one), and the Redis and
    sharded boards take ``__iter__`` and ``__getitem__`` from the contract
    (the in-memory board fuses both, under the contract's docstrings)."""
    assert issubclass(cls, BoardAPI)
    for name in EXTENSION_POINTS:
        assert getattr(cls, name) is not getattr(BoardAPI, name), name
    for name in (*EXTENSION_POINTS, "__iter__", "__getitem__"):
        assert inspect.getdoc(getattr(BoardAPI, name)), name
        assert getattr(cls, name).__doc__ in (None, getattr(BoardAPI, name).__doc__), name
    if cls in (RedisLeaderboard, ShardedLeaderboard, LedgerBoard):
        assert cls.__iter__ is BoardAPI.__iter__
        assert cls.__getitem__ is BoardAPI.__getitem__


#: The writes of the contract that each time board answers with the time
#: as its extension point (``t=``; a decayed board's take no time), and
#: what that keyword is.
TIMED_WRITES: dict[type, tuple[str | None, set[str]]] = {
    PeriodicLeaderboard: ("t", WRITES - {"clear"}),
    SlidingWindowLeaderboard: (
        "t",
        {"set", "incr", "set_many", "incr_many", "remove", "remove_many", "set_meta"},
    ),
    DecayedLeaderboard: (
        None,
        {
            "remove",
            "remove_many",
            "set_meta",
            "pop_best",
            "pop_worst",
            "keep_top",
            "remove_by_rank",
        },
    ),
}


@pytest.mark.parametrize("cls", list(TIMED_WRITES), ids=lambda cls: cls.__name__)
def test_time_boards_writes_are_the_contracts(cls: type) -> None:
    """A periodic board's, a window's and a decayed board's writes are
    declared the contract's (routing.at_time): the contract's signature
    plus ``t=`` (a decayed board's: the contract's exactly), and the
    contract's rules in the docstring, after the kind's own first line."""
    keyword, names = TIMED_WRITES[cls]
    for name in names:
        write = getattr(cls, name)
        assert write.__contract__ is getattr(Leaderboard, name), name
        got = _parameters(write)
        if keyword is not None:
            assert keyword in [p[0] for p in got], name
            got = [p for p in got if p[0] != keyword]
        assert got == _parameters(getattr(Leaderboard, name)), name
        rules = inspect.getdoc(getattr(Leaderboard, name)).split("\n\n")[0]
        assert rules in write.__doc__, name
    # and a write that no longer matches the contract is refused at once
    with pytest.raises(TypeError, match="not the contract's"):
        routing.at_time(Leaderboard.set)(lambda self, member, *, t=None: None)
