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
``--floor`` (with ``--mode incr``) adds phases of two functions of the
same library shape, called as the increment is (``PIPELINE`` a round trip,
the same arguments): one that returns at once (an ``FCALL``'s floor) and
one whose whole work is one ``ZINCRBY`` on the plain sorted set (the floor
of any increment by a function).  ``--annotate N`` reads each phase's dump
with ``callgrind_annotate`` and adds the N functions of the server that
take the most instructions per increment, by their own instructions
(``self``) and with their callees' (``inclusive``); ``redis-server`` must
then have its symbols (Debian's binary is stripped of the Lua VM's: build
the same source with ``-g`` and pass it as ``--server``), as in::

    python bench/redis_run_instructions.py --mode incr --floor --annotate 40 \
        --server <redis-7.0.15 built with -g>/src/redis-server

Prints JSON: per tie-break and version, the phases' figures (and their
profiles under ``profile``).
"""

from __future__ import annotations

import argparse
import importlib
import json
import random
import re
import shutil
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
#: The floor's functions (``--floor``): an empty one, and one ``ZINCRBY``.
FLOOR_LIBRARY = """#!lua name=run_count_floor
redis.register_function('run_count_empty', function(keys, argv) return 0 end)
redis.register_function('run_count_zincrby', function(keys, argv)
  return redis.call('ZINCRBY', keys[1], 1, argv[2])
end)
"""
#: A callgrind_annotate line: instructions, then the function (file:name [object]).
ANNOTATE_LINE = re.compile(r"^\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(\S.*?)(?:\s+\[(?:.*/)?([^/\]]*)\])?$")
#: The frames on the stack when a phase's counters are zeroed, whose "own"
#: count a dump shows as the whole phase's.
STARTUP = re.compile(r"^(\(below main\)|main|__libc_start_main.*|0x[0-9a-f]+)$")


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
    parser.add_argument("--server", default="redis-server", help="the redis-server binary")
    parser.add_argument("--floor", action="store_true", help="the floor's phases (--mode incr)")
    parser.add_argument("--annotate", type=int, default=0, help="top N functions per phase")
    parser.add_argument("--keep", help="a folder to copy the phases' dumps to")
    opts = parser.parse_args()
    if not 1 <= opts.length <= PIPELINE or (opts.length != PIPELINE and opts.mode != "n"):
        parser.error(f"--length is 1 to {PIPELINE}, and only in run mode (--mode n)")
    if opts.floor and opts.mode != "incr":
        parser.error("--floor is for single calls (--mode incr)")
    port = free_port()
    with tempfile.TemporaryDirectory() as out:
        command = [
            *("valgrind", "--tool=callgrind", f"--callgrind-out-file={out}/cg.%p"),
            *(opts.server, "--port", str(port), "--bind", "127.0.0.1"),
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
            print(json.dumps(measure(r, opts, server.pid, Path(out))))
            if opts.keep:
                Path(opts.keep).mkdir(parents=True, exist_ok=True)
                for dump in Path(out).glob("cg.*"):
                    shutil.copy(dump, opts.keep)
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

    def zincrby(function: str = "") -> None:
        pipe = r.pipeline(transaction=False)
        for m in rng.sample(members, PIPELINE):
            if function:  # (ARGV as the increment's: mode, member, ...)
                pipe.fcall(function, 1, "run-count-plain", "df11", m, "1.0", "i", "", 0)
            else:
                pipe.zincrby("run-count-plain", 1, m)
        pipe.execute()

    natives = {"zincrby": ""}
    if opts.floor:
        r.function_load(FLOOR_LIBRARY, replace=True)
        natives["empty function"] = "run_count_empty"
        natives["function: one ZINCRBY"] = "run_count_zincrby"
    for label, function in natives.items():
        for _ in range(WARM_UP):
            zincrby(function)
        control("-z")
        for _ in range(opts.calls):
            zincrby(function)
        control("-d", f"native/{label}")
        phases.append(("native", label))
    r.delete("run-count-plain")
    for label in packages:
        r.function_delete(f"run_count_{label}")
    if opts.floor:
        r.function_delete("run_count_floor")
    # the dumps, in order (cg.<pid>.<n>), each phase's total instructions
    dumps = sorted(out.glob(f"cg.{pid}.*"), key=lambda f: int(f.name.rsplit(".", 1)[1]))
    report: dict[str, Any] = {"size": opts.size, "mode": opts.mode, "length": opts.length}
    for (group, label), dump in zip(phases, dumps, strict=True):
        total = re.search(r"^summary: (\d+)", dump.read_text(errors="replace"), re.M)
        sent = PIPELINE if group == "native" else PIPELINE - PIPELINE % opts.length
        per = int(total[1]) / (opts.calls * sent) if total else None
        report.setdefault(group, {}).setdefault(label, []).append(round(per or 0))
        if opts.annotate:
            profile = report.setdefault("profile", {}).setdefault(f"{group}/{label}", [])
            profile.append(annotate(dump, opts.annotate, opts.calls * sent))
    return report


def annotate(dump: Path, top: int, increments: int) -> dict[str, list[tuple[str, int]]]:
    """The ``top`` functions of one phase's dump, per increment: by their
    own instructions (``self``), with their callees' (``inclusive``; a
    recursive function's holds each level once), and the own instructions
    summed by source file (``files``: the Lua VM's ``lvm.c``, its collector's
    ``lgc.c``, Redis's ``script_lua.c``, ...; a library without symbols by
    its name).  The frames that were on the stack when the counters were
    zeroed (``main``, the C start-up's) are left out."""
    out: dict[str, list[tuple[str, int]]] = {}
    for key, inclusive in (("self", "no"), ("inclusive", "yes")):
        command = ["callgrind_annotate", "--auto=no", f"--inclusive={inclusive}"]
        text = subprocess.run(
            [*command, "--threshold=100", str(dump)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        rows: list[tuple[str, int]] = []
        files: dict[str, int] = {}
        started = False
        for line in text.splitlines():
            if "file:function" in line:
                started = True
                continue
            match = ANNOTATE_LINE.match(line) if started else None
            if not match:
                continue
            where, _, name = match[2].rpartition(":")
            if STARTUP.match(name):
                continue
            count = int(match[1].replace(",", ""))
            if len(rows) < top:
                rows.append((name, round(count / increments)))
            source = where.rsplit("/", 1)[-1] if where != "???" else match[3] or "???"
            files[source] = files.get(source, 0) + count
        out[key] = rows
        if key == "self":
            ranked = sorted(files.items(), key=lambda item: -item[1])[:top]
            out["files"] = [(source, round(count / increments)) for source, count in ranked]
    return out


if __name__ == "__main__":
    main()
