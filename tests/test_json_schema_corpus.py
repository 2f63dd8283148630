"""The real-world corpus as a new user meets the service: mostly accepted, never unsound.

``tests/corpus/json_schema`` holds schemas shaped like what users bring
(OpenAPI components, function-calling tool specs, config-file schemas,
draft-04 documents with vendor keywords and typos, and the harder
constructs in realistic proportions). Compiled as the service compiles them
by default (strict), at least ``MIN_ACCEPTANCE`` of them must be accepted,
none may make the compiler fail with anything but a ``ConstraintError``,
and every output xgrammar can generate from an accepted one (random walks)
must be valid for ``jsonschema`` on the original schema
(``bench.schema_corpus``, which ``python -m bench.schema_coverage`` uses
for the same figures).

The per-schema tests in ``test_grammar_compiler_json_schema`` check the
corpus one file at a time (a ``.refused`` file beside a schema says which
refusal is expected); this module checks the corpus as a whole.
"""

from __future__ import annotations

import collections
import functools
import json
from pathlib import Path

import jsonschema
import pytest
from jsonschema.validators import validator_for

from bench.json_grammar import JsonGrammar, raw_compiler
from bench.schema_corpus import (
    Compiled,
    check_soundness,
    compile_timed,
    corpus_paths,
    refusal_cause,
)
from grammar_compiler.json_schema.drafts import REGEX_FORMAT_CHECKER

MIN_ACCEPTANCE = 0.95
SNOWPLOW_METASCHEMA = (
    "http://iglucentral.com/schemas/com.snowplowanalytics.self-desc/schema/jsonschema/1-0-0#"
)
MIN_SCHEMAS = 280
WALKS = 10
DRAFT04_SHARE = (0.3, 0.5)
"""Draft-04 is the most common draft in the wild: about 40% of the corpus declares it."""


@functools.cache
def _compiled(path: Path) -> Compiled:
    return compile_timed(path.read_text(), strict=True)


def _refusals_by_cause(paths: list[Path]) -> str:
    groups: dict[str, list[str]] = collections.defaultdict(list)
    for path in paths:
        compiled = _compiled(path)
        if compiled.refusal is not None:
            groups[refusal_cause(compiled.refusal)].append(path.stem)
    ordered = sorted(groups.items(), key=lambda item: -len(item[1]))
    return "\n".join(f"{len(names):4} {cause}: {', '.join(names)}" for cause, names in ordered)


def test_corpus_is_large_and_valid_for_its_drafts() -> None:
    paths = corpus_paths()
    assert len(paths) >= MIN_SCHEMAS
    draft04 = 0
    for path in paths:
        schema = json.loads(path.read_text())
        # Snowplow's self-describing metaschema extends draft-04 (jsonschema does not know it)
        snowplow = schema.get("$schema") == SNOWPLOW_METASCHEMA
        default = jsonschema.Draft4Validator if snowplow else jsonschema.Draft202012Validator
        validator_class = validator_for(schema, default=default)
        # raises ValidationError naming the problem; patterns read as the judge reads them
        validator_class(validator_class.META_SCHEMA, format_checker=REGEX_FORMAT_CHECKER).validate(
            schema
        )
        draft04 += validator_class is jsonschema.Draft4Validator
    low, high = DRAFT04_SHARE
    assert low <= draft04 / len(paths) <= high, draft04


def test_corpus_compiles_or_is_refused_without_crashing() -> None:
    crashes = [f"{p.stem}: {_compiled(p).crash}" for p in corpus_paths() if _compiled(p).crash]
    assert not crashes, "\n".join(crashes)


def test_corpus_acceptance_by_default() -> None:
    paths = corpus_paths()
    accepted = sum(_compiled(path).accepted for path in paths)
    share = accepted / len(paths)
    assert share >= MIN_ACCEPTANCE, (
        f"{accepted}/{len(paths)} accepted ({share:.1%}); refused by cause:\n"
        + _refusals_by_cause(paths)
    )


def test_accepted_corpus_schemas_generate_only_valid_json() -> None:
    compiler = raw_compiler()
    problems = []
    checked = 0
    for index, path in enumerate(corpus_paths()):
        compiled = _compiled(path)
        if not compiled.accepted:
            continue
        schema = json.loads(path.read_text())
        result = check_soundness(schema, JsonGrammar(compiler, compiled.canonical), WALKS, index)
        checked += result.outputs
        if result.dead_end:
            problems.append(f"{path.stem}: {result.dead_end}")
        problems += [
            f"{path.stem}: {item['reason']}\n    {item['output']}" for item in result.invalid
        ]
    assert not problems, "\n".join(problems)
    assert checked > 0


@pytest.mark.parametrize(
    ("message", "cause"),
    [
        (
            "keyword 'nullable' at /properties/a cannot be enforced during generation: "
            "it is OpenAPI 3.0, not JSON Schema, and would not allow null",
            "keyword 'nullable': it is OpenAPI 3.0",
        ),
        (
            "keyword 'oneOf' at the root cannot be enforced during generation: "
            "branches 0 and 3 may both match and xgrammar cannot exclude that",
            "keyword 'oneOf': branches N and N may both match and xgrammar cannot exclude that",
        ),
        (
            "keyword 'x' at /a cannot be enforced during generation: it is not a 2020-12 keyword",
            "keyword 'x': it is not a 2020-12 keyword",
        ),
        (
            "unsupported $schema 'http://json-schema.org/draft-04/schema#': use draft-06",
            "unsupported $schema draft-04",
        ),
        (
            "pattern at /properties/p: unsupported regex feature '(?<!' at position 3",
            "pattern at …: unsupported regex feature '…' at position N",
        ),
    ],
)
def test_refusal_causes_group_without_locations(message: str, cause: str) -> None:
    assert refusal_cause(message) == cause
