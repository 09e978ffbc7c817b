"""Running test workers on threads that cannot hang the suite.

:func:`run_all` starts every worker, joins each with a generous timeout and
fails the test (rather than hanging it) when one is still running: a
deadlock shows up as a failure naming the stuck threads.  Errors raised in
a worker are re-raised in the test's thread.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Final

#: Seconds to wait for every worker before calling it a deadlock.  Far more
#: than any of these tests needs on a loaded machine; only a hang reaches it.
JOIN_TIMEOUT_S: Final = 60.0


@contextmanager
def busy_switching() -> Iterator[None]:
    """Switch threads as often as CPython allows, to interleave calls finely."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def run_all(workers: list[Callable[[], None]], *, timeout: float = JOIN_TIMEOUT_S) -> None:
    """Run ``workers`` on threads started together; re-raise the first
    error; fail if any is still running ``timeout`` seconds after the start
    (a bound on waiting, not a measurement: only a hang reaches it)."""
    barrier = threading.Barrier(len(workers))
    errors: list[BaseException] = []

    def run(work: Callable[[], None]) -> None:
        try:
            barrier.wait(timeout)
            work()
        except BaseException as exc:  # reported in the main thread
            errors.append(exc)

    threads = [
        threading.Thread(target=run, args=(w,), name=f"worker-{i}", daemon=True)
        for i, w in enumerate(workers)
    ]
    with busy_switching():
        for t in threads:
            t.start()
        deadline = time.monotonic() + timeout
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
    stuck = [t.name for t in threads if t.is_alive()]
    assert stuck == [], f"threads still running after {timeout} s (a deadlock?): {stuck}"
    if errors:
        raise errors[0]
