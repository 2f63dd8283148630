"""The requests every phase sends: prompts, constraints, sampling parameters.

Constraints are written as users write them and translated by
``grammar_compiler`` into the canonical form the decoder compiles, exactly as
the frontend does. Each is chosen so that no output can complete it in fewer
than ~70 tokens (with ``ignore_eos`` and ``stop_after_match: false`` a request
only ends early when its constraint is complete), so every request of every
kind generates exactly ``max_tokens`` tokens and TPOTs compare like for like.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path

from grammar_compiler import compile_grammar, compile_json_schema
from grammar_compiler.regex import regex_constraint

REPO_ROOT = Path(__file__).resolve().parent.parent
SCHEMA_CORPUS = REPO_ROOT / "tests" / "corpus" / "json_schema"


@dataclass(frozen=True)
class RequestSpec:
    """One ensemble request: the four inputs of the ensemble table in docs/triton.md."""

    prompt: str
    params: dict = field(hash=False)
    """``sampling_parameters`` (engine/params.py SamplingParams fields)."""
    constraint_type: str = "none"
    constraint: str = ""
    label: str = ""


PROMPTS = (
    "The weather today is",
    "Once upon a time, in a small village,",
    "Here is a short review of the new phone:",
    "The main causes of the war were",
    "To make a good cup of coffee you",
    "The report lists the following items:",
    "In the morning the market was",
    "Write a summary of the meeting:",
)

# At least 70 words: word-level pre-tokenizers never put two words in one token.
USER_REGEX = r"[A-Z][a-z]+( [a-z]+,?){70,}\."

# At least 40 enum tags: each is a word token plus a punctuation token.
USER_JSON_SCHEMA: dict = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "maxLength": 40},
        "rating": {"type": "integer", "minimum": 1, "maximum": 5},
        "tags": {
            "type": "array",
            "items": {
                "enum": ["red", "green", "blue", "fast", "slow", "new", "old", "big", "small"]
            },
            "minItems": 40,
        },
    },
    "required": ["title", "rating", "tags"],
    "additionalProperties": False,
}

# 24 statements of a few tokens each; expressions recurse through parentheses.
USER_LARK = (
    "start: "
    + " ".join(["stmt"] * 24)
    + "\n"
    + r"""
stmt: NAME " = " expr ";\n"
expr: term (("+" | "-" | "*") term)*
term: NAME | NUMBER | "(" expr ")"
NAME: /[a-z][a-z0-9_]*/
NUMBER: /[0-9]+/
"""
)


@dataclass(frozen=True)
class Constraint:
    """A canonical constraint (what the decoder compiles) and what the user wrote."""

    kind: str
    """The ensemble's ``constraint_type``: none, regex, json_schema, ebnf."""
    value: str
    label: str
    source: str


NONE = Constraint("none", "", "unconstrained", "")


def constraint_kinds() -> dict[str, Constraint]:
    """The four kinds the TPOT phase compares, keyed by a short name."""
    schema = json.dumps(USER_JSON_SCHEMA)
    return {
        "none": NONE,
        "regex": Constraint("regex", regex_constraint(USER_REGEX).value, "regex", USER_REGEX),
        "json_schema": Constraint(
            "json_schema", compile_json_schema(schema).value, "JSON schema", schema
        ),
        "cfg": Constraint(
            "ebnf", compile_grammar(USER_LARK, "lark").value, "CFG (Lark)", USER_LARK
        ),
    }


def json_schema_constraint(schema: dict, label: str) -> Constraint:
    text = json.dumps(schema)
    return Constraint("json_schema", compile_json_schema(text).value, label, text)


def sampling_parameters(max_tokens: int, seed: int, stream_interval_ms: float = 0.0) -> dict:
    """Fixed length and seed; the constraint's mask is the only difference between kinds."""
    return {
        "max_tokens": max_tokens,
        "temperature": 1.0,
        "seed": seed,
        "ignore_eos": True,
        "stop_after_match": False,
        "stream_interval_ms": stream_interval_ms,
    }


def requests(
    constraint: Constraint,
    count: int,
    max_tokens: int,
    *,
    first: int = 0,
    label: str = "",
    interval_ms: float = 0.0,
) -> list[RequestSpec]:
    """`count` requests cycling through PROMPTS, seeded by their index: request i of
    one kind has the same prompt and seed as request i of every other kind."""
    return [
        RequestSpec(
            prompt=PROMPTS[i % len(PROMPTS)],
            params=sampling_parameters(max_tokens, seed=1000 + i, stream_interval_ms=interval_ms),
            constraint_type=constraint.kind,
            constraint=constraint.value,
            label=label or constraint.label,
        )
        for i in range(first, first + count)
    ]


def corpus_schemas() -> dict[str, dict]:
    """Corpus schemas the compiler accepts, without ``$ref`` (so they can be nested)."""
    found = {}
    for path in sorted(SCHEMA_CORPUS.glob("*.json")):
        if path.with_suffix(".refused").exists() or "$ref" in path.read_text():
            continue
        schema = json.loads(path.read_text())
        if isinstance(schema, dict):
            found[path.stem] = {k: v for k, v in schema.items() if k not in ("$schema", "$id")}
    return found


def merged_schema(parts: dict[str, dict], nonce: str) -> dict:
    """One object whose properties are `parts`: a schema as heavy as all of them.

    The nonce goes into every property name, so each call gives a grammar the
    decoder has never compiled (titles and descriptions would not do: the
    canonical form may drop them).
    """
    return {
        "type": "object",
        "properties": {f"{name}_{nonce}": copy.deepcopy(part) for name, part in parts.items()},
        "required": [f"{name}_{nonce}" for name in parts],
        "additionalProperties": False,
    }


def with_nonce(schema: dict, nonce: str) -> dict:
    """`schema` plus one optional property named after `nonce`: a fresh grammar
    that generates the same outputs."""
    fresh = copy.deepcopy(schema)
    fresh.setdefault("properties", {})[f"extra_{nonce}"] = {"type": "integer"}
    return fresh
