"""Writes the run's results: ``report.json`` (every figure) and ``summary.md`` (tables).

Pure formatting of the report dictionary: tests write reports from fake
measurements, and a saved report.json can be re-rendered.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench.environment import machine_line, model_line
from bench.targets import dig


def fmt(value: Any, digits: int = 2) -> str:
    """A table cell: numbers rounded, missing values as an em dash."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(fmt(cell) for cell in row) + " |" for row in rows]
    return lines


def _caption(report: Mapping[str, Any]) -> str:
    machine = machine_line(report.get("machine", {}))
    model = model_line(report.get("model", {}))
    return f"_Machine: {machine}. Model: {model}._"


def write_json(report: Mapping[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, sort_keys=False, default=str) + "\n")


def print_and_save(result: Mapping[str, Any], path: Path | None) -> None:
    """A one-phase tool's result: shown, and kept where ``--output`` says."""
    print(json.dumps(result, indent=2, default=str))
    if path is not None:
        write_json(result, path)


def render_summary(report: Mapping[str, Any]) -> str:
    """summary.md: every table followed by the machine and model it was measured on."""
    caption = _caption(report)
    run = report.get("run", {})
    lines = [
        "# Benchmark summary",
        "",
        f"Mode: **{run.get('mode', '?')}**, {fmt(run.get('duration_s'), 0)} s, "
        f"{run.get('started_at', '?')}; max_tokens {dig(report, 'settings', 'max_tokens')}; "
        f"stream_interval_ms {dig(report, 'settings', 'stream_interval_ms') or 0}; "
        f"1-min load average at start / end: {_load(report)} ({_phase_loads(report)}).",
        "",
        f"Code: commit {dig(report, 'run', 'code', 'commit') or 'unknown'}"
        + (
            " with uncommitted changes to the serving code"
            if dig(report, "run", "code", "serving_code_modified")
            else ""
        )
        + ".",
        "",
        "CPU used by other processes on the machine while each phase ran, in cores "
        f"(0 = the benchmark had the machine to itself): {_foreign(report)}.",
        "",
        caption,
        "",
    ]
    sections = (
        _targets_section,
        _tpot_section,
        _sweep_section,
        _compile_section,
        _frontend_section,
        _perf_section,
    )
    for section in sections:
        body = section(report)
        if body:
            lines += [*body, "", caption, ""]
    if report.get("plots"):
        lines += ["## Plots", ""] + [f"![{name}]({name})" for name in report["plots"]] + [""]
    if report.get("errors"):
        lines += ["## Errors", ""] + [f"- {error}" for error in report["errors"]] + [""]
    return "\n".join(lines)


def _load(report: Mapping[str, Any]) -> str:
    start = dig(report, "machine", "load_average_at_start") or []
    end = dig(report, "run", "load_average_at_end") or []
    return f"{fmt(start[0] if start else None)} / {fmt(end[0] if end else None)}"


def _phase_loads(report: Mapping[str, Any]) -> str:
    loads = dig(report, "run", "load_average_by_phase") or {}
    return ", ".join(f"{phase} {fmt(load)}" for phase, load in loads.items()) or "no phases"


def _foreign(report: Mapping[str, Any]) -> str:
    cores = dig(report, "run", "foreign_cpu_cores_by_phase") or {}
    return ", ".join(f"{phase} {fmt(value)}" for phase, value in cores.items()) or "not measured"


SUSPECT_FOREIGN_CORES = 0.25
"""Other processes' CPU use (cores) above which a figure is flagged as disturbed."""


def _noise_note(cores: float | None) -> str:
    if cores is None:
        return "—"
    if cores > SUSPECT_FOREIGN_CORES:
        return f"{cores:.2f} cores: **disturbed**, re-run"
    return f"{cores:.2f} cores"


def _targets_section(report: Mapping[str, Any]) -> list[str]:
    rows = [
        [
            row["target"],
            row["requirement"],
            fmt(row["measured"], 3)
            + ("" if row["unit"] == "x" or row["measured"] is None else " ms"),
            f"**{row['status']}**" + (f" ({row['reason']})" if row.get("reason") else ""),
            _noise_note(row.get("foreign_cpu_cores")),
            row["how"],
        ]
        for row in report.get("targets", [])
    ]
    if not rows:
        return []
    return [
        "## Targets (issue table)",
        "",
        *_table(
            ["target", "required", "measured", "status", "other processes' CPU", "measured as"],
            rows,
        ),
    ]


def _tpot_section(report: Mapping[str, Any]) -> list[str]:
    kinds = dig(report, "tpot", "kinds")
    if not kinds:
        return []
    ratios = dig(report, "tpot", "tpot_ratio_median_of_rounds") or {}
    p50_ratios = dig(report, "tpot", "tpot_p50_ratio_vs_unconstrained") or {}
    rows = []
    for name, kind in kinds.items():
        for concurrency, figures in kind["by_concurrency"].items():
            rows.append(
                [
                    kind["label"],
                    concurrency,
                    dig(figures, "tpot_ms", "mean"),
                    dig(figures, "tpot_ms", "p50"),
                    dig(figures, "tpot_ms", "p99"),
                    dig(ratios, name, concurrency),
                    dig(p50_ratios, name, concurrency),
                    dig(figures, "output_tokens_per_s"),
                    dig(figures, "ttft_ms", "p50"),
                    dig(figures, "latency_ms", "p50"),
                    dig(figures, "tokens_per_request", "min"),
                    figures.get("errors"),
                ]
            )
    lines = [
        "## 1. TPOT by constraint kind (direct gRPC streaming to the ensemble)",
        "",
        *_table(
            [
                "constraint", "c", "TPOT mean ms", "TPOT p50 ms", "TPOT p99 ms",
                "mean TPOT / unconstrained (median of rounds)", "p50 TPOT / unconstrained",
                "output tok/s",
                "TTFT p50 ms", "latency p50 ms", "min tokens/request", "errors",
            ],
            rows,
        ),
    ]  # fmt: skip
    baseline = dig(report, "tpot", "baseline") or {}
    if baseline:
        rows = [
            [
                kinds.get(name, {}).get("label", name),
                dig(b, "latency_ms", "p50"),
                dig(b, "latency_ms", "p99"),
                dig(b, "output_tokens_per_s"),
                b.get("requests"),
            ]
            for name, b in baseline.items()
        ]
        lines += [
            "",
            "### 3. Hand-written baseline: transformers generate() + xgrammar HF logits processor",
            "",
            *_table(
                ["constraint", "latency p50 ms", "latency p99 ms", "output tok/s", "requests"], rows
            ),
        ]
    return lines


def _sweep_section(report: Mapping[str, Any]) -> list[str]:
    levels = dig(report, "sweep", "by_concurrency")
    if not levels:
        return []
    rows = [
        [
            concurrency,
            dig(f, "output_tokens_per_s"),
            dig(f, "ttft_ms", "p50"),
            dig(f, "ttft_ms", "p99"),
            dig(f, "tpot_ms", "mean"),
            dig(f, "latency_ms", "p50"),
            dig(f, "latency_ms", "p99"),
            f.get("requests"),
            f.get("errors"),
        ]
        for concurrency, f in levels.items()
    ]
    return [
        "## 2. Throughput vs concurrency (unconstrained)",
        "",
        *_table(
            [
                "c", "output tok/s", "TTFT p50 ms", "TTFT p99 ms", "TPOT mean ms",
                "latency p50 ms", "latency p99 ms", "requests", "errors",
            ],
            rows,
        ),
    ]  # fmt: skip


def _compile_section(report: Mapping[str, Any]) -> list[str]:
    compile_report = report.get("compile")
    if not compile_report:
        return []
    lines = ["## 4. Grammar compilation", ""]
    offline = compile_report.get("offline") or {}
    if offline:
        timed = sum(1 for e in offline.get("schemas", {}).values() if "cold_ms" in e)
        lines += [
            f"Offline (xgrammar, this model's tokenizer, {timed} corpus schemas):",
            "",
            *_table(
                ["compile", "p50 ms", "p99 ms", "max ms"],
                [
                    [
                        step,
                        dig(offline, key, "p50"),
                        dig(offline, key, "p99"),
                        dig(offline, key, "max"),
                    ]
                    for step, key in (("cold", "cold_ms"), ("cached", "cached_ms"))
                ],
            ),
            "",
        ]
    served = compile_report.get("requests") or {}
    if served:
        grammars = (
            ("none", "no_grammar_ms", 0.0),
            ("cached JSON schema", "cached_grammar_ms", served.get("cached_extra_ms")),
            ("cold JSON schema", "cold_grammar_ms", served.get("cold_extra_ms")),
        )
        lines += [
            "Served, one 1-token request at a time:",
            "",
            *_table(
                ["grammar", "latency p50 ms", "latency p99 ms", "extra vs none p50 ms", "requests"],
                [
                    [
                        label,
                        dig(served, key, "p50"),
                        dig(served, key, "p99"),
                        extra,
                        dig(served, key, "n"),
                    ]
                    for label, key, extra in grammars
                ],
            ),
            "",
        ]
    load = compile_report.get("under_load") or {}
    if load:
        lines += [
            f"Under load: {load.get('streams')} unconstrained streams while "
            f"{load.get('heavy_requests_per_trial')} never-seen heavy schemas compile "
            f"(merged from {', '.join(load.get('heavy_schema_parts', []))}); compile window "
            f"p50 {fmt(dig(load, 'window_ms', 'p50'), 0)} ms.",
            "",
            *_table(
                ["streams' TPOT in the windows", "TPOT ms", "tokens", "stream windows",
                 "longest gap ms"],
                [
                    ["during compile", *_window_row(load.get("during_compile"))],
                    ["without compile (control)", *_window_row(load.get("without_compile"))],
                ],
            ),
            "",
            f"Ratio: {fmt(load.get('tpot_ratio'), 3)}.",
        ]  # fmt: skip
    return lines


def _window_row(window: Mapping[str, Any] | None) -> list[Any]:
    window = window or {}
    return [
        window.get("tpot_ms"),
        window.get("tokens"),
        window.get("stream_windows"),
        window.get("longest_gap_ms"),
    ]


def _frontend_section(report: Mapping[str, Any]) -> list[str]:
    frontend = report.get("frontend")
    if not frontend:
        return []
    return [
        f"## 5. Frontend cost (POST /v1/completions vs direct gRPC, {frontend.get('max_tokens')} "
        f"tokens, {frontend.get('pairs')} pairs)",
        "",
        *_table(
            ["path", "p50 ms", "p99 ms"],
            [
                ["HTTP /v1/completions, lean client", *_p50_p99(frontend.get("http_ms"))],
                ["HTTP /v1/completions, httpx", *_p50_p99(frontend.get("httpx_ms"))],
                ["direct gRPC", *_p50_p99(frontend.get("grpc_ms"))],
                [
                    "overhead (difference of percentiles)",
                    frontend.get("overhead_p50_ms"),
                    frontend.get("overhead_p99_ms"),
                ],
                ["overhead (paired differences)", *_p50_p99(frontend.get("overhead_ms_paired"))],
                ["overhead through httpx", frontend.get("overhead_with_httpx_p50_ms"), None],
            ],
        ),
        "",
        "The overhead rows use the lean client (`bench/lean_http.py`), of like weight to the "
        "gRPC client; httpx's own cost per request "
        f"(p50 {_ms(frontend.get('httpx_client_cost_p50_ms'))}) is the client's, not the server's.",
    ]


def _ms(value: Any) -> str:
    return "—" if value is None else f"{value:.2f} ms"


def _p50_p99(summary: Mapping[str, Any] | None) -> list[Any]:
    summary = summary or {}
    return [summary.get("p50"), summary.get("p99")]


def _perf_section(report: Mapping[str, Any]) -> list[str]:
    perf = report.get("perf_analyzer")
    if not perf:
        return []
    if not perf.get("available"):
        return ["## 6. perf_analyzer", "", f"Not available on this machine: {perf.get('error')}"]
    rows = [
        [
            level["concurrency"],
            level["requests_per_s"],
            level["responses_per_s"],
            level["p50_latency_ms"],
            level["p99_latency_ms"],
        ]
        for level in perf.get("levels", [])
    ]
    lines = [
        f"## 6. perf_analyzer (ensemble, gRPC streaming, {perf.get('max_tokens')} tokens/request)",
        "",
        *_table(
            [
                "c", "requests/s", "responses/s (≤ tokens/s)",
                "first response p50 ms", "first response p99 ms",
            ],
            rows,
        ),
        "",
        "perf_analyzer times a decoupled model's first response only, and the decoder may "
        "merge several tokens into one response when a client falls behind.",
    ]  # fmt: skip
    for failure in perf.get("failures", []):
        lines += ["", f"c={failure['concurrency']} failed (status {failure['status']})."]
    return lines


def write_summary(report: Mapping[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_summary(report))
