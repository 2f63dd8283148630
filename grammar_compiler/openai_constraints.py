"""The ``grammar`` and ``response_format`` fields of ``/v1/completions``, as constraints.

Clients of OpenAI-compatible servers send a constraint in one of two shapes,
and each is mapped onto the compilers that the dedicated endpoints use, so
a grammar means the same here as there:

``grammar: {"type": T, "value": V}``
    ``regex`` (Python regex, ``regex_constraint``), ``json_schema`` (an
    object or its JSON text, ``compile_json_schema`` strict), ``lark``,
    ``gbnf``, ``ebnf`` (llama.cpp GBNF / xgrammar EBNF), ``bnf`` (the
    dialect of ``/v1/completion/cfg``), ``abnf`` (RFC 5234), ``iso-ebnf``
    and ``w3c-ebnf`` via ``compile_grammar`` (``lark``
    reads llguidance's dialect of Lark, as mistral.rs does), and
    ``llguidance`` (a Lark text in that dialect, or llguidance's
    ``{"grammars": [...]}`` wrapper; see ``llguidance``).

``response_format``
    ``{"type": "text"}``: no constraint; ``{"type": "json_object"}``: any
    JSON object (``json_mode``: no free whitespace, so it cannot run away
    into spaces); ``{"type": "json_object", "schema": S}``: ``S`` in strict
    mode; OpenAI's ``{"type": "json_schema", "json_schema": {"name": ...,
    "schema": S, "strict": B}}``: ``S`` in strict mode when ``B`` is true,
    else (OpenAI's default) best effort, with the keywords that are not
    enforced listed in ``not_enforced``.

vLLM's ``structured_outputs`` (``extra_body`` of the ``openai`` SDK) and its
older ``guided_json``, ``guided_regex``, ``guided_choice`` and
``guided_grammar``, so clients written for vLLM work unchanged
(``structured_outputs_constraint``)
    ``json`` a JSON Schema (strict, as ``grammar`` json_schema), ``regex``,
    ``choice`` exactly one of the listed strings, ``grammar`` a grammar in
    any format ``compile_grammar`` recognises (vLLM takes xgrammar's EBNF and
    Lark), ``json_object`` (``true``) any JSON object.

Errors are ``FieldError``s naming the field (``grammar.value: ...``).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Literal, get_args

from grammar_compiler.canonical import CanonicalConstraint
from grammar_compiler.cfg import compile_grammar
from grammar_compiler.cfg_tree import check_size
from grammar_compiler.ebnf_writer import ebnf_string
from grammar_compiler.errors import ConstraintError
from grammar_compiler.field_errors import FieldError, at_field
from grammar_compiler.json_mode import json_object_constraint
from grammar_compiler.json_schema import compile_json_schema
from grammar_compiler.llguidance import llguidance_constraint
from grammar_compiler.regex import MAX_PATTERN_LENGTH, regex_constraint

GrammarType = Literal[
    "regex",
    "json_schema",
    "lark",
    "llguidance",
    "gbnf",
    "ebnf",
    "bnf",
    "abnf",
    "iso-ebnf",
    "w3c-ebnf",
]
GRAMMAR_TYPES = get_args(GrammarType)
RESPONSE_FORMAT_TYPES = ("text", "json_object", "json_schema")
STRUCTURED_OUTPUT_KINDS = ("json", "regex", "choice", "grammar", "json_object")
"""The constraints of vLLM's ``structured_outputs``; ``guided_<kind>`` gives the first four."""


def grammar_constraint(grammar_type: str, value: str | dict[str, Any]) -> CanonicalConstraint:
    """The constraint of the request field ``grammar: {"type": grammar_type, "value": value}``.

    ``value`` is text for every type; ``json_schema`` and ``llguidance`` also
    take the parsed object.

    Raises:
        FieldError: ``grammar.type`` is unknown, or ``grammar.value`` has the
            wrong type or is not a valid constraint of that type (with its
            location where the compiler knows it).
    """
    if grammar_type not in GRAMMAR_TYPES:
        raise FieldError("grammar.type", f"must be one of {', '.join(GRAMMAR_TYPES)}")
    field = "grammar.value"
    if grammar_type == "llguidance":
        return llguidance_constraint(value, field)
    if grammar_type != "json_schema" and not isinstance(value, str):
        raise FieldError(field, f"a {grammar_type} grammar must be a string")
    try:
        if grammar_type == "regex":
            return regex_constraint(value)
        if grammar_type == "json_schema":
            return compile_json_schema(value, decoder_guard=True)
        return compile_grammar(value, grammar_type)
    except ConstraintError as err:
        raise at_field(field, err) from None


def structured_outputs_constraint(kind: str, value: Any, field: str) -> CanonicalConstraint:
    """One constraint of vLLM's ``structured_outputs`` (or ``guided_<kind>``), given at ``field``.

    Raises:
        FieldError: the value has the wrong type or is not a valid constraint.
    """
    try:
        if kind == "json":
            if not isinstance(value, (dict, str, bool)):
                raise FieldError(field, "must be a JSON Schema object")
            return compile_json_schema(value, decoder_guard=True)
        if kind == "choice":
            if not isinstance(value, list) or not value:
                raise FieldError(field, "must be a list of at least one string")
            if not all(isinstance(choice, str) for choice in value):
                raise FieldError(field, "must hold strings only")
            return _choice_constraint(value)
        if kind == "json_object":
            if value is not True:
                raise FieldError(field, "must be true (any JSON object) when given")
            return _json_mode()
        if not isinstance(value, str):
            raise FieldError(field, f"a {kind} must be a string")
        if kind == "regex":
            return regex_constraint(value)
        return compile_grammar(value, "auto")
    except ConstraintError as err:
        raise at_field(field, err) from None


def _json_mode() -> CanonicalConstraint:
    """Any JSON object (``json_mode``), named as the request asked for it."""
    return replace(json_object_constraint(), source_language="json_object")


def _choice_constraint(choices: list[str]) -> CanonicalConstraint:
    """Exactly one of ``choices``: a regex of them while it is short enough for the
    regex reader, else their alternatives as an EBNF grammar (thousands of
    category names), judged by membership."""
    pattern = "|".join(map(re.escape, choices))
    if len(pattern) <= MAX_PATTERN_LENGTH:
        return regex_constraint(pattern)
    if any("\0" in choice for choice in choices):
        raise ConstraintError("a choice holds a NUL character, which cannot be generated")
    listed = frozenset(choices)
    ebnf = "root ::= " + " | ".join(map(ebnf_string, dict.fromkeys(choices))) + "\n"
    check_size(ebnf)

    def judge(text: str) -> str | None:
        return None if text in listed else "not one of the choices"

    return CanonicalConstraint("ebnf", ebnf, "choice", judge)


def response_format_constraint(response_format: dict[str, Any]) -> CanonicalConstraint | None:
    """The constraint of the request field ``response_format``; None for ``{"type": "text"}``.

    Raises:
        FieldError: the type is unknown, a schema is missing where one is
            required, or the schema is invalid (or, when strict, cannot be
            enforced).
    """
    if not isinstance(response_format, dict):
        raise FieldError("response_format", 'must be an object such as {"type": "json_object"}')
    kind = response_format.get("type")
    if kind not in RESPONSE_FORMAT_TYPES:
        raise FieldError(
            "response_format.type", f"must be one of {', '.join(RESPONSE_FORMAT_TYPES)}"
        )
    if kind == "text":
        return None
    if kind == "json_object":
        schema = response_format.get("schema")
        if schema is None:
            return _json_mode()
        return _schema(schema, "response_format.schema", strict=True)
    options = response_format.get("json_schema")
    if not isinstance(options, dict):
        raise FieldError("response_format.json_schema", "must be an object with a schema")
    name = options.get("name")
    if name is not None and not isinstance(name, str):
        raise FieldError("response_format.json_schema.name", "must be a string")
    strict = options.get("strict")
    if strict is not None and not isinstance(strict, bool):
        raise FieldError("response_format.json_schema.strict", "must be true or false")
    schema = options.get("schema")
    if schema is None:
        raise FieldError("response_format.json_schema.schema", "is required")
    return _schema(schema, "response_format.json_schema.schema", strict=bool(strict))


def _schema(schema: object, field: str, *, strict: bool) -> CanonicalConstraint:
    if not isinstance(schema, (dict, str, bool)):
        raise FieldError(field, "must be a JSON Schema object")
    try:
        return compile_json_schema(schema, strict=strict, decoder_guard=True)
    except ConstraintError as err:
        raise at_field(field, err) from None
