"""Random schemas mixing every keyword, compiled and walked, every output judged.

``python -m bench.schema_fuzz --seed 1 --schemas 300`` (about a minute)

The corpus and the suite hold schemas people write; this holds the ones
nobody writes on purpose, where keywords of different kinds meet
(``patternProperties`` beside another schema's ``additionalProperties``, a
``oneOf`` branch the compiler can express only in part, ``propertyNames``
through a ``$ref``, a schema without ``type`` beside ``uniqueItems`` and
``unevaluatedItems``), which is where the compiler has been found unsound.
Each schema is compiled as the service compiles ``response_format``
(strict, the decoder's guards); what compiles is walked at random through
xgrammar's grammar with the decoder's repeat guard (``JsonGrammar``; some
walks stubborn, coming back to the same start again and again, where the
guard could be cornered), and each finished output is judged by
``jsonschema`` on the original schema.
Prints every unsound schema with its output and the judge's reason; exits 1
if there was one. Not a test: a draw that finds nothing proves nothing,
and a found case belongs in the tests once fixed.

Outputs the judge cannot read are counted apart (``unjudgeable``): a free
value (``{}``) may be a number such as ``5e5432``, which Python reads as
infinity and ``jsonschema``'s ``multipleOf`` cannot divide; valid JSON, but
past what the judge checks.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from typing import Any

from bench.json_grammar import JsonGrammar, raw_compiler
from bench.schema_corpus import check_soundness
from grammar_compiler import ConstraintError, compile_json_schema

_NAMES = ("a", "b", "c")
_TYPES = ("string", "integer", "object", "array", "null", "boolean", "number")
_CONSTANTS = (1, "x", None, True, {"a": 1}, [1], 2.5)
_VALUES = (1, "x", None, False, 2.5, "y", {}, {"a": "x"}, [1, 2])
_LEAVES: tuple[Any, ...] = ({"type": "string"}, {"type": "integer"}, {}, {"enum": [1, "a"]})
_ANCHORS = (
    {"type": "string"},
    {"type": "string", "maxLength": 1},
    {"type": "string", "format": "date"},
    {"type": "string", "pattern": "^[ab]{1,3}$"},
    {"type": "string", "pattern": "^x[01]{2}$"},
)
"""Strings that may keep a unique array's objects apart (``unique_anchor``)."""


class SchemaMaker:
    """Random schemas from one seed: keywords drawn one to three at a time, nested
    through the applicators, with a ``$defs`` entry ``D`` that ``$ref`` can name."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def document(self, depth: int = 3) -> dict:
        schema = self.schema(depth)
        schema["$defs"] = {"D": self.schema(1)}
        return schema

    def schema(self, depth: int) -> Any:
        rng = self.rng
        if depth <= 0:
            return dict(rng.choice(_LEAVES))
        if rng.random() < 0.5:
            return self.keywords(depth)
        applicator = rng.choice(("oneOf", "anyOf", "allOf", "not", "if"))
        if applicator == "not":
            return {"not": self.schema(depth - 1), **self.maybe(0.5, depth)}
        if applicator == "if":
            conditional = {"if": self.schema(depth - 1), "then": self.schema(depth - 1)}
            if rng.random() < 0.5:
                conditional["else"] = self.schema(depth - 1)
            return conditional
        branches = [self.schema(depth - 1) for _ in range(rng.randint(2, 3))]
        return {applicator: branches, **self.maybe(0.3, depth)}

    def maybe(self, chance: float, depth: int) -> dict:
        return self.keywords(depth - 1) if self.rng.random() < chance else {}

    def keywords(self, depth: int) -> dict:
        schema: dict = {}
        for _ in range(self.rng.randint(1, 3)):
            schema.update(self.keyword(depth))
        return schema

    def keyword(self, depth: int) -> dict:
        """One keyword (or a keyword with its modifier), from a family drawn first so
        that families with many keywords are not drawn more often."""
        rng, sub = self.rng, lambda: self.schema(depth - 1)
        families = [
            lambda: [{"type": rng.choice([*_TYPES, ["string", "null"], ["object", "array"]])}],
            lambda: [
                {"minLength": rng.choice([1, 2])},
                {"maxLength": rng.choice([0, 1, 3])},
                {"pattern": rng.choice(["^x", "y$", "^[ab]+$", "^a|b$"])},
                {"format": rng.choice(["date", "email", "uuid", "ipv4"])},
            ],
            lambda: [
                {"minimum": rng.choice([0, 1, 2.5])},
                {"exclusiveMinimum": rng.choice([-1, 0.5])},
                {"exclusiveMaximum": rng.choice([0, 5, 7.5])},
                {"multipleOf": rng.choice([2, 3, 0.5])},
            ],
            lambda: [
                {"required": rng.sample(_NAMES, rng.randint(1, 2))},
                {"properties": {rng.choice(_NAMES): sub() for _ in range(rng.randint(1, 2))}},
                {"additionalProperties": rng.choice([False, True, sub()])},
                {"patternProperties": {rng.choice(["^a", "b", "^c$"]): sub()}},
                {"minProperties": rng.choice([1, 2])},
                {"maxProperties": 1},
                {"not": {"required": [rng.choice(_NAMES)]}},
            ],
            lambda: [
                {"propertyNames": rng.choice([{"maxLength": 1}, {"enum": ["a", "b"]}])},
                {"propertyNames": {"$ref": "#/$defs/D"}},
                {"dependentRequired": {rng.choice(_NAMES): [rng.choice(_NAMES)]}},
                {"dependentSchemas": {rng.choice(_NAMES): sub()}},
                {"unevaluatedProperties": rng.choice([False, {"type": "string"}])},
            ],
            lambda: [
                {"items": sub()},
                {"prefixItems": [sub() for _ in range(rng.randint(1, 2))]},
                {"minItems": rng.choice([1, 2])},
                {"maxItems": rng.choice([1, 3])},
                {"uniqueItems": True},
                {"unevaluatedItems": rng.choice([False, {"type": "integer"}])},
            ],
            lambda: [
                {
                    "uniqueItems": True,
                    "maxItems": rng.choice([3, 6]),
                    "items": {
                        "type": "object",
                        "properties": {n: rng.choice([*_ANCHORS, sub()]) for n in _NAMES[:2]},
                        "required": rng.sample(_NAMES[:2], rng.randint(0, 2)),
                    },
                }
            ],
            lambda: [
                {  # a union's first alternative kept apart is written alone
                    "uniqueItems": True,
                    "maxItems": rng.choice([3, 6]),
                    "items": {"anyOf": [sub(), rng.choice([*_ANCHORS, {"type": "null"}])]},
                },
                {  # names of maxLength alone, counted, the guard cornered if it can be
                    "type": "object",
                    "propertyNames": {"maxLength": rng.choice([1, 2])},
                    "additionalProperties": {"const": 0},
                    "minProperties": rng.choice([2, 5]),
                },
            ],
            lambda: [
                {"contains": sub()},
                {"contains": sub(), "minContains": rng.choice([0, 1, 2])},
                {"contains": sub(), "maxContains": rng.choice([1, 2])},
            ],
            lambda: [
                {"const": rng.choice(_CONSTANTS)},
                {"enum": rng.sample(_VALUES, 3)},
                {"$ref": "#/$defs/D"},
            ],
        ]
        return rng.choice(rng.choice(families)())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--schemas", type=int, default=300)
    parser.add_argument("--walks", type=int, default=6, help="random walks per compiled schema")
    parser.add_argument(
        "--stubborn",
        type=int,
        default=2,
        help="of which stubborn (mostly the lowest token allowed: corners the repeat guard)",
    )
    args = parser.parse_args()
    maker, walker = SchemaMaker(args.seed), raw_compiler()
    counts = {"compiled": 0, "refused": 0, "crashes": 0, "unsound": 0, "unjudgeable": 0}
    for index in range(args.schemas):
        document = maker.document()
        try:
            constraint = compile_json_schema(document, decoder_guard=True)
        except ConstraintError:
            counts["refused"] += 1
            continue
        except Exception as error:  # the service would answer 500
            counts["crashes"] += 1
            print(f"CRASH {json.dumps(document)}\n  {type(error).__name__}: {error}")
            continue
        counts["compiled"] += 1
        grammar = JsonGrammar(walker, constraint.value)
        result = check_soundness(document, grammar, args.walks, seed=index, stubborn=args.stubborn)
        problems = [item for item in result.invalid if "cannot be checked" not in item["reason"]]
        counts["unjudgeable"] += len(result.invalid) - len(problems)
        if problems or result.dead_end:
            counts["unsound"] += 1
            why = result.dead_end or f"{problems[0]['output']}\n  {problems[0]['reason']}"
            print(f"UNSOUND {json.dumps(document)}\n  {why}")
    print(json.dumps(counts))
    return 1 if counts["unsound"] or counts["crashes"] else 0


if __name__ == "__main__":
    sys.exit(main())
