"""A/B: an index backend as it is now against the same backend at a git ref.

Usage (from the repository root)::

    python bench/ab_index.py                        # skiplist: main vs this tree, --quick
    python bench/ab_index.py --ref HEAD~1 --backend sortedlist -- --workloads mixed,rank

The ``rankengine/index/`` package of ``--ref`` is read with ``git show``
into a private package (its ``rankengine.index`` imports renamed: the index
package imports nothing else of rankengine), and both versions join
``bench/compare.py`` as two more systems, ``<backend>@<ref>`` and
``<backend>@work``, each a :class:`rankengine.Leaderboard` of this tree
over that version of the index, with node heights drawn from the same seed.
So the A/B runs in one process, interleaved slice by slice with the peers
(``pyskiplist`` and the naive recipe are included for the ratios), and only
the index differs.  Arguments after ``--`` go to ``bench/compare.py``
(default: ``--quick --workloads mixed,rank,top10``).

``--opcodes`` counts instead of timing: the bytecode instructions each
version executes per index operation (``sys.settrace`` with opcode events),
on the same list.  A count is deterministic, so it shows a difference of a
few percent that the noise of a shared machine hides in the timings; it
does not weigh instructions (a global look-up costs more than a constant).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # run from a checkout without installing
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import compare  # noqa: E402
import peers  # noqa: E402

#: The seed of every A/B board's node heights (skip list): both versions
#: draw the same heights, so they hold the same shape.
SEED = 2024

#: The index class each backend name stands for, in ``rankengine.index``.
CLASSES = {"skiplist": ("skiplist", "SkipList"), "sortedlist": ("sortedlist", "SortedListIndex")}

#: The private package name the ref's ``rankengine/index`` is loaded as.
REF_PACKAGE = "_ab_ref_index"


def load_ref_index(ref: str, into: Path) -> None:
    """Write ``rankengine/index/*.py`` at ``ref`` under ``into/REF_PACKAGE``,
    its own imports renamed, and put ``into`` on ``sys.path``."""
    names = subprocess.run(
        ["git", "ls-tree", "--name-only", ref, "rankengine/index/"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    package = into / REF_PACKAGE
    package.mkdir()
    for name in names:
        if not name.endswith(".py"):
            continue
        text = subprocess.run(
            ["git", "show", f"{ref}:{name}"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
        (package / Path(name).name).write_text(text.replace("rankengine.index", REF_PACKAGE))
    sys.path.insert(0, str(into))


def factory(module: str, cls: str) -> Callable[[], Any]:
    """A no-argument factory of ``module.cls`` (seeded for a skip list)."""
    index_class = getattr(__import__(module, fromlist=[cls]), cls)
    if cls == "SkipList":
        return lambda: index_class(random.Random(SEED))
    return index_class  # type: ignore[no-any-return]


def system(name: str, make_index: Callable[[], Any]) -> type[peers.System]:
    """A ``compare.py`` system: a Leaderboard of this tree over ``make_index``."""

    class AB(peers.RankEngine):
        unsupported = frozenset({"recovery", "durable-mixed"})

        def __init__(self) -> None:
            from rankengine import Leaderboard

            self.board = Leaderboard(backend=make_index)
            self._bind()

    AB.name = name
    AB.__name__ = AB.__qualname__ = f"AB_{name}"
    return AB


#: --opcodes: the list size and the number of operations counted.
OPCODE_N = 5_000
OPCODE_OPS = 300


def opcodes(ref: Callable[[], Any], work: Callable[[], Any]) -> str:
    """Bytecode instructions per operation of the index, ref and work."""
    rng = random.Random(SEED)
    rows = sorted((rng.randrange(10**6), i, f"p{i}") for i in range(OPCODE_N))
    keys = [rows[rng.randrange(OPCODE_N)][:2] for _ in range(OPCODE_OPS)]
    count = [0]

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "opcode":
            count[0] += 1
        return local

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        if "index" not in frame.f_code.co_filename:
            return None
        frame.f_trace_opcodes = True
        return local

    def position(index: Any) -> None:
        for key in keys:
            index.position(*key)

    def top10(index: Any) -> None:
        n = len(index)
        for _ in keys:
            list(index.iter_range(n - 10, n, reverse=True))

    def increment(index: Any) -> None:  # a move ahead, and back
        for p, t in keys:
            index.move(p, t, p + 37, t)
            index.move(p + 37, t, p, t)

    def insert_remove(index: Any) -> None:
        for j, (p, _) in enumerate(keys):
            index.insert(p, -1 - j, "x")
        for j, (p, _) in enumerate(keys):
            index.remove(p, -1 - j)

    def entry(index: Any) -> None:
        for j in range(len(keys)):
            index.entry((j * 7919) % OPCODE_N)

    lines = [f"\nopcodes per operation, N = {OPCODE_N:,}: ref, work, work / ref"]
    for run in (position, top10, increment, insert_remove, entry):
        counts = []
        for make in (ref, work):
            index = make()
            index.build(rows)
            count[0] = 0
            sys.settrace(tracer)
            try:
                run(index)
            finally:
                sys.settrace(None)
            index._check()
            counts.append(count[0] / OPCODE_OPS)
        a, b = counts
        lines.append(f"{run.__name__:14} {a:8.1f} {b:8.1f} {b / a:7.3f}")
    return "\n".join(lines)


def summary(runs: list[dict[str, Any]], work: str, ref: str, peer: str) -> str:
    """work / ref and work / peer, median over median, per (workload, N)."""
    median = {
        (r["workload"], r["n"], r["system"]): r["ops_per_s"]["median"]
        for r in runs
        if r["ops_per_s"] is not None
    }
    lines = [f"\n{'workload':14} {'N':>9} {work + ' / ' + ref:>28} {work + ' / ' + peer:>28}"]
    for workload, n in sorted({(w, n) for w, n, _ in median}):
        mine = median.get((workload, n, work))
        if mine is None:
            continue
        cells = [
            f"{mine / median[workload, n, other]:.3f}x" if (workload, n, other) in median else "-"
            for other in (ref, peer)
        ]
        lines.append(f"{workload:14} {n:>9,} {cells[0]:>28} {cells[1]:>28}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    split = argv.index("--") if "--" in argv else len(argv)
    ours, theirs = argv[:split], argv[split + 1 :]
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ref", default="main", help="the git ref to compare with (default main)")
    p.add_argument("--backend", choices=sorted(CLASSES), default="skiplist")
    p.add_argument("--opcodes", action="store_true", help="count bytecodes instead of timing")
    args = p.parse_args(ours)
    module, cls = CLASSES[args.backend]
    with tempfile.TemporaryDirectory() as tmp:
        load_ref_index(args.ref, Path(tmp))
        if args.opcodes:
            ref_index = factory(f"{REF_PACKAGE}.{module}", cls)
            print(opcodes(ref_index, factory(f"rankengine.index.{module}", cls)))
            return 0
        ref_name = f"{args.backend}@{args.ref}"
        work_name = f"{args.backend}@work"
        added = {
            ref_name: system(ref_name, factory(f"{REF_PACKAGE}.{module}", cls)),
            work_name: system(work_name, factory(f"rankengine.index.{module}", cls)),
        }
        peers.PYTHON_SYSTEMS.update(added)
        peers.ALL_SYSTEMS = (*peers.ALL_SYSTEMS, *added)
        peer = "pyskiplist" if args.backend == "skiplist" else "sortedcontainers-naive"
        rest = theirs or ["--quick", "--workloads", "mixed,rank,top10"]
        if not any(a.startswith("--systems") for a in rest):
            rest = [*rest, "--systems", f"{ref_name},{work_name},{peer}"]
        if not any(a.startswith("--json") for a in rest):
            rest = [*rest, "--json", str(Path(tmp) / "ab.json")]
        json_path = Path(rest[rest.index("--json") + 1]) if "--json" in rest else None
        code = compare.main(rest)
        if json_path is not None and json_path.exists():
            runs = json.loads(json_path.read_text())["runs"]
            print(summary(runs, work_name, ref_name, peer))
        return code


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
