"""Fuzzing the readers: arbitrary bytes give records or a clear error.

The log, snapshot and manifest readers are fed random bytes, mutated valid
files, and *checksum-valid* frames around arbitrary msgpack values (what a
buggy or hostile writer could produce).  Each must return valid data or
raise :class:`~rankengine.durable.eventlog.CorruptionError` (``ValueError`` for the
bare record decoder) -- never another exception, a hang or a huge
allocation.  No pickle is used anywhere: msgpack only decodes plain values.

Run ``python tests/test_fuzz_readers.py`` for a coverage-guided atheris
session on the same targets (if atheris is installed).
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rankengine.board.changes import META, PUT
from rankengine.durable.eventlog import (
    PREFIX_BYTES,
    SEGMENT_MAGIC,
    CorruptionError,
    Event,
    SegmentReader,
    SegmentWriter,
    decode_record,
    encode_record,
    frame,
    pack,
    write_prefix,
)
from rankengine.durable.manifest import Manifest, parse_manifest, segment_name, write_manifest
from rankengine.durable.snapshot import read_snapshot, write_snapshot

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def valid_segment() -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "s.seg")
        writer = SegmentWriter.create(path, {"first_seq": 1, "config": {"order": "desc"}})
        for seq in range(1, 6):
            changes = [(PUT, f"m{seq}", seq * 1.5, seq), (META, f"m{seq}", {"n": seq})]
            writer.append(frame(encode_record(seq, 1000 + seq, changes)))
        writer.close()
        return Path(path).read_bytes()


def valid_snapshot() -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "s.snap")
        rows = [(f"m{i}", i, i + 1, {"i": i} if i % 3 == 0 else None) for i in range(50)]
        write_snapshot(path, {"seq": 9, "clock": 60}, rows)
        return Path(path).read_bytes()


def valid_manifest() -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        write_manifest(tmp, Manifest({"order": "desc"}, [], [(segment_name(1), 1)]))
        return Path(tmp, "MANIFEST").read_bytes()


SEGMENT, SNAPSHOT, MANIFEST = valid_segment(), valid_snapshot(), valid_manifest()
#: offset of the first record in SEGMENT (prefix + header frame)
SEGMENT_HEADER_END = (
    PREFIX_BYTES + 12 + int.from_bytes(SEGMENT[PREFIX_BYTES : PREFIX_BYTES + 4], "big")
)


def read_segment_bytes(data: bytes) -> list[Event]:
    """The segment reader on ``data``: events, or CorruptionError."""
    with tempfile.NamedTemporaryFile(suffix=".seg", delete=False) as f:
        f.write(data)
    try:
        with SegmentReader(f.name) as reader:
            return list(reader.events())
    finally:
        os.remove(f.name)


def read_snapshot_bytes(data: bytes) -> Any:
    with tempfile.NamedTemporaryFile(suffix=".snap", delete=False) as f:
        f.write(data)
    try:
        return list(read_snapshot(f.name).rows())
    finally:
        os.remove(f.name)


def must_be_clean(reader: Any, data: bytes) -> None:
    try:
        reader(data)
    except CorruptionError as exc:
        assert str(exc)  # a message naming the place
        assert exc.offset >= 0


@st.composite
def mutated(draw: st.DrawFn, base: bytes) -> bytes:
    data = bytearray(base)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "set", "insert", "delete", "truncate", "extend"]))
        pos = draw(st.integers(0, max(0, len(data) - 1)))
        if kind == "flip" and data:
            data[pos] ^= 1 << draw(st.integers(0, 7))
        elif kind == "set" and data:
            data[pos] = draw(st.integers(0, 255))
        elif kind == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del data[pos : pos + draw(st.integers(1, 8))]
        elif kind == "truncate":
            del data[pos:]
        else:
            data += draw(st.binary(max_size=16))
    return bytes(data)


# plain msgpack values: what a frame with a valid checksum may still hold
values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**64), 2**64)
    | st.floats()
    | st.text(max_size=5)
    | st.binary(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=12,
)


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes_to_every_reader(data: bytes) -> None:
    must_be_clean(read_segment_bytes, data)
    must_be_clean(read_segment_bytes, write_prefix(SEGMENT_MAGIC) + data)
    must_be_clean(read_snapshot_bytes, data)
    must_be_clean(parse_manifest, data)
    with pytest.raises(ValueError):
        decode_record(data + b"\xc1")  # 0xc1 is never valid msgpack


@FUZZ
@given(mutated(SEGMENT))
def test_mutated_segment(data: bytes) -> None:
    must_be_clean(read_segment_bytes, data)


@FUZZ
@given(mutated(SNAPSHOT))
def test_mutated_snapshot(data: bytes) -> None:
    must_be_clean(read_snapshot_bytes, data)


@FUZZ
@given(mutated(MANIFEST))
def test_mutated_manifest(data: bytes) -> None:
    must_be_clean(parse_manifest, data)


@FUZZ
@given(values)
def test_checksum_valid_frames_around_arbitrary_values(value: Any) -> None:
    try:
        payload = pack(value)
    except ValueError:
        return  # a lone surrogate: not encodable
    with contextlib.suppress(ValueError):
        decode_record(payload)
    must_be_clean(read_segment_bytes, SEGMENT[:SEGMENT_HEADER_END] + frame(payload))
    must_be_clean(read_segment_bytes, write_prefix(SEGMENT_MAGIC) + frame(payload))
    must_be_clean(read_snapshot_bytes, SNAPSHOT[:PREFIX_BYTES] + frame(payload))
    must_be_clean(read_snapshot_bytes, valid_snapshot_with_chunk(payload))
    must_be_clean(parse_manifest, MANIFEST[:PREFIX_BYTES] + frame(payload))


def valid_snapshot_with_chunk(payload: bytes) -> bytes:
    head = pack({"seq": 1, "clock": 1, "count": 1})
    trailer = pack({"count": 1, "chunks": 1})
    return SNAPSHOT[:PREFIX_BYTES] + frame(head) + frame(payload) + frame(trailer)


def test_forged_huge_lengths_allocate_nothing_big() -> None:
    # a header claiming a 1 GiB payload in a tiny file: torn, not a 1 GiB read
    length = (1 << 30).to_bytes(4, "big")
    import zlib

    forged = length + zlib.crc32(length).to_bytes(4, "big") + b"\0\0\0\0" + b"x" * 10
    with tempfile.NamedTemporaryFile(suffix=".seg", delete=False) as f:
        f.write(SEGMENT[:SEGMENT_HEADER_END] + forged)
    try:
        with SegmentReader(f.name) as reader:
            assert list(reader.events()) == []
            assert reader.torn is not None and "incomplete record" in reader.torn.reason
    finally:
        os.remove(f.name)
    # msgpack itself bounds containers by the input size
    bomb = b"\xdd\xff\xff\xff\xff"  # array32 claiming 4 billion items
    with pytest.raises(ValueError):
        decode_record(bomb)


def test_deeply_nested_msgpack_is_a_clean_error() -> None:
    deep = b"\x91" * 100_000 + b"\xc0"
    with pytest.raises(ValueError):
        decode_record(deep)
    must_be_clean(parse_manifest, MANIFEST[:PREFIX_BYTES] + frame(deep))


def test_unknown_extension_types_are_refused() -> None:
    with pytest.raises(ValueError, match="extension"):
        decode_record(msgpack.packb([1, 0, [[0, "m", msgpack.ExtType(7, b"x"), 1]]]))


def atheris_main() -> None:  # pragma: no cover - run by hand
    import atheris

    targets = [read_segment_bytes, read_snapshot_bytes, parse_manifest]

    def one_input(data: bytes) -> None:
        if not data:
            return
        target = targets[data[0] % len(targets)]
        seed = [SEGMENT, SNAPSHOT, MANIFEST][data[0] % 3]
        body = data[1:]
        # half the inputs are splices into a valid file, to get past the magic
        if len(body) > 2 and body[0] & 1:
            pos = int.from_bytes(body[1:3], "big") % max(1, len(seed))
            body = seed[:pos] + body[3:] + seed[pos + len(body) :]
        with contextlib.suppress(CorruptionError):
            target(body)

    import rankengine.durable.eventlog
    import rankengine.durable.manifest
    import rankengine.durable.snapshot

    # coverage feedback for the readers only (instrument_all takes minutes)
    for module in (
        rankengine.durable.eventlog,
        rankengine.durable.snapshot,
        rankengine.durable.manifest,
    ):
        for owner in [module, *[v for v in vars(module).values() if isinstance(v, type)]]:
            for name, value in list(vars(owner).items()):
                mine = getattr(value, "__module__", None) == module.__name__
                if mine and hasattr(value, "__code__"):
                    setattr(owner, name, atheris.instrument_func(value))
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()


if __name__ == "__main__":  # pragma: no cover
    sys.stdout = io.TextIOWrapper(sys.stdout.buffer, line_buffering=True)
    atheris_main()
