"""Charts from ``bench/compare.py --json`` results.

Usage (from the repository root)::

    python bench/plot.py results.json --out charts

Without ``--out`` the PNGs go beside the JSON file (``docs/bench`` holds
the charts of the recorded runs, drawn from ``docs/bench/*.json``).

``--markdown`` prints the results and the targets as Markdown tables instead.

``--latency`` reads ``bench/latency.py --json`` results instead and draws
``latency.png``: the classic latency-by-percentile chart (HdrHistogram's
plot: x is ``1 / (1 - p)`` on a log scale, so 90%, 99%, 99.9% ... are
evenly spaced; y is the latency on a log scale), one line per system at
one rate (``--rate``: the one nearest half the saturation rate by default),
one panel per operation type.

It writes one PNG per workload: ``<workload>.png`` (log-log ops per second
against N, one line per system, the bar spanning the min and max round, the
point at the median) and ``memory.png`` (bytes per entry against N), and ``ratios.png``: every
system divided by a peer measured in the same rounds, per workload.
Needs matplotlib (``pip install -e '.[bench]'``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

#: One colour and marker per system, stable across charts; rankengine in
#: solid lines, peers dashed.
STYLE: dict[str, tuple[str, str]] = {
    "rankengine-sortedlist": ("#1f77b4", "o"),
    "rankengine-skiplist": ("#2ca02c", "s"),
    "sortedcontainers-naive": ("#ff7f0e", "^"),
    "pyskiplist": ("#8c564b", "v"),
    "redis": ("#d62728", "D"),
    "redis-pipelined": ("#e377c2", "P"),
    "redis-hiredis": ("#d62728", "d"),
    "redis-pipelined-hiredis": ("#e377c2", "p"),
    "sqlite": ("#7f7f7f", "X"),
    "rankengine-sortedlist-fsync-everysec": ("#17becf", "o"),
    "rankengine-sortedlist-fsync-always": ("#9edae5", "o"),
    "rankengine-skiplist-fsync-everysec": ("#98df8a", "s"),
    "rankengine-skiplist-fsync-always": ("#bcbd22", "s"),
    "redis-aof-fsync-everysec": ("#ff9896", "D"),
    "redis-aof-fsync-always": ("#9467bd", "D"),
    "noop": ("#000000", "."),
}

TITLES: dict[str, str] = {
    "mixed": "mixed: 80% increment, 10% top-10, 10% rank",
    "increment": "increment a random player by 1..100",
    "rank": "rank of a random player",
    "top10": "top 10",
    "around": "around-me: 10 above and 10 below",
    "page": "a random page of 25",
    "bulk-load": "bulk load of N members",
    "recovery": "snapshot save + load (Redis: DEBUG RELOAD)",
    "durable-mixed": "mixed on a durable board (in-memory for reference)",
}


def _style(system: str) -> tuple[str, str, str]:
    colour, marker = STYLE.get(system, ("#000000", "."))
    line = "-" if system.startswith("rankengine") else "--"
    return colour, marker, line


def plot(data: dict[str, Any], out: Path) -> list[Path]:
    if not data["runs"]:
        return []  # nothing to draw (and no need for matplotlib)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    runs = data["runs"]
    env = data.get("env", {})
    footer = (
        f"{env.get('cpu', '?')}, {env.get('cpu_count', '?')} cores, Python "
        f"{env.get('python', '?')}, Redis {env.get('redis_server', '?')}, "
        f"{env.get('date', '')[:10]}; median of {env.get('repeats', '?')} rounds, bar = min..max"
    )
    written: list[Path] = []
    workloads = list(dict.fromkeys(r["workload"] for r in runs))
    for workload in workloads:
        rows = [r for r in runs if r["workload"] == workload]
        fig, ax = plt.subplots(figsize=(7.5, 4.8))
        systems = list(dict.fromkeys(r["system"] for r in rows))
        if workload == "memory":
            for system in systems:
                pts = sorted(
                    (r["n"], r["bytes_per_entry"])
                    for r in rows
                    if r["system"] == system and r["bytes_per_entry"] is not None
                )
                if not pts:
                    continue
                colour, marker, line = _style(system)
                ax.plot(*zip(*pts, strict=True), line, color=colour, marker=marker, label=system)
            ax.set_xscale("log")
            ax.set_ylabel("bytes per entry (lower is better)")
            ax.set_title("memory per entry, member strings included")
            ax.set_ylim(bottom=0)
        else:
            for system in systems:
                pts = sorted(
                    (r["n"], r["ops_per_s"])
                    for r in rows
                    if r["system"] == system and r["ops_per_s"] is not None
                )
                if not pts:
                    continue
                ns = [n for n, _ in pts]
                med = [p["median"] for _, p in pts]
                err = [
                    [p["median"] - p["min"] for _, p in pts],
                    [p["max"] - p["median"] for _, p in pts],
                ]
                colour, marker, line = _style(system)
                ax.errorbar(
                    ns,
                    med,
                    yerr=err,
                    fmt=line,
                    color=colour,
                    marker=marker,
                    capsize=3,
                    label=system,
                )
            ax.set_xscale("log")
            ax.set_yscale("log")
            unit = "members" if workload in ("bulk-load", "recovery") else "operations"
            ax.set_ylabel(f"{unit} per second (higher is better)")
            ax.set_title(TITLES.get(workload, workload))
        ax.set_xlabel("N (members on the board)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="best")
        fig.text(0.01, 0.01, footer, fontsize=6, color="#555555")
        fig.tight_layout(rect=(0, 0.03, 1, 1))
        path = out / f"{workload}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    ratios = plot_ratios(data, out)
    if ratios is not None:
        written.append(ratios)
    return written


def plot_ratios(data: dict[str, Any], out: Path) -> Path | None:
    """``ratios.png``: per workload, each system's median divided by the
    baseline's median *from the same rounds* (see ``compare.BASELINES``).

    Absolute rates drift with the load of a shared machine from one
    workload to the next; a ratio between systems measured side by side does
    not, so this is the chart to read.
    """
    import matplotlib.pyplot as plt

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import compare

    runs = data["runs"]
    workloads = [
        w for w in dict.fromkeys(r["workload"] for r in runs) if w not in ("memory", "bulk-load")
    ] + [w for w in ("bulk-load", "memory") if any(r["workload"] == w for r in runs)]
    if not workloads:  # no results (a run cut short before its first group)
        return None
    cols = 3
    rows_n = -(-len(workloads) // cols)
    fig, axes = plt.subplots(rows_n, cols, figsize=(13, 3.6 * rows_n), squeeze=False)
    for ax, workload in zip(axes.flat, workloads, strict=False):
        rows = [r for r in runs if r["workload"] == workload]
        sizes = sorted({r["n"] for r in rows})
        base_name = None
        for system in dict.fromkeys(r["system"] for r in rows):
            pts = []
            for n in sizes:
                group = [r for r in rows if r["n"] == n]
                base = compare._baseline(workload, group)
                mine = next((r for r in group if r["system"] == system), None)
                if base is None or mine is None:
                    continue
                base_name = base["system"]
                if workload == "memory":
                    pts.append((n, mine["bytes_per_entry"] / base["bytes_per_entry"]))
                elif mine["ops_per_s"] and base["ops_per_s"]:
                    pts.append((n, mine["ops_per_s"]["median"] / base["ops_per_s"]["median"]))
            if pts:
                colour, marker, line = _style(system)
                ax.plot(*zip(*pts, strict=True), line, color=colour, marker=marker, label=system)
        ax.axhline(1.0, color="#000000", linewidth=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{workload}: / {base_name}", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=5, loc="best")
    for ax in list(axes.flat)[len(workloads) :]:
        ax.set_visible(False)
    fig.suptitle(
        "ratio to a peer measured in the same rounds (memory: lower is better; "
        "all others: higher is better)",
        fontsize=10,
    )
    fig.tight_layout()
    path = out / "ratios.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _rate(x: float) -> str:
    if x >= 1e6:
        return f"{x / 1e6:.2f}M"
    if x >= 1e3:
        return f"{x / 1e3:.1f}k"
    return f"{x:.0f}"


def markdown(data: dict[str, Any]) -> str:
    """Markdown tables: per workload, the median per system and N, with the
    ratio to the workload's baseline in brackets; then the targets."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import compare

    runs = data["runs"]
    out: list[str] = []
    for workload in dict.fromkeys(r["workload"] for r in runs):
        rows = [r for r in runs if r["workload"] == workload]
        sizes = sorted({r["n"] for r in rows})
        systems = list(dict.fromkeys(r["system"] for r in rows))
        base = {n: compare._baseline(workload, [r for r in rows if r["n"] == n]) for n in sizes}
        base_name = next((b["system"] for b in base.values() if b), None)
        unit = {"memory": "bytes per entry", "bulk-load": "members/s", "recovery": "members/s"}
        out.append(f"**{workload}** ({unit.get(workload, 'ops/s')}, median; ")
        out[-1] += f"in brackets: ratio to {base_name})\n" if base_name else "\n"
        out.append("| system | " + " | ".join(f"N = {n:,}" for n in sizes) + " |")
        out.append("|---|" + "---:|" * len(sizes))
        for system in systems:
            cells = []
            for n in sizes:
                r = next((r for r in rows if r["system"] == system and r["n"] == n), None)
                b = base[n]
                if r is None:
                    cells.append("")
                elif workload == "memory":
                    v = r["bytes_per_entry"]
                    ratio = f" ({v / b['bytes_per_entry']:.2f}x)" if b else ""
                    cells.append(f"{v:.0f}{ratio}")
                elif r["ops_per_s"] is None:
                    cells.append("")
                else:
                    v = r["ops_per_s"]["median"]
                    ratio = ""
                    if b and b["ops_per_s"]:
                        ratio = f" ({v / b['ops_per_s']['median']:.2f}x)"
                    cells.append(f"{_rate(v)}{ratio}")
            out.append(f"| {system} | " + " | ".join(cells) + " |")
        out.append("")
    targets = data.get("targets") or compare.check_targets(runs)
    if targets:
        out.append("| target | N | ratio | goal | |")
        out.append("|---|---:|---:|---:|---|")
        for t in targets:
            out.append(
                f"| {t['workload']}: {t['system']} / {t['versus']} | {t['n']:,} | "
                f"{t['ratio']:.2f} | {t['target']} | {'met' if t['met'] else '**missed**'} |"
            )
    return "\n".join(out)


#: Percentile ticks of the latency chart: 1 / (1 - p).
LATENCY_TICKS: tuple[tuple[float, str], ...] = (
    (2.0, "50%"),
    (10.0, "90%"),
    (100.0, "99%"),
    (1_000.0, "99.9%"),
    (10_000.0, "99.99%"),
    (100_000.0, "99.999%"),
)


def plot_latency(data: dict[str, Any], out: Path, rate: float | None = None) -> Path:
    """``latency.png``: latency by percentile at one rate, a panel per op."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rates = sorted({run["rate"] for run in data["runs"]})
    if rate is None:
        half = data.get("saturation_ops_per_s", 0) / 2
        rate = min(rates, key=lambda r: abs(r - half))
    runs = [run for run in data["runs"] if run["rate"] == rate]
    kinds = ["increment", "rank", "top10", "around"]
    fig, axes = plt.subplots(2, 2, figsize=(12, 8), sharex=True, sharey=True)
    for ax, kind in zip(axes.flat, kinds, strict=True):
        for run in runs:
            lat = run["latency"].get(kind)
            if lat is None:
                continue
            xs, ys = [], []
            for p, us in lat["spectrum"]:
                # (the max is drawn one count beyond the last point)
                q = 100.0 * (1 - 1 / (lat["count"] + 1)) if p >= 100.0 else p
                xs.append(1 / (1 - q / 100.0))
                ys.append(max(us, 0.1))
            name = run["system"]
            colour, _, line = _style(name.split("@")[0].removesuffix(" (baseline)"))
            if "@tick-freeze" in name:  # the collector advice: a dotted line
                line = ":"
            elif "@freeze" in name:
                line = "-."
            label = name + (" (saturated)" if run["saturated"] else "")
            ax.plot(
                xs,
                ys,
                line,
                color=colour,
                label=label,
                linewidth=1.3,
                alpha=0.5 if "(baseline)" in name else 1.0,
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(kind)
        ax.set_xticks([x for x, _ in LATENCY_TICKS], [t for _, t in LATENCY_TICKS])
        ax.axhline(16_700, color="#999999", linewidth=0.8, linestyle=":")
        ax.grid(True, which="major", alpha=0.3)
    for ax in axes[:, 0]:
        ax.set_ylabel("latency from the scheduled start (us)")
    axes[0, 0].legend(fontsize=7, loc="upper left")
    fig.suptitle(
        f"latency by percentile at {rate:,.0f} ops/s, N = {data['n']:,} "
        f"(open loop; dotted: one 60 Hz frame)"
    )
    fig.tight_layout()
    out.mkdir(parents=True, exist_ok=True)
    path = out / "latency.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="PNG charts from compare.py JSON results")
    p.add_argument("json", help="results written by bench/compare.py --json")
    p.add_argument("--out", help="directory for the PNGs (default: the directory of the JSON file)")
    p.add_argument("--markdown", action="store_true", help="print Markdown tables, no charts")
    p.add_argument(
        "--latency",
        action="store_true",
        help="the JSON is bench/latency.py's: draw latency.png (latency by percentile)",
    )
    p.add_argument("--rate", type=float, help="with --latency: the rate to draw (default: ~S/2)")
    args = p.parse_args(argv)
    data = json.loads(Path(args.json).read_text())
    if args.latency:
        out = Path(args.out) if args.out is not None else Path(args.json).parent
        print(plot_latency(data, out, args.rate))
        return 0
    if args.markdown:
        print(markdown(data))
        return 0
    out = Path(args.out) if args.out is not None else Path(args.json).parent
    for path in plot(data, out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
