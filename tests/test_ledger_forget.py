"""Forgetting a member in a ledger: every view, every byte, every crash point.

A ledger with one view of every kind (an exact board, a routed board per
region, a filtered board, a daily periodic board, a sliding window, a
decayed board and a trending TopK) records a random history in which the
target member scores, sets metadata and carries a secret attribute.  After
``forget``, every file under the directory is scanned for the member's id,
metadata and attribute, raw and msgpack-encoded, and must hold none; every
view must be what a ledger that never saw the member holds (the same
events less the member's); reopening must agree and pass ``_check()``.  A
child process killed at every step of the forget leaves a ledger that
opens with the old history or the new one, never a mix, and once the
forget is finished the scan finds nothing.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import uuid
import warnings
from pathlib import Path
from typing import Any

import msgpack
import pytest
from redis_service import redis_server_fixture, redis_url_fixture  # noqa: F401 -- fixtures

from rankengine import Ledger, RedisLeaderboard
from rankengine.cli.main import main as cli_main
from rankengine.durable.forget import FORGET_JOURNAL, STAGED_SUFFIX, Forgotten
from rankengine.durable.manifest import read_manifest
from rankengine.durable.records import CRASH_ENV, LogError, RecoveryWarning
from rankengine.ledger.storage import read_events

CHILD = Path(__file__).with_name("ledger_forget_child.py")
ROOT = Path(__file__).resolve().parent.parent

TARGET = "zed-forget-me-42"
SECRET: dict[str, Any] = {"mail": "zed-secret@example.org", "tags": ["zed-tag-9"]}
SECRET_ATTR = "zed-device-77"
OTHERS = [f"p{i}" for i in range(10)]
REGIONS = ["eu", "us", "ap"]
#: 2027-01-01T00:00Z in ms
T0 = 1_798_761_600_000
STEP_MS = 7 * 60_000


def needles() -> list[bytes]:
    """The member's id, metadata and secret attribute, raw and msgpack-encoded."""
    out: list[bytes] = []
    for text in (TARGET, SECRET["mail"], SECRET["tags"][0], SECRET_ATTR):
        raw = text.encode()
        out += [raw, msgpack.packb(text), msgpack.packb(raw, use_bin_type=True)]
    return out


def scan(root: Path) -> list[tuple[str, bytes]]:
    """Every (file, needle) such that a file under ``root`` holds the needle."""
    found = []
    patterns = needles()
    for directory, _, names in os.walk(root):
        for name in names:
            data = Path(directory, name).read_bytes()
            found += [(os.path.join(directory, name), n) for n in patterns if n in data]
    return found


def add_views(ledger: Ledger) -> None:
    ledger.add_view("alltime")
    ledger.add_view("region", by="region")
    ledger.add_view("eu", where={"region": "eu"})
    ledger.add_view("daily", "periodic", calendar="daily")
    ledger.add_view("win", "window", calendar="hourly", buckets=3)
    ledger.add_view("hot", "decayed", half_life=3600.0)
    ledger.add_view("trend", "topk", k=4, width=64, depth=3, seed=1)


def events(rng: random.Random, n: int, start: int = 0) -> list[dict[str, Any]]:
    """A random history; the last event is another member's (so the ledger's
    clock, the latest event time, is the same with and without the target)."""
    out = []
    for i in range(start, start + n):
        last = i == start + n - 1
        member = TARGET if rng.random() < 0.3 and not last else rng.choice(OTHERS)
        attrs: dict[str, Any] = {"region": rng.choice(REGIONS)}
        if member == TARGET:
            attrs["device"] = SECRET_ATTR
        item: dict[str, Any] = {"member": member, "t_ms": T0 + i * STEP_MS, "attrs": attrs}
        kind = rng.random()
        if kind < 0.6 or last:
            item.update(op="incr", value=rng.randrange(1, 6))
        elif kind < 0.8:
            meta = SECRET if member == TARGET else {"who": f"{member}-meta"}
            item.update(op="set", value=rng.randrange(0, 40), meta=meta)
        elif kind < 0.9:
            item.update(op="remove")
        else:
            meta = SECRET if member == TARGET else {"who": f"{member}-{i}"}
            item.update(op="meta", meta=meta)
        out.append(item)
    return out


def play(ledger: Ledger, items: list[dict[str, Any]], skip: Any = None, every: int = 0) -> None:
    for n, item in enumerate(items, 1):
        if item["member"] != skip:
            fields = dict(item)
            ledger.record(fields.pop("member"), fields.pop("value", None), **fields)
        if every and n % every == 0:
            ledger.compact()


def _board_state(board: Any) -> Any:
    items = board.items()
    return items, {m: board.meta(m) for m, _ in items}


def state(ledger: Ledger, topk: bool = True) -> dict[str, Any]:
    """Every view's saved state: its parts' headers and boards' rows.

    With ``topk=False`` (a ledger rebuilt from snapshots) the trending view
    is left out, and the decayed view is compared by its values now (to 9
    significant digits): its stored values are relative to the time of its
    last re-base, which an event of the member may have set.
    """
    out: dict[str, Any] = {}
    for name, view in ledger._views.items():
        if view.kind == "decayed" and not topk:
            hot = view.board()
            out[name] = [(m, float(f"{v:.9g}")) for m, v in hot.items()]
            out[name + " meta"] = {m: hot.meta(m) for m, _ in hot.items()}
            continue
        parts = []
        for key, (header, board) in sorted(view.export(), key=lambda p: repr(p[0])):
            if "topk" in header and not topk:
                continue
            parts.append((key, header, None if board is None else _board_state(board)))
        out[name] = parts
    return out


def model(items: list[dict[str, Any]], every: int = 0) -> Ledger:
    """An in-memory ledger that never saw the target."""
    ledger = Ledger()
    add_views(ledger)
    play(ledger, items, skip=TARGET, every=every)
    return ledger


def assert_no_target_events(path: Path) -> None:
    manifest = read_manifest(str(path))
    first = manifest.segments[0][1] - 1
    for record in read_events(str(path), manifest, first):
        assert all(change[1] != TARGET for change in record.changes)


# ----------------------------------------------------------------------
# Every view, every byte
# ----------------------------------------------------------------------
@pytest.mark.parametrize(("retain", "from_log"), [(True, True), (True, False), (False, False)])
@pytest.mark.parametrize("seed", [1, 2])
def test_forget_leaves_what_a_ledger_that_never_saw_the_member_holds(
    tmp_path: Path, seed: int, retain: bool, from_log: bool
) -> None:
    rng = random.Random(seed)
    items = events(rng, 90)
    with Ledger.open(tmp_path, retain_log=retain, compact_min_bytes=None) as ledger:
        add_views(ledger)
        play(ledger, items, every=25)
        assert scan(tmp_path)  # (the scan can find the member: it is there)
        seq = ledger.last_seq
        done = ledger.forget(TARGET, from_log=from_log)
        assert done.present and done.records > 0 and done.files > 0
        assert ledger.last_seq == seq
        ledger._check()
        expected = model(items)
        # A trending view rebuilt from a snapshot keeps the sketch's
        # counters (no id): exact only when rebuilt from the whole log.
        assert state(ledger, topk=from_log) == state(expected, topk=from_log)
        assert TARGET not in ledger["trend"]
        assert scan(tmp_path) == []
        more = events(rng, 20, start=90)
        play(ledger, [i for i in more if i["member"] != TARGET])
        play(expected, [i for i in more if i["member"] != TARGET])
    with Ledger.open(tmp_path, retain_log=retain) as reopened:
        reopened._check()
        assert reopened.last_seq == seq + sum(i["member"] != TARGET for i in more)
        assert state(reopened, topk=from_log) == state(expected, topk=from_log)
    assert scan(tmp_path) == []
    assert not any(
        FORGET_JOURNAL in n or STAGED_SUFFIX in n for _, _, ns in os.walk(tmp_path) for n in ns
    )
    assert_no_target_events(tmp_path)


def test_from_log_needs_the_whole_history(tmp_path: Path) -> None:
    with Ledger.open(tmp_path, retain_log=False) as ledger:
        add_views(ledger)
        play(ledger, events(random.Random(9), 40), every=15)
        before = state(ledger)
        files = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
        with pytest.raises(LogError, match="whole history"):
            ledger.forget(TARGET, from_log=True)
        assert state(ledger) == before
        assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == files
        ledger.forget(TARGET)
        assert scan(tmp_path) == []


@pytest.mark.parametrize("from_log", [False, True])
def test_a_routed_board_only_the_member_made_goes_with_its_key(
    tmp_path: Path, from_log: bool
) -> None:
    with Ledger.open(tmp_path) as ledger:
        ledger.add_view("device", by="device")
        ledger.record(TARGET, 5, t_ms=T0, attrs={"device": SECRET_ATTR})
        ledger.record("p1", 3, t_ms=T0 + 1, attrs={"device": "phone"})
        ledger.record("p2", 2, t_ms=T0 + 2, attrs={"device": "phone"})
        ledger.remove("p2", t_ms=T0 + 3, attrs={"device": "tv"})  # an empty board of others'
        ledger.compact()
        ledger.record("p1", 1, t_ms=T0 + 4, attrs={"device": "phone"})
        ledger.forget(TARGET, from_log=from_log)
        assert sorted(ledger["device"]) == ["phone", "tv"]
        assert ledger["device"]["phone"].items() == [("p1", 4), ("p2", 2)]
        assert scan(tmp_path) == []
    with Ledger.open(tmp_path) as reopened:
        reopened._check()
        assert sorted(reopened["device"]) == ["phone", "tv"]


def test_an_in_memory_ledger_forgets_too() -> None:
    items = events(random.Random(5), 60)
    ledger = Ledger()
    add_views(ledger)
    play(ledger, items)
    done = ledger.forget(TARGET)
    assert done.present and done.records == sum(i["member"] == TARGET for i in items)
    ledger._check()
    assert state(ledger) == state(model(items))
    assert ledger._history is not None
    assert not any(c[1] == TARGET for r in ledger._history for c in r.changes)


def test_a_member_removed_earlier_is_still_scrubbed(tmp_path: Path) -> None:
    with Ledger.open(tmp_path) as ledger:
        add_views(ledger)
        ledger.set(TARGET, 5, meta=SECRET, t_ms=T0, attrs={"device": SECRET_ATTR})
        ledger.record("p1", 3, t_ms=T0 + 1)
        ledger.remove(TARGET, t_ms=T0 + 2)
        ledger.compact()
        ledger.record("p2", 4, t_ms=T0 + 3)
        done = ledger.forget(TARGET)
        assert not done.present and done.records == 2 and done.files > 0
        assert ledger.last_seq == 4
        assert scan(tmp_path) == []
        ledger._check()
    with Ledger.open(tmp_path) as reopened:
        assert reopened["alltime"].items() == [("p2", 4), ("p1", 3)]


def test_forgetting_a_member_with_no_trace_changes_nothing(tmp_path: Path) -> None:
    with Ledger.open(tmp_path) as ledger:
        add_views(ledger)
        play(ledger, events(random.Random(3), 30))
        ledger.flush()
        before = {
            p: Path(p).read_bytes() for p in map(str, tmp_path.rglob("*")) if Path(p).is_file()
        }
        assert ledger.forget("nobody-ever") == Forgotten(False, 0, 0, 0)
        after = {
            p: Path(p).read_bytes() for p in map(str, tmp_path.rglob("*")) if Path(p).is_file()
        }
        assert after == before


def test_bad_input_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    with Ledger.open(tmp_path) as ledger:
        add_views(ledger)
        play(ledger, events(random.Random(4), 30))
        expected = state(ledger)
        with pytest.raises(TypeError):
            ledger.forget(1.5)
        with pytest.raises(TypeError):
            ledger.forget(["x"])
        assert state(ledger) == expected
        assert scan(tmp_path)
    with pytest.raises(ValueError, match="closed"):
        ledger.forget(TARGET)


def test_the_cli_forgets_in_a_ledger_directory(tmp_path: Path, capsys: Any) -> None:
    items = events(random.Random(6), 40)
    with Ledger.open(tmp_path) as ledger:
        add_views(ledger)
        play(ledger, items)
    assert cli_main(["forget", str(tmp_path), TARGET]) == 0
    assert "forgot" in capsys.readouterr().out
    assert scan(tmp_path) == []
    with Ledger.open(tmp_path) as reopened:
        reopened._check()
        assert state(reopened, topk=False) == state(model(items), topk=False)


# ----------------------------------------------------------------------
# SIGKILL at every step of a forget
# ----------------------------------------------------------------------
#: Every named step of a forget: the first three come before the commit
#: (the journal's rename), the rest after it.
FORGET_STEPS = [
    "forget_stage",
    "snapshot_rename",
    "forget_journal_rename",
    "after_forget_journal",
    "forget_rename",
    "after_forget",
]
COMMITTED = FORGET_STEPS.index("after_forget_journal")


def run_child(directory: Path, step: str | None) -> int:
    env = dict(os.environ)
    env.pop(CRASH_ENV, None)
    if step is not None:
        env[CRASH_ENV] = step
    proc = subprocess.run(
        [sys.executable, str(CHILD), str(directory), TARGET],
        env=env,
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    if step is None:
        assert proc.returncode == 0, proc.stderr
    return proc.returncode


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")
@pytest.mark.parametrize("step", FORGET_STEPS)
def test_sigkill_during_a_forget_leaves_old_or_new_history(tmp_path: Path, step: str) -> None:
    items = events(random.Random(11), 60)
    with Ledger.open(tmp_path, fsync="always") as ledger:
        add_views(ledger)
        play(ledger, items, every=20)
        before = state(ledger)
    after = state(model(items), topk=False)
    assert run_child(tmp_path, step) == -signal.SIGKILL
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RecoveryWarning)
        with Ledger.open(tmp_path) as reopened:
            reopened._check()
            got, got_loose = state(reopened), state(reopened, topk=False)
    assert not any(
        FORGET_JOURNAL in n or STAGED_SUFFIX in n for _, _, ns in os.walk(tmp_path) for n in ns
    )
    if FORGET_STEPS.index(step) >= COMMITTED:
        assert got_loose == after
        assert scan(tmp_path) == []
    else:
        assert got == before
        assert scan(tmp_path)
        run_child(tmp_path, None)
        assert scan(tmp_path) == []
        with Ledger.open(tmp_path) as done:
            done._check()
            assert state(done, topk=False) == after
    assert_no_target_events(tmp_path)


# ----------------------------------------------------------------------
# The Redis view's serving copy
# ----------------------------------------------------------------------
def test_the_redis_serving_copy_forgets_the_member(redis_url: str, tmp_path: Path) -> None:
    pytest.importorskip("redis")
    name = f"ledger-forget-{uuid.uuid4().hex[:8]}"
    items = events(random.Random(8), 50)
    with Ledger.open(tmp_path) as ledger:
        ledger.add_view("alltime")
        ledger.add_view("serving", "redis", url=redis_url, board=name)
        play(ledger, items, every=20)
        ledger.set(TARGET, 99, t_ms=T0 + 10**8, meta=SECRET, attrs={"device": SECRET_ATTR})
        assert TARGET in dict(RedisLeaderboard(redis_url, name).items())
        ledger.forget(TARGET)
        ledger._check()
        assert RedisLeaderboard(redis_url, name).items() == ledger["alltime"].items()
        assert TARGET not in ledger["alltime"]
        assert scan(tmp_path) == []
    with Ledger.open(tmp_path) as reopened:
        reopened._check()
        assert RedisLeaderboard(redis_url, name).items() == reopened["alltime"].items()
