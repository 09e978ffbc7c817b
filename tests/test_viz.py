"""Tests for the skip-list pictures (rankengine.teach.viz) and narrations
(rankengine.teach.narrate).

The text pictures for a fixed seed and fixed scores are compared with golden
files in ``tests/golden/``; after a deliberate change to the drawing, rewrite
them with ``RANKENGINE_UPDATE_GOLDEN=1 python -m pytest tests/test_viz.py`` and
review the diff.  The SVG files of ``docs/img/`` are regenerated from the
commands listed in ``docs/skiplist.md`` and compared byte for byte.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import os
import random
import re
import unicodedata
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankengine import Leaderboard
from rankengine.cli.main import main
from rankengine.index.skiplist import SkipList
from rankengine.teach.narrate import (
    explain,
    narrate_delete,
    narrate_insert,
    narrate_update,
    trace_key,
    trace_rank,
)
from rankengine.teach.viz import (
    HeightScript,
    Shape,
    make_shape,
    random_scores,
    render_svg,
    render_text,
    shape_of,
    teaching_list,
)

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"
UPDATE = os.environ.get("RANKENGINE_UPDATE_GOLDEN") == "1"
SVG = "{http://www.w3.org/2000/svg}"

#: The teaching example of docs/skiplist.md.
SCORES = [30, 10, 50, 20, 60, 5, 40, 15, 25, 45]
SEED = 8


def lecture() -> tuple[SkipList, HeightScript]:
    rng = HeightScript(SEED)
    return teaching_list(SCORES, rng=rng), rng


# ----------------------------------------------------------------------
# Golden pictures
# ----------------------------------------------------------------------


def _levels() -> str:
    sl, _ = lecture()
    return render_text(sl)


def _search() -> str:
    sl, _ = lecture()
    trace = trace_key(sl, 45)
    return render_text(sl, trace) + "\n\n" + explain(trace, sl)


def _rank() -> str:
    sl, _ = lecture()
    trace = trace_rank(sl, 7)
    return render_text(sl, trace, layout="vertical") + "\n\n" + explain(trace, sl)


def _wide() -> str:
    sl = teaching_list(random_scores(30, seed=3), rng=3)
    trace = trace_key(sl, 619)
    return render_text(sl, trace) + "\n\n" + explain(trace, sl)


def _insert() -> str:
    sl, rng = lecture()
    return narrate_insert(sl, 35, height=3, rng=rng).text


def _insert_new_level() -> str:
    sl, rng = lecture()
    return narrate_insert(sl, 1, height=5, rng=rng).text


def _delete() -> str:
    sl, _ = lecture()
    return narrate_delete(sl, 25).text


def _update_in_place() -> str:
    sl, _ = lecture()
    return narrate_update(sl, 40, 42).text


def _update_move() -> str:
    sl, _ = lecture()
    return narrate_update(sl, 20, 55).text


GOLDEN_CASES: dict[str, Callable[[], str]] = {
    "levels": _levels,
    "search": _search,
    "rank_vertical": _rank,
    "wide_vertical": _wide,
    "insert": _insert,
    "insert_new_level": _insert_new_level,
    "delete": _delete,
    "update_in_place": _update_in_place,
    "update_move": _update_move,
}


@pytest.mark.parametrize("name", sorted(GOLDEN_CASES))
def test_text_matches_golden(name: str) -> None:
    actual = GOLDEN_CASES[name]() + "\n"
    path = GOLDEN / f"viz_{name}.txt"
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(actual, encoding="utf-8")
    expected = path.read_text(encoding="utf-8")
    assert actual == expected, f"{path.name} differs; see the module docstring to update"


def test_golden_levels_picture_reads_as_the_classic_one() -> None:
    # A hand-checked reading of the golden picture, so that a regenerated
    # golden file cannot silently turn wrong.
    lines = (GOLDEN / "viz_levels.txt").read_text(encoding="utf-8").splitlines()
    rows = {line[:2]: line for line in lines if re.match(r"L\d ", line)}
    assert list(rows) == ["L3", "L2", "L1", "L0"]
    assert re.findall(r"\d+(?= -)|HEAD|NIL", rows["L3"]) == ["HEAD", "25", "NIL"]
    level0 = "HEAD -1> 5 -1> 10 -1> 15 -1> 20 -1> 25 -1> 30 -1> 40 -1> 45 -1> 50 -1> 60 -0> NIL"
    assert " ".join(rows["L0"].split()[1:]) == level0
    # Every node label sits in the same column on every level it reaches.
    assert rows["L3"].index("25") == rows["L0"].index(" 25 ") + 1


# ----------------------------------------------------------------------
# Shapes
# ----------------------------------------------------------------------


@st.composite
def lists(draw: st.DrawFn) -> tuple[SkipList, HeightScript, list[int]]:
    scores = draw(st.lists(st.integers(-50, 50), max_size=40))
    seed = draw(st.integers(0, 2**16))
    max_level = draw(st.integers(1, 6))
    rng = HeightScript(seed, max_level=max_level)
    return teaching_list(scores, rng=rng, max_level=max_level), rng, scores


@settings(max_examples=60, deadline=None)
@given(lists())
def test_shape_copies_the_real_list(case: tuple[SkipList, HeightScript, list[int]]) -> None:
    sl, _, scores = case
    shape = shape_of(sl)
    assert shape.length == len(scores) == len(sl)
    assert list(shape.entries) == list(sl)
    assert shape.level == sl.level
    # Spans and forward links follow from the heights alone.
    assert shape == make_shape(shape.entries, shape.heights)
    for i in range(shape.level):
        assert sum(link.span for link in shape.links() if link.level == i) == shape.length


@settings(max_examples=60, deadline=None)
@given(lists())
def test_traces_sum_spans_to_the_rank(case: tuple[SkipList, HeightScript, list[int]]) -> None:
    sl, _, _ = case
    shape = shape_of(sl)
    for rank, (primary, tie, _) in enumerate(sl, 1):
        trace = trace_key(shape, primary, tie)
        assert trace.found == rank == trace.rank == sum(s.span for s in trace.steps)
        assert trace_rank(shape, rank).found == rank
        strict = trace_key(shape, primary, tie, strict=True)
        assert strict.found == rank and strict.rank == rank - 1
        assert [lvl for lvl, _, _ in strict.stops] == list(range(shape.level - 1, -1, -1))
        # At most (1 / P) links per level on average; never more than the list.
        assert len(trace.steps) <= shape.length
    absent = trace_key(shape, 1000)
    assert absent.found is None and absent.rank == len(sl)


def test_height_script_forces_heights_up_to_max_level() -> None:
    rng = HeightScript(1, max_level=3).force(3, 1, 2, 3)
    sl = SkipList(rng, max_level=3)
    for i in range(4):
        sl.insert(i, 0, str(i))
    assert [len(spans) for *_, spans in sl.levels()] == [3, 1, 2, 3]
    assert rng.pending == 0
    with pytest.raises(ValueError, match="from 1 to 3"):
        rng.force(4)
    sl.insert(9, 0, "drawn")  # seeded draws resume
    sl._check()


def test_teaching_list_pictures_do_not_depend_on_the_lists_own_draw() -> None:
    a = shape_of(teaching_list(SCORES, rng=SEED))
    assert a == shape_of(teaching_list(SCORES, rng=HeightScript(SEED)))
    # The i-th score's node has the i-th height HeightScript.draw() gives.
    script = HeightScript(SEED)
    drawn = {(score, i): script.draw() for i, score in enumerate(SCORES)}
    assert {a.key(k): a.heights[k] for k in range(1, a.nil)} == drawn
    with pytest.raises(ValueError, match="members"):
        teaching_list([1, 2], members=["a"])
    with pytest.raises(ValueError, match="max_level"):
        teaching_list([1], rng=HeightScript(1, max_level=4), max_level=5)


def test_labels_and_boards() -> None:
    board = Leaderboard(backend=lambda: SkipList(random.Random(8)))
    board.set_many([("ann", 30), ("bob", 10), ("cid", 20)])
    shape = shape_of(board)
    assert shape.labels[1:-1] == ("bob", "cid", "ann")
    assert shape_of(board, "key").labels[1].startswith("10/")
    assert shape_of(shape, lambda e: e[2].upper()).labels[1] == "BOB"
    with pytest.raises(TypeError, match="backend='skiplist'"):
        shape_of(Leaderboard())
    with pytest.raises(ValueError, match="label"):
        shape_of(teaching_list([1]), "nope")  # type: ignore[arg-type]


def test_a_board_is_copied_under_its_lock(monkeypatch: pytest.MonkeyPatch) -> None:
    # shape_of read a board's skip list without the board's lock: a write
    # from another thread in the middle of the copy linked a node the copy
    # had not numbered (KeyError) or changed spans under it.
    board = Leaderboard(backend=lambda: SkipList(random.Random(8)))
    board.set_many([("ann", 30), ("bob", 10), ("cid", 20)])
    lock = board._lock
    held = []
    nodes = SkipList._nodes

    def watched(self: SkipList) -> Any:
        held.append(lock._is_owned())  # type: ignore[attr-defined]
        return nodes(self)

    monkeypatch.setattr(SkipList, "_nodes", watched)
    assert shape_of(board).labels[1:-1] == ("bob", "cid", "ann")
    assert held == [True]


def test_labels_spell_out_what_a_terminal_does_not_print() -> None:
    # A control character in a member (ESC, NUL, DEL) went raw into the text
    # picture: a terminal ran the escape or drew nothing, and the links no
    # longer met their nodes; a lone surrogate (what an undecodable byte of
    # a command-line argument becomes) made printing the picture fail.
    members = ["a\x1b[7mb", "\x00", "c\x7f", "d\ud800", "e\u200bf", "ok"]
    sl = teaching_list(range(6), members=members, rng=2)
    text = render_text(sl, label="member", legend=False)
    text.encode("utf-8")  # no lone surrogate left
    assert all(ch.isprintable() for line in text.splitlines() for ch in line)
    labels = shape_of(sl, "member").labels[1:-1]
    assert labels == ("a\\x1b[7mb", "\\x00", "c\\x7f", "d\\ud800", "e\\u200bf", "ok")
    # the level-0 row is the labels, each framed by its links
    row = text.splitlines()[-2].split()
    assert row[1::2] == ["HEAD", *labels, "NIL"]


def _columns_of(text: str) -> int:
    """How many terminal columns ``text`` takes: two for a wide (East Asian)
    character, none for a combining mark, one for any other."""
    return sum(
        0 if unicodedata.combining(ch) else 2 if unicodedata.east_asian_width(ch) in "WF" else 1
        for ch in text
    )


def _flat(line: str) -> str:
    """``line`` with one character per terminal column: a wide character
    becomes two "w", a combining mark goes."""
    return "".join(ch if _columns_of(ch) == 1 else "w" * _columns_of(ch) for ch in line)


def test_wide_and_combining_labels_keep_the_columns() -> None:
    # Columns were counted in code points: a label of wide characters (CJK,
    # fullwidth letters, most emoji) takes two terminal columns each and a
    # combining accent none, so every link and node after it on its level
    # was drawn off its column, and rows of different levels disagreed.
    members = ["漢字", "bob", "ＡＢＣ", "e\u0301te\u0301", "😀", "zoe", "\u0301ma"]
    rng = HeightScript(0).force(1, 3, 1, 2, 1, 2, 1)
    sl = teaching_list(range(7), members=members, rng=rng)
    # an accent with no letter before it to mark is spelled out
    assert shape_of(sl, "member").labels[-2] == "\\u0301ma"
    trace = trace_key(sl, 5)
    text = render_text(sl, trace, label="member", legend=False, layout="horizontal")
    rows = text.splitlines()
    levels = [row for row in rows if re.match(r"L\d", row)]

    def column(row: str, word: str) -> int:
        return _columns_of(row[: row.index(word)])

    assert len({column(row, "NIL") for row in levels}) == 1, text
    for name in ("bob", "e\u0301te\u0301", "zoe"):  # on more than one level
        assert len({column(row, name) for row in levels if name in row}) == 1, text
    # the end of the search (^) and the rank sit under the middle of their node
    assert column(rows[-2], "^") == column(levels[-1], "zoe") + 1, text
    assert column(rows[-1], " 6") == column(levels[-1], "zoe"), text

    vertical = render_text(sl, label="member", legend=False, layout="vertical")
    # every line: rank, label, then the L0 column at the same place
    lead = [re.match(r" *\d* +\S+ +", line) for line in vertical.splitlines()[1:]]
    assert len({_columns_of(m.group()) for m in lead if m}) == 1, vertical

    lines = explain(trace, shape_of(sl, "member")).splitlines()[2:-1]
    assert len({column(line, "next is") for line in lines if "next is" in line}) == 1

    story = narrate_insert(sl, 2.5, member="新しい", label="member", height=3, rng=rng)
    for table in _tables(story.text):
        _assert_columns_line_up(table)
    svg = ET.fromstring(render_svg(sl, label="member"))
    boxes = {g.get("data-label"): g.find(f"{SVG}rect") for g in _classes(svg, "node")}
    assert int(boxes["漢字"].get("width", "0")) > int(boxes["bob"].get("width", "0"))  # type: ignore[union-attr]


def test_empty_list_draws() -> None:
    empty = teaching_list([])
    assert render_text(empty, legend=False).splitlines()[0].split() == ["L0", "HEAD", "-0>", "NIL"]
    assert trace_key(empty, 5).found is None
    assert ET.fromstring(render_svg(empty)).tag == f"{SVG}svg"
    with pytest.raises(ValueError, match="rank"):
        trace_rank(empty, 1)


def test_auto_layout_switches_to_vertical_when_too_wide() -> None:
    sl = teaching_list(random_scores(40, seed=1), rng=1)
    text = render_text(sl, legend=False)
    assert text.splitlines()[0].split()[:2] == ["rank", "L0"]
    assert max(len(line) for line in text.splitlines()) <= 80
    wide = render_text(sl, legend=False, layout="horizontal")
    assert max(len(line) for line in wide.splitlines()) > 120
    with pytest.raises(ValueError, match="layout"):
        render_text(sl, layout="diagonal")  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["no", 1, None], ids=["str", "int", "none"])
def test_flags_of_the_pictures_must_be_bools(value: Any) -> None:
    """``legend="no"`` drew the legend, ``ranks=None`` left the ranks out and
    ``strict=1`` drew an insert's walk: a flag that is not a bool is refused,
    as a board refuses ``with_meta="no"``."""
    sl = teaching_list([10, 20, 5], rng=1)
    name = type(value).__name__
    for what in ("legend", "ranks"):
        with pytest.raises(TypeError, match=rf"^{what} must be a bool, not {name}$"):
            render_text(sl, **{what: value})
    with pytest.raises(TypeError, match=rf"^strict must be a bool, not {name}$"):
        trace_key(sl, 20, strict=value)


# ----------------------------------------------------------------------
# SVG
# ----------------------------------------------------------------------


def _classes(root: ET.Element, name: str) -> list[ET.Element]:
    return [e for e in root.iter() if name in (e.get("class") or "").split()]


@pytest.mark.parametrize("seed", [0, 8, 21])
def test_svg_has_one_element_per_node_and_link(seed: int) -> None:
    sl = teaching_list(random_scores(15, seed=seed), rng=seed)
    shape = shape_of(sl)
    primary = sorted(e[0] for e in sl)[9]
    trace = trace_key(shape, primary)
    root = ET.fromstring(render_svg(shape, trace))
    assert root.tag == f"{SVG}svg"
    nodes = _classes(root, "node")
    assert len(nodes) == shape.length + 1  # the header and every entry
    assert len(_classes(root, "nil")) == 1
    links = _classes(root, "link")
    assert len(links) == sum(shape.heights) == len(list(shape.links()))
    # Each node group has one box per level it reaches.
    for group in nodes:
        boxes = group.findall(f"{SVG}rect")
        assert len(boxes) == int(group.get("data-height", "0"))
    # The spans written on the links are the real spans.
    for group, link in zip(links, shape.links(), strict=True):
        assert group.get("data-span") == str(link.span)
        assert group.findtext(f"{SVG}text") == str(link.span)
    assert len(_classes(root, "followed")) == len(trace.steps)
    assert len(_classes(root, "drop")) == len(trace.drops())
    assert len(_classes(root, "end")) == 1


def test_svg_escapes_labels_and_narration_has_two_panels() -> None:
    sl = teaching_list([1, 2, 3], members=["<a&b>", "'q'", '"d"'], rng=2)
    root = ET.fromstring(render_svg(sl, label="member"))
    labels = {g.get("data-label") for g in _classes(root, "node")}
    assert labels >= {"<a&b>", "'q'", '"d"'}
    story = narrate_insert(sl, 5)
    root = ET.fromstring(story.svg())
    assert len(_classes(root, "title")) == 2
    assert len(_classes(root, "changed")) == len(story.marked)
    # characters XML cannot hold at all (and control characters, as in the
    # text pictures) are spelled out, not written raw
    odd = teaching_list([1, 2], members=["a\x01b", "c\ud800\x7fd"], rng=2)
    root = ET.fromstring(render_svg(odd, label="member"))
    labels = {g.get("data-label") for g in _classes(root, "node")}
    assert labels >= {"a\\x01b", "c\\ud800\\x7fd"}


def _doc_commands() -> list[list[str]]:
    text = (ROOT / "docs" / "skiplist.md").read_text(encoding="utf-8")
    block = re.search(r"```sh\n(.*?)```", text, re.S)
    assert block is not None, "docs/skiplist.md lists the commands that draw docs/img/"
    return [line.split()[3:] for line in block.group(1).splitlines() if line.strip()]


def test_doc_svgs_are_up_to_date(tmp_path: Path) -> None:
    commands = _doc_commands()
    assert commands, "no commands found"
    for args in commands:
        target = args[args.index("--svg") + 1]
        assert target.startswith("docs/img/") and target.endswith(".svg")
        out = tmp_path / Path(target).name
        args[args.index("--svg") + 1] = str(out)
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(args) == 0
        if UPDATE:
            (ROOT / target).write_bytes(out.read_bytes())
        assert (ROOT / target).read_bytes() == out.read_bytes(), f"{target} is stale"
        ET.parse(out)


# ----------------------------------------------------------------------
# Narrations
# ----------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(lists(), st.data())
def test_narrations_agree_with_the_real_list(
    case: tuple[SkipList, HeightScript, list[int]], data: st.DataObject
) -> None:
    sl, rng, _ = case
    for _ in range(6):
        present = [e[0] for e in sl]
        action = data.draw(
            st.sampled_from(["insert", "delete", "update"] if present else ["insert"])
        )
        if action == "insert":
            score = data.draw(st.integers(-60, 60))
            height = data.draw(st.none() | st.integers(1, sl.max_level))
            story = narrate_insert(sl, score, height=height, rng=rng)
            assert story.after.length == story.before.length + 1
        elif action == "delete":
            score = data.draw(st.sampled_from(present))
            story = narrate_delete(sl, score)
            assert story.after.length == story.before.length - 1
        else:
            score = data.draw(st.sampled_from(present))
            story = narrate_update(sl, score, data.draw(st.integers(-60, 60)))
            assert story.in_place == (story.changes == ())
        sl._check()
        assert story.after == shape_of(sl)
        for change in story.changes:
            assert change.old is not None or change.new is not None


def test_narration_pictures_fit_in_the_width() -> None:
    # A narration indents its pictures by four columns, but chose their
    # layout by the width left before indenting: a horizontal picture that
    # just fitted in ``width`` came out four columns wider than asked.
    sl, _ = lecture()
    picture = render_text(sl, legend=False, ranks=False).splitlines()
    width = max(len(line) for line in picture)
    for story in (narrate_delete(sl, 25, width=width), narrate_update(sl, 40, 48, width=width)):
        rows = [line for line in story.text.splitlines() if re.match(r"    L\d+ +HEAD ", line)]
        assert rows and max(len(line) for line in rows) <= width
    sl, _ = lecture()
    for story in (
        narrate_delete(sl, 25, width=width + 4),
        narrate_update(sl, 40, 48, width=width + 4),
    ):
        assert "\n    L0    HEAD " in story.text  # still horizontal where it fits


def test_insert_narration_tells_update_rank_and_spans() -> None:
    sl, rng = lecture()
    story = narrate_insert(sl, 35, height=3, rng=rng)
    assert [(c.level, c.node, c.old, c.new) for c in story.changes] == [
        (0, "30", 1, 1),
        (0, "35", None, 1),
        (1, "30", 3, 1),
        (1, "35", None, 3),
        (2, "25", 4, 2),
        (2, "35", None, 3),
        (3, "25", 5, 6),
    ]
    assert story.trace.update() == [6, 6, 5, 5]  # node numbers of 30, 30, 25, 25
    assert "rank[0] + 1 = 7" in story.text
    assert "Checked" in story.text


def test_update_paths() -> None:
    sl, _ = lecture()
    fast = narrate_update(sl, 40, 42)
    assert fast.in_place and fast.after.spans == fast.before.spans
    assert "zslUpdateScore" in fast.text
    slow = narrate_update(sl, 20, 55)
    assert not slow.in_place
    assert [e[0] for e in sl] == [5, 10, 15, 25, 30, 42, 45, 50, 55, 60]
    with pytest.raises(ValueError, match="no entry with score 99"):
        narrate_update(sl, 99, 1)
    with pytest.raises(ValueError, match="already present"):
        narrate_update(sl, 42, 45, new_tie=9)  # (45, 9) is the key of 45


def _links_by_member(shape: Shape) -> dict[tuple[int, Any], tuple[Any, int]]:
    """Each link as ``(level, source member) -> (destination member, span)``:
    the links of two shapes compared node by node, whatever their ranks."""
    member = ["HEAD", *(m for _, _, m in shape.entries), "NIL"]
    return {(ln.level, member[ln.src]): (member[ln.dst], ln.span) for ln in shape.links()}


@settings(max_examples=60, deadline=None)
@given(lists(), st.data())
def test_narrations_mark_exactly_the_links_that_changed(
    case: tuple[SkipList, HeightScript, list[int]], data: st.DataObject
) -> None:
    sl, rng, _ = case
    present = [e[0] for e in sl]
    action = data.draw(st.sampled_from(["insert", "delete", "update"] if present else ["insert"]))
    if action == "insert":
        story = narrate_insert(sl, data.draw(st.integers(-60, 60)), rng=rng)
    elif action == "delete":
        story = narrate_delete(sl, data.draw(st.sampled_from(present)))
    else:
        score = data.draw(st.sampled_from(present))
        story = narrate_update(sl, score, data.draw(st.integers(-60, 60)))
    old = _links_by_member(story.before)
    member = ["HEAD", *(m for _, _, m in story.after.entries)]
    changed = {
        (level, member.index(src))
        for (level, src), link in _links_by_member(story.after).items()
        if old.get((level, src)) != link
    }
    assert story.marked == changed


def test_score_change_marks_the_links_the_unlink_changed() -> None:
    sl, _ = lecture()
    story = narrate_update(sl, 20, 55)  # the links HEAD -> 25 on L2 and L3 passed over 20
    for level in (2, 3):
        assert story.after.link(level, 0).span == story.before.link(level, 0).span - 1
        assert (level, 0) in story.marked
    assert "HEAD ~~~~~~~~~~~4~~~~~~~~~~> 25" in story.text


def test_narrations_compare_keys_not_equal_labels() -> None:
    # With equal scores the labels are equal too: a comparison written with
    # them ("HEAD < 2 < 2", "the next key is < 2" before crossing to a 2) is
    # false.  The narrations write such keys as score/tie, as explain() does.
    sl = teaching_list([1, 2], rng=7)
    story = narrate_update(sl, 1, 2)  # (1, 0) -> (2, 0), before (2, 1): in place
    assert story.in_place
    assert "HEAD < 2/0 < 2/1, so the node still sorts" in story.text
    sl = teaching_list([1, 2], rng=7)
    story = narrate_insert(sl, 2)  # (2, 2), after (2, 1)
    assert "while the next key is < 2/2." in story.text
    sl = teaching_list([5, 5, 5], rng=7)
    story = narrate_delete(sl, 5)
    assert "while the next key is < 5/0." in story.text
    sl = teaching_list([10, 20, 30], rng=7)  # distinct scores read as before
    assert "while the next key is < 20." in narrate_delete(sl, 20).text


def test_explain_writes_a_key_as_the_target_is_written() -> None:
    # explain() wrote a node's key as its bare score unless another node had
    # that score, even when the target was written score/tie: "next is
    # 5 <= 5/9" compared a score with a key, and read as false.
    sl = SkipList(HeightScript(1).force(1, 1, 1))
    for primary, tie, member in [(1, 0, "a"), (5, 7, "b"), (9, 0, "c")]:
        sl.insert(primary, tie, member)
    text = explain(trace_key(sl, 5, 9), sl)
    assert "next is 5/7 <= 5/9: cross" in text
    assert "next is 5/7 > 5/3: end of the walk" in explain(trace_key(sl, 5, 3), sl)
    assert "next is 5/7 < 5/9: cross" in explain(trace_key(sl, 5, 9, strict=True), sl)
    # a target of the node's own key, or of another score, reads as before
    assert "next is 5 <= 5: cross" in explain(trace_key(sl, 5), sl)
    assert "next is 5 <= 6: cross" in explain(trace_key(sl, 6), sl)


def test_explain_numbers_a_long_walk_in_one_column() -> None:
    # The step numbers were padded to two digits: from step 100 on, the
    # rest of each line moved one column right.
    sl = teaching_list(range(150), rng=1, max_level=1)
    steps = [line for line in explain(trace_key(sl, 149), sl).splitlines() if ". L0 " in line]
    assert len(steps) == 150
    assert {line.index(". L0 ") for line in steps} == {3}


def test_narration_errors_leave_the_list_alone() -> None:
    sl, rng = lecture()
    before = shape_of(sl)
    with pytest.raises(ValueError, match="no entry"):
        narrate_delete(sl, 7)
    with pytest.raises(ValueError, match="already present"):
        narrate_insert(sl, 30, tie=0)
    with pytest.raises(ValueError, match="HeightScript"):
        narrate_insert(sl, 31, height=2)
    with pytest.raises(ValueError, match="from 1 to"):
        narrate_insert(sl, 31, height=99, rng=rng)
    assert shape_of(sl) == before
    assert isinstance(before, Shape)


# ----------------------------------------------------------------------
# The finger search of a score increase, checked against the real code
# ----------------------------------------------------------------------


class _Recorded(list):  # type: ignore[type-arg]
    """A skip-list node that logs the links a walk reads while ``log`` is set:
    ``("stand", level, node)`` when it reads a forward link (the walk stands
    on ``node`` at ``level``) and ``("cross", level, src, dst)`` when it reads
    a span (the walk crosses that link: a search reads a span only to add it)."""

    log: list[tuple[Any, ...]] | None = None

    def __getitem__(self, i: Any) -> Any:
        log = _Recorded.log
        if log is not None and isinstance(i, int) and i >= 4:
            level = (i - 4) >> 1
            if i % 2 == 0:
                log.append(("stand", level, _name(self)))
            else:
                log.append(("cross", level, _name(self), _name(list.__getitem__(self, i - 1))))
        return list.__getitem__(self, i)


def _name(node: Any) -> str:
    """A node as the narration's labels name it, member first: HEAD for the header."""
    return (
        "NIL"
        if node is None
        else "HEAD"
        if list.__getitem__(node, 2) is None
        else str(list.__getitem__(node, 2))
    )


def _record_nodes(sl: SkipList, node: type[list[Any]] = _Recorded) -> None:
    """Replace every node of ``sl`` by a copy of type ``node`` (a
    :class:`_Recorded` one, or back to a plain list), links and all."""
    nodes = [sl.header]
    x = list.__getitem__(sl.header, 4)
    while x is not None:
        nodes.append(x)
        x = list.__getitem__(x, 4)
    copies = {id(x): node(x) for x in nodes}
    for x in copies.values():
        for slot in [3, *range(4, len(x), 2)]:
            ref = list.__getitem__(x, slot)
            if ref is not None:
                x[slot] = copies[id(ref)]
    sl.header = copies[id(nodes[0])]
    sl.tail = None if sl.tail is None else copies[id(sl.tail)]
    sl._update = [sl.header] * sl.max_level
    sl._new_update = [sl.header] * sl.max_level
    sl._finger = None


def _narrate_recorded(
    sl: SkipList, old: int, new: int, monkeypatch: pytest.MonkeyPatch
) -> tuple[Any, list[tuple[Any, ...]]]:
    """Narrate a score change on ``sl`` while recording what the real
    ``SkipList._search_ahead`` (the finger search of ``_move_ahead``) reads."""
    _record_nodes(sl)
    real = SkipList._search_ahead
    seen: list[tuple[Any, ...]] = []

    def recorded(self: SkipList, p: Any, t: Any) -> None:
        _Recorded.log = seen
        try:
            real(self, p, t)
        finally:
            _Recorded.log = None

    monkeypatch.setattr(SkipList, "_search_ahead", recorded)
    story = narrate_update(sl, old, new, label="member")
    _record_nodes(sl, list)  # plain nodes again, as _check expects
    return story, seen


def _narrated_walk(story: Any) -> list[tuple[Any, ...]]:
    """The finger search as the narration tells it, in the recorder's terms:
    per level, stand on the start node, then cross each link and stand on
    the node it reaches."""
    trace = story.relink
    labels = story.before.labels
    walk: list[tuple[Any, ...]] = []
    for level, start, _ in trace.starts:
        walk.append(("stand", level, labels[start]))
        for s in trace.steps:
            if s.level == level:
                walk.append(("cross", level, labels[s.src], labels[s.dst]))
                walk.append(("stand", level, labels[s.dst]))
    return walk


def test_increase_narrates_the_finger_search_within_reach(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 15 -> 22: update[1] = 10 is ahead of HEAD, where L2 stopped, so the
    # walk on L1 starts there; L3 and L2 cross no link.
    sl, _ = lecture()
    story, seen = _narrate_recorded(sl, 15, 22, monkeypatch)
    assert seen, "the move did not run the finger search"
    assert _narrated_walk(story) == seen
    labels = story.before.labels
    assert [(lvl, labels[node]) for lvl, node in story.relink.restarts()] == [
        (3, "HEAD"),
        (1, "s1"),  # 10
    ]
    assert {s.level for s in story.relink.steps} == {1}
    assert "start at update[1], rank 2: ahead of HEAD (rank 0), where L2 stopped" in story.text
    sl._check()


def test_finger_search_pictures_mark_where_levels_start() -> None:
    sl, _ = lecture()
    story = narrate_update(sl, 15, 22)
    finger = story.relink
    assert finger is not None and finger.restarts() == [(3, 0), (1, 2)]  # HEAD, 10
    lines = render_text(story.before, finger, layout="horizontal").splitlines()
    # '+' over the top level under HEAD, and under 10 above L1 (where L2 dropped: v).
    assert lines[0].strip() == "+" and lines[1].startswith("L3")
    above_l1 = lines[lines.index(next(ln for ln in lines if ln.startswith("L1"))) - 1]
    assert sorted(above_l1.split()) == ["+", "v"]
    assert "+     it started the level below from an old update[i]" in lines
    vertical = render_text(story.before, finger, layout="vertical")
    assert "<+5" in vertical and " +1" in vertical  # HEAD on L3, 10 on L1
    root = ET.fromstring(story.svg())
    assert len(root.findall(f".//{SVG}text[@class='title']")) == 3
    assert len(root.findall(f".//{SVG}circle[@class='start']")) == 2
    down = narrate_update(sl, 45, 12)  # a decrease searches from the header
    assert down.relink is not None and down.relink.starts == () and "from the header" in down.text
    assert len(ET.fromstring(down.svg()).findall(f".//{SVG}text[@class='title']")) == 2


def test_increase_narrates_the_finger_search_from_the_top(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 20 -> 55: update[3] = HEAD, so the walk for the far new place crosses
    # links from the top level down, as a search from the header would.
    sl, _ = lecture()
    story, seen = _narrate_recorded(sl, 20, 55, monkeypatch)
    assert _narrated_walk(story) == seen
    assert max(s.level for s in story.relink.steps) == story.before.level - 1
    sl._check()


def test_increase_narration_steps_walk_over_the_node_itself(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 30 -> 42: the node is still linked during the finger search; on L1 the
    # walk crosses onto it and stops there (it stays after update[1]).
    sl, _ = lecture()
    story, seen = _narrate_recorded(sl, 30, 42, monkeypatch)
    assert _narrated_walk(story) == seen
    labels = story.before.labels
    assert ("cross", 1, "s8", "s0") in seen  # 25 -> 30 on L1
    assert [labels[n] for n in story.relink.update()][:2] == ["s6", "s0"]  # 40, 30
    sl._check()


@settings(max_examples=100, deadline=None)
@given(lists(), st.data())
def test_every_increase_narrates_what_move_visits(
    case: tuple[SkipList, HeightScript, list[int]], data: st.DataObject
) -> None:
    sl, _, _ = case
    present = sorted({e[0] for e in sl})
    if not present:
        return
    old = data.draw(st.sampled_from(present))
    new = data.draw(st.integers(old + 1, 60))
    with pytest.MonkeyPatch.context() as monkeypatch:
        story, seen = _narrate_recorded(sl, old, new, monkeypatch)
    if story.in_place:
        assert story.relink is None and not seen
    else:
        assert _narrated_walk(story) == seen
    sl._check()


# ----------------------------------------------------------------------
# The show and trace commands
# ----------------------------------------------------------------------


def _cli(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(args)
        except SystemExit as exc:  # argparse's usage errors
            code = exc.code if isinstance(exc.code, int) else 1
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    ("operation", "summary"),
    [
        (["--insert", "35", "--height", "5"], "of 10 entries on 4 levels"),
        (["--delete", "25"], "of 10 entries on 4 levels"),  # 25 is the only node on L3
        (["--update", "20", "55"], "of 10 entries on 4 levels"),
    ],
)
def test_trace_summary_describes_the_list_the_narration_starts_from(
    operation: list[str], summary: str
) -> None:
    code, out, err = _cli(["trace", *map(str, SCORES), "--seed", str(SEED), *operation])
    assert code == 0, err
    assert " ".join(out.split("\n\n")[0].split()).startswith(f"A skip list {summary} ")


@pytest.mark.parametrize(
    ("args", "summary"),
    [
        (["show", "5"], "A skip list of 1 entry on 1 level (P"),
        (["trace", "5", "--find", "5"], "A skip list of 1 entry on 1 level (P"),
        (["trace", "5", "--insert", "6", "--height", "1"], "into a skip list of 1 entry."),
        (["trace", "5", "--delete", "5"], "from a skip list of 1 entry."),
        (["trace", "5", "--find", "5"], "after crossing 1 link (of 1 node)."),
        (["show", "5", "6"], "of 2 entries on 1 level (P"),
    ],
)
def test_counts_of_one_are_singular(args: list[str], summary: str) -> None:
    code, out, err = _cli([*args, "--seed", "1", "--max-level", "1"])
    assert code == 0, err
    assert summary in " ".join(out.split())


def test_svg_title_of_one_entry_is_singular() -> None:
    title = ET.fromstring(render_svg(teaching_list([5], rng=1, max_level=1))).find(
        "{http://www.w3.org/2000/svg}title"
    )
    assert title is not None and title.text == "A skip list of 1 entry on 1 level"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["show", "1", "--random", "3"], "give scores or --random N, not both"),
        (["trace", "1", "--random", "3", "--find", "1"], "give scores or --random N, not both"),
        (["show", "a=1", "a=2"], "every NAME must be different"),
        # the inserted entry's name too (it labels a node with --label member)
        (["trace", "a=1", "b=2", "--insert", "a=3"], "every NAME must be different"),
        (["trace", "b=1", "s2=2", "--insert", "3"], "every NAME must be different"),
    ],
)
def test_conflicting_arguments_are_usage_errors(args: list[str], message: str) -> None:
    # Like every other argument the parser refuses (--height without
    # --insert, --find with --delete): exit status 2 and the usage line.
    code, out, err = _cli(args)
    assert (code, out) == (2, "")
    assert err.startswith("usage: rankengine ") and message in err


def test_increase_of_the_only_top_node_keeps_its_level() -> None:
    # 25 is the only node on L3.  SkipList._move_ahead unlinks and relinks it
    # level by level and never drops L3 (a delete would): the narration must
    # not say it does, nor that the relink adds a new level.
    sl, _ = lecture()
    assert sl.level == 4
    story = narrate_update(sl, 25, 48)
    assert story.relink is not None and story.relink.starts  # the finger search ran
    assert sl.level == 4
    assert "is dropped" not in story.text and "(new level:" not in story.text
    assert "L3 now holds no node; SkipList._move_ahead keeps the level" in story.text
    assert "5 + 5 - 1 = 9" in story.text and "(HEAD -> NIL, kept from step 3)" in story.text
    # A decrease runs a real unlink, then a relink: there the level goes and comes back.
    sl, _ = lecture()
    down = narrate_update(sl, 25, 3)
    assert "dropped (level 4 -> 3)" in down.text and "(new level:" in down.text


# ----------------------------------------------------------------------
# The search of an insert or a delete, checked against the real code
# ----------------------------------------------------------------------


def _header_walk(trace: Any, labels: Any) -> list[tuple[Any, ...]]:
    """A search from the header as the narration tells it, in the
    recorder's terms (see :func:`_narrated_walk`): each level starts where
    the level above stopped, the top one at HEAD."""
    walk: list[tuple[Any, ...]] = []
    start = 0
    for level, stop, _ in trace.stops:
        walk.append(("stand", level, labels[start]))
        for s in trace.steps:
            if s.level == level:
                walk.append(("cross", level, labels[s.src], labels[s.dst]))
                walk.append(("stand", level, labels[s.dst]))
        start = stop
    return walk


@settings(max_examples=60, deadline=None)
@given(lists(), st.data())
def test_insert_and_delete_narrate_the_search_the_code_runs(
    case: tuple[SkipList, HeightScript, list[int]], data: st.DataObject
) -> None:
    # The story's search (every link crossed, where it drops, update[i] and
    # rank[i]) is the walk SkipList.insert / remove really makes: record the
    # forward links and spans the real search reads, and the update[] and
    # rank[] it leaves, and compare.
    sl, rng, _ = case
    present = [e[0] for e in sl]
    delete = bool(present) and data.draw(st.booleans())
    method = "_search_update" if delete else "_search_update_rank"
    real = getattr(SkipList, method)
    seen: list[tuple[Any, ...]] = []
    left: dict[str, Any] = {}

    def recorded(self: SkipList, p: Any, t: Any) -> Any:
        _Recorded.log = seen
        try:
            return real(self, p, t)
        finally:
            _Recorded.log = None
            top = self.level
            left["update"] = [_name(self._update[i]) for i in range(top)]
            left["rank"] = list(self._rank[:top])

    _record_nodes(sl)
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(SkipList, method, recorded)
        if delete:
            story = narrate_delete(sl, data.draw(st.sampled_from(present)), label="member")
        else:
            story = narrate_insert(sl, data.draw(st.integers(-60, 60)), rng=rng, label="member")
    _record_nodes(sl, list)
    sl._check()
    labels = story.before.labels
    told = _header_walk(story.trace, labels)
    if delete:  # remove() needs no ranks: its search reads no span
        told = [event for event in told if event[0] == "stand"]
    assert seen and told == seen
    assert left["update"] == [labels[node] for node in story.trace.update()]
    if not delete:
        assert left["rank"] == [rank for _, _, rank in reversed(story.trace.stops)]


def _tables(text: str) -> list[list[str]]:
    """The tables of a narration: a header line naming ``update[i]``, then
    its rows (``L0 ...``), as lines."""
    lines = text.splitlines()
    tables = []
    for k, line in enumerate(lines):
        if line.lstrip().startswith("level  update[i]"):
            rows = itertools.takewhile(lambda s: re.match(r"\s*L\d+  ", s), lines[k + 1 :])
            tables.append([line, *rows])
    return tables


def _assert_columns_line_up(table: list[str]) -> None:
    """Every row has a cell under each column title of the header, cut off
    from the cell before it by at least two spaces (counted in terminal
    columns: see _columns_of)."""
    table = [_flat(line) for line in table]
    header = table[0]
    starts = [m.start() for m in re.finditer(r"(?<=  )\S", header)]
    assert starts, header
    for row in table[1:]:
        for at in starts:
            assert row[at - 2 : at] == "  " and row[at] != " ", (
                f"column {at} of\n{header}\n{row}\ndoes not line up"
            )


def test_narration_tables_line_up_with_long_labels_and_wide_spans() -> None:
    # The tables had fixed widths (10 for a label, 18 for a formula): a
    # longer label or a three-digit span ran into the next column, and
    # "244 -> 123 + 1 = 124" followed by "244 - 123 = 121" read as
    # "... = 124244 - 123 = 121".
    n = 150
    members = [f"member_number_{i}" for i in range(n)]
    rng = HeightScript(4)
    sl = teaching_list(range(n), rng=rng, members=members)
    story = narrate_insert(sl, n, member="the_new_member", height=sl.level + 1, rng=rng)
    stories = [story, narrate_update(sl, n, -1), narrate_update(sl, -1, n)]
    stories += [narrate_delete(sl, n)]
    for label in ("score", "member"):
        sl = teaching_list(range(n), rng=4, members=members)
        stories.append(narrate_insert(sl, n, label=label))
    for story in stories:
        tables = _tables(story.text)
        assert len(tables) >= 2
        for table in tables:
            _assert_columns_line_up(table)
    assert re.search(r"150 -> 150 \+ 1 = 151  +150 - 150 = 0", stories[0].text)
