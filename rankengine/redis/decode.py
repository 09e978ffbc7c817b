"""Client-side decoding of a Redis board's replies.

A sorted-set element is ``ordkey + tie digits + kind + member`` (see
:mod:`rankengine.redis.codec`); the scripts reply with elements, score
texts and kinds, and :class:`ReplyDecoding` turns them into
:class:`~rankengine.board.core.Entry` rows with the rank style asked for.
It also turns range bounds into what the scripts take, and notes the
element each member was last seen with (see :meth:`ReplyDecoding._seen`),
so a later plain read can be decoded without a script.

>>> list(_pairs([b"a", 1, b"b", 2]))
[(b'a', 1), (b'b', 2)]
>>> list(_quads([1, 2, 3, 4]))
[(1, 2, 3, 4)]
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final

from rankengine.board.changes import PUT, Change
from rankengine.board.checks import batch_error
from rankengine.board.core import Entry, RankStyle
from rankengine.board.scoring import (
    Member,
    Score,
    check_lookup,
    is_member,
)
from rankengine.redis.codec import (
    _TAGS,
    MAXCLOCK,
    TIE_DIGITS,
    decode_member,
    decode_meta,
    encode_member,
)
from rankengine.redis.handle import (
    _STYLE_CODE,
    MISSING,
    RedisHandle,
    _flag,
)
from rankengine.redis.scripts import EXACT

__all__ = [
    "ELEMENTS_SEEN",
    "ReplyDecoding",
]

#: Members whose element a handle keeps (see RedisLeaderboard._seen): about
#: 1 MB at typical member sizes, enough for the members one app server
#: touches in a while.
ELEMENTS_SEEN: Final = 10_000
#: The first byte of an ordkey (0x80 + its length): an element that starts
#: below it has none (see redis/codec.py).
_ORDKEY_BYTE: Final = 0x80
#: Kind letters of a scalar score, as bytes of an element.
_INT_KIND: Final = ord("i")
_NEG_ZERO_KIND: Final = ord("z")
#: A bound on the indexes sent to a plain ZRANGE (Redis takes 64-bit ones).
_INDEX_BOUND: Final = 2**62


def _pairs(flat: list[Any]) -> Iterator[tuple[Any, Any]]:
    it = iter(flat)
    return zip(it, it, strict=True)


def _quads(flat: list[Any]) -> Iterator[tuple[Any, Any, Any, Any]]:
    it = iter(flat)
    return zip(it, it, it, it, strict=True)


class ReplyDecoding(RedisHandle):
    """Replies and bounds of a Redis board's scripts, decoded on the client."""

    if TYPE_CHECKING:  # supplied by the board's contract (BoardAPI)

        def _style(self, style: RankStyle | None) -> RankStyle: ...

    def _seen(self, key: bytes, element: bytes) -> None:
        """Note the element a member had when this handle last saw it, for
        unique ranks by one plain ``ZREVRANK`` (see rank).  An element holds
        its member and a tie clock no other change reuses, and the ranking
        holds one element per member: an element found there is the
        member's, whatever happened since; one no longer there (the member
        changed, or left) answers nil and the script reads the rank.  At
        most ELEMENTS_SEEN are kept (past them the table starts again)."""
        if self._first:
            elements = self._elements
            if len(elements) >= ELEMENTS_SEEN:
                elements.clear()
            elements[key] = element

    def _seen_write(self, key: bytes, ok: bytes, clock: int, kind: Any) -> None:
        """Note the element a write of this handle gave a member (see _seen)."""
        if self._first:
            tie = MAXCLOCK - clock if self._desc else clock
            kind_bytes = kind if isinstance(kind, bytes) else kind.encode()
            self._seen(key, b"%s%016d%s%s" % (ok, tie, kind_bytes, key))

    def _incr_done(self, member: Member, key: bytes, result: Any) -> Any:
        """incr()'s answer from an INCR reply (noting the change), or
        ``EXACT`` when the client must add exactly (see _exact_incr)."""
        status = int(result[0])
        if status == 0:
            return None
        if status == 3:
            return EXACT
        new = _scalar(result[1], result[2])
        if status == 1:
            clock = int(result[3])
            self._notify([(PUT, member, new, clock)])
            self._seen_write(key, b"", clock, result[2])
        return new

    def _run_done(
        self, members: list[Member | None], keys: list[bytes], reply: list[Any]
    ) -> list[Any]:
        """The answers of a run of increments (a pipeline's, see
        rankengine.redis.pipeline) from INCR_MANY's reply in run mode, each
        what :meth:`_incr_done` makes of the INCR reply it stands for (the
        changes noted, the elements seen), ``EXACT`` for an increment left
        to the client, an error in its place.  One loop over the reply,
        five values a member, and the changes noted at once (a board with
        a listener, a logged one, never sends runs).

        Runtime complexity: O(len(members))
        """
        rows = iter(reply)
        base = int(next(rows))
        first, desc, elements = self._first, self._desc, self._elements
        out: list[Any] = []
        changes: list[Change] = []
        for member, key, text, kind, step, stored, stored_kind in zip(
            members, keys, rows, rows, rows, rows, rows, strict=True
        ):
            try:
                if text is None:  # (kind 'x': left to the client)
                    out.append(EXACT)
                    continue
                change = int(step)
                if not change:  # an equal sum: the stored score, unchanged
                    out.append(_scalar(text, kind))
                    continue
                new = _scalar(stored, stored_kind)
                clock = base + change
                changes.append((PUT, member, new, clock))
                if first:  # (as _seen_write: the element the write gave it)
                    if len(elements) >= ELEMENTS_SEEN:
                        elements.clear()
                    tie = MAXCLOCK - clock if desc else clock
                    letter = stored_kind  # (bytes, or str from a client that decodes replies)
                    if type(letter) is not bytes:
                        letter = letter.encode()
                    elements[key] = b"%016d%s%s" % (tie, letter, key)
                out.append(new)
            except Exception as exc:  # (a reply it cannot read: in its place)
                out.append(exc)
        self._notify(changes)
        return out

    def _member(self, member: object) -> bytes:
        return encode_member(member)  # type: ignore[arg-type]

    def _key_or_none(self, member: object) -> bytes | None:
        """The stored form of a member to look up, or None if it cannot be one
        (a hashable value of another type); an unhashable value raises."""
        kind = type(member)
        if kind is str or kind is bytes or kind is int or is_member(member):
            try:
                return encode_member(member)  # type: ignore[arg-type]
            except ValueError:
                return None
        check_lookup(member)  # a hashable value of another type is just absent
        return None

    def _split_element(self, element: bytes) -> tuple[bytes, int, bytes]:
        """``(ordkey, clock, member key)`` of a sorted-set element."""
        end = self._format.ok_end(element)
        clock = 0
        if self._first:
            digits = int(element[end : end + TIE_DIGITS])
            clock = MAXCLOCK - digits if self._desc else digits
        return element[:end], clock, element[end + self._plen :]

    def _score_of_row(self, element: bytes, text: bytes, kind: bytes) -> Score:
        ok, _, _ = self._split_element(element)
        return self._format.decode(text, ok, kind)

    def _span(
        self, low: Score | None, high: Score | None, low_inclusive: bool, high_inclusive: bool
    ) -> list[Any]:
        # the bounds first, then the flags: the order an in-process board checks them in
        low = None if low is None else self._codec.check(low, "min")
        high = None if high is None else self._codec.check(high, "max")
        if not isinstance(low_inclusive, bool) or not isinstance(high_inclusive, bool):
            raise TypeError("inclusive flags must be bools")
        out: list[Any] = []
        # A bound that no stored score can equal (on a packed board: a
        # fraction of a point, a time between ticks) becomes the nearest
        # storable score inside the range, counted in: the low end rounds up,
        # the high end down, whether the bound was inclusive or not.
        for value, inclusive, what, up in (
            (low, low_inclusive, "min", True),
            (high, high_inclusive, "max", False),
        ):
            if value is None:
                out.extend(("", "", ""))
            else:
                text, ok, exact = self._format.rounded_bound(self._codec.check(value, what), up=up)
                out.extend((text, ok, _flag(inclusive or not exact)))
        return out

    def _hypothetical(self, score: Score, style: RankStyle) -> tuple[str, bytes]:
        """``score`` for a hypothetical rank, as ``(double text, ordkey)``.

        A score no member can hold (see :meth:`_span`) ranks as its storable
        neighbour on the side that gives the same count: a unique rank counts
        the members at or ahead of the score (the better neighbour), the
        others those strictly ahead (the worse one).
        """
        better_is_up = self._desc  # the index ascends; a descending board reads it down
        up = better_is_up if style == "unique" else not better_is_up
        text, ok, _ = self._format.rounded_bound(self._codec.check(score), up=up)
        return text, ok

    def _entries(self, members: list[Any], style: str, with_meta: bool) -> list[Entry | None]:
        keys = [self._key_or_none(member) for member in members]
        present = [key for key in keys if key is not None]
        result = self._run("ENTRIES", style, _flag(with_meta), *present) if present else []
        return self._decode_entries(members, keys, result, with_meta)

    def _decode_entries(
        self, members: list[Any], keys: list[bytes | None], result: Any, with_meta: bool
    ) -> list[Entry | None]:
        """Entries from an ENTRIES reply for ``members`` (``keys``: their
        stored forms, None for a value that cannot be a member)."""
        out: list[Entry | None] = []
        at = 0
        for member, key in zip(members, keys, strict=True):
            if key is None:
                out.append(None)
                continue
            text, element, kind, rank, data = result[at : at + 5]
            at += 5
            if text is None:
                out.append(None)
                continue
            ok, _, _ = self._split_element(element)
            score = self._format.decode(text, ok, kind)
            meta = decode_meta(data) if with_meta and data else None
            out.append(Entry(member, score, 0 if rank is None else int(rank), meta))
            self._seen(key, element)
        return out

    def _plain_rows(self, lo: int, stop: int, style: RankStyle) -> list[Entry]:
        """Rows ``lo`` (0-based) to ``stop`` (inclusive, negative from the
        bottom, as ``ZRANGE`` takes it) by one plain ``ZREVRANGE`` (``ZRANGE``
        ascending), no script: on a first-to-reach board every row's element
        holds its kind, and the client reads the rest.  The caller makes sure
        the first row's rank needs no count: ``lo`` is 0, or the style unique.

        Runtime complexity: O(log N + k), one round trip.
        """
        if (stop >= 0 and stop < lo) or lo > _INDEX_BOUND:
            return []
        # (Redis takes 64-bit indexes; past them every board is shorter)
        stop = max(min(stop, _INDEX_BOUND), -_INDEX_BOUND)
        read = self._client.zrevrange if self._desc else self._client.zrange
        rows = read(self._keys[0], lo, stop, withscores=True, score_cast_func=bytes)
        return self._plain_entries(lo, rows, style)

    def _plain_entries(self, lo: int, rows: list[Any], style: RankStyle) -> list[Entry]:
        """Entries from the ``(element, score bytes)`` rows of a plain read
        whose first row is ranked ``lo + 1`` (see _plain_rows)."""
        if style == "unique" and self._codec.columns is None and self._format.packing is None:
            # The common case, decoded inline (3x faster than the general
            # rows below): a scalar score without ordkey, whose element is
            # the 16 tie digits, the kind letter and the member.
            out: list[Entry] = []
            rank = lo
            for element, text in rows:
                if element[0] >= _ORDKEY_BYTE:  # an inexact score: the general path
                    break
                rank += 1
                kind = element[TIE_DIGITS]
                d = float(text)
                score = int(d) if kind == _INT_KIND else -0.0 if kind == _NEG_ZERO_KIND else d
                key = element[TIE_DIGITS + 1 :]
                out.append(Entry(decode_member(key), score, rank, None))
                self._seen(key, element)
            else:
                return out
        result: list[Any] = [lo, 0, 0, 0]
        for element, text in rows:
            at = self._format.ok_end(element) + TIE_DIGITS
            result += (element, text, element[at : at + self._klen], None)
        return self._rows(result, style, False)

    def _range(self, style: RankStyle | None, with_meta: bool, *selector: Any) -> list[Entry]:
        style = self._style(style)
        result = self._run("RANGE", _STYLE_CODE[style], _flag(with_meta), *selector)
        return self._range_of(result, style, with_meta)

    def _range_of(self, result: Any, style: RankStyle, with_meta: bool) -> list[Entry]:
        """Entries from a RANGE reply (none for an absent 'around' member)."""
        if int(result[0]) < 0:
            return []
        return self._rows(result, style, with_meta)

    def _rows(self, result: list[Any], style: RankStyle, with_meta: bool) -> list[Entry]:
        """Entries from a RANGE reply, ranked as ``Leaderboard._entries_between`` does."""
        lo, comp, dense = int(result[0]), int(result[2]), int(result[3])
        out: list[Entry] = []
        rank = lo + 1
        prev: Any = MISSING
        shared = 0
        for element, text, kind, data in _quads(result[4:]):
            ok, _, key = self._split_element(element)
            order_key = (float(text), ok)
            if style == "unique":
                shown = rank
            elif prev is MISSING or order_key != prev:
                if style == "competition":
                    shown = rank if prev is not MISSING else comp + 1
                else:
                    shown = dense + 1 if prev is MISSING else shared + 1
                shared = shown
            else:
                shown = shared
            prev = order_key
            meta = decode_meta(data) if with_meta and data else None
            score = self._format.decode(text, ok, kind)
            out.append(Entry(decode_member(key), score, shown, meta))
            self._seen(key, element)
            rank += 1
        return out

    def _check_pairs(
        self, items: Mapping[Member, Score] | Iterable[tuple[Member, Score]], what: str
    ) -> tuple[list[tuple[Any, Score]], list[bytes], bytes]:
        source = items.items() if isinstance(items, Mapping) else items
        pairs: list[tuple[Any, Score]] = []
        keys: list[bytes] = []
        tag = b""
        pair: object = None
        try:
            for pair in source:
                if not isinstance(pair, tuple) or len(pair) != 2:
                    raise TypeError(f"expected (member, {what}) pairs, got {pair!r}")
                member, value = pair
                key = self._member(member)
                if not self._first:
                    if not tag:
                        tag = key[:1]
                    elif key[:1] != tag:
                        raise TypeError(
                            f"this board breaks ties by member: {_TAGS[tag[0]]} and "
                            f"{type(member).__name__} members would not compare"
                        )
                pairs.append((member, self._codec.check(value, what)))
                keys.append(key)
        except (TypeError, ValueError, OverflowError) as exc:
            raise batch_error(exc, len(pairs), pair) from None
        return pairs, keys, tag

    def _tie(self, clock: int, member: Member) -> Any:
        if not self._first:
            return member
        return -clock if self._desc else clock


def _scalar(text: bytes | str, kind: bytes | str) -> Score:
    """The score of an INCR reply (a scalar board's: no ordkey), with its
    kind, as ``ScoreFormat.decode`` reads it.

    Runtime complexity: O(1)

    >>> _scalar(b"7", b"i"), _scalar(b"7.5", b"f"), _scalar(b"0", b"z")
    (7, 7.5, -0.0)
    """
    if kind in (b"i", "i"):
        return int(float(text))
    if kind in (b"z", "z"):
        return -0.0
    return float(text)
