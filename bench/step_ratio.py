"""The decode step over the model's time in it, in process and untimed: the
figure an engine change moves, on the peers bench's workload.

``bench.step_profile`` splits a step into parts, but its timers wrap every
part and add their own cost (~0.1 ms a step at c=32), more than most changes
to the work around the model save. This runs the same loop with nothing
wrapped and reads the engine's own per-step figures (step time and the
model's share, as the served decoder reports them in
``ct_decoder_step_seconds_total``), with the workload of ``python -m
bench.peers``: its JSON schema, greedy, 64 tokens, outputs held to the end
as the frontend's collected requests are. Compare two trees by running this
in each, alternately (the machine's speed drifts between runs):

    python -m bench.step_ratio --model-dir .cache/models/demo --concurrency 8 32
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from bench.peers.workload import MAX_TOKENS, SCHEMA
from bench.report import print_and_save
from bench.step_profile import CountingSink, SteadyLoad
from bench.workload import PROMPTS
from engine.engine import Engine
from engine.grammar_cache import GrammarCache
from engine.model_runner import ModelRunner
from engine.params import Constraint, ConstraintType, SamplingParams
from engine.request import GenerationRequest
from engine.settings import forward_threads
from grammar_compiler import compile_json_schema

HELD_MS = 3_600_000.0  # the frontend's collected requests: one response at the end


def measure(runner: ModelRunner, concurrency: int, steps: int) -> dict:
    """``steps`` measured steps with ``concurrency`` requests in flight, after
    one full turnover of rows."""
    engine = Engine(runner, GrammarCache(runner.tokenizer_info), max_batch_size=max(concurrency, 8))
    constraint = Constraint(
        type=ConstraintType.JSON_SCHEMA, value=compile_json_schema(json.dumps(SCHEMA)).value
    )
    totals = {"steps": 0, "step_s": 0.0, "model_s": 0.0}

    def step_finished(seconds: float, model_seconds: float) -> None:
        totals["steps"] += 1
        totals["step_s"] += seconds
        totals["model_s"] += model_seconds

    engine._metrics.step_finished = step_finished  # type: ignore[method-assign]

    def request(index: int, sink: CountingSink) -> GenerationRequest:
        return GenerationRequest(
            request_id=f"r{index}",
            prompt_ids=runner.tokenizer.encode(PROMPTS[index % len(PROMPTS)]),
            params=SamplingParams(
                max_tokens=MAX_TOKENS, temperature=0.0, stream_interval_ms=HELD_MS
            ),
            constraint=constraint,
            sink=sink,
        )

    load = SteadyLoad(engine, concurrency, request)
    try:
        load.fill()
        for _ in range(MAX_TOKENS):  # every row replaced once: a steady mix of ages
            load.step()
        totals.update(steps=0, step_s=0.0, model_s=0.0)
        tokens_before, started = load.tokens[0], time.perf_counter()
        for _ in range(steps):
            load.step()
        wall = time.perf_counter() - started
        load.raise_failures("measuring")
    finally:
        engine.shutdown()
    return {
        "concurrency": concurrency,
        "steps": totals["steps"],
        "step_ms_mean": totals["step_s"] * 1000 / totals["steps"],
        "model_ms_mean": totals["model_s"] * 1000 / totals["steps"],
        "step_over_model": totals["step_s"] / totals["model_s"],
        "tokens_per_s": (load.tokens[0] - tokens_before) / wall,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-dir", type=Path, default=Path(".cache/models/demo"))
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=2, help="runs per concurrency")
    parser.add_argument("--output", type=Path, help="also write the results here as JSON")
    args = parser.parse_args()
    # The forward's threads as the served decoder sets them (``torch_threads``
    # auto: every core but one, which the mask thread then has).
    torch.set_num_threads(forward_threads("auto") or torch.get_num_threads())
    runner = ModelRunner.load(args.model_dir, device="cpu")
    results = []
    for concurrency in args.concurrency:
        measure(runner, concurrency, steps=50)  # warm-up: oneDNN's kernels, the grammar
        for _ in range(args.repeats):
            result = measure(runner, concurrency, args.steps)
            results.append(result)
            print(
                f"c={concurrency}: step / model {result['step_over_model']:.3f}, "
                f"{result['tokens_per_s']:.0f} tokens/s, step {result['step_ms_mean']:.3f} ms",
                flush=True,
            )
    print_and_save({"model_dir": str(args.model_dir), "results": results}, args.output)


if __name__ == "__main__":
    main()
