"""``bench/ledger.py`` on tiny inputs: every round runs, the baseline's
separate boards are measured on another tree's code, and the open loop
reports a kept rate and the loop's lag."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_round_runs_and_reports() -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "ledger.py"),
            *("-e", "400", "-n", "300", "--repeats", "1", "--tasks", "10"),
            *("--threads", "2", "--thread-events", "40", "--rates", "400"),
            *("--baseline", "HEAD"),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for line in (
        "ledger / memory throughput:",
        "ledger / separate (this tree):",
        "ledger / separate (HEAD):",
        "always    2 threads",
        "always / everysec throughput:",
        "     400/s always    kept",
        "     400/s always+   kept",
        "     400/s noop      kept",
        "steps: CPU max",
        "waits past their timeout: max",
        "ledger open / board open:",
    ):
        assert line in out, (line, out)
    separate_old = [row for row in out.splitlines() if row.strip().startswith("separate@HEAD")]
    assert len(separate_old) == 1 and "events/s" in separate_old[0]


def test_a_round_imports_the_tree_it_is_given(tmp_path: Path) -> None:
    """A baseline round's process imports the baseline's package, not this
    tree's (a tree without a working package makes the round fail)."""
    (tmp_path / "rankengine").mkdir()
    (tmp_path / "rankengine" / "__init__.py").write_text("raise ImportError('not this one')\n")
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import ledger as bench  # (this tree's, for one_round)
    finally:
        sys.path.remove(str(ROOT / "bench"))

    class Args:
        events, players, seed = 10, 5, 1

    try:
        bench.one_round(str(tmp_path), "separate", Args())  # type: ignore[arg-type]
    except SystemExit as exc:
        assert "not this one" in str(exc)
    else:
        raise AssertionError("the round ran without the tree it was given")


def test_loop_stalls_runs_every_case_on_both_trees() -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "loop_stalls.py"),
            *("-n", "300", "--repeats", "1", "--ref", "HEAD"),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    rows = [row.split() for row in done.stdout.splitlines() if row.startswith("  ")]
    assert sorted((row[0], row[-2]) for row in rows) == sorted(
        (case, tree)
        for case in ("noop", "compaction", "period-drop", "preload")
        for tree in ("tree", "HEAD")
    )
    assert all(float(row[-1]) >= 0 for row in rows)
