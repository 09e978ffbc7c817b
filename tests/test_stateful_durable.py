"""Random operation sequences on durable boards, checked against the model.

A Hypothesis state machine drives a durable board (``Leaderboard.open`` on a
fresh temporary directory) and ``tests/model.py`` side by side.  Each run
draws the order (scalar or composite), the tie-break, the default rank
style, the member type, the backend and ``retain_log``; the fsync policy is
fixed per machine (``"never"`` for most runs, ``"always"`` for a few).

* **Writes**: every write of the API (``when=`` conditions included), each
  run on the model and on the board with the same result or the same error.
  A write that changes the model's state must append exactly one record
  (``last_seq`` goes up by one); one that changes nothing appends none.
  The model's state is kept for every seq, as the history to replay.
* **Durability**: ``compact()`` / ``snapshot()``; ``close()`` and a reopen
  with the same settings, or with the other backend (the log and snapshots
  do not depend on the in-memory structure: ``docs/durability.md``, "backend
  may change"); ``rebuild(path, until_seq=S)`` for an earlier seq ``S``,
  which must equal the model as it was at ``S`` -- or, on a board without
  ``retain_log`` whose snapshot is newer than ``S``, raise ``LogError``.
  After every compaction, close and reopen, ``verify`` finds the directory
  healthy; a reopen and a rebuild warn of nothing (no torn tail, nothing
  to recover).
* **After every step** the board passes ``_check()`` and matches the model:
  items with score types, metadata, ranks in every style, logical clock and
  ``last_seq``; no member is missing from the tie map deep in a run.
"""

from __future__ import annotations

import shutil
import tempfile
import warnings
from typing import Any

import pytest
from conftest import untied_far_members
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, rule
from model import Model
from test_stateful import (
    CROWDS,
    FLAGS,
    ORDERS,
    POOLS,
    STATEFUL_SETTINGS,
    LeaderboardMachine,
    exact,
    norm,
)

from rankengine import Leaderboard
from rankengine.durable.board import DurableLeaderboard, rebuild
from rankengine.durable.eventlog import LogError
from rankengine.durable.manifest import verify

DURABLE_BACKENDS = ["sortedlist", "skiplist"]
OTHER_BACKEND = {"sortedlist": "skiplist", "skiplist": "sortedlist"}

#: The model's state at one seq: scores, stamps, metadata, clock.
ModelState = tuple[Any, ...]


def model_at(template: Model, state: ModelState) -> Model:
    """A model with ``template``'s settings holding ``state``."""
    model = Model(
        order=template.order, tie_break=template.tie_break, rank_style=template.rank_style
    )
    model._load(tuple(dict(part) if isinstance(part, dict) else part for part in state))
    return model


def assert_matches(board: Leaderboard, model: Model) -> None:
    """``board`` holds what ``model`` does: items (with score types), ranks in
    every style, metadata and the logical clock."""
    items = board.items()
    assert exact(items) == exact(model.items())
    assert len(board) == len(model)
    assert board.clock == model.clock
    assert [board.meta(m) for m, _ in items] == [model.meta(m) for m, _ in items]
    for style in ("unique", "dense", "competition"):
        ranks = [rank for _, _, rank, _ in model.rows(style)]
        assert [board.rank(m, style=style) for m, _ in items] == ranks


def assert_healthy(path: str) -> None:
    """``rankengine verify`` finds nothing wrong in directory ``path``."""
    report = verify(path)
    assert report.healthy, [str(finding) for finding in report.findings]
    assert not [f for f in report.findings if f.severity != "note"]


class DurableLeaderboardMachine(LeaderboardMachine):
    """A durable board and the model, through writes, compactions, reopens
    and point-in-time rebuilds.

    The writes and reads are :class:`LeaderboardMachine`'s rules, run
    through this machine's :meth:`same`, which also checks the log: one
    record for a write that changes the board, none otherwise."""

    fsync = "never"

    def __init__(self) -> None:
        super().__init__()
        self.path: str | None = None
        self.board: DurableLeaderboard | None = None
        self.model: Model = Model()
        self.pool: list[Any] = []
        self.crowd: list[Any] = []
        self.composite = False
        self.backend = "sortedlist"
        self.retain_log = False
        #: the model's state after each logged write, by seq (0: empty)
        self.history: dict[int, ModelState] = {}
        #: the seqs of the snapshots written
        self.snapshot_seqs: list[int] = []

    # ------------------------------------------------------------------
    # setup and teardown
    # ------------------------------------------------------------------
    @initialize(data=st.data())
    def setup(self, data: Any) -> None:
        order = data.draw(st.sampled_from(ORDERS), label="order")
        tie_break = data.draw(st.sampled_from(["first", "member"]), label="tie_break")
        style = data.draw(st.sampled_from(["unique", "dense", "competition"]), label="style")
        kinds = ["str", "int", "bytes"] + (["mixed"] if tie_break == "first" else [])
        kind = data.draw(st.sampled_from(kinds), label="members")
        self.backend = data.draw(st.sampled_from(DURABLE_BACKENDS), label="backend")
        self.retain_log = data.draw(st.booleans(), label="retain_log")
        self.pool, self.crowd = POOLS[kind], CROWDS[kind]
        self.composite = isinstance(order, tuple)
        self.model = Model(order=order, tie_break=tie_break, rank_style=style)
        self.path = tempfile.mkdtemp(prefix="rankengine-stateful-")
        self.board = self._open(self.backend, order=order, tie_break=tie_break, rank_style=style)
        self.history = {0: self.model._save()}

    def teardown(self) -> None:
        if self.board is not None:
            self.board.close()
        if self.path is not None:
            shutil.rmtree(self.path, ignore_errors=True)

    def _open(self, backend: str, **settings: Any) -> DurableLeaderboard:
        assert self.path is not None
        board = Leaderboard.open(
            self.path,
            fsync=self.fsync,
            backend=backend,
            retain_log=self.retain_log,
            compact_min_bytes=None,  # compactions only where a rule asks for one
            **settings,
        )
        assert isinstance(board, DurableLeaderboard)
        return board

    # ------------------------------------------------------------------
    # helpers
    # ------------------------------------------------------------------
    def same(self, call: Any) -> Any:
        """Run ``call`` on the model and on the board: the same result or the
        same error; then one record if the model's state changed, else none."""
        assert self.board is not None
        before_seq, before = self.board.last_seq, self.model._save()
        try:
            want = call(self.model)
        except (ValueError, KeyError, IndexError) as exc:
            with pytest.raises(type(exc)):
                call(self.board)
            assert self.board.last_seq == before_seq, "a refused write was logged"
            return None
        got = norm(call(self.board))
        assert got == want
        after = self.model._save()
        if after == before:
            assert self.board.last_seq == before_seq, "a write that changed nothing was logged"
        else:
            assert self.board.last_seq == before_seq + 1, "not one record for one write"
            self.history[self.board.last_seq] = after
        return got

    # ------------------------------------------------------------------
    # durability
    # ------------------------------------------------------------------
    @rule(alias=FLAGS)
    def compact(self, alias: bool) -> None:
        """``compact()`` (or its alias ``snapshot()``) covers every write so
        far, changes nothing visible and leaves a healthy directory."""
        assert self.board is not None and self.path is not None
        seq = self.board.snapshot() if alias else self.board.compact()
        assert seq == self.board.last_seq
        self.snapshot_seqs.append(seq)
        assert_healthy(self.path)

    @rule(explicit=FLAGS, other_backend=FLAGS)
    def reopen(self, explicit: bool, other_backend: bool) -> None:
        """``close()`` and open again: with the same settings (given again, or
        left to the stored ones) or with the other backend.  The reopened
        board equals the model and goes on from the same seq; ``verify``
        finds the directory healthy after the close and after the reopen."""
        assert self.board is not None and self.path is not None
        seq = self.board.last_seq
        self.board.close()
        self.board = None
        assert_healthy(self.path)
        if other_backend:
            self.backend = OTHER_BACKEND[self.backend]
        settings = (
            {
                "order": self.model.order,
                "tie_break": self.model.tie_break,
                "rank_style": self.model.rank_style,
            }
            if explicit
            else {}
        )
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # nothing torn, nothing to recover
            self.board = self._open(self.backend, **settings)
        assert self.board.last_seq == seq
        assert self.board.recovery_notes == []
        assert_healthy(self.path)

    @rule(data=st.data(), from_log=FLAGS, backend=st.sampled_from(DURABLE_BACKENDS))
    def rebuild_at(self, data: Any, from_log: bool, backend: str) -> None:
        """``rebuild(path, until_seq=S)`` for a seq ``S`` reached earlier
        equals the model as it was at ``S``.  Without ``retain_log``, a seq
        before the newest snapshot (or any replay ``from_log`` once a
        compaction dropped records) raises ``LogError``."""
        assert self.path is not None
        seqs = sorted(self.history)
        # the seqs next to a snapshot are where an off-by-one would show
        edges = sorted({s + d for s in self.snapshot_seqs for d in (-1, 0, 1)} & set(seqs))
        seq = data.draw(st.sampled_from(seqs) | st.sampled_from(edges or seqs), label="until_seq")
        snapshot_seq = max(self.snapshot_seqs, default=0)
        kept = self.retain_log or (seq >= snapshot_seq and not (from_log and snapshot_seq))
        if not kept:
            with pytest.raises(LogError, match="compacted away"):
                rebuild(self.path, until_seq=seq, from_log=from_log, backend=backend)
            return
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            rebuilt = rebuild(self.path, until_seq=seq, from_log=from_log, backend=backend)
        rebuilt._check()
        assert_matches(rebuilt, model_at(self.model, self.history[seq]))
        assert untied_far_members(rebuilt) == []

    # ------------------------------------------------------------------
    # after every step
    # ------------------------------------------------------------------
    @invariant()
    def matches_model(self) -> None:
        """The board is consistent and equals the model, up to the last seq."""
        board = self.board
        if board is None:
            return
        board._check()
        assert_matches(board, self.model)
        assert board.last_seq == max(self.history)
        assert untied_far_members(board) == []


DURABLE_SETTINGS = settings(STATEFUL_SETTINGS, max_examples=250)

TestDurableStateful = DurableLeaderboardMachine.TestCase
TestDurableStateful.settings = DURABLE_SETTINGS


class AlwaysSyncedMachine(DurableLeaderboardMachine):
    """The same machine under ``fsync="always"`` (the unmapped writer)."""

    fsync = "always"


TestDurableStatefulAlways = AlwaysSyncedMachine.TestCase
TestDurableStatefulAlways.settings = settings(
    DURABLE_SETTINGS, max_examples=25, stateful_step_count=30
)
