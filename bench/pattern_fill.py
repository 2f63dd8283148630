"""``python -m bench.pattern_fill``: mask fills inside optional groups, and the
unique-array guard's cost per token, for one tokenizer.

Why a bench of its own: how the compiler spells a regex decides what
xgrammar pays on every step of a row inside it, and the spellings are
equivalent, so only a measurement tells them apart. Each case is one
regex written two ways (an optional group as ``(?:x){0,1}`` or ``(?:x)?``,
as the compiler wrote it before, and ``(?:|x)``, as ``regex_emit`` writes
it now), walked along the same text, each fill timed ``--repeat`` times;
the two spellings of a case run one after the other, so their ratio is
measured in one run. Also timed: ``JsonOutline.texts_to_avoid`` for a
unique array of ``date`` strings with ``--taken`` dates written (the
counting guard, ``engine.json_repeats``), first call and later ones.

    .venv/bin/python -m bench.pattern_fill --model-dir .cache/models/bench-llama3

No model, server or GPU is involved: the tokenizer alone.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import time
from pathlib import Path
from typing import Any

import xgrammar as xgr

from bench.json_grammar import tokenizer_compiler
from bench.report import print_and_save
from engine.json_repeats import JsonOutline
from grammar_compiler import compile_json_schema

_ANY = "[ !#-\\[\\]-\u2027\\u202A-\\uD7FF\\uE000-\\uFFFF]"
"""A pattern's ``.`` as the compiler writes it inside a JSON string."""

CASES: list[dict[str, Any]] = [
    {
        "name": "json string: capital, then anything, optional",
        "kind": "pattern",
        "before": f"(?:[A-Z]{_ANY}*){{0,1}}",
        "after": f"(?:|[A-Z]{_ANY}*)",
        "text": "Abc def",
    },
    {
        "name": "json string: x, then an optional -tail",
        "kind": "pattern",
        "before": f"x(?:-{_ANY}*){{0,1}}",
        "after": f"x(?:|-{_ANY}*)",
        "text": "x-abc",
    },
    {
        "name": "regex: capital, then words, optional",
        "kind": "regex",
        "before": "(?:[A-Z][a-z ]*)?",
        "after": "(?:|[A-Z][a-z ]*)",
        "text": "Abc de",
    },
]


def fill_times(compiler: xgr.GrammarCompiler, case: dict, spelling: str, repeat: int) -> list:
    """Median fill (microseconds) after each character of the case's text."""
    regex = case[spelling]
    if case["kind"] == "pattern":
        compiled = compiler.compile_json_schema(json.dumps({"type": "string", "pattern": regex}))
        text = '"' + case["text"]
    else:
        compiled = compiler.compile_regex(regex)
        text = case["text"]
    matcher = xgr.GrammarMatcher(compiled)
    bitmask = xgr.allocate_token_bitmask(1, compiled.tokenizer_info.vocab_size)
    medians = []
    for character in text:
        if not matcher.accept_string(character):
            raise ValueError(f"{regex!r} does not take {text!r}")
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            matcher.fill_next_token_bitmask(bitmask)
            times.append(time.perf_counter() - start)
        medians.append(round(statistics.median(times) * 1e6, 1))
    return medians


def guard_cost(taken: int, repeat: int) -> dict[str, float]:
    """``texts_to_avoid`` for unique dates, with ``taken`` written and one begun."""
    array = {"type": "array", "items": {"type": "string", "format": "date"}, "uniqueItems": True}
    schema = json.loads(compile_json_schema(array, strict=True, decoder_guard=True).value)
    first_day = datetime.date(2024, 1, 1)
    days = [json.dumps(str(first_day + datetime.timedelta(days=n))) for n in range(taken)]
    outline = JsonOutline(schema)
    outline.push(("[" + ", ".join(days) + ', "2024-0').encode())
    start = time.perf_counter()
    list(outline.texts_to_avoid())
    first = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(repeat):
        list(outline.texts_to_avoid())
    later = (time.perf_counter() - start) / repeat
    return {"taken": taken, "first_call_us": first * 1e6, "later_call_us": later * 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.pattern_fill", description=__doc__)
    parser.add_argument("--model-dir", type=Path, default=Path(".cache/models/bench-llama3"))
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--taken", type=int, default=60)
    parser.add_argument("--output", type=Path, help="where to write the result as JSON")
    args = parser.parse_args()
    compiler = tokenizer_compiler(args.model_dir)
    cases = []
    for case in CASES:
        before = fill_times(compiler, case, "before", args.repeat)
        after = fill_times(compiler, case, "after", args.repeat)
        inside = slice(1, None)  # past the group's start, where the spellings differ
        ratio = statistics.median(before[inside]) / statistics.median(after[inside])
        cases.append(
            {"case": case["name"], "before_us": before, "after_us": after, "before/after": ratio}
        )
    result = {
        "model_dir": str(args.model_dir),
        "optional_groups": cases,
        "unique_dates_guard": guard_cost(args.taken, args.repeat * 10),
    }
    print_and_save(result, args.output)


if __name__ == "__main__":
    main()
