"""``python -m bench.string_bounds --model-dir .cache/models/bench-llama3``: what
keeping a string's maxLength in the decoder saves xgrammar's compile.

Compiles schemas with many string bounds as the decoder does
(``engine.grammar_cache.GrammarCache``, cold each time), once with every
bound left to xgrammar and once with the decoder's default
(``engine/string_lengths.py``), against the tokenizer of ``--model-dir``
(the 128k bench model by default: ``python -m bench.llama3_model`` builds it).
Prints seconds per schema and how many bounds the decoder kept.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import xgrammar as xgr

from engine.grammar_cache import STRING_BOUNDS_ABOVE_S, GrammarCache
from engine.params import Constraint, ConstraintType
from grammar_compiler import compile_json_schema

SCHEMAS = {
    "event (bounds 36 to 4096)": {
        "type": "object",
        "properties": {
            "id": {"type": "string", "maxLength": 36},
            "name": {"type": "string", "maxLength": 255},
            "description": {"type": ["string", "null"], "maxLength": 4096},
            "url": {"type": "string", "maxLength": 2048},
            "user_agent": {"type": "string", "maxLength": 1000},
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 64}},
        },
        "required": ["id", "name"],
        "additionalProperties": False,
    },
    "ten bounds 16 to 160": {
        "type": "object",
        "properties": {
            f"field_{i}": {"type": "string", "maxLength": 16 * (i + 1)} for i in range(10)
        },
    },
    "one bound of 40": {
        "type": "object",
        "properties": {"title": {"type": "string", "maxLength": 40}},
    },
}


def _compile_s(info: xgr.TokenizerInfo, value: str, above_s: float) -> tuple[float, int]:
    cache = GrammarCache(info, string_bounds_above_s=above_s, compile_idle=False)
    try:
        started = time.perf_counter()
        cache.get(Constraint(type=ConstraintType.JSON_SCHEMA, value=value)).result()
        return time.perf_counter() - started, len(cache.kept_bounds(json.loads(value)))
    finally:
        cache.shutdown(wait=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.string_bounds", description=__doc__)
    parser.add_argument("--model-dir", type=Path, default=Path(".cache/models/bench-llama3"))
    arguments = parser.parse_args(argv)
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(arguments.model_dir))
    info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=len(tokenizer))
    print(
        f"{arguments.model_dir} ({info.vocab_size} tokens), cold compiles as the decoder runs them"
    )
    print("| schema | bounds in xgrammar | decoder default | bounds the decoder kept |")
    print("|---|---|---|---|")
    for name, schema in SCHEMAS.items():
        value = compile_json_schema(schema, decoder_guard=True).value
        xgrammar_s, _ = _compile_s(info, value, float("inf"))
        default_s, kept = _compile_s(info, value, STRING_BOUNDS_ABOVE_S)
        print(f"| {name} | {xgrammar_s:.2f} s | {default_s:.2f} s | {kept} |")


if __name__ == "__main__":
    main()
