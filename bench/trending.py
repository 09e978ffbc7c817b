"""Approximate trending top-k: accuracy, memory and speed against an exact Counter.

Usage (from the repository root)::

    python bench/trending.py                      # full: skews 0.8 1.1 1.5, 10M events, 5 seeds
    python bench/trending.py --quick              # smoke check, under a minute
    python bench/trending.py --skew 1.1 --events 10000000 --partitions 4 8 --json out.json
    python bench/trending.py --report out.json more.json   # summary tables, no run

Method (see ``docs/trending.md``):

1. For each skew and seed, one stream of ``--events`` keys is drawn from a
   Zipf(skew) law over ``--keys`` keys (1,000,000 by default; the rank-to-key
   mapping is shuffled per seed).  NumPy draws it when installed (fast),
   else :func:`random.choices` (same law, different stream).
2. Ground truth: ``collections.Counter.update`` over the whole stream, timed
   (its events/s is the reference every system is compared with).
3. Each system ingests the same stream *batched* (``--batch`` keys per call,
   each batch pre-aggregated with ``Counter`` where the system allows it) and
   *single-event* (one call per event).  The main rankengine system runs
   single events over the whole stream; slower or secondary systems over the
   first ``--aux-single-events`` events (recorded as
   ``single_events_measured``).  Accuracy is that of the batched pass.
4. Metrics, with T the true top-k (``Counter.most_common(k)``), T+ every key
   whose true count reaches the k-th count (ties), R the reported top-k:
   ``precision_at_k = |R & T+| / k``, ``recall_at_k = |R & T| / k``,
   ``are_true_topk`` = mean over T of ``|estimate - true| / true``,
   ``top10_exact`` = the first 10 of R are T's first 10, in order.
5. Memory: ``logical_bytes`` is the state a system needs (sketch cells,
   candidate keys, counters and cached indexes; per partition for
   pipelines); ``tracemalloc_bytes`` is what Python allocated for the
   structure after ingesting the first ``--tracemalloc-events`` events (C++
   heaps, as in DataSketches, are invisible to it: reported as null).
6. Competitors, when installed and at comparable memory: pyprobables'
   HeavyHitters (the same sketch shape and candidate count) and DataSketches'
   frequent-items sketch (``--ds-lg``: a map of 2**lg slots).

Each run is appended to the JSON file as soon as it finishes, so a long
run that is stopped keeps its results.  JSON layout::

    {"config": {...}, "env": {...},
     "runs": [{"system", "skew", "seed", "events", "keys", "k", "partitions",
               "precision_at_k", "recall_at_k", "are_true_topk", "top10_exact",
               "logical_bytes", "tracemalloc_bytes",
               "events_per_s": {"single", "batched"}, "single_events_measured",
               "counter_update_events_per_s", "ratio_to_counter": {"single", "batched"},
               "merge_ms", ...}, ...]}
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import os
import platform
import random
import statistics
import sys
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rankengine.trending.hashing import key_nbytes
from rankengine.trending.merge import merge_topk
from rankengine.trending.partitions import PartitionedTopK
from rankengine.trending.topk import TopK

try:
    import numpy as np
except ImportError:  # pragma: no cover - optional
    np = None  # type: ignore[assignment]

try:
    from probables import HeavyHitters
except ImportError:  # pragma: no cover - optional
    HeavyHitters = None

try:
    import datasketches
except ImportError:  # pragma: no cover - optional
    datasketches = None

Stream = list[str]

CPU_CLOCK = time.process_time
"""Throughput is events per second of this process's CPU time: on a shared
machine, wall time also counts other processes' turns on the core.  Wall-time
figures are reported beside it (``wall_events_per_s``)."""


# -- the stream -------------------------------------------------------------------


def zipf_stream(keys: int, skew: float, events: int, seed: int) -> Stream:
    """``events`` keys ``item:<id>`` drawn from Zipf(skew) over ``keys`` ranks."""
    names = [f"item:{i}" for i in range(keys)]
    if np is not None:
        rng = np.random.default_rng(seed)
        weights = 1.0 / np.arange(1, keys + 1, dtype=np.float64) ** skew
        cdf = np.cumsum(weights)
        cdf /= cdf[-1]
        order = rng.permutation(keys)
        ranks = np.searchsorted(cdf, rng.random(events), side="right")
        ranks = np.minimum(ranks, keys - 1)
        table = np.array(names, dtype=object)[order]
        return table[ranks].tolist()  # type: ignore[no-any-return]
    rnd = random.Random(seed)
    rnd.shuffle(names)
    cum = list(itertools.accumulate(1.0 / (r**skew) for r in range(1, keys + 1)))
    return rnd.choices(names, cum_weights=cum, k=events)


# -- systems ----------------------------------------------------------------------


class System:
    """One contender: build, ingest batched / single, report top-k and estimates."""

    name = "?"
    partitions = 1

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args

    def build(self) -> Any:
        raise NotImplementedError

    def add_batch(self, obj: Any, batch: Stream) -> None:
        raise NotImplementedError

    def single_adder(self, obj: Any) -> Callable[[str], object]:
        raise NotImplementedError

    def finish(self, obj: Any) -> Any:
        """Anything to do before queries (e.g. merging partitions)."""
        return obj

    def top(self, obj: Any, k: int) -> list[str]:
        raise NotImplementedError

    def estimate(self, obj: Any, key: str) -> int:
        raise NotImplementedError

    def logical_bytes(self, obj: Any) -> int:
        raise NotImplementedError

    def extra(self, obj: Any) -> dict[str, Any]:
        return {}


class RankengineTopK(System):
    def __init__(self, args: argparse.Namespace, width: int, label: str) -> None:
        super().__init__(args)
        self.width = width
        self.name = label

    def build(self) -> TopK:
        a = self.args
        return TopK(a.k, capacity=a.capacity, width=self.width, depth=a.depth, seed=a.sketch_seed)

    def add_batch(self, obj: TopK, batch: Stream) -> None:
        obj.add_many(batch)

    def single_adder(self, obj: TopK) -> Callable[[str], object]:
        return obj.add

    def top(self, obj: TopK, k: int) -> list[str]:
        return [item.key for item in obj.top(k)]  # type: ignore[misc]

    def estimate(self, obj: TopK, key: str) -> int:
        return obj.estimate(key)

    def logical_bytes(self, obj: TopK) -> int:
        return obj.logical_bytes

    def extra(self, obj: TopK) -> dict[str, Any]:
        return {
            "width": obj.config()["width"],
            "depth": obj.config()["depth"],
            "capacity": obj.capacity,
            "max_error_reported_top_k": max((i.error for i in obj.top()), default=0),
        }


class RankenginePipeline(System):
    def __init__(self, args: argparse.Namespace, partitions: int) -> None:
        super().__init__(args)
        self.partitions = partitions
        self.name = "rankengine.PartitionedTopK"
        self.merge_ms: float | None = None

    def build(self) -> PartitionedTopK:
        a = self.args
        return PartitionedTopK(
            self.partitions,
            k=a.k,
            capacity=a.capacity,
            width=a.width,
            depth=a.depth,
            seed=a.sketch_seed,
            flush_events=a.batch,
        )

    def add_batch(self, obj: PartitionedTopK, batch: Stream) -> None:
        obj.add_many(batch)

    def single_adder(self, obj: PartitionedTopK) -> Callable[[str], object]:
        return obj.add

    def finish(self, obj: PartitionedTopK) -> TopK:
        parts = obj.partition_trackers()
        self.part_bytes = max(p.logical_bytes for p in parts)
        gc.collect()
        times = []
        for _ in range(3):
            start = CPU_CLOCK()
            merged = merge_topk(parts, owner=obj.owner)
            times.append(CPU_CLOCK() - start)
        self.merge_ms = 1000 * min(times)
        self.merge_ms_max = 1000 * max(times)
        return merged

    def top(self, obj: TopK, k: int) -> list[str]:
        return [item.key for item in obj.top(k)]  # type: ignore[misc]

    def estimate(self, obj: TopK, key: str) -> int:
        return obj.estimate(key)

    def logical_bytes(self, obj: TopK) -> int:
        return self.part_bytes

    def extra(self, obj: TopK) -> dict[str, Any]:
        return {
            "merge_ms": round(self.merge_ms or 0, 2),
            "merge_ms_max": round(self.merge_ms_max, 2),
            "logical_bytes_note": "largest partition",
        }


class PyprobablesHH(System):
    name = "pyprobables.HeavyHitters"

    def build(self) -> Any:
        a = self.args
        return HeavyHitters(num_hitters=a.capacity_value, width=a.width, depth=a.depth)

    def add_batch(self, obj: Any, batch: Stream) -> None:
        add = obj.add
        for key, n in Counter(batch).items():
            add(key, n)

    def single_adder(self, obj: Any) -> Callable[[str], object]:
        return obj.add  # type: ignore[no-any-return]

    def top(self, obj: Any, k: int) -> list[str]:
        items = sorted(obj.heavy_hitters.items(), key=lambda kv: (-kv[1], kv[0]))
        return [key for key, _ in items[:k]]

    def estimate(self, obj: Any, key: str) -> int:
        return int(obj.heavy_hitters.get(key, obj.check(key)))

    def logical_bytes(self, obj: Any) -> int:
        cells = obj.width * obj.depth * 4  # 32-bit counters
        return cells + sum(key_nbytes(key) + 8 for key in obj.heavy_hitters)


class DataSketchesFI(System):
    name = "datasketches.frequent_strings"

    def build(self) -> Any:
        return datasketches.frequent_strings_sketch(self.args.ds_lg)

    def add_batch(self, obj: Any, batch: Stream) -> None:
        update = obj.update
        for key, n in Counter(batch).items():
            update(key, n)

    def single_adder(self, obj: Any) -> Callable[[str], object]:
        return obj.update  # type: ignore[no-any-return]

    def top(self, obj: Any, k: int) -> list[str]:
        rows = obj.get_frequent_items(datasketches.frequent_items_error_type.NO_FALSE_NEGATIVES, 0)
        rows.sort(key=lambda r: (-r[1], r[0]))
        return [row[0] for row in rows[:k]]

    def estimate(self, obj: Any, key: str) -> int:
        return int(obj.get_estimate(key))

    def logical_bytes(self, obj: Any) -> int:
        return int(obj.get_serialized_size_bytes())

    def extra(self, obj: Any) -> dict[str, Any]:
        return {
            "lg_max_map_size": self.args.ds_lg,
            "error_bound": obj.get_epsilon_for_lg_size(self.args.ds_lg) * obj.total_weight
            if hasattr(obj, "get_epsilon_for_lg_size")
            else None,
        }


# -- measuring ----------------------------------------------------------------------


def timed_batched(system: System, stream: Stream, batch: int) -> tuple[Any, float, float]:
    """Ingest in batches; return the queryable result, CPU seconds and wall seconds."""
    obj = system.build()
    gc.collect()
    wall, cpu = time.perf_counter(), CPU_CLOCK()
    for i in range(0, len(stream), batch):
        system.add_batch(obj, stream[i : i + batch])
    final = system.finish(obj)  # a pipeline's flush + merge is part of ingestion
    cpu, wall = CPU_CLOCK() - cpu, time.perf_counter() - wall
    if isinstance(obj, PartitionedTopK):
        obj.close()
    return final, cpu, wall


def timed_single(system: System, stream: Stream) -> tuple[Any, float, float]:
    """Ingest one call per event; return the result, CPU seconds and wall seconds."""
    obj = system.build()
    add = system.single_adder(obj)
    gc.collect()
    wall, cpu = time.perf_counter(), CPU_CLOCK()
    for key in stream:
        add(key)
    final = system.finish(obj)
    cpu, wall = CPU_CLOCK() - cpu, time.perf_counter() - wall
    if isinstance(obj, PartitionedTopK):
        obj.close()
    return final, cpu, wall


def traced_bytes(system: System, prefix: Stream, batch: int) -> int | None:
    if isinstance(system, DataSketchesFI):
        return None
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    obj = system.build()
    for i in range(0, len(prefix), batch):
        system.add_batch(obj, prefix[i : i + batch])
    if isinstance(obj, PartitionedTopK):
        obj.flush()
    gc.collect()
    used = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    return used // system.partitions


def accuracy(system: System, obj: Any, truth: Counter[str], k: int) -> dict[str, float | bool]:
    true_top = [key for key, _ in truth.most_common(k)]
    kth = truth[true_top[-1]]
    reported = system.top(obj, k)
    hits_tied = sum(1 for key in reported if truth[key] >= kth)
    hits = len(set(reported) & set(true_top))
    are = statistics.fmean(
        abs(system.estimate(obj, key) - truth[key]) / truth[key] for key in true_top
    )
    return {
        "precision_at_k": hits_tied / k,
        "recall_at_k": hits / k,
        "are_true_topk": are,
        "top10_exact": reported[:10] == true_top[:10],
    }


def run_one(
    system: System,
    *,
    stream: Stream,
    truth: Counter[str],
    counter_eps: float,
    skew: float,
    seed: int,
    single_events: int,
) -> dict[str, Any]:
    args = system.args
    obj, batched_s, batched_wall = timed_batched(system, stream, args.batch)
    result: dict[str, Any] = {
        "system": system.name,
        "skew": skew,
        "seed": seed,
        "events": len(stream),
        "keys": args.keys,
        "k": args.k,
        "partitions": system.partitions,
        "batch": args.batch,
    }
    result.update(accuracy(system, obj, truth, args.k))
    result["logical_bytes"] = system.logical_bytes(obj)
    result.update(system.extra(obj))
    head = stream[: min(single_events, len(stream))]
    single_obj, single_s, single_wall = timed_single(system, head)
    del single_obj
    eps = {"single": len(head) / single_s, "batched": len(stream) / batched_s}
    result["events_per_s"] = {name: round(value) for name, value in eps.items()}
    result["wall_events_per_s"] = {
        "single": round(len(head) / single_wall),
        "batched": round(len(stream) / batched_wall),
    }
    result["single_events_measured"] = len(head)
    result["counter_update_events_per_s"] = round(counter_eps)
    result["ratio_to_counter"] = {
        name: round(value / counter_eps, 3) for name, value in eps.items()
    }
    result["tracemalloc_bytes"] = traced_bytes(
        system, stream[: args.tracemalloc_events], args.batch
    )
    return result


# -- driver -------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="300k events, one seed, skew 1.1")
    p.add_argument("--skew", type=float, nargs="+", default=None, help="Zipf skews")
    p.add_argument("--events", type=int, default=None, help="events per stream")
    p.add_argument("--partitions", type=int, nargs="+", default=None, help="pipeline sizes")
    p.add_argument("--json", type=Path, default=None, help="write results here")
    p.add_argument(
        "--report", type=Path, nargs="+", default=None, help="summarise saved JSON files, no run"
    )
    p.add_argument("--seeds", type=int, default=None, help="seeds per skew (default 5)")
    p.add_argument("--first-seed", type=int, default=1, help="seeds are first..first+seeds-1")
    p.add_argument("--keys", type=int, default=1_000_000, help="key domain size")
    p.add_argument("--k", type=int, default=100)
    p.add_argument("--capacity", type=int, default=None, help="candidate slots (default 2k)")
    p.add_argument("--width", type=int, default=2048)
    p.add_argument("--stretch-width", type=int, default=1024, help="the ~32 KiB variant")
    p.add_argument("--depth", type=int, default=4)
    p.add_argument("--sketch-seed", type=int, default=0)
    p.add_argument("--batch", type=int, default=100_000, help="keys per batched call")
    p.add_argument(
        "--main-single-events",
        type=int,
        default=None,
        help="single-event pass of rankengine.TopK (default: the whole stream)",
    )
    p.add_argument(
        "--aux-single-events",
        type=int,
        default=1_000_000,
        help="single-event pass of the other systems",
    )
    p.add_argument("--tracemalloc-events", type=int, default=1_000_000)
    p.add_argument("--ds-lg", type=int, default=11, help="DataSketches lg_max_map_size")
    p.add_argument("--no-competitors", action="store_true")
    p.add_argument(
        "--competitor-seeds", type=int, default=None, help="run competitors on the first N seeds"
    )
    args = p.parse_args(argv)
    if args.quick:
        args.events = args.events or 300_000
        args.seeds = args.seeds or 1
        args.skew = args.skew or [1.1]
        args.partitions = args.partitions or [4]
        args.aux_single_events = min(args.aux_single_events, 100_000)
        args.tracemalloc_events = min(args.tracemalloc_events, 100_000)
    args.events = args.events or 10_000_000
    args.seeds = args.seeds or 5
    args.skew = args.skew or [0.8, 1.1, 1.5]
    args.partitions = args.partitions or [4, 8]
    if args.main_single_events is None:
        args.main_single_events = args.events
    if args.competitor_seeds is None:
        args.competitor_seeds = args.seeds
    args.capacity_value = args.capacity or max(2 * args.k, args.k + 16)
    return args


def systems_for(args: argparse.Namespace) -> list[System]:
    found: list[System] = [
        RankengineTopK(args, args.width, "rankengine.TopK"),
        RankengineTopK(args, args.stretch_width, "rankengine.TopK-stretch"),
    ]
    found += [RankenginePipeline(args, p) for p in args.partitions if p > 1]
    if not args.no_competitors:
        if HeavyHitters is not None:
            found.append(PyprobablesHH(args))
        if datasketches is not None:
            found.append(DataSketchesFI(args))
    return found


def env_info() -> dict[str, Any]:
    return {
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "numpy_stream": np is not None,
        "pyprobables": HeavyHitters is not None,
        "datasketches": datasketches is not None,
    }


def summarise(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, int, float], list[dict[str, Any]]] = {}
    for run in runs:
        groups.setdefault((run["system"], run["partitions"], run["skew"]), []).append(run)
    rows = []
    for (system, partitions, skew), group in groups.items():
        prec = [r["precision_at_k"] for r in group]
        rows.append(
            {
                "system": system,
                "partitions": partitions,
                "skew": skew,
                "seeds": len(group),
                "precision_median": statistics.median(prec),
                "precision_min": min(prec),
                "recall_median": statistics.median(r["recall_at_k"] for r in group),
                "are_median_pct": 100 * statistics.median(r["are_true_topk"] for r in group),
                "are_max_pct": 100 * max(r["are_true_topk"] for r in group),
                "top10_exact": f"{sum(r['top10_exact'] for r in group)}/{len(group)}",
                "logical_bytes": max(r["logical_bytes"] for r in group),
                "tracemalloc_bytes": max((r["tracemalloc_bytes"] or 0) for r in group) or None,
                "batched_eps_median": statistics.median(
                    r["events_per_s"]["batched"] for r in group
                ),
                "single_eps_median": statistics.median(r["events_per_s"]["single"] for r in group),
                "counter_eps_median": statistics.median(
                    r["counter_update_events_per_s"] for r in group
                ),
                "batched_ratio_median": statistics.median(
                    r["ratio_to_counter"]["batched"] for r in group
                ),
                "single_ratio_median": statistics.median(
                    r["ratio_to_counter"]["single"] for r in group
                ),
                "merge_ms_max": max((r.get("merge_ms_max") or 0) for r in group) or None,
            }
        )
    return rows


def print_summary(rows: list[dict[str, Any]]) -> None:
    head = (
        f"{'system':32} {'P':>2} {'skew':>4} {'n':>2} {'prec med':>8} {'min':>5} "
        f"{'ARE med%':>8} {'top10':>5} {'KiB':>6} {'tmKiB':>6} {'batch ev/s':>10} "
        f"{'single':>9} {'xCounter':>9} {'merge ms':>8}"
    )
    print(head)
    for r in rows:
        tm = f"{r['tracemalloc_bytes'] / 1024:6.1f}" if r["tracemalloc_bytes"] else "   n/a"
        merge = f"{r['merge_ms_max']:8.1f}" if r["merge_ms_max"] else "       -"
        ratio = f"{r['batched_ratio_median']:.2f}/{r['single_ratio_median']:.2f}"
        print(
            f"{r['system']:32} {r['partitions']:>2} {r['skew']:>4} {r['seeds']:>2} "
            f"{r['precision_median']:8.3f} {r['precision_min']:5.2f} {r['are_median_pct']:8.3f} "
            f"{r['top10_exact']:>5} {r['logical_bytes'] / 1024:6.1f} {tm} "
            f"{r['batched_eps_median']:10,.0f} {r['single_eps_median']:9,.0f} {ratio:>9} {merge}"
        )


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """The summary rows as a Markdown table (what docs/trending.md shows)."""
    lines = [
        "| system | P | skew | seeds | precision@k median (min) | recall median | "
        "ARE true top-k median (max) | top-10 exact | logical KiB | tracemalloc KiB | "
        "batched ev/s | single ev/s | x Counter.update (batched / single) | merge ms (max) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
        "| ---: | ---: |",
    ]
    for r in sorted(rows, key=lambda r: (r["skew"], r["system"], r["partitions"])):
        tm = f"{r['tracemalloc_bytes'] / 1024:.1f}" if r["tracemalloc_bytes"] else "n/a"
        merge = f"{r['merge_ms_max']:.1f}" if r["merge_ms_max"] else "-"
        lines.append(
            f"| {r['system']} | {r['partitions']} | {r['skew']} | {r['seeds']} | "
            f"{r['precision_median']:.3f} ({r['precision_min']:.2f}) | "
            f"{r['recall_median']:.3f} | {r['are_median_pct']:.3f}% ({r['are_max_pct']:.3f}%) | "
            f"{r['top10_exact']} | {r['logical_bytes'] / 1024:.1f} | {tm} | "
            f"{r['batched_eps_median']:,.0f} | {r['single_eps_median']:,.0f} | "
            f"{r['batched_ratio_median']:.2f} / {r['single_ratio_median']:.2f} | {merge} |"
        )
    return "\n".join(lines)


def report(paths: list[Path]) -> int:
    """Print the summary of saved JSON results (several files are pooled)."""
    runs: list[dict[str, Any]] = []
    for path in paths:
        runs.extend(json.loads(path.read_text())["runs"])
    rows = summarise(runs)
    print_summary(rows)
    print()
    print(markdown_table(rows))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.report:
        return report(args.report)
    out: dict[str, Any] = {
        "config": {
            key: (str(value) if isinstance(value, Path) else value)
            for key, value in vars(args).items()
        },
        "env": env_info(),
        "runs": [],
    }
    systems = systems_for(args)
    print(
        f"# trending bench: skews {args.skew}, {args.events:,} events over {args.keys:,} keys, "
        f"{args.seeds} seed(s), k={args.k}, batch {args.batch:,}; systems: "
        + ", ".join(sorted({s.name for s in systems})),
        flush=True,
    )
    for skew in args.skew:
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            start = time.perf_counter()
            stream = zipf_stream(args.keys, skew, args.events, seed)
            gen_s = time.perf_counter() - start
            gc.collect()
            truth: Counter[str] = Counter()
            start = CPU_CLOCK()
            truth.update(stream)
            counter_eps = len(stream) / (CPU_CLOCK() - start)
            print(
                f"## skew {skew} seed {seed}: stream in {gen_s:.1f}s, {len(truth):,} distinct "
                f"keys, Counter.update {counter_eps:,.0f} events/s",
                flush=True,
            )
            for system in systems:
                full = isinstance(system, RankengineTopK) and system.name == "rankengine.TopK"
                single = args.main_single_events if full else args.aux_single_events
                if not isinstance(system, (RankengineTopK, RankenginePipeline)) and (
                    seed >= args.first_seed + args.competitor_seeds
                ):
                    continue
                run = run_one(
                    system,
                    stream=stream,
                    truth=truth,
                    counter_eps=counter_eps,
                    skew=skew,
                    seed=seed,
                    single_events=single,
                )
                out["runs"].append(run)
                print(
                    f"   {system.name:32} P={system.partitions} prec {run['precision_at_k']:.3f} "
                    f"recall {run['recall_at_k']:.3f} ARE {100 * run['are_true_topk']:.3f}% "
                    f"top10 {run['top10_exact']} {run['logical_bytes'] / 1024:.1f} KiB "
                    f"batched {run['events_per_s']['batched']:,} ev/s single "
                    f"{run['events_per_s']['single']:,} ev/s"
                    + (f" merge {run['merge_ms']:.1f} ms" if "merge_ms" in run else ""),
                    flush=True,
                )
                if args.json is not None:
                    out["summary"] = summarise(out["runs"])
                    args.json.write_text(json.dumps(out, indent=1) + "\n")
            del stream, truth
            gc.collect()
    out["summary"] = summarise(out["runs"])
    print()
    print_summary(out["summary"])
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
