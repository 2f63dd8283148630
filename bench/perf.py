"""Phase 6: NVIDIA perf_analyzer against the ensemble, one run per concurrency level.

The command line, input data and CSV summary come from scripts/perf_analyzer.py
and the binary from triton_runtime's installer, so this is exactly what the
documented tool measures. Where perf_analyzer cannot be installed or run on
the machine, the report says so and the rest of the benchmark stands.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import subprocess
from pathlib import Path
from types import ModuleType

from bench.progress import say
from bench.settings import BenchSettings
from bench.workload import PROMPTS, sampling_parameters

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "perf_analyzer.py"
LEVEL_TIMEOUT_S = 300


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ct_perf_analyzer_script", SCRIPT)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot load {SCRIPT}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rows(csv_path: Path) -> list[dict]:
    with csv_path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    parsed = []
    for row in rows:
        requests = float(row["Inferences/Second"])
        responses = float(row.get("Response Throughput") or "nan")
        parsed.append(
            {
                "concurrency": int(row["Concurrency"]),
                "requests_per_s": requests,
                "responses_per_s": responses,
                "p50_latency_ms": float(row["p50 latency"]) / 1e3,
                "p99_latency_ms": float(row["p99 latency"]) / 1e3,
            }
        )
    return parsed


def measure(grpc_url: str, out_dir: Path, settings: BenchSettings) -> dict:
    """perf_analyzer at each of `settings.perf_concurrency`; never raises."""
    try:
        from triton_runtime.perf_analyzer import install_perf_analyzer

        tool = install_perf_analyzer()
        script = _script()
    except Exception as error:
        say(f"perf_analyzer: not available ({error})")
        return {"available": False, "error": f"{type(error).__name__}: {error}"}
    out_dir.mkdir(parents=True, exist_ok=True)
    # Shorter requests than the other phases: at c=64 a 64-token request takes
    # seconds on CPU, and perf_analyzer needs many to finish per window.
    max_tokens = max(8, settings.max_tokens // 4)
    params = json.dumps(sampling_parameters(max_tokens, seed=1))
    levels, failures = [], []
    for concurrency in settings.perf_concurrency:
        level_dir = out_dir / f"c{concurrency}"
        args, _ = script.parse_args(
            [
                "--concurrency-range", f"{concurrency}:{concurrency}:1",
                "--measurement-interval", str(settings.perf_measurement_ms),
                "--stability-percentage", "50",
                "--prompt", PROMPTS[0],
                "--sampling-parameters", params,
                "--constraint-type", "none",
                "--output-dir", str(level_dir),
            ]
        )  # fmt: skip
        level_dir.mkdir(parents=True, exist_ok=True)
        input_data, csv_path = level_dir / "input_data.json", level_dir / "results.csv"
        script.write_input_data(args, input_data)
        csv_path.unlink(missing_ok=True)
        command = [
            *script.perf_analyzer_command(tool.executable, args, grpc_url, input_data, csv_path),
            "--max-trials", str(settings.perf_max_trials),
        ]  # fmt: skip
        try:
            with (level_dir / "perf_analyzer.log").open("wb") as log:
                status = subprocess.run(
                    command,
                    env={**os.environ, **tool.env},
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    timeout=LEVEL_TIMEOUT_S,
                    check=False,
                ).returncode
        except subprocess.TimeoutExpired:
            status = -1
        if status == 0 and csv_path.is_file():
            levels += _rows(csv_path)
            say(f"perf_analyzer: c={concurrency} done")
        else:
            tail = (level_dir / "perf_analyzer.log").read_text(errors="replace")[-400:]
            failures.append({"concurrency": concurrency, "status": status, "log_tail": tail})
            say(f"perf_analyzer: c={concurrency} failed with status {status}")
    return {
        "available": True,
        "max_tokens": max_tokens,
        "measurement_interval_ms": settings.perf_measurement_ms,
        "levels": levels,
        "failures": failures,
        "note": "responses/s estimates output tokens/s from below (one response per token, "
        "fewer when the decoder merges a slow client's tokens); latencies are perf_analyzer's "
        "first-response latencies",
    }
