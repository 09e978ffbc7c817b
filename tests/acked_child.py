"""A child process that reports acknowledged writes on stdout, drained by a
thread so that the parent can kill it at any moment (the crash tests).

The child prints one ``ack ...`` line per acknowledged write; the parent
waits for the first (``first_ack``) before it kills, and reads ``lines``
after the child is gone.  A line without its newline was cut by the kill
and does not count.
"""

from __future__ import annotations

import subprocess
import threading

#: Seconds a finished or killed child may take to exit, and its stdout
#: reader to see the end of the pipe; a hang fails the test instead.
EXIT_TIMEOUT_S = 60
READER_TIMEOUT_S = 10


class AckedChild:
    """``argv`` run with ``env``, its stdout collected line by line."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, env=env, text=True)
        self.lines: list[str] = []
        self.first_ack = threading.Event()
        self.reader = threading.Thread(target=self._drain, daemon=True)
        self.reader.start()

    def _drain(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            if line.startswith("ack"):
                self.first_ack.set()
        self.first_ack.set()  # the child ended without one: do not wait forever

    def finish(self) -> int:
        """Wait for the child to exit; its exit code (negative: the signal)."""
        code = self.proc.wait(timeout=EXIT_TIMEOUT_S)
        self.reader.join(timeout=READER_TIMEOUT_S)
        return code
