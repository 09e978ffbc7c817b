"""The ``rankengine`` command line in ordinary Unix situations.

Output into a closed pipe (``rankengine replay DIR | head -1``), Ctrl-C
during a long run, and output files that must not be left half-written.
Each behaviour depends on the process (its standard streams, its
signals), so every command runs in a subprocess, as users run it.  A
closed pipe is made deterministic: the command's stdout is a pipe whose
read end is closed before the command starts, so its first real write
fails, as it would a moment after ``head`` exits.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, TextIO

import pytest
from conftest import with_default_sigint

from rankengine import Leaderboard
from rankengine.cli import log as cli_log
from rankengine.cli.main import main
from rankengine.durable.eventlog import PROGRESS_EVERY

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT_S = 120
#: Members of the test board: its text output is larger than a pipe buffer.
MEMBERS = 5_000


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.pop("TERM", None)
    return env


def _command(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "rankengine", *args]


def _into_closed_pipe(args: list[str]) -> tuple[int, str]:
    """Run the command with stdout a pipe nobody reads; return (exit code, stderr)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = subprocess.run(
            _command(args),
            stdin=subprocess.DEVNULL,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=_env(),
            timeout=TIMEOUT_S,
            check=False,
        )
    finally:
        os.close(write_end)
    return result.returncode, result.stderr


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("unix") / "board"
    with Leaderboard.open(path) as durable:
        durable.set_many([(f"player:{i:05d}", i) for i in range(MEMBERS)])
    return path


@pytest.fixture(scope="module")
def text(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("unix") / "lines.txt"
    path.write_text("".join(f"/page/{i % 97}\n" for i in range(20_000)), encoding="utf-8")
    return path


# ----------------------------------------------------------------------
# Output into a closed pipe: exit quietly
# ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["inspect", "{board}"],
        ["inspect", "{board}", "--json"],
        ["verify", "{board}"],
        ["verify", "{board}", "--json"],
        ["repair", "{board}", "--dry-run"],
        ["replay", "{board}"],
        ["replay", "{board}", "--format", "csv"],
        ["replay", "{board}", "--format", "json"],
        ["show", "--random", "1000"],
        ["trace", "--random", "300", "--insert", "5"],
        ["trending", "{text}", "--every", "100"],
        ["--help"],
    ],
    ids=" ".join,
)
def test_output_into_a_closed_pipe_exits_quietly(args: list[str], board: Path, text: Path) -> None:
    words = [word.format(board=board, text=text) for word in args]
    code, err = _into_closed_pipe(words)
    assert err == "", err
    assert code == 0


# ----------------------------------------------------------------------
# Output files: written whole or not at all
# ----------------------------------------------------------------------


def _invoke(args: list[str]) -> tuple[int, str, str]:
    """Run the CLI in this process; return (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(args)
        except SystemExit as exc:  # argparse
            code = exc.code if isinstance(exc.code, int) else 1
    return code, out.getvalue(), err.getvalue()


def test_replay_into_a_missing_directory_names_the_output(board: Path, tmp_path: Path) -> None:
    target = tmp_path / "missing" / "out.csv"
    code, _, err = _invoke(["replay", str(board), "-o", str(target)])
    assert code == 1
    assert "not a board directory" not in err
    assert str(target) in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("existed", [True, False], ids=["over a file", "new file"])
def test_interrupted_replay_leaves_no_half_written_output(
    board: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, existed: bool
) -> None:
    target = tmp_path / "out.csv"
    if existed:
        target.write_text("the previous export\n", encoding="utf-8")

    def interrupted(entries: list[Any], fmt: str, out: TextIO) -> None:
        out.write("rank,member,score\n1,player:04999,4999\n")
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_log, "_write_entries", interrupted)
    code, _, err = _invoke(["replay", str(board), "--format", "csv", "-o", str(target)])
    assert code == 130 and "interrupted" in err
    if existed:
        assert target.read_text(encoding="utf-8") == "the previous export\n"
    else:
        assert not target.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == (["out.csv"] if existed else [])


def test_replay_output_is_complete(board: Path, tmp_path: Path) -> None:
    target = tmp_path / "out.csv"
    target.write_text("the previous export\n", encoding="utf-8")
    code, out, err = _invoke(["replay", str(board), "--format", "csv", "-o", str(target)])
    assert (code, out, err) == (0, "", "")
    rows = target.read_text(encoding="utf-8").splitlines()
    assert rows[0] == "rank,member,score" and len(rows) == MEMBERS + 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]


@pytest.mark.parametrize("command", [["show", "1", "2"], ["trace", "1", "2", "--find", "2"]])
def test_a_bad_svg_path_fails_before_anything_is_printed(
    command: list[str], tmp_path: Path
) -> None:
    code, out, err = _invoke([*command, "--svg", str(tmp_path / "missing" / "x.svg")])
    assert code == 1 and "No such file or directory" in err
    assert out == ""


def test_replay_writes_through_a_symbolic_link(board: Path, tmp_path: Path) -> None:
    real = tmp_path / "real.csv"
    real.write_text("old\n", encoding="utf-8")
    link = tmp_path / "link.csv"
    link.symlink_to(real)
    code, _, err = _invoke(["replay", str(board), "--top", "1", "--format", "csv", "-o", str(link)])
    assert (code, err) == (0, "")
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text(encoding="utf-8") == "rank,member,score\n1,player:04999,4999\n"


def test_replay_to_dev_stdout_writes_into_the_pipe(board: Path) -> None:
    result = subprocess.run(
        _command(["replay", str(board), "--top", "1", "--format", "csv", "-o", "/dev/stdout"]),
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=_env(),
        timeout=TIMEOUT_S,
        check=False,
    )
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == "rank,member,score\n1,player:04999,4999\n"


# ----------------------------------------------------------------------
# Ctrl-C: a short message, exit 130, no traceback
# ----------------------------------------------------------------------


def test_trending_interrupted_on_a_slow_stdin_prints_the_list_and_says_so() -> None:
    proc = subprocess.Popen(
        with_default_sigint(_command(["trending", "--every", "1"])),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=_env(),
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write("a\n")
        proc.stdin.flush()
        # the first list is printed: the command is reading, waiting for more
        assert proc.stdout.readline().startswith("Top 10 of 1 line (")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130
    assert err == "rankengine trending: interrupted\n"
    assert out.rstrip().endswith("1      1      0  a")


def test_log_tools_run_on_their_own_report_ctrl_c(
    board: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # python -m rankengine.cli.log: the same rule as the rankengine command
    def interrupted(args: Any, out: TextIO) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_log, "_verify", interrupted)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = cli_log.main(["verify", str(board)])
    assert (code, err.getvalue()) == (130, "rankengine: interrupted\n")


# ----------------------------------------------------------------------
# --help: every option does what it says
# ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def long_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A board whose log is long enough for a reader to report progress."""
    path = tmp_path_factory.mktemp("unix") / "long"
    with Leaderboard.open(path) as durable:
        for i in range(PROGRESS_EVERY + 1):
            durable.set(f"m{i % 10}", i)
    return path


@pytest.mark.parametrize("command", ["inspect", "verify", "repair", "replay"])
def test_progress_shows_progress_on_every_log_command(command: str, long_log: Path) -> None:
    dry = ["--dry-run"] if command == "repair" else []
    args = [command, str(long_log), "--progress", "--from-log" if command == "replay" else ""]
    args = [word for word in [*args, *dry] if word]
    code, _, err = _invoke(args)
    assert code == 0
    assert f"{command}: " in err and err.endswith("\n")


# ----------------------------------------------------------------------
# Closed standard streams (cmd >&- or cmd <&-)
# ----------------------------------------------------------------------


def _with_closed(fd: int, args: list[str]) -> tuple[int, str]:
    result = subprocess.run(
        _command(args),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=_env(),
        timeout=TIMEOUT_S,
        check=False,
        preexec_fn=lambda: os.close(fd),  # runs in the child, before exec
    )
    return result.returncode, result.stderr


@pytest.mark.parametrize(
    "args", [["replay", "{board}"], ["inspect", "{board}"], ["show", "1", "2"]], ids=" ".join
)
def test_a_closed_stdout_is_one_line_and_exit_1(args: list[str], board: Path) -> None:
    code, err = _with_closed(1, [word.format(board=board) for word in args])
    assert code == 1
    assert err == f"rankengine {args[0]}: error: standard output is closed\n"


def test_trending_on_a_closed_stdin_says_so() -> None:
    code, err = _with_closed(0, ["trending"])
    assert code == 1
    assert err.startswith("rankengine trending: error: standard input is closed")
    assert len(err.splitlines()) == 1


def test_a_progress_line_is_ended_before_an_interruption_is_reported(
    board: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def halfway(directory: str, *, progress: Any = None) -> Any:
        progress("log-1.seg", 1, 2)
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_log, "verify", halfway)
    code, _, err = _invoke(["verify", str(board), "--progress"])
    assert code == 130
    assert err.endswith("50% \nrankengine: interrupted\n"), repr(err)
