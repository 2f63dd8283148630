#!/usr/bin/env python3
"""Time constraint compilation over the test corpora, against a real tokenizer.

For every corpus entry (tests/corpus/json_schema, typescript, and the
grammar corpora gbnf, lark, bnf when ``grammar_compiler.compile_grammar``
exists) three steps are timed:

* translate: grammar_compiler's own work (validation, canonical form);
* cold: xgrammar compiling the canonical form with a fresh
  ``GrammarCompiler(cache_enabled=False)``, as a cache miss costs;
* cached: compiling it again with a caching compiler that has seen it.

Entries the compiler refuses (JSON Schema and TypeScript corpora mark them
with a ``.refused`` file) are counted, not timed. Prints median and p95 per
language and writes every figure to ``reports/compile_times.json``.

    python scripts/bench_compile.py [--model-dir DIR] [--repeat N] [--output FILE]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import xgrammar as xgr
from transformers import AutoConfig, AutoTokenizer

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from grammar_compiler import ConstraintError, compile_json_schema, compile_typescript  # noqa: E402
from grammar_compiler.canonical import CanonicalConstraint  # noqa: E402

CORPUS = REPO / "tests" / "corpus"
MODEL_DIRS = (REPO / ".cache" / "models" / "demo", REPO / ".cache" / "models" / "tiny")


def main() -> int:
    args = _arguments()
    tokenizer_info = _tokenizer_info(args.model_dir)
    languages = _languages()
    results: dict[str, list[dict]] = {}
    for language, (paths, translate) in languages.items():
        results[language] = [
            _measure(path, translate, tokenizer_info, args.repeat) for path in paths
        ]
    summary = {language: _summary(entries) for language, entries in results.items()}
    _print(summary, args.model_dir)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(
        json.dumps(
            {
                "model_dir": str(args.model_dir),
                "vocab_size": tokenizer_info.vocab_size,
                "repeat": args.repeat,
                "xgrammar": getattr(xgr, "__version__", None) or _xgrammar_version(),
                "summary": summary,
                "entries": results,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {args.output}")
    return 0


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default_model = next((d for d in MODEL_DIRS if (d / "tokenizer.json").exists()), MODEL_DIRS[-1])
    parser.add_argument("--model-dir", type=Path, default=default_model)
    parser.add_argument(
        "--repeat", type=int, default=3, help="timings per step; the median is kept"
    )
    parser.add_argument("--output", type=Path, default=REPO / "reports" / "compile_times.json")
    return parser.parse_args()


def _tokenizer_info(model_dir: Path) -> xgr.TokenizerInfo:
    """The tokenizer as the decoder builds it (engine.model_runner), without loading weights."""
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    vocab_size = int(AutoConfig.from_pretrained(str(model_dir)).vocab_size)
    return xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab_size)


Translate = Callable[[Path], CanonicalConstraint]


def _languages() -> dict[str, tuple[list[Path], Translate]]:
    languages: dict[str, tuple[list[Path], Translate]] = {
        "json_schema": (
            sorted((CORPUS / "json_schema").glob("*.json")),
            lambda path: compile_json_schema(path.read_text()),
        ),
        "typescript": (
            sorted((CORPUS / "typescript").glob("*.ts")),
            lambda path: compile_typescript(path.read_text(), _type_name(path)),
        ),
    }
    try:
        from grammar_compiler import compile_grammar
    except ImportError:
        return languages
    for grammar_format in ("gbnf", "lark", "bnf"):
        paths = sorted((CORPUS / grammar_format).glob(f"*.{grammar_format}"))
        if paths:
            languages[grammar_format] = (
                paths,
                lambda path, f=grammar_format: compile_grammar(path.read_text(), f),
            )
    return languages


def _type_name(path: Path) -> str:
    found = re.search(r"//\s*type_name:\s*(\w+)", path.read_text())
    if not found:
        raise SystemExit(f"{path} has no '// type_name: X' line")
    return found.group(1)


def _measure(path: Path, translate: Translate, info: xgr.TokenizerInfo, repeat: int) -> dict:
    entry: dict = {"name": path.name}
    try:
        constraint = translate(path)
    except ConstraintError as error:
        return {**entry, "refused": str(error)}
    entry["translate_ms"] = _median_ms(lambda: translate(path), repeat)
    compile_one = _xgrammar_step(constraint)
    entry["cold_ms"] = _median_ms(
        lambda: compile_one(xgr.GrammarCompiler(info, cache_enabled=False)), repeat
    )
    caching = xgr.GrammarCompiler(info, cache_enabled=True)
    compile_one(caching)
    entry["cached_ms"] = _median_ms(lambda: compile_one(caching), repeat)
    entry["canonical_chars"] = len(constraint.value)
    return entry


def _xgrammar_step(constraint: CanonicalConstraint) -> Callable[[xgr.GrammarCompiler], object]:
    """What engine.grammar_cache does with each kind of canonical constraint."""
    if constraint.kind == "json_schema":
        return lambda compiler: compiler.compile_json_schema(constraint.value, any_whitespace=False)
    if constraint.kind == "regex":
        return lambda compiler: compiler.compile_regex(constraint.value)
    return lambda compiler: compiler.compile_grammar(constraint.value)


def _median_ms(step: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        step()
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 3)


def _summary(entries: list[dict]) -> dict:
    timed = [e for e in entries if "refused" not in e]
    summary: dict = {"entries": len(entries), "refused": len(entries) - len(timed)}
    for step in ("translate_ms", "cold_ms", "cached_ms"):
        values = sorted(e[step] for e in timed)
        if values:
            summary[step] = {
                "median": round(statistics.median(values), 3),
                "p95": round(_percentile(values, 0.95), 3),
                "max": round(values[-1], 3),
            }
    return summary


def _percentile(sorted_values: list[float], fraction: float) -> float:
    """Nearest-rank percentile."""
    rank = max(1, -(-len(sorted_values) * fraction // 1))
    return sorted_values[int(rank) - 1]


def _print(summary: dict, model_dir: Path) -> None:
    print(f"compile times against {model_dir} (ms; median / p95 / max)")
    header = "".join(f"  {step:>22}" for step in ("translate", "cold", "cached"))
    print(f"{'language':12} {'entries':>7} {'refused':>7}{header}")
    for language, row in summary.items():
        cells = []
        for step in ("translate_ms", "cold_ms", "cached_ms"):
            figures = row.get(step)
            cells.append(
                f"{figures['median']:6.2f} / {figures['p95']:6.2f} / {figures['max']:6.2f}"
                if figures
                else "-"
            )
        print(
            f"{language:12} {row['entries']:>7} {row['refused']:>7}  "
            + "  ".join(f"{c:>22}" for c in cells)
        )


def _xgrammar_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("xgrammar")
    except PackageNotFoundError:
        return None


if __name__ == "__main__":
    raise SystemExit(main())
