"""Tests that only the skip list has: its shape, spans, searches and finger.

The behaviour every index backend shares (insert, remove, move, reads,
build, the by-member hooks, the Redis stress properties, a state machine
against the model) is in ``tests/test_index_conformance.py``, which runs the
skip list with ``max_level`` 1, 4 and 32.  Here: the constants and the level
draw, ``render``/``levels``, the in-place and relinking paths of ``move``,
the searches of the extras (``_search_run_end``, ``_seek_member``,
``move_member`` in one search), ``_check()`` catching damage, and the
conformance machine narrowed to the skip list with rules that reach into
its nodes (the tallest node, the finger).
"""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import invariant, precondition, rule
from test_index_conformance import BACKENDS, IndexMachine

from rankengine.index.skiplist import MAX_LEVEL, P, SkipList, node_entry, node_height
from rankengine.index.skipnode import BACKWARD, FORWARD, LINKS_AT, MEMBER, PRIMARY, SPAN, TIE

Entry = tuple[Any, Any, Any]


def backward_walk(sl: SkipList) -> list[Entry]:
    """Entries read from the tail through ``backward`` pointers."""
    out = []
    x = sl.tail
    while x is not None:
        out.append(node_entry(x))
        x = x[BACKWARD]
    return out


# ----------------------------------------------------------------------
# Construction and small surface
# ----------------------------------------------------------------------


def test_constants() -> None:
    assert MAX_LEVEL == 32
    assert P == 0.25


@pytest.mark.parametrize("bad", [0, -1, MAX_LEVEL + 1])
def test_max_level_bounds(bad: int) -> None:
    with pytest.raises(ValueError, match="max_level"):
        SkipList(max_level=bad)


def test_repr_and_render() -> None:
    sl = SkipList(random.Random(0), max_level=3)
    assert repr(sl) == "SkipList([], length=0, level=1)"
    sl.build([(i, 0, f"m{i}") for i in range(20)])
    text = repr(sl)
    assert text.startswith("SkipList([(0, 0, 'm0'), (1, 0, 'm1'),")
    assert ", ...], length=20, level=" in text
    picture = sl.render(max_nodes=5)
    rows = picture.splitlines()
    # One row per level, top first, then the labels, then the truncation note.
    assert [r[:3] for r in rows[: sl.level]] == [f"L{i:<2}" for i in range(sl.level - 1, -1, -1)]
    assert rows[sl.level].split() == ["H", "0/0", "1/0", "2/0", "3/0", "4/0"]
    assert "15 more nodes" in rows[-1]


def test_levels_reports_heights_and_spans() -> None:
    sl = SkipList(random.Random(3), max_level=4)
    entries = [(i, -i, str(i)) for i in range(50)]
    sl.build(entries)
    rows = list(sl.levels(include_header=True))
    head, nodes = rows[0], rows[1:]
    assert head[:3] == (None, None, None)
    assert len(head[3]) == sl.level
    assert [r[:3] for r in nodes] == entries
    # Spans on each level add up to the length, header included.
    for i in range(sl.level):
        assert sum(spans[i] for *_, spans in rows if len(spans) > i) == len(sl)
    assert max(len(spans) for *_, spans in nodes) == sl.level
    # The lists handed out are copies.
    nodes[0][3][0] = 99
    sl._check()


def test_same_seed_same_shape() -> None:
    def shape(seed: int) -> list[list[int]]:
        sl = SkipList(random.Random(seed))
        for i in range(200):
            sl.insert(i % 7, i, i)
        return [spans for *_, spans in sl.levels()]

    assert shape(11) == shape(11)
    assert shape(11) != shape(12)


def assert_heights_follow_p(heights: list[int]) -> None:
    """The share of heights above k is P**k, within 4 standard deviations."""
    n = len(heights)
    for k in range(1, 5):
        share = sum(h > k for h in heights) / n
        expected = P**k
        assert abs(share - expected) <= 4 * (expected * (1 - expected) / n) ** 0.5, (k, share)


def test_level_distribution_matches_p() -> None:
    sl = SkipList(random.Random(5))
    heights = [sl._random_level() for _ in range(40_000)]
    assert_heights_follow_p(heights)
    capped = SkipList(random.Random(1), max_level=3)
    assert max(capped._random_level() for _ in range(999)) == 3
    assert {SkipList(max_level=1)._random_level() for _ in range(50)} == {1}


# ----------------------------------------------------------------------
# move(): fast path in place, slow path relinks the same node
# ----------------------------------------------------------------------


def test_move_in_place_keeps_links(monkeypatch: pytest.MonkeyPatch) -> None:
    sl = SkipList(random.Random(1), max_level=4)
    sl.build([(10 * i, 0, f"m{i}") for i in range(100)])
    # A tall node in the middle, so several levels point at it.
    rank = next(r for r, (*_, spans) in enumerate(sl.levels(), 1) if r > 20 and len(spans) > 1)
    node = sl._node_at(rank)
    p, t, m = node_entry(node)
    links_before = node[LINKS_AT:]
    before = [r[3] for r in sl.levels(include_header=True)]

    # Any relink on this path is a failure.
    def no_relink(*_: object) -> None:
        raise AssertionError("the in-place path must not unlink or relink")

    monkeypatch.setattr(SkipList, "_unlink", no_relink)
    monkeypatch.setattr(SkipList, "_link", no_relink)
    sl.move(p, t, p + 5, 7)  # still between p - 10 and p + 10
    sl.move(p + 5, 7, p - 9, -1)
    sl.move(p - 9, -1, p + 9, 99)
    monkeypatch.undo()

    assert sl._node_at(rank) is node
    assert node_entry(node) == (p + 9, 99, m)
    assert len(node[LINKS_AT:]) == len(links_before)
    assert all(a is b for a, b in zip(node[LINKS_AT:], links_before, strict=True))
    assert [r[3] for r in sl.levels(include_header=True)] == before
    sl._check()


def test_move_far_reuses_node(monkeypatch: pytest.MonkeyPatch) -> None:
    sl = SkipList(random.Random(2), max_level=4)
    sl.build([(i, 0, f"m{i}") for i in range(64)])
    node = sl._node_at(10)
    height = node_height(node)
    calls: list[str] = []
    real_unlink, real_link = SkipList._unlink, SkipList._link
    real_ahead = SkipList._move_ahead

    def unlink(self: SkipList, x: Any) -> None:
        calls.append("unlink")
        real_unlink(self, x)

    def link(self: SkipList, x: Any) -> None:
        calls.append("link")
        real_link(self, x)

    def move_ahead(self: SkipList, x: Any, p: Any, t: Any) -> None:
        calls.append("move_ahead")
        real_ahead(self, x, p, t)

    monkeypatch.setattr(SkipList, "_unlink", unlink)
    monkeypatch.setattr(SkipList, "_link", link)
    monkeypatch.setattr(SkipList, "_move_ahead", move_ahead)
    # To a larger key: the fused finger move.
    sl.move(9, 0, 100, 0)
    assert calls == ["move_ahead"]
    assert sl.tail is node
    assert sl._node_at(64) is node
    assert node_entry(node) == (100, 0, "m9")
    sl._check()
    # To a smaller key: unlink, search from the header, relink.
    calls.clear()
    sl.move(100, 0, -1, 0)
    monkeypatch.undo()

    assert calls == ["unlink", "link"]
    assert sl._node_at(1) is node
    assert node_height(node) == height
    assert node_entry(node) == (-1, 0, "m9")
    sl._check()


@pytest.mark.parametrize("oldest_last", [False, True])
@pytest.mark.parametrize("max_level", [1, 2, 4, MAX_LEVEL])
def test_search_run_end_stops_before_the_oldest_node(oldest_last: bool, max_level: int) -> None:
    # Runs of 1 .. 12 nodes: the search fills update[i] with the last node
    # before the run's oldest node on every level, rank[i] with its rank,
    # and returns that oldest node (the run's last when oldest_last).
    entries = [(p, t, f"m{p}.{t}") for p in range(1, 13) for t in range(p)]
    sl = SkipList(random.Random(max_level), max_level=max_level)
    sl.oldest_last = oldest_last
    sl.build(entries)
    nodes = [sl.header, *sl._nodes()]
    for p in range(14):
        x = sl._search_run_end(p)
        run = [n for n in nodes[1:] if n[PRIMARY] == p]
        if not run:
            assert x is None or x[PRIMARY] != p
            continue
        oldest = run[-1] if oldest_last else run[0]
        assert x is oldest
        at = next(k for k, n in enumerate(nodes) if n is oldest)
        for i in range(sl.level):
            before = [k for k in range(at) if k == 0 or node_height(nodes[k]) > i][-1]
            assert sl._update[i] is nodes[before], (p, i)
            assert sl._rank[i] == before, (p, i)


@pytest.mark.parametrize("oldest_last", [False, True])
@pytest.mark.parametrize("max_level", [1, 2, 4, MAX_LEVEL])
def test_seek_member_leaves_the_search_for_the_member(oldest_last: bool, max_level: int) -> None:
    # From the run-end search, _seek_member finds any node of the run and
    # leaves update[] and rank[] exactly as a search for its key does.
    entries = [(p, t, f"m{p}.{t}") for p in range(1, 13) for t in range(p)]
    for seed in range(4):
        sl = SkipList(random.Random(seed), max_level=max_level)
        sl.oldest_last = oldest_last
        sl.build(entries)
        for p, t, m in entries:
            end = sl._search_run_end(p)
            x = end if end[MEMBER] == m else sl._seek_member(end, m)
            assert node_entry(x) == (p, t, m)
            got = (list(sl._update[: sl.level]), sl._rank[: sl.level])
            sl._search_update_rank(p, t)
            assert got == (list(sl._update[: sl.level]), sl._rank[: sl.level]), (seed, m)


@pytest.mark.parametrize("oldest_last", [False, True])
@pytest.mark.parametrize("max_level", [1, 2, 4, MAX_LEVEL])
def test_move_member_takes_one_search(
    oldest_last: bool, max_level: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Wherever the node sits in its run, move_member searches once (to the
    # run's oldest end), walks level 0 to the node and corrects update[]
    # (_seek_member): no search from the header for its key, no tie_of.
    searches: list[Any] = []
    for name in ("tie_of", "_search_update_rank", "_search_update"):
        method = getattr(SkipList, name)

        def counting(self: SkipList, *args: Any, method: Any = method, name: str = name) -> Any:
            searches.append(name)
            return method(self, *args)

        monkeypatch.setattr(SkipList, name, counting)
    entries = [(p, t, f"m{p}.{t}") for p in range(1, 13) for t in range(p)]
    for seed, (p, t, m) in itertools.product(range(6), entries):
        sl = SkipList(random.Random(seed), max_level=max_level)
        sl.oldest_last = oldest_last
        sl.build(entries)
        near = sl.move_member(p, m, 99, -1)  # a larger key: moved ahead by finger
        assert searches == []
        sl._check()
        assert sl.entry(len(sl) - 1) == (99, -1, m)
        assert near is True
        # and back down (a smaller key: relinked after a search, as move does)
        sl.move_member(99, m, p, t)
        assert list(sl) == entries
        searches.clear()
    with pytest.raises(KeyError):
        sl.move_member(12, "nobody", 0, 0)
    with pytest.raises(KeyError):
        sl.move_member(13, "m12.0", 0, 0)


# ----------------------------------------------------------------------
# build(): O(N) bulk load
# ----------------------------------------------------------------------


def test_build_draws_heights_like_insert() -> None:
    sl = SkipList(random.Random(8))
    sl.build((i, 0, i) for i in range(40_000))
    assert_heights_follow_p([len(spans) for *_, spans in sl.levels()])


# ----------------------------------------------------------------------
# _check(): it does catch broken invariants
# ----------------------------------------------------------------------


def _tall_node(sl: SkipList) -> Any:
    x = sl.header[FORWARD[0]]
    while x is not None and node_height(x) < 2:
        x = x[FORWARD[0]]
    assert x is not None
    return x


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda sl: sl.header.__setitem__(SPAN[0], 2), "span"),  # header's level-0 span
        (lambda sl: _tall_node(sl).__setitem__(SPAN[1], 99), "span"),  # level-1 span
        (lambda sl: sl.tail.__setitem__(BACKWARD, None), "backward"),
        (lambda sl: setattr(sl, "tail", sl.header[FORWARD[0]]), "tail"),
        (lambda sl: setattr(sl, "length", 99), "length"),
        (lambda sl: setattr(sl, "level", sl.level + 1), "level"),
        (lambda sl: sl.header[FORWARD[0]].__setitem__(PRIMARY, 10**9), "order"),
        (lambda sl: _tall_node(sl).__setitem__(FORWARD[1], None), "level 1"),  # level-1 link
        (lambda sl: setattr(sl, "_finger", (sl.header[FORWARD[0]], 2)), "finger"),
    ],
)
def test_check_catches_damage(damage: Any, message: str) -> None:
    sl = SkipList(random.Random(0), max_level=4)
    sl.build([(i, 0, i) for i in range(40)])
    sl._check()
    damage(sl)
    with pytest.raises(AssertionError, match=message) as info:
        sl._check()
    # The message carries a dump of the levels.
    assert "L0" in str(info.value)


# ----------------------------------------------------------------------
# Out of the protocol's contract, as the skip list answers it
# ----------------------------------------------------------------------


def test_empty_list_shape_and_after_removing_everything() -> None:
    sl = SkipList(random.Random(0), max_level=4)
    assert (sl.tail, sl.level, sl.length) == (None, 1, 0)
    sl.build(sorted((i % 5, i, i) for i in range(200)))
    assert sl.level > 1
    for p, t, _ in list(sl):
        sl.remove(p, t)
    sl._check()
    assert (sl.tail, sl.level, sl.length) == (None, 1, 0)


def test_iter_range_with_start_after_stop_is_empty() -> None:
    # The board clamps the bounds; the skip list answers an empty range
    # (the sorted list raises IndexError: see tests/test_sortedlist.py).
    sl = SkipList(random.Random(0))
    sl.build([(i, 0, i) for i in range(10)])
    assert list(sl.iter_range(5, 3)) == []
    assert list(sl.iter_range(5, 3, reverse=True)) == []


def test_backward_links_mirror_forward_links_after_churn() -> None:
    rng = random.Random(3)
    sl = SkipList(random.Random(3), max_level=2)
    for i in range(2000):
        if rng.random() < 0.3 and len(sl):
            p, t, _ = sl.entry(rng.randrange(len(sl)))
            sl.remove(p, t)
        else:
            sl.insert(rng.randrange(50), i, i)
    sl._check()
    assert list(sl) == backward_walk(sl)[::-1]


# ----------------------------------------------------------------------
# The conformance machine, on the skip list, with rules on its nodes
# ----------------------------------------------------------------------


class SkipListMachine(IndexMachine):
    """:class:`IndexMachine` narrowed to the skip list, plus rules that reach
    paths ordinary operations rarely do: the tallest node removed or moved
    (the level must shrink or stay), and reads near a finger left stale by
    inserts, removes, in-place and relinking moves, ``clear`` and ``build``."""

    backends = tuple(name for name in BACKENDS if name.startswith("skiplist"))

    def tallest(self) -> tuple[Any, Any]:
        """The key of the first node on the top level."""
        x = self.index.header[FORWARD[self.index.level - 1]]
        return x[PRIMARY], x[TIE]

    @precondition(lambda self: len(self.ref) > 0)
    @rule()
    def remove_tallest(self) -> None:
        """Remove the first node of the top level: the level may shrink."""
        primary, tie = self.tallest()
        self.index.remove(primary, tie)
        self.ref.remove(primary, tie)

    @precondition(lambda self: len(self.ref) > 0)
    @rule(data=st.data(), tie=st.integers(-12, 12), by_member=st.booleans())
    def move_tallest(self, data: st.DataObject, tie: int, by_member: bool) -> None:
        """Move the first node of the top level."""
        primary, old_tie = self.tallest()
        self._move(primary, old_tie, self.primary(data), self.tie(tie), by_member)

    @rule(delta=st.integers(-40, 40), width=st.integers(0, 6), reverse=st.booleans())
    def read_near_finger(self, delta: int, width: int, reverse: bool) -> None:
        """Read near wherever the finger was left (maybe stale)."""
        if not len(self.ref):
            assert list(self.index.iter_range(0, 0)) == []
            return
        finger = self.index._finger
        at = (finger[1] - 1 if finger is not None else 0) + delta
        self._read_near(at, width, reverse)

    @invariant()
    def backward_from_the_tail(self) -> None:
        assert backward_walk(self.index) == self.ref.rows()[::-1]


TestSkipListMachine = SkipListMachine.TestCase
TestSkipListMachine.settings = settings(
    max_examples=100,
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
