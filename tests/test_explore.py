"""The explorer's data, command and notebook pictures, without a browser
(tests/test_explore_browser.py drives the page)."""

from __future__ import annotations

import json
import random
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankengine import Leaderboard
from rankengine.cli.main import main
from rankengine.index.skiplist import SkipList
from rankengine.teach.explore import MAX_SIZE, STEP_KINDS, Explorer, histogram
from rankengine.teach.explore_data import static_data
from rankengine.teach.explore_page import page_html
from rankengine.teach.notebook import MAX_DRAWN, html_of
from rankengine.teach.viz import shape_of, teaching_list


def _replay(record: dict[str, Any]) -> None:
    """The frames of a record are consistent with its own shapes and traces."""
    sl = record["skiplist"]
    for frame in sl["frames"]:
        assert frame["kind"] in STEP_KINDS
        shape = sl[frame["shape"]]
        nil = len(shape["labels"]) - 1
        for spans in shape["spans"][:1]:
            assert len(spans) == shape["heights"][0]
        if "trace" in frame:
            trace = sl["traces"][frame["trace"]]
            crossed = trace["steps"][: frame.get("steps", 0)]
            for level, src, dst, span, _ in crossed:
                assert shape["forward"][src][level] == dst and shape["spans"][src][level] == span
            if frame["kind"] == "cross":
                assert frame["rank"] == crossed[-1][4]
        for level, node in frame.get("marked", []):
            assert 0 <= node < nil and level < shape["heights"][node]


def test_every_operation_on_random_boards_matches_both_structures() -> None:
    rng = random.Random(5)
    for seed in range(6):
        ex = Explorer.random(12, seed=seed, p=rng.choice([0.5, 0.25, 0.125]), max_level=4)
        for _ in range(12):
            entries = list(ex.sl)
            kind = rng.choice(["insert", "delete", "search", "update", "rank", "at"])
            p, _, m = rng.choice(entries)
            if kind == "insert":
                op: dict[str, Any] = {"op": "insert", "score": rng.randrange(1, 200)}
            elif kind == "update":
                op = {"op": "update", "member": m, "new": rng.randrange(1, 200)}
            elif kind == "at":
                op = {"op": "at", "rank": rng.randrange(1, len(entries) + 1)}
            elif kind == "rank":
                op = {"op": "rank", "member": m}
            else:
                op = {"op": kind, "score": p}
            record = ex.run(op)  # runs _check(): both structures agree
            _replay(record)
            json.dumps(record)  # plain JSON
            assert record["board"]["shape"] == record["skiplist"]["after"]
            flat = [p for block in record["sorted"]["after"]["scores"] for p in block]
            assert flat == [e[0] for e in ex.sl]
            if kind in ("search", "rank"):
                assert record["cost"]["sorted"]["comparisons"] > 0
                rank = record["skiplist"]["traces"]["search"]["rank"]
                assert record["sorted"]["result"] == rank
                assert record["cost"]["skiplist"]["result"] == rank
            if kind == "at":
                assert record["sorted"]["result"] == record["cost"]["skiplist"]["result"]
            if len(ex.sl) < 4:
                ex.run({"op": "insert", "score": rng.randrange(1, 200)})


def test_bad_operations_change_nothing() -> None:
    ex = Explorer([30, 10, 20], seed=1)
    before = shape_of(ex.sl)
    for op in (
        {"op": "jump"},
        {"op": "delete", "score": 99},
        {"op": "insert", "score": "x"},
        {"op": "insert", "score": 5, "height": 0},
        {"op": "insert", "score": 5, "member": "s0"},
        {"op": "update", "score": 10, "new": float("nan")},
        {"op": "at", "rank": 9},
        {"op": "rank", "member": "nobody"},
    ):
        with pytest.raises(ValueError):
            ex.run(op)
        assert shape_of(ex.sl) == before
        ex._check()


def test_a_full_board_refuses_an_insert() -> None:
    ex = Explorer.random(MAX_SIZE, seed=1)
    with pytest.raises(ValueError, match="full"):
        ex.run({"op": "insert", "score": 1})
    assert len(ex.sl) == MAX_SIZE


def test_histogram_expectation() -> None:
    h = histogram([1] * 6 + [2] * 2, 0.25, 2)
    assert h["counts"] == [6, 2]
    # at max_level the draw stops: the top bar expects N * p^k, not * (1 - p)
    assert h["expected"] == [6.0, 2.0]


def test_other_p_boards_are_drawn_with_that_p() -> None:
    data = static_data(Explorer.random(40, seed=2))
    ps = {b["board"]["p"] for b in data["boards"]}
    assert ps == {0.5, 0.25, 0.125}
    tall = {b["board"]["p"]: max(b["board"]["shape"]["heights"]) for b in data["boards"]}
    assert tall[0.5] >= tall[0.125]


def test_cli_writes_one_self_contained_page(tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "page.html"
    code = main(["explore", "30", "10", "50", "--seed", "8", "--do", "insert 20@2", "-o", str(out)])
    assert code == 0
    html = out.read_text(encoding="utf-8")
    assert "<script src" not in html and "<link" not in html and "@import" not in html
    assert 'id="data"' in html and len(html.encode()) < 300_000
    assert "written to" in capsys.readouterr().out
    data = json.loads(html.split('id="data">')[1].split("</script>")[0].replace("<\\/", "</"))
    assert data["boards"][0]["ops"][0]["title"] == "Insert 20"
    changes = data["boards"][0]["ops"][0]["skiplist"]["changes"]
    assert {"level": 0, "node": "20", "old": None, "new": 1, "why": "the rest of the old link"} in (
        changes
    )
    raw = tmp_path / "page.json"
    assert (
        main(["explore", "30", "10", "50", "--seed", "8", "-o", str(out), "--json", str(raw)]) == 0
    )
    assert json.loads(raw.read_text(encoding="utf-8"))["boards"][0]["board"]["seed"] == 8


@pytest.mark.parametrize(
    "args", [["--p", "1.5"], ["--do", "jump 3"], ["--max-level", "0"], ["1", "--random", "3"]]
)
def test_cli_refuses_bad_arguments(args: list[str], tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["explore", *args, "-o", str(tmp_path / "x.html")])
    assert exc.value.code == 2
    assert not (tmp_path / "x.html").exists()


# ----------------------------------------------------------------------
# Notebook pictures
# ----------------------------------------------------------------------


def test_a_small_skip_list_draws_itself() -> None:
    sl = teaching_list([30, 10, 20], rng=1)
    root = ET.fromstring(sl._repr_html_())
    labels = [g.get("data-label") for g in root.iter("{http://www.w3.org/2000/svg}g")]
    assert [label for label in labels if label] == ["10", "20", "30"]


def test_a_big_skip_list_prints_a_summary() -> None:
    sl = SkipList(random.Random(1))
    sl.build([(k, 0, f"m{k}") for k in range(MAX_DRAWN + 1)])
    html = sl._repr_html_()
    assert "<svg" not in html and f"{MAX_DRAWN + 1} entries" in html
    small = SkipList(random.Random(1))
    small.build([(k, 0, f"m{k}") for k in range(MAX_DRAWN)])
    assert small._repr_html_().startswith("<svg")


def test_boards_draw_themselves() -> None:
    board = Leaderboard(backend=lambda: SkipList(random.Random(1)))
    board.set_many({"ann": 120, "bob": 80, "cid": 95})
    root = ET.fromstring(board._repr_html_())
    labels = [g.get("data-label") for g in root.iter("{http://www.w3.org/2000/svg}g")]
    assert [label for label in labels if label] == ["bob", "cid", "ann"]
    fast = Leaderboard(backend="sortedlist")
    fast.set_many({f"p{k}": k for k in range(15)})
    html = html_of(fast)
    assert "<svg" not in html and "<td>p14</td>" in html and "5 more" in html
    assert html == fast._repr_html_()


def test_named_and_tiny_boards() -> None:
    ex = Explorer([120, 80, 95, 95], members=["ann", "bob", "cid", "dee"], seed=2)
    data = static_data(ex)
    titles = [r["title"] for r in data["boards"][0]["ops"]]
    assert "Insert s4 (" in " ".join(titles)
    changes = [t for t in titles if t.startswith("Change")]
    assert changes and all(" -> " in t for t in changes)
    for board in data["boards"]:
        assert board["ops"], board["board"]["p"]
        for record in board["ops"]:
            _replay(record)
    labels = data["boards"][0]["board"]["shape"]["labels"]
    assert labels == ["HEAD", "bob", "cid", "dee", "ann", "NIL"]
    for scores in ([], [5]):
        for board in static_data(Explorer(scores))["boards"]:
            assert board["ops"]  # every board has something to play


@pytest.mark.parametrize("max_level", [1, 2])
def test_scenarios_on_a_capped_list(max_level: int) -> None:
    ex = Explorer([3, 1, 2, 5, 4, 9, 7], max_level=max_level, seed=3)
    data = static_data(ex)
    inserts = [r for r in data["boards"][0]["ops"] if r["op"]["op"] == "insert"]
    assert inserts and all(r["op"]["height"] <= max_level for r in inserts)
    assert max(data["boards"][0]["board"]["shape"]["heights"]) <= max_level


def test_cli_reads_a_board_from_a_file(tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "page.html"
    for name, text in (
        ("board.json", '{"ann": 120, "bob": 80, "cid": 95.5}'),
        ("board.csv", "# name,score\nann,120\n\nbob,80\ncid 95.5\n"),
    ):
        source = tmp_path / name
        source.write_text(text, encoding="utf-8")
        assert main(["explore", "--from", str(source), "-o", str(out)]) == 0
        html = out.read_text(encoding="utf-8")
        data = json.loads(html.split('id="data">')[1].split("</script>")[0])
        assert data["boards"][0]["board"]["shape"]["labels"] == ["HEAD", "bob", "cid", "ann", "NIL"]
        out.unlink()
    for text in ("ann,12\nann,13\n", "ann,lots\n", "justaname\n", '{"ann": "x"}'):
        source = tmp_path / "bad.csv"
        source.write_text(text, encoding="utf-8")
        assert main(["explore", "--from", str(source), "-o", str(out)]) == 1
        assert "bad.csv" in capsys.readouterr().err
        assert not out.exists()


def test_frames_name_the_comparison() -> None:
    ex = Explorer([30, 10, 50, 20, 60, 5, 40, 15, 25, 45], seed=8)
    frames = ex.run({"op": "at", "rank": 7})["skiplist"]["frames"]
    compared = [f["compare"] for f in frames if f["kind"] in ("cross", "drop")]
    assert all(c in f["text"] for c, f in zip(compared, frames[2:], strict=False))
    assert compared[0].startswith("0 + ") and compared[0].endswith("<= 7")


@st.composite
def _boards(draw: Any) -> tuple[list[Any], int, float, list[tuple[str, Any]]]:
    scores = draw(st.lists(st.one_of(st.integers(1, 9), st.integers(1, 60)), max_size=14))
    max_level = draw(st.sampled_from([1, 2, 3, 32]))
    p = draw(st.sampled_from([0.75, 0.5, 0.25]))
    ops = draw(
        st.lists(
            st.tuples(
                st.sampled_from(["insert", "delete", "search", "update", "rank", "at"]),
                st.integers(0, 1000),
            ),
            max_size=8,
        )
    )
    return scores, max_level, p, ops


@settings(max_examples=40, deadline=None)
@given(_boards())
def test_any_operation_sequence_narrates_and_checks(board: Any) -> None:
    """Every operation on every board (ties, tiny max levels) narrates; the
    narration's own checks and both structures' ``_check`` hold after each."""
    scores, max_level, p, ops = board
    ex = Explorer(scores, p=p, max_level=max_level, seed=len(scores))
    for kind, pick in ops:
        entries = list(ex.sl)
        if not entries or kind == "insert":
            op: dict[str, Any] = {"op": "insert", "score": pick % 30}
        else:
            score, _, member = entries[pick % len(entries)]
            if kind == "update":
                op = {"op": "update", "member": member, "new": pick % 30}
            elif kind == "at":
                op = {"op": "at", "rank": pick % len(entries) + 1}
            elif kind == "rank":
                op = {"op": "rank", "member": member}
            else:
                op = {"op": kind, "score": score}
        record = ex.run(op)
        _replay(record)
        if kind in ("search", "rank", "at") and entries:
            layout = record["sorted"]["before"]
            for column, block, slot in record["sorted"]["reads"]:
                if column in ("p", "t", "m"):
                    assert 0 <= slot < len(layout["scores"][block])
                elif column == "maxes":
                    assert 0 <= slot < len(layout["maxes"])


def test_the_largest_board_makes_a_page_under_budget() -> None:
    data = static_data(Explorer.random(MAX_SIZE, seed=4))
    assert len(page_html(data).encode()) < 300_000
    assert all(r["op"]["op"] != "insert" for r in data["boards"][0]["ops"])  # it is full
