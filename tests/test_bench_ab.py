"""The index A/B tool (``bench/ab_index.py``) on tiny inputs: it loads an
index package from git, runs both versions through the comparison harness,
and counts bytecodes."""

from __future__ import annotations

import importlib
import importlib.util
import random
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

import ab_index  # noqa: E402
import peers  # noqa: E402


@pytest.fixture(scope="module")
def ref_package(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The index package of HEAD, loaded under the private name."""
    if ab_index.REF_PACKAGE not in sys.modules:
        ab_index.load_ref_index("HEAD", tmp_path_factory.mktemp("ref"))
    return ab_index.REF_PACKAGE


@pytest.mark.parametrize("backend", sorted(ab_index.CLASSES))
def test_the_ref_index_is_a_separate_working_copy(ref_package: str, backend: str) -> None:
    module, cls = ab_index.CLASSES[backend]
    ref = importlib.import_module(f"{ref_package}.{module}")
    assert ref.__name__.startswith(ab_index.REF_PACKAGE)
    # Its own imports were renamed: nothing of it comes from rankengine.index.
    assert not [
        name
        for name, value in vars(ref).items()
        if isinstance(value, type) and value.__module__.startswith("rankengine.index")
    ]
    packages = (ref_package, "rankengine.index")
    made = [ab_index.factory(f"{package}.{module}", cls)() for package in packages]
    assert type(made[0]) is not type(made[1])
    rng = random.Random(3)
    for k in range(200):
        entry = (rng.randrange(20), k, f"m{k}")
        for index in made:
            index.insert(*entry)
    for index in made:
        index._check()
    assert list(made[0].iter_range(0, 200)) == list(made[1].iter_range(0, 200))


def test_opcodes_counts_every_operation_for_both(ref_package: str) -> None:
    module, cls = ab_index.CLASSES["skiplist"]
    text = ab_index.opcodes(
        ab_index.factory(f"{ref_package}.{module}", cls),
        ab_index.factory(f"rankengine.index.{module}", cls),
    )
    rows = [line.split() for line in text.strip().splitlines()[1:]]
    assert [row[0] for row in rows] == ["position", "top10", "increment", "insert_remove", "entry"]
    for _, ref, work, ratio in rows:
        assert float(ref) > 0 and float(work) > 0
        assert float(ratio) == pytest.approx(float(work) / float(ref), abs=1e-3)


def test_a_timed_run_reports_both_versions(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # The tool adds its two systems to a copy of the registry, not the real one.
    monkeypatch.setattr(peers, "PYTHON_SYSTEMS", dict(peers.PYTHON_SYSTEMS))
    monkeypatch.setattr(peers, "ALL_SYSTEMS", peers.ALL_SYSTEMS)
    args = ["--ref", "HEAD", "--", "--sizes", "300", "--workloads", "rank", "--repeats", "1"]
    args += ["--ops", "60", "--warmup", "10", "--quiet", "--json", str(tmp_path / "ab.json")]
    assert ab_index.main(args) == 0
    out = capsys.readouterr().out
    assert "skiplist@HEAD" in out and "skiplist@work" in out
    summary = out.split("skiplist@work / skiplist@HEAD", 1)[1].splitlines()
    row = next(line.split() for line in summary if line.startswith("rank"))
    assert row[1] == "300" and row[2].endswith("x")
    # the last column is the ratio to pyskiplist, a bench extra: "-" without it
    has_peer = importlib.util.find_spec("pyskiplist") is not None
    assert row[3].endswith("x") if has_peer else row[3] == "-"
