"""Trending over partitions: P top-K trackers, keys routed by hash, in this
process or in worker processes.

:class:`PartitionedTopK` keeps ``P`` partitions, each a
:class:`~rankengine.trending.topk.TopK`; keys are routed to partitions by a
deterministic hash, so each key is counted by exactly one partition.  Events
are pre-aggregated in one buffer and handed to the partitions in batches,
either in this process or in worker processes (:mod:`multiprocessing`)
running the same code.  A snapshot merges the partitions with
:func:`~rankengine.trending.merge.merge_topk`: sketches summed, the union of
all local candidates re-queried.  It is a
:class:`~rankengine.trending.windows.WindowSource`, so
:class:`~rankengine.trending.windows.TumblingWindows` can fill it.

::

    events ──► buffer (pre-aggregated) ──► route(key) ──► partition 0: TopK
                                                      ──► partition 1: TopK
    snapshot() = merge_topk(partition 0, partition 1, ...)
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import warnings
from collections.abc import Iterable, Mapping
from multiprocessing.connection import Connection
from typing import Any, Final

from rankengine.board.checks import check_flag
from rankengine.trending.hashing import Key, check_count_map, check_key, count_keys, make_indexer
from rankengine.trending.merge import merge_topk
from rankengine.trending.sketch import check_positive
from rankengine.trending.topk import TopK

__all__ = ["FLUSH_EVENTS", "ROUTE_SEED", "PartitionedTopK"]

ROUTE_SEED: Final = 0x7472656E64696E67
"""Seed of the partition-routing hash ("trending" in ASCII): it must differ
from sketch seeds, or a partition would see only keys of a few columns."""

FLUSH_EVENTS: Final = 100_000
"""Buffered events before a flush to the partitions: large enough that the
buffer pre-aggregates hot keys (a Zipf(1.1) batch of 100k has ~24k distinct
keys), small enough to bound the buffer's memory."""


# -- partitioned pipeline --------------------------------------------------------


def _serve(conn: Connection, config: dict[str, Any]) -> None:
    """Worker process main loop: one partition's :class:`TopK`, driven by messages.

    Messages are ``(op, payload)``: ``counts`` (a dict, no reply),
    ``snapshot`` and ``roll`` (reply: the tracker's bytes; ``roll`` then
    starts an empty tracker) and ``stop``.  An error is sent back as
    ``("error", text)``: at once when a request fails (the parent is
    waiting for its reply), else on the next request.
    """
    tracker = TopK(**config)
    failure: str | None = None
    while True:
        try:
            op, payload = conn.recv()
        except EOFError:  # the parent closed its end, or died: nothing left to serve
            break
        try:
            if op == "counts":
                tracker.add_counts(payload)
                continue
            if op == "stop":
                break
            if failure is not None:
                conn.send(("error", failure))
                failure = None
            elif op == "snapshot":
                conn.send(("ok", tracker.to_bytes()))
            elif op == "roll":
                conn.send(("ok", tracker.to_bytes()))
                tracker = tracker.empty_like()
            else:  # pragma: no cover - protocol error
                conn.send(("error", f"unknown op {op!r}"))
        except Exception as exc:  # reported to the parent
            failure = f"{type(exc).__name__}: {exc}"
            if op != "counts":  # a request: its reply is awaited now
                conn.send(("error", failure))
                failure = None
    conn.close()


class PartitionedTopK:
    """``P`` top-k partitions behind a hash router, merged on demand.

    >>> with PartitionedTopK(4, k=2, width=64, depth=2) as pipe:
    ...     pipe.add_many("mississippi")
    ...     [(item.key, item.count) for item in pipe.snapshot().top()]
    [('i', 4), ('s', 4)]
    """

    __slots__ = (
        "_buffer",
        "_buffered",
        "_conns",
        "_parts",
        "_pid",
        "_procs",
        "_route",
        "_stopped",
        "_totals",
        "config",
        "flush_events",
        "limit",
        "partitions",
    )

    def __init__(
        self,
        partitions: int,
        k: int = 10,
        *,
        processes: bool = False,
        mp_context: str = "spawn",
        flush_events: int = FLUSH_EVENTS,
        route_seed: int = ROUTE_SEED,
        **tracker_options: Any,
    ) -> None:
        """Start ``partitions`` trackers (in worker processes if ``processes``).

        Runtime complexity: O(P * width * depth), plus process start-up

        :param partitions: number of partitions P >= 1
        :param k: top-k size of each partition and of the merge
        :param processes: run each partition in its own process
        :param mp_context: :mod:`multiprocessing` start method for workers
        :param flush_events: buffered events that trigger a flush
        :param route_seed: seed of the routing hash
        :param tracker_options: further :class:`TopK` options (width, depth, ...)
        """
        check_positive(partitions, "partitions")
        check_positive(flush_events, "flush_events")
        processes = check_flag(processes, "processes")  # "no" started workers
        template = TopK(k, **tracker_options)
        self.config = template.config()
        self.partitions = partitions
        self.flush_events = flush_events
        self.limit = template._limit
        self._route = make_indexer(route_seed, 1, partitions)
        self._buffer: dict[Key, int] = {}
        self._buffered = 0
        self._totals = [0] * partitions
        self._parts: list[TopK] = []
        self._conns: list[Connection] = []
        self._procs: list[Any] = []
        #: close() stopped the worker processes (in-process, close is a no-op)
        self._stopped = False
        #: the process that started the workers (see __del__)
        self._pid = os.getpid()
        if not processes:
            self._parts = [TopK(**self.config) for _ in range(partitions)]
            return
        ctx: Any = multiprocessing.get_context(mp_context)
        try:
            for _ in range(partitions):
                parent, child = ctx.Pipe()
                self._conns.append(parent)
                try:
                    proc = ctx.Process(target=_serve, args=(child, self.config), daemon=True)
                    proc.start()
                finally:
                    child.close()
                self._procs.append(proc)
        except BaseException:
            self.close()  # (the workers started already: stopped, not left behind)
            raise

    @property
    def processes(self) -> bool:
        """Whether partitions run in worker processes.

        Runtime complexity: O(1)

        >>> PartitionedTopK(2, k=1, width=8, depth=1).processes
        False
        """
        return bool(self._procs)

    @property
    def capacity(self) -> int:
        """The most candidates a merged tracker holds (and reports).

        Runtime complexity: O(1)

        >>> PartitionedTopK(2, k=2, width=8, depth=1).capacity
        18
        """
        return int(self.config["capacity"])

    def owner(self, key: Key) -> int:
        """The partition that counts ``key``.

        Runtime complexity: O(len(key))

        >>> pipe = PartitionedTopK(8, k=1, width=16, depth=1)
        >>> pipe.owner("spam") == PartitionedTopK(8, k=1, width=16, depth=1).owner("spam")
        True
        """
        return self._route(key)[0]

    # -- ingestion ----------------------------------------------------------------

    def add(self, key: Key, n: int = 1) -> None:
        """Buffer ``n`` occurrences of ``key`` (flushed every ``flush_events``).

        Runtime complexity: O(1) amortised (O(len(key)) for an ``int`` check)

        >>> pipe = PartitionedTopK(2, k=1, width=16, depth=1)
        >>> pipe.add("a", 0)
        Traceback (most recent call last):
        ...
        ValueError: n must be a positive int, got 0

        :param key: a supported key
        :param n: positive count
        """
        if type(n) is not int or n < 1:
            raise ValueError(f"n must be a positive int, got {n!r}")
        t = type(key)
        if t is not str and t is not bytes:
            check_key(key)
        self._reserve(n)
        buffer = self._buffer
        buffer[key] = buffer.get(key, 0) + n
        self._buffered += n
        if self._buffered >= self.flush_events:
            self.flush()

    def add_many(self, keys: Iterable[Key]) -> None:
        """Buffer one occurrence of each key (validated first: on error nothing changes).

        Runtime complexity: O(n)

        >>> pipe = PartitionedTopK(2, k=1, width=8, depth=1)
        >>> pipe.add_many(["a", "b", "a"])
        >>> pipe.snapshot().top()
        [TopItem(key='a', count=2, error=0)]

        :param keys: iterable of keys
        """
        self.add_counts(count_keys(keys))

    def add_counts(self, counts: Mapping[Key, int]) -> None:
        """Buffer pre-aggregated counts (validated first: on error nothing changes).

        Runtime complexity: O(d) for d keys

        >>> pipe = PartitionedTopK(2, k=1, width=16, depth=1)
        >>> pipe.add_counts({"a": 1, 2.5: 1})
        Traceback (most recent call last):
        ...
        TypeError: unsupported key type float: keys must be str, bytes or int

        :param counts: mapping key -> positive int
        """
        check_count_map(counts)
        for key, n in counts.items():
            if type(n) is not int or n < 1:
                raise ValueError(f"count of {key!r} must be a positive int, got {n!r}")
        self._reserve(sum(counts.values()))
        buffer = self._buffer
        if not buffer:
            buffer.update(counts)
        else:
            get = buffer.get
            for key, n in counts.items():
                buffer[key] = get(key, 0) + n
        self._buffered += sum(counts.values())
        if self._buffered >= self.flush_events:
            self.flush()

    def _reserve(self, n: int) -> None:
        """Raise OverflowError (changing nothing) if ``n`` more events pass the limit.

        The limit applies to all partitions together (no partition can then
        pass its own counter limit, wherever the keys are routed).
        """
        self._check_open()
        if sum(self._totals) + self._buffered + n > self.limit:
            raise OverflowError(
                f"the pipeline would count {sum(self._totals) + self._buffered + n} events "
                f"in one window, past the counter limit {self.limit}: use "
                "counter_bits=64 or shorter windows"
            )

    def _check_open(self) -> None:
        """Raise ``ValueError`` (changing nothing) once :meth:`close` has
        stopped the worker processes: nothing is left to count with."""
        if self._stopped:
            raise ValueError("this PartitionedTopK is closed: its worker processes have stopped")

    def _send(self, p: int, message: tuple[str, Any]) -> None:
        """Send ``message`` to partition ``p``'s worker (see :meth:`_dead`)."""
        try:
            self._conns[p].send(message)
        except (OSError, EOFError) as exc:
            raise self._dead(p) from exc

    def _recv(self, p: int) -> Any:
        """Partition ``p``'s reply (see :meth:`_dead`)."""
        try:
            return self._conns[p].recv()
        except (OSError, EOFError) as exc:
            raise self._dead(p) from exc

    def _dead(self, p: int) -> RuntimeError:
        """The error for a worker whose pipe broke: it has exited, and its
        counts with it, so no later answer of this pipeline can be right."""
        proc = self._procs[p]
        proc.join(timeout=1)
        return RuntimeError(
            f"partition {p}'s worker process has stopped (exit code {proc.exitcode}) "
            "and its counts are lost: close() this pipeline and start a new one.  "
            "With the spawn start method each worker imports the main script again: "
            "start the pipeline under if __name__ == '__main__':"
        )

    def flush(self) -> None:
        """Route the buffered counts to their partitions.

        Each distinct key is hashed once per flush.

        Runtime complexity: O(d * depth) for d distinct buffered keys

        >>> pipe = PartitionedTopK(2, k=1, width=8, depth=1)
        >>> pipe.add("a", 2); pipe.flush()
        >>> sum(t.total for t in pipe.partition_trackers())
        2
        """
        if not self._buffer:
            return
        self._check_open()
        route = self._route
        groups: list[dict[Key, int]] = [{} for _ in range(self.partitions)]
        for key, n in self._buffer.items():
            groups[route(key)[0]][key] = n
        sums = [sum(group.values()) for group in groups]
        for p, group in enumerate(groups):
            if not group:
                continue
            self._totals[p] += sums[p]
            if self._conns:
                self._send(p, ("counts", group))
            else:
                self._parts[p].add_counts(group)
        self._buffer = {}
        self._buffered = 0

    # -- results ------------------------------------------------------------------

    def _collect(self, op: str) -> list[TopK]:
        """Flush, then fetch every partition's tracker (``roll`` also resets them)."""
        self._check_open()
        self.flush()
        if not self._conns:
            parts = self._parts
            if op == "roll":
                self._parts = [part.empty_like() for part in parts]
        else:
            for p in range(self.partitions):
                self._send(p, (op, None))
            # Read every reply before raising: one left in its pipe would be
            # taken for the answer to the next request.
            replies = [self._recv(p) for p in range(self.partitions)]
            for p, (status, payload) in enumerate(replies):
                if status != "ok":
                    raise RuntimeError(f"partition {p} failed: {payload}")
            parts = [TopK.from_bytes(payload) for _, payload in replies]
        if op == "roll":
            self._totals = [0] * self.partitions
        return parts

    def partition_trackers(self) -> list[TopK]:
        """Each partition's tracker (copies when partitions are processes).

        Runtime complexity: O(P * width * depth)

        >>> [t.total for t in PartitionedTopK(2, k=1, width=8, depth=1).partition_trackers()]
        [0, 0]
        """
        return self._collect("snapshot")

    def merge(self, parts: list[TopK]) -> TopK:
        """Merge partition trackers: each key's count from its owner partition.

        ``parts`` must be this pipeline's (or one routed the same way): one
        tracker per partition, in order; anything else raises
        :class:`ValueError`.

        Runtime complexity: as :func:`~rankengine.trending.merge.merge_topk`

        >>> pipe = PartitionedTopK(3, k=1, width=8, depth=1)
        >>> pipe.add("a", 4)
        >>> pipe.merge(pipe.partition_trackers()).top()
        [TopItem(key='a', count=4, error=0)]
        >>> pipe.merge(pipe.partition_trackers()[:2])
        Traceback (most recent call last):
        ...
        ValueError: 2 trackers for 3 partitions: merge takes one tracker per partition

        :param parts: one tracker per partition, in partition order
        :return: a new tracker
        """
        if len(parts) != self.partitions:
            raise ValueError(
                f"{len(parts)} trackers for {self.partitions} partitions: "
                "merge takes one tracker per partition"
            )
        return merge_topk(parts, owner=self.owner)

    def snapshot(self) -> TopK:
        """The merged tracker of everything since the last :meth:`roll`.

        Runtime complexity: O(P * width * depth + P * k' * depth)

        >>> pipe = PartitionedTopK(2, k=1, width=8, depth=1)
        >>> pipe.add("a")
        >>> pipe.snapshot().total, pipe.snapshot().total
        (1, 1)
        """
        return self.merge(self._collect("snapshot"))

    def roll(self) -> TopK:
        """The merged tracker, and every partition starts empty.

        Runtime complexity: O(P * width * depth + P * k' * depth)

        >>> pipe = PartitionedTopK(2, k=1, width=8, depth=1)
        >>> pipe.add("a")
        >>> pipe.roll().total, pipe.snapshot().total
        (1, 0)
        """
        return self.merge(self._collect("roll"))

    def close(self) -> None:
        """Stop the worker processes (a no-op in-process).

        Runtime complexity: O(P)

        >>> PartitionedTopK(2, k=1, width=8, depth=1).close()
        """
        for conn in self._conns:
            try:
                conn.send(("stop", None))
            except OSError:  # the worker is gone already
                pass
            finally:
                conn.close()
        for proc in self._procs:
            proc.join(timeout=10)
            if proc.is_alive():  # pragma: no cover - stuck worker
                proc.terminate()
                proc.join()  # (reaped: no zombie left behind)
        self._stopped = self._stopped or bool(self._procs)
        self._conns = []
        self._procs = []

    def __del__(self) -> None:
        """A process pipeline dropped without :meth:`close`: warn, as an
        unclosed file does, and tell its workers to stop (without waiting
        for them: this may run inside the garbage collector).  Under the
        fork start method the end of the pipe alone would not stop them:
        each worker holds a copy of the parent's end.

        Runtime complexity: O(P)
        """
        conns = getattr(self, "_conns", None)
        if not conns:
            return  # closed, in-process, or never started
        if self._pid != os.getpid():
            return  # a forked child's copy: the workers are its parent's
        self._conns = []
        try:
            warnings.warn(
                f"a PartitionedTopK with {len(conns)} worker processes was never closed",
                ResourceWarning,
                stacklevel=2,
                source=self,
            )
        finally:  # (under -W error the warning raises: stop them all the same)
            for conn in conns:
                with contextlib.suppress(Exception):
                    conn.send(("stop", None))
                with contextlib.suppress(Exception):
                    conn.close()

    def __enter__(self) -> PartitionedTopK:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check(self) -> None:
        """Assert every invariant of the router and (in-process) partitions."""
        try:
            # The buffer counts exactly what it says it holds.
            assert self._buffered == sum(self._buffer.values())
            assert all(n >= 1 for n in self._buffer.values())
            assert len(self._totals) == self.partitions
            if self._parts:
                assert len(self._parts) == self.partitions
                for p, part in enumerate(self._parts):
                    part._check()
                    # Each partition counted what was routed to it, only its keys.
                    assert part.total == self._totals[p], (p, part.total, self._totals[p])
                    assert all(self.owner(key) == p for key in part._cands), p
        except AssertionError:
            print(f"PartitionedTopK(partitions={self.partitions}, buffered={self._buffered})")
            raise
