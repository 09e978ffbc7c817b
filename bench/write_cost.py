"""What the log costs a write: instructions per operation, in memory and durable.

Usage (from the repository root)::

    python bench/write_cost.py                        # counts, N = 10**6
    python bench/write_cost.py -n 100000 --ops 40000  # quicker
    python bench/write_cost.py --code OLD_CHECKOUT    # beside another checkout
    python bench/write_cost.py --rounds 5             # closed-loop rates instead

The operations are ``bench/latency.py``'s: its seeded board of ``N``
members, its mix (increments, 20% of them new players; rank, top 10,
around-me) and its systems, ``rankengine-sortedlist`` (in memory) and
``rankengine-sortedlist-fsync-everysec`` (durable, built with a snapshot as
the latency bench builds it).

* **Counts** (the default): each system runs in a fresh process under
  ``valgrind --tool=cachegrind`` twice, with ``--ops`` and twice as many
  operations after the same build and warm-up; the difference of the two
  instruction totals over ``--ops`` is the instructions per operation, the
  build and the start-up cancelling out.  Deterministic (a fixed seed and
  ``PYTHONHASHSEED=0``; ``gc.freeze()`` after the build, so that a full
  collection in one run and not the other does not count), hence usable on
  a loaded machine, where times are not.  Valgrind traces only the serving
  process: the snapshot of the durable build is written by a fresh process
  (``snapshot_mode`` "replay" at 10**6), which is not counted, and its
  fsync thread wakes once a second (a few thousand instructions a wake-up).
* **Rates** (``--rounds R``): operations per second back to back
  (``latency.closed_loop_rate``), both systems built in one fresh process
  and run in turns of :data:`BURST_S` until each has had ``--seconds``, so
  that a change in the machine's load falls on both alike; one such
  process per checkout (the ``--code`` one first) in every round.  The
  durable/in-memory ratio is reported: its median over the rounds, and
  its range.

JSON out (``--json``)::

    {"n": int, "ops": int, "mode": "counts" | "rates", "env": {...},
     "rows": [{"code": "current" | str, "system": str,
               "per_op": float | null,             # instructions (counts)
               "rates": [float]}]}                 # ops/s per round (rates)

No figure here is a pass/fail test; see ``docs/performance.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))  # run from a checkout without installing

#: The two systems compared (``bench/latency.py`` names).
SYSTEMS: tuple[str, ...] = ("rankengine-sortedlist", "rankengine-sortedlist-fsync-everysec")

#: Operations of the warm-up (every op kind, as in ``bench/latency.py``).
WARM_UP = 5000

#: The child that builds both systems and measures their rates in turns.
PAIR = "pair"

#: Seconds of each turn of :func:`alternate` (a turn runs whole chunks of
#: 1,000 operations, ~10 ms, past it).
BURST_S = 0.1

#: Python's hash seed in the counted processes: string hashes, hence dict
#: layouts, are then the same in every run.
HASH_SEED = "0"

_TOTAL = re.compile(r"I\s+refs:\s+([\d,]+)")


def child(args: argparse.Namespace) -> dict[str, Any]:
    """Build ``args.child`` (or, for :data:`PAIR`, both systems), warm it up,
    and run ``args.ops`` operations (or measure the closed-loop rates of
    both systems, in turns: :func:`alternate`)."""
    if args.code:
        sys.path.insert(0, args.code)
    import latency

    rng = random.Random(args.seed)
    pairs = [(f"player:{i}", rng.randrange(latency.SCORE_RANGE)) for i in range(args.n)]
    ops = latency.make_ops(args.n, args.seed)
    names = SYSTEMS if args.child == PAIR else (args.child,)
    calls = []
    with contextlib.ExitStack() as stack:
        for name in names:
            system = latency.make_system(name, stack)
            stack.callback(system.close)
            system.build(pairs)
            calls.append(latency.dispatcher(system))
            for op in ops[:WARM_UP]:
                calls[-1](*op)
        del pairs
        gc.collect()
        gc.freeze()
        if args.child == PAIR:
            return {"rates": dict(zip(names, alternate(latency, calls, ops, args), strict=True))}
        call = calls[0]
        mask = len(ops) - 1
        new = latency.NEW
        for i in range(args.ops):
            kind, a, b = ops[i & mask]
            if kind == new:
                a = f"fresh:{i}"
            call(kind, a, b)
    return {"system": args.child}


def alternate(latency: Any, calls: list[Any], ops: Any, args: argparse.Namespace) -> list[float]:
    """Closed-loop operations per second of each call, measured in turns of
    :data:`BURST_S` until each has run ``args.child_seconds``: a change in
    the machine's load falls on all of them alike."""
    done = [0.0] * len(calls)
    for burst in range(max(1, round(args.child_seconds / BURST_S))):
        for k, call in enumerate(calls):
            done[k] += latency.closed_loop_rate(call, ops, BURST_S, new_prefix=f"b{burst}")
    return [total / max(1, round(args.child_seconds / BURST_S)) for total in done]


def _child_cmd(args: argparse.Namespace, system: str, code: str | None) -> list[str]:
    cmd = [sys.executable, __file__, "--child", system, "-n", str(args.n), "--seed", str(args.seed)]
    if code:
        cmd += ["--code", code]
    return cmd


def instructions(args: argparse.Namespace, system: str, code: str | None, ops: int) -> int:
    """Instructions cachegrind counts in one child run of ``ops`` operations."""
    env = dict(os.environ, PYTHONHASHSEED=HASH_SEED)
    cmd = [
        "valgrind",
        "--tool=cachegrind",
        "--cache-sim=no",
        "--cachegrind-out-file=/dev/null",
        *_child_cmd(args, system, code),
        "--ops",
        str(ops),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    found = _TOTAL.search(proc.stderr)
    if proc.returncode != 0 or found is None:
        raise RuntimeError(f"{system}: valgrind failed: {proc.stderr.strip()[-500:]}")
    return int(found.group(1).replace(",", ""))


def rates(args: argparse.Namespace, code: str | None) -> dict[str, float]:
    """Closed-loop operations per second of both systems, in turns in one
    fresh child."""
    cmd = [*_child_cmd(args, PAIR, code), "--child-seconds", repr(args.seconds)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{code or 'current'}: {proc.stderr.strip()[-500:]}")
    return dict(json.loads(proc.stdout)["rates"])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-n", type=int, default=1_000_000, help="members (default 10**6)")
    p.add_argument("--ops", type=int, default=40_000, help="operations counted (default 40,000)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--code", help="also measure the rankengine package of the checkout in CODE")
    p.add_argument("--rounds", type=int, default=0, help="closed-loop rates, this many rounds")
    p.add_argument("--seconds", type=float, default=3.0, help="seconds per rate (default 3)")
    p.add_argument("--json", help="write the results here")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--child-seconds", type=float, default=0.0, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(child(args)))
        return 0
    codes: list[str | None] = [str(Path(args.code).resolve())] if args.code else []
    codes.append(None)
    rows = [
        {"code": c or "current", "system": s, "per_op": None, "rates": []}
        for c in codes
        for s in SYSTEMS
    ]
    data: dict[str, Any] = {
        "n": args.n,
        "ops": args.ops,
        "mode": "rates" if args.rounds else "counts",
        "env": {
            "load_average": list(os.getloadavg()),
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        },
        "rows": rows,
    }
    if args.rounds:
        for r in range(args.rounds):
            for code in codes:
                measured = rates(args, code)
                for row in rows:
                    if row["code"] == (code or "current"):
                        row["rates"].append(round(measured[row["system"]], 1))
            print(
                f"round {r + 1}: " + ", ".join(f"{x['rates'][-1]:,.0f}" for x in rows),
                file=sys.stderr,
            )
    else:
        if shutil.which("valgrind") is None:
            print("valgrind is not installed", file=sys.stderr)
            return 1
        for row in rows:
            code = None if row["code"] == "current" else row["code"]
            once = instructions(args, row["system"], code, args.ops)
            twice = instructions(args, row["system"], code, 2 * args.ops)
            row["per_op"] = round((twice - once) / args.ops, 1)
            print(
                f"{row['code']} {row['system']}: {row['per_op']:,.0f} instructions/op",
                file=sys.stderr,
            )
    data["env"]["load_average_end"] = list(os.getloadavg())
    print(table(data))
    if args.json:
        Path(args.json).write_text(json.dumps(data, indent=1) + "\n")
    return 0


def table(data: dict[str, Any]) -> str:
    """Markdown: a row per checkout, in-memory and durable side by side, and their ratio."""
    lines = ["| code | in memory | durable | durable / in memory |", "|---|---:|---:|---:|"]
    by_code: dict[str, dict[str, Any]] = {}
    for row in data["rows"]:
        by_code.setdefault(row["code"], {})[row["system"]] = row
    for code, pair in by_code.items():
        mem, dur = (pair[s] for s in SYSTEMS)
        if data["mode"] == "counts":
            a, b = mem["per_op"], dur["per_op"]
            lines.append(f"| {code} | {a:,.0f} | {b:,.0f} | {b / a:.3f} |")
        else:
            ratios = sorted(d / m for m, d in zip(mem["rates"], dur["rates"], strict=True))
            a, b = sorted(mem["rates"]), sorted(dur["rates"])
            mid = len(ratios) // 2
            lines.append(
                f"| {code} | {a[mid]:,.0f}/s | {b[mid]:,.0f}/s | {ratios[mid]:.3f} "
                f"({ratios[0]:.3f}-{ratios[-1]:.3f}) |"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main())
