"""A child process whose threads write to one ``fsync="always"`` board and
report each acknowledged write (the threaded crash test of group commit).

Usage: ``group_child.py DIR THREADS``.  Thread ``t`` sets member
``t{t}m{k % MEMBERS}`` to ``k`` for k = 1, 2, ... and prints
``ack t k`` once the write returned (so once it is durable); the parent
kills the process at a moment of its choosing.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rankengine import Leaderboard

#: Members per thread: each is rewritten every MEMBERS writes.
MEMBERS = 5

_print_lock = threading.Lock()


def writer(board: Leaderboard, t: int) -> None:
    k = 0
    while True:
        k += 1
        board.set(f"t{t}m{k % MEMBERS}", k)
        with _print_lock:
            sys.stdout.write(f"ack {t} {k}\n")
            sys.stdout.flush()


def main(directory: str, threads: int) -> None:
    board = Leaderboard.open(directory, fsync="always", compact_min_bytes=4096)
    for t in range(threads):
        threading.Thread(target=writer, args=(board, t), daemon=True).start()
    threading.Event().wait()  # until killed


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
