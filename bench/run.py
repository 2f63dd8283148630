"""One benchmark run: measure every phase against one served stack, then write the results.

A phase that fails is recorded in the report's ``errors`` and the run goes on,
so one broken measurement never costs the others; the servers are stopped
whatever happens (``served_stack``), and the report is written even when the
run is interrupted.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import subprocess
import sys
import time
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench import compile_cost, frontend_cost, perf, sweep, tpot
from bench.baseline import HFBaseline
from bench.environment import machine_info, model_info
from bench.load import EnsembleClient
from bench.noise import NoiseMeter
from bench.plots import write_plots
from bench.progress import say
from bench.report import write_json, write_summary
from bench.servers import Stack, served_stack
from bench.settings import BenchSettings
from bench.targets import evaluate
from bench.workload import constraint_kinds, corpus_schemas

PHASES = ("tpot", "sweep", "compile", "frontend", "perf")


def _phase(report: dict, meter: NoiseMeter, phase: str, message: str) -> None:
    """Announce a phase and note the machine's load as it starts: on a shared machine
    a high load next to a figure says it was measured under someone else's work."""
    say(message)
    meter.mark(phase)
    report["run"].setdefault("load_average_by_phase", {})[phase] = os.getloadavg()[0]


def _record_failure(report: dict, phase: str, error: BaseException) -> None:
    say(f"{phase}: FAILED: {error}")
    report["errors"].append(f"{phase}: {type(error).__name__}: {error}")
    report.setdefault("tracebacks", {})[phase] = traceback.format_exc()


async def _guarded(report: dict, phase: str, step: Callable[[], Awaitable[Any]]) -> Any:
    try:
        return await step()
    except Exception as error:
        _record_failure(report, phase, error)
        return None


async def _served_phases(
    stack: Stack,
    report: dict,
    settings: BenchSettings,
    baseline: HFBaseline,
    skip: set[str],
    meter: NoiseMeter,
) -> None:
    client = EnsembleClient(stack.triton.grpc_url)
    kinds = constraint_kinds()
    try:
        if "tpot" not in skip:
            _phase(report, meter, "tpot", "phase 1/3: TPOT by constraint kind, with the baseline")
            report["tpot"] = await _guarded(
                report, "tpot", lambda: tpot.measure(client, kinds, settings, baseline)
            )
        if "sweep" not in skip:
            _phase(report, meter, "sweep", "phase 2: throughput vs concurrency")
            report["sweep"] = await _guarded(
                report, "sweep", lambda: sweep.measure(client, settings)
            )
        if "compile" not in skip:
            _phase(report, meter, "compile", "phase 4: grammar compilation")
            compile_report = report.setdefault("compile", {})
            compile_report["requests"] = await _guarded(
                report,
                "compile.requests",
                lambda: compile_cost.request_latencies(client, settings, kinds["json_schema"]),
            )
            parts = corpus_schemas()
            heavy = compile_cost.heaviest(compile_report.get("offline") or {"schemas": {}})
            heavy_parts = {name: parts[name] for name in heavy if name in parts}
            if heavy_parts:
                compile_report["under_load"] = await _guarded(
                    report,
                    "compile.under_load",
                    lambda: compile_cost.tpot_while_compiling(client, settings, heavy_parts),
                )
        if "frontend" not in skip:
            _phase(report, meter, "frontend", "phase 5: frontend cost")
            report["frontend"] = await _guarded(
                report,
                "frontend",
                lambda: frontend_cost.measure(client, stack.frontend.url, stack.api_key, settings),
            )
    finally:
        await client.close()


def _code_version() -> dict:
    """The commit measured, and whether the serving code had uncommitted changes."""
    repo = Path(__file__).resolve().parent.parent

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", "-C", str(repo), *args], capture_output=True, text=True, check=False
            )
        except OSError:
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    serving = ("engine", "frontend", "grammar_compiler", "model_repository", "triton_runtime")
    changes = git("status", "--porcelain", "--", *serving)
    return {"commit": git("rev-parse", "HEAD"), "serving_code_modified": bool(changes)}


def _llama_cpp() -> dict:
    """llama.cpp (and vLLM) are compared by ``python -m bench.peers``, which
    builds llama-server and converts the model itself; this run does not."""
    return {
        "measured": False,
        "reason": "compared by python -m bench.peers (same model, c=1/8/32): "
        "see its report.json and summary.md",
    }


def run(model_dir: Path, out_dir: Path, settings: BenchSettings, skip: set[str]) -> dict:
    """Measure, write report.json, summary.md and the plots into `out_dir`; return the report."""
    started = time.monotonic()
    out_dir.mkdir(parents=True, exist_ok=True)
    report: dict = {
        "run": {
            "mode": "quick" if settings.quick else "full",
            "started_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "command": " ".join([Path(sys.executable).name, "-m", "bench", *sys.argv[1:]]),
            "skipped": sorted(skip),
            "code": _code_version(),
        },
        "settings": settings.as_dict(),
        "machine": machine_info(),
        "model": model_info(model_dir, None),
        "errors": [],
        "llama_cpp": _llama_cpp(),
    }
    meter = NoiseMeter()
    try:
        _measure(model_dir, out_dir, settings, skip, report, meter)
    except Exception as error:  # the servers did not start, say: recorded, and written
        _record_failure(report, "run", error)
    except KeyboardInterrupt:
        report["errors"].append("run: interrupted; the figures of the phases done are kept")
        raise
    finally:
        report["run"]["foreign_cpu_cores_by_phase"] = meter.foreign_cores()
        report["run"]["duration_s"] = time.monotonic() - started
        report["run"]["load_average_at_end"] = list(os.getloadavg())
        report["targets"] = evaluate(report)
        try:
            report["plots"] = write_plots(report, out_dir)
        except Exception as error:
            _record_failure(report, "plots", error)
        write_json(report, out_dir / "report.json")
        write_summary(report, out_dir / "summary.md")
        say(f"wrote {out_dir / 'report.json'} and {out_dir / 'summary.md'}")
    return report


def _measure(
    model_dir: Path,
    out_dir: Path,
    settings: BenchSettings,
    skip: set[str],
    report: dict,
    meter: NoiseMeter,
) -> None:
    if "compile" not in skip:
        say("phase 4 (offline): xgrammar compile times of the schema corpus")
        meter.mark("compile.offline")
        try:
            report.setdefault("compile", {})["offline"] = compile_cost.offline_compile_times(
                model_dir
            )
        except Exception as error:
            _record_failure(report, "compile.offline", error)
    say("loading the hand-written baseline (transformers + xgrammar)")
    meter.mark(NoiseMeter.UNMEASURED)  # loading and starting servers: not a measurement
    baseline = HFBaseline(model_dir)
    report["model"] = model_info(model_dir, baseline.parameter_count())
    say(f"starting tritonserver and the frontend on {model_dir}")
    with served_stack(model_dir, out_dir / "logs") as stack:
        say(f"servers ready: gRPC {stack.triton.grpc_url}, HTTP {stack.frontend.url}")
        meter.add_session(stack.triton.pid)
        meter.add_session(stack.frontend.pid)
        asyncio.run(_served_phases(stack, report, settings, baseline, skip, meter))
        if "perf" not in skip:
            _phase(report, meter, "perf_analyzer", "phase 6: perf_analyzer")
            try:
                report["perf_analyzer"] = perf.measure(
                    stack.triton.grpc_url, out_dir / "perf_analyzer", settings
                )
            except Exception as error:
                _record_failure(report, "perf", error)
        meter.close()
