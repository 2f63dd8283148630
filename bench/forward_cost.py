"""Bare decode-step cost: Hugging Face's modeling against the lean forward.

Both run the same weights through the engine's own ``RunningBatch`` (a
left-padded batch with an in-place growing cache), so the figure is what the
engine's forward costs, nothing else: no grammar, no sampling, no serving.
Trials alternate between the two so machine noise falls on both alike.

    python -m bench.forward_cost --model-dir .cache/models/demo
    python -m bench.forward_cost --shape demo      # random weights, the demo's shape
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import torch
from transformers import LlamaConfig, LlamaForCausalLM

from engine.kv_batch import RunningBatch
from engine.model_runner import ModelRunner

# Random-weight shapes for timing when no trained model is at hand.
SHAPES = {
    "demo": dict(hidden_size=256, intermediate_size=688, num_hidden_layers=4, vocab_size=4096),
    "llama3-128k-small": dict(
        hidden_size=256, intermediate_size=688, num_hidden_layers=4, vocab_size=128_256
    ),
}


def random_model_dir(shape: str, directory: Path, tokenizer_dir: Path) -> Path:
    """A Llama of ``shape`` with random weights (enough for timing), using the
    tokenizer files of ``tokenizer_dir``."""
    config = LlamaConfig(
        num_attention_heads=8,
        num_key_value_heads=4,
        max_position_embeddings=2048,
        tie_word_embeddings=True,
        **SHAPES[shape],
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(directory)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(tokenizer_dir / name, directory / name)
    return directory


def _step_ms(runner: ModelRunner, batch_size: int, prompt: int, steps: int) -> float:
    """Median milliseconds of one decode step of ``batch_size`` rows after a
    ``prompt``-token prefill."""
    generator = torch.Generator().manual_seed(batch_size)
    prompts = torch.randint(10, runner.vocab_size, (batch_size, prompt), generator=generator)
    _, cache, mask = runner.prefill_many(prompts.tolist())
    batch = RunningBatch()
    batch.append_rows(cache, mask, [1] * batch_size)
    tokens = [[int(token)] for token in prompts[:, -1]]
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        runner.decode(batch, tokens)
        times.append(time.perf_counter() - start)
    return statistics.median(times[2:]) * 1000


def measure(model_dir: Path, batch_sizes: list[int], rounds: int, steps: int) -> dict:
    runners = {
        impl: ModelRunner.load(model_dir, device="cpu", impl=impl) for impl in ("hf", "lean")
    }
    samples: dict[str, dict[int, list[float]]] = {
        impl: {size: [] for size in batch_sizes} for impl in runners
    }
    for round_index in range(rounds):
        order = list(runners) if round_index % 2 == 0 else list(reversed(runners))
        for size in batch_sizes:
            for impl in order:
                samples[impl][size].append(_step_ms(runners[impl], size, 64, steps))
    result = {}
    for size in batch_sizes:
        hf, lean = (statistics.median(samples[impl][size]) for impl in ("hf", "lean"))
        result[str(size)] = {
            "hf_ms": round(hf, 3),
            "lean_ms": round(lean, 3),
            "hf/lean": round(hf / lean, 2),
        }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", type=Path)
    parser.add_argument("--shape", choices=sorted(SHAPES), default="demo")
    parser.add_argument(
        "--tokenizer-dir",
        type=Path,
        default=Path(".cache/models/tiny"),
        help="tokenizer files for --shape (any HF tokenizer directory)",
    )
    parser.add_argument("--batch-sizes", default="1,8,32")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    sizes = [int(size) for size in args.batch_sizes.split(",")]
    with tempfile.TemporaryDirectory() as scratch:
        model_dir = args.model_dir or random_model_dir(
            args.shape, Path(scratch), args.tokenizer_dir
        )
        figures = measure(model_dir, sizes, args.rounds, args.steps)
    print(
        json.dumps({"model": str(args.model_dir or args.shape), "decode_step": figures}, indent=2)
    )


if __name__ == "__main__":
    main()
