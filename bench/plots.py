"""PNG plots of a report: throughput vs concurrency, TPOT by constraint kind, latency percentiles.

Each figure carries the machine and model it was measured on in its footer,
so a plot copied out of the report still says what it shows.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only; no display on servers and CI

import matplotlib.pyplot as plt

from bench.environment import machine_line, model_line
from bench.targets import dig


def _footer(fig: plt.Figure, report: Mapping[str, Any]) -> None:
    text = f"{machine_line(report.get('machine', {}))}\n{model_line(report.get('model', {}))}"
    fig.text(0.01, 0.01, text, fontsize=7, color="dimgray", va="bottom")
    fig.subplots_adjust(bottom=0.2)


def _levels(levels: Mapping[str, Any], *path: str) -> tuple[list[int], list[float]]:
    xs, ys = [], []
    for concurrency, figures in sorted(levels.items(), key=lambda item: int(item[0])):
        value = dig(figures, *path)
        if value is not None:
            xs.append(int(concurrency))
            ys.append(value)
    return xs, ys


def throughput_plot(report: Mapping[str, Any], path: Path) -> bool:
    levels = dig(report, "sweep", "by_concurrency")
    if not levels:
        return False
    fig, ax = plt.subplots(figsize=(7, 4.8))
    xs, ys = _levels(levels, "output_tokens_per_s")
    ax.plot(xs, ys, "o-", label="server, unconstrained (direct gRPC)")
    json_levels = dig(report, "tpot", "kinds", "json_schema", "by_concurrency") or {}
    jx, jy = _levels(json_levels, "output_tokens_per_s")
    if jx:
        ax.plot(jx, jy, "s--", label="server, JSON schema")
    perf_levels = [lvl for lvl in dig(report, "perf_analyzer", "levels") or []]
    if perf_levels:
        ax.plot(
            [lvl["concurrency"] for lvl in perf_levels],
            [lvl["responses_per_s"] for lvl in perf_levels],
            "^:",
            label="perf_analyzer responses/s",
        )
    baseline = dig(report, "tpot", "baseline", "json_schema", "output_tokens_per_s")
    if baseline:
        ax.axhline(baseline, color="gray", linestyle="-.", label="HF generate() + xgrammar, JSON")
    ax.set_xscale("log", base=2)
    ax.set_xticks(xs, [str(x) for x in xs])
    ax.set_xlabel("concurrent streams")
    ax.set_ylabel("output tokens/s")
    ax.set_title("Throughput vs concurrency")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    _footer(fig, report)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def tpot_plot(report: Mapping[str, Any], path: Path) -> bool:
    kinds = dig(report, "tpot", "kinds")
    if not kinds:
        return False
    ratios = dig(report, "tpot", "tpot_ratio_median_of_rounds") or {}
    concurrencies = sorted({c for kind in kinds.values() for c in kind["by_concurrency"]}, key=int)
    fig, ax = plt.subplots(figsize=(7, 4.8))
    width = 0.8 / max(1, len(concurrencies))
    for offset, concurrency in enumerate(concurrencies):
        positions = [i + offset * width for i in range(len(kinds))]
        means = [
            dig(kind, "by_concurrency", concurrency, "tpot_ms", "mean") or 0.0
            for kind in kinds.values()
        ]
        bars = ax.bar(positions, means, width, label=f"c={concurrency}")
        for bar, name in zip(bars, kinds, strict=True):
            ratio = dig(ratios, name, concurrency)
            if ratio is not None:
                ax.annotate(
                    f"{ratio:.2f}x",
                    (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                    ha="center",
                    va="bottom",
                    fontsize=7,
                )
    ax.set_xticks(
        [i + width * (len(concurrencies) - 1) / 2 for i in range(len(kinds))],
        [kind["label"] for kind in kinds.values()],
    )
    ax.set_ylabel("mean TPOT, ms (label: / unconstrained)")
    ax.set_title("Time per output token by constraint kind")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    _footer(fig, report)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def latency_plot(report: Mapping[str, Any], path: Path) -> bool:
    levels = dig(report, "sweep", "by_concurrency")
    if not levels:
        return False
    fig, ax = plt.subplots(figsize=(7, 4.8))
    styles = (
        ("ttft_ms", "p50", "o-", "TTFT p50"),
        ("ttft_ms", "p99", "o--", "TTFT p99"),
        ("latency_ms", "p50", "s-", "request latency p50"),
        ("latency_ms", "p99", "s--", "request latency p99"),
        ("tpot_ms", "p50", "^-", "TPOT p50"),
        ("tpot_ms", "p99", "^--", "TPOT p99"),
    )
    for metric, percentile, style, label in styles:
        xs, ys = _levels(levels, metric, percentile)
        if xs:
            ax.plot(xs, ys, style, label=label)
    xs, _ = _levels(levels, "output_tokens_per_s")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(xs, [str(x) for x in xs])
    ax.set_xlabel("concurrent streams (unconstrained)")
    ax.set_ylabel("ms")
    ax.set_title("Latency percentiles vs concurrency")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    _footer(fig, report)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


PLOTS = {
    "throughput_vs_concurrency.png": throughput_plot,
    "tpot_by_constraint.png": tpot_plot,
    "latency_percentiles.png": latency_plot,
}


def write_plots(report: Mapping[str, Any], out_dir: Path) -> list[str]:
    """Every plot the report has data for; returns the file names written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    return [name for name, plot in PLOTS.items() if plot(report, out_dir / name)]
