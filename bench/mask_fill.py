"""xgrammar's token-mask fill per row, on random walks through the benches'
JSON schemas, for one tokenizer: the grammar-side cost a constrained row adds
to every decode step, measured without a model.

Why a bench of its own: with a 128k vocabulary the fill, not the forward, is
what a JSON row's step pays for in a bounded string (``maxLength``), and how
the grammar compiler writes a string's characters decides it (a negated class
fills 20-70x faster than a positive one, ``grammar_compiler/regex_emit.py``).
``--positive-classes`` writes them as before that change, for an A/B in one
run:

    python -m bench.mask_fill --model-dir .cache/models/bench-llama3
    python -m bench.mask_fill --model-dir .cache/models/bench-llama3 --positive-classes

A walk takes any token the mask allows (the UTF-8 guard applied, as the
decoder applies it), so it visits the states a random-weight model visits
(``bench.gpu``), not only those a trained model would.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path

import numpy as np
import xgrammar as xgr

from bench.gpu import PERSON_SCHEMA
from bench.peers.workload import SCHEMA as PEERS_SCHEMA
from bench.report import print_and_save
from bench.workload import USER_JSON_SCHEMA
from engine.model_runner import load_tokenizer, vocabulary_bytes
from engine.utf8_guard import Utf8Guard
from grammar_compiler import compile_json_schema, regex_emit

SCHEMAS = {"gpu": PERSON_SCHEMA, "peers": PEERS_SCHEMA, "tpot": USER_JSON_SCHEMA}
MAX_WALK_TOKENS = 200


def compiler_and_guard(model_dir: Path) -> tuple[xgr.GrammarCompiler, Utf8Guard]:
    """A compiler over the model's tokenizer, and the decoder's UTF-8 guard for it."""
    tokenizer = load_tokenizer(model_dir)
    info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=len(tokenizer))
    words = xgr.allocate_token_bitmask(1, len(tokenizer)).shape[1]
    guard = Utf8Guard(vocabulary_bytes(info, len(tokenizer)), words=words)
    return xgr.GrammarCompiler(info, cache_enabled=False), guard


def measure(
    compiler: xgr.GrammarCompiler, guard: Utf8Guard, schema: dict, walks: int, seed: int
) -> dict:
    """Fill times of every step of ``walks`` random walks, in ms."""
    canonical = compile_json_schema(json.dumps(schema)).value
    started = time.perf_counter()
    compiled = compiler.compile_json_schema(canonical, any_whitespace=False)
    compile_s = time.perf_counter() - started
    vocab = compiled.tokenizer_info.vocab_size
    bitmask = xgr.allocate_token_bitmask(1, vocab)
    rng = random.Random(seed)
    fills: list[float] = []
    for _ in range(walks):
        matcher = xgr.GrammarMatcher(compiled)
        lead = None
        for _ in range(MAX_WALK_TOKENS):
            if matcher.is_terminated():
                break
            started = time.perf_counter()
            matcher.fill_next_token_bitmask(bitmask)
            fills.append((time.perf_counter() - started) * 1000)
            guard.restrict(bitmask, 0, lead)
            bits = np.unpackbits(bitmask.numpy().view(np.uint8), bitorder="little")
            token = rng.choice(np.flatnonzero(bits[:vocab]).tolist())
            if not matcher.accept_token(token):
                raise AssertionError(f"xgrammar refused token {token} that its mask allowed")
            lead = guard.pending_lead(token)
    fills.sort()
    return {
        "compile_s": compile_s,
        "fills": len(fills),
        "fill_ms_mean": statistics.fmean(fills),
        "fill_ms_p50": fills[len(fills) // 2],
        "fill_ms_p99": fills[int(len(fills) * 0.99)],
        "fill_ms_max": fills[-1],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-dir", type=Path, default=Path(".cache/models/bench-llama3"))
    parser.add_argument("--walks", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--positive-classes",
        action="store_true",
        help="write a string's characters as a positive class (as before negated classes)",
    )
    parser.add_argument("--output", type=Path, help="also write the results here as JSON")
    args = parser.parse_args()
    if args.positive_classes:
        regex_emit.NEGATED_COUNT_LIMIT = -1  # no count is small enough: never negated
    compiler, guard = compiler_and_guard(args.model_dir)
    results = {}
    for name, schema in SCHEMAS.items():
        results[name] = result = measure(compiler, guard, schema, args.walks, args.seed)
        print(
            f"{name}: fill mean {result['fill_ms_mean']:.3f} ms, p99 {result['fill_ms_p99']:.3f}, "
            f"max {result['fill_ms_max']:.2f} ({result['fills']} fills); "
            f"compile {result['compile_s']:.2f} s",
            flush=True,
        )
    print_and_save(
        {
            "model_dir": str(args.model_dir),
            "positive_classes": args.positive_classes,
            "results": results,
        },
        args.output,
    )


if __name__ == "__main__":
    main()
