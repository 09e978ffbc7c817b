"""Top-k heavy hitters over an unbounded stream in fixed memory.

A :class:`TopK` tracker keeps two things:

* a :class:`~rankengine.trending.sketch.CountMinSketch` (conservative update by
  default) that every key passes through, and
* at most ``capacity`` (``k' >= k``) *candidates*: the keys the sketch says
  are heavy, each with a real, exact counter.

::

        event "a" ──► candidate? ──yes──► count += n               (no hashing)
                        │
                        no
                        ▼
                 sketch.add("a", n) ──► estimate e
                        │
               e > smallest candidate count?  ──no──► done (only the sketch knows "a")
                        │ yes
                        ▼
          evict the smallest candidate (write its exact count back
          into the sketch) and admit "a" with count e, error e - n

This is the *augmented sketch* of Roy, Khan and Alonso (SIGMOD 2016) with a
heap instead of a filter array.  A candidate's ``count`` is the sketch
estimate when it was admitted plus every occurrence since, counted exactly,
so its true count lies in ``[count - error, count]`` where ``error`` is the
admission estimate minus the admitting event(s).  Heavy keys are admitted
early, when the sketch is nearly empty, so their error is tiny.  Candidate
occurrences are written back into the sketch lazily (on eviction, on
:meth:`TopK.sketch` and on serialisation), which keeps the sketch
mergeable while the hot path for a hot key is a dict lookup.

The candidate heap is a *lazy* min-heap of ``[stored_count, seq, key]``
lists, one per candidate, ordered by a stored count that may be stale (an
increment touches only the dict).  Since counts only grow, ``stored_count <=
count`` always, so the root's stored count is a lower bound of the smallest
candidate count: a new key whose estimate does not beat it is rejected in
O(1).  Otherwise stale roots are refreshed (``heapreplace`` with the real
count) until the root is fresh, and then the root *is* the smallest
candidate.  Every refresh is paid for by an earlier increment, so updates
cost amortised O(log k') with C ``heapq``, and never an O(k') scan.  Measured
on the candidate events of a Zipf(1.1) stream against an indexed heap (a dict
key -> position, sifting in Python on every increment): 0.21 µs against
0.34 µs of CPU per event, and the candidate path is most of a skewed stream.

Invariants (asserted by :meth:`TopK._check`; a serialised tracker that
breaks one is refused with :class:`ValueError`, also under ``python -O``)::

    1 <= k <= capacity, 0 <= total <= counter limit
    len(heap) == len(candidates) <= capacity, same keys, one entry each
    heap sequence numbers unique, each below the next one handed out
    heap[i].stored <= heap[2i+1].stored and heap[2i+2].stored
    heap entry stored count <= candidate count
    0 <= error < count, flushed <= count, sketch(key) >= flushed
    total == sketch.total + sum(count - flushed)
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, cast

import msgpack

from rankengine.trending.hashing import Key, check_count_map, check_keys, count_keys, key_nbytes
from rankengine.trending.sketch import CountMinSketch, check_positive

DEFAULT_WIDTH: Final = 2048
"""Sketch columns: 2048 x 4 rows x 4 bytes = 32 KiB, half the 64 KiB budget."""

DEFAULT_DEPTH: Final = 4
"""Sketch rows: a new key is over-counted only if all 4 of its cells are hot."""

CAPACITY_FACTOR: Final = 2
"""Default k' = 2k: room for keys ranked just below k to earn exact counts
before they climb into the top k (measured figures in docs/trending.md)."""

MIN_SLACK: Final = 16
"""At least this many spare candidate slots for small k."""

CANDIDATE_FIXED_BYTES: Final = 40
"""Logical bytes per candidate besides its key and cached indexes: count,
error and flushed count (8 bytes each), heap stored count and sequence
number (8 bytes each)."""

FORMAT_VERSION: Final = 1
"""Version of the msgpack layout written by :meth:`TopK.to_bytes`."""

_TYPE_ORDER: Final = {str: 0, bytes: 1, int: 2}

# Candidate record layout: a list, for speed (mutated in place on every hit);
# the count and error slots are public for the merge (trending/merge.py).
CAND_COUNT: Final = 0
CAND_ERROR: Final = 1
_FLUSHED: Final = 2
_IDX: Final = 3


@dataclass(frozen=True, slots=True)
class TopItem:
    """One reported heavy hitter: the true count is in ``[count - error, count]``.

    >>> item = TopItem("a", 10, 2)
    >>> item.lower
    8
    """

    key: Key
    count: int
    error: int

    @property
    def lower(self) -> int:
        """Guaranteed lower bound of the true count: ``count - error``.

        Runtime complexity: O(1)

        >>> TopItem(b"k", 5, 5).lower
        0
        """
        return self.count - self.error


def report_order(item: tuple[Key, int, int]) -> tuple[int, int, int, Key]:
    """Sort key of reported items: count desc, error asc, then key (by type).

    Runtime complexity: O(1)

    >>> sorted([("b", 3, 0), ("a", 3, 0), ("c", 5, 1)], key=report_order)
    [('c', 5, 1), ('a', 3, 0), ('b', 3, 0)]
    """
    key, count, error = item
    return (-count, error, _TYPE_ORDER[type(key)], key)


class TopK:
    """Trending top-k tracker: count-min sketch plus exact counters for candidates.

    >>> tk = TopK(k=2, width=256, depth=4, seed=1)
    >>> tk.add_many("abracadabra")
    >>> tk.top()
    [TopItem(key='a', count=5, error=0), TopItem(key='b', count=2, error=0)]
    >>> tk.estimate("r"), tk.total
    (2, 11)
    """

    __slots__ = (
        "_cands",
        "_heap",
        "_indexes",
        "_limit",
        "_seq",
        "_sketch",
        "capacity",
        "k",
        "total",
    )

    def __init__(
        self,
        k: int = 10,
        *,
        capacity: int | None = None,
        width: int | None = None,
        depth: int | None = None,
        epsilon: float | None = None,
        delta: float | None = None,
        seed: int = 0,
        conservative: bool = True,
        counter_bits: int = 32,
    ) -> None:
        """Create an empty tracker.

        Runtime complexity: O(width * depth)

        >>> TopK(k=100).capacity
        200

        :param k: how many items :meth:`top` reports by default
        :param capacity: candidate slots k' >= k (default ``max(2k, k + 16)``)
        :param width: sketch columns (default 2048, or from ``epsilon``)
        :param depth: sketch rows (default 4, or from ``delta``)
        :param epsilon: sketch error fraction, instead of width/depth
        :param delta: sketch failure probability, with ``epsilon``
        :param seed: hash seed; trackers merge only with equal seeds
        :param conservative: conservative update in the sketch (default on)
        :param counter_bits: 32 or 64-bit sketch counters
        """
        check_positive(k, "k")
        if capacity is None:
            capacity = max(CAPACITY_FACTOR * k, k + MIN_SLACK)
        check_positive(capacity, "capacity")
        if capacity < k:
            raise ValueError(f"capacity must be >= k, got {capacity} < {k}")
        if epsilon is None and delta is None:
            width = DEFAULT_WIDTH if width is None else width
            depth = DEFAULT_DEPTH if depth is None else depth
        self.k = k
        self.capacity = capacity
        self._sketch = CountMinSketch(
            width,
            depth,
            epsilon=epsilon,
            delta=delta,
            seed=seed,
            conservative=conservative,
            counter_bits=counter_bits,
        )
        self._indexes = self._sketch._indexes
        self._limit = self._sketch._limit
        self.total = 0
        self._cands: dict[Key, list[Any]] = {}
        self._heap: list[list[Any]] = []
        self._seq = 0

    # -- configuration ----------------------------------------------------------

    def config(self) -> dict[str, Any]:
        """Constructor arguments that rebuild an empty tracker of the same shape.

        Runtime complexity: O(1)

        >>> TopK(k=3, width=64, depth=2).config()["capacity"]
        19
        """
        s = self._sketch
        return {
            "k": self.k,
            "capacity": self.capacity,
            "width": s.width,
            "depth": s.depth,
            "seed": s.seed,
            "conservative": s.conservative,
            "counter_bits": s.counter_bits,
        }

    def empty_like(self) -> TopK:
        """A new, empty tracker with the same configuration.

        Runtime complexity: O(width * depth)

        >>> TopK(k=3).empty_like().total
        0
        """
        return TopK(**self.config())

    # -- updates ----------------------------------------------------------------

    def add(self, key: Key, n: int = 1) -> Key | None:
        """Count ``n`` occurrences of ``key``; return the key it evicted, if any.

        Runtime complexity: O(1) for a candidate; amortised O(depth + log k')
        otherwise.

        >>> tk = TopK(k=1, capacity=1, width=64, depth=2)
        >>> tk.add("a"), tk.add("b"), tk.add("b")
        (None, None, 'a')
        >>> tk.add(["unhashable"])
        Traceback (most recent call last):
        ...
        TypeError: unsupported key type list: keys must be str, bytes or int

        :param key: a ``str``, ``bytes`` or (64-bit) ``int`` key
        :param n: positive count
        :return: the evicted candidate, or None
        :raises OverflowError: past the sketch's counter limit (nothing changes)
        """
        if type(n) is not int or n < 1:
            raise ValueError(f"n must be a positive int, got {n!r}")
        if self.total + n > self._limit:
            self._sketch._reserve(self.total + n - self._sketch.total)
        t = type(key)
        if t is str or t is bytes or t is int:
            rec = self._cands.get(key)
            if rec is not None:
                # Hot path: a candidate is counted exactly, without hashing.
                rec[0] += n
                self.total += n
                return None
        idx = self._indexes(key)  # validates the key before any change
        self.total += n
        sketch = self._sketch
        sketch.total += n
        est = sketch._update(sketch._table, idx, n)
        heap = self._heap
        if len(heap) == self.capacity and est <= heap[0][0]:
            return None
        return self._admit(key, n, idx, est)

    def _admit(self, key: Key, n: int, idx: tuple[int, ...], est: int) -> Key | None:
        """Admit a non-candidate whose sketch update gave estimate ``est``, if it earns it.

        The caller has updated the sketch and rejected the common case (heap
        full and ``est`` not above the root's stored count).  Then:

        1. with a free slot, admit the key;
        2. refresh stale roots until the root's stored count is its count;
           the root is then the smallest candidate;
        3. if ``est`` beats it, evict it (writing its exact count back into
           the sketch) and admit the key in its heap slot.
        """
        heap = self._heap
        cands = self._cands
        if len(cands) < self.capacity:
            cands[key] = [est, est - n, est, idx]
            heapq.heappush(heap, [est, self._seq, key])
            self._seq += 1
            return None
        sketch = self._sketch
        while True:
            root = heap[0]
            count = cands[root[2]][CAND_COUNT]
            if count == root[0]:
                break
            root[0] = count
            heapq.heapreplace(heap, root)
        if est <= root[0]:
            return None
        evicted = cast(Key, root[2])
        old = cands.pop(evicted)
        sketch._apply_deferred(old[_IDX], old[CAND_COUNT] - old[_FLUSHED], old[CAND_COUNT])
        cands[key] = [est, est - n, est, idx]
        heapq.heapreplace(heap, [est, self._seq, key])
        self._seq += 1
        return evicted

    def add_many(self, keys: Iterable[Key]) -> None:
        """Count every key of ``keys`` (one occurrence each), pre-aggregated.

        The batch is counted with :class:`collections.Counter` (C speed) and
        each distinct key updates the tracker once, in first-seen order.  With
        conservative update the sketch can then differ slightly from
        one-by-one adds (both are valid upper bounds).  The whole batch is
        validated first, before counting (``1.0`` or ``True`` must not pass
        as the equal ``int`` key ``1``): on a bad key nothing changes.

        Runtime complexity: O(n + d * (depth + log k')) for n keys, d distinct

        >>> tk = TopK(k=1, width=64, depth=2)
        >>> tk.add_many(["x", "y", "x"])
        >>> tk.top()
        [TopItem(key='x', count=2, error=0)]
        >>> tk.add_many(["z", 1.5])
        Traceback (most recent call last):
        ...
        TypeError: unsupported key type float: keys must be str, bytes or int
        >>> tk.total
        3

        :param keys: iterable of keys
        """
        counts = count_keys(keys)
        # A Counter built here holds positive ints only: no per-value checks.
        self._add_counts(counts, sum(counts.values()))

    def add_counts(self, counts: Mapping[Key, int]) -> None:
        """Count ``counts[key]`` occurrences of each key (validated first).

        Runtime complexity: O(d * (depth + log k')) for d keys

        >>> tk = TopK(k=2, width=64, depth=2)
        >>> tk.add_counts({"a": 3, "b": 1})
        >>> tk.add_counts({"a": -1})
        Traceback (most recent call last):
        ...
        ValueError: count of 'a' must be a positive int, got -1
        >>> tk.estimate("a")
        3

        :param counts: mapping key -> positive int
        """
        check_count_map(counts)
        if {type(n) for n in counts.values()} - {int} or (counts and min(counts.values()) < 1):
            for key, n in counts.items():
                if type(n) is not int or n < 1:
                    raise ValueError(f"count of {key!r} must be a positive int, got {n!r}")
        self._add_counts(counts, sum(counts.values()))

    def _add_counts(self, counts: Mapping[Key, int], batch: int) -> None:
        """Add validated ``counts`` summing to ``batch`` (the shared batch loop)."""
        if self.total + batch > self._limit:
            self._sketch._reserve(self.total + batch - self._sketch.total)
        self.total += batch
        cands_get = self._cands.get
        indexes = self._indexes
        sketch = self._sketch
        update = sketch._update
        table = sketch._table
        heap = self._heap
        capacity = self.capacity
        admit = self._admit
        for key, n in counts.items():
            rec = cands_get(key)
            if rec is not None:
                rec[0] += n  # a candidate: exact count, no hashing
                continue
            idx = indexes(key)
            sketch.total += n
            est = update(table, idx, n)
            if len(heap) < capacity or est > heap[0][0]:
                admit(key, n, idx, est)

    # -- queries ----------------------------------------------------------------

    def top(self, k: int | None = None) -> list[TopItem]:
        """The ``k`` (default ``self.k``) candidates with the largest counts.

        Ordered by count descending, then error ascending, then key.  Can
        return fewer than ``k`` items when fewer keys were seen.

        Runtime complexity: O(k' log k')

        >>> tk = TopK(k=3, width=64, depth=2)
        >>> tk.add_many("aab")
        >>> [item.key for item in tk.top()]
        ['a', 'b']

        :param k: how many items, at most ``capacity``
        :return: list of :class:`TopItem`
        """
        k = self.k if k is None else check_positive(k, "k")
        items = sorted(
            ((key, rec[CAND_COUNT], rec[CAND_ERROR]) for key, rec in self._cands.items()),
            key=report_order,
        )
        return [TopItem(*item) for item in items[:k]]

    def estimate(self, key: Key) -> int:
        """Upper-bound estimate of ``key``'s count (exact-ish for candidates).

        Runtime complexity: O(depth + len(key))

        >>> tk = TopK(k=1, width=64, depth=2)
        >>> tk.add("a", 4)
        >>> tk.estimate("a"), tk.estimate("never")
        (4, 0)

        :param key: a supported key
        :return: the estimate
        """
        idx = self._indexes(key)
        rec = self._cands.get(key)
        if rec is not None:
            return int(rec[CAND_COUNT])
        return self._sketch._query_at(idx)

    def bounds(self, key: Key) -> tuple[int, int]:
        """Guaranteed ``(lower, upper)`` bounds of ``key``'s true count.

        Runtime complexity: O(depth + len(key))

        >>> tk = TopK(k=1, width=64, depth=2)
        >>> tk.add("a", 4)
        >>> tk.bounds("a")
        (4, 4)

        :param key: a supported key
        :return: ``(lower, upper)``
        """
        upper = self.estimate(key)
        rec = self._cands.get(key)
        return (upper - rec[CAND_ERROR] if rec is not None else 0), upper

    def __contains__(self, key: object) -> bool:
        """Whether ``key`` is a candidate (has an exact counter).

        Runtime complexity: O(1)

        >>> tk = TopK(k=1, width=64, depth=2)
        >>> tk.add("a")
        >>> "a" in tk, "b" in tk
        (True, False)
        """
        t = type(key)
        return (t is str or t is bytes or t is int) and key in self._cands

    def __len__(self) -> int:
        """Number of candidates.

        Runtime complexity: O(1)

        >>> len(TopK(k=1))
        0
        """
        return len(self._cands)

    def __repr__(self) -> str:
        return (
            f"TopK(k={self.k}, capacity={self.capacity}, total={self.total}, "
            f"sketch={self._sketch!r})"
        )

    # -- sketch, memory, snapshots ----------------------------------------------

    def sketch(self) -> CountMinSketch:
        """A copy of the sketch with every candidate's count folded in.

        This is the sketch of everything added so far, as a plain
        :class:`CountMinSketch`; the tracker is not changed.

        Runtime complexity: O(width * depth + k')

        >>> tk = TopK(k=1, width=64, depth=2, conservative=False)
        >>> tk.add_many("aab")
        >>> s = tk.sketch()
        >>> s.query("a"), s.total
        (2, 3)
        """
        sketch = self._sketch.copy()
        for rec in self._cands.values():
            sketch._apply_deferred(rec[_IDX], rec[CAND_COUNT] - rec[_FLUSHED], rec[CAND_COUNT])
        return sketch

    @property
    def logical_bytes(self) -> int:
        """Bytes of logical state: sketch cells plus candidates (keys, counters, indexes).

        Runtime complexity: O(k')

        >>> tk = TopK(k=1, width=64, depth=2)
        >>> tk.add("abc")
        >>> tk.logical_bytes == 64 * 2 * 4 + 3 + 40 + 2 * 4
        True
        """
        per = CANDIDATE_FIXED_BYTES + 4 * self._sketch.depth
        return self._sketch.logical_bytes + sum(key_nbytes(key) + per for key in self._cands)

    def to_dict(self) -> dict[str, Any]:
        """The tracker as a msgpack-ready dict (sketch with candidates folded in).

        Runtime complexity: O(width * depth + k' log k')

        >>> sorted(TopK(k=1, width=8, depth=1).to_dict())
        ['candidates', 'capacity', 'format', 'k', 'sketch', 'total', 'type']
        """
        items = sorted(
            ((key, rec[CAND_COUNT], rec[CAND_ERROR]) for key, rec in self._cands.items()),
            key=report_order,
        )
        return {
            "type": "TopK",
            "format": FORMAT_VERSION,
            "k": self.k,
            "capacity": self.capacity,
            "total": self.total,
            "sketch": self.sketch().to_dict(),
            "candidates": [list(item) for item in items],
        }

    def to_bytes(self) -> bytes:
        """Serialise with msgpack: same bytes in every process and machine.

        Runtime complexity: O(width * depth + k' log k')

        >>> tk = TopK(k=2, width=32, depth=2, seed=9)
        >>> tk.add_many("hello")
        >>> TopK.from_bytes(tk.to_bytes()).top() == tk.top()
        True

        :return: the bytes
        """
        # str keys are UTF-8 with lone surrogates allowed, as they are hashed.
        return msgpack.packb(  # type: ignore[no-any-return]
            self.to_dict(), use_bin_type=True, unicode_errors="surrogatepass"
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TopK:
        """Rebuild a tracker from :meth:`to_dict` output, validating it.

        Runtime complexity: O(width * depth + k')

        >>> TopK.from_dict({"type": "nope"})
        Traceback (most recent call last):
        ...
        ValueError: not a serialised TopK

        :param data: the dict
        :return: the tracker
        """
        if not isinstance(data, dict) or data.get("type") != "TopK":
            raise ValueError("not a serialised TopK")
        # type(...) is int: True and 1.0 compare equal to 1 but are not a version.
        if type(data.get("format")) is not int or data.get("format") != FORMAT_VERSION:
            raise ValueError(f"unsupported TopK format {data.get('format')!r}")
        try:
            sketch = CountMinSketch.from_dict(data["sketch"])
            tracker = cls(
                data["k"],
                capacity=data["capacity"],
                width=sketch.width,
                depth=sketch.depth,
                seed=sketch.seed,
                conservative=sketch.conservative,
                counter_bits=sketch.counter_bits,
            )
            candidates, total = data["candidates"], data["total"]
        except KeyError as exc:
            raise ValueError(f"serialised TopK lacks field {exc}") from None
        if type(total) is not int or total != sketch.total:
            raise ValueError("serialised TopK total does not match its sketch")
        if not isinstance(candidates, list) or not all(
            isinstance(c, (list, tuple)) and len(c) == 3 for c in candidates
        ):
            raise ValueError("serialised TopK candidates must be [key, count, error] triples")
        # A key no tracker could hold (a list, nil, a float...) is damage: ValueError,
        # as for every other tampered field, not the TypeError of a bad add().
        try:
            check_keys([c[0] for c in candidates])
        except (TypeError, ValueError) as exc:
            raise ValueError(f"serialised TopK candidates: {exc}") from None
        tracker._sketch = sketch
        tracker.total = total
        tracker._load_candidates([(key, count, error) for key, count, error in candidates])
        problem = tracker._problem()
        if problem is not None:
            raise ValueError(f"serialised TopK is inconsistent: {problem}")
        return tracker

    @classmethod
    def from_bytes(cls, blob: bytes) -> TopK:
        """Rebuild a tracker from :meth:`to_bytes` output.

        Runtime complexity: O(width * depth + k')

        >>> TopK.from_bytes(b"")
        Traceback (most recent call last):
        ...
        ValueError: not a serialised TopK

        :param blob: the bytes
        :return: the tracker
        """
        try:
            data = msgpack.unpackb(blob, raw=False, unicode_errors="surrogatepass")
        except Exception:
            raise ValueError("not a serialised TopK") from None
        return cls.from_dict(data)

    def _load_candidates(self, items: Sequence[tuple[Key, int, int]]) -> None:
        """Install already-folded candidates ``(key, count, error)`` (count <= sketch)."""
        if len(items) > self.capacity:
            raise ValueError(f"{len(items)} candidates exceed capacity {self.capacity}")
        check_keys([item[0] for item in items])
        cands: dict[Key, list[Any]] = {}
        heap: list[list[Any]] = []
        for seq, (key, count, error) in enumerate(items):
            if type(count) is not int or type(error) is not int or not 0 <= error < count:
                raise ValueError(f"bad candidate counts for {key!r}: {count!r}, {error!r}")
            if key in cands:
                raise ValueError(f"duplicate candidate {key!r}")
            cands[key] = [count, error, count, self._indexes(key)]
            heap.append([count, seq, key])
        heapq.heapify(heap)
        self._cands = cands
        self._heap = heap
        self._seq = len(items)

    def reset(self) -> None:
        """Forget everything (same configuration).

        Runtime complexity: O(width * depth)

        >>> tk = TopK(k=1, width=8, depth=1)
        >>> tk.add("a"); tk.reset()
        >>> tk.total, tk.top()
        (0, [])
        """
        fresh = self.empty_like()
        self._sketch = fresh._sketch
        self.total = 0
        self._cands = {}
        self._heap = []
        self._seq = 0

    def freeze(self) -> TopK:
        """Make this tracker read-only, in place, and return it.

        Every later write (``add``, ``add_many``, ``add_counts``, ``reset``,
        setting an attribute) raises :class:`TypeError` and changes nothing;
        reads, :meth:`sketch`, serialisation and merges work as before.  The
        tracker's class becomes a read-only subclass, so trackers that are
        never frozen pay nothing on their write path.  A writable copy is
        ``TopK.from_bytes(tracker.to_bytes())``.

        Runtime complexity: O(1)

        >>> tk = TopK(k=1, width=8, depth=1)
        >>> tk.add("a")
        >>> tk.freeze().add("a")
        Traceback (most recent call last):
        ...
        TypeError: frozen TopK is read-only; TopK.from_bytes(t.to_bytes()) makes a writable copy
        >>> tk.estimate("a"), tk.frozen
        (1, True)

        :return: this tracker
        """
        object.__setattr__(self, "__class__", _FrozenTopK)
        return self

    @property
    def frozen(self) -> bool:
        """Whether :meth:`freeze` made this tracker read-only.

        Runtime complexity: O(1)

        >>> TopK(k=1, width=8, depth=1).frozen
        False
        """
        return isinstance(self, _FrozenTopK)

    # -- invariants -------------------------------------------------------------

    def _problem(self) -> str | None:
        """The first broken invariant, described, or None.

        Plain ``if`` tests, not ``assert``: the loaders refuse a tampered or
        inconsistent tracker with it under ``python -O`` too, and
        :meth:`_check` asserts it for the tests.

        Runtime complexity: O(width * depth + k' * depth)

        >>> tk = TopK(k=1, width=8, depth=1)
        >>> tk.add("a", 2)
        >>> tk._problem() is None
        True
        >>> tk._cands["a"][CAND_ERROR] = 2
        >>> tk._problem()
        "candidates: 'a' has error 2, not in [0, count 2)"

        :return: what is wrong, starting with the field at fault, or None
        """
        cands, heap, sketch = self._cands, self._heap, self._sketch
        problem = sketch._problem()
        if problem is not None:
            return f"sketch: {problem}"
        # The configuration is valid, and the tracker is the sketch's.
        if not 1 <= self.k <= self.capacity:
            return f"k: {self.k} is not in [1, capacity {self.capacity}]"
        if self._limit != sketch._limit:
            return f"counter limit {self._limit} is not the sketch's {sketch._limit}"
        if not 0 <= self.total <= self._limit:
            return f"total: {self.total} is outside [0, {self._limit}]"
        # At most capacity candidates, each with exactly one heap entry.
        if len(cands) > self.capacity:
            return f"candidates: {len(cands)} exceed capacity {self.capacity}"
        if len(heap) != len(cands) or {entry[2] for entry in heap} != set(cands):
            return "heap: its keys are not the candidates, one entry each"
        # Heap order on stored counts; stored counts never exceed counts.
        for i, entry in enumerate(heap):
            for child in (2 * i + 1, 2 * i + 2):
                if child < len(heap) and not entry[:2] <= heap[child][:2]:
                    return f"heap: entry {i} {entry} is above its child {heap[child]}"
            if entry[0] > cands[entry[2]][CAND_COUNT]:
                return f"heap: entry {entry} stores more than the count"
            # Sequence numbers are unique and below the next one to hand out.
            if not 0 <= entry[1] < self._seq:
                return f"heap: entry {entry} has a sequence number outside [0, {self._seq})"
        if len({entry[1] for entry in heap}) != len(heap):
            return "heap: duplicate sequence numbers"
        pending = 0
        for key, (count, error, flushed, idx) in cands.items():
            # The bounds are sane and the cached indexes are the key's.
            if not 0 <= error < count:
                return f"candidates: {key!r} has error {error}, not in [0, count {count})"
            if flushed > count:
                return f"candidates: {key!r} wrote back {flushed}, above its count {count}"
            if idx != self._indexes(key):
                return f"candidates: {key!r} has cached indexes that are not its own"
            # The sketch already covers the part of the count written back.
            estimate = sketch._query_at(idx)
            if estimate < flushed:
                return (
                    f"candidates: {key!r} counts {flushed}, above its sketch estimate "
                    f"{estimate} (the sketch must cover every candidate)"
                )
            pending += count - flushed
        # Every event is either in the sketch or pending in a candidate.
        if self.total != sketch.total + pending:
            return (
                f"total: {self.total} is not the sketch's {sketch.total} plus "
                f"{pending} pending in candidates"
            )
        return None

    def _check(self) -> None:
        """Assert every invariant; print the tracker on failure."""
        try:
            problem = self._problem()
            assert problem is None, problem
        except AssertionError:
            print(repr(self))
            raise


_READ_ONLY: Final = "frozen TopK is read-only; TopK.from_bytes(t.to_bytes()) makes a writable copy"


class _FrozenTopK(TopK):
    """A :class:`TopK` after :meth:`TopK.freeze`: every write raises TypeError.

    Same slots as :class:`TopK`, so a tracker changes class in place.  A
    frozen tracker never changes, so copies of it are itself.
    """

    __slots__ = ()

    def __setattr__(self, name: str, value: object) -> None:
        raise TypeError(_READ_ONLY)

    def __delattr__(self, name: str) -> None:
        raise TypeError(_READ_ONLY)

    def __copy__(self) -> _FrozenTopK:
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> _FrozenTopK:
        return self

    def add(self, key: Key, n: int = 1) -> Key | None:
        raise TypeError(_READ_ONLY)

    def add_many(self, keys: Iterable[Key]) -> None:
        raise TypeError(_READ_ONLY)

    def add_counts(self, counts: Mapping[Key, int]) -> None:
        raise TypeError(_READ_ONLY)

    def _add_counts(self, counts: Mapping[Key, int], batch: int) -> None:
        raise TypeError(_READ_ONLY)

    def _admit(self, key: Key, n: int, idx: tuple[int, ...], est: int) -> Key | None:
        raise TypeError(_READ_ONLY)

    def _load_candidates(self, items: Sequence[tuple[Key, int, int]]) -> None:
        raise TypeError(_READ_ONLY)

    def reset(self) -> None:
        raise TypeError(_READ_ONLY)


__all__ = ["CAND_COUNT", "CAND_ERROR", "TopItem", "TopK", "report_order"]
