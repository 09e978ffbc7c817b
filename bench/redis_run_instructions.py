"""Server instructions per increment of a pipeline's run (``INCR_MANY`` in
run mode) and of the batch method, counted by callgrind: a deterministic
figure where timings on a shared machine move by a fifth between runs.

Usage (from the repository root; ``valgrind`` and ``redis-server`` on the
PATH)::

    python bench/redis_run_instructions.py
    PYTHONPATH=<copy> python bench/redis_run_instructions.py --other rankengine_before

It starts its own ``redis-server`` under ``valgrind --tool=callgrind`` on a
free port of 127.0.0.1 (no persistence), fills a board of ``--size``
members for each tie-break (``first``, ``member``), and loads this
checkout's shared Lua sections and ``incr_many.lua`` as Redis functions of
their own (and, with ``--other``, those of a renamed copy of another
version's package, as ``bench/redis_client_ab.py`` takes it: see there).
Each phase zeroes the server's counters (``callgrind_control -z``), makes
``--calls`` calls of ``PIPELINE`` random distinct members each through one
version, and dumps the counters (``-d``): the phase's instructions (the
whole server: its event loop and protocol too) divided by its increments.
The versions take turns, ``--rounds`` phases each; a last phase times
redis-py's pipelined ``ZINCRBY`` on a plain sorted set of the same size.
``--mode 1`` times the batch method's calls (``incr_many``) instead of
runs, ``--mode incr`` single increments (``incr.lua``, the function an
unpipelined ``incr`` calls), ``PIPELINE`` of them per round trip.
``--length K`` (run mode) makes each round trip ``PIPELINE // K`` runs of
``K`` increments instead of one run of ``PIPELINE`` (figures per increment
sent: 99 of them a round trip for ``K`` = 3): ``--length 2``
against ``--mode incr`` is a pair sent as one call against two (what
``RUN_MIN`` in ``rankengine/redis/pipeline.py`` decides).
Prints JSON: per tie-break and version, the phases' figures.
"""

from __future__ import annotations

import argparse
import importlib
import json
import random
import re
import subprocess
import sys
import tempfile
import time
from importlib.resources import files
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE.parent / "tests") not in sys.path:
    sys.path.insert(0, str(HERE.parent / "tests"))

#: Increments per call (as a pipeline of 100 makes one run of them).
PIPELINE = 100
#: Members per set_many when filling.
FILL_CHUNK = 5000
#: Seconds to wait for the server under valgrind to answer (it starts slowly).
START_WAIT = 60
#: Calls made before the first phase (the functions' first run, warm caches).
WARM_UP = 3


def main() -> None:
    import redis
    from redis_service import free_port

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--mode", choices=("n", "1", "incr"), default="n")
    parser.add_argument("--other", help="a second version's package name")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--length", type=int, default=PIPELINE, help="increments per run")
    opts = parser.parse_args()
    if not 1 <= opts.length <= PIPELINE or (opts.length != PIPELINE and opts.mode != "n"):
        parser.error(f"--length is 1 to {PIPELINE}, and only in run mode (--mode n)")
    port = free_port()
    with tempfile.TemporaryDirectory() as out:
        command = [
            *("valgrind", "--tool=callgrind", f"--callgrind-out-file={out}/cg.%p"),
            *("redis-server", "--port", str(port), "--bind", "127.0.0.1"),
            *("--save", "", "--appendonly", "no"),
        ]
        server = subprocess.Popen(
            command,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            r = redis.Redis(port=port, socket_timeout=600)  # (valgrind on a loaded machine is slow)
            deadline = time.monotonic() + START_WAIT
            while True:
                try:
                    r.ping()
                    break
                except redis.ConnectionError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.5)
            print(json.dumps(measure(r, opts, server.pid, Path(out)), indent=1))
        finally:
            server.terminate()
            server.wait()


def measure(r: Any, opts: Any, pid: int, out: Path) -> dict[str, Any]:
    """The phases (see the module docstring), and each one's instructions
    per increment."""
    from rankengine import Leaderboard
    from rankengine.redis.codec import encode_member

    rng = random.Random(opts.seed)
    members = [f"player:{i}" for i in range(opts.size)]
    packages = {"this": "rankengine", **({"other": opts.other} if opts.other else {})}
    for label, package in packages.items():
        sections = importlib.import_module(f"{package}.redis.scripts").library_sections()
        script = "incr.lua" if opts.mode == "incr" else "incr_many.lua"
        body = (files(f"{package}.redis") / "lua" / script).read_text(encoding="utf-8")
        code = "".join(sections) + (
            f"redis.register_function('run_count_{label}', function(keys, argv)\n"
            f"begin(keys, argv)\n{body}\nend)\n"
        )
        r.function_load(f"#!lua name=run_count_{label}\n" + code, replace=True)

    def control(*args: str) -> None:
        subprocess.run(["callgrind_control", *args, str(pid)], check=True, capture_output=True)

    phases: list[tuple[str, str]] = []
    for tie_break in ("first", "member"):
        board = Leaderboard.connect(r, f"run-count-{tie_break}", tie_break=tie_break)
        board.clear()
        for i in range(0, opts.size, FILL_CHUNK):
            board.set_many({m: rng.randrange(10 * opts.size) for m in members[i : i + FILL_CHUNK]})
        mode = board._mode + (f"@{board._stored_sha}" if board._stored_sha else "")
        tag = b"" if tie_break == "first" else b"s"

        def call(label: str, board: Any = board, mode: str = mode, tag: bytes = tag) -> None:
            if opts.mode == "incr":  # (ARGV: mode, member, step, kind, when, clock floor)
                pipe = r.pipeline(transaction=False)
                for m in rng.sample(members, PIPELINE):
                    key = encode_member(m)
                    pipe.fcall(
                        f"run_count_{label}", 1, board._keys[0], mode, key, "1.0", "i", "", 0
                    )
                pipe.execute()
                return
            if opts.length != PIPELINE:  # runs of --length, one round trip
                picked = rng.sample(members, PIPELINE)
                pipe = r.pipeline(transaction=False)
                for at in range(0, PIPELINE - opts.length + 1, opts.length):
                    run: list[Any] = [mode, 0, tag, opts.mode]
                    for m in picked[at : at + opts.length]:
                        run += [encode_member(m), "1.0", "i"]
                    pipe.fcall(f"run_count_{label}", 1, board._keys[0], *run)
                pipe.execute()
                return
            args: list[Any] = [mode, 0, tag, opts.mode]
            for m in rng.sample(members, PIPELINE):
                args += [encode_member(m), "1.0", "i"]
            r.fcall(f"run_count_{label}", 1, board._keys[0], *args)

        for label in packages:
            for _ in range(WARM_UP):
                call(label)
        for turn in range(opts.rounds):
            for label in list(packages)[:: 1 if turn % 2 == 0 else -1]:
                control("-z")
                for _ in range(opts.calls):
                    call(label)
                control("-d", f"{tie_break}/{label}")
                phases.append((tie_break, label))
        board._check()
        board.clear()
    r.delete("run-count-plain")
    for i in range(0, opts.size, FILL_CHUNK):
        chunk = members[i : i + FILL_CHUNK]
        r.zadd("run-count-plain", {m: rng.randrange(10 * opts.size) for m in chunk})

    def zincrby() -> None:
        pipe = r.pipeline(transaction=False)
        for m in rng.sample(members, PIPELINE):
            pipe.zincrby("run-count-plain", 1, m)
        pipe.execute()

    for _ in range(WARM_UP):
        zincrby()
    control("-z")
    for _ in range(opts.calls):
        zincrby()
    control("-d", "native/zincrby")
    phases.append(("native", "zincrby"))
    r.delete("run-count-plain")
    for label in packages:
        r.function_delete(f"run_count_{label}")
    # the dumps, in order (cg.<pid>.<n>), each phase's total instructions
    dumps = sorted(out.glob(f"cg.{pid}.*"), key=lambda f: int(f.name.rsplit(".", 1)[1]))
    report: dict[str, Any] = {"size": opts.size, "mode": opts.mode, "length": opts.length}
    for (group, label), dump in zip(phases, dumps, strict=True):
        total = re.search(r"^summary: (\d+)", dump.read_text(errors="replace"), re.M)
        sent = PIPELINE if group == "native" else PIPELINE - PIPELINE % opts.length
        per = int(total[1]) / (opts.calls * sent) if total else None
        report.setdefault(group, {}).setdefault(label, []).append(round(per or 0))
    return report


if __name__ == "__main__":
    main()
