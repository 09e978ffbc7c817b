"""Child process for tests/test_forked.py: a board whose snapshot is being
written by a forked child when this process SIGKILLs itself.

Usage: ``python tests/fork_child.py DIR MEMBERS``

Opens ``DIR`` with ``fsync="always"`` and ``snapshot_mode="fork"``, adds
``MEMBERS`` members (``m0`` .. with score ``i``) in one ``set_many`` and
prints ``ack -1``; then starts ``compact()`` on a thread and writes
``set("w{i}", i)`` printing ``ack i`` after each.  Once the forked child's
temporary snapshot file exists and a few more writes are acknowledged, it
kills itself with SIGKILL (the forked child is then still writing; it
prints ``seen`` when it saw the file, and kills itself all the same if the
compaction ended before any look saw it).  The
parent regenerates the writes from the acks.
"""

from __future__ import annotations

import os
import signal
import sys
import threading

from rankengine import Leaderboard

#: Writes acknowledged after the child's file appeared, before the kill.
WRITES_AFTER: int = 20


def main() -> None:
    directory, members = sys.argv[1], int(sys.argv[2])
    board = Leaderboard.open(
        directory, fsync="always", snapshot_mode="fork", compact_min_bytes=None
    )
    board.set_many([(f"m{i}", i) for i in range(members)])
    print("ack -1", flush=True)
    compactor = threading.Thread(target=board.compact, daemon=True)  # type: ignore[attr-defined]
    compactor.start()
    seen = -1
    i = 0
    while True:
        board.set(f"w{i}", i)
        print(f"ack {i}", flush=True)
        if seen < 0 and any(name.endswith(".tmp") for name in os.listdir(directory)):
            seen = i
            print("seen", flush=True)
        if seen < 0 and not compactor.is_alive():
            seen = i  # (the child was done before a look saw its file: kill anyway)
        if seen >= 0 and i >= seen + WRITES_AFTER:
            os.kill(os.getpid(), signal.SIGKILL)
        i += 1


if __name__ == "__main__":
    main()
