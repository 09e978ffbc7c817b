"""A/B in one run: a durable board's own log against a one-view ledger board.

Usage (from the repository root)::

    python bench/oneview_ab.py                      # N = 10,000, fsync everysec
    python bench/oneview_ab.py --size 100000 --rounds 7 --fsync always

Four boards are built from the same pairs: ``log`` and ``log-control``
(``rankengine.open_board(path)``: the durable board's own log, twice, an
A/A pair whose ratio is what this machine cannot resolve), ``ledger``
(``open_board(path, format="ledger")``: each write an event of a one-view
ledger) and ``ledger-record`` (the same ledger written with
``Ledger.record`` directly: the facade's own share).  They run the same ``durable-mixed`` op list of
``bench/compare.py`` (80% increments, 10% top-10, 10% rank reads), cut in
slices that the boards take in turns, round after round, so the
machine's drift falls on all three alike.  Printed: each board's median
ops/s over rounds and the median of the per-round ratios to ``log``.
This is the measurement behind the default format of a new directory
(``docs/ledger.md``).
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare import INCR, RANK, TOP, make_ops, make_pairs

import rankengine

SLICES = 10


class _Direct:
    """The one-view ledger written with ``Ledger.record`` directly (no
    board facade): what the facade itself costs on top of the ledger."""

    def __init__(self, path: str, fsync: str) -> None:
        self.board = rankengine.open_board(path, fsync=fsync, format="ledger")
        ledger, view = self.board.ledger, self.board.board
        self.incr = lambda member, delta: ledger.record(member, delta, ranks=False)
        self.top, self.rank, self.items = view.top, view.rank, view.items
        self.set_many, self.close = self.board.set_many, self.board.close


def run(board: Any, ops: list[Any]) -> None:
    incr, top, rank = board.incr, board.top, board.rank
    for kind, a, b in ops:
        if kind == INCR:
            incr(a, b)
        elif kind == TOP:
            top(a)
        elif kind == RANK:
            rank(a)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=10_000)
    p.add_argument("--ops", type=int, default=20_000, help="ops per board per round")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--fsync", default="everysec", choices=("everysec", "always", "never"))
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args(argv)
    pairs = make_pairs(args.size, args.seed)
    ops = make_ops("durable-mixed", args.size, args.ops, args.seed)
    step = -(-len(ops) // SLICES)
    slices = [ops[i : i + step] for i in range(0, len(ops), step)]
    with tempfile.TemporaryDirectory() as tmp:
        boards = {
            "log": rankengine.open_board(f"{tmp}/a", fsync=args.fsync),
            "log-control": rankengine.open_board(f"{tmp}/b", fsync=args.fsync),
            "ledger": rankengine.open_board(f"{tmp}/c", fsync=args.fsync, format="ledger"),
            "ledger-record": _Direct(f"{tmp}/d", args.fsync),
        }
        names = list(boards)
        for board in boards.values():
            board.set_many(pairs)
            run(board, ops[: len(ops) // 10])  # warm-up
        rates: dict[str, list[float]] = {name: [] for name in names}
        rng = random.Random(args.seed)
        for _ in range(args.rounds):
            spent = dict.fromkeys(names, 0.0)
            gc.collect()
            for chunk in slices:
                order = names[:]
                rng.shuffle(order)
                for name in order:
                    t0 = time.perf_counter()
                    run(boards[name], chunk)
                    spent[name] += time.perf_counter() - t0
            for name in names:
                rates[name].append(len(ops) / spent[name])
        items = {name: board.items() for name, board in boards.items()}
        for board in boards.values():
            board.close()
    assert len({repr(v) for v in items.values()}) == 1, "the boards disagree"
    print(
        f"durable-mixed, N={args.size}, {args.ops} ops x {args.rounds} rounds, "
        f"fsync={args.fsync} (one process, interleaved slices)"
    )
    for name in names:
        ratio = statistics.median(r / b for r, b in zip(rates[name], rates["log"], strict=True))
        print(f"  {name:<12} {statistics.median(rates[name]):>10,.0f} ops/s   x{ratio:.2f} of log")
    return 0


if __name__ == "__main__":
    sys.exit(main())
