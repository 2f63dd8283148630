"""Property: any schema a user sends compiles to a constraint or raises ConstraintError.

Anything else escaping the compiler becomes a 500 (the issue's
``_Unmergeable`` union of more than 64 members was one). Schemas are
generated with random nesting, every composition keyword, ``$ref``/``$defs``
including recursion and references that cannot resolve, enums, patterns
(lookaround, backreferences, Unicode classes), formats known and unknown,
keywords of other drafts, typos and vendor keys, every ``$schema`` in use, and
sizes on both sides of each of the compiler's limits. They are sent as
objects and as JSON text, strict and best effort. The limits' edges are also
pinned as explicit cases, so each run checks them whatever else it draws.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grammar_compiler import ConstraintError, compile_json_schema
from grammar_compiler.canonical import CanonicalConstraint
from grammar_compiler.json_schema import (
    MAX_BRANCHES,
    MAX_DEPTH,
    MAX_ENUM_VALUES,
    MAX_OPTIONAL_PROPERTIES,
    MAX_OPTIONAL_PROPERTIES_SQUARED,
    MAX_PROPERTIES,
    MAX_SCHEMA_BYTES,
)
from grammar_compiler.shortest import MAX_SHORTEST_OUTPUT

PROPERTY_SETTINGS = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

DRAFT_URIS = (
    "http://json-schema.org/draft-04/schema#",
    "http://json-schema.org/draft-04/schema",
    "http://json-schema.org/draft-06/schema#",
    "http://json-schema.org/draft-07/schema#",
    "https://json-schema.org/draft/2019-09/schema",
    "https://json-schema.org/draft/2020-12/schema",
    "http://json-schema.org/draft-03/schema#",
    "https://example.com/custom-metaschema",
)
TYPES = ("null", "boolean", "integer", "number", "string", "array", "object")
PATTERNS = (
    "^[a-z]+$",
    "[0-9]{3}-[0-9]{4}",
    "^(?=.*[A-Z])(?=.*\\d).{8,}$",
    "^(?!test)[a-z]+$",
    "(?<=@)example\\.com$",
    "^(a+)+$",
    "(\\w)\\1",
    "^\\p{L}+$",
    "^[\\u0000-\\uFFFF]*$",
    "\\cA",
    "^😀{2,3}$",
    "^(?:a|b|c){5,1000}$",
    "[",
    "^$",
    "\\d{0,40000}",
)
FORMATS = (
    "date",
    "date-time",
    "time",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "uuid",
    "regex",
    "iri",
    "uri-template",
    "int32",
    "int64",
    "uint",
    "float",
    "double",
    "byte",
    "binary",
    "URI",
    "phone",
    "",
)
NUMBERS = (
    0,
    1,
    -1,
    0.5,
    0.01,
    1e-9,
    7,
    1024,
    1025,
    10_000,
    2**53 - 1,
    2**53,
    2**62,
    2**62 + 1,
    2**63,
    2**64,
    -(2**63),
    1e308,
    -1e308,
    12345678910111213141516171819202122232425262728293031,
)
SIZES = (
    0,
    1,
    2,
    MAX_BRANCHES - 1,
    MAX_BRANCHES,
    MAX_BRANCHES + 1,
    MAX_OPTIONAL_PROPERTIES,
    MAX_OPTIONAL_PROPERTIES + 1,
    MAX_SHORTEST_OUTPUT,
    MAX_SHORTEST_OUTPUT + 1,
)
NAMES = st.sampled_from(("a", "b", "id", "name", "x-vendor", "$ref", "", "é", "a/b~c", "type"))
JUNK_KEYWORDS = (
    ("nullable", True),
    ("readonly", True),
    ("maxmimum", 3),
    ("_uniqueItems", True),
    ("javaType", "com.example.X"),
    ("tsType", "string"),
    ("errorMessage", {"type": "bad"}),
    ("x-order", 1),
    ("example", {"a": 1}),
    ("discriminator", {"propertyName": "kind"}),
    ("id", "urn:example:x"),
    ("definitions", {"d": {"type": "string"}}),
    ("$comment", "hello"),
    ("deprecated", True),
    ("contentEncoding", "base64"),
)

_numbers = st.sampled_from(NUMBERS) | st.integers(-5, 5) | st.floats(-100, 100, allow_nan=False)
_sizes = st.sampled_from(SIZES) | st.integers(0, 5)
_values = st.recursive(
    st.none() | st.booleans() | _numbers | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=6,
)


def _keywords(sub: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Keywords that may appear in one schema object, each with a plausible (or wrong) value."""
    return st.fixed_dictionaries(
        {},
        optional={
            "type": st.sampled_from(TYPES) | st.lists(st.sampled_from(TYPES), max_size=3),
            "enum": st.lists(_values, min_size=0, max_size=4),
            "const": _values,
            "minimum": _numbers,
            "maximum": _numbers,
            "exclusiveMinimum": _numbers | st.booleans(),
            "exclusiveMaximum": _numbers | st.booleans(),
            "multipleOf": st.sampled_from((0.01, 0.5, 2, 1024, 1025, 3, 1e-9, 2**62)),
            "minLength": _sizes,
            "maxLength": _sizes,
            "pattern": st.sampled_from(PATTERNS),
            "format": st.sampled_from(FORMATS),
            "properties": st.dictionaries(NAMES, sub, max_size=4),
            "required": st.lists(NAMES, max_size=4),
            "additionalProperties": st.booleans() | sub,
            "patternProperties": st.dictionaries(st.sampled_from(PATTERNS[:4]), sub, max_size=2),
            "propertyNames": sub,
            "minProperties": _sizes,
            "maxProperties": _sizes,
            "dependentRequired": st.dictionaries(NAMES, st.lists(NAMES, max_size=2), max_size=2),
            "dependencies": st.dictionaries(NAMES, st.lists(NAMES, max_size=2) | sub, max_size=2),
            "items": sub | st.lists(sub, max_size=3),
            "prefixItems": st.lists(sub, max_size=3),
            "additionalItems": st.booleans() | sub,
            "minItems": _sizes,
            "maxItems": _sizes,
            "uniqueItems": st.booleans(),
            "contains": sub,
            "minContains": _sizes,
            "maxContains": _sizes,
            "anyOf": st.lists(sub, min_size=1, max_size=4),
            "oneOf": st.lists(sub, min_size=1, max_size=4),
            "allOf": st.lists(sub, min_size=1, max_size=4),
            "not": sub,
            "if": sub,
            "then": sub,
            "else": sub,
            "$ref": st.sampled_from(
                (
                    "#",
                    "#/$defs/node",
                    "#/$defs/leaf",
                    "#/definitions/d",
                    "#/$defs/missing",
                    "#anchor",
                )
            )
            | st.sampled_from(("https://example.com/s.json", "other.json#/a", "#/properties/a")),
            "unevaluatedProperties": st.booleans(),
            "$anchor": st.just("anchor"),
            "title": st.text(max_size=5),
        },
    ).flatmap(
        lambda schema: (
            st.sampled_from(JUNK_KEYWORDS).map(lambda junk: {**schema, junk[0]: junk[1]})
            | st.just(schema)
        )
    )


_schemas = st.recursive(
    st.booleans() | st.builds(dict) | st.sampled_from(TYPES).map(lambda t: {"type": t}),
    _keywords,
    max_leaves=12,
)


def _document(root: Any, declared: str | None, definitions: dict[str, Any]) -> Any:
    if not isinstance(root, dict):
        return root
    document = dict(root)
    if declared is not None:
        document["$schema"] = declared
    if definitions:
        document["$defs"] = definitions
    return document


_documents = st.builds(
    _document,
    _schemas,
    st.none() | st.sampled_from(DRAFT_URIS),
    st.fixed_dictionaries(
        {},
        optional={
            "node": st.builds(
                lambda extra: {
                    "type": "object",
                    "properties": {"next": {"$ref": "#/$defs/node"}},
                    **extra,
                },
                st.fixed_dictionaries({}, optional={"required": st.just(["next"])}),
            ),
            "leaf": _schemas,
            "loop": st.just({"$ref": "#/$defs/loop"}),
        },
    ),
)


def _nested(depth: int) -> dict:
    schema: dict = {"type": "integer"}
    for _ in range(depth):
        schema = {"type": "array", "items": schema}
    return schema


def _union(branches: int) -> dict:
    """A union of object types told apart by a literal property, as tagged unions are written."""
    return {
        "anyOf": [
            {
                "type": "object",
                "properties": {"kind": {"const": f"k{i}"}, "v": {"type": "integer"}},
                "required": ["kind"],
            }
            for i in range(branches)
        ]
    }


def _optional_object(count: int) -> dict:
    return {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(count)}}


LIMIT_EXAMPLES = [
    pytest.param(_nested(MAX_DEPTH // 2 - 1), id="nesting-below-MAX_DEPTH"),
    pytest.param(_nested(MAX_DEPTH // 2), id="nesting-at-MAX_DEPTH"),
    pytest.param(_nested(MAX_DEPTH), id="nesting-over-MAX_DEPTH"),
    pytest.param(_union(MAX_BRANCHES), id="anyOf-MAX_BRANCHES"),
    pytest.param(_union(MAX_BRANCHES + 1), id="anyOf-over-MAX_BRANCHES"),
    pytest.param({"oneOf": _union(MAX_BRANCHES + 1)["anyOf"]}, id="oneOf-over-MAX_BRANCHES"),
    pytest.param(
        {"type": "object", "properties": {"a": _union(MAX_BRANCHES + 1)}, "allOf": [_union(2)]},
        id="nested-union-over-MAX_BRANCHES-with-allOf",
    ),
    pytest.param({"enum": list(range(MAX_ENUM_VALUES))}, id="enum-MAX_ENUM_VALUES"),
    pytest.param({"enum": list(range(MAX_ENUM_VALUES + 1))}, id="enum-over-MAX_ENUM_VALUES"),
    pytest.param(_optional_object(MAX_OPTIONAL_PROPERTIES), id="MAX_OPTIONAL_PROPERTIES"),
    pytest.param(_optional_object(MAX_OPTIONAL_PROPERTIES + 1), id="over-MAX_OPTIONAL_PROPERTIES"),
    pytest.param(
        {
            "type": "object",
            "properties": {
                f"o{i}": _optional_object(MAX_OPTIONAL_PROPERTIES)
                for i in range(MAX_OPTIONAL_PROPERTIES_SQUARED // MAX_OPTIONAL_PROPERTIES**2 + 1)
            },
        },
        id="over-MAX_OPTIONAL_PROPERTIES_SQUARED",
    ),
    pytest.param(
        {
            "type": "object",
            "properties": {f"p{i}": {"type": "integer"} for i in range(MAX_PROPERTIES + 1)},
            "required": [f"p{i}" for i in range(MAX_PROPERTIES + 1)],
        },
        id="over-MAX_PROPERTIES",
    ),
    pytest.param({"type": "string", "minLength": MAX_SHORTEST_OUTPUT}, id="MAX_SHORTEST_OUTPUT"),
    pytest.param(
        {"type": "string", "minLength": MAX_SHORTEST_OUTPUT + 1}, id="over-MAX_SHORTEST_OUTPUT"
    ),
    pytest.param(
        {"type": "array", "items": {"const": "xxxxxxxx"}, "minItems": MAX_SHORTEST_OUTPUT // 8},
        id="forced-array-near-MAX_SHORTEST_OUTPUT",
    ),
    pytest.param({"type": "integer", "minimum": 2**63, "maximum": 2**64}, id="beyond-int64"),
    pytest.param(
        {"type": "number", "multipleOf": 0.01, "minimum": 0, "maximum": 1e308},
        id="fractional-step-huge-range",
    ),
    pytest.param(
        {"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}},
        id="ref-cycle",
    ),
]


def _compiles_or_refuses(schema: Any, strict: bool) -> None:
    try:
        constraint = compile_json_schema(schema, strict=strict)
    except ConstraintError:
        return
    assert isinstance(constraint, CanonicalConstraint)
    assert isinstance(constraint.value, str)


@given(document=_documents, as_text=st.booleans(), strict=st.booleans())
@PROPERTY_SETTINGS
def test_generated_schemas_compile_or_are_refused(
    document: Any, as_text: bool, strict: bool
) -> None:
    _compiles_or_refuses(json.dumps(document) if as_text else document, strict)


@pytest.mark.parametrize("strict", [True, False], ids=["strict", "best-effort"])
@pytest.mark.parametrize("schema", LIMIT_EXAMPLES)
def test_schemas_at_every_limit_compile_or_are_refused(schema: Any, strict: bool) -> None:
    _compiles_or_refuses(schema, strict)


@given(padding=st.sampled_from((MAX_SCHEMA_BYTES - 64, MAX_SCHEMA_BYTES, MAX_SCHEMA_BYTES + 1)))
@settings(max_examples=3, deadline=None)
def test_schema_text_near_the_size_limit_compiles_or_is_refused(padding: int) -> None:
    frame = json.dumps({"type": "string", "description": ""})
    text = json.dumps({"type": "string", "description": "d" * max(0, padding - len(frame))})
    _compiles_or_refuses(text, strict=True)


@given(
    text=st.text(max_size=40)
    | st.sampled_from(("[" * 100_000, '{"type": NaN}', '{"a":1,"a":2}', "1e999"))
)
@settings(max_examples=40, deadline=None)
def test_arbitrary_text_compiles_or_is_refused(text: str) -> None:
    _compiles_or_refuses(text, strict=True)
