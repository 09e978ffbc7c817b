"""The comparison harness (``bench/compare.py``, ``bench/peers.py``): its pure
logic and its cross-check, on small boards of the in-process peers only."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

import compare  # noqa: E402
import peers  # noqa: E402


def _options(**kw: object) -> compare.Options:
    base: dict[str, object] = {
        "sizes": [500],
        "workloads": ["increment"],
        "systems": ["rankengine-sortedlist", "sqlite"],
        "repeats": 2,
        "warmup": 50,
        "ops": 300,
        "budget": 10.0,
        "seed": 7,
        "verbose": False,
    }
    base.update(kw)
    return compare.Options(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize("count", [0, 7, 99, 100, 906, 1000, 3233, 100_000])
@pytest.mark.parametrize("batch", [1, 100])
def test_slices_cover_the_prefix_in_whole_batches(count: int, batch: int) -> None:
    ops = list(range(100_000))
    cut = compare.slice_ops(ops, count, compare.SLICES, batch)
    assert len(cut) == compare.SLICES
    joined = [op for part in cut for op in part]
    assert joined == ops[: len(joined)]
    if count >= batch:
        # whole batches only: a pipelined system never sends a short batch
        assert len(joined) == count - count % batch
        assert all(len(part) % batch == 0 for part in cut)
    else:
        assert len(joined) == count


def test_pipelined_redis_declares_its_batch() -> None:
    assert peers.RedisPipelined.batch == peers.PIPELINE
    assert peers.RedisPipelinedHiredis.batch == peers.PIPELINE
    assert peers.Redis.batch == 1
    assert peers.NaiveSortedList.batch == 1


class _ForgetsDelta(peers.NaiveSortedList):
    """A broken peer: an increment that does not add the delta."""

    name = "sortedcontainers-naive"

    def incr(self, member: str, delta: int) -> object:
        return self.scores[member]


def test_cross_check_catches_a_peer_that_drops_increments(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = peers.make_system

    def make(name: str, server: object) -> peers.System:
        if name == "sortedcontainers-naive":
            return _ForgetsDelta()
        return real(name, server)  # type: ignore[arg-type]

    monkeypatch.setattr(peers, "make_system", make)
    opts = _options(systems=["rankengine-sortedlist", "sortedcontainers-naive"])
    harness = compare.Harness(opts, None, "")
    with pytest.raises(AssertionError, match="sortedcontainers-naive"):
        harness.run_all()


def test_sound_peers_pass_the_cross_check() -> None:
    systems = ["rankengine-sortedlist", "rankengine-skiplist", "sortedcontainers-naive", "sqlite"]
    opts = _options(systems=systems, workloads=["mixed", "around", "page"])
    harness = compare.Harness(opts, None, "")
    harness.run_all()
    rows = [run.as_json() for run in harness.runs]
    assert {(r["system"], r["workload"]) for r in rows} == {
        (s, w) for s in systems for w in ("mixed", "around", "page")
    }
    for r in rows:
        assert r["repeats"] == 2
        assert r["ops_per_s"]["min"] <= r["ops_per_s"]["median"] <= r["ops_per_s"]["max"]


def test_bulk_load_is_not_skipped_for_a_skip_in_another_workload() -> None:
    opts = _options(systems=["rankengine-sortedlist", "sqlite"], workloads=["bulk-load"])
    harness = compare.Harness(opts, None, "")
    harness.skip("sqlite", "recovery", 500, "no snapshot for this peer")
    harness.run_all()
    assert {run.system for run in harness.runs} == {"rankengine-sortedlist", "sqlite"}


def test_durable_mixed_runs_the_in_process_boards_beside_the_redis_systems() -> None:
    # the default systems name rankengine-redis too: durable-mixed has no
    # durable in-process twin of it and must not try to build one
    opts = _options(
        systems=["rankengine-sortedlist", "rankengine-redis", "sqlite"],
        workloads=["durable-mixed"],
    )
    harness = compare.Harness(opts, None, "")
    harness.run_all()
    assert {run.system for run in harness.runs} == {
        "rankengine-sortedlist",
        "rankengine-sortedlist-fsync-everysec",
        "rankengine-sortedlist-fsync-always",
    }


def test_plot_of_a_run_without_results(tmp_path: Path) -> None:
    import plot

    assert plot.plot({"runs": [], "env": {}}, tmp_path) == []
    assert plot.markdown({"runs": [], "env": {}}) == ""


def test_plot_without_out_writes_beside_the_json_not_over_the_docs_charts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--out`` defaulted to ``docs/bench``: charting a run of one's own
    overwrote the charts the performance page shows.  (The drawing itself
    is replaced by a recorder: this is about where the charts go.)"""
    import json

    import plot

    run = tmp_path / "run"
    run.mkdir()
    rows = [
        {
            "system": system,
            "workload": "rank",
            "n": 1000,
            "ops_per_s": {"min": ops, "median": ops, "max": ops},
            "bytes_per_entry": None,
            "ops": 10,
            "repeats": 1,
            "note": None,
        }
        for system, ops in (("rankengine-sortedlist", 2.0), ("sortedcontainers-naive", 1.0))
    ]
    results = run / "results.json"
    results.write_text(json.dumps({"runs": rows, "env": {}, "skipped": [], "targets": []}))
    cwd = tmp_path / "repo"
    (cwd / "docs" / "bench").mkdir(parents=True)
    monkeypatch.chdir(cwd)
    drawn: list[Path] = []
    monkeypatch.setattr(plot, "plot", lambda data, out: drawn.append(out) or [])
    assert plot.main([str(results)]) == 0
    assert plot.main([str(results), "--out", str(tmp_path / "charts")]) == 0
    assert drawn == [run, tmp_path / "charts"]
    assert list((cwd / "docs" / "bench").iterdir()) == []


def test_pauses_refuses_an_unknown_backend_before_starting_a_child() -> None:
    """``--backends foo`` ended in a child's traceback and a
    CalledProcessError; it is a usage error."""
    import subprocess

    done = subprocess.run(
        [
            sys.executable,
            str(BENCH / "pauses.py"),
            "-n",
            "10",
            "--writes",
            "10",
            "--backends",
            "foo",
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "'foo'" in done.stderr and "sortedlist" in done.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["--sizes", "10k"],
        ["--sizes", "0"],
        ["--sizes", "1000,-5"],
        ["--repeats", "0"],
        ["--ops", "0"],
        ["--warmup", "-5"],
        ["--budget", "0"],
        ["--budget", "nan"],
    ],
)
def test_compare_refuses_a_bad_number_as_a_usage_error(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """``--sizes 10k`` and ``--sizes 0`` ended in a traceback, and
    ``--repeats 0``, ``--ops 0`` and ``--budget 0`` silently ran the
    defaults (a full run) instead."""
    with pytest.raises(SystemExit) as stop:
        compare.parse_args(["--quick", *argv])
    assert stop.value.code == 2
    assert argv[0] in capsys.readouterr().err


def test_compare_takes_the_numbers_it_is_given() -> None:
    opts, _ = compare.parse_args(
        [
            "--sizes",
            "1_000,20000",
            "--repeats",
            "1",
            "--ops",
            "10",
            "--warmup",
            "0",
            "--budget",
            "0.5",
        ]
    )
    assert (opts.sizes, opts.repeats, opts.ops, opts.warmup, opts.budget) == (
        [1000, 20000],
        1,
        10,
        0,
        0.5,
    )
