"""Two trees of this service served side by side, their rounds alternated at
random: a served change measured against its baseline in one run.

Why: on these shared two-core machines the served throughput of one tree
drifts 10-20 % between runs minutes apart (``bench.peers`` on the same code:
c=1 1,063 then 1,248 tokens/s), more than most changes move it, so two runs
one after the other compare the machine's moods. Here both stacks are up at
once and every pair of rounds (one per tree, in random order) sees the same
moment; the idle stack's pollers cost both alike. Each tree's decoder
also reports its served step over the model's time in it, over its own
rounds (``bench/decoder_steps.py``). The workload is
``bench.peers``'s (its JSON schema, greedy, 64 tokens, collected), and each
round is ``c`` simultaneous requests after a warm-up round, as there. An
A/A run (a tree against a copy of itself, 40 pairs) gave 1.012 and 0.973
at c=1 and c=8: a difference under ~3 % is noise.

    git worktree add /tmp/candidate HEAD   # then change it
    python -m bench.served_ab --baseline . --candidate /tmp/candidate --concurrency 1 32

A tree needs ``.cache`` (the Triton runtime, the model) where the project
looks for it: a worktree can link the main tree's.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
from contextlib import ExitStack
from pathlib import Path

from bench.decoder_steps import StepCounters, read_step_counters, step_share
from bench.peers.engines import this_service
from bench.peers.workload import measure, prompt_ids
from bench.report import print_and_save
from bench.servers import REPO_ROOT


def _quartiles(values: list[float]) -> dict[str, float]:
    low, median, high = statistics.quantiles(values, n=4)
    return {"p25": round(low, 3), "p50": round(median, 3), "p75": round(high, 3)}


def compare(baseline: list[float], candidate: list[float]) -> dict:
    """Throughputs of paired rounds (round i of each tree ran back to back)."""
    ratios = [c / b for b, c in zip(baseline, candidate, strict=True)]
    baseline_median, candidate_median = statistics.median(baseline), statistics.median(candidate)
    return {
        "baseline_tokens_per_s": round(baseline_median),
        "candidate_tokens_per_s": round(candidate_median),
        "candidate_over_baseline": round(candidate_median / baseline_median, 3),
        "paired_ratio": _quartiles(ratios),
    }


def _step_over_model(before: StepCounters, metrics_url: str) -> float | None:
    """The served decoder's step over its model time since ``before``."""
    ratio = step_share(before, read_step_counters(metrics_url))["step_over_model"]
    return None if ratio is None else round(ratio, 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", type=Path, default=REPO_ROOT)
    parser.add_argument("--candidate", type=Path, required=True)
    parser.add_argument("--model-dir", type=Path, default=REPO_ROOT / ".cache" / "models" / "demo")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 32])
    parser.add_argument("--pairs", type=int, default=60, help="round pairs per concurrency")
    parser.add_argument("--logs", type=Path, default=Path("/tmp/served_ab"))
    parser.add_argument("--output", type=Path, help="also write the results here as JSON")
    args = parser.parse_args()
    trees = {"baseline": args.baseline.resolve(), "candidate": args.candidate.resolve()}
    prompts = prompt_ids(args.model_dir)
    results = {}
    with ExitStack() as stack:
        endpoints = {
            name: stack.enter_context(
                this_service(args.model_dir, args.logs / name, 0, repo_root=root)
            )
            for name, root in trees.items()
        }
        for c in args.concurrency:
            rounds: dict[str, list[float]] = {name: [] for name in trees}
            counters = {name: read_step_counters(endpoints[name].metrics_url) for name in trees}
            for _ in range(args.pairs):
                for name in random.sample(list(trees), len(trees)):
                    measured = asyncio.run(measure(endpoints[name], prompts, c, rounds=1))
                    rounds[name].append(measured["tokens_per_s"])
            results[str(c)] = compare(rounds["baseline"], rounds["candidate"])
            results[str(c)]["step_over_model"] = {
                name: _step_over_model(counters[name], endpoints[name].metrics_url)
                for name in trees
            }
            print(f"c={c}: {results[str(c)]}", flush=True)
    print_and_save(
        {"trees": {name: str(root) for name, root in trees.items()}, "pairs": args.pairs,
         "results": results},
        args.output,
    )  # fmt: skip


if __name__ == "__main__":
    main()
