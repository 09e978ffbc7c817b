"""The ledger: one durable stream of score events feeding many views.

The events are the truth; every board is a view of them.  One
:meth:`Ledger.record` checks the event against every view (an event any
view would refuse changes nothing and writes nothing), appends **one**
record to the log, applies it to every view under one lock, and returns
what it did to each once the record is durable under the fsync policy
(under ``"always"``, an fsync shared with the records of other threads).
After a crash every view reflects the same prefix of the log: each is
loaded from its own snapshot and given the events after it.

>>> from rankengine import Ledger
>>> ledger = Ledger()                                  # in memory; Ledger.open(path) on disk
>>> ledger.add_view("alltime", "board")
>>> ledger.add_view("eu", "board", where={"region": "eu"})
>>> ledger.add_view("weekly", "periodic", calendar="weekly")
>>> done = ledger.record("ann", 30, attrs={"region": "eu"}, t_ms=1_800_000_000_000)
>>> done.seq, [(o.view, o.score, o.rank_after) for o in done.outcomes]
(1, [('alltime', 30, 1), ('eu', 30, 1), ('weekly', 30, 1)])
>>> _ = ledger.record("bob", 50, attrs={"region": "us"}, t_ms=1_800_000_001_000)
>>> [e.member for e in ledger["alltime"].top()], [e.member for e in ledger["eu"].top()]
(['bob', 'ann'], ['ann'])
>>> ledger.record("bob", float("nan"))                 # refused by the boards: nothing written
Traceback (most recent call last):
...
ValueError: delta must not be NaN
(refused by view 'alltime'; nothing was recorded)
>>> ledger.last_seq
2
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from rankengine.board.direct import DIRECT_DELTA_LIMIT
from rankengine.durable.forget import Forgotten
from rankengine.durable.options import (
    COMPACT_MIN_BYTES,
    FsyncPolicy,
    TornPolicy,
    check_fsync,
    check_log_options,
)
from rankengine.durable.records import (
    EVENT,
    CorruptionError,
    Event,
    LogError,
    RecordFramer,
    TornTailError,
    TornTailWarning,
)
from rankengine.index.collector import collector_paused
from rankengine.ledger.compaction import (
    CompactionReport,
    compact_due,
    compact_in_process,
    finish_switched,
    kind_of,
    switch,
)
from rankengine.ledger.events import MAX_T_MS, LedgerEvent, from_change, make_event, to_change
from rankengine.ledger.fastpath import IncrPlan, feed, skip_checks
from rankengine.ledger.fold import replay_log
from rankengine.ledger.forget import forget_member
from rankengine.ledger.front import (
    LazyRecorded,
    LedgerFront,
    Recorded,
)
from rankengine.ledger.preload import Preloader, load_all, periodic_boards
from rankengine.ledger.redis_view import RedisAdapter
from rankengine.ledger.replayed import (
    IN_PROCESS,
    REPLAY,
    SnapshotMode,
    check_snapshot_mode,
)
from rankengine.ledger.restore import restore_views
from rankengine.ledger.rotation import adopt_rotated
from rankengine.ledger.routes import Route
from rankengine.ledger.storage import (
    LedgerFiles,
    LogTail,
    read_events,
    refuse_migrated,
    remove_stray_files,
)
from rankengine.ledger.subscriptions import Subscriptions
from rankengine.ledger.views import Outcome, View, check_view_name

__all__ = ["Ledger", "Recorded"]

#: Tuples made without the Python-level ``__new__`` of a NamedTuple.
_new_event: Final = tuple.__new__
#: ``-DIRECT_DELTA_LIMIT``, negated once (a 1,024-bit int made per record else)
_DELTA_MIN: Final = -DIRECT_DELTA_LIMIT


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class Ledger(LedgerFront):
    """One event stream, many views (see the module docstring).

    :param path: the directory (None: in memory, nothing durable; the
        events are kept in memory so that a view added later is built
        from them).
    :param fsync: ``"always"``, ``"everysec"`` (default) or ``"never"``, as
        for a durable board (``docs/durability.md``).  Under ``"always"``
        :meth:`record` and :meth:`record_many` return once their record is
        fsynced, threads recording together sharing fsyncs (the group
        commit of :mod:`rankengine.durable.commit`, as a durable board's
        writes do); while a subscriber listens, an event's fsync is its
        own, made before its notices go out under the lock.
    :param retain_log: keep every segment (default True: the history is
        what a view added later is built from, and what a view whose
        snapshot is lost is rebuilt from); False drops the segments every
        view's snapshot covers at each compaction.
    :param compact_min_bytes: snapshot every view and start a new segment
        once the active one holds this many bytes (None: only on
        :meth:`compact`); the write that crosses it pays for the snapshot
        (from :class:`~rankengine.ledger.aio.AsyncLedger`, a worker thread
        does: see :attr:`compact_elsewhere`).
    :param on_torn_tail: ``"truncate"`` (default) or ``"refuse"``.
    :param create: create the directory when it holds no ledger.
    :param now: a function returning milliseconds (the default event time
        and the records' timestamps; for tests).
    :param preload: once open, load the periodic views' closed periods on
        a background thread (:meth:`preload`); default False: each loads
        on its first read.
    :param snapshot_mode: how a compaction makes the views' snapshots:
        ``"replay"`` in a child process that rebuilds them from the log
        while records go on (:mod:`rankengine.ledger.replayed`),
        ``"in-process"`` from the live views under the lock, or
        ``"auto"`` (default) replay once the views hold
        :data:`~rankengine.ledger.replayed.AUTO_REPLAY_ROWS` rows.  A
        ledger with a Redis view compacts in-process.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        fsync: FsyncPolicy = "everysec",
        retain_log: bool = True,
        compact_min_bytes: int | None = COMPACT_MIN_BYTES,
        on_torn_tail: TornPolicy = "truncate",
        create: bool = True,
        now: Callable[[], int] | None = None,
        preload: bool = False,
        snapshot_mode: SnapshotMode = "auto",
    ) -> None:
        check_fsync(fsync)
        check_snapshot_mode(snapshot_mode)
        check_log_options(on_torn_tail, compact_min_bytes, 1.0, retain_log)
        if now is not None and not callable(now):
            raise TypeError(f"now must be a function returning milliseconds, not {now!r}")
        self.path = None if path is None else os.fspath(path)
        self._now = _now_ms if now is None else now
        self._lock = threading.RLock()
        self._views: dict[str, View] = {}
        self._seq = 0
        #: the ledger's clock: the latest event time recorded (ms)
        self._time = 0
        self._last_ms = 0
        self._retain = retain_log
        self._compact_min = compact_min_bytes
        #: where a size-triggered compaction goes instead of running in the
        #: write that crossed the threshold: called (under the lock) with
        #: nothing, it returns True once it has taken the work on (the
        #: asyncio face runs it on a worker thread, rankengine.ledger.aio)
        self.compact_elsewhere: Callable[[], bool] | None = None
        self._compact_asked = False
        self._mode: SnapshotMode = snapshot_mode
        #: one compaction at a time (taken before the ledger's lock)
        self._compact_lock = threading.Lock()
        #: the thread whose write took the compaction lock (compact_due)
        self._due_thread: int | None = None
        #: the thread finishing a write's replayed compaction, if one runs
        self._compactor: threading.Thread | None = None
        #: a replaying child reads the files (remove_view leaves them to it)
        self._replaying = False
        #: what the last compaction did (kind, seq, times, the child's costs)
        self.last_compaction: CompactionReport | None = None
        self._framer = RecordFramer()
        self._history: list[Event] | None = [] if path is None else None
        self._subs = Subscriptions()
        #: how _record_incr feeds each view (None: to be worked out again)
        self._plan: IncrPlan | None = None
        self._closed = False
        self._files: LedgerFiles | None = None
        self.recovery_notes: list[str] = []
        #: the background preload (:meth:`preload`), if one was started
        self.preloader: Preloader | None = None
        if self.path is not None:
            self._files = LedgerFiles(self.path, fsync=fsync, create=create)
            # Bulk loads, as a durable board's open does: the collector would
            # rescan the growing heap many times while the views' boards are
            # built (measured there: 3x slower at a million members).
            try:
                with collector_paused():
                    self._recover(on_torn_tail)
            except BaseException:
                self._files.close()
                raise
            if preload:
                self.preload(background=True)

    @classmethod
    def open(cls, path: str | os.PathLike[str], **options: Any) -> Ledger:
        """Open (or create) the ledger in directory ``path``; the options
        are the constructor's."""
        return cls(path, **options)

    # ------------------------------------------------------------------
    # Recovery
    # ------------------------------------------------------------------
    def _recover(self, on_torn_tail: TornPolicy) -> None:
        files = self._files
        assert files is not None and self.path is not None
        config = files.manifest.config
        self.recovery_notes = files.remove_unlisted()
        config.setdefault("snapshots", {})
        views, start_ms = restore_views(self.path, config, self.recovery_notes)
        self._views.update(views)
        segments = files.manifest.segments
        start = min((v.seq for v in self._views.values()), default=segments[-1][1] - 1)
        self._time = start_ms.get(start, 0)
        tail = LogTail()
        tail.last_seq = start
        self._time = replay_log(  # (folded: rankengine.ledger.fold)
            self.path, files.manifest, start, tail, views=self._views.values(), time_ms=self._time
        )
        self._time = adopt_rotated(files, tail, self._views, self._time, self.recovery_notes)
        if tail.torn is not None:
            if on_torn_tail == "refuse":
                raise TornTailError(tail.torn)
            warnings.warn(
                f"{tail.torn.path}: cut a torn tail at offset {tail.torn.offset} "
                f"({tail.torn.reason}): the last event was interrupted before it was acknowledged",
                TornTailWarning,
                stacklevel=3,
            )
        assert tail.active is not None
        self._seq, self._last_ms = tail.last_seq, tail.last_ms
        for view in self._views.values():
            view.seq = max(view.seq, self._seq)
        files.start_writing(tail.active)
        for view in self._views.values():  # a Redis view: to the view's state
            view.attach(self._seq)

    def _view_failed(self, seq: int, exc: Exception) -> LogError:
        """Close the ledger after event ``seq`` was logged but a view failed
        to apply it (it had passed that view's check: a bug), and return the
        error to raise: a reopen rebuilds the views from the log.

        Runtime complexity: O(1)
        """
        self._closed = True
        return LogError(
            f"event {seq} was logged but a view failed to apply it ({exc}); the ledger "
            "is closed: reopen it (the views are rebuilt from the log)"
        )

    def _replay(self, record: Event, only: View | None = None) -> None:
        """Give ``record``'s events to the views that do not reflect it yet
        (or to ``only``)."""
        views = [only] if only is not None else list(self._views.values())
        for change in record.changes:
            if change[0] != EVENT:
                raise CorruptionError(
                    self.path or "", 0, f"record {record.seq} holds a board change, not an event"
                )
            event = from_change(change)
            self._time = max(self._time, event.t_ms)
            for view in views:
                if view.seq < record.seq:
                    view.time_ms = self._time
                    try:
                        view.apply(event, False)
                    except Exception as exc:
                        raise LogError(
                            f"event {record.seq} does not apply to view {view.name!r} ({exc}): "
                            "was the ledger written by another version?"
                        ) from exc
        for view in views:
            view.seq = max(view.seq, record.seq)

    # ------------------------------------------------------------------
    # Views
    # ------------------------------------------------------------------
    def add_view(
        self,
        name: str,
        kind: str = "board",
        *,
        where: Mapping[str, Any] | None = None,
        by: str | None = None,
        progress: Callable[[int, int], None] | None = None,
        **options: Any,
    ) -> None:
        """Register a view: ``kind`` is ``"board"``, ``"periodic"``,
        ``"window"``, ``"decayed"`` or ``"topk"`` (options as each board
        takes them: see :mod:`rankengine.ledger.adapters`), ``where`` a
        filter on the events' attributes and ``by`` the attribute that keeps
        one board per value.  A ledger with events builds the view by
        replaying them (``progress(seq, last_seq)`` is called as it goes),
        then stores it with a snapshot.

        Runtime complexity: O(E) for E events recorded (the replay)
        """
        check_view_name(name)
        route = Route.of(where=where, by=by)
        with self._lock:
            self._check_open()
            if name in self._views:
                raise ValueError(f"the ledger has a view {name!r} already (remove_view first)")
            view = View(name, kind, options, route)
            self._build(view, progress)
            view.attach(self._seq)
            self._views[name] = view
            self._plan = None
            if self._files is not None:
                config = self._files.manifest.config
                config["views"][name] = view.spec()
                try:
                    self._save_view(view)
                    self._files.commit()
                except BaseException:
                    del self._views[name]
                    config["views"].pop(name, None)
                    config["snapshots"].pop(name, None)
                    raise

    def _build(self, view: View, progress: Callable[[int, int], None] | None) -> None:
        """Give ``view`` every event so far."""
        saved = self._time
        self._time = 0
        try:
            records: Iterable[Event]
            if self._history is not None:
                records = self._history
            elif self._seq == 0:
                records = ()
            else:
                assert self._files is not None and self.path is not None
                records = read_events(self.path, self._files.manifest, 0)
            for record in records:
                self._replay(record, view)
                if progress is not None and record.seq % 10_000 == 0:
                    progress(record.seq, self._seq)
            view.seq = self._seq
            view.time_ms = saved
        finally:
            self._time = saved
        if progress is not None:
            progress(self._seq, self._seq)

    def remove_view(self, name: str) -> None:
        """Unregister ``name`` and free its files.

        Runtime complexity: O(files of the view)
        """
        with self._lock:
            self._check_open()
            if name not in self._views:
                raise KeyError(f"the ledger has no view {name!r}")
            if self._files is not None:
                config = self._files.manifest.config
                spec = config["views"].pop(name)
                snap = config["snapshots"].pop(name, None)
                try:
                    self._files.commit()
                except BaseException:
                    config["views"][name] = spec
                    if snap is not None:
                        config["snapshots"][name] = snap
                    raise
                if not self._replaying:  # (else the compaction's end removes them)
                    remove_stray_files(self._files.view_dir(name))
            del self._views[name]
            self._plan = None
            self._subs.drop_view(name)

    def rebuild_view(
        self,
        name: str,
        progress: Callable[[int, int], None] | None = None,
        *,
        from_log: bool = False,
    ) -> None:
        """Rebuild ``name`` from the log (its boards emptied first).  A Redis
        view is rebuilt from its state instead (Redis made the view's board
        again: idempotent, O(N)), unless ``from_log``.

        Runtime complexity: O(E) for E events recorded
        """
        with self._lock:
            self._check_open()
            view = self._views[name]
            if self._files is not None:
                refuse_migrated(self._files.manifest.config, name, "rebuild_view was asked")
            redis = [a for a in view.adapters.values() if isinstance(a, RedisAdapter)]
            if redis and not from_log:
                # the serving copy, from the view's state: a copy, not a replay
                for adapter in redis:
                    adapter.rebuild(self._seq)
                return
            view.close(self._seq)
            view.reset()
            self._plan = None
            self._build(view, progress)
            view.attach(self._seq)

    # (views, view(), ledger[name], `name in ledger`, subscribe and
    # unsubscribe: LedgerFront's, shared with the PostgreSQL ledger)

    # ------------------------------------------------------------------
    # Recording
    # ------------------------------------------------------------------
    def record(
        self,
        member: Any,
        value: Any = None,
        *,
        op: str = "incr",
        t_ms: int | None = None,
        attrs: Mapping[str, Any] | None = None,
        when: str | None = None,
        meta: Mapping[str, Any] | None = None,
        ranks: bool = True,
    ) -> Recorded:
        """Record one event and apply it to every view (see the module
        docstring); ``value`` defaults to 1 for ``incr``.  ``t_ms`` is the
        event time (default now).  ``ranks=False`` skips the rank before and
        after in the outcomes (two O(log N) reads per exact view).

        Runtime complexity: O(V log N) for V views of N members
        """
        if value is None and op == "incr":
            value = 1
        if (
            type(value) is int
            and _DELTA_MIN <= value <= DIRECT_DELTA_LIMIT  # (see direct_incr)
            and op == "incr"
            and type(member) is str
            and when is None
            and attrs is None
            and meta is None
            and (t_ms is None or (type(t_ms) is int and 0 <= t_ms <= MAX_T_MS))
        ):
            done = self._record_incr(member, value, t_ms, ranks)
        else:
            with self._lock:
                self._check_open()
                event = make_event(
                    member,
                    value,
                    op=op,
                    t_ms=self._now() if t_ms is None else t_ms,
                    attrs=attrs,
                    when=when,
                    meta=meta,
                )
                done = self._record([event], ranks)[0]
        files = self._files
        if files is not None and files.group is not None:
            files.acknowledge()  # (under "always": the shared fsync, lock let go)
        return done

    def _record_incr(self, member: str, value: int, t_ms: int | None, ranks: bool) -> Recorded:
        """:meth:`record` of the commonest event, an int increment of a str
        member with no route attributes, no ``when`` and no subscriber: the
        same check, record, writes and outcomes as :meth:`_record`, with
        each view fed as its :class:`~rankengine.ledger.fastpath.IncrPlan`
        says (worked out once per set of views, not per event)."""
        lock = self._lock
        # (acquire/try/finally, not `with`: the same hold, less per call)
        lock.acquire()
        try:
            if self._closed:
                self._check_open()
            if self._subs.any():
                event = make_event(member, value, t_ms=self._now() if t_ms is None else t_ms)
                return self._record([event], ranks)[0]
            if t_ms is None:
                t = stamp = self._now()  # (one clock reading: event and record time)
                if type(t) is not int or not 0 <= t <= MAX_T_MS:  # a bad now(): refused there
                    return self._record([make_event(member, value, t_ms=t)], ranks)[0]
            else:
                t, stamp = t_ms, self._now()
            last = self._last_ms
            stamp = stamp if stamp > last else last  # record times never go back
            plan = self._plan
            if plan is None:
                plan = self._plan = IncrPlan(self._views.values())
            # checked, logged, fed (the views that could refuse it asked first)
            done = plan.record(self, member, value, t, stamp, ranks)
            files, limit = self._files, self._compact_min  # (_compact_if_due, a call less)
            if files is not None and limit is not None and files.active_bytes >= limit:
                self._compact_due()
            return done
        finally:
            lock.release()

    def incr(self, member: Any, delta: Any = 1, **options: Any) -> Recorded:
        """``record(member, delta, op="incr", ...)``."""
        return self.record(member, delta, op="incr", **options)

    def set(self, member: Any, score: Any, **options: Any) -> Recorded:
        """``record(member, score, op="set", ...)``."""
        return self.record(member, score, op="set", **options)

    def remove(self, member: Any, **options: Any) -> Recorded:
        """``record(member, op="remove", ...)``."""
        return self.record(member, op="remove", **options)

    def set_meta(self, member: Any, meta: Mapping[str, Any], **options: Any) -> Recorded:
        """``record(member, op="meta", meta=meta, ...)``: the metadata of
        ``member`` on every board of the ledger that holds it."""
        return self.record(member, op="meta", meta=meta, **options)

    def record_many(
        self, items: Iterable[Mapping[str, Any] | tuple[Any, Any]], *, ranks: bool = False
    ) -> list[Recorded]:
        """Record many events as one record: all are checked (each after
        the ones before it) before any is written; a bad item raises,
        naming it, and changes nothing.  Items are ``(member, delta)``
        pairs (increments now) or maps of :meth:`record`'s arguments.

        Runtime complexity: O(k V log N) for k events
        """
        with self._lock:
            self._check_open()
            events = self._events_of(items)
            if not events:
                return []
            if not self._subs.any() and all(
                event.op == "incr"
                and type(event.value) is int
                and _DELTA_MIN <= event.value <= DIRECT_DELTA_LIMIT
                and type(event.member) is str
                and event.attrs is None
                and event.when is None
                for event in events
            ):
                done = self._record_incr_many(events, ranks)
            else:
                done = self._record(events, ranks)
        if self._files is not None:
            self._files.acknowledge()  # (under "always": the shared fsync, lock let go)
        return done

    def _record_incr_many(self, events: list[LedgerEvent], ranks: bool) -> list[Recorded]:
        """:meth:`_record` of a batch of int increments of str members (no
        route attributes, no ``when``, no subscriber): the same checks,
        record, writes and outcomes, each view fed as :meth:`_record_incr`
        feeds it, and a view that cannot refuse such a batch not asked
        (:func:`~rankengine.ledger.fastpath.skip_checks`)."""
        plan = self._plan
        if plan is None:
            plan = self._plan = IncrPlan(self._views.values())
        # 1. every event against the views that could refuse it, each after
        # the ones before it (a plain board cannot: it is not in plan.checks)
        now_ms = self._time
        asked: list[tuple[View, dict[Any, Any]]] = [
            (view, {})
            for (_code, view, _adapter), skip in zip(
                plan.checks, skip_checks(plan, events, now_ms), strict=True
            )
            if not skip
        ]
        for i, event in enumerate(events):
            now_ms = max(now_ms, event.t_ms)
            for view, sim in asked:
                try:
                    view.check(event, now_ms, sim)
                except Exception as exc:
                    if len(events) > 1:
                        exc.add_note(f"(item {i} of the batch, refused by view {view.name!r})")
                    else:
                        exc.add_note(f"(refused by view {view.name!r}; nothing was recorded)")
                    raise
        # 2. one record
        seq = self._seq + 1
        stamp = max(self._now(), self._last_ms)  # record times never go back
        changes = [to_change(event) for event in events]
        files = self._files
        if files is not None:
            files.append(self._framer.frame(seq, stamp, changes), seq)
        elif self._history is not None:
            self._history.append(Event(seq, stamp, changes))
        self._seq, self._last_ms = seq, stamp
        # 3. every view
        done: list[Recorded] = []
        try:
            for event in events:
                self._time = max(self._time, event.t_ms)
                outcomes = feed(plan, event, self._time, seq, ranks)
                done.append(_new_event(Recorded if ranks else LazyRecorded, (seq, event, outcomes)))
        except Exception as exc:  # a view refused what it had passed: a bug
            for _, view, _, _ in plan.feeds:
                view.seq = seq - 1  # (as the general path leaves them)
            raise self._view_failed(seq, exc) from exc
        self._compact_if_due()
        return done

    def _record(self, events: list[LedgerEvent], ranks: bool) -> list[Recorded]:
        """Check, log once, apply: the heart of :meth:`record`."""
        views = list(self._views.values())
        # 1. every event against every view, each after the ones before it
        sims: list[dict[Any, Any]] = [{} for _ in views]
        now_ms = self._time
        for i, event in enumerate(events):
            now_ms = max(now_ms, event.t_ms)
            for view, sim in zip(views, sims, strict=True):
                try:
                    view.check(event, now_ms, sim)
                except Exception as exc:
                    if len(events) > 1:
                        exc.add_note(f"(item {i} of the batch, refused by view {view.name!r})")
                    else:
                        exc.add_note(f"(refused by view {view.name!r}; nothing was recorded)")
                    raise
        # 2. one record, durable under the policy
        subs = self._subs
        quiet = not subs.any()
        seq = self._seq + 1
        stamp = max(self._now(), self._last_ms)  # record times never go back
        changes = [to_change(event) for event in events]
        if self._files is not None:
            # (a subscriber hears of the event under the lock: durable first)
            self._files.append(self._framer.frame(seq, stamp, changes), seq, inline=not quiet)
        elif self._history is not None:
            self._history.append(Event(seq, stamp, changes))
        self._seq, self._last_ms = seq, stamp
        # 3. every view, under this one lock
        done: list[Recorded] = []
        try:
            for event in events:
                self._time = max(self._time, event.t_ms)
                time_ms = self._time
                outcomes: list[Outcome] = []
                for view in views:
                    view.time_ms = time_ms
                    if quiet:  # no subscriber anywhere: nothing to look up
                        outcomes += view.apply(event, ranks)
                        continue
                    watched = subs.watches(view.name)
                    outcomes += view.apply(event, ranks or watched)
                    if watched:
                        subs.deliver(seq, event, view, outcomes)
                done.append(Recorded(seq, event, outcomes))
        except Exception as exc:  # a view refused what it had passed: a bug
            raise self._view_failed(seq, exc) from exc
        for view in views:
            view.seq = seq
        self._compact_if_due()
        return done

    def forget(self, member: Any, *, from_log: bool = False) -> Forgotten:
        """Remove ``member`` from every view and every file of the ledger
        (see :mod:`rankengine.ledger.forget`); other members are unchanged.
        ``from_log``: rebuild the views from every event (exact for a
        trending view's sketch too) rather than from their snapshots.

        Runtime complexity: O(E + N) for E events logged and N members held
        """
        return forget_member(self, member, from_log=from_log)

    # ------------------------------------------------------------------
    # Durability
    # ------------------------------------------------------------------
    @property
    def last_seq(self) -> int:
        """The sequence number of the last record (0: none yet)."""
        return self._seq

    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError(f"the ledger at {self.path} is closed")

    def _save_view(self, view: View, pause: Callable[[], None] | None = None) -> None:
        """Write ``view``'s snapshot at its seq into the manifest's config
        (the caller commits the manifest); ``pause`` as in :meth:`compact`."""
        assert self._files is not None
        parts = view.export_lazy()
        files = self._files.write_parts(view.name, view.seq, self._time, parts, pause=pause)
        self._files.manifest.config["snapshots"][view.name] = [view.seq, files, self._time]

    def _compact_if_due(self) -> None:
        """After a write: :meth:`_compact_due` once the active segment holds
        ``compact_min_bytes`` (never in memory, or with compaction off)."""
        files = self._files
        if (
            files is not None
            and self._compact_min is not None
            and files.active_bytes >= self._compact_min
        ):
            self._compact_due()

    def _compact_due(self) -> None:
        """The active segment crossed ``compact_min_bytes`` (under the
        lock): :func:`~rankengine.ledger.compaction.compact_due`."""
        if not self._compact_asked:
            compact_due(self)

    def compaction_kind(self) -> str:
        """How a compaction would make the snapshots now: ``"replay"`` or
        ``"in-process"`` (see ``snapshot_mode``).

        Runtime complexity: O(boards)
        """
        with self._lock:
            return kind_of(self._mode, self._views)

    def compact(
        self,
        *,
        pause: Callable[[], None] | None = None,
        kind: str | None = None,
        switched: Callable[[], None] | None = None,
        naming: Callable[[], None] | None = None,
    ) -> int:
        """Snapshot every view at the current seq and start a new segment;
        without ``retain_log`` the segments before it are removed.  Returns
        the seq the snapshots reflect.

        ``kind`` (default: as :meth:`compaction_kind` says): ``"replay"``
        holds the lock only for the switch to a new segment, and a child
        process writes the snapshots from the log while writes go on
        (:mod:`rankengine.ledger.compaction`); ``"in-process"`` encodes
        the live views, and writes wait while it runs.  ``pause``, if
        given, is called between pieces of an in-process encoding: a
        compaction on a background thread passes ``time.sleep(0)``, which
        lets go of the GIL there, so that the thread serving reads waits
        for one piece at most, not for the interpreter's 5 ms switch
        interval or a whole chunk's encoding.  ``switched`` and ``naming``
        (a replay only) are called on the compacting thread once the
        switch has let the lock go, before the lock is taken again to name
        the snapshots (in memory; ``switched`` again once that lets it go,
        before the manifest's fsyncs): the asyncio face holds records back.

        Runtime complexity: O(N) over the views' members (replay: in the child)
        """
        due = self._due_thread == threading.get_ident()  # (a write's: compact_due holds it)
        with contextlib.nullcontext() if due else self._compact_lock:
            with self._lock:
                self._check_open()
                if self._files is None:
                    return self._seq
                if kind not in (None, REPLAY, IN_PROCESS):
                    raise ValueError(f"kind must be {REPLAY!r} or {IN_PROCESS!r}, not {kind!r}")
                # (asked for or not, a replay needs an interpreter and no Redis view)
                if kind_of(kind or self._mode, self._views) == IN_PROCESS:
                    return compact_in_process(self, pause)
                job = switch(self)
                if job is None:
                    return compact_in_process(self, pause)  # (only the roll, if any)
            return finish_switched(self, *job, switched=switched, naming=naming)

    def flush(self) -> None:
        """fsync the log now (any policy)."""
        with self._lock:
            if self._files is not None:
                self._files.sync()

    def preload(self, *, background: bool = False) -> Preloader | None:
        """Load every closed period the open left unloaded, in every
        periodic view (:mod:`rankengine.ledger.preload`): now, raising the
        first load's error; or on a daemon thread (kept in :attr:`preloader`;
        a second call returns the one running).  Safe beside records,
        reads, compactions and ``forget``; a no-op when nothing is unloaded.

        Runtime complexity: O(N) for the N members of the unloaded periods
        """
        if not background:
            failed = load_all(self._periodic_boards)
            if failed:
                raise failed[0][2]
            return None
        with self._lock:
            if self.preloader is None or not self.preloader.running:
                self.preloader = Preloader(self._periodic_boards)
            return self.preloader

    def _periodic_boards(self) -> list[tuple[str, Any, Any]]:
        with self._lock:
            return periodic_boards(self._views.values())

    def close(self) -> None:
        """Stop a preload, flush, release the directory; reads keep working."""
        if self.preloader is not None:
            self.preloader.stop()  # (before the lock: its last load ends first)
        compactor = self._compactor
        if compactor is not None and compactor is not threading.current_thread():
            compactor.join()  # (before the lock: it names its snapshots under it)
        with self._compact_lock, self._lock:
            if self._closed and (self._files is None or self._files.writer is None):
                return
            self._closed = True
            try:
                for view in self._views.values():
                    view.close(self._seq)
            finally:
                if self._files is not None and self._files.writer is not None:
                    self._files.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        where = "memory" if self.path is None else repr(self.path)
        return f"Ledger({where}, views={self.views}, last_seq={self._seq})"

    def _check(self) -> None:
        """Every view's invariants, and every view at the ledger's seq."""
        with self._lock:
            for view in self._views.values():
                assert view.seq == self._seq, (view.name, view.seq, self._seq)
                view._check()
