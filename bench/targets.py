"""The issue's target table: which measured figure each target reads and whether it passes.

Pure functions of the report dictionary, so the table can be recomputed from
a saved ``report.json`` and tested with fake measurements.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from bench import stats

_OPERATORS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le,
    "<": operator.lt,
    ">=": operator.ge,
    ">": operator.gt,
}


def dig(report: Mapping[str, Any], *path: str) -> Any:
    """report[path[0]][path[1]]...; None where any step is missing."""
    node: Any = report
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node


@dataclass(frozen=True)
class Target:
    name: str
    op: str
    threshold: float
    unit: str
    measure: Callable[[Mapping[str, Any]], float | None]
    how: str
    """Which figures of the report the value comes from."""
    phase: str
    """The phase that measured it (for the other processes' CPU use at the time)."""
    not_measured: Callable[[Mapping[str, Any]], str | None] = lambda _report: None
    """A reason the target cannot be measured on this machine, if any."""


def _tpot_ratio_json_c16(report: Mapping[str, Any]) -> float | None:
    return dig(report, "tpot", "tpot_ratio_median_of_rounds", "json_schema", "16")


def _sweep_c16_over_c1(report: Mapping[str, Any]) -> float | None:
    levels = dig(report, "sweep", "by_concurrency") or {}
    return stats.ratio(
        dig(levels, "16", "output_tokens_per_s"), dig(levels, "1", "output_tokens_per_s")
    )


def _latency_vs_baseline(report: Mapping[str, Any]) -> float | None:
    return stats.ratio(
        dig(report, "tpot", "kinds", "json_schema", "by_concurrency", "1", "latency_ms", "p50"),
        dig(report, "tpot", "baseline", "json_schema", "latency_ms", "p50"),
    )


def _throughput_vs_baseline(report: Mapping[str, Any]) -> float | None:
    return stats.ratio(
        dig(report, "tpot", "kinds", "json_schema", "by_concurrency", "16", "output_tokens_per_s"),
        dig(report, "tpot", "baseline", "json_schema", "output_tokens_per_s"),
    )


def _llama_cpp(report: Mapping[str, Any]) -> str | None:
    return dig(report, "llama_cpp", "reason") or "compared by python -m bench.peers"


TARGETS: tuple[Target, ...] = (
    Target(
        "constrained TPOT / unconstrained TPOT, JSON schema, c16",
        "<=", 1.05, "x", _tpot_ratio_json_c16,
        "mean TPOT of JSON-schema / of unconstrained requests at c=16, median over rounds", "tpot",
    ),
    Target(
        "throughput c16 / c1",
        ">=", 8.0, "x", _sweep_c16_over_c1,
        "unconstrained output tokens/s at c=16 / at c=1 (throughput sweep)", "sweep",
    ),
    Target(
        "single request latency server / hand-written baseline",
        "<=", 1.10, "x", _latency_vs_baseline,
        "p50 latency of a JSON-schema request at c=1 / p50 latency of HF generate() + xgrammar",
        "tpot",
    ),
    Target(
        "throughput c16 server / baseline",
        ">=", 6.0, "x", _throughput_vs_baseline,
        "JSON-schema output tokens/s at c=16 / HF generate() + xgrammar tokens/s", "tpot",
    ),
    Target(
        "cached grammar extra latency vs no grammar",
        "<", 1.0, "ms", lambda r: dig(r, "compile", "requests", "cached_extra_ms"),
        "p50 latency of a 1-token request with a cached JSON schema - without a grammar", "compile",
    ),
    Target(
        "running requests' TPOT while a heavy schema compiles / without",
        "<=", 1.10, "x", lambda r: dig(r, "compile", "under_load", "tpot_ratio"),
        "mean TPOT of 8 unconstrained streams during compile windows / same windows, no compile",
        "compile",
    ),
    Target(
        "frontend overhead per request (p50)",
        "<", 2.0, "ms", lambda r: dig(r, "frontend", "overhead_p50_ms"),
        "p50 POST /v1/completions latency - p50 direct gRPC latency, same request, "
        "lean HTTP client (with httpx: see the phase)",
        "frontend",
    ),
    Target(
        "throughput c64 server / llama.cpp",
        ">=", 1.0, "x", lambda _r: None,
        "server c=64 output tokens/s / llama-server's on the same model", "sweep",
        _llama_cpp,
    ),
)  # fmt: skip


def _requirement(target: Target) -> str:
    """ "<= 1.05" for ratios, "< 2 ms" for durations."""
    unit = "" if target.unit == "x" else f" {target.unit}"
    return f"{target.op} {target.threshold:g}{unit}"


def evaluate(report: Mapping[str, Any], targets: tuple[Target, ...] = TARGETS) -> list[dict]:
    """One row per target: measured value, threshold, and pass / fail / not measured."""
    rows = []
    for target in targets:
        reason = target.not_measured(report)
        value = None if reason else target.measure(report)
        if value is None:
            status = "not measured"
            reason = reason or "a figure it needs is missing (see the report's errors)"
        else:
            status = "pass" if _OPERATORS[target.op](value, target.threshold) else "fail"
        rows.append(
            {
                "target": target.name,
                "phase": target.phase,
                "foreign_cpu_cores": None
                if value is None
                else dig(report, "run", "foreign_cpu_cores_by_phase", target.phase),
                "requirement": _requirement(target),
                "measured": value,
                "unit": target.unit,
                "status": status,
                "how": target.how,
                **({"reason": reason} if status == "not measured" else {}),
            }
        )
    return rows
