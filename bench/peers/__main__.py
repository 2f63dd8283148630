"""``python -m bench.peers``: this service, llama-server and vLLM CPU on one
model, one after another in one run; ``report.json`` and ``summary.md`` in
``--out`` hold every figure, the ratios and the issue's targets.

    python -m bench.peers --model-dir .cache/models/demo --out bench/results/peers-demo
    python -m bench.peers --setup-only            # build and install the peers, measure nothing
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Iterable
from pathlib import Path

from bench.decoder_steps import read_step_counters, step_share
from bench.environment import machine_info, model_info
from bench.noise import NoiseMeter
from bench.peers import install
from bench.peers.engines import ENGINES
from bench.peers.summary import step_targets, targets, write_summary
from bench.peers.workload import MAX_TOKENS, SCHEMA, measure, prompt_ids
from bench.progress import say
from bench.report import write_json
from bench.servers import REPO_ROOT
from bench.soak import group_memory_mb

DEFAULT_MODEL = REPO_ROOT / ".cache" / "models" / "demo"


def _prepare(names: list[str], model_dir: Path) -> None:
    """Everything slow happens before the first measurement."""
    if "llama-server" in names:
        install.llama_server()
        install.gguf_model(model_dir)
    if "vllm" in names:
        install.vllm_python()


def _run_engine(
    name: str, cycle: int, args: argparse.Namespace, meter: NoiseMeter, log_dir: Path
) -> dict:
    prompts = prompt_ids(args.model_dir)
    started = time.monotonic()
    meter.mark(NoiseMeter.UNMEASURED)
    with ENGINES[name](args.model_dir, log_dir, args.slots) as endpoint:
        startup_s = time.monotonic() - started
        for group in endpoint.process_groups:
            meter.add_session(group)
        runs = {}
        # One noise phase per engine and cycle: /proc's tick counts are too coarse
        # for the sub-second phases of a single concurrency level.
        meter.mark(f"{name} cycle {cycle + 1}")
        for c in args.concurrency:
            say(f"{name}: c={c}")
            metrics_url = endpoint.metrics_url
            before = read_step_counters(metrics_url) if metrics_url else None
            runs[str(c)] = asyncio.run(measure(endpoint, prompts, c, args.rounds))
            if metrics_url and before is not None:
                after = read_step_counters(metrics_url)
                runs[str(c)]["decoder_steps"] = step_share(before, after)
        memory = {k: v for g in endpoint.process_groups for k, v in group_memory_mb(g).items()}
        meter.mark(NoiseMeter.UNMEASURED)  # while the server still runs: its CPU time is its own
    return {"startup_s": startup_s, "rss_mb": sum(memory.values()), "by_concurrency": runs}


def _median_present(values: Iterable[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return statistics.median(present) if present else None


def _merge_cycles(cycles: list[dict]) -> dict:
    """Per engine and concurrency: the median over cycles of each cycle's median round."""
    merged: dict = {}
    for name in cycles[0]:
        runs = [cycle[name] for cycle in cycles]
        merged[name] = {
            "startup_s": statistics.median(r["startup_s"] for r in runs),
            "rss_mb": max(r["rss_mb"] for r in runs),
            "by_concurrency": {
                c: {
                    "tokens_per_s": statistics.median(
                        r["by_concurrency"][c]["tokens_per_s"] for r in runs
                    ),
                    "cycles": [r["by_concurrency"][c] for r in runs],
                    "step_over_model": _median_present(
                        r["by_concurrency"][c].get("decoder_steps", {}).get("step_over_model")
                        for r in runs
                    ),
                }
                for c in runs[0]["by_concurrency"]
            },
        }
    return merged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-dir", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--out", type=Path, default=Path("bench/results/peers"))
    parser.add_argument("--engines", nargs="+", choices=list(ENGINES), default=list(ENGINES))
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cycles", type=int, default=1, help="run every engine this many times")
    parser.add_argument("--slots", type=int, default=32, help="peers' parallel sequences")
    parser.add_argument("--setup-only", action="store_true")
    args = parser.parse_args()
    _prepare(args.engines, args.model_dir)
    if args.setup_only:
        return
    meter = NoiseMeter()
    report: dict = {
        "machine": machine_info(),
        "model": model_info(args.model_dir, None),
        "workload": {"max_tokens": MAX_TOKENS, "temperature": 0.0, "schema": SCHEMA,
                     "concurrency": args.concurrency, "rounds": args.rounds,
                     "cycles": args.cycles, "peer_slots": args.slots},
    }  # fmt: skip
    cycles = []
    for cycle in range(args.cycles):
        shift = cycle % len(args.engines)  # each cycle starts with another engine
        order = args.engines[shift:] + args.engines[:shift]
        logs = args.out / "logs"
        cycles.append({name: _run_engine(name, cycle, args, meter, logs) for name in order})
    meter.close()
    report["engines"] = _merge_cycles(cycles)
    report["foreign_cpu_cores"] = meter.foreign_cores()
    report["targets"] = targets(report["engines"])
    report["step_targets"] = step_targets(report["engines"])
    write_json(report, args.out / "report.json")
    write_summary(report, args.out / "summary.md")
    print((args.out / "summary.md").read_text())


if __name__ == "__main__":
    main()
