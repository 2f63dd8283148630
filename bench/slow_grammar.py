"""What one request with a slow grammar costs everyone else, in process.

A token mask is filled for every constrained row before the batch can
sample, so a grammar whose masks are slow to fill could hold the whole batch
at its pace (``engine/slow_lane.py`` is the answer). Some are slow with
nothing wrong in them: an ambiguous regex such as ``([a-z]+ ?)+\\.`` (a
sentence) keeps many parses alive, and filling one of its masks took 2.7 ms
(mean of a random walk) with the demo's 4k vocabulary and 80 ms with Llama
3's 128k, against ~0.01 / 0.07 ms for a JSON row.

This runs ``--concurrency`` JSON requests (the peers workload: its schema,
greedy, 64 tokens, every token streamed) on the engine's own thread beside
one long request, constrained by that regex (without its full stop) or
unconstrained, alternately, and reports the JSON requests' time per output
token (first to last token) both ways: what the slow grammar costs them
beyond one more long row in the batch. The long request ignores
end-of-sequence (and, constrained, its matches), so it runs until the round
cancels it:

    python -m bench.slow_grammar --model-dir .cache/models/demo --concurrency 8
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from pathlib import Path

import torch

from bench.peers.workload import MAX_TOKENS, SCHEMA
from bench.report import print_and_save
from bench.workload import PROMPTS
from engine.engine import Engine
from engine.grammar_cache import GrammarCache
from engine.model_runner import ModelRunner
from engine.params import Constraint, ConstraintType, SamplingParams
from engine.request import GenerationRequest, StepOutput
from engine.settings import forward_threads
from grammar_compiler import compile_json_schema, compile_regex

SLOW_REGEX = r"([a-z]+ ?)+"
SLOW_CONSTRAINT = Constraint(type=ConstraintType.REGEX, value=compile_regex(SLOW_REGEX))
JSON_CONSTRAINT = Constraint(
    type=ConstraintType.JSON_SCHEMA, value=compile_json_schema(json.dumps(SCHEMA)).value
)
# The long request outlasts the others (it is cancelled once they finish).
LONG_MAX_TOKENS = 1536


class TimingSink:
    """When each token count was reported, and when the request ended."""

    def __init__(self) -> None:
        self.reports: list[tuple[float, int]] = []
        self.failure: str | None = None
        self.done = threading.Event()

    def send(self, output: StepOutput) -> None:
        self.reports.append((time.perf_counter(), output.tokens_generated))
        if output.request_done:
            self.done.set()

    def fail(self, message: str, *, invalid_argument: bool, field: str | None = None) -> None:
        self.failure = message
        self.done.set()

    def is_cancelled(self) -> bool:
        return False

    def time_per_token(self) -> float | None:
        """Seconds per output token after the first (None: fewer than two reports)."""
        if len(self.reports) < 2:
            return None
        (first_at, first_tokens), (last_at, last_tokens) = self.reports[0], self.reports[-1]
        return (last_at - first_at) / max(1, last_tokens - first_tokens)


def run_round(
    engine: Engine, runner: ModelRunner, concurrency: int, with_slow: bool, round_index: int
) -> dict:
    """One round beside a long request (``with_slow``: under the slow
    grammar): the JSON requests' mean time per token, and the long request's."""
    long_constraint = SLOW_CONSTRAINT if with_slow else Constraint()
    json_params = SamplingParams(max_tokens=MAX_TOKENS, temperature=0.0)
    long_params = SamplingParams(
        max_tokens=LONG_MAX_TOKENS, temperature=0.0, ignore_eos=True, stop_after_match=False
    )

    def submit(
        label: str, index: int, constraint: Constraint, params: SamplingParams
    ) -> TimingSink:
        sink = TimingSink()
        engine.submit(
            GenerationRequest(
                request_id=f"{label}-c{concurrency}-{round_index}-{index}",
                prompt_ids=runner.tokenizer.encode(PROMPTS[index % len(PROMPTS)]),
                params=params,
                constraint=constraint,
                sink=sink,
            )
        )
        return sink

    long = submit("long", 0, long_constraint, long_params)
    while not long.reports and not long.done.is_set():  # it runs before the others join
        time.sleep(0.001)
    sinks = [submit("json", index, JSON_CONSTRAINT, json_params) for index in range(concurrency)]
    for sink in sinks:
        if not sink.done.wait(300):
            raise RuntimeError("a request did not finish within 300 s")
        if sink.failure is not None:
            raise RuntimeError(f"a request failed: {sink.failure}")
    if long.done.is_set():
        raise RuntimeError(f"the long request ended before the others: {long.failure}")
    engine.cancel(f"long-c{concurrency}-{round_index}-0")
    long.done.wait(300)
    per_token = [sink.time_per_token() for sink in sinks]
    return {
        "with_slow": with_slow,
        "json_ms_per_token": 1000 * statistics.mean(t for t in per_token if t is not None),
        "long_ms_per_token": 1000 * (long.time_per_token() or 0.0),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-dir", type=Path, default=Path(".cache/models/demo"))
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8])
    parser.add_argument("--pairs", type=int, default=5, help="rounds with and without, each")
    parser.add_argument("--output", type=Path, help="also write the results here as JSON")
    args = parser.parse_args()
    # As the served decoder sets them: the lane's thread is one of those the
    # spare core serves, not one that preempts the forward's own threads.
    torch.set_num_threads(forward_threads("auto") or torch.get_num_threads())
    runner = ModelRunner.load(args.model_dir, device="cpu")
    grammars = GrammarCache(runner.tokenizer_info)
    for constraint in (JSON_CONSTRAINT, SLOW_CONSTRAINT):  # compiled before any round
        grammars.get(constraint).result()
    engine = Engine(runner, grammars)
    engine.start()
    results = []
    try:
        for concurrency in args.concurrency:
            run_round(engine, runner, concurrency, with_slow=True, round_index=-1)  # warm-up
            rounds = [
                run_round(engine, runner, concurrency, with_slow, round_index=2 * index + with_slow)
                for index in range(args.pairs)
                for with_slow in (False, True)
            ]
            free = [r["json_ms_per_token"] for r in rounds if not r["with_slow"]]
            slow = [r["json_ms_per_token"] for r in rounds if r["with_slow"]]
            result = {
                "concurrency": concurrency,
                "json_ms_per_token_beside_free": statistics.median(free),
                "json_ms_per_token_beside_slow": statistics.median(slow),
                "ratio": statistics.median(s / f for s, f in zip(slow, free, strict=True)),
                "slow_ms_per_token": statistics.median(
                    r["long_ms_per_token"] for r in rounds if r["with_slow"]
                ),
                "rounds": rounds,
            }
            results.append(result)
            print(
                f"c={concurrency}: JSON {result['json_ms_per_token_beside_free']:.2f} ms/token "
                f"beside a free long request, {result['json_ms_per_token_beside_slow']:.2f} "
                f"beside the slow grammar (x{result['ratio']:.2f}); the slow one "
                f"{result['slow_ms_per_token']:.2f}",
                flush=True,
            )
    finally:
        engine.shutdown()
    print_and_save(
        {"model_dir": str(args.model_dir), "slow_regex": SLOW_REGEX, "results": results},
        args.output,
    )


if __name__ == "__main__":
    main()
