"""The cycle collector paused while a structure is built in bulk.

A bulk build makes a million new container objects (a skip list's nodes,
a board's rows, a snapshot's columns).  Each allocation counts towards
the collector's next pass, and each pass re-scans everything alive that is
not yet in the oldest generation, the growing structure included: the
passes add up to several times the build itself (measured here: a skip
list of 1,000,000 string members ~7 s of CPU with the collector on, ~1.2 s
with it paused; a durable board's snapshot load ~3x, its replay ~2x).  A
build makes no cycles to free, so pausing the collector loses nothing::

    collector on     build ##|gc|###|gc.....|####|gc..........|##
    collector off    build ##########

The collector's state is restored afterwards, whatever the build did:
a caller that had turned it off keeps it off.

>>> import gc
>>> with collector_paused():
...     gc.isenabled()
False
>>> gc.isenabled()
True
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]


@contextmanager
def collector_paused() -> Iterator[None]:
    """Turn the cycle collector off for the ``with`` block, then restore it.

    Runtime complexity: O(1)

    Restores the state the collector had on entry (on only if it was on),
    also when the block raises.  Not a lock: another thread that turns the
    collector on meanwhile turns it on for everyone (``gc`` state is
    process-wide).

    >>> import gc
    >>> gc.disable()
    >>> with collector_paused():
    ...     pass
    >>> gc.isenabled()
    False
    >>> gc.enable()
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
