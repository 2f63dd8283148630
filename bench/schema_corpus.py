"""The real-world JSON Schema corpus, measured: accepted or refused, how fast, and sound.

For every ``tests/corpus/json_schema/*.json`` the schema goes through
``compile_json_schema`` as the service compiles it:

* strict (``strict=True``): ``grammar: {"type": "json_schema"}`` on
  ``/v1/completions``, ``response_format`` ``json_object`` with a schema or
  ``json_schema`` with ``strict: true``, and the JSON Schema endpoint; the
  acceptance rate the issue sets a target for is this one;
* best effort (``strict=False``): ``response_format`` ``json_schema``
  without ``strict`` (OpenAI's default), where what cannot be enforced is
  listed in ``not_enforced`` instead of refused.

An accepted schema's canonical value is compiled by xgrammar and walked at
random (``bench.json_grammar``); every finished walk is judged by
``jsonschema`` against the original schema with the draft ``jsonschema``
itself reads from ``$schema`` (not the compiler's reading), formats checked
as the service's judge checks them. An output the judge rejects is a
soundness failure: there must be none.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import referencing
from jsonschema.exceptions import best_match
from jsonschema.validators import validator_for

from bench.json_grammar import JsonGrammar
from grammar_compiler import ConstraintError, compile_json_schema
from grammar_compiler.json_judge import format_checker

REPO_ROOT = Path(__file__).resolve().parent.parent
CORPUS = REPO_ROOT / "tests" / "corpus" / "json_schema"


def corpus_paths(corpus: Path = CORPUS) -> list[Path]:
    return sorted(corpus.glob("*.json"))


def independent_judge(schema: Any):
    """``text -> None | reason``: ``jsonschema`` alone, on the draft its ``$schema`` names.

    No $schema means 2020-12, as in the service. Remote references are never
    fetched (an empty registry); a schema the validator cannot evaluate gives
    a reason starting with "judge failed", which counts as not valid.
    """
    validator_class = validator_for(schema, default=jsonschema.Draft202012Validator)
    validator = validator_class(
        schema, format_checker=format_checker(), registry=referencing.Registry()
    )

    def judge(text: str) -> str | None:
        try:
            instance = json.loads(text)
        except ValueError as error:
            return f"not JSON: {error}"
        try:
            error = best_match(validator.iter_errors(instance))
        except Exception as problem:  # the judge's own failure is reported, never raised
            return f"judge failed: {type(problem).__name__}: {problem}"
        return None if error is None else f"{list(error.absolute_path)}: {error.message}"[:300]

    return judge


@dataclass
class Compiled:
    """One compile_json_schema call: its outcome and how long it took."""

    seconds: float
    canonical: str | None = None
    refusal: str | None = None
    not_enforced: tuple[str, ...] = ()
    crash: str | None = None  # an exception other than ConstraintError: always a bug

    @property
    def accepted(self) -> bool:
        return self.canonical is not None


def compile_timed(schema_text: str, *, strict: bool) -> Compiled:
    started = time.perf_counter()
    try:
        constraint = compile_json_schema(schema_text, strict=strict, decoder_guard=True)
    except ConstraintError as error:
        return Compiled(time.perf_counter() - started, refusal=str(error))
    except Exception as error:  # reported as a crash: the service would answer 500
        return Compiled(time.perf_counter() - started, crash=f"{type(error).__name__}: {error}")
    return Compiled(
        time.perf_counter() - started,
        canonical=constraint.value,
        not_enforced=constraint.not_enforced,
    )


@dataclass
class Soundness:
    """Random walks through the compiled grammar, each judged."""

    outputs: int = 0
    unfinished: int = 0
    invalid: list[dict[str, str]] = field(default_factory=list)
    dead_end: str | None = None


def check_soundness(
    schema: Any,
    grammar: JsonGrammar,
    walks: int,
    seed: int,
    max_listed: int = 3,
    stubborn: int = 0,
) -> Soundness:
    """``walks`` walks (``stubborn`` of them stubborn: ``JsonGrammar.walk``), judged."""
    judge = independent_judge(schema)
    result = Soundness()
    try:
        texts, result.unfinished = grammar.walks(walks, seed, stubborn)
    except AssertionError as stuck:
        result.dead_end = str(stuck)
        return result
    result.outputs = len(texts)
    for text in texts:
        reason = judge(text)
        if reason is not None and len(result.invalid) < max_listed:
            result.invalid.append({"output": text[:500], "reason": reason})
        elif reason is not None:
            result.invalid.append({"output": "(not listed)", "reason": reason})
    return result


_KEYWORD_REFUSAL = re.compile(
    r"keyword '(?P<keyword>[^']+)' at (?:the root|\S+) cannot be enforced during generation"
    r"(?:: (?P<why>.*))?",
    re.DOTALL,
)


_WHOLE_NUMBER = re.compile(r"(?<![\w.-])\d+(?![\w.-])")


def refusal_cause(message: str) -> str:
    """The refusal's cause without its location, so equal causes group together.

    "keyword 'nullable' at /properties/a cannot be enforced during generation:
    it is OpenAPI 3.0, not JSON Schema, ..." becomes "keyword 'nullable': it
    is OpenAPI 3.0"; counts and indices become N.
    """
    found = _KEYWORD_REFUSAL.match(message)
    if found:
        why = found.group("why") or ""
        why = re.split(r"[,;(]| - ", why, maxsplit=1)[0].strip()
        why = _WHOLE_NUMBER.sub("N", re.sub(r"'[^']*://[^']*'", "'…'", why))
        cause = f"keyword '{found.group('keyword')}'"
        return f"{cause}: {why}" if why else cause
    if message.startswith("unsupported $schema"):
        declared = re.search(r"'([^']*)'", message)
        draft = re.search(r"draft-\d+|\d{4}-\d{2}", declared.group(1) if declared else "")
        return f"unsupported $schema {draft.group(0) if draft else '(other)'}"
    message = re.sub(r"'[^']*'", "'…'", message)
    message = re.sub(r"(?<=at )(?:the root|/[^\s:]*)", "…", message)
    return _WHOLE_NUMBER.sub("N", message)
