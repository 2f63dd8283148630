"""The peers run's targets and its ``summary.md``: pure formatting of the
report dictionary, so a saved ``report.json`` can be judged and rendered again."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench.environment import machine_line, model_line
from bench.report import fmt

# The floors for this service's throughput over each peer's, by concurrency.
FLOORS = {
    "llama-server": {"1": 0.5, "8": 1.0, "32": 1.0},
    "vllm": {"1": 1.5, "8": 1.5, "32": 1.5},
}

# The ceiling for this service's served step over its model time.
STEP_CEILING = {"8": 1.15, "32": 1.15}


def _throughput(engines: Mapping[str, Any], name: str, c: str) -> float | None:
    run = engines.get(name, {}).get("by_concurrency", {}).get(c)
    return None if run is None else run["tokens_per_s"]


def targets(engines: Mapping[str, Any]) -> list[dict]:
    """One row per peer and concurrency measured: our tokens/s over theirs, against its floor."""
    rows = []
    for peer, floors in FLOORS.items():
        for c, floor in floors.items():
            ours, theirs = _throughput(engines, "this", c), _throughput(engines, peer, c)
            if ours is None or theirs is None:
                continue
            ratio = ours / theirs
            rows.append({"peer": peer, "concurrency": int(c), "ratio": ratio, "floor": floor,
                         "met": ratio >= floor})  # fmt: skip
    return rows


def _step_over_model(engines: Mapping[str, Any], c: str) -> float | None:
    run = engines.get("this", {}).get("by_concurrency", {}).get(c)
    return None if run is None else run.get("step_over_model")


def step_targets(engines: Mapping[str, Any]) -> list[dict]:
    """This service's decoder, served: step time over model time, against its ceiling."""
    rows = []
    for c, ceiling in STEP_CEILING.items():
        ratio = _step_over_model(engines, c)
        if ratio is not None:
            rows.append({"concurrency": int(c), "ratio": ratio, "ceiling": ceiling,
                         "met": ratio <= ceiling})  # fmt: skip
    return rows


def render(report: Mapping[str, Any]) -> str:
    engines = report["engines"]
    levels = [str(c) for c in report["workload"]["concurrency"]]
    lines = [
        "# This service against its peers, same model, one run",
        "",
        f"_Machine: {machine_line(report['machine'])}. Model: {model_line(report['model'])}._",
        "",
        f"JSON-schema constrained, greedy, {report['workload']['max_tokens']} tokens per request, "
        f"output tokens/s (median of {report['workload']['rounds']} rounds"
        f"{', median over cycles' if report['workload']['cycles'] > 1 else ''}).",
        'Each engine writes the JSON its own way (this service `{"a": 1, ...}`, vLLM without '
        'free whitespace `{"a":1,...}`, llama-server with its grammar\'s bounded newlines and '
        "indentation), so greedy texts differ after the first tokens; every request still "
        "produces 64 tokens (`tokens_per_request_min` in report.json), where the texts are.",
        "",
        "| engine | " + " | ".join(f"c={c}" for c in levels) + " | start-up s | RSS MB |",
        "|---|" + "---|" * (len(levels) + 2),
    ]
    for name, run in engines.items():
        cells = [fmt(_throughput(engines, name, c), 0) for c in levels]
        cells += [fmt(run["startup_s"], 1), fmt(run["rss_mb"], 0)]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "| target | ratio | floor | met |", "|---|---|---|---|"]
    for row in report["targets"]:
        lines.append(
            f"| this / {row['peer']} at c={row['concurrency']} | {fmt(row['ratio'])} | "
            f"≥ {fmt(row['floor'], 1)} | {'yes' if row['met'] else '**no**'} |"
        )
    for row in report.get("step_targets", []):
        lines.append(
            f"| this, served step / model time at c={row['concurrency']} | {fmt(row['ratio'])} | "
            f"≤ {fmt(row['ceiling'])} | {'yes' if row['met'] else '**no**'} |"
        )
    shares = [(c, _step_over_model(engines, c)) for c in levels]
    if any(ratio is not None for _, ratio in shares):
        by_level = ", ".join(f"c={c} {fmt(ratio)}" for c, ratio in shares)
        lines += [
            "",
            "This service's decoder, served (`ct_decoder_step_seconds_total`): "
            f"step / model time {by_level}.",
        ]
    foreign = report.get("foreign_cpu_cores") or {}
    if foreign:
        busiest = max(foreign.values())
        lines += ["", f"Other processes' CPU use while measuring: at most {busiest:.2f} cores "
                  f"({', '.join(f'{k} {v:.2f}' for k, v in foreign.items())})."]  # fmt: skip
    return "\n".join(lines) + "\n"


def write_summary(report: Mapping[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(report))
