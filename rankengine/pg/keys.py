"""Append keys: what makes a retried append store nothing twice, and how long.

Every append carries a key chosen by the writer and stored, in the same
transaction as its events, in the ``<table>_batches`` table (see
:mod:`rankengine.pg.store`): an append sent again with a stored key stores
nothing and gets back the sequence numbers the first one was given.  That
table grows by one row per append, so keys older than the store's *key
horizon* (:data:`KEY_HORIZON`, one hour by default) are deleted
(:meth:`EventStore.prune_keys <rankengine.pg.store.EventStore.prune_keys>`,
and automatically every :data:`PRUNE_EVERY` appends of a store).

The rule that keeps a retry from storing twice: a key made here is 16
bytes, the first 8 the time it was made (big-endian milliseconds), the rest
random.  A retry whose key is older than the horizon less
:data:`KEY_MARGIN` is refused (:class:`StaleKeyError`) before anything is
sent, because its first attempt's key may have been pruned: the caller
must look at the table to learn whether those events are stored.  A retry
inside that age finds its key still stored (pruning deletes only keys the
*server* stored more than a horizon ago, and the server stored the key
after the writer made it), so it never stores twice.  Both ages are
elapsed times on one clock each (the writer's, the server's), so a clock
that is off by hours does not matter; only a clock that jumps by more than
the margin between the first attempt and its retry would (an NTP step of
minutes, say).

A key of the caller's own making (not 16 bytes, or a time in the future)
is not checked for age: it is remembered for the horizon like any other.

>>> key = new_key(now_ms=1_000)
>>> len(key), key_time(key)
(16, 1000)
>>> check_key_age(key, horizon=3600.0, now_ms=2_000) is key
True
>>> check_key_age(key, horizon=3600.0, now_ms=1_000 + 3_590_000)  # doctest: +ELLIPSIS
Traceback (most recent call last):
rankengine.pg.keys.StaleKeyError: the append's key was made 3590.0 s ago, past ...
"""

from __future__ import annotations

import os
import time
from typing import Final

__all__ = [
    "KEY_BYTES",
    "KEY_HORIZON",
    "KEY_MARGIN",
    "PRUNE_EVERY",
    "StaleKeyError",
    "check_key_age",
    "key_time",
    "new_key",
]

#: Bytes of an append's key: 8 of time, 8 random (2**64 keys per millisecond:
#: two writers choosing the same one is as likely as a hardware fault).
KEY_BYTES: Final = 16
#: How long a stored key is kept (seconds): far longer than a store's own
#: retries (``retry_seconds``, 10 s by default) and than a caller's retry
#: after a :class:`~rankengine.pg.store.StoreUnavailableError` (a server
#: restart, a failover), short enough that the table stays small (at 200
#: appends a second: 720,000 rows of ~60 bytes).
KEY_HORIZON: Final = 3600.0
#: A retry is refused this long before its key could be pruned (seconds):
#: room for the writer's and the server's clocks to tick apart.
KEY_MARGIN: Final = 60.0
#: A store prunes keys after this many of its own appends (one indexed
#: DELETE of the rows past the horizon: a few hundred of them at 200
#: appends a second, every 50 s or so).
PRUNE_EVERY: Final = 10_000

_TIME_BYTES: Final = 8


class StaleKeyError(ValueError):
    """A retry's key is too old to prove its first attempt was not stored."""


def new_key(now_ms: int | None = None) -> bytes:
    """A new append key: the time (ms, big-endian), then random bytes.

    Runtime complexity: O(1)
    """
    t = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    return t.to_bytes(_TIME_BYTES, "big") + os.urandom(KEY_BYTES - _TIME_BYTES)


def key_time(key: bytes) -> int | None:
    """When a key of :func:`new_key` was made (ms); None for another key."""
    if len(key) != KEY_BYTES:
        return None
    return int.from_bytes(key[:_TIME_BYTES], "big")


def check_key_age(key: bytes, *, horizon: float, now_ms: int | None = None) -> bytes:
    """``key`` if a retry with it is safe; :class:`StaleKeyError` if it is
    older than ``horizon`` less :data:`KEY_MARGIN` (seconds).

    Runtime complexity: O(1)
    """
    made = key_time(key)
    now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    if made is None or made > now:
        return key
    age = (now - made) / 1000
    if age > horizon - KEY_MARGIN:
        raise StaleKeyError(
            f"the append's key was made {age:.1f} s ago, past the store's key horizon "
            f"({horizon:g} s less a {KEY_MARGIN:g} s margin): its first attempt may be "
            "stored and its key pruned; look for its events in the table before "
            "appending them again (with a new key)"
        )
    return key
