"""Child process for tests/test_replayed.py: a board whose snapshot is being
built by a replaying child process when this process SIGKILLs itself.

Usage: ``python tests/replay_child.py DIR MEMBERS WHEN``

Opens ``DIR`` with ``fsync="always"`` and ``snapshot_mode="replay"``, adds
``MEMBERS`` members (``m0`` .. with score ``i``) in one ``set_many``, makes
a first snapshot and prints ``ack -1``; then starts ``compact()`` on a
thread and writes ``set("w{i}", i)`` printing ``ack i`` after each.  Once
the replaying child runs (it prints ``child PID``; read from ``/proc``)
and, with ``WHEN`` = ``writing``, once its file exists, and a few more
writes are acknowledged, it kills itself with SIGKILL.  The parent test
regenerates the writes from the acks.
"""

from __future__ import annotations

import glob
import os
import signal
import sys
import threading

from rankengine import Leaderboard

#: Writes acknowledged after the moment looked for, before the kill.
WRITES_AFTER: int = 3


def children() -> list[int]:
    """This process's child processes (every thread's)."""
    found = []
    for path in glob.glob("/proc/self/task/*/children"):
        with open(path) as f:
            found += [int(pid) for pid in f.read().split()]
    return found


def main() -> None:
    directory, members, when = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    board = Leaderboard.open(
        directory, fsync="always", snapshot_mode="replay", compact_min_bytes=None
    )
    board.set_many([(f"m{i}", i) for i in range(members)])
    board.compact()
    for i in range(25):  # (records for the child to replay, acknowledged)
        board.set(f"w{i}", i)
    print("ack -1", flush=True)
    for i in range(25):
        print(f"ack {i}", flush=True)
    compactor = threading.Thread(target=board.compact, daemon=True)  # type: ignore[attr-defined]
    compactor.start()
    seen = -1
    i = 25
    while True:
        board.set(f"w{i}", i)
        print(f"ack {i}", flush=True)
        if seen < 0:
            pids = children()
            if pids and (
                when == "replaying"
                or any(name.endswith(".replay.tmp.tmp") for name in os.listdir(directory))
            ):
                print(f"child {pids[0]}", flush=True)
                seen = i
        if seen >= 0 and i >= seen + WRITES_AFTER:
            os.kill(os.getpid(), signal.SIGKILL)
        if not compactor.is_alive():
            print("compaction ended before the kill", file=sys.stderr, flush=True)
            sys.exit(2)
        i += 1


if __name__ == "__main__":
    main()
