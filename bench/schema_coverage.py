"""``python -m bench.schema_coverage``: how much real-world JSON Schema is accepted, soundly.

Measures, without starting the servers:

* the corpus (``tests/corpus/json_schema``, see ``bench.schema_corpus``):
  acceptance strict and best effort, refusals grouped by cause, crashes,
  ``compile_json_schema`` time (median and p95 of ``--repeat`` runs per
  schema), xgrammar's cold compile of each accepted schema against the demo
  model's tokenizer (as the decoder pays it), and soundness: ``--walks``
  random walks per accepted schema judged by ``jsonschema``;
* the official JSON-Schema-Test-Suite (``bench.schema_suite``), draft-04,
  draft-07 and 2020-12: schemas compiled, valid instances accepted, invalid
  instances accepted (soundness failures) and refusals that name no
  constraining keyword, per draft.

Writes ``report.json`` (every figure, per schema) and ``summary.md``::

    .venv/bin/python -m bench.schema_coverage --out bench/results/schema-coverage-NAME

The demo tokenizer is the demo model's (``.cache/models/demo``) when it has
been built, else the same tokenizer trained alone from the same recipe into
``.cache/models/demo-tokenizer`` (seconds); ``--model-dir`` picks another.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench import stats
from bench.environment import machine_info, machine_line
from bench.json_grammar import JsonGrammar, raw_compiler, tokenizer_compiler
from bench.progress import say
from bench.report import fmt, write_json
from bench.schema_corpus import (
    CORPUS,
    check_soundness,
    compile_timed,
    corpus_paths,
    refusal_cause,
)
from bench.schema_suite import SUITE_DIR, CaseOutcome, all_cases, draft_summary, run_case

REPO_ROOT = Path(__file__).resolve().parent.parent
DEMO_MODEL_DIR = REPO_ROOT / ".cache" / "models" / "demo"
DEMO_TOKENIZER_DIR = REPO_ROOT / ".cache" / "models" / "demo-tokenizer"
FINGERPRINT_FILE = "fingerprint.txt"


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.schema_coverage", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--out", type=Path, default=None, help="output folder")
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="folder of *.json schemas")
    parser.add_argument("--walks", type=int, default=20, help="random walks per accepted schema")
    parser.add_argument("--repeat", type=int, default=3, help="compile_json_schema runs per schema")
    parser.add_argument(
        "--model-dir", type=Path, default=None, help="tokenizer for xgrammar compile times"
    )
    parser.add_argument("--no-tokenizer", action="store_true", help="skip xgrammar compile times")
    parser.add_argument("--no-suite", action="store_true", help="skip the JSON-Schema-Test-Suite")
    return parser.parse_args(argv)


def demo_tokenizer_dir() -> Path:
    """The demo model's tokenizer: the built model's, else trained alone from its recipe."""
    if (DEMO_MODEL_DIR / "tokenizer.json").is_file():
        return DEMO_MODEL_DIR
    from demo_model.build import DEMO, fingerprint, train_tokenizer, wrap_tokenizer
    from demo_model.corpus import build_corpus

    expected = fingerprint(DEMO, 0)
    stamp = DEMO_TOKENIZER_DIR / FINGERPRINT_FILE
    if stamp.is_file() and stamp.read_text() == expected:
        return DEMO_TOKENIZER_DIR
    say("building the demo tokenizer (its model's recipe, seed 0)")
    backend = train_tokenizer(build_corpus(0, DEMO.corpus_chars), DEMO.vocab_size)
    wrap_tokenizer(backend, DEMO.max_position_embeddings).save_pretrained(DEMO_TOKENIZER_DIR)
    stamp.write_text(expected)
    return DEMO_TOKENIZER_DIR


def _times(values: list[float]) -> dict[str, Any]:
    """Milliseconds: count, median, p95, max."""
    scaled = [value * 1e3 for value in values]
    return {
        "n": len(scaled),
        "median_ms": stats.percentile(scaled, 50),
        "p95_ms": stats.percentile(scaled, 95),
        "max_ms": max(scaled) if scaled else None,
    }


def _causes(entries: dict[str, dict], mode: str) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = collections.defaultdict(list)
    for name, entry in entries.items():
        refusal = entry[mode].get("refusal")
        if refusal is not None:
            groups[refusal_cause(refusal)].append(name)
    return dict(sorted(groups.items(), key=lambda item: (-len(item[1]), item[0])))


def measure_corpus(paths: list[Path], args: argparse.Namespace) -> dict[str, Any]:
    tokenizer = None
    if not args.no_tokenizer:
        model_dir = args.model_dir or demo_tokenizer_dir()
        tokenizer = tokenizer_compiler(model_dir)
    walker = raw_compiler()
    entries: dict[str, dict] = {}
    for index, path in enumerate(paths):
        text = path.read_text()
        runs = [compile_timed(text, strict=True) for _ in range(max(1, args.repeat))]
        strict = runs[0]
        best_effort = compile_timed(text, strict=False)
        entry: dict[str, Any] = {
            "strict": {
                "accepted": strict.accepted,
                "seconds": statistics.median(run.seconds for run in runs),
                "refusal": strict.refusal,
                "crash": strict.crash,
            },
            "best_effort": {
                "accepted": best_effort.accepted,
                "seconds": best_effort.seconds,
                "refusal": best_effort.refusal,
                "crash": best_effort.crash,
                "not_enforced": list(best_effort.not_enforced),
            },
        }
        if strict.accepted:
            if tokenizer is not None:
                started = time.perf_counter()
                JsonGrammar(tokenizer, strict.canonical)
                entry["xgrammar_compile_seconds"] = time.perf_counter() - started
            grammar = JsonGrammar(walker, strict.canonical)
            soundness = check_soundness(json.loads(text), grammar, args.walks, seed=index)
            entry["soundness"] = vars(soundness)
        entries[path.stem] = entry
        if (index + 1) % 25 == 0:
            say(f"corpus: {index + 1}/{len(paths)} schemas")
    return _corpus_report(entries, tokenizer is not None)


def _corpus_report(entries: dict[str, dict], timed_xgrammar: bool) -> dict[str, Any]:
    count = len(entries)
    strict_ok = [e for e in entries.values() if e["strict"]["accepted"]]
    best_ok = [e for e in entries.values() if e["best_effort"]["accepted"]]
    walked = [e["soundness"] for e in strict_ok]
    invalid = [
        {"schema": name, **item}
        for name, e in entries.items()
        for item in e.get("soundness", {}).get("invalid", [])
    ]
    return {
        "schemas": count,
        "strict": {
            "accepted": len(strict_ok),
            "acceptance": stats.ratio(len(strict_ok), count),
            "crashes": {
                n: e["strict"]["crash"] for n, e in entries.items() if e["strict"]["crash"]
            },
            "refusal_causes": _causes(entries, "strict"),
            "compile_json_schema_all": _times([e["strict"]["seconds"] for e in entries.values()]),
            "compile_json_schema_accepted": _times([e["strict"]["seconds"] for e in strict_ok]),
        },
        "best_effort": {
            "accepted": len(best_ok),
            "acceptance": stats.ratio(len(best_ok), count),
            "accepted_with_not_enforced": sum(
                bool(e["best_effort"]["not_enforced"]) for e in best_ok
            ),
            "crashes": {
                n: e["best_effort"]["crash"]
                for n, e in entries.items()
                if e["best_effort"]["crash"]
            },
            "refusal_causes": _causes(entries, "best_effort"),
        },
        "xgrammar_compile_demo_tokenizer": _times(
            [e["xgrammar_compile_seconds"] for e in strict_ok if "xgrammar_compile_seconds" in e]
        )
        if timed_xgrammar
        else None,
        "soundness": {
            "schemas_walked": len(walked),
            "outputs": sum(s["outputs"] for s in walked),
            "unfinished_walks": sum(s["unfinished"] for s in walked),
            "dead_ends": {
                n: e["soundness"]["dead_end"]
                for n, e in entries.items()
                if e.get("soundness", {}).get("dead_end")
            },
            "invalid_outputs": len(invalid),
            "invalid": invalid[:50],
        },
        "per_schema": entries,
    }


def measure_suite() -> dict[str, Any]:
    if not SUITE_DIR.is_dir():
        return {"error": f"{SUITE_DIR} is missing: run scripts/setup.sh"}
    compiler = raw_compiler()
    outcomes: list[CaseOutcome] = [run_case(case, compiler) for case in all_cases()]
    return {
        "per_draft": draft_summary(outcomes),
        "invalid_accepted": [
            {"case": o.case.name, "instance": item["text"], "test": item["test"]}
            for o in outcomes
            for item in o.accepted_invalid
        ],
        "unacceptable_refusals": [
            {"case": o.case.name, "why": o.bad_refusal} for o in outcomes if o.bad_refusal
        ],
        "crashes": [{"case": o.case.name, "crash": o.crash} for o in outcomes if o.crash],
    }


def _commit() -> dict[str, Any]:
    def git(*args: str) -> str | None:
        done = subprocess.run(
            ["git", "-C", str(REPO_ROOT), *args], capture_output=True, text=True, check=False
        )
        return done.stdout.strip() if done.returncode == 0 else None

    changes = git("status", "--porcelain", "--", "grammar_compiler")
    return {"commit": git("rev-parse", "HEAD"), "compiler_modified": bool(changes)}


def render_summary(report: dict[str, Any]) -> str:
    corpus, suite = report["corpus"], report.get("suite") or {}
    strict, best = corpus["strict"], corpus["best_effort"]
    lines = [
        "# JSON Schema coverage",
        "",
        f"_Commit {report['run']['code']['commit']} "
        f"(compiler modified: {report['run']['code']['compiler_modified']}); "
        f"{machine_line(report['machine'])}._",
        "",
        f"## Corpus ({corpus['schemas']} schemas, `{report['run']['corpus']}`)",
        "",
        "| mode | accepted | acceptance | crashes |",
        "|---|---|---|---|",
        f"| strict (default: `grammar` json_schema, `strict: true`) | {strict['accepted']} | "
        f"{_percent(strict['acceptance'])} | {len(strict['crashes'])} |",
        f"| best effort (`response_format` json_schema without strict) | {best['accepted']} | "
        f"{_percent(best['acceptance'])} | {len(best['crashes'])} |",
        "",
        "| time | n | median ms | p95 ms | max ms |",
        "|---|---|---|---|---|",
    ]
    timings = [
        ("compile_json_schema, all schemas", strict["compile_json_schema_all"]),
        ("compile_json_schema, accepted", strict["compile_json_schema_accepted"]),
    ]
    if corpus["xgrammar_compile_demo_tokenizer"] is not None:
        timings.append(
            ("xgrammar cold compile, demo tokenizer", corpus["xgrammar_compile_demo_tokenizer"])
        )
    lines += [
        f"| {label} | {t['n']} | {fmt(t['median_ms'])} | {fmt(t['p95_ms'])} | {fmt(t['max_ms'])} |"
        for label, t in timings
    ]
    sound = corpus["soundness"]
    lines += [
        "",
        f"Soundness: {sound['outputs']} outputs from {sound['schemas_walked']} accepted schemas "
        f"({report['run']['walks']} walks each, {sound['unfinished_walks']} too long to finish): "
        f"**{sound['invalid_outputs']} invalid**, {len(sound['dead_ends'])} dead ends.",
        "",
        "### Strict refusals by cause",
        "",
        "| schemas | cause | examples |",
        "|---|---|---|",
    ]
    lines += [
        f"| {len(names)} | {_cell(cause)} | {_examples(names)} |"
        for cause, names in strict["refusal_causes"].items()
    ]
    if strict["crashes"]:
        lines += ["", "### Crashes (not a ConstraintError: a 500 in the service)", ""]
        lines += [f"- {name}: {crash}" for name, crash in strict["crashes"].items()]
    lines += ["", "## JSON-Schema-Test-Suite (strict)", ""]
    if "error" in suite:
        lines.append(suite["error"])
    elif suite:
        lines += [
            "| draft | schemas compiled | valid instances accepted | invalid accepted | "
            "refusals naming no constraining keyword | crashes |",
            "|---|---|---|---|---|---|",
        ]
        for draft, row in suite["per_draft"].items():
            compiled = _fraction(row["compiled"], row["schemas"])
            valid = _fraction(row["valid_accepted"], row["valid_instances"])
            lines.append(
                f"| {draft} | {compiled} | {valid} | {row['invalid_accepted']} | "
                f"{row['unacceptable_refusals']} | {row['crashes']} |"
            )
        if suite["invalid_accepted"]:
            lines += ["", "Invalid instances accepted (soundness failures):", ""]
            lines += [
                f"- {item['case']}: `{item['instance']}` ({item['test']})"
                for item in suite["invalid_accepted"]
            ]
    return "\n".join(lines) + "\n"


def _percent(share: float | None) -> str:
    return "—" if share is None else f"{share:.1%}"


def _fraction(part: int, whole: int) -> str:
    return f"{part}/{whole} ({_percent(stats.ratio(part, whole))})"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _examples(names: list[str], shown: int = 4) -> str:
    return ", ".join(names[:shown]) + (" …" if len(names) > shown else "")


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    out_dir = (args.out or REPO_ROOT / "bench" / "results" / f"schema-coverage-{stamp}").resolve()
    paths = corpus_paths(args.corpus)
    report: dict[str, Any] = {
        "run": {
            "started": stamp,
            "code": _commit(),
            "corpus": str(args.corpus.resolve().relative_to(REPO_ROOT))
            if args.corpus.resolve().is_relative_to(REPO_ROOT)
            else str(args.corpus),
            "walks": args.walks,
            "repeat": args.repeat,
        },
        "machine": machine_info(),
    }
    say(f"corpus: {len(paths)} schemas")
    report["corpus"] = measure_corpus(paths, args)
    if not args.no_suite:
        say("JSON-Schema-Test-Suite")
        report["suite"] = measure_suite()
    write_json(report, out_dir / "report.json")
    (out_dir / "summary.md").write_text(render_summary(report))
    say(f"wrote {out_dir / 'summary.md'}")
    sys.stdout.write(render_summary(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
