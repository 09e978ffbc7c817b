"""The ``rankengine`` command line, run as users run it: in a subprocess.

Every command runs through ``python -m rankengine`` and must exit 0 with the
expected content; every bad argument must give a one-line message on stderr
and a non-zero exit, never a traceback.  The subprocesses of a group are
started together (they are independent), so the whole file takes a few
seconds of wall time.  ``--help`` of every command is checked in-process.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from rankengine import Leaderboard
from rankengine.cli import trending as cli_trending
from rankengine.cli.main import main
from rankengine.durable.manifest import read_manifest, write_manifest
from rankengine.trending.topk import TopK

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT_S = 240

#: Scores of the small board the visualiser commands draw.
SCORES = ["30", "10", "50", "20", "60", "5", "40", "15", "25", "45"]


class Run(NamedTuple):
    code: int
    out: str
    err: str


class Case(NamedTuple):
    args: list[str]
    stdin: str | None = None


def _run(case: Case) -> Run:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.pop("TERM", None)
    result = subprocess.run(
        [sys.executable, "-m", "rankengine", *case.args],
        input=case.stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=TIMEOUT_S,
        check=False,
    )
    return Run(result.returncode, result.stdout, result.stderr)


def _run_all(cases: dict[str, Case]) -> dict[str, Run]:
    with ThreadPoolExecutor(max_workers=8) as pool:
        futures = {name: pool.submit(_run, case) for name, case in cases.items()}
        return {name: future.result() for name, future in futures.items()}


def _no_traceback(run: Run) -> None:
    assert "Traceback" not in run.err + run.out, run.err


# ----------------------------------------------------------------------
# --help, in-process
# ----------------------------------------------------------------------

COMMANDS = ["demo", "show", "trace", "inspect", "verify", "repair", "replay", "trending"]


@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_help(command: str) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exit_info:
        main([command, "--help"] if command else ["--help"])
    assert exit_info.value.code == 0
    text = out.getvalue()
    assert text.startswith("usage: rankengine")
    if not command:
        for name in COMMANDS:
            assert name in text


# ----------------------------------------------------------------------
# Commands that work
# ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def words(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("text") / "words.txt"
    path.write_text("the cat and the hat\nthe end\n" * 50 + "zebra\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def svg_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("svg")


@pytest.fixture(scope="module")
def good(words: Path, svg_dir: Path) -> dict[str, Run]:
    lines = "".join(f"/page/{i % 7}\n" for i in range(700)) + "/rare\n\n"
    return _run_all(
        {
            "root help": Case(["--help"]),
            "version": Case(["--version"]),
            "show": Case(["show", *SCORES, "--seed", "8", "--svg", str(svg_dir / "show.svg")]),
            "show random vertical": Case(["show", "--random", "40", "--seed", "3"]),
            "show members": Case(["show", "ann=30", "bob=10", "cid=20", "--label", "member"]),
            "find": Case(
                ["trace", *SCORES, "--seed", "8", "--find", "45", "--svg", str(svg_dir / "f.svg")]
            ),
            "rank": Case(["trace", *SCORES, "--seed", "8", "--rank", "7", "--layout", "vertical"]),
            "insert": Case(
                [
                    "trace",
                    *SCORES,
                    "--seed",
                    "8",
                    "--insert",
                    "35",
                    "--height",
                    "3",
                    "--svg",
                    str(svg_dir / "i.svg"),
                ]
            ),
            "delete": Case(["trace", *SCORES, "--seed", "8", "--delete", "25"]),
            "update": Case(["trace", *SCORES, "--seed", "8", "--update", "40", "42"]),
            "update move": Case(["trace", *SCORES, "--seed", "8", "--update", "20", "55"]),
            "trending stdin": Case(["trending", "--k", "3"], stdin=lines),
            "trending file": Case(
                ["trending", str(words), "--words", "--k", "2", "--every", "100"]
            ),
            "demo skiplist": Case(
                ["demo", "--players", "50", "--events", "200", "--backend", "skiplist"]
            ),
        }
    )


def test_root_help_and_version(good: dict[str, Run]) -> None:
    assert good["root help"].code == 0
    for name in COMMANDS:
        assert name in good["root help"].out
    assert good["version"].code == 0 and good["version"].out.startswith("rankengine ")


def test_show(good: dict[str, Run], svg_dir: Path) -> None:
    run = good["show"]
    assert run.code == 0, run.err
    assert "L3    HEAD" in run.out and "L0    HEAD -1> 5 -1> 10" in run.out
    assert "-N->  a link jumping N level-0 steps" in run.out
    assert f"SVG written to {svg_dir / 'show.svg'}" in run.out
    root = ET.parse(svg_dir / "show.svg").getroot()
    assert root.tag.endswith("svg")
    vertical = good["show random vertical"]
    assert vertical.code == 0 and vertical.out.count("\n") > 40
    assert "rank  " in vertical.out and " NIL " in vertical.out
    members = good["show members"]
    assert members.code == 0 and "HEAD -1> bob -1> cid -1> ann" in members.out


def test_trace_search_and_rank(good: dict[str, Run], svg_dir: Path) -> None:
    find = good["find"]
    assert find.code == 0, find.err
    assert "HEAD ======" in find.out  # a followed link is drawn with '='
    assert "Found 45 at rank 8 after crossing 4 links" in find.out
    assert ET.parse(svg_dir / "f.svg").getroot().tag.endswith("svg")
    rank = good["rank"]
    assert rank.code == 0 and "<- found: rank 7" in rank.out
    assert "Rank 7 is 40" in rank.out


def test_trace_narrations(good: dict[str, Run], svg_dir: Path) -> None:
    insert = good["insert"]
    assert insert.code == 0, insert.err
    for text in ("Insert 35", "update[i]  rank[i]", "height 3", "rank[0] + 1 = 7", "Checked"):
        assert text in insert.out
    assert len(ET.parse(svg_dir / "i.svg").getroot().findall("{*}text[@class='title']")) == 2
    delete = good["delete"]
    assert delete.code == 0 and "Delete 25" in delete.out and "takes over" in delete.out
    assert "so it is dropped (level 4 -> 3)" in delete.out
    assert good["update"].code == 0 and "zslUpdateScore" in good["update"].out
    move = good["update move"]
    assert move.code == 0 and "must move" in move.out and "Step 5: after" in move.out
    assert "Finger search for 55 from the old update[i]" in move.out  # as move() searches


def test_trending(good: dict[str, Run]) -> None:
    stdin = good["trending stdin"]
    assert stdin.code == 0, stdin.err
    lines = stdin.out.splitlines()
    assert lines[0].startswith("Top 3 of 701 lines")
    assert [line.split()[1:] for line in lines[2:5]] == [
        ["100", "0", f"/page/{i}"] for i in range(3)
    ]
    file = good["trending file"]
    assert file.code == 0, file.err
    # Printed every 100 words, then once more at the end.
    assert file.out.count("Top 2 of") == 1 + 351 // 100
    assert file.out.splitlines()[-2].split() == ["1", "150", "0", "the"]


class SeededTopK(TopK):
    """A tracker that starts with ``SEEDED`` events already counted for one
    key, so that a short stream crosses a counter limit."""

    SEEDED = 0

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.add("seed", self.SEEDED)


def test_trending_counts_past_four_billion_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    # 32-bit sketch counters stop at 2**32 - 1 events; a long log passes that
    # (the last add raised OverflowError out of the command, a traceback)
    monkeypatch.setattr(SeededTopK, "SEEDED", 2**32 - 10)
    monkeypatch.setattr(cli_trending, "TopK", SeededTopK)
    out = io.StringIO()
    assert cli_trending.run(io.StringIO("a\nb\na\n" * 10), out, k=2) == 0
    lines = out.getvalue().splitlines()
    assert lines[0].startswith(f"Top 2 of {2**32 + 20:,} lines")
    assert [line.split()[1:] for line in lines[2:4]] == [
        [f"{2**32 - 10:,}", "0", "seed"],
        ["20", "0", "a"],
    ]


def test_trending_past_the_counter_limit_stops_with_a_message(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # the limit of 64-bit counters is out of reach (centuries of lines), but
    # should it come, the count so far is printed and the command says why
    monkeypatch.setattr(SeededTopK, "SEEDED", 2**64 - 10)
    monkeypatch.setattr(cli_trending, "TopK", SeededTopK)
    out = io.StringIO()
    assert cli_trending.run(io.StringIO("a\n" * 30), out, k=2, every=5) == 1
    assert out.getvalue().splitlines()[0].startswith(f"Top 2 of {2**64 - 10 + 5:,} lines")
    err = capsys.readouterr().err
    assert "stopped after 5 lines" in err and "counter limit" in err and "Traceback" not in err


class InterruptedTopK(TopK):
    """A tracker whose first batch is interrupted by Ctrl-C half-way through
    counting (the signal arrives, as it does, while a batch is counted)."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.batches = 0

    def add_many(self, keys: Any) -> None:
        keys = list(keys)
        self.batches += 1
        if self.batches > 1:
            super().add_many(keys)
            return
        half = len(keys) // 2
        super().add_many(keys[:half])
        os.kill(os.getpid(), signal.SIGINT)
        super().add_many(keys[half:])


def test_trending_ctrl_c_while_a_batch_is_counted_counts_it_once(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], ctrl_c: None
) -> None:
    # the interrupted batch was added again after the loop: part of it was
    # counted twice, and the printed counts were no longer upper bounds
    # with the stated error
    monkeypatch.setattr(cli_trending, "TopK", InterruptedTopK)
    out = io.StringIO()
    lines = cli_trending.BATCH * 3
    assert cli_trending.run(io.StringIO("a\n" * lines), out, k=1) == 130
    table = out.getvalue().splitlines()
    assert table[0].startswith(f"Top 1 of {cli_trending.BATCH:,} lines")
    assert table[2].split()[1:] == [f"{cli_trending.BATCH:,}", "0", "a"]
    assert "interrupted" in capsys.readouterr().err


def _screen(text: str) -> list[str]:
    """The lines a terminal shows after ``text`` (only the escapes the
    live list uses: cursor up to column 0, clear line, clear below)."""
    rows, row = [""], 0
    for match in re.finditer(r"\x1b\[(\d*)([FKJ])|(\n)|([^\x1b\n]+)", text):
        count, code, newline, chars = match.groups()
        if code == "F":
            row -= int(count)
        elif code == "K":
            rows[row] = ""
        elif code == "J":
            del rows[row + 1 :]
            rows[row] = ""
        elif newline:
            row += 1
            if row == len(rows):
                rows.append("")
        else:
            rows[row] += chars
    return [line for line in rows if line]


def test_trending_live_redraw_leaves_no_line_of_a_longer_list() -> None:
    # The 17 candidate slots fill, "x" is admitted with an error (footer
    # shown), then an exact key tops the list: the redrawn list is one line
    # shorter, and the old footer stayed on screen below it.
    keys = [f"a{i}" for i in range(1, 18)] + ["x", "x"] + ["a17"] * 5
    out = io.StringIO()
    assert cli_trending.run(io.StringIO("\n".join(keys)), out, k=1, every=1, live=True) == 0
    assert _screen(out.getvalue()) == [
        "Top 1 of 24 lines (count-min sketch 2048 x 4, 17 exact counters)",
        "rank  count  error  key",
        "   1      6      0  a17",
    ]
    assert "(a count is an upper bound" in out.getvalue()  # it was shown on the way


def test_demo_on_the_skiplist_backend(good: dict[str, Run]) -> None:
    run = good["demo skiplist"]
    assert run.code == 0, run.err
    assert "skiplist backend" in run.out and "Standings identical" in run.out


# ----------------------------------------------------------------------
# The demo, then the log commands on the board it leaves
# ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Run, Path]:
    board = tmp_path_factory.mktemp("demo") / "board"
    return _run(Case(["demo", "--players", "500", "--events", "4000", "--dir", str(board)])), board


def test_demo_with_one_player_reads_right() -> None:
    """Numbers in the demo's sentences: one player, and the look-ups (always
    1,000, with repeats) counted as look-ups, not as that many players."""
    run = _run(Case(["demo", "--players", "1", "--events", "10"]))
    assert run.code == 0, run.err
    assert "identical to the server's: its one player, same" in run.out
    assert "all 1 players" not in run.out
    assert "1,000 look-ups of random players" in run.out


def test_demo(demo: tuple[Run, Path]) -> None:
    run, board = demo
    assert run.code == 0, run.err
    _no_traceback(run)
    for step in ("[1/5] 500 players joined", "[2/5] Playing 4,000 score events", "[3/5]"):
        assert step in run.out
    assert "[4/5] Crash" in run.out and "SIGKILL" in run.out
    assert "[5/5] Recovery" in run.out and "replayed 2,000 log records" in run.out
    assert "Standings identical to the server's: all 500 players" in run.out
    assert "events/s" in run.out and "Top 10 after 4,000 events" in run.out
    assert f"try `rankengine inspect {board}`" in run.out
    # Printed a few times when stdout is not a terminal, never redrawn.
    assert run.out.count("Top 10 after") == 2
    assert "\x1b[" not in run.out


@pytest.fixture(scope="module")
def log_runs(demo: tuple[Run, Path]) -> dict[str, Run]:
    _, board = demo
    return _run_all(
        {
            "inspect": Case(["inspect", str(board)]),
            "inspect json": Case(["inspect", str(board), "--json"]),
            "verify": Case(["verify", str(board)]),
            "repair": Case(["repair", str(board), "--dry-run"]),
            "replay": Case(["replay", str(board), "--top", "3", "--format", "csv"]),
            "replay until": Case(["replay", str(board), "--until", "2500", "--top", "2"]),
        }
    )


def test_log_commands_on_the_demo_board(demo: tuple[Run, Path], log_runs: dict[str, Run]) -> None:
    _, board = demo
    for name, run in log_runs.items():
        assert run.code == 0, f"{name}: {run.err}"
        _no_traceback(run)
    assert "members     500" in log_runs["inspect"].out
    assert '"members": 500' in log_runs["inspect json"].out
    assert "healthy" in log_runs["verify"].out
    csv = log_runs["replay"].out.splitlines()
    assert csv[0] == "rank,member,score" and len(csv) == 4
    with Leaderboard.open(board) as recovered:
        best = [f"{e.rank},{e.member!s},{e.score}" for e in recovered.top(3)]
    assert csv[1:] == best
    assert len(log_runs["replay until"].out.splitlines()) == 2


def test_replay_before_the_snapshot_is_refused_clearly(demo: tuple[Run, Path]) -> None:
    # The demo snapshots halfway (seq 2,001) and drops the log before it.
    run = _invoke(["replay", str(demo[1]), "--until", "1"])
    assert run.code == 1 and "compacted away" in run.err
    # it says where the kept log begins: after the snapshot, at seq 2,002
    assert "begins at seq 2002" in run.err and "nowhere" not in run.err


def test_replay_past_the_end_of_the_log_says_so(demo: tuple[Run, Path]) -> None:
    """A sequence number past the last record (a typo, often) replays the
    whole log, and stderr says where the log ends; a time past the end is
    simply now, and says nothing."""
    board = demo[1]
    with Leaderboard.open(board) as live:
        last = live.last_seq
    whole = _invoke(["replay", str(board), "--top", "5"])
    past = _invoke(["replay", str(board), "--until", str(last + 1000), "--top", "5"])
    assert past.code == 0 and past.out == whole.out
    assert f"the log ends at seq {last}, before seq {last + 1000}" in past.err
    assert past.err.count("\n") == 1 and "Traceback" not in past.err
    at_end = _invoke(["replay", str(board), "--until", str(last), "--top", "5"])
    later = _invoke(["replay", str(board), "--until", "9999-01-01", "--top", "5"])
    for run in (at_end, later):
        assert run.code == 0 and run.out == whole.out and run.err == ""


# ----------------------------------------------------------------------
# Bad arguments: a message and a non-zero exit, never a traceback
# ----------------------------------------------------------------------


def _bad_cases(tmp: Path) -> dict[str, tuple[Case, int, str]]:
    full = tmp / "full"
    full.mkdir()
    (full / "something").write_text("x")
    empty = tmp / "empty"
    empty.mkdir()
    return {
        "no command": (Case([]), 2, "required"),
        "unknown command": (Case(["fly"]), 2, "invalid choice"),
        "demo players 0": (Case(["demo", "--players", "0"]), 2, "must be at least 1"),
        "demo players word": (Case(["demo", "--players", "lots"]), 2, "not a whole number"),
        "demo events negative": (Case(["demo", "--events", "-5"]), 2, "must not be negative"),
        "demo backend": (Case(["demo", "--backend", "btree"]), 2, "invalid choice"),
        "demo full dir": (Case(["demo", "--dir", str(full)]), 1, "not a new or empty"),
        "show word": (Case(["show", "ten"]), 2, "'ten' is not a number"),
        "show nan": (Case(["show", "nan"]), 2, "not a finite number"),
        "show empty name": (Case(["show", "=5"]), 2, "name before '=' is empty"),
        "show random 0": (Case(["show", "--random", "0"]), 2, "must be at least 1"),
        "show random huge": (Case(["show", "--random", "5000"]), 2, "at most 1000"),
        "show both": (Case(["show", "1", "--random", "3"]), 2, "not both"),
        "show same names": (Case(["show", "a=1", "a=2"]), 2, "every NAME must be different"),
        "show max level": (Case(["show", "--max-level", "40"]), 2, "from 1 to 32"),
        "show layout": (Case(["show", "--layout", "round"]), 2, "invalid choice"),
        "show svg dir": (
            Case(["show", "--svg", str(tmp / "missing" / "x.svg")]),
            1,
            "No such file or directory",
        ),
        "show svg empty name": (Case(["show", "1", "--svg", ""]), 2, "the file name is empty"),
        "replay output empty name": (
            Case(["replay", str(empty), "-o", ""]),
            2,
            "the file name is empty",
        ),
        "trace nothing": (Case(["trace", "1", "2"]), 2, "one of the arguments"),
        "trace two": (Case(["trace", "--find", "1", "--delete", "2"]), 2, "not allowed with"),
        "trace delete absent": (Case(["trace", "1", "2", "--delete", "9"]), 1, "no entry"),
        "trace update absent": (Case(["trace", "1", "--update", "9", "3"]), 1, "no entry"),
        "trace rank range": (Case(["trace", "1", "2", "--rank", "5"]), 1, "from 1 to 2"),
        "trace update arity": (Case(["trace", "--update", "1"]), 2, "expected 2 arguments"),
        "trace height alone": (
            Case(["trace", "--find", "3", "--height", "2"]),
            2,
            "--height only applies to --insert",
        ),
        "trace height tall": (
            Case(["trace", "--insert", "3", "--height", "9", "--max-level", "4"]),
            2,
            "must not exceed --max-level",
        ),
        "trending missing file": (
            Case(["trending", str(tmp / "nope.txt")]),
            1,
            "No such file or directory",
        ),
        "trending k 0": (Case(["trending", "--k", "0"]), 2, "must be at least 1"),
        "trending every word": (Case(["trending", "--every", "often"]), 2, "not a whole number"),
        "verify missing": (Case(["verify", str(tmp / "nope")]), 2, "is not a directory"),
        "inspect not a board": (Case(["inspect", str(empty)]), 2, "is not a board directory"),
        "replay until": (
            Case(["replay", str(empty), "--until", "yesterday"]),
            2,
            "neither a sequence number nor an ISO 8601 time",
        ),
        "replay format": (Case(["replay", str(empty), "--format", "xml"]), 2, "invalid choice"),
        "replay top negative": (
            Case(["replay", str(empty), "--top", "-1"]),
            2,
            "must not be negative",
        ),
        "trending k grouped": (Case(["trending", "--k", "1_0x"]), 2, "not a whole number"),
        "repair backup is a file": (
            Case(["repair", str(full), "--backup-dir", str(full / "something")]),
            2,
            "is a file, not a directory",
        ),
    }


#: Bad-argument cases also run in a subprocess (all of them run in-process,
#: through the same ``main``, where a traceback would fail the test).
IN_SUBPROCESS = (
    "no command",
    "demo players 0",
    "demo full dir",
    "trace delete absent",
    "trending missing file",
    "verify missing",
)


def _invoke(args: list[str]) -> Run:
    """Run the CLI in this process, as ``python -m rankengine`` would."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(args)
        except SystemExit as exc:  # argparse
            code = exc.code if isinstance(exc.code, int) else 1
    return Run(code, out.getvalue(), err.getvalue())


@pytest.fixture(scope="module")
def bad(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Run, int, str]]:
    cases = _bad_cases(tmp_path_factory.mktemp("bad"))
    runs = {name: _invoke(case.args) for name, (case, _, _) in cases.items()}
    spawned = _run_all({name: cases[name][0] for name in IN_SUBPROCESS})
    runs.update({f"{name} (subprocess)": run for name, run in spawned.items()})
    out = {}
    for name, run in runs.items():
        _, code, text = cases[name.removesuffix(" (subprocess)")]
        out[name] = (run, code, text)
    return out


def test_bad_arguments(bad: dict[str, tuple[Run, int, str]]) -> None:
    failures = []
    for name, (run, code, text) in sorted(bad.items()):
        ok = (
            run.code == code
            and text in run.err
            and "Traceback" not in run.err + run.out
            and run.err.strip()
        )
        if not ok:
            failures.append(f"{name}: exit {run.code} (want {code}), stderr {run.err!r}")
    assert not failures, "\n".join(failures)


def test_bad_arguments_print_one_short_message(bad: dict[str, tuple[Run, int, str]]) -> None:
    for name, (run, code, _) in bad.items():
        if code == 1:  # the command ran: one line, "rankengine CMD: error: ..."
            lines = run.err.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("rankengine "), name
        else:  # argparse: usage, then one error line
            assert run.err.strip().splitlines()[-1].startswith("rankengine"), name


@pytest.mark.parametrize(
    ("option", "value"),
    [("--players", "99999999999999999999999"), ("--events", "1_000_000_000_000")],
)
def test_demo_refuses_sizes_that_would_exhaust_the_machine(option: str, value: str) -> None:
    # parsed only: a demo of that size must never start, even in a failing test
    from rankengine.cli.main import build_parser

    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(["demo", option, value])
    assert exit_info.value.code == 2
    assert "at most 10,000,000" in err.getvalue()


def _subcommands() -> dict[str, Any]:
    import argparse

    from rankengine.cli.main import build_parser

    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("no subcommands")


@pytest.mark.parametrize("command", COMMANDS)
def test_help_shows_every_default(command: str) -> None:
    for action in _subcommands()[command]._actions:
        if action.default in (None, False, "==SUPPRESS==") or not action.option_strings:
            continue
        assert action.help and "default" in action.help, (command, action.option_strings)


def test_trending_reads_stdin_as_utf8_as_it_reads_a_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # stdin was decoded in the locale's encoding, a file always as UTF-8:
    # under a Latin-1 locale the same bytes made other keys ("hÃ", "llo")
    raw = "héllo wörld héllo\n".encode() + b"\xff\n"
    (tmp_path / "text.txt").write_bytes(raw)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(raw), encoding="latin-1"))
    from_stdin = _invoke(["trending", "--words"])
    from_file = _invoke(["trending", "--words", str(tmp_path / "text.txt")])
    assert from_stdin == from_file
    assert from_stdin.code == 0, from_stdin.err
    rows = [line.split()[1:] for line in from_stdin.out.splitlines()[2:]]
    assert rows == [["2", "0", "héllo"], ["1", "0", "wörld"]]


def test_trending_counts_one_line_or_word_in_the_singular() -> None:
    for args, unit in ((["trending"], "line"), (["trending", "--words"], "word")):
        out = io.StringIO()
        cli_trending.run(io.StringIO("solo\n"), out, words=unit == "word")
        assert out.getvalue().startswith(f"Top 10 of 1 {unit} (count-min"), args


def test_trending_drops_a_byte_order_mark(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # a file saved "UTF-8 with BOM" (Windows editors) counted its first line
    # as another key: "\ufeffapple" beside "apple"
    raw = "\ufeffapple\napple\npear\n".encode()
    (tmp_path / "text.txt").write_bytes(raw)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(raw), encoding="latin-1"))
    for run in (_invoke(["trending"]), _invoke(["trending", str(tmp_path / "text.txt")])):
        assert run.code == 0, run.err
        rows = [line.split()[1:] for line in run.out.splitlines()[2:]]
        assert rows == [["2", "0", "apple"], ["1", "0", "pear"]]


def _torn_board(path: Path) -> Path:
    """A board whose last record was cut short (a torn tail)."""
    with Leaderboard.open(path, fsync="never") as board:
        for i in range(5):
            board.set(f"p{i}", i)
    segment = sorted(path.glob("log-*.seg"))[-1]
    segment.write_bytes(segment.read_bytes()[:-5])
    # as a kill before close() leaves it: no seal (a sealed log cut short is damage)
    manifest = read_manifest(str(path))
    manifest.sealed, manifest.ends, manifest.durable_seq = False, {}, 0
    write_manifest(str(path), manifest)
    return path


def test_log_tools_report_a_recovery_warning_in_one_line(tmp_path: Path) -> None:
    # replay and inspect let Python print the warning of the replay: the
    # source file, line number and a line of code, on two lines of stderr
    board = str(_torn_board(tmp_path / "board"))
    runs = _run_all(
        {
            "replay": Case(["replay", board]),
            "inspect": Case(["inspect", board]),
            "inspect json": Case(["inspect", "--json", board]),
        }
    )
    replay = runs["replay"]
    assert replay.code == 0 and "p4" not in replay.out and "p3" in replay.out
    (line,) = replay.err.splitlines()
    assert line.startswith("rankengine replay: warning: ") and "torn tail" in line
    assert ".py" not in replay.err
    # inspect lists what it found (the same torn tail) with its findings
    for name in ("inspect", "inspect json"):
        run = runs[name]
        assert (run.code, run.err) == (0, ""), name
        assert "torn tail" in run.out and "incomplete record" in run.out


def test_inspect_json_gives_null_members_when_they_cannot_be_counted(tmp_path: Path) -> None:
    # a damaged board's member count was the string "?" where a number
    # stands otherwise: a JSON reader doing arithmetic on it failed
    board = tmp_path / "board"
    with Leaderboard.open(board, fsync="never") as durable:
        durable.set("ann", 1)
    (board / "MANIFEST").unlink()
    run = _invoke(["inspect", "--json", str(board)])
    assert run.code == 0, run.err
    info = json.loads(run.out)
    assert info["status"] == "damaged" and info["members"] is None
    assert "members     ?" in _invoke(["inspect", str(board)]).out


def test_replay_output_dash_is_standard_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "-o -" wrote a file named "-" in the working folder (trending reads
    # FILE "-" as stdin; "-" is stdout for -o, as for most tools)
    board = tmp_path / "board"
    with Leaderboard.open(board, fsync="never") as durable:
        durable.set_many([("ann", 2), ("bob", 1)])
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    run = _invoke(["replay", str(board), "--format", "csv", "-o", "-"])
    assert (run.code, run.err) == (0, "")
    assert run.out.splitlines() == ["rank,member,score", "1,ann,2", "2,bob,1"]
    assert list(work.iterdir()) == []


@pytest.mark.parametrize(
    ("command", "example"),
    [
        ("show", "rankengine show --random 20 --seed 3 --svg list.svg"),
        ("trace", "rankengine trace --insert 35 --height 3"),
        ("trending", "cat book.txt | rankengine trending --words --lower --every 10000"),
        ("demo", "rankengine demo --players 20000 --events 50000 --dir ./board"),
    ],
)
def test_help_shows_each_example_whole_on_its_own_line(command: str, example: str) -> None:
    # the examples were one paragraph, separated by "|" (which trending's
    # own example uses as a pipe) and wrapped in the middle of a command
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        main([command, "--help"])
    assert f"\n  {example}\n" in out.getvalue()


def _parse(args: list[str]) -> Any:
    """``args`` parsed by the ``rankengine`` parser (argparse's exit on error included)."""
    from rankengine.cli.main import build_parser

    return build_parser().parse_args(args)


@pytest.mark.parametrize(
    ("args", "attribute", "want"),
    [
        (["trace", "1", "--find", "-1e3"], "find", -1000.0),
        (["trace", "1", "--find", "-1.5e-2"], "find", -0.015),
        (["trace", "1", "--find", "-2E+2"], "find", -200.0),
        (["trace", "1", "--find", "-.5"], "find", -0.5),
        (["trace", "1", "--delete", "-1_000"], "delete", -1000),
        (["trace", "1", "--insert", "-1e3"], "insert", (None, -1000.0)),
        (["trace", "1", "--update", "-1e3", "-2.5e1"], "update", [-1000.0, -25.0]),
        (["show", "-1e3", "-.5", "7"], "scores", [(None, -1000.0), (None, -0.5), (None, 7)]),
        (["show", "--seed", "-1_000"], "seed", -1000),
        (["demo", "--seed", "-12"], "seed", -12),
    ],
)
def test_negative_numbers_in_any_float_form_are_values(
    args: list[str], attribute: str, want: object
) -> None:
    # argparse took "-1e3" (and "-inf", "-1_000") for an unknown option:
    # "--find -1e3" failed with "expected one argument"
    assert getattr(_parse(args), attribute) == want


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["trace", "1", "--find", "-inf"], "'-inf' is not a finite number"),
        (["trace", "1", "--find", "-Infinity"], "'-Infinity' is not a finite number"),
        (["trace", "1", "--delete", "-nan"], "'-nan' is not a finite number"),
        (["show", "-inf"], "'-inf' is not a finite number"),
        (["trending", "--k", "-1e3"], "'-1e3' is not a whole number"),
        (["trending", "--every", "-1_000"], "must be at least 1, got -1000"),
        (["demo", "--events", "-1,000"], "must not be negative, got -1000"),
    ],
)
def test_a_negative_number_reaches_its_option_s_own_check(args: list[str], message: str) -> None:
    run = _invoke(args)
    assert run.code == 2 and message in run.err, run.err
    assert "expected one argument" not in run.err and "unrecognized" not in run.err


def test_negative_number_values_leave_real_options_alone(tmp_path: Path) -> None:
    from rankengine.cli import log as cli_log

    args = _parse(["replay", str(tmp_path), "-o", "-", "--top", "3"])
    assert (args.output, args.top) == ("-", 3)
    assert "usage:" in _invoke(["show", "-h"]).out
    run = _invoke(["show", "-x"])
    assert run.code == 2 and "unrecognized arguments: -x" in run.err
    # the log tools' own entry point reads negative numbers the same way
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = cli_log.main(["replay", str(tmp_path), "--top", "-1e3"])
    assert code == 2 and "'-1e3' is not a whole number" in err.getvalue()


def test_trending_refuses_a_k_past_its_limit_before_reading(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # --k had no upper bound: --k 10**12 made a tracker of 2 * 10**12
    # candidate slots, whose memory grows with every distinct key
    def no_tracker(*args: object, **kwargs: object) -> TopK:
        raise AssertionError("a tracker was made")

    monkeypatch.setattr(cli_trending, "TopK", no_tracker)
    monkeypatch.setattr(sys, "stdin", None)  # reading would fail with exit 1
    limit = cli_trending.MAX_K
    for k in (str(limit + 1), "1_000_000_000_000", str(10**100)):
        run = _invoke(["trending", "--k", k])
        assert run.code == 2, (k, run)
        assert f"must be from 1 to {limit:,}" in run.err.splitlines()[-1], run.err
    assert _parse(["trending", "--k", str(limit)]).k == limit


def test_trending_run_counts_at_the_largest_k_and_refuses_more() -> None:
    out = io.StringIO()
    assert cli_trending.run(io.StringIO("a\nb\na\n"), out, k=cli_trending.MAX_K) == 0
    assert out.getvalue().splitlines()[0].startswith(f"Top {cli_trending.MAX_K} of 3 lines")
    with pytest.raises(ValueError, match="k must be an int from 1 to 100,000"):
        cli_trending.run(io.StringIO("a\n"), io.StringIO(), k=cli_trending.MAX_K + 1)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["replay", "{dir}", "--until", "\u0663"], "neither a sequence number nor"),
        (["replay", "{dir}", "--until", "\uff11\uff12"], "neither a sequence number nor"),
        (["replay", "{dir}", "--until", "\u00b3"], "neither a sequence number nor"),
        (["trending", "--k", "\uff13"], "is not a whole number"),
        (["trending", "--every", "1_\u0660\u0660\u0660"], "is not a whole number"),
        (["show", "--seed", "\u0663"], "is not a whole number"),
        (["demo", "--seed", "\u0663"], "is not a whole number"),
        (["demo", "--players", "\uff15"], "is not a whole number"),
        (["show", "\u0663"], "is not a number"),
        (["trace", "1", "--find", "\uff11.5"], "is not a number"),
    ],
)
def test_numbers_on_the_command_line_are_ascii_digits_only(
    args: list[str], message: str, tmp_path: Path
) -> None:
    # int(), float() and str.isdigit() take Arabic-Indic or fullwidth digits
    # for ASCII ones: "--until \u0663" replayed to sequence number 3
    run = _invoke([arg.format(dir=tmp_path) for arg in args])
    assert run.code == 2 and message in run.err.splitlines()[-1], run.err
