"""Truncation sweeps: a log cut short is reported, never read as healthy.

A cleanly closed board's log is cut at every record boundary and at every
byte of its last three records; a crashed (SIGKILLed) board's log is cut
at every record boundary below its high-water mark and at every boundary
and byte above it.  Below a mark each cut must be detected -- the open
refuses with :class:`AcknowledgedLossError` naming the right count of
missing records, ``verify`` exits 1 with that finding, ``rebuild`` refuses
too -- and above the mark of an unclosed board a cut is a torn tail (or a
shorter log) recovered exactly.  ``silent`` counts the cuts that opened
without a word while losing a record the marks name: it must stay 0.
"""

from __future__ import annotations

import shutil
import signal
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankengine import Leaderboard
from rankengine.durable.board import rebuild
from rankengine.durable.eventlog import SegmentReader
from rankengine.durable.manifest import read_manifest
from rankengine.durable.marks import AcknowledgedLossError, high_water
from rankengine.durable.records import TornTailWarning
from rankengine.durable.verify import verify
from rankengine.timed.periodic import PeriodicLeaderboard

sys.path.insert(0, str(Path(__file__).parent))
from seal_child import SealChild, expected_board

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")


def records_of(segment: Path) -> list[tuple[int, int, int]]:
    """``(seq, start, end)`` of every record of ``segment``."""
    out = []
    with SegmentReader(str(segment)) as reader:
        for event in reader.events():
            out.append((event.seq, reader.at, reader.end))
        assert reader.torn is None
    return out


def cuts(records: list[tuple[int, int, int]], start: int, last: int = 3) -> list[tuple[int, int]]:
    """``(offset, last whole seq before it)``: every record boundary (the
    header's end included) and every byte inside the ``last`` records."""
    first = records[0][0]
    out = [(start, first - 1)] + [(end, seq) for seq, _, end in records[:-1]]
    for seq, at, end in records[-last:]:
        out += [(offset, seq - 1) for offset in range(at + 1, end)]
    return out


def expect_loss(directory: Path, last: int, mark: int, open_board: Any) -> None:
    """Every reader of ``directory`` reports ``mark - last`` records missing after ``last``."""
    with pytest.raises(AcknowledgedLossError) as caught, warnings.catch_warnings():
        warnings.simplefilter("error", TornTailWarning)  # never "the last write was interrupted"
        open_board()
    assert (caught.value.last_seq, caught.value.missing) == (last, mark - last)
    assert f"{mark - last} acknowledged records missing after seq {last}" in str(caught.value)
    report = verify(str(directory))
    assert report.exit_code == 1
    assert any(
        f.severity == "damage"
        and f"{mark - last} acknowledged records missing after seq {last}" in f.message
        for f in report.findings
    ), [str(f) for f in report.findings]
    assert not report.torn
    with pytest.raises(AcknowledgedLossError):
        rebuild(directory)


def clean_board(directory: Path, *, retain_log: bool = False) -> int:
    """A cleanly closed board of ~45 records across a compaction; its last seq."""
    with Leaderboard.open(directory, fsync="never", retain_log=retain_log) as board:
        for i in range(15):
            board.incr(f"p{i % 6}", i + 1)
        board.compact()
        for i in range(30):
            if i % 4 == 0:
                board.set_many({f"p{i % 6}": i, f"q{i}": -i})
            else:
                board.set(f"p{i % 5}", i * 1.5, meta={"i": i} if i % 3 else None)
        return int(board.last_seq)


def test_cuts_of_a_cleanly_closed_log_are_each_reported_with_their_count(tmp_path: Path) -> None:
    directory = tmp_path / "board"
    last = clean_board(directory)
    (segment,) = sorted(directory.glob("log-*.seg"))
    data = segment.read_bytes()
    records = records_of(segment)
    assert records[-1][0] == last
    detected = silent = 0
    for offset, whole in cuts(records, records[0][1]):
        segment.write_bytes(data[:offset])
        try:
            expect_loss(directory, whole, last, lambda: Leaderboard.open(directory))
            detected += 1
        except AssertionError:
            silent += 1
            raise
    segment.write_bytes(data)
    with Leaderboard.open(directory) as board:  # the whole log still opens
        assert board.last_seq == last
    assert silent == 0
    assert detected == len(records) + sum(end - at - 1 for _, at, end in records[-3:])


def test_a_cut_in_retained_history_is_reported_by_a_replay_from_the_log(tmp_path: Path) -> None:
    # with retain_log the first segment (seq 1..15) stays, before the
    # snapshot the board opens from: cut, it fails a replay from seq 1 with
    # the count of the records missing before the next segment
    directory = tmp_path / "board"
    clean_board(directory, retain_log=True)
    first = sorted(directory.glob("log-*.seg"))[0]
    data = first.read_bytes()
    records = records_of(first)
    for offset, whole in cuts(records, records[0][1]):
        first.write_bytes(data[:offset])
        with Leaderboard.open(directory) as board:  # the board itself is whole
            board._check()
        with pytest.raises(AcknowledgedLossError) as caught:
            rebuild(directory, from_log=True)
        assert caught.value.missing == 15 - whole
        report = verify(str(directory))
        assert report.exit_code in (1, 4)  # history
        assert any(f"missing after seq {whole}" in f.message for f in report.findings)
    first.write_bytes(data)
    assert verify(str(directory)).healthy


def test_cuts_of_a_crashed_board_below_its_mark_are_damage_above_it_a_torn_tail(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "board"
    # 20 writes, a high-water checkpoint of them, 12 more writes, then SIGKILL
    child = SealChild(directory, "checkpoint", 20, 12)
    assert child.wait_for("ready"), child.lines[-3:]
    child.proc.send_signal(signal.SIGKILL)
    assert child.finish() == -signal.SIGKILL
    acked = child.acked()
    manifest = read_manifest(str(directory))
    mark = high_water(manifest)[0]
    assert not manifest.sealed and mark >= 20 and acked == 32
    intact = tmp_path / "intact"
    shutil.copytree(directory, intact)
    (segment,) = sorted(directory.glob("log-*.seg"))
    records = records_of(segment)
    data = segment.read_bytes()[: records[-1][2]]  # (without the reserved zeros a kill leaves)
    manifest_bytes = (directory / "MANIFEST").read_bytes()
    below = above = 0
    truth: dict[int, Any] = {}
    # every boundary, every byte of the last record, and the whole log
    for offset, whole in [*cuts(records, records[0][1], 1), (records[-1][2], records[-1][0])]:
        segment.write_bytes(data[:offset])
        (directory / "MANIFEST").write_bytes(manifest_bytes)  # (a close seals it anew)
        if whole < mark:
            expect_loss(directory, whole, mark, lambda: Leaderboard.open(directory))
            below += 1
            continue
        # a torn tail: some bytes of the next record are left, not only
        # zeros (its length's first bytes are zeros: they read as the clean
        # end, as the zeros an everysec writer reserves do)
        start = {seq: at for seq, at, _ in records}.get(whole + 1, offset)
        torn = any(data[start:offset])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            board = Leaderboard.open(directory, fsync="never")
        with board:
            assert board.last_seq == whole
            board._check()
            if whole not in truth:
                exact = rebuild(intact, until_seq=whole)
                truth[whole] = (exact.items(), [exact.meta(m) for m, _ in exact.items()])
            assert (board.items(), [board.meta(m) for m, _ in board.items()]) == truth[whole]
        assert any(issubclass(w.category, TornTailWarning) for w in caught) == torn
        above += 1
    assert below >= 20 and above >= 12 + 10
    segment.write_bytes(data)
    (directory / "MANIFEST").write_bytes(manifest_bytes)
    with Leaderboard.open(directory) as board:
        reference = expected_board(acked)
        assert board.items() == reference.items()


def test_cuts_of_a_closed_period_board_are_reported(tmp_path: Path) -> None:
    # a durable periodic board keeps each period in periods/<name>/, a
    # durable board of its own, sealed when the periodic board closes
    options: dict[str, Any] = {"fsync": "never", "clock": lambda: 1_780_000_000.0}
    with PeriodicLeaderboard.open(tmp_path, "daily", **options) as board:
        for i in range(12):
            board.incr(f"p{i % 4}", i + 1)
        (period,) = board.periods()
    directory = tmp_path / "periods" / period.name
    (segment,) = sorted(directory.glob("log-*.seg"))
    data = segment.read_bytes()
    records = records_of(segment)
    for offset, whole in cuts(records, records[0][1]):
        segment.write_bytes(data[:offset])
        expect_loss(
            directory, whole, 12, lambda: PeriodicLeaderboard.open(tmp_path, "daily", **options)
        )
    segment.write_bytes(data)
    with PeriodicLeaderboard.open(tmp_path, "daily", **options) as again:
        assert again.board(period).score("p0") == 1 + 5 + 9


@settings(max_examples=25, deadline=None)
@given(
    writes=st.lists(
        st.tuples(st.integers(0, 5), st.integers(-50, 50) | st.floats(-1e6, 1e6)),
        min_size=1,
        max_size=25,
    ),
    data=st.data(),
)
def test_any_cut_of_a_sealed_log_is_reported_or_reads_whole(writes: Any, data: Any) -> None:
    # the model: a sealed log cut anywhere before its end has lost exactly
    # the records after the last whole one; cut at its end it is whole
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        model = Leaderboard()
        with Leaderboard.open(directory, fsync="never") as board:
            for member, score in writes:
                board.set(f"m{member}", score)
                model.set(f"m{member}", score)
            last = int(board.last_seq)
        (segment,) = sorted(directory.glob("log-*.seg"))
        records = records_of(segment)
        size = segment.stat().st_size
        offset = data.draw(st.integers(records[0][1], size), label="cut at")
        segment.write_bytes(segment.read_bytes()[:offset])
        whole = max([seq for seq, _, end in records if end <= offset], default=0)
        if offset == size:
            with Leaderboard.open(directory) as board:
                assert board.items() == model.items()
        else:
            with pytest.raises(AcknowledgedLossError) as caught:
                Leaderboard.open(directory)
            assert (caught.value.last_seq, caught.value.missing) == (whole, last - whole)
