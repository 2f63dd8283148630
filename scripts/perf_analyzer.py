#!/usr/bin/env python
"""Load-test the ensemble with NVIDIA perf_analyzer over gRPC streaming.

Usage:
    # against a running stack (scripts/serve.py), gRPC at 127.0.0.1:$CT_TRITON_GRPC_PORT
    .venv/bin/python scripts/perf_analyzer.py --concurrency-range 1:8:1
    # or start a private tritonserver on free ports for the run
    .venv/bin/python scripts/perf_analyzer.py --serve model_repository --model-dir DIR
    # unconstrained, longer outputs, extra perf_analyzer flags after "--"
    .venv/bin/python scripts/perf_analyzer.py --constraint-type none \\
        --sampling-parameters '{"max_tokens": 64, "temperature": 1.0, "seed": 1}' \\
        -- --max-trials 5

Flags (see --help for defaults):
    --url HOST:PORT            Triton gRPC endpoint (ignored with --serve)
    --serve REPO               start tritonserver on model repository REPO for the run
    --model-dir DIR            CT_MODEL_DIR given to that tritonserver
    --model NAME               model to load-test (the ensemble)
    --concurrency-range R      perf_analyzer start:end:step of concurrent streams
    --measurement-interval MS  length of one measurement window
    --stability-percentage P   how close successive windows must agree (perf_analyzer's
                               own default of 10 rarely settles on a busy 2-core machine)
    --prompt TEXT              text_input of every request
    --sampling-parameters JSON sampling_parameters of every request
    --constraint-type TYPE     constraint_type of every request (regex, none, ...)
    --constraint TEXT          constraint of every request
    --output-dir DIR           where the input data, CSV report and server log go

perf_analyzer is installed on first use into .cache/tools/ (see
triton_runtime/perf_analyzer.py). It reports requests/s ("Inferences/Second") and, for a
decoupled model, responses/s ("Response Throughput"). The decoder streams one response
per decoding step, so responses/s is printed as the estimate of output tokens/s.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import signal
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path
from types import FrameType

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from triton_runtime import TritonServer
from triton_runtime.perf_analyzer import PerfAnalyzer, install_perf_analyzer
from triton_runtime.runtime import REPO_ROOT

# Inputs of the ensemble: all BYTES with dims [1] under a batch dimension.
INPUT_NAMES = ("text_input", "sampling_parameters", "constraint_type", "constraint")


def parse_args(argv: list[str] | None = None) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    grpc_port = os.environ.get("CT_TRITON_GRPC_PORT", "8011")
    parser.add_argument("--url", default=f"127.0.0.1:{grpc_port}", help="default %(default)s")
    parser.add_argument("--serve", type=Path, metavar="REPO")
    parser.add_argument(
        "--model-dir",
        type=Path,
        default=Path(os.environ.get("CT_MODEL_DIR", str(REPO_ROOT / ".cache" / "models" / "demo"))),
    )
    parser.add_argument("--model", default="ensemble", help="default %(default)s")
    parser.add_argument("--concurrency-range", default="1:8:1", help="default %(default)s")
    parser.add_argument(
        "--measurement-interval", type=int, default=5000, help="ms, default %(default)s"
    )
    parser.add_argument("--stability-percentage", type=int, default=25, help="default %(default)s")
    parser.add_argument("--prompt", default="Today's date is ", help="default %(default)r")
    parser.add_argument(
        "--sampling-parameters",
        default='{"max_tokens": 32, "temperature": 1.0, "seed": 1}',
        help="default %(default)s",
    )
    parser.add_argument("--constraint-type", default="regex", help="default %(default)s")
    parser.add_argument(
        "--constraint", default="[0-9]{4}-[0-9]{2}-[0-9]{2}", help="default %(default)s"
    )
    parser.add_argument(
        "--output-dir", type=Path, default=REPO_ROOT / "reports" / "perf_analyzer",
        help="default %(default)s",
    )  # fmt: skip
    argv = sys.argv[1:] if argv is None else argv
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    json.loads(args.sampling_parameters)  # fail here, not as a server-side error per request
    return args, argv[split + 1 :]


def write_input_data(args: argparse.Namespace, path: Path) -> None:
    """One request, repeated by perf_analyzer: every stream sends the same prompt."""
    constraint = "" if args.constraint_type == "none" else args.constraint
    values = [args.prompt, args.sampling_parameters, args.constraint_type, constraint]
    step = {name: [value] for name, value in zip(INPUT_NAMES, values, strict=True)}
    path.write_text(json.dumps({"data": [step]}, indent=2))


def perf_analyzer_command(
    executable: Path, args: argparse.Namespace, url: str, input_data: Path, csv_path: Path
) -> list[str]:
    shapes = [arg for name in INPUT_NAMES for arg in ("--shape", f"{name}:1")]
    return [
        str(executable),
        "-m", args.model,
        "-i", "grpc", "--streaming", "-u", url,
        "--concurrency-range", args.concurrency_range,
        "--measurement-interval", str(args.measurement_interval),
        "--stability-percentage", str(args.stability_percentage),
        "--input-data", str(input_data), *shapes,
        "-f", str(csv_path),
    ]  # fmt: skip


def summarize(csv_path: Path) -> str:
    """A table of the CSV report, with responses/s as the estimate of output tokens/s."""
    with csv_path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    header = (
        f"{'concurrency':>11} {'requests/s':>11} {'tokens/s (est.)':>15} "
        f"{'tokens/request':>14} {'p50 ms':>9} {'p99 ms':>9}"
    )
    lines = [header]
    for row in rows:
        requests = float(row["Inferences/Second"])
        responses = float(row.get("Response Throughput") or "nan")
        per_request = responses / requests if requests else float("nan")
        lines.append(
            f"{row['Concurrency']:>11} {requests:>11.2f} {responses:>15.1f} {per_request:>14.1f} "
            f"{float(row['p50 latency']) / 1e3:>9.1f} {float(row['p99 latency']) / 1e3:>9.1f}"
        )
    return "\n".join(lines)


def _interrupt(_signum: int, _frame: FrameType | None) -> None:
    """SIGTERM unwinds like Ctrl-C, so a server started by --serve is stopped, not orphaned."""
    raise KeyboardInterrupt


def run(
    args: argparse.Namespace, extra: list[str], tool: PerfAnalyzer, input_data: Path, csv_path: Path
) -> tuple[int, str]:
    """Run perf_analyzer (against a private server with --serve); its status and the URL."""
    with ExitStack() as stack:
        url = args.url
        if args.serve is not None:
            server = TritonServer(
                args.serve,
                env={"CT_MODEL_DIR": str(args.model_dir.resolve())},
                log_file=args.output_dir / "tritonserver.log",
                startup_timeout=300.0,
            )
            stack.enter_context(server)
            url = server.grpc_url
        command = [*perf_analyzer_command(tool.executable, args, url, input_data, csv_path), *extra]
        print("+", " ".join(command), flush=True)
        return subprocess.run(command, env={**os.environ, **tool.env}, check=False).returncode, url


def main(argv: list[str] | None = None) -> int:
    args, extra = parse_args(argv)
    tool = install_perf_analyzer()
    args.output_dir.mkdir(parents=True, exist_ok=True)
    input_data = args.output_dir / "input_data.json"
    csv_path = args.output_dir / "results.csv"
    write_input_data(args, input_data)
    csv_path.unlink(missing_ok=True)

    signal.signal(signal.SIGTERM, _interrupt)
    try:
        status, url = run(args, extra, tool, input_data, csv_path)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    if status != 0 or not csv_path.is_file():
        print(f"perf_analyzer failed with status {status}", file=sys.stderr)
        return status or 1
    print(f"\nSummary ({args.model} at {url}; CSV: {csv_path})")
    print(summarize(csv_path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
