"""Forgetting a member in a ledger: its events, its rows, every view.

:meth:`Ledger.forget <rankengine.ledger.ledger.Ledger.forget>` uses the
durable boards' crash-safe rewrite (:mod:`rankengine.durable.forget`): one
*plan* stages every file that holds the member -- each segment without the
member's events (a record left with none stays, empty, so sequence numbers
are unchanged), each view snapshot without their rows (a trending view's
snapshot without their candidate) -- then one journal switches the
directory to the new history, and an open finishes a journal a crash
interrupted.  In memory, every view drops the member (a Redis view in
Redis too).  A trending view's sketch keeps its anonymous counters (they
hold no names), so the member's past increments still weigh in estimates.

>>> import tempfile
>>> from rankengine import Ledger
>>> with tempfile.TemporaryDirectory() as tmp:
...     with Ledger.open(tmp) as ledger:
...         ledger.add_view("alltime")
...         _ = ledger.record("ann", 5); _ = ledger.record("bob", 3)
...         ledger.forget("ann")
...     with Ledger.open(tmp) as again:
...         again["alltime"].items()
1
[('bob', 3)]
"""

from __future__ import annotations

import os
import tempfile
from typing import TYPE_CHECKING, Any

from rankengine.board.leaderboard import Leaderboard
from rankengine.board.scoring import check_member
from rankengine.durable.forget import ForgetPlan
from rankengine.durable.snapshot import read_snapshot, write_snapshot_columns
from rankengine.ledger.adapters import Adapter, TopKAdapter
from rankengine.timed.state import decayed_state, periodic_state
from rankengine.trending.topk import TopK

if TYPE_CHECKING:
    from rankengine.ledger.ledger import Ledger

__all__ = ["forget_member"]


def _boards_of(adapter: Adapter) -> list[Leaderboard]:
    """Every in-process exact board a view's adapter keeps."""
    board = adapter.board
    if isinstance(board, Leaderboard):
        return [board]
    buckets = getattr(board, "buckets", None)
    if buckets is not None:  # a sliding window: its buckets and its window board
        return [b for _, _, b in periodic_state(buckets)[1]] + [board.board]
    if hasattr(board, "calendar"):  # a periodic board
        return [b for _, _, b in periodic_state(board)[1]]
    if hasattr(board, "rebase"):  # a decayed board
        return [decayed_state(board)[2]]
    return []


def _forget_in_memory(adapter: Adapter, member: Any) -> int:
    """Drop ``member`` from the view's boards (no record); boards it was on."""
    found = 0
    redis = getattr(adapter, "redis", None)
    if redis is not None and member in adapter.shadow:  # type: ignore[attr-defined]
        redis.remove(member)  # logged into the shadow
        return 1
    if isinstance(adapter, TopKAdapter):
        data = adapter.board.to_dict()
        kept = [c for c in data["candidates"] if not _same(c[0], member)]
        if len(kept) != len(data["candidates"]):
            data["candidates"] = kept
            adapter.board = TopK.from_dict(data)
            found += 1
        return found
    for board in _boards_of(adapter):
        if member in board:
            board._apply([(1, member)])  # DEL, without a listener: no record of it
            found += 1
    return found


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _stage_topk_snapshot(plan: ForgetPlan, path: str, member: Any) -> None:
    """Stage a trending view's snapshot without ``member``'s candidate."""
    snap = read_snapshot(path)
    part = dict(snap.header.get("part", {}))
    data = TopK.from_bytes(part["topk"]).to_dict()
    kept = [c for c in data["candidates"] if not _same(c[0], member)]
    if len(kept) == len(data["candidates"]):
        return
    data["candidates"] = kept
    part["topk"] = TopK.from_dict(data).to_bytes()
    header = {k: v for k, v in snap.header.items() if k not in ("count", "negated_clocks")}
    header["part"] = part
    with tempfile.TemporaryDirectory(dir=os.path.dirname(path)) as tmp:
        scratch = os.path.join(tmp, "part.snap")
        write_snapshot_columns(scratch, header, ([], [], [], {}))
        with open(scratch, "rb") as handle:
            plan.stage_bytes(path, handle.read())


def forget_member(ledger: Ledger, member: Any) -> int:
    """Scrub ``member`` from the ledger's files and views; return how many
    boards held them.  The caller holds the ledger's lock.

    Runtime complexity: O(size of the ledger's files)
    """
    member = check_member(member)
    files = ledger._files
    found = 0
    if files is not None:
        files.check_writable()
        files.sync()  # (the active segment is read back from the file)
        assert files.writer is not None
        plan = ForgetPlan(files.path)
        manifest = files.manifest
        active = manifest.segments[-1][0]
        try:
            for name, _ in manifest.segments:
                limit = files.writer.end if name == active else None
                plan.stage_segment(os.path.join(files.path, name), member, limit=limit)
            for view_name, (_, listed) in manifest.config.get("snapshots", {}).items():
                view = ledger._views[view_name]
                for _key, file_name in listed:
                    path = os.path.join(files.view_dir(view_name), file_name)
                    if view.kind == "topk":
                        _stage_topk_snapshot(plan, path, member)
                    else:
                        board = view.template.new_board()
                        plan.stage_snapshot(path, member, columns=board._codec.columns)
        except BaseException:
            plan.discard()
            raise
        plan.commit()
        if any(final == os.path.join(files.path, active) for _, final in plan.renames):
            files.reopen_active()
    for view in ledger._views.values():
        for adapter in view.adapters.values():
            found += _forget_in_memory(adapter, member)
    return found
