"""What the detokenizer step costs: the three-model ensemble against the
decoder making its own text, both served at once, measured in one run.

The second stack serves a copy of ``model_repository/`` whose decoder decodes
text itself (``text_in_decoder``) and whose ensemble has two steps. Rounds
alternate which stack goes first; each round runs the same JSON-schema
constrained, 64-token workload at every concurrency straight over gRPC (no
frontend, as ``perf_analyzer`` would). The figure is the throughput ratio,
three steps over two, per concurrency (median of the rounds).

    python -m bench.ensemble_cost --rounds 4 --output bench/results/ensemble-cost/NAME.json
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import statistics
import tempfile
from pathlib import Path

from bench import stats
from bench.load import tokens_in_closed_loop
from bench.progress import say
from bench.report import print_and_save
from bench.servers import MODEL_REPOSITORY, REPO_ROOT
from bench.workload import USER_JSON_SCHEMA, json_schema_constraint, requests
from triton_runtime import TritonServer

WINDOW_OUTPUTS = ("token_window", "window_prefix_len", "shows_special_tokens")


def two_step_repository(into: Path) -> Path:
    """A copy of the model repository whose decoder makes the text and whose
    ensemble ends there (the path before the detokenizer step)."""
    repository = into / "model_repository"
    shutil.copytree(MODEL_REPOSITORY, repository, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.rmtree(repository / "detokenizer")
    shutil.rmtree(repository / "chat_template")
    decoder = repository / "constrained_decoder" / "config.pbtxt"
    decoder.write_text(
        decoder.read_text().replace(
            'key: "text_in_decoder", value: { string_value: "false" }',
            'key: "text_in_decoder", value: { string_value: "true" }',
        )
    )
    ensemble = repository / "ensemble" / "config.pbtxt"
    text = re.sub(
        r',\s*\{\s*model_name: "detokenizer".*?\n    \}', "", ensemble.read_text(), flags=re.S
    )
    for name in WINDOW_OUTPUTS:
        text = text.replace(f'      output_map {{ key: "{name}", value: "_{name}" }}\n', "")
    text = text.replace(
        '      output_map { key: "tokens_generated"',
        '      output_map { key: "text_output", value: "text_output" }\n'
        '      output_map { key: "tokens_generated"',
    )
    ensemble.write_text(text)
    return repository


async def _throughput(url: str, concurrency: int, count: int, first: int) -> float:
    constraint = json_schema_constraint(USER_JSON_SCHEMA, "JSON schema")
    specs = requests(constraint, count, 64, first=first)
    tokens, wall_s = await tokens_in_closed_loop(url, specs, concurrency)
    return stats.throughput(tokens, wall_s) or 0.0


def measure(model_dir: Path, rounds: int, concurrencies: list[int], waves: int) -> dict:
    figures: dict[str, dict[str, list[float]]] = {
        str(c): {"three_steps": [], "two_steps": []} for c in concurrencies
    }
    with tempfile.TemporaryDirectory() as scratch:
        scratch_dir = Path(scratch)
        env = {"CT_MODEL_DIR": str(model_dir.resolve())}
        three = TritonServer(MODEL_REPOSITORY, env=env, log_file=scratch_dir / "three.log")
        two = TritonServer(
            two_step_repository(scratch_dir), env=env, log_file=scratch_dir / "two.log"
        )
        with three, two:
            stacks = {"three_steps": three.grpc_url, "two_steps": two.grpc_url}
            for url in stacks.values():  # warm: compile the grammar, fill caches
                asyncio.run(_throughput(url, 4, 4, 0))
            for index in range(rounds):
                order = list(stacks) if index % 2 == 0 else list(reversed(stacks))
                for concurrency in concurrencies:
                    for name in order:
                        count = concurrency * waves
                        rate = asyncio.run(
                            _throughput(stacks[name], concurrency, count, index * count)
                        )
                        figures[str(concurrency)][name].append(rate)
                        say(f"round {index + 1}, c={concurrency}, {name}: {rate:.0f} tok/s")
    ratios = {
        c: statistics.median(
            three / two for three, two in zip(f["three_steps"], f["two_steps"], strict=True)
        )
        for c, f in figures.items()
    }
    return {
        "model_dir": str(model_dir),
        "tokens_per_s": figures,
        "three_over_two_median": ratios,
        "cost_percent_median": {c: round((1 - r) * 100, 2) for c, r in ratios.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-dir", type=Path, default=REPO_ROOT / ".cache/models/demo")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--waves", type=int, default=3, help="requests per client per round")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    print_and_save(measure(args.model_dir, args.rounds, args.concurrency, args.waves), args.output)


if __name__ == "__main__":
    main()
