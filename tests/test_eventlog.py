"""The event log on its own: frames, records, torn tails, damage, write errors."""

from __future__ import annotations

import errno
import math
import os
import random
import shutil
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rankengine.board.changes import DEL, META, PUT
from rankengine.durable.eventlog import (
    MAP_FRAME_LIMIT,
    MAP_GROW_BYTES,
    MAPPED_SEGMENTS,
    RETIRED_MAPS,
    MappedSegmentWriter,
    SegmentReader,
    SegmentWriter,
)
from rankengine.durable.records import (
    FRAME_HEADER_BYTES,
    CorruptionError,
    Event,
    LogError,
    RecordFramer,
    decode_record,
    encode_record,
    frame,
    pack,
    unpack,
)


def append_all(writer: SegmentWriter, events: list[Event]) -> list[int]:
    """Append ``events``; return each record's start offset."""
    starts = []
    for event in events:
        starts.append(writer.end)
        writer.append(frame(encode_record(*event)))
    return starts


def write_segment(path: Path, events: list[Event]) -> list[int]:
    """Write ``events`` to a new segment; return each record's start offset."""
    writer = SegmentWriter.create(str(path), {"first_seq": events[0].seq if events else 1})
    starts = append_all(writer, events)
    writer.close()
    return starts


mapped = pytest.mark.skipif(not MAPPED_SEGMENTS, reason="mapped segments are Linux only")


def open_mapped(path: Path, events: list[Event]) -> tuple[MappedSegmentWriter, list[int]]:
    """A mapped writer left open after appending ``events`` (as a kill leaves it)."""
    writer = MappedSegmentWriter.create(str(path), {"first_seq": 1})
    return writer, append_all(writer, events)


def segment_bytes(path: Path, events: list[Event], reserved: bool) -> tuple[bytes, list[int], int]:
    """A segment of ``events``: its bytes, each record's offset, and where
    the records end.  ``reserved``: a mapped segment as a kill leaves it
    (the records, then reserved zeros); else a closed one."""
    if reserved:
        writer, starts = open_mapped(path, events)
        data, end = path.read_bytes(), writer.end
        writer.close()
        return data, starts, end
    starts = write_segment(path, events)
    data = path.read_bytes()
    return data, starts, len(data)


def sample_events(n: int, seed: int = 1) -> list[Event]:
    rng = random.Random(seed)
    events = []
    for seq in range(1, n + 1):
        member = rng.choice(["ann", b"bob", 7, "c" * rng.randrange(1, 40)])
        changes: list[Any] = [
            (PUT, member, rng.choice([rng.random(), rng.randrange(-5, 5), 2**70]), seq)
        ]
        if rng.random() < 0.3:
            changes.append((META, member, {"n": seq, "tags": ["x", 1.5]}))
        if rng.random() < 0.2:
            changes.append((DEL, member))
        events.append(Event(seq, 1_700_000_000_000 + seq, changes))
    return events


def read_all(path: Path) -> tuple[list[Event], Any]:
    with SegmentReader(str(path)) as reader:
        return list(reader.events()), reader.torn


# ----------------------------------------------------------------------
# Records round-trip exactly
# ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "score",
    [
        0,
        -1,
        2**63 - 1,
        -(2**63),
        2**64 - 1,
        2**64,
        -(2**64) - 1,
        10**40,
        0.1 + 0.2,
        -0.0,
        5e-324,
        1.7976931348623157e308,
        math.inf,
        -math.inf,
    ],
)
def test_scores_round_trip_bit_for_bit(score: Any) -> None:
    event = decode_record(encode_record(3, 9, [(PUT, "m", score, 4)]))
    got = event.changes[0][2]
    assert type(got) is type(score)
    assert got == score
    if isinstance(score, float):
        assert math.copysign(1, got) == math.copysign(1, score)


def test_members_keep_their_type_and_composite_scores_are_tuples() -> None:
    changes = [
        (PUT, b"raw", (1, -2.5), 1),
        (PUT, "txt", 1, 2),
        (PUT, 2**90, 3, 3),
        (DEL, b"raw"),
        (META, "txt", None),
    ]
    assert decode_record(encode_record(1, 0, changes)).changes == changes


def test_metadata_round_trips() -> None:
    meta = {"name": "Ada", "b": b"\x00\xff", "n": None, "deep": {"x": [1, 2**80, True]}}
    assert decode_record(encode_record(1, 0, [(META, "m", meta)])).changes[0][2] == meta


def test_unencodable_string_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="UTF-8"):
        encode_record(1, 0, [(PUT, "\ud800", 1, 1)])


@pytest.mark.parametrize(
    "value",
    [
        None,
        [],
        [1, 2],
        [0, 0, [[PUT, "m", 1, 1]]],
        [1, -1, [[PUT, "m", 1, 1]]],
        [1, 0, {}],
        [1, 0, [[9, "m"]]],
        [1, 0, [[PUT, "m", float("nan"), 1]]],
        [1, 0, [[PUT, "m", "1", 1]]],
        [1, 0, [[PUT, ["m"], 1, 1]]],
        [1, 0, [[PUT, "m", 1, -1]]],
        [1, 0, [[PUT, True, 1, 1]]],
        [1, 0, [[DEL, "m", 1]]],
        [1, 0, [[META, "m", {"k": {1, 2}.__class__.__name__}, 3]]],
        [1, 0, [[META, "m", [1]]]],
        [True, 0, [[DEL, "m"]]],
    ],
)
def test_malformed_records_are_value_errors(value: Any) -> None:
    with pytest.raises(ValueError):
        decode_record(pack(value))


def test_a_record_without_changes_is_one_a_forget_emptied() -> None:
    # (a forget drops a member's changes and keeps the record, empty)
    assert decode_record(pack([3, 7, []])) == (3, 7, [])


def test_frame_layout() -> None:
    data = frame(b"abc")
    assert len(data) == FRAME_HEADER_BYTES + 3
    assert int.from_bytes(data[:4], "big") == 3
    assert data[12:] == b"abc"
    assert unpack(pack({"a": [1, b"x"]})) == {"a": [1, b"x"]}


@pytest.mark.parametrize("size", [0, 1, 255, 256, 511, 512, 513, 70_000])
def test_frame_heads_match_the_layout_at_every_size(size: int) -> None:
    payload = bytes(range(256)) * (size // 256) + bytes(size % 256)
    data = frame(payload)
    head = size.to_bytes(4, "big")
    assert data[:4] == head
    assert int.from_bytes(data[4:8], "big") == zlib.crc32(head)
    assert int.from_bytes(data[8:12], "big") == zlib.crc32(payload)
    assert data[12:] == payload


def test_record_framer_writes_the_same_bytes_as_frame_of_encode_record() -> None:
    framer = RecordFramer()
    events = sample_events(300, seed=4)
    events.append(Event(301, 5, [(PUT, "big", 10**40, 1), (PUT, "neg", -(2**64) - 1, 2)]))
    events.append(Event(302, 6, [(PUT, f"m{i}", i * 0.5, i) for i in range(1, 5000)]))
    events.append(Event(303, 7, [(PUT, "x" * 600, 1, 1)]))
    events.append(Event(304, 8, [(PUT, "y" * (3 << 20), 1, 1)]))  # drops the grown buffer
    events.append(Event(305, 9, [(PUT, b"raw", (1, -2.5), 2), (META, "m", {"k": None})]))
    for event in events:
        assert framer.frame(*event) == frame(encode_record(*event)), event.seq


def test_record_framer_recovers_after_an_unencodable_record() -> None:
    framer = RecordFramer()
    with pytest.raises(ValueError, match="UTF-8"):
        framer.frame(1, 0, [(PUT, "\ud800", 1, 1)])
    with pytest.raises(TypeError):
        framer.frame(1, 0, [(PUT, "m", object(), 1)])
    changes = [(PUT, "m", 2**70, 1)]
    assert framer.frame(1, 0, changes) == frame(encode_record(1, 0, changes))
    assert framer.frame(2, 0, [(DEL, "m")]) == frame(encode_record(2, 0, [(DEL, "m")]))


# ----------------------------------------------------------------------
# Torn tails: cut the log at every byte offset of the last records
# ----------------------------------------------------------------------
def test_cut_at_every_offset_of_the_last_records(tmp_path: Path) -> None:
    events = sample_events(12)
    path = tmp_path / "full.seg"
    starts = write_segment(path, events)
    data = path.read_bytes()
    ends = [*starts[1:], len(data)]
    cut_path = tmp_path / "cut.seg"
    for cut in range(starts[-4], len(data) + 1):
        cut_path.write_bytes(data[:cut])
        got, torn = read_all(cut_path)
        complete = sum(1 for end in ends if end <= cut)
        assert got == events[:complete], cut
        if not any(data[ends[complete - 1] : cut]):
            # a record boundary, or only zeros after one (the first bytes
            # of a length): the clean end, as reserved zeros would be
            assert torn is None, cut
        else:
            assert torn is not None and torn.offset == ends[complete - 1], cut
            assert torn.cut_bytes == cut - torn.offset


@pytest.mark.parametrize("zeros", [1, 11, 12, 4096, 3 << 20])
def test_zeros_after_the_last_record_are_the_clean_end(tmp_path: Path, zeros: int) -> None:
    events = sample_events(5)
    path = tmp_path / "s.seg"
    write_segment(path, events)
    size = path.stat().st_size
    with open(path, "ab") as f:
        f.write(bytes(zeros))
    with SegmentReader(str(path)) as reader:
        assert list(reader.events()) == events
        assert reader.torn is None and reader.end == size and not reader.blank()


def test_a_segment_of_only_reserved_zeros_is_blank(tmp_path: Path) -> None:
    path = tmp_path / "s.seg"
    write_segment(path, [])
    with open(path, "ab") as f:
        f.write(bytes(5000))
    with SegmentReader(str(path)) as reader:
        assert reader.blank() and list(reader.events()) == [] and reader.torn is None


def test_last_record_with_unwritten_sectors_is_torn(tmp_path: Path) -> None:
    events = [*sample_events(3), Event(4, 0, [(META, "ann", {"blob": "x" * 3000})])]
    path = tmp_path / "s.seg"
    starts = write_segment(path, events)
    data = bytearray(path.read_bytes())
    boundary = -(-(starts[-1] + 100) // 512) * 512
    data[boundary:] = bytes(len(data) - boundary)
    path.write_bytes(bytes(data))
    got, torn = read_all(path)
    assert got == events[:3] and torn is not None and torn.offset == starts[-1]


# ----------------------------------------------------------------------
# Damage inside the log is refused, naming the offset
# ----------------------------------------------------------------------
@pytest.mark.parametrize("reserved", [False, pytest.param(True, marks=mapped)])
def test_flipped_bytes_in_earlier_records_are_refused_at_their_offset(
    tmp_path: Path, reserved: bool
) -> None:
    events = sample_events(30)
    data, starts, end = segment_bytes(tmp_path / "s.seg", events, reserved)
    ends = [*starts[1:], end]
    rng = random.Random(5)
    bad = tmp_path / "bad.seg"
    for _ in range(300):
        k = rng.randrange(len(events) - 1)  # never the last record
        pos = rng.randrange(starts[k], ends[k])
        damaged = bytearray(data)
        damaged[pos] ^= 1 << rng.randrange(8)
        bad.write_bytes(bytes(damaged))
        with pytest.raises(CorruptionError) as info, SegmentReader(str(bad)) as reader:
            list(reader.events())
        assert info.value.offset == starts[k], (pos, info.value)
        assert str(bad) in str(info.value) and f"offset {starts[k]}" in str(info.value)


@pytest.mark.parametrize("reserved", [False, pytest.param(True, marks=mapped)])
def test_a_flipped_bit_in_the_last_record(tmp_path: Path, reserved: bool) -> None:
    # A closed segment ends at its last record: a flipped bit there is
    # damage.  Followed by reserved zeros (a killed mapped writer), it cannot
    # be told from a copy cut short: a torn tail.
    events = sample_events(10)
    data, starts, end = segment_bytes(tmp_path / "s.seg", events, reserved)
    rng = random.Random(3)
    bad = tmp_path / "bad.seg"
    for _ in range(200):
        damaged = bytearray(data)
        damaged[rng.randrange(starts[-1], end)] ^= 1 << rng.randrange(8)
        bad.write_bytes(bytes(damaged))
        if reserved:
            got, torn = read_all(bad)
            assert got == events[:-1] and torn is not None and torn.offset == starts[-1]
        else:
            with pytest.raises(CorruptionError) as info, SegmentReader(str(bad)) as reader:
                list(reader.events())
            assert info.value.offset == starts[-1]


@pytest.mark.parametrize("reserved", [False, pytest.param(True, marks=mapped)])
@pytest.mark.parametrize("field", ["length", "payload"])
@pytest.mark.parametrize("last", [(DEL, 0), (META, "ann", {"ratio": 1.5})])
def test_damage_before_a_last_record_that_ends_in_zeros_is_damage(
    tmp_path: Path, reserved: bool, field: str, last: Any
) -> None:
    # A record may end in zero bytes (int member 0; float 1.5 is cb 3f f8 00
    # 00 00 00 00 00).  Those bytes are part of the file's trailing zeros,
    # yet the record is there: the damaged one before it is not the last.
    events = [*sample_events(5), Event(6, 0, [last])]
    data, starts, end = segment_bytes(tmp_path / "s.seg", events, reserved)
    assert data[end - 1] == 0
    damaged = bytearray(data)
    damaged[starts[-2] + (1 if field == "length" else FRAME_HEADER_BYTES + 2)] ^= 0x40
    bad = tmp_path / "bad.seg"
    bad.write_bytes(bytes(damaged))
    with pytest.raises(CorruptionError) as info, SegmentReader(str(bad)) as reader:
        list(reader.events())
    assert info.value.offset == starts[-2]


@pytest.mark.parametrize("last", [(DEL, 0), (META, "ann", {"ratio": 1.5})])
def test_damaged_last_record_of_a_closed_segment_that_ends_in_zeros_is_damage(
    tmp_path: Path, last: Any
) -> None:
    # The frame's length is intact and the file ends where the frame does: a
    # copy cut short would have left at least one reserved zero after it.
    events = [*sample_events(5), Event(6, 0, [last])]
    path = tmp_path / "s.seg"
    starts = write_segment(path, events)
    data = bytearray(path.read_bytes())
    assert data[-1] == 0 and len(data.rstrip(b"\0")) % 512  # not unwritten sectors
    data[starts[-1] + FRAME_HEADER_BYTES + 2] ^= 0x40
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptionError) as info, SegmentReader(str(path)) as reader:
        list(reader.events())
    assert info.value.offset == starts[-1]


def test_flipped_byte_in_the_header_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.seg"
    write_segment(path, sample_events(2))
    data = bytearray(path.read_bytes())
    for pos in (0, 9, 14, 20):
        damaged = bytearray(data)
        damaged[pos] ^= 0x40
        path.write_bytes(bytes(damaged))
        with pytest.raises(CorruptionError):
            SegmentReader(str(path)).close()


def test_sequence_gap_is_damage(tmp_path: Path) -> None:
    path = tmp_path / "s.seg"
    events = sample_events(3)
    write_segment(path, [events[0], events[2]])
    with pytest.raises(CorruptionError, match="sequence jumps from 1 to 3"):
        read_all(path)


# ----------------------------------------------------------------------
# Write errors leave the log readable
# ----------------------------------------------------------------------
class FailingFile:
    """Wraps a raw file: writes ``budget`` bytes, then raises ENOSPC."""

    def __init__(self, inner: Any, budget: int) -> None:
        self.inner = inner
        self.budget = budget

    def write(self, data: Any) -> int:
        if self.budget <= 0:
            raise OSError(28, "No space left on device")
        n = self.inner.write(bytes(data)[: self.budget])
        self.budget -= n
        return int(n)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.mark.parametrize("budget", [0, 1, 11, 12, 20])
def test_failed_append_is_undone(tmp_path: Path, budget: int) -> None:
    path = tmp_path / "s.seg"
    events = sample_events(4)
    write_segment(path, events[:3])
    with SegmentReader(str(path)) as reader:
        list(reader.events())
        end, start = reader.end, reader.start
    writer = SegmentWriter.reopen(str(path), end, start)
    writer.file = FailingFile(writer.file, budget)
    with pytest.raises(OSError, match="No space"):
        writer.append(frame(encode_record(*events[3])))
    assert writer.end == end and os.path.getsize(path) == end
    writer.file = writer.file.inner
    writer.append(frame(encode_record(*events[3])))
    writer.close()
    assert read_all(path) == (events, None)


class ShortFile(FailingFile):
    """Wraps a raw file: every write takes at most ``chunk`` bytes."""

    def __init__(self, inner: Any, chunk: int, zero_after: int | None = None) -> None:
        super().__init__(inner, 1 << 30)
        self.chunk = chunk
        self.calls = 0
        self.zero_after = zero_after

    def write(self, data: Any) -> int:
        self.calls += 1
        if self.zero_after is not None and self.calls > self.zero_after:
            return 0
        return int(self.inner.write(bytes(data)[: self.chunk]))


def test_short_writes_are_completed(tmp_path: Path) -> None:
    path = tmp_path / "s.seg"
    events = sample_events(5)
    writer = SegmentWriter.create(str(path), {"first_seq": 1})
    writer.file = ShortFile(writer.file, 7)
    for event in events:
        writer.append(frame(encode_record(*event)))
    writer.file = writer.file.inner
    writer.close()
    assert read_all(path) == (events, None)


@pytest.mark.parametrize("zero_after", [0, 1, 2])
def test_a_write_that_makes_no_progress_is_undone(tmp_path: Path, zero_after: int) -> None:
    path = tmp_path / "s.seg"
    events = sample_events(3)
    write_segment(path, events[:2])
    with SegmentReader(str(path)) as reader:
        list(reader.events())
        end, start = reader.end, reader.start
    writer = SegmentWriter.reopen(str(path), end, start)
    writer.file = ShortFile(writer.file, 5, zero_after=zero_after)
    with pytest.raises(OSError, match="short write"):
        writer.append(frame(encode_record(*events[2])))
    assert writer.end == end and os.path.getsize(path) == end
    writer.file = writer.file.inner
    writer.append(frame(encode_record(*events[2])))
    writer.close()
    assert read_all(path) == (events, None)


def test_writer_whose_undo_fails_refuses_further_appends(tmp_path: Path) -> None:
    path = tmp_path / "s.seg"
    writer = SegmentWriter.create(str(path), {"first_seq": 1})

    class Stuck(FailingFile):
        def truncate(self, size: int) -> None:
            raise OSError(5, "I/O error")

    writer.file = Stuck(writer.file, 5)
    with pytest.raises(OSError):
        writer.append(frame(encode_record(1, 0, [(PUT, "m", 1, 1)])))
    with pytest.raises(LogError, match="could not be undone"):
        writer.append(b"")
    writer.file.inner.close()
    got, torn = read_all(path)
    assert got == [] and torn is not None  # the next open cuts the partial frame


def test_copy_of_a_segment_reads_the_same(tmp_path: Path) -> None:
    path = tmp_path / "a.seg"
    events = sample_events(20, seed=9)
    write_segment(path, events)
    shutil.copy(path, tmp_path / "b.seg")
    assert read_all(tmp_path / "b.seg") == (events, None)


# ----------------------------------------------------------------------
# Mapped segments: reserved zeros, interrupted copies, errors
# ----------------------------------------------------------------------
@mapped
def test_mapped_writer_reads_back_across_remaps_open_and_closed(tmp_path: Path) -> None:
    path = tmp_path / "s.seg"
    big = Event(2, 0, [(META, "ann", {"blob": "x" * 1000})])
    events = [Event(1, 0, [(PUT, "ann", 1, 1)])]
    events += [Event(seq, seq, [(PUT, f"m{seq}", seq, seq)]) for seq in range(2, 3000)]
    events[1] = big
    writer, _ = open_mapped(path, events)
    seq = len(events)
    while writer.end < 3 * MAP_GROW_BYTES:  # several windows
        seq += 1
        event = Event(seq, seq, [(PUT, "x" * (seq % 300), seq, seq)])
        events.append(event)
        writer.append(frame(encode_record(*event)))
    assert os.path.getsize(path) > writer.end  # zeros reserved ahead
    # as a kill leaves it: records, then reserved zeros
    assert read_all(path) == (events, None)
    writer.close()
    assert os.path.getsize(path) == writer.end  # close gives the zeros back
    assert read_all(path) == (events, None)


@mapped
def test_mapped_writer_closes_the_maps_it_moved_past_at_the_next_sync(tmp_path: Path) -> None:
    path = tmp_path / "s.seg"
    writer = MappedSegmentWriter.create(str(path), {"first_seq": 1})
    events = []
    while writer.end < (RETIRED_MAPS + 3) * MAP_GROW_BYTES:
        seq = len(events) + 1
        events.append(Event(seq, 0, [(META, "m", {"b": "x" * 50_000})]))
        writer.append(frame(encode_record(*events[-1])))
        assert len(writer._retired) <= RETIRED_MAPS  # the writer closes the oldest past it
    assert len(writer._retired) == RETIRED_MAPS
    assert read_all(path) == (events, None)  # every map's records, as a kill leaves them
    writer.sync()
    assert writer._retired == [] and writer._map is not None
    writer.close()
    assert read_all(path) == (events, None)


@mapped
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    steps=st.lists(
        st.one_of(
            # appends of (how many, records of about this many bytes)
            st.tuples(st.integers(1, 40), st.sampled_from([1, 900, 30_000, 60_000])),
            st.just("sync"),
            st.just("undo"),  # right after an append: its fsync failed, it is forgotten
            st.just("read"),  # read back now, as a kill would leave it
        ),
        min_size=1,
        max_size=40,
    )
)
def test_mapped_writer_retires_old_maps_and_loses_nothing(
    tmp_path: Path, steps: list[tuple[int, int] | str]
) -> None:
    # A map the writer moved past is closed by the next sync (not under the
    # board's lock), at most RETIRED_MAPS wait; the records are the model's
    # whatever the syncs, undos and reads between.
    path = tmp_path / "s.seg"
    path.unlink(missing_ok=True)
    writer = MappedSegmentWriter.create(str(path), {"first_seq": 1})
    model: list[tuple[Event, int]] = []  # (event, frame size)
    last = None
    try:
        for step in steps:
            if step == "sync":
                writer.sync()
                assert writer._retired == []
            elif step == "undo":
                if isinstance(last, tuple):  # (the writer undoes its last append only)
                    writer.undo_last(model.pop()[1])
            elif step == "read":
                assert read_all(path) == ([e for e, _ in model], None)
            else:
                assert isinstance(step, tuple)
                for _ in range(step[0]):
                    seq = len(model) + 1
                    event = Event(seq, seq, [(META, f"m{seq}", {"b": "x" * step[1]})])
                    data = frame(encode_record(*event))
                    writer.append(data)
                    model.append((event, len(data)))
            last = step
            assert len(writer._retired) <= RETIRED_MAPS
            assert writer.end == writer.start + sum(size for _, size in model)
        assert read_all(path) == ([e for e, _ in model], None)
    finally:
        writer.close()
    assert writer._retired == [] and writer._map is None
    assert read_all(path) == ([e for e, _ in model], None)


@mapped
def test_mapped_writer_keeps_a_reserved_zero_after_every_frame(tmp_path: Path) -> None:
    # A frame that would fill the reserved space to its last byte goes to a
    # new reservation instead, so that a copy of it cut short still leaves
    # the file ending in a zero (what tells it from damage).
    path = tmp_path / "s.seg"
    events = [Event(1, 0, [(PUT, "a", 1, 1)])]
    writer, _ = open_mapped(path, events)  # the first append reserves space

    def meta_record(seq: int, n: int) -> bytes:
        return frame(encode_record(seq, 0, [(META, "a", {"b": "x" * n})]))

    while os.path.getsize(path) - writer.end > 3000:
        events.append(Event(len(events) + 1, 0, [(META, "a", {"b": "x" * 1000})]))
        writer.append(meta_record(len(events), 1000))
    room = os.path.getsize(path) - writer.end
    seq = len(events) + 1
    n = next(n for n in range(room) if len(meta_record(seq, n)) == room)
    events.append(Event(seq, 0, [(META, "a", {"b": "x" * n})]))
    writer.append(meta_record(seq, n))  # exactly the room left
    assert os.path.getsize(path) > writer.end
    assert read_all(path) == (events, None)
    writer.close()


@mapped
def test_mapped_writer_writes_a_large_frame_without_the_map(tmp_path: Path) -> None:
    path = tmp_path / "s.seg"
    events = sample_events(3)
    writer, _ = open_mapped(path, events)
    large = Event(4, 0, [(META, "ann", {"blob": "y" * MAP_FRAME_LIMIT})])
    writer.append(frame(encode_record(*large)))
    assert os.path.getsize(path) == writer.end  # no reserved zeros before or after it
    after = Event(5, 0, [(PUT, "bob", 2, 5)])
    writer.append(frame(encode_record(*after)))
    assert os.path.getsize(path) > writer.end
    assert read_all(path) == ([*events, large, after], None)
    writer.close()


@mapped
@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    cut=st.integers(min_value=0, max_value=3),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
)
def test_a_copy_cut_short_anywhere_is_a_torn_tail(tmp_path: Path, cut: int, seed: int) -> None:
    # A kill in the middle of a copy leaves any subset of the frame's bytes
    # (a memcpy does not write front to back), then reserved zeros.
    rng = random.Random(seed)
    path = tmp_path / "s.seg"
    path.unlink(missing_ok=True)  # one file for every example
    events = sample_events(8, seed=seed)
    writer, starts = open_mapped(path, events)
    writer.close()  # the full bytes, then rebuild the file as a kill leaves it
    data = bytearray(path.read_bytes())
    at = starts[-1]
    size = len(data) - at
    if cut == 0:  # a prefix of the frame
        keep = set(range(rng.randrange(size)))
    elif cut == 1:  # a suffix
        keep = set(range(rng.randrange(1, size), size))
    elif cut == 2:  # any subset
        keep = {i for i in range(size) if rng.random() < rng.random()}
    else:  # all but one byte
        keep = set(range(size)) - {rng.randrange(size)}
    whole = bytes(data[at:])
    for i in range(size):
        if i not in keep:
            data[at + i] = 0
    if data[at:] == whole:  # the bytes left out were zeros anyway: the copy is complete
        return
    data += bytes(rng.choice([1, 5, 4096, MAP_GROW_BYTES]))  # the writer keeps >= 1
    path.write_bytes(bytes(data))
    got, torn = read_all(path)
    assert got == events[:-1]
    if any(data[at:]):
        assert torn is not None and torn.offset == at
        assert torn.reason in ("interrupted append", "incomplete frame header") or (
            "unwritten sectors" in torn.reason
        )
    else:
        assert torn is None  # nothing of it reached the file: the clean end


@mapped
def test_mapped_writer_with_a_full_disk_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.seg"
    writer, _ = open_mapped(path, [])
    events: list[Event] = []

    def record(seq: int) -> bytes:
        return frame(encode_record(seq, 0, [(PUT, "m" * 40, seq, seq)]))

    # fill the reserved space up to the last record that fits
    while os.path.getsize(path) - writer.end >= len(record(len(events) + 1)):
        events.append(
            Event(len(events) + 1, 0, [(PUT, "m" * 40, len(events) + 1, len(events) + 1)])
        )
        writer.append(record(len(events)))
    real = writer.allocate_fn

    def full(fd: int, offset: int, length: int) -> None:
        raise OSError(28, "No space left on device")

    writer.allocate_fn = full
    end, seq = writer.end, len(events) + 1
    with pytest.raises(OSError, match="No space"):
        writer.append(record(seq))
    assert writer.end == end and read_all(path) == (events, None)
    writer.allocate_fn = real
    writer.append(record(seq))
    writer.close()
    assert read_all(path) == ([*events, Event(seq, 0, [(PUT, "m" * 40, seq, seq)])], None)


@mapped
@pytest.mark.parametrize("mapped_first", [False, True])
def test_mapped_writer_falls_back_to_write_where_space_cannot_be_reserved(
    tmp_path: Path, mapped_first: bool
) -> None:
    path = tmp_path / "s.seg"
    writer = MappedSegmentWriter.create(str(path), {"first_seq": 1})
    events: list[Event] = []

    def append_next() -> None:
        seq = len(events) + 1
        events.append(Event(seq, 0, [(PUT, "m" * 40, seq, seq)]))
        writer.append(frame(encode_record(*events[-1])))

    if mapped_first:  # use up the space reserved while reserving worked
        append_next()
        while os.path.getsize(path) - writer.end >= len(frame(encode_record(*events[-1]))):
            append_next()

    def unsupported(fd: int, offset: int, length: int) -> None:
        raise OSError(errno.EOPNOTSUPP, "Operation not supported")

    writer.allocate_fn = unsupported
    for _ in range(40):
        append_next()
        assert os.path.getsize(path) == writer.end  # written, never reserved or mapped
    assert not writer.mapping
    writer.close()
    assert read_all(path) == (events, None)


@mapped
def test_mapped_writer_undo_restores_the_reserved_zeros(tmp_path: Path) -> None:
    path = tmp_path / "s.seg"
    events = sample_events(4)
    writer, _ = open_mapped(path, events[:3])
    end = writer.end
    record = frame(encode_record(*events[3]))
    writer.append(record)
    writer.undo_last(len(record))
    assert writer.end == end and read_all(path) == (events[:3], None)
    writer.append(record)
    writer.close()
    assert read_all(path) == (events, None)


@mapped
@pytest.mark.parametrize("errno_code", [errno.ENOSPC, errno.EOPNOTSUPP])
def test_mapped_writer_gives_back_space_a_failed_reservation_added(
    tmp_path: Path, errno_code: int
) -> None:
    """A reservation that fails part-way (a file system that allocates in
    steps, or the C library's emulation writing zeros block by block) may
    leave the file longer than before.  close() and trim() must still make
    the segment end at its last record: the writer used to keep its old idea
    of the file's size and leave the added zeros after a closed segment."""
    path = tmp_path / "s.seg"
    events = sample_events(3)
    writer, _ = open_mapped(path, events[:2])
    writer.trim()  # no reserved space: the next append reserves

    def partly_then_fail(fd: int, offset: int, length: int) -> None:
        os.ftruncate(fd, offset + length // 2)
        raise OSError(errno_code, os.strerror(errno_code))

    writer.allocate_fn = partly_then_fail
    record = frame(encode_record(*events[2]))
    if errno_code == errno.ENOSPC:
        with pytest.raises(OSError, match="No space"):
            writer.append(record)
        assert read_all(path) == (events[:2], None)
    else:  # cannot reserve: written with write() instead
        writer.append(record)
        assert os.path.getsize(path) == writer.end
    writer.trim()
    assert os.path.getsize(path) == writer.end
    writer.close()
    assert os.path.getsize(path) == writer.end
    assert read_all(path) == (events if errno_code != errno.ENOSPC else events[:2], None)
