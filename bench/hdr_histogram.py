"""Latency counts in HdrHistogram's buckets, for the open-loop harness
(``bench/latency.py``) and the tail's cause-by-cause runs
(``bench/tail_causes.py``).

One concept: a histogram of nanosecond latencies whose percentiles are
within 0.1% of the exact ones at any range, reported as HdrHistogram
reports them, and written in its compressed V2 form when the
``hdrhistogram`` package (the ``[bench]`` extra) is installed.

Runtime complexity: ``record`` O(1); ``value_at`` O(B log B) for B
non-empty buckets (a few thousand at most).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["PERCENTILES", "SIGNIFICANT_DIGITS", "LatencyHistogram"]

#: Percentiles reported in the table (as fractions of 100).
PERCENTILES: tuple[tuple[str, float], ...] = (
    ("p50_us", 50.0),
    ("p90_us", 90.0),
    ("p99_us", 99.0),
    ("p99.9_us", 99.9),
    ("p99.99_us", 99.99),
)

#: HdrHistogram precision: three significant decimal digits.
SIGNIFICANT_DIGITS = 3


class LatencyHistogram:
    """Counts of values (ns) in HdrHistogram buckets: every value is kept
    to :data:`SIGNIFICANT_DIGITS` significant digits, so a percentile is
    within 0.1% of the exact one, whatever the range.

    The bucketing is HdrHistogram's (lowest discernible value 1): 2,048
    sub-buckets of unit width for values below 2,048, then each power-of-two
    range split into 1,024 equal sub-buckets.  Percentiles are reported as
    HdrHistogram reports them: the highest value equivalent to the bucket
    where the cumulative count reaches the percentile.

    >>> h = LatencyHistogram()
    >>> h.record_many([100, 200, 300, 4_000_000])
    >>> h.total, h.max
    (4, 4000000)
    >>> h.value_at(50.0), h.value_at(100.0)
    (200, 4001791)
    """

    def __init__(self) -> None:
        half = 1 << (2 * 10**SIGNIFICANT_DIGITS - 1).bit_length()  # 2048
        self.sub_bucket_count = half
        self.half_magnitude = half.bit_length() - 2  # 10
        self.mask = half - 1
        self.counts: dict[int, int] = {}
        self.total = 0
        self.max = 0

    def index_of(self, value: int) -> tuple[int, int]:
        """``(bucket, sub_bucket)`` of a value (HdrHistogram's indexing)."""
        bucket = (value | self.mask).bit_length() - (self.half_magnitude + 1)
        return bucket, value >> bucket

    def highest_equivalent(self, bucket: int, sub: int) -> int:
        """The largest value recorded into ``(bucket, sub)``."""
        return ((sub + 1) << bucket) - 1

    def record(self, value: int, count: int = 1) -> None:
        if value < 0:
            raise ValueError(f"a latency cannot be negative: {value}")
        key = self.index_of(value)
        self.counts[key] = self.counts.get(key, 0) + count
        self.total += count
        self.max = max(self.max, value)

    def record_many(self, values: Sequence[int]) -> None:
        for value in values:
            self.record(value)

    def value_at(self, percentile: float) -> int:
        """The value at ``percentile`` (0-100]; 0 when nothing was recorded."""
        if not self.total:
            return 0
        wanted = max(int(percentile / 100.0 * self.total + 0.5), 1)
        seen = 0
        for key in sorted(self.counts):
            seen += self.counts[key]
            if seen >= wanted:
                return self.highest_equivalent(*key)
        return self.highest_equivalent(*max(self.counts))  # pragma: no cover

    def spectrum(self) -> list[tuple[float, int]]:
        """(percentile, value) from about the median on, ten points per
        decade of ``1 / (1 - p)`` (50%, 60%, ... 90%, ... 99%, ...) while
        one count or more lies beyond the point, then 100 (the exact max):
        the points of the latency-by-percentile chart."""
        points: list[tuple[float, int]] = []
        k = 3
        while self.total and 10 ** (-k / 10) * self.total >= 1:
            p = 100.0 * (1 - 10 ** (-k / 10))
            points.append((round(p, 6), self.value_at(p)))
            k += 1
        points.append((100.0, self.max))
        return points

    def encoded(self) -> str | None:
        """The histogram in HdrHistogram's compressed V2 form (base64,
        ``HISTFAAA...``), through the ``hdrhistogram`` package; None without it."""
        try:
            from hdrh.histogram import HdrHistogram  # optional: the [bench] extra
        except ImportError:
            return None
        h = HdrHistogram(1, max(self.max, 2), SIGNIFICANT_DIGITS)
        for (bucket, sub), count in self.counts.items():
            h.record_value(sub << bucket, count)
        encoded = h.encode()
        return encoded.decode() if isinstance(encoded, bytes) else str(encoded)

    def summary(self, *, hdr: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"count": self.total}
        for name, p in PERCENTILES:
            out[name] = round(self.value_at(p) / 1e3, 2)
        out["max_us"] = round(self.max / 1e3, 2)
        out["spectrum"] = [[p, round(v / 1e3, 2)] for p, v in self.spectrum()]
        out["hdr"] = self.encoded() if hdr else None
        return out
