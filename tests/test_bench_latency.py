"""The latency harness (``bench/latency.py``): its pure logic only -- the
schedule, the open loop's accounting (on a fake clock) and the HdrHistogram
bucketing.  No wall-clock figure is asserted."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

BENCH = Path(__file__).resolve().parent.parent / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

import hdr_histogram  # noqa: E402
import latency  # noqa: E402


class FakeClock:
    """A clock that moves only when told: waits jump to their end, and each
    call of the system takes the time the test gives it."""

    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += int(seconds * 1e9)

    def spin(self) -> None:
        self.now += 1_000


def test_a_stall_is_charged_to_every_operation_it_delayed() -> None:
    """Coordinated omission: a 10 ms stall at 1,000 ops/s (1 ms apart)
    delays the next ten ops too, each by what is left of the stall."""
    clock = FakeClock()
    ops = [(latency.INCR, "a", 1)] * 16
    service = {5: 10_000_000}  # op 5 takes 10 ms; every other op 0.1 ms
    count = [0]

    def call(kind: int, a: Any, b: Any) -> None:
        clock.now += service.get(count[0], 100_000)
        count[0] += 1

    out = latency.open_loop(call, ops, 1000.0, 20, clock=clock, wait=clock.sleep, spin=clock.spin)
    lat = list(out.latencies)
    assert lat[:5] == [100_000] * 5
    assert lat[5] == 10_000_000
    # op 6 was due 1 ms after op 5 started, began when it ended (9 ms late)
    # and took 0.1 ms; and so on, until the queue has drained
    assert lat[6:16] == [9_100_000 - k * 900_000 for k in range(10)]
    assert lat[16:] == [100_000] * 4  # the queue has drained
    assert not out.saturated and len(lat) == 20


def test_a_system_slower_than_the_rate_is_stopped_as_saturated() -> None:
    clock = FakeClock()

    def call(kind: int, a: Any, b: Any) -> None:
        clock.now += 2_000_000  # 2 ms per op at 1,000 ops/s: the queue grows

    out = latency.open_loop(
        call,
        [(latency.RANK, "a", None)] * 4,
        1000.0,
        100_000,
        clock=clock,
        wait=clock.sleep,
        spin=clock.spin,
    )
    assert out.saturated
    assert out.latencies[-1] > latency.MAX_LAG_S * 1e9
    assert len(out.latencies) < 100_000


def test_new_players_get_fresh_names_and_ticks_run_once_a_second() -> None:
    clock = FakeClock()
    seen: list[Any] = []
    ticks: list[float] = []
    ops = [(latency.NEW, "x", 1), (latency.TOP, 10, None)]
    latency.open_loop(
        lambda kind, a, b: seen.append(a),
        ops,
        100.0,
        350,
        clock=clock,
        wait=clock.sleep,
        spin=clock.spin,
        tick=ticks.append,
        new_prefix="n",
    )
    names = [a for a in seen if isinstance(a, str)]
    assert len(names) == len(set(names)) == 175
    assert names[:2] == ["n:1", "n:2"]
    assert ticks == [1.0, 2.0, 3.0]


def test_the_op_list_must_be_a_power_of_two() -> None:
    clock = FakeClock()
    with pytest.raises(ValueError, match="power of two"):
        latency.open_loop(lambda *a: None, [(latency.RANK, "a", None)] * 3, 10.0, 1, clock=clock)


def test_the_mix_has_the_advertised_shares() -> None:
    ops = latency.make_ops(1000, seed=3, count=40_000)
    kinds = [latency.KIND_NAMES[k] for k, _, _ in ops]
    for name, share in latency.MIX.items():
        assert abs(kinds.count(name) / len(ops) - share) < 0.01, name
    writes = [k for k, _, _ in ops if k in (latency.INCR, latency.NEW)]
    assert abs(writes.count(latency.NEW) / len(writes) - latency.NEW_SHARE) < 0.01


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_histogram_percentiles_are_within_its_precision(seed: int) -> None:
    rng = random.Random(seed)
    values = [int(rng.lognormvariate(10, 2)) for _ in range(5000)]
    h = hdr_histogram.LatencyHistogram()
    h.record_many(values)
    values.sort()
    assert h.total == len(values) and h.max == values[-1]
    for p in (50.0, 90.0, 99.0, 99.9, 99.99, 100.0):
        exact = values[max(int(p / 100 * len(values) + 0.5), 1) - 1]
        got = h.value_at(p)
        # HdrHistogram reports the bucket's highest equivalent value: never
        # below the exact one, and within 0.1% (3 significant digits) above
        assert exact <= got <= exact + max(exact // 1000, 0) + 1, (p, exact, got)
    spectrum = h.spectrum()
    assert [p for p, _ in spectrum] == sorted(p for p, _ in spectrum)
    assert [v for _, v in spectrum] == sorted(v for _, v in spectrum)
    assert spectrum[-1] == (100.0, values[-1])


def test_histogram_agrees_with_the_hdrhistogram_package() -> None:
    hdrh = pytest.importorskip("hdrh.histogram")
    rng = random.Random(5)
    values = [rng.randrange(1, 10**9) for _ in range(3000)]
    ours = hdr_histogram.LatencyHistogram()
    ours.record_many(values)
    theirs = hdrh.HdrHistogram(1, 10**9, hdr_histogram.SIGNIFICANT_DIGITS)
    for v in values:
        theirs.record_value(v)
    for p in (50.0, 90.0, 99.0, 99.9):
        assert ours.value_at(p) == theirs.get_value_at_percentile(p), p
    encoded = ours.encoded()
    assert encoded is not None
    back = hdrh.HdrHistogram.decode(encoded)
    assert back.get_total_count() == len(values)
    assert back.get_value_at_percentile(99.0) == theirs.get_value_at_percentile(99.0)


def test_a_negative_latency_is_refused() -> None:
    with pytest.raises(ValueError, match="negative"):
        hdr_histogram.LatencyHistogram().record(-1)


@given(
    st.lists(st.integers(min_value=1_000, max_value=400_000), min_size=2, max_size=200),
    st.sampled_from([10_000.0, 100_000.0]),
)
def test_backlog_service_reads_off_the_service_time_of_the_ops_that_waited(
    costs: list[int], rate: float
) -> None:
    """A simple model, a single FIFO server: op i is due at i * interval,
    starts at max(due, the previous end) and takes costs[i] ns.  The ops
    that started at the previous end (it ended over BACKLOG_NS late) are
    the ones read, and their median is their cost's median."""
    interval = 1e9 / rate
    lat: list[int] = []
    end = 0.0
    for i, cost in enumerate(costs):
        due = i * interval
        end = max(due, end) + cost
        lat.append(int(end - due))
    per = len(costs)  # one period: every op
    [[median_us, count]] = latency.backlog_service(lat, rate, per)
    waited = sorted(
        lat[i] - lat[i - 1] + interval
        for i in range(1, len(costs))
        if lat[i - 1] > latency.BACKLOG_NS
    )
    assert count == len(waited)
    if waited:
        # (int() of the latencies: within a ns or two of the model's costs)
        model = sorted(costs[i] for i in range(1, len(costs)) if lat[i - 1] > latency.BACKLOG_NS)
        assert abs(median_us * 1e3 - model[len(model) // 2]) <= 10
    else:
        assert median_us == 0.0


def test_thread_cpu_sees_a_busy_thread_and_the_serving_threads_switches() -> None:
    """A thread that burns CPU shows in the samples under its name; an idle
    one shows (close to) none; the switches are counted per period."""
    import threading

    import thread_cpu

    stop = threading.Event()

    def burn() -> None:
        while not stop.is_set():
            sum(range(1000))

    busy = threading.Thread(target=burn, name="burner")
    sampler = thread_cpu.ThreadCPU(0.02)
    busy.start()
    sampler.start()
    while len(sampler.samples) < 5:
        stop.wait(0.01)
    stop.set()
    busy.join()
    sampler.stop.set()
    sampler.join()
    summary = thread_cpu.summarize(sampler.samples)
    burner = [v for k, v in summary.items() if k.startswith("burner#")]
    assert burner and burner[0]["total_ms"] > 0
    assert len(sampler.switches) == len(sampler.samples)


def test_the_rates_come_from_the_system_saturation_of_names(tmp_path: Path) -> None:
    # A real run, small and short: the durable board's closed loop sets the
    # rates, and the JSON says whose saturation it was.
    out = tmp_path / "latency.json"
    argv = ["-n", "2000", "--systems", "noop", "--rates", "0.001", "--duration", "0.2"]
    spec = "rankengine-sortedlist-fsync-everysec"
    assert latency.main([*argv, "--saturation-of", spec, "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["saturation_system"] == spec
    assert data["saturation_ops_per_s"] > 0
    assert data["rates"] == [round(data["saturation_ops_per_s"] * 0.001, 1)]
    assert [run["system"] for run in data["runs"]] == ["noop"]


def test_a_run_at_an_absolute_rate_names_no_saturation_system(tmp_path: Path) -> None:
    out = tmp_path / "latency.json"
    argv = ["-n", "100", "--systems", "noop", "--rate-abs", "500", "--duration", "0.1"]
    assert latency.main([*argv, "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert (data["saturation_system"], data["saturation_ops_per_s"]) == (None, 0.0)
    assert data["rates"] == [500]


def test_a_misspelled_saturation_system_fails_before_anything_runs() -> None:
    with pytest.raises(ValueError, match="unknown gc mode"):
        latency.main(["--systems", "noop", "--saturation-of", "noop@frozen"])
