"""A ledger with many views against the same board kinds fed directly.

A Hypothesis state machine records random events (every op, good and bad
values, times that go forward, back a little and back a lot, attributes
that route) into a durable ledger with seven views, and feeds every event
the ledger accepts to a *reference* of each view: the same board kind,
built directly and written by its own API with the same times.

* **Accepted events** reach every reference without an error (the
  ledger's check refused nothing a board takes), and afterwards every view
  equals its reference: items, metadata, periods held and closed, the
  window's sums, the decayed board's base and stored scores bit for bit,
  the trending top items.
* **Refused events** (a NaN, an infinite decayed weight, a late event, a
  member type a tie-by-member board cannot compare, ``when=`` on a decayed
  view) change no view, and ``last_seq`` does not move; a batch with one
  bad item changes nothing either.
* **Reopen** in the middle (close, open again: snapshots plus the log),
  **compact**, and **a view added late** (built by replaying the history,
  compared with a reference fed every accepted event).
* After every step: ``_check()`` on the ledger (every view at its seq,
  every board's invariants).
"""

from __future__ import annotations

import shutil
import tempfile
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from rankengine import Leaderboard, Ledger
from rankengine.timed.decay import DecayedLeaderboard
from rankengine.timed.periodic import PeriodicLeaderboard
from rankengine.timed.state import decayed_state, period_board, periodic_state
from rankengine.timed.window import SlidingWindowLeaderboard
from rankengine.trending.topk import TopK

START_MS = 1_798_934_400_000  # 2027-01-03T00:00Z
MEMBERS = st.sampled_from(["a", "b", "c", "d", 7])
VALUES = st.one_of(
    st.integers(-5, 20),
    st.sampled_from([0.5, 2.5, -1.25, float("inf"), float("-inf"), float("nan")]),
)
OPS = st.sampled_from(["incr", "incr", "set", "remove", "meta"])
#: Steps of the event time: mostly forward, sometimes back (late events).
STEPS = st.one_of(
    st.integers(0, 3_600_000),
    st.sampled_from([-60_000, -3_600_000, -2 * 86_400_000, 86_400_000, 8 * 86_400_000]),
)
REGIONS = st.sampled_from(["eu", "us", None])
WHENS = st.sampled_from([None, None, None, "new", "present", "better", "worse"])

VIEWS: list[tuple[str, str, dict[str, Any]]] = [
    ("all", "board", {}),
    ("skip", "board", {"backend": "skiplist", "tie_break": "member", "order": "asc"}),
    ("daily", "periodic", {"calendar": "daily", "grace": 3600}),
    ("win", "window", {"calendar": "hourly", "buckets": 3}),
    ("hot", "decayed", {"half_life": 3600.0, "where": {"region": "us"}}),
    ("trend", "topk", {"k": 3}),
    ("region", "board", {"by": "region"}),
]


class Reference:
    """Each view's board kind, fed directly by its own API."""

    def __init__(self) -> None:
        self.time_ms = 0
        clock = self.clock
        self.boards: dict[str, Any] = {
            "all": Leaderboard(),
            "skip": Leaderboard(backend="skiplist", tie_break="member", order="asc"),
            "daily": PeriodicLeaderboard("daily", grace=3600, clock=clock),
            "win": SlidingWindowLeaderboard("hourly", 3, clock=clock),
            "hot": DecayedLeaderboard(half_life=3600.0, t0=0.0, clock=clock),
            "trend": TopK(k=3),
            "region": {},
        }

    def clock(self) -> float:
        return self.time_ms / 1000

    def feed(self, event: dict[str, Any], late: Leaderboard | None = None) -> None:
        """One accepted event, to every reference (``late``: the late view's)."""
        self.time_ms = max(self.time_ms, event["t_ms"])
        member, op, value = event["member"], event["op"], event.get("value")
        when, meta, t = event.get("when"), event.get("meta"), event["t_ms"] / 1000
        region = (event.get("attrs") or {}).get("region")
        b = self.boards
        plain = [b["all"], b["skip"]]
        if region is not None:
            plain.append(b["region"].setdefault(region, Leaderboard()))
        if late is not None and region == "eu":
            plain.append(late)
        for board in plain:
            write(board, op, member, value, when, meta)
        periodic = b["daily"]
        periodic.now()  # a view's time moves with every event it takes
        b["win"].buckets.now()
        if op == "incr":
            periodic.incr(member, value, t=t, when=when)
            b["win"].incr(member, value, t=t, when=when)
        elif op == "set":
            periodic.set(member, value, t=t, when=when, meta=meta)
            b["win"].set(member, value, t=t, when=when, meta=meta)
        elif op == "remove":
            periodic.remove(member, t=t)
            b["win"].remove(member, t=t)
        else:  # metadata where the member is (the bucket of t, if held)
            for timed in (periodic, b["win"]):
                buckets = periodic if timed is periodic else b["win"].buckets
                bucket = period_board(buckets, buckets.period_of(t).name)
                if bucket is not None and member in bucket:
                    timed.set_meta(member, meta, t=t)
        b["win"].refresh()
        if region == "us":
            hot = b["hot"]
            if op == "incr":
                hot.add(member, value, t=t)
            elif op == "set":
                hot.set(member, value, t=t)
                if meta is not None:
                    hot.set_meta(member, meta)
            elif op == "remove":
                hot.remove(member)
            elif member in hot:
                hot.set_meta(member, meta)
        if op == "incr":
            b["trend"].add(member, 1)

    def state(self) -> dict[str, Any]:
        b = self.boards
        return {
            "all": board_state(b["all"]),
            "skip": board_state(b["skip"]),
            "daily": periodic_view(b["daily"]),
            "win": b["win"].board.items(),
            "hot": decayed_view(b["hot"]),
            "trend": [(i.key, i.count) for i in b["trend"].top()],
            "region": {k: board_state(v) for k, v in sorted(b["region"].items())},
        }


def write(board: Leaderboard, op: str, member: Any, value: Any, when: Any, meta: Any) -> None:  # noqa: PLR0917
    if op == "incr":
        board.incr(member, value, when=when)
    elif op == "set":
        board.set(member, value, when=when, meta=meta)
    elif op == "remove":
        board.remove(member)
    elif member in board:
        board.set_meta(member, meta)


def board_state(board: Leaderboard) -> Any:
    items = board.items()
    return items, [board.meta(m) for m, _ in items], board.clock


def periodic_view(periodic: PeriodicLeaderboard) -> Any:
    now, held_periods = periodic_state(periodic)
    return now, sorted((n, c, board_state(b)) for n, c, b in held_periods)


def decayed_view(decayed: DecayedLeaderboard) -> Any:
    t0, _, stored = decayed_state(decayed)
    return t0, board_state(stored)


def ledger_state(ledger: Ledger) -> dict[str, Any]:
    return {
        "all": board_state(ledger["all"]),
        "skip": board_state(ledger["skip"]),
        "daily": periodic_view(ledger["daily"]),
        "win": ledger["win"].board.items(),
        "hot": decayed_view(ledger["hot"]),
        "trend": [(i.key, i.count) for i in ledger["trend"].top()],
        "region": {k: board_state(v) for k, v in sorted(ledger["region"].items())},
    }


def norm(state: Any) -> Any:
    """Values with their types (1 and 1.0 differ), NaN-free."""
    return repr(state)


class LedgerMachine(RuleBasedStateMachine):
    @initialize()
    def start(self) -> None:
        self.directory = tempfile.mkdtemp(prefix="ledger-")
        self.ledger = Ledger.open(self.directory, fsync="never", compact_min_bytes=None)
        for name, kind, options in VIEWS:
            self.ledger.add_view(name, kind, **options)
        self.reference = Reference()
        self.time_ms = START_MS
        self.accepted: list[dict[str, Any]] = []
        self.late: Leaderboard | None = None

    def teardown(self) -> None:
        self.ledger.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    def _event(  # noqa: PLR0917
        self, member: Any, op: str, value: Any, step: int, region: Any, when: Any
    ) -> Any:
        event: dict[str, Any] = {"member": member, "op": op, "t_ms": max(0, self.time_ms + step)}
        if op in ("incr", "set"):
            event["value"] = value
            event["when"] = when
        if op == "set" and isinstance(value, int) and value % 3 == 0:
            event["meta"] = {"v": value}
        if op == "meta":
            event["meta"] = {"tag": str(value)}
        if region is not None:
            event["attrs"] = {"region": region}
        return event

    def _try(self, events: list[dict[str, Any]], ranks: bool = True) -> None:
        before = norm(ledger_state(self.ledger))
        seq = self.ledger.last_seq
        try:
            if len(events) == 1:
                fields = dict(events[0])
                member, value = fields.pop("member"), fields.pop("value", None)
                self.ledger.record(member, value, ranks=ranks, **fields)
            else:
                self.ledger.record_many(events)
        except (TypeError, ValueError, OverflowError):
            assert self.ledger.last_seq == seq
            assert norm(ledger_state(self.ledger)) == before, "a refused event changed a view"
            return
        assert self.ledger.last_seq == seq + 1
        for event in events:
            self.reference.feed(event, self.late)
            self.accepted.append(event)
            self.time_ms = max(self.time_ms, event["t_ms"])

    @rule(
        member=MEMBERS,
        op=OPS,
        value=VALUES,
        step=STEPS,
        region=REGIONS,
        when=WHENS,
        ranks=st.booleans(),
    )
    def record(  # noqa: PLR0917
        self, member: Any, op: str, value: Any, step: int, region: Any, when: Any, ranks: bool
    ) -> None:
        # (ranks=False with an int increment, no attributes and no when:
        # the ledger's fast path, which writes some boards directly)
        self._try([self._event(member, op, value, step, region, when)], ranks)

    @rule(
        batch=st.lists(
            st.tuples(MEMBERS, OPS, VALUES, st.integers(0, 600_000), REGIONS, WHENS),
            min_size=2,
            max_size=4,
        )
    )
    def record_many(self, batch: list[tuple[Any, ...]]) -> None:
        self._try([self._event(*item) for item in batch])

    @rule()
    def reopen(self) -> None:
        self.ledger.close()
        self.ledger = Ledger.open(self.directory, fsync="never", compact_min_bytes=None)

    @rule()
    def compact(self) -> None:
        self.ledger.compact()

    @precondition(lambda self: self.late is None)
    @rule()
    def add_late_view(self) -> None:
        self.ledger.add_view("late", "board", where={"region": "eu"})
        late = Leaderboard()
        for event in self.accepted:
            if (event.get("attrs") or {}).get("region") == "eu":
                write(late, event["op"], event["member"], event.get("value"),
                      event.get("when"), event.get("meta"))  # fmt: skip
        self.late = late

    @invariant()
    def views_equal_references(self) -> None:
        self.ledger._check()
        assert norm(ledger_state(self.ledger)) == norm(self.reference.state())
        if self.late is not None:
            assert norm(board_state(self.ledger["late"])) == norm(board_state(self.late))


LedgerMachine.TestCase.settings = settings(
    max_examples=20,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestLedgerMachine = LedgerMachine.TestCase
