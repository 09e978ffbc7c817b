"""The loop-step timer (``bench/loop_steps.py``): its figures against a
simple model on made-up clocks, the steps of a real loop with an injected
CPU clock, and the notes of a real ledger's work.  No wall-clock figure is
asserted."""

from __future__ import annotations

import asyncio
import math
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankengine.ledger.aio import ACK_BATCH, AsyncLedger

BENCH = Path(__file__).resolve().parent.parent / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

import loop_steps  # noqa: E402

US = 1e-6


class Clocks:
    """Three made-up clocks the test moves by hand (seconds)."""

    def __init__(self) -> None:
        self.wall = self.cpu = self.queued = 0.0

    def steps(self, keep: int) -> loop_steps.Steps:
        return loop_steps.Steps(
            wall=lambda: self.wall,
            cpu=lambda: self.cpu,
            queued=lambda: self.queued,
            keep=keep,
            collections=False,
        )


# one step: (its CPU, its wait for a CPU, its time off otherwise, the wait
# before it, that wait's part waiting for a CPU, the wait's timeout), in us
step_st = st.tuples(
    st.integers(0, 20_000).filter(lambda us: us != 5_000),  # (not on the bound: float sums)
    st.integers(0, 150) | st.integers(0, 5_000),  # (short ones too: a step not split)
    st.integers(0, 150) | st.integers(0, 5_000),
    st.integers(0, 30_000),
    st.integers(0, 3_000),
    st.one_of(st.none(), st.integers(0, 20_000)),
).filter(lambda s: s[1] + s[2] != 200)  # (nor on OFF_CPU_SPLIT_S)


Made = list[tuple[int, int, int, int, int, int | None]]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(step_st, min_size=1, max_size=80, unique_by=lambda s: s[0]),
    st.integers(1, 6),
    st.data(),
)
def test_figures_match_a_model(made: Made, keep: int, data: Any) -> None:
    check_against_model(made, keep, lambda: data.draw(st.sampled_from([None, "events", "gc0"])))


def test_percentiles_of_many_steps_match_the_model() -> None:
    """2,000 steps (p99 and p99.9 apart from the max), notes at random."""
    rng = random.Random(20)
    cpus = rng.sample([us for us in range(40_000) if us != 5_000], 2_000)
    made: Made = [
        (c, rng.randrange(900), rng.randrange(90), rng.randrange(3_000), 0, rng.randrange(2_000))
        for c in cpus
    ]
    check_against_model(made, 5, lambda: rng.choice([None, "released"]))


def split(queued: int, off: int) -> bool:
    """Whether a step off the CPU ``queued + off`` us is split in two."""
    return (queued + off) * US > loop_steps.OFF_CPU_SPLIT_S


def check_against_model(made: Made, keep: int, note_of: Callable[[], str | None]) -> None:
    """Steps timed on made-up clocks (``made``, see ``step_st``), one note
    each as ``note_of`` says; their figures against the same computed plainly."""
    clocks = Clocks()
    steps = clocks.steps(keep)
    steps.start()
    notes = []
    overs = []
    carried = 0  # (a step not split: its wait for a CPU goes to the wait after it)
    for i, (cpu, queued, off, wait, wait_queued, timeout) in enumerate(made):
        clocks.wall += (wait + wait_queued) * US
        clocks.queued += wait_queued * US
        steps.begin(None if timeout is None else timeout * US)
        if i and timeout is not None:  # (the first wait began before the recording)
            asked = math.ceil(timeout / 1000) / 1000
            overs.append(((wait + wait_queued) * US - asked, (wait_queued + carried) * US))
        carried = queued if not split(queued, off) else 0
        note = note_of()
        if note is not None:
            steps.note(note, i + 1)
        notes.append({} if note is None else {note: i + 1})
        clocks.cpu += cpu * US
        clocks.queued += queued * US
        clocks.wall += (cpu + queued + off) * US
        steps.end()
    steps.note("between steps")  # (dropped)
    steps.stop()
    got = steps.figures()

    n = len(made)
    cpus = sorted(m[0] for m in made)
    walls = sorted(m[0] + m[1] + m[2] for m in made)
    by_cpu = sorted(range(n), key=lambda i: made[i][0], reverse=True)
    assert got["steps"] == n
    assert got["step_cpu_s"] == pytest.approx(sum(cpus) * US)
    assert got["step_cpu_max_ms"] == pytest.approx(cpus[-1] / 1000)
    top = made[by_cpu[0]]
    assert got["step_cpu_max_wall_ms"] == pytest.approx((top[0] + top[1] + top[2]) / 1000)
    assert got["step_cpu_p99_ms"] == pytest.approx(cpus[min(n - 1, int(n * 0.99))] / 1000)
    assert got["step_cpu_p999_ms"] == pytest.approx(cpus[min(n - 1, int(n * 0.999))] / 1000)
    assert got["steps_over_ms"] == sum(1 for c in cpus if c / 1000 > loop_steps.TARGET_MS)
    assert [s["cpu_ms"] for s in got["step_top"]] == pytest.approx(
        [c / 1000 for c in cpus[::-1][:keep]]
    )
    assert [s["what"] for s in got["step_top"]] == [notes[i] for i in by_cpu[:keep]]
    assert [s["queued_ms"] for s in got["step_top"]] == pytest.approx(
        [made[i][1] / 1000 if split(made[i][1], made[i][2]) else 0.0 for i in by_cpu[:keep]]
    )
    for s in got["step_top"] + got["step_top_wall"]:
        assert s["wall_ms"] == pytest.approx(s["cpu_ms"] + s["queued_ms"] + s["off_ms"])
    assert [s["wall_ms"] for s in got["step_top_wall"]] == pytest.approx(
        [w / 1000 for w in walls[::-1][:keep]]
    )
    assert got["step_wall_max_ms"] == pytest.approx(walls[-1] / 1000)
    over, over_queued = max(overs, default=(0.0, 0.0))
    over_max = max(over, 0.0)
    assert got["wait_over_max_ms"] == pytest.approx(over_max * 1000)
    if over > 0:
        assert got["wait_over_max_queued_ms"] == pytest.approx(over_queued * 1000)


def test_a_real_loop_times_its_steps_and_notes_what_ran() -> None:
    """On a StepLoop, the step whose callback burns (made-up) CPU is the
    longest, with what the callback noted; nothing before ``start`` or after
    ``stop`` is counted."""
    cpu = [0.0]
    steps = loop_steps.Steps(cpu=lambda: cpu[0], queued=lambda: 0.0, keep=3, collections=False)

    def burn_once() -> None:
        cpu[0] += 0.25  # (a quarter of a second of CPU, as far as the steps see)
        steps.note("burn", 7)

    burn = steps.timed("burn", burn_once)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        assert loop.steps is steps  # type: ignore[attr-defined]
        burn()  # (not recorded yet)
        steps.start()
        for _ in range(5):
            await asyncio.sleep(0)
        loop.call_soon(burn)
        for _ in range(5):
            await asyncio.sleep(0.001)
        steps.stop()
        burn()  # (recorded no more)
        await asyncio.sleep(0)

    with asyncio.Runner(loop_factory=lambda: loop_steps.StepLoop(steps)) as runner:
        runner.run(main())
    got = steps.figures()
    assert got["steps"] >= 10
    assert got["step_cpu_s"] == pytest.approx(0.25)
    assert got["step_cpu_max_ms"] == pytest.approx(250.0)
    assert got["steps_over_ms"] == 1
    assert got["step_top"][0]["what"] == {"burn": 7}
    assert (got["burn_calls"], got["burn_cpu_max_ms"]) == (1, pytest.approx(250.0))
    assert all(s["cpu_ms"] == 0 and "burn" not in s["what"] for s in got["step_top"][1:])
    lines = loop_steps.describe([got, got])
    assert lines[0].startswith("steps: CPU max 250.0, 250.0 ms")
    assert any("burn 7" in line for line in lines)


def test_the_notes_of_a_ledger_add_up(tmp_path: Path) -> None:
    """Every step kept (a large ``keep``): the events noted add up to the
    events recorded, the awaits released to the same under ``always`` (at
    most ACK_BATCH a step), and each compaction's hand-off is noted."""
    steps = loop_steps.Steps(keep=10**6)
    count = 600
    compactions = []

    async def main() -> int:
        aledger = await AsyncLedger.open(tmp_path, fsync="always", compact_min_bytes=None)
        aledger.add_view("alltime")
        await aledger.arecord("first", 1)
        ledger = aledger.ledger
        ledger._compact_min = ledger._files.active_bytes + 2_000
        compact = ledger.compact

        def counted(**options: Any) -> Any:
            compactions.append(options)
            return compact(**options)

        ledger.compact = counted  # type: ignore[method-assign]
        loop_steps.watch_ledger(steps, aledger)
        steps.start()
        await asyncio.gather(*(aledger.arecord(f"p{i % 50}", 1) for i in range(count)))
        steps.stop()
        await aledger.aclose()
        return aledger.ledger.last_seq

    with asyncio.Runner(loop_factory=lambda: loop_steps.StepLoop(steps)) as runner:
        last = runner.run(main())
    assert last == count + 1
    kept = steps.figures()["step_top"]
    assert len(kept) == steps.figures()["steps"]

    def total(name: str) -> float:
        return sum(s["what"].get(name, 0) for s in kept)

    assert total("events") == count
    assert total("released") == count
    assert max(s["what"].get("released", 0) for s in kept) <= ACK_BATCH
    assert total("compaction start") == len(compactions) >= 1
    figures = steps.figures()
    assert figures["record_calls"] == count
    assert 1 <= figures["release_calls"] <= total("released")
    assert figures["record_cpu_max_ms"] >= figures["record_cpu_p999_ms"] > 0
