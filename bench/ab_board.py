"""A/B: the whole board as it is now against the board at a git ref, in one process.

Usage (from the repository root)::

    python bench/ab_board.py                          # main vs this tree, N = 10,000
    python bench/ab_board.py --ref HEAD~3 --size 100000 --rounds 40 --backend skiplist

The ``rankengine`` package of ``--ref`` is read with ``git archive`` into a
temporary directory twice, as two private packages (every ``rankengine``
import renamed): ``ref``, the side compared, and ``control``, an identical
second copy.  The three boards -- ``ref``, ``control`` and this tree's --
are built from the same pairs and run the same op lists (members are fresh
strings, as ``bench/compare.py`` makes them), round by round in a rotating
order, so the machine's drift falls on all three alike.  Each round times
each workload once per board (CPU time, ``time.process_time``).

Printed per workload: the median over rounds of ``this / ref`` (below 1:
this tree is faster) and of ``control / ref``, an A/A pair of identical
code, whose distance from 1 is what this machine cannot resolve; and each
board's median nanoseconds per op.  ``bench/compare.py`` runs the peers
(the naive recipe, Redis) one system at a time; this script answers the
narrower question "did this change make the public per-call path faster or
slower" at a size where that path (checks, lock, ``Entry`` rows) is most of
the cost.
"""

from __future__ import annotations

import argparse
import io
import random
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # run from a checkout without installing

#: Scores are drawn from [0, SCORE_RANGE), as in bench/compare.py.
SCORE_RANGE = 1_000_000

#: The share of increments, tops and ranks in the mixed workload (compare.py's).
MIXED_SHARES = (0.8, 0.1, 0.1)

#: The private package names the ref's package is loaded as.
SIDES = ("_ab_ref_board", "_ab_control_board")


def load_ref(ref: str, into: Path) -> None:
    """``rankengine/`` at ``ref`` as the packages :data:`SIDES` under ``into``."""
    blob = subprocess.run(
        ["git", "archive", "--format=tar", ref, "rankengine"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout
    for name in SIDES:
        unpacked = into / f"{name}-tar"
        with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
            tar.extractall(unpacked, filter="data")
        package = into / name
        (unpacked / "rankengine").rename(package)
        for path in package.rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            text = re.sub(r"\brankengine\.", f"{name}.", text)
            text = re.sub(r"\bfrom rankengine import\b", f"from {name} import", text)
            text = re.sub(r"^import rankengine$", f"import {name}", text, flags=re.MULTILINE)
            path.write_text(text, encoding="utf-8")


def workloads(n: int, ops: int, seed: int) -> dict[str, Callable[[Any], None]]:
    """The timed workloads, each a function of a board, over seeded op lists."""
    rng = random.Random(seed)

    def player() -> str:
        return f"player:{rng.randrange(n)}"

    ranks = [player() for _ in range(ops)]
    incrs = [(player(), rng.randint(1, 100)) for _ in range(ops)]
    mixed: list[tuple[int, Any, Any]] = []
    for _ in range(ops):
        r = rng.random()
        if r < MIXED_SHARES[0]:
            mixed.append((0, player(), rng.randint(1, 100)))
        elif r < MIXED_SHARES[0] + MIXED_SHARES[1]:
            mixed.append((1, 10, None))
        else:
            mixed.append((2, player(), None))

    def rank(board: Any) -> None:
        read = board.rank
        for member in ranks:
            read(member)

    def incr(board: Any) -> None:
        write = board.incr
        for member, delta in incrs:
            write(member, delta)

    def top10(board: Any) -> None:
        read = board.top
        for _ in range(ops):
            read(10)

    def mix(board: Any) -> None:
        write, top, read = board.incr, board.top, board.rank
        for kind, a, b in mixed:
            if kind == 0:
                write(a, b)
            elif kind == 1:
                top(a)
            else:
                read(a)

    return {"rank": rank, "incr": incr, "top10": top10, "mixed": mix}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ref", default="main", help="git ref to compare with (default main)")
    parser.add_argument("--size", type=int, default=10_000, help="members (default 10,000)")
    parser.add_argument("--ops", type=int, default=5_000, help="ops per workload per round")
    parser.add_argument("--rounds", type=int, default=30, help="rounds (default 30)")
    parser.add_argument("--backend", default="sortedlist", choices=("sortedlist", "skiplist"))
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args(argv)

    import rankengine

    with tempfile.TemporaryDirectory(prefix="rankengine-ab-board-") as tmp:
        load_ref(args.ref, Path(tmp))
        sys.path.insert(0, tmp)
        try:
            classes = {"ref": __import__(SIDES[0]).Leaderboard}
            classes["control"] = __import__(SIDES[1]).Leaderboard
        finally:
            sys.path.remove(tmp)
        classes["this"] = rankengine.Leaderboard
        rng = random.Random(args.seed)
        pairs = [(f"player:{i}", rng.randrange(SCORE_RANGE)) for i in range(args.size)]
        boards = {}
        for side, cls in classes.items():
            board = cls(backend=args.backend)
            board.set_many(pairs)
            boards[side] = board
        work = workloads(args.size, args.ops, args.seed)
        times: dict[tuple[str, str], list[float]] = {(s, w): [] for s in boards for w in work}
        sides = list(boards)
        for r in range(args.rounds):
            order = sides[r % len(sides) :] + sides[: r % len(sides)]
            for name, run in work.items():
                for side in order:
                    start = time.process_time()
                    run(boards[side])
                    times[(side, name)].append(time.process_time() - start)
    print(
        f"{args.backend} board, N = {args.size:,}, {args.rounds} rounds of {args.ops:,} ops, "
        f"this tree vs {args.ref} (CPU time; median of per-round ratios)"
    )
    for name in work:
        ref = times[("ref", name)]
        this = statistics.median(b / a for a, b in zip(ref, times[("this", name)], strict=True))
        ctrl = statistics.median(c / a for a, c in zip(ref, times[("control", name)], strict=True))
        ns = {s: statistics.median(times[(s, name)]) / args.ops * 1e9 for s in boards}
        print(
            f"  {name:6s} this/ref {this:.3f}   control/ref {ctrl:.3f}   "
            f"ns/op: ref {ns['ref']:.0f}, control {ns['control']:.0f}, this {ns['this']:.0f}"
        )


if __name__ == "__main__":
    main()
