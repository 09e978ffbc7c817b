"""Which thread of this process burns CPU, and when: each Python thread's
CPU time sampled every ``period`` seconds (``--thread-cpu`` of
``bench/latency.py``).

A thread that runs Python (or C that keeps the GIL) for long stretches
makes every other thread wait for the interpreter lock: up to one switch
interval (``sys.getswitchinterval()``, 5 ms by default) per turn.  This
sampler shows such a thread: its CPU per period while the serving thread
waits.  It reads each thread's CPU clock (``pthread_getcpuclockid``), so it
costs a few microseconds of GIL per thread per period.

Runtime complexity: O(threads) per sample.

>>> s = ThreadCPU(0.01)
>>> s.start(); s.stop.set(); s.join()
>>> isinstance(s.samples, list)
True
"""

from __future__ import annotations

import threading
import time
from typing import Any

__all__ = ["ThreadCPU", "summarize"]


class ThreadCPU(threading.Thread):
    """Samples every live Python thread's CPU clock each ``period`` seconds
    into :attr:`samples`: ``(t, {thread name: ms of CPU in the period})``,
    and the serving (main) thread's context switches into :attr:`switches`:
    ``(voluntary, involuntary)`` in the period, where a wait for the GIL
    (or any other block) is a voluntary one and a preemption an
    involuntary one (Linux; empty elsewhere)."""

    def __init__(self, period: float = 0.1) -> None:
        super().__init__(name="thread-cpu-sampler", daemon=True)
        self.period = period
        self.stop = threading.Event()
        self.samples: list[tuple[float, dict[str, float]]] = []
        self.switches: list[tuple[int, int]] = []
        self.t0 = time.perf_counter()
        # (made on the thread to watch: the serving one)
        self._status = f"/proc/self/task/{threading.get_native_id()}/status"

    def _switches(self) -> tuple[int, int]:
        try:
            with open(self._status) as f:
                fields = dict(line.split(":", 1) for line in f if "ctxt" in line)
        except OSError:
            return (0, 0)
        return (int(fields["voluntary_ctxt_switches"]), int(fields["nonvoluntary_ctxt_switches"]))

    def _read(self) -> dict[tuple[int, str], float]:
        out: dict[tuple[int, str], float] = {}
        for t in threading.enumerate():
            if t.ident is None:
                continue
            try:
                clock = time.pthread_getcpuclockid(t.ident)
                out[(t.ident, t.name)] = time.clock_gettime(clock)
            except (OSError, ValueError):  # (a thread just gone)
                continue
        return out

    def run(self) -> None:
        last, was = self._read(), self._switches()
        while not self.stop.wait(self.period):
            now, new = self._read(), self._switches()
            self.switches.append((new[0] - was[0], new[1] - was[1]))
            was = new
            delta = {
                f"{name}#{ident % 10000}": round((v - last.get((ident, name), 0.0)) * 1e3, 2)
                for (ident, name), v in now.items()
            }
            self.samples.append((round(time.perf_counter() - self.t0, 3), delta))
            last = now


def summarize(samples: list[tuple[float, dict[str, float]]]) -> dict[str, Any]:
    """Per thread: total CPU ms, the busiest period's ms and when."""
    out: dict[str, Any] = {}
    for t, delta in samples:
        for name, ms in delta.items():
            row = out.setdefault(name, {"total_ms": 0.0, "max_ms": 0.0, "max_at_s": 0.0})
            row["total_ms"] = round(row["total_ms"] + ms, 1)
            if ms > row["max_ms"]:
                row["max_ms"], row["max_at_s"] = ms, t
    return out
