"""Where a member lives, and which boards may be the shards of one board.

A member's shard is a pure function of the member and the number of shards
(:func:`shard_of`: Lamping and Veach's jump consistent hash of a BLAKE2b
digest), the same in every process and on every machine, so any client finds
a member without asking the shards.  That holds only while every shard is a
distinct board with the same settings, stored at the same place it had when
it was created: the checks here refuse a list of boards that breaks one
(:func:`check_distinct`, :func:`check_agreement`, :func:`check_places`).

>>> shard_of("ann", 3) == shard_of("ann", 3)
True
>>> check_shard_count(0)
Traceback (most recent call last):
...
ValueError: shards must be at least 1, not 0
"""

from __future__ import annotations

from hashlib import blake2b
from typing import Any, Final

from rankengine.board.checks import check_int
from rankengine.board.packed import PackedScore
from rankengine.board.scoring import Member
from rankengine.redis.board import RedisLeaderboard, encode_member

__all__ = [
    "check_agreement",
    "check_distinct",
    "check_places",
    "check_shard_count",
    "describe_packing",
    "jump_hash",
    "shard_of",
    "shard_settings",
]

#: Personalisation of the placement hash (changing it moves every member).
_PERSON: Final = b"rankengine:shard"


def jump_hash(key: int, buckets: int) -> int:
    """Lamping and Veach's jump consistent hash: a bucket in ``[0, buckets)``.

    Growing from S to S + 1 buckets moves only 1 / (S + 1) of the keys, all
    of them to the new bucket.

    Runtime complexity: O(log buckets)

    >>> [jump_hash(k, 7) for k in (0, 1, 2**63)]
    [0, 6, 5]
    """
    if buckets < 1:
        raise ValueError(f"buckets must be at least 1, not {buckets}")
    b, j = -1, 0
    while j < buckets:
        b = j
        key = (key * 2862933555777941757 + 1) % 2**64
        j = int((b + 1) * ((1 << 31) / ((key >> 33) + 1)))
    return b


def shard_of(member: Member, shards: int) -> int:
    """The shard of ``member`` among ``shards``: jump hash of a BLAKE2b digest
    of the member's type-tagged bytes (the same in every process).

    Runtime complexity: O(len(member) + log shards)

    >>> shard_of("ann", 7) == shard_of("ann", 7), 0 <= shard_of(42, 7) < 7
    (True, True)
    >>> 0 <= shard_of(2**1100, 7) < 7   # in-process shards take ints of any size
    True
    """
    digest = blake2b(_placement_bytes(member), digest_size=8, person=_PERSON).digest()
    return jump_hash(int.from_bytes(digest, "big"), shards)


def _placement_bytes(member: Member) -> bytes:
    """The member's stored form on a Redis board, or for an int too large for
    one (which in-process shards hold), ``I`` and its signed bytes."""
    try:
        return encode_member(member)
    except ValueError:
        n = int(member)
        return b"I" + n.to_bytes(n.bit_length() // 8 + 1, "big", signed=True)


def shard_settings(board: Any) -> dict[str, Any]:
    """The settings every shard of one board must share, as comparable values.

    Merged reads compare keys of one shard with scores and keys of another,
    so shards must sort alike (``order``, ``tie_break``) and hold the same
    values: a packed Redis shard holds only whole ticks inside its window,
    which an exact shard (in-process, or Redis without packing) does not
    limit.  ``rank_style`` is shared so that a shard read on its own ranks
    as the sharded board does by default.
    """
    packing = board.packing if isinstance(board, RedisLeaderboard) else None
    return {
        "order": board.order,
        "tie_break": board.tie_break,
        "rank_style": board.rank_style,
        "packing": describe_packing(packing),
    }


def describe_packing(packing: PackedScore | None) -> str:
    if packing is None:
        return "none (exact scores)"
    return (
        f"PackedScore(window_start={packing.window_start}, bits={packing.bits}, "
        f"resolution={packing.resolution}, descending={packing.descending})"
    )


def check_shard_count(shards: object) -> int:
    """``shards`` as a number of shards: an int (not a bool), at least 1.

    Runtime complexity: O(1)

    >>> check_shard_count(True)
    Traceback (most recent call last):
    ...
    TypeError: shards must be an int, not bool
    """
    count = check_int(shards, "shards")
    if count < 1:
        raise ValueError(f"shards must be at least 1, not {count}")
    return count


def check_distinct(boards: list[Any]) -> None:
    """Raise ``ValueError`` when two shards are one board (one object, or two
    handles on the same keys of one client), which would hold each other's
    members, or two Redis shards share one event log (each would rebuild
    from the other's records).

    Runtime complexity: O(S)
    """
    boards_seen: dict[Any, int] = {}
    logs_seen: dict[int, int] = {}
    for i, board in enumerate(boards):
        remote = isinstance(board, RedisLeaderboard)
        ident = (id(board.redis), tuple(board.keys)) if remote else id(board)
        if ident in boards_seen:
            raise ValueError(f"shards {boards_seen[ident]} and {i} are one board")
        boards_seen[ident] = i
        if remote and board.log is not None:
            if id(board.log) in logs_seen:
                raise ValueError(
                    f"shards {logs_seen[id(board.log)]} and {i} share one event log: "
                    "each shard needs its own"
                )
            logs_seen[id(board.log)] = i


def check_agreement(boards: list[Any]) -> None:
    """Raise ``ValueError`` naming the first shard whose settings differ from
    shard 0's, and the setting.

    Runtime complexity: O(S)
    """
    want = shard_settings(boards[0])
    for i, board in enumerate(boards[1:], start=1):
        have = shard_settings(board)
        for setting, value in want.items():
            if have[setting] != value:
                shown = str if setting == "packing" else repr
                raise ValueError(
                    f"shard {i} has {setting} {shown(have[setting])}, shard 0 has "
                    f"{setting} {shown(value)}: every shard must have the same {setting}"
                )


def check_places(boards: list[Any]) -> None:
    """Raise ``ValueError`` naming the first shard stored as another shard
    (another index, or one of another number of shards) than it is here.

    A Redis shard created by :meth:`ShardedLeaderboard.on_redis` stores its
    place; a shard without one (an in-process or durable board, a Redis board
    created on its own or by an earlier version) is taken as given.  The
    places were read when the shards were opened: no round trip.

    Runtime complexity: O(S)
    """
    for i, board in enumerate(boards):
        place = board._shard_place if isinstance(board, RedisLeaderboard) else None
        if place is not None and place != (i, len(boards)):
            raise ValueError(
                f"shard {i} ({board.name!r}) was created as shard {place[0]} of {place[1]}; "
                f"this board has {len(boards)} shards: a member's shard depends on both, so "
                f"members would be looked up on the wrong shard (pass the {place[1]} shards "
                "in the order they were created)"
            )
