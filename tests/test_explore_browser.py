"""The explorer page in a real headless Chromium: what it shows, frame by
frame, must be what the Python narration says.

For every operation on the page (an insert and a delete recorded from the
command line, then the prepared scenarios: search, entry at a rank, rank of
a member, insert, score change in place, moved up with a finger search,
moved down, delete of the tallest node), the test performs the same
operation on its own skip list with :mod:`rankengine.teach.narrate` and
checks each frame the page draws against that narration: the node order
and every span, the links highlighted as the search path, the drops, the
rank summed so far, the changed links, the step's text.  Every kind of step
the narration prints must be met.  The page is opened from a file with the
network switched off, and once from ``rankengine explore --serve``'s
server with an operation typed into it.

Set ``RANKENGINE_SCREENSHOTS=DIR`` to keep a screenshot of each scenario
(docs/img/explorer-*.png are made that way).
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from typing import Any

import pytest
from chromium_service import browser_fixture  # noqa: F401

from rankengine.cli.explore import make_server
from rankengine.teach.explore import STEP_KINDS, Explorer
from rankengine.teach.explore_data import parse_op, static_data
from rankengine.teach.explore_page import page_html
from rankengine.teach.narrate import Narration, narrate_delete, narrate_insert, narrate_update
from rankengine.teach.trace import Trace, explain, trace_key, trace_rank
from rankengine.teach.viz import Shape, make_shape, shape_of

SCORES = [30, 10, 50, 20, 60, 5, 40, 15, 25, 45]
SEED = 8
RECORDED = ["insert 35@3", "delete 25"]
NUMBERED = re.compile(r"^\s*\d+\. L\d+\s")

#: Reads everything a frame shows, in one round trip.
READ = """
const q = (s) => [...document.querySelectorAll(s)];
const rs = document.getElementById("ranksum");
return {
  kind: document.getElementById("stepkind").dataset.kind,
  text: document.getElementById("steptext").textContent,
  rank: rs.dataset.rank,
  sum: rs.textContent,
  frameno: document.getElementById("frameno").textContent,
  labels: q("#skiplist g.node").map((g) => g.dataset.label),
  links: q("#skiplist g.link").map((g) => [+g.dataset.level, +g.dataset.from, +g.dataset.to,
    +g.dataset.span, g.classList.contains("followed"), g.classList.contains("changed")]),
  drops: q("#skiplist path.drop").map((p) => [+p.dataset.level, +p.dataset.node]),
  focus: q("#skiplist g.node.focus").map((g) => +g.dataset.rank),
};
"""


#: Steps forwards with the page's own button, from its script.
NEXT = 'document.getElementById("next").click();'


def _make() -> Explorer:
    return Explorer(SCORES, seed=SEED)


class Reference:
    """The test's own board: each operation done with the narration API."""

    def __init__(self) -> None:
        self.ex = _make()  # its skip list and height script; never its run()
        self.next_tie = len(SCORES)

    def key(self, op: dict[str, Any]) -> tuple[Any, Any]:
        for p, t, m in self.ex.sl:
            if op.get("member") == m or ("member" not in op and op.get("score") == p):
                return (p, t)
        raise AssertionError(f"no entry for {op}")

    def perform(self, op: dict[str, Any]) -> tuple[Shape, Narration | Trace]:
        sl, label = self.ex.sl, self.ex.label
        before = shape_of(sl, label)
        kind = op["op"]
        if kind == "insert":
            tie = self.next_tie
            self.next_tie += 1
            member = op.get("member", f"s{tie}")
            story = narrate_insert(
                sl, op["score"], tie, member, height=op["height"], rng=self.ex.script, label=label
            )
            return before, story
        if kind == "delete":
            return before, narrate_delete(sl, *self.key(op), label=label)
        if kind == "update":
            p, t = self.key(op)
            return before, narrate_update(sl, p, op["new"], tie=t, label=label)
        if kind == "at":
            return before, trace_rank(before, op["rank"])
        return before, trace_key(before, *self.key(op))


def _links(shape: Shape) -> list[tuple[int, int, int, int]]:
    return sorted((k.level, k.src, k.dst, k.span) for k in shape.links())


def _middle(story: Narration) -> Shape:
    """The list without the moving node (a score decrease searches it)."""
    before, x = story.before, story.trace.found
    assert x is not None
    heights = [*before.heights[1:x], *before.heights[x + 1 :]]
    entries = [*before.entries[: x - 1], *before.entries[x:]]
    return make_shape(entries, [max(heights, default=1), *heights], before.label_mode)


class Checker:
    """Checks the frames of one operation, in order, against the narration."""

    def __init__(self, before: Shape, told: Narration | Trace) -> None:
        self.before = before
        self.story = told if isinstance(told, Narration) else None
        self.read_trace = told if isinstance(told, Trace) else None
        self.trace: Trace | None = None
        self.shape = before
        self.lines: list[str] = []
        self.summary = ""
        self.crosses = self.drops = 0
        self.kinds: set[str] = set()

    def _shape_is(self, dom: dict[str, Any], shape: Shape) -> None:
        assert dom["labels"] == list(shape.labels[:-1]), (dom["labels"], shape.labels)
        assert sorted(tuple(link[:4]) for link in dom["links"]) == _links(shape)

    def _search(self, trace: Trace, shape: Shape) -> None:
        self.trace, self.shape = trace, shape
        lines = explain(trace, shape).splitlines()
        numbered = [k for k, line in enumerate(lines) if NUMBERED.match(line)]
        self.lines = [lines[k].strip() for k in numbered]
        self.summary = " ".join(line.strip() for line in lines[numbered[-1] + 1 :])
        self.crosses = self.drops = 0

    def _path_is(self, dom: dict[str, Any]) -> None:
        assert self.trace is not None
        followed = {(link[0], link[1]) for link in dom["links"] if link[4]}
        steps = self.trace.steps[: self.crosses]
        assert followed == {(s.level, s.src) for s in steps}
        assert [tuple(d) for d in dom["drops"]] == self.trace.drops()[: self.drops]

    def frame(self, dom: dict[str, Any]) -> None:
        kind = dom["kind"]
        assert kind in STEP_KINDS
        self.kinds.add(kind)
        story = self.story
        if kind == "intro":
            first = story.text.split("\n\n")[0] if story else ""
            told = " ".join(line.strip() for line in first.splitlines())
            assert dom["text"] == (told if story else dom["text"])
            assert dom["text"]
            self._shape_is(dom, self.before)
            return
        if kind == "section":
            text = dom["text"]
            if story is None:
                assert self.read_trace is not None
                self._search(self.read_trace, self.before)
            elif text.startswith("Step 1:"):
                self._search(story.trace, story.before)
            elif "finger search" in text:
                assert story.relink is not None
                self._search(story.relink, story.before)
            elif "search again" in text:
                assert story.relink is not None
                self._search(story.relink, _middle(story))
            else:
                self.trace = None
                return
            assert dom["rank"] in ("0", str(self.trace.starts[0][2]) if self.trace.starts else "0")
            self._shape_is(dom, self.shape)
            return
        if kind in ("start", "cross", "drop", "end"):
            assert self.trace is not None
            assert dom["text"] == self.lines.pop(0)
            if kind == "cross":
                self.crosses += 1
                step = self.trace.steps[self.crosses - 1]
                assert dom["rank"] == str(step.rank)
                # the running sum ends with the span just crossed and the rank
                assert dom["sum"].endswith(f"+ {step.span} = {step.rank}"), dom["sum"]
            elif kind == "drop":
                self.drops += 1
            self._shape_is(dom, self.shape)
            self._path_is(dom)
            return
        if kind == "result":
            assert self.trace is not None and not self.lines
            assert dom["text"] == self.summary
            assert dom["rank"] == str(self.trace.rank)
            self._shape_is(dom, self.shape)
            self._path_is(dom)
            return
        if kind == "table":
            assert self.trace is not None
            rows = [row.split() for row in dom["text"].splitlines()[1:]]
            labels = self.shape.labels
            assert rows == [[f"L{lvl}", labels[n], str(r)] for lvl, n, r in self.trace.stops]
            self._path_is(dom)
            return
        assert story is not None
        changed = {(link[0], link[1]) for link in dom["links"] if link[5]}
        if kind == "span":
            header, row = dom["text"].splitlines()
            assert f"    {row}" in story.text.splitlines()
            level = int(row.split()[0][1:])
            if "  d  " in header:  # a link: the list after, marked up to this level
                self._shape_is(dom, story.after)
                assert changed == {(i, k) for i, k in story.marked if i <= level}
            else:  # an unlink: the list before, update[i]'s link marked
                self._shape_is(dom, story.before)
                update = story.trace.update()
                assert changed == {(i, update[i]) for i in range(level + 1)}
            return
        if kind == "level":
            assert f"    {dom['text']}" in story.text.splitlines()
            return
        self._shape_is(dom, story.after)
        if kind == "height":
            assert dom["focus"] == [story.trace.rank + 1]
        elif kind == "inplace":
            assert story.in_place and dom["focus"] == [story.trace.found]
        else:  # after, checked
            assert changed == set(story.marked)


def _frames(driver: Any) -> int:
    return int(driver.execute_script(READ)["frameno"].split("/")[1])


def _walk(driver: Any, checker: Checker, shot: Path | None) -> None:
    """Step through every frame forwards, checking each; then back: the
    button, the left arrow key and Home show the frames seen before.

    The first step forwards is a real click; the later ones click the
    button from the page's script and read the frame in the same round
    trip (the same handler runs; the suite stays fast)."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    n = _frames(driver)
    seen = [driver.execute_script(READ)]
    shot_taken = False
    for i in range(n):
        dom = seen[i]
        assert dom["frameno"] == f"{i + 1} / {n}"
        checker.frame(dom)
        if shot is not None and not shot_taken and dom["kind"] in ("table", "result"):
            driver.save_screenshot(str(shot))
            shot_taken = True
        if i == 0 and n > 1:
            driver.find_element(By.ID, "next").click()
            seen.append(driver.execute_script(READ))
        elif i < n - 1:
            seen.append(driver.execute_script(NEXT + READ))
    assert driver.find_element(By.ID, "next").get_attribute("disabled") is not None
    if n < 3:
        return
    driver.find_element(By.ID, "prev").click()
    assert driver.execute_script(READ) == seen[n - 2]
    ActionChains(driver).send_keys(Keys.ARROW_LEFT).perform()
    assert driver.execute_script(READ) == seen[n - 3]
    ActionChains(driver).send_keys(Keys.HOME).perform()
    assert driver.execute_script(READ) == seen[0]


def _shots(name: str) -> Path | None:
    where = os.environ.get("RANKENGINE_SCREENSHOTS")
    if not where:
        return None
    Path(where).mkdir(parents=True, exist_ok=True)
    return Path(where) / f"explorer-{name}.png"


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def test_the_page_shows_the_narration_frame_by_frame(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.support.ui import Select

    ops = [parse_op(text) for text in RECORDED]
    data = static_data(_make(), ops)
    page = tmp_path / "explorer.html"
    page.write_text(page_html(data), encoding="utf-8")
    size = page.stat().st_size
    assert size < 300_000, size
    # the network is off: the page must need nothing from it
    browser.execute_cdp_cmd("Network.enable", {})
    browser.execute_cdp_cmd(
        "Network.emulateNetworkConditions",
        {"offline": True, "latency": 0, "downloadThroughput": 0, "uploadThroughput": 0},
    )
    try:
        browser.get(page.as_uri())
        first_draw = float(browser.execute_script("return document.body.dataset.firstDraw"))
        assert first_draw >= 0
        assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0
        print(f"\npage {size} bytes, first draw {first_draw:.1f} ms")
        reference = Reference()
        kinds: set[str] = set()
        records = data["boards"][0]["ops"]
        select = Select(browser.find_element("id", "scenario"))
        assert len(select.options) == len(records)
        for index, record in enumerate(records):
            select.select_by_index(index)
            before, told = reference.perform(record["op"])
            checker = Checker(before, told)
            _walk(browser, checker, _shots(f"{index:02d}-{_slug(record['title'])}"))
            kinds |= checker.kinds
            select = Select(browser.find_element("id", "scenario"))
        assert kinds == set(STEP_KINDS), set(STEP_KINDS) - kinds
        assert not browser.execute_script(
            "return [...performance.getEntriesByType('resource')].length"
        )
    finally:
        browser.execute_cdp_cmd(
            "Network.emulateNetworkConditions",
            {
                "offline": False,
                "latency": 0,
                "downloadThroughput": -1,
                "uploadThroughput": -1,
            },
        )


def test_a_named_board_is_labelled_with_names(browser: Any, tmp_path: Path) -> None:
    """Nodes labelled with members: a recorded insert and a score change."""
    from selenium.webdriver.support.ui import Select

    names = ["ann", "bob", "cid", "dee", "eve", "fay"]
    scores = [120, 80, 95, 60, 140, 110]
    ops = [parse_op("insert gus=100@2"), parse_op("update 80 130")]
    data = static_data(Explorer(scores, members=names, seed=SEED), ops)
    page = tmp_path / "named.html"
    page.write_text(page_html(data), encoding="utf-8")
    browser.get(page.as_uri())
    reference = Reference()
    reference.ex = Explorer(scores, members=names, seed=SEED)
    reference.next_tie = len(scores)
    for index, record in enumerate(data["boards"][0]["ops"][:2]):
        Select(browser.find_element("id", "scenario")).select_by_index(index)
        before, told = reference.perform(record["op"])
        assert "gus" in before.labels or index == 0
        _walk(browser, Checker(before, told), None)
    dom = browser.execute_script(READ)
    assert "gus" in dom["labels"] and "bob" in dom["labels"]


def test_another_p_is_a_pregenerated_board(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    data = static_data(_make())
    page = tmp_path / "explorer.html"
    page.write_text(page_html(data), encoding="utf-8")
    browser.get(page.as_uri())
    Select(browser.find_element(By.ID, "p")).select_by_value("0.5")
    browser.find_element(By.ID, "newboard").click()
    info = browser.find_element(By.ID, "boardinfo").text
    assert "p = 0.5" in info
    other = next(
        b for b in data["boards"] if b["board"]["p"] == 0.5 and b["board"]["max_level"] == 32
    )
    dom = browser.execute_script(READ)
    assert dom["labels"] == other["ops"][0]["skiplist"]["before"]["labels"][:-1]
    bars = browser.execute_script(
        "return [...document.querySelectorAll('#histogram g.bar')].map(g => +g.dataset.count)"
    )
    heights = Explorer(SCORES, p=0.5, seed=SEED).board()["shape"]["heights"][1:]
    assert bars == [sum(1 for h in heights if h == k + 1) for k in range(len(bars))]
    if (shot := _shots("p-half")) is not None:
        browser.save_screenshot(str(shot))


def test_served_page_runs_a_typed_operation(browser: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    server = make_server(_make(), [], port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        browser.get(f"http://127.0.0.1:{server.server_address[1]}/")
        select = Select(browser.find_element(By.ID, "scenario"))
        count = len(select.options)
        # the scenarios already ran on the live board: the reference follows
        reference = Reference()
        page_ops = browser.execute_script(
            "return JSON.parse(document.getElementById('data').textContent)"
            ".boards[0].ops.map(r => r.op)"
        )
        for op in page_ops:
            reference.perform(op)
        Select(browser.find_element(By.ID, "op")).select_by_value("insert")
        browser.find_element(By.ID, "score").send_keys("33")
        browser.find_element(By.ID, "height").send_keys("2")
        browser.find_element(By.ID, "run").click()
        WebDriverWait(browser, 20).until(
            lambda d: len(Select(d.find_element(By.ID, "scenario")).options) == count + 1
        )
        assert browser.find_element(By.ID, "error").text == ""
        before, told = reference.perform({"op": "insert", "score": 33, "height": 2})
        checker = Checker(before, told)
        _walk(browser, checker, _shots("served-insert"))
        assert {"cross", "height", "span", "after"} <= checker.kinds
        # a bad operation is refused with a message and changes nothing
        browser.find_element(By.ID, "score").clear()
        Select(browser.find_element(By.ID, "op")).select_by_value("delete")
        browser.find_element(By.ID, "score").send_keys("9999")
        browser.find_element(By.ID, "run").click()
        WebDriverWait(browser, 20).until(lambda d: d.find_element(By.ID, "error").text)
        assert "9999" in browser.find_element(By.ID, "error").text
        assert len(Select(browser.find_element(By.ID, "scenario")).options) == count + 1
        # a new board with another p: the server draws it from the board's scores
        scores = [p for p, _, _ in reference.ex.sl]
        Select(browser.find_element(By.ID, "p")).select_by_value("0.5")
        browser.find_element(By.ID, "newboard").click()
        WebDriverWait(browser, 20).until(
            lambda d: "p = 0.5" in d.find_element(By.ID, "boardinfo").text
        )
        dom = browser.execute_script(READ)
        expected = shape_of(Explorer(scores, p=0.5, seed=SEED).sl)
        assert dom["labels"] == list(expected.labels[:-1])
        assert sorted(tuple(link[:4]) for link in dom["links"]) == _links(expected)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.mark.parametrize("text", ["insert", "jump 3", "update 1"])
def test_parse_op_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        parse_op(text)
