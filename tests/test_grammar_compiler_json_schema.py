"""grammar_compiler.json_schema against the two judges that matter: jsonschema and real xgrammar.

Every accepted schema is compiled by xgrammar exactly as the decoder does
(``compile_json_schema(value, any_whitespace=False)``) and driven with a
``GrammarMatcher``; texts are judged by the constraint's own judge
(jsonschema on the original schema). Three directions are checked:

* listed texts: valid ones pass both, invalid ones fail both;
* random walks through xgrammar's grammar (what a model could be made to
  write) always satisfy the judge: generation is never a superset;
* valid instances drawn from the schema (hypothesis) are accepted by
  xgrammar, and mutations the judge rejects are rejected by xgrammar too.
"""

from __future__ import annotations

import functools
import json
import random
import re
import uuid
from pathlib import Path

import pytest
import regex
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from json_instances import Decoder, instance_texts, layout, samples, writes
from marked_patterns import marked_pattern
from marked_patterns import texts as marked_texts

from grammar_compiler import ConstraintError, compile_json_schema, ecma_regex
from grammar_compiler.json_judge import JUDGED_FORMATS
from grammar_compiler.json_schema import (
    MAX_DEPTH,
    MAX_ENUM_VALUES,
    MAX_PROPERTIES,
    MAX_SCHEMA_BYTES,
)
from grammar_compiler.json_schema.drafts import DRAFTS
from grammar_compiler.json_schema.normalize import MAX_BOUNDED_UNIQUE_ITEMS
from grammar_compiler.json_schema.render import MAX_EXCLUDED_NAMES, MAX_LISTED_NAMES

CORPUS = Path(__file__).parent / "corpus" / "json_schema"
SETTINGS = settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


@functools.cache
def _compiled(schema_text: str, strict: bool = True, *, whole: bool = False):
    """``whole``: as the service compiles a schema given whole (``response_format``,
    ``json_schema``), where the decoder keeps unique items and names apart."""
    constraint = compile_json_schema(schema_text, strict=strict, decoder_guard=whole)
    return constraint, Decoder(constraint.value, guard=whole)


def _assert_agrees(schema: object, good: list[str], bad: list[str]) -> None:
    """Good texts satisfy the judge and xgrammar; bad ones neither."""
    constraint, decoder = _compiled(json.dumps(schema))
    for text in good:
        assert constraint.judge(text) is None, (text, constraint.judge(text))
        assert decoder.accepts(text), (text, constraint.value)
    for text in bad:
        assert constraint.judge(text) is not None, text
        assert not decoder.accepts(text), (text, constraint.value)


def _assert_sound(schema_text: str, walks: int = 25, *, whole: bool = False) -> None:
    constraint, decoder = _compiled(schema_text, whole=whole)
    for text in samples(decoder, walks, seed=len(schema_text)):
        assert constraint.judge(text) is None, (text, constraint.judge(text), constraint.value)


def _refused(schema: object, strict: bool = True, *, whole: bool = False) -> str:
    with pytest.raises(ConstraintError) as caught:
        compile_json_schema(schema, strict=strict, decoder_guard=whole)
    return str(caught.value)


# ---------------------------------------------------------------------------
# Keywords that are enforced: (schema, valid texts, invalid texts)

OBJ = {"type": "object"}
KEYWORDS = [
    pytest.param({"type": "integer"}, ["0", "-7", "123"], ["1.5", '"1"', "null"], id="type"),
    pytest.param({"type": ["string", "null"]}, ['"a"', "null"], ["1", "[]"], id="type-list"),
    pytest.param(
        {"enum": ["a", 1, None, [1, 2]]}, ['"a"', "1", "null", "[1,2]"], ['"b"', "2"], id="enum"
    ),
    pytest.param({"const": {"k": [1]}}, ['{"k":[1]}'], ['{"k":[2]}', "{}"], id="const"),
    pytest.param(
        {"type": "string", "enum": ["a", "bb", 3], "minLength": 2},
        ['"bb"'],
        ['"a"', "3"],
        id="enum-filtered-by-siblings",
    ),
    pytest.param(
        {
            **OBJ,
            "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
            "required": ["a"],
        },
        ['{"a": 1}', '{"a": 1, "b": "x"}'],
        ["{}", '{"a": "1"}', '{"a": 1, "b": 2}'],
        id="properties-required",
    ),
    pytest.param(
        {**OBJ, "properties": {"a": {"type": "integer"}}, "required": ["z"]},
        ['{"a": 1, "z": null}', '{"z": [1]}'],
        ['{"a": 1}'],
        id="required-not-in-properties",
    ),
    pytest.param(
        {**OBJ, "properties": {"a": {"type": "integer"}}, "additionalProperties": False},
        ['{"a": 1}', "{}"],
        ['{"a": 1, "b": 2}'],
        id="additionalProperties-false",
    ),
    pytest.param(
        {
            **OBJ,
            "properties": {"a": {"type": "integer"}},
            "additionalProperties": {"type": "string"},
        },
        ['{"a": 1, "b": "x"}', '{"b": "x", "c": "y"}'],
        ['{"a": 1, "b": 2}'],
        id="additionalProperties-schema",
    ),
    pytest.param(
        {
            **OBJ,
            "additionalProperties": {"type": "integer"},
            "propertyNames": {"pattern": "^[a-z]+$"},
        },
        ['{"ab": 1}', "{}"],
        ['{"Ab": 1}', '{"ab": "x"}'],
        id="propertyNames",
    ),
    pytest.param(
        {**OBJ, "properties": {"a": {}, "b": {}, "c": {}}, "minProperties": 2, "maxProperties": 2},
        ['{"a": 1, "b": 2}', '{"b": 1, "c": 2}'],
        ['{"a": 1}', '{"a": 1, "b": 2, "c": 3}'],
        id="min-maxProperties",
    ),
    pytest.param(
        {
            **OBJ,
            "properties": {"x_a": {"type": "integer"}},
            "patternProperties": {"^x_": {"minimum": 0}},
            "additionalProperties": False,
        },
        ['{"x_a": 3}'],
        ['{"x_a": -3}', '{"y": 3}'],
        id="patternProperties-merged-into-declared",
    ),
    pytest.param(
        {
            **OBJ,
            "patternProperties": {"^[A-Z_]+$": {"type": "string"}},
            "additionalProperties": False,
        },
        ["{}", '{"PATH": "x"}', '{"PATH": "x", "HOME": "y"}'],
        ['{"path": "x"}', '{"PATH": 1}'],
        id="patternProperties-names-generated",
    ),
    pytest.param(
        {
            **OBJ,
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
            "patternProperties": {"^x-": {}},
        },
        ['{"name": "a"}', '{"name": "a", "x-b": [1]}'],
        ['{"name": 1, "x-b": 1}', '{"x-b": 1}'],
        id="patternProperties-beside-declared",
    ),
    pytest.param(
        {
            **OBJ,
            "patternProperties": {"^a": {"type": "integer"}, "b$": {"minimum": 0}},
            "propertyNames": {"maxLength": 3},
            "additionalProperties": False,
        },
        ['{"ab": 1}', '{"a": 2, "b": 0}'],  # every name gets both schemas (a subset)
        ['{"ab": -1}', '{"b": -1}', '{"ab": 1.5}', '{"c": 1}'],
        id="patternProperties-several",
    ),
    pytest.param(
        {
            **OBJ,
            "properties": {"MD001": {"type": "boolean"}},
            "patternProperties": {"^MD[0-9]+$": {"type": ["boolean", "object"]}},
            "additionalProperties": {"type": ["boolean", "integer"]},
        },
        ['{"MD001": true, "x": false}', '{"MD002": true}'],
        ['{"MD002": 1}', '{"x": {}}', '{"MD001": 1}'],
        id="patternProperties-open-beside-a-covered-name",
    ),
    pytest.param(
        {**OBJ, "patternProperties": {"^x": {"type": "integer"}, "y": {"type": "string"}}},
        ["{}"],
        ['{"x": "a"}', '{"y": 1}', '{"xy": 1}'],
        id="patternProperties-open-conflicting",
    ),
    pytest.param(
        {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3},
        ["[1]", "[1, 2, 3]"],
        ["[]", "[1, 2, 3, 4]", '["a"]'],
        id="items-min-maxItems",
    ),
    pytest.param(
        {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "items": False},
        ['[1, "a"]', "[1]", "[]"],
        ['[1, "a", 2]', '["a"]'],
        id="prefixItems",
    ),
    pytest.param(
        {"type": "array", "prefixItems": [{"type": "integer"}], "items": {"type": "string"}},
        ['[1, "a", "b"]'],
        ["[1, 2]"],
        id="prefixItems-then-items",
    ),
    pytest.param(
        {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "array",
            "items": [{"type": "integer"}, {"type": "string"}],
            "additionalItems": False,
        },
        ['[1, "a"]', "[1]"],
        ['[1, "a", 2]', '["a"]'],
        id="draft-07-tuple-items",
    ),
    pytest.param(
        {"type": "array", "prefixItems": [{"type": "integer"}] * 3, "maxItems": 2},
        ["[1, 2]"],
        ["[1, 2, 3]"],
        id="prefixItems-cut-by-maxItems",
    ),
    pytest.param(
        {"type": "string", "minLength": 2, "maxLength": 3},
        ['"ab"', '"abc"', '"éé"'],
        ['"a"', '"abcd"'],
        id="min-maxLength",
    ),
    pytest.param(
        {"type": "string", "pattern": "[0-9]"}, ['"a1b"', '"7"'], ['"ab"'], id="pattern-search"
    ),
    pytest.param(
        {"type": "string", "pattern": "^https://"},
        ['"https://example.com/x"'],
        ['"http://example.com"'],
        id="pattern-prefix",
    ),
    pytest.param(
        {"type": "string", "pattern": "^[a-z]+$", "minLength": 3, "maxLength": 5},
        ['"abc"', '"abcde"'],
        ['"ab"', '"abcdef"', '"ab1"'],
        id="pattern-with-lengths",
    ),
    pytest.param(
        {"type": "string", "pattern": "^\\d{3}-\\d{4}$"},
        ['"555-1234"'],
        ['"555-12345"', '"5551234"'],
        id="pattern-digits",
    ),
    pytest.param(
        {"type": "string", "format": "date"},
        ['"2024-02-29"', '"1999-12-31"'],
        ['"2023-02-29"', '"2023-13-01"', '"2023-1-01"'],
        id="format-date",
    ),
    pytest.param(
        {"type": "string", "format": "date-time"},
        ['"2024-02-29T23:59:59Z"', '"2024-01-01T00:00:00.123+05:30"'],
        ['"2024-01-01 00:00:00"', '"2024-01-01T25:00:00Z"', '"2024-01-01T00:00:0000Z"'],
        id="format-date-time",
    ),
    pytest.param(
        {"type": "string", "format": "time"},
        ['"08:30:00Z"', '"23:59:59.5-01:00"'],
        ['"8:30:00Z"', '"08:30:00"'],
        id="format-time",
    ),
    pytest.param(
        {"type": "string", "format": "email"},
        ['"a.b+c@example.co.uk"'],
        ['"not an email"'],
        id="format-email",
    ),
    pytest.param(
        {"type": "string", "format": "ipv4"},
        ['"192.168.0.1"', '"0.0.0.0"'],
        ['"256.1.1.1"', '"01.2.3.4"'],
        id="format-ipv4",
    ),
    pytest.param(
        {"type": "string", "format": "ipv6"},
        [
            '"::1"',
            '"2001:db8::8a2e:370:7334"',
            '"::ffff:192.168.0.1"',
            '"1::d6:192.168.0.1"',
            '"1000:1000:1000:1000:1000:1000:255.255.255.255"',
        ],
        ['"1::2::3"', '"12345::"', '"1:2:3:4:5:6:7:1.2.3.4"', '"::1.2.3.256"', '"::01.2.3.4"'],
        id="format-ipv6-with-an-embedded-ipv4-address",
    ),
    pytest.param(
        {"type": "string", "format": "hostname"},
        ['"example.com"', '"a-b.c"'],
        ['"-a.com"', '"a..b"', '"' + "a" * 64 + '.com"'],
        id="format-hostname",
    ),
    pytest.param(
        {"type": "string", "format": "uuid"},
        ['"123e4567-e89b-12d3-a456-426614174000"'],
        ['"123e4567e89b12d3a456426614174000"'],
        id="format-uuid",
    ),
    pytest.param(
        {"type": "string", "format": "uri"},
        ['"https://example.com/a?b=c#d"', '"mailto:a@b.c"'],
        ['"/relative/path"', '"http://exa mple.com"'],
        id="format-uri",
    ),
    pytest.param(
        {"type": "string", "format": "uri-reference"},
        ['"/relative/path"', '"https://x.y"', '""'],
        ['"a b"'],
        id="format-uri-reference",
    ),
    pytest.param(
        {"type": "string", "format": "uri-template"},
        ['"http://x.y/dict/{term:1}/{term}"', '"{+path}/here{?q,lang}"', '"{list*}"', '""'],
        ['"http://x.y/{term"', '"{}"', '"a b"', '"{x:0}"', '"%zz"'],
        id="format-uri-template",
    ),
    pytest.param(
        {"type": "string", "format": "idn-hostname"},
        ['"example.com"', '"a-b.c"'],
        ['"-a.com"', '"ab--cd.com"', '"a..b"'],  # IDNA 2008: no "--" at 3-4
        id="format-idn-hostname",
    ),
    pytest.param(
        {"type": "string", "format": "idn-email"},
        ['"joe.bloggs@example.com"'],
        ['"2962"'],
        id="format-idn-email",
    ),
    pytest.param(
        {"type": "string", "format": "iri"},
        ['"https://example.com/a?b=c#d"', '"http://ƒøø.ßår/?∂éœ=πîx#πîüx"'],
        ['"/relative/path"', '"http://a b"', '"http://x/%zz"', '"http://x/\u0085"'],
        id="format-iri-with-characters-beyond-ascii",
    ),
    pytest.param(
        {"type": "string", "format": "iri-reference"},
        ['"/relative/path"', '"https://x.y"', '"/âππ"', '"#ƒrägmênt"'],
        ['"a b"', '"#%zz"', '"#\u00a0 x"'],
        id="format-iri-reference",
    ),
    pytest.param(
        {"type": "string", "format": "regex"},
        ['"^[a-z]+(-[0-9]{2,})?$"', '"a|b|(c(d)*)?"', '""'],
        ['"a(b"', '"[z-a]"', '"*a"', '"a{2,1}"'],
        id="format-regex",
    ),
    pytest.param(
        {"type": "string", "format": "duration"},
        ['"P3D"', '"PT1H30M"', '"P1Y2M"'],
        ['"P"', '"1D"', '"PT"'],
        id="format-duration",
    ),
    pytest.param(
        {"type": "string", "format": "json-pointer"},
        ['""', '"/a/0/b~1c"'],
        ['"a"', '"/a~2"'],
        id="format-json-pointer",
    ),
    pytest.param(
        {"type": "string", "format": "relative-json-pointer"},
        ['"0"', '"1/a"', '"2#"'],
        ['"/a"', '"01"'],
        id="format-relative-json-pointer",
    ),
    pytest.param(
        {"type": "integer", "minimum": -3, "maximum": 12},
        ["-3", "12", "0"],
        ["-4", "13"],
        id="integer-bounds",
    ),
    pytest.param(
        {"type": "integer", "minimum": 0.5, "exclusiveMaximum": 3.5},
        ["1", "3"],
        ["0", "4"],
        id="integer-fractional-bounds",
    ),
    pytest.param(
        {"type": "number", "exclusiveMinimum": 0, "maximum": 2.5},
        ["0.5", "2.5", "1"],
        ["0", "-0.1", "2.51"],
        id="number-bounds",
    ),
    pytest.param(
        {"type": "integer", "multipleOf": 5},
        ["0", "-10", "25"],
        ["7", "-3"],
        id="multipleOf",
    ),
    pytest.param(
        {"type": "integer", "multipleOf": 100, "minimum": 100, "maximum": 60000},
        ["100", "6400", "60000"],
        ["6451", "0", "60100"],
        id="multipleOf-listed",
    ),
    pytest.param(
        {"type": "number", "multipleOf": 4},
        ["8", "-4"],
        ["6", "4.5"],
        id="multipleOf-on-number",
    ),
    pytest.param(
        {"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 2}]},
        ["1", '"ab"'],
        ['"abc"', "null"],
        id="anyOf",
    ),
    pytest.param(
        {
            **OBJ,
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "anyOf": [{"required": ["a"]}, {"required": ["b"]}],
        },
        ['{"a": 1}', '{"b": 2}', '{"a": 1, "b": 2}'],
        ["{}"],
        id="anyOf-with-siblings",
    ),
    pytest.param(
        {
            "oneOf": [
                {
                    **OBJ,
                    "properties": {"k": {"const": "a"}, "x": {"type": "integer"}},
                    "required": ["k", "x"],
                },
                {
                    **OBJ,
                    "properties": {"k": {"const": "b"}, "y": {"type": "string"}},
                    "required": ["k", "y"],
                },
            ]
        },
        ['{"k": "a", "x": 1}', '{"k": "b", "y": "s"}'],
        ['{"k": "a", "y": "s"}', '{"k": "c", "x": 1}'],
        id="oneOf-discriminated",
    ),
    pytest.param(
        {
            "oneOf": [
                {"type": "string"},
                {"type": "integer", "maximum": 5},
                {"type": "number", "exclusiveMinimum": 5},
            ]
        },
        ['"s"', "3", "5.5", "6"],
        ["true", "4.5"],
        id="oneOf-disjoint",
    ),
    pytest.param(
        {
            "allOf": [
                {**OBJ, "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                {**OBJ, "properties": {"b": {"type": "string"}}, "required": ["b"]},
                {"properties": {"a": {"maximum": 5}}},
            ]
        },
        ['{"a": 1, "b": "x"}'],
        ['{"a": 1}', '{"a": 6, "b": "x"}'],
        id="allOf-merged",
    ),
    pytest.param({"not": {"type": "null"}}, ["1", '"x"', "[]"], ["null"], id="not-type"),
    pytest.param(
        {
            "$defs": {"p": {"type": "integer"}},
            **OBJ,
            "properties": {"a": {"$ref": "#/$defs/p", "maximum": 3}},
        },
        ['{"a": 1}'],
        ['{"a": 5}', '{"a": "x"}'],
        id="ref-with-siblings",
    ),
    pytest.param(
        {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "definitions": {"a/b": {"type": "integer"}, "c~d": {"type": "string"}},
            "anyOf": [{"$ref": "#/definitions/a~1b"}, {"$ref": "#/definitions/c~0d"}],
        },
        ["1", '"x"'],
        ["null"],
        id="ref-escaped-pointers",
    ),
    pytest.param(
        {"$defs": {"p": {"$anchor": "pos", "type": "integer", "minimum": 1}}, "$ref": "#pos"},
        ["1"],
        ["0"],
        id="ref-anchor",
    ),
    pytest.param(
        {"$id": "urn:example:root", "$defs": {"p": {"type": "boolean"}}, "$ref": "#/$defs/p"},
        ["true"],
        ["1"],
        id="ref-urn-base",
    ),
    pytest.param(
        {
            "$defs": {
                "node": {
                    **OBJ,
                    "properties": {
                        "v": {"type": "integer"},
                        "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}},
                    },
                    "required": ["v", "kids"],
                }
            },
            "$ref": "#/$defs/node",
        },
        ['{"v": 1, "kids": []}', '{"v": 1, "kids": [{"v": 2, "kids": []}]}'],
        ['{"v": 1}', '{"v": 1, "kids": [{"v": 2}]}'],
        id="recursion",
    ),
    pytest.param(
        {
            **OBJ,
            "allOf": [
                {"properties": {"a": {"type": "integer"}}},
                {"properties": {"b": {"type": "integer"}}},
            ],
            "unevaluatedProperties": False,
        },
        ['{"a": 1, "b": 2}'],
        ['{"a": 1, "c": 2}'],
        id="unevaluatedProperties-false",
    ),
    pytest.param(True, ["1", '{"a": [null]}'], [], id="true-schema"),
    pytest.param(
        {**OBJ, "properties": {"b": False}, "additionalProperties": {"type": "integer"}},
        ["{}"],
        ['{"b": 1}'],
        id="forbidden-property-not-generated-as-extra",
    ),
    pytest.param(
        {
            "type": "object",
            "properties": {
                "a": {
                    "type": "string",
                    "description": "x",
                    "title": "t",
                    "examples": ["e"],
                    "x-ui": 1,
                }
            },
        },
        ['{"a": "s"}'],
        ['{"a": 1}'],
        id="annotations",
    ),
]


@pytest.mark.parametrize(("schema", "good", "bad"), KEYWORDS)
def test_keyword_is_enforced(schema: object, good: list[str], bad: list[str]) -> None:
    _assert_agrees(schema, good, bad)


@pytest.mark.parametrize("schema", [p.values[0] for p in KEYWORDS], ids=[p.id for p in KEYWORDS])
def test_xgrammar_walks_satisfy_the_judge(schema: object) -> None:
    _assert_sound(json.dumps(schema))


# ---------------------------------------------------------------------------
# What xgrammar gets wrong on its own, kept out of the canonical form


def test_length_limited_strings_never_hold_raw_control_characters() -> None:
    constraint, decoder = _compiled(json.dumps({"type": "string", "maxLength": 5}))
    assert not decoder.accepts('"a\tb"')  # xgrammar's own maxLength lets the raw tab in
    assert "maxLength" not in constraint.value


def test_no_optional_group_quantifier_reaches_xgrammar() -> None:
    # xgrammar 0.2.8 reads "(?:a+b)?" in a pattern as also matching "a"
    _constraint, decoder = _compiled(json.dumps({"type": "string", "pattern": "^x(?:a+b)?$"}))
    assert decoder.accepts('"xab"') and decoder.accepts('"x"')
    assert not decoder.accepts('"xa"')


def test_pattern_never_emits_characters_json_must_escape() -> None:
    _constraint, decoder = _compiled(json.dumps({"type": "string", "pattern": "^[^a]+$"}))
    assert decoder.accepts('"xyz"')
    assert not decoder.accepts('"x"y"') and not decoder.accepts('"x\ny"')


@pytest.mark.parametrize(
    ("pattern", "good", "bad"),
    [
        ("^Step \\d: [a-z ]{1,20}(\\nStep \\d: [a-z ]{1,20}){0,9}$", ["Step 1: add"], ["Step"]),
        ("^(.|\\n){1,5}$", ["a", "ab cd"], ["", "abcdef"]),
        ('^(?:[^"\\\\]|\\\\.)*$', ["", "a'b"], []),
        ('^(a|\\n)(b|\\t|"|[\\r\\n])$', ["ab"], ["a", "bb"]),
    ],
)
def test_a_pattern_that_allows_characters_json_escapes_writes_its_texts_without_them(
    pattern: str, good: list[str], bad: list[str]
) -> None:
    """xgrammar cannot write an escape inside a patterned string, so the texts
    holding one are left out; the rest are still written, and only them."""
    schema = {"type": "string", "pattern": pattern}
    _assert_agrees(schema, [json.dumps(text) for text in good], [json.dumps(t) for t in bad])
    _assert_sound(json.dumps(schema), walks=40)
    _constraint, decoder = _compiled(json.dumps(schema))
    for needs_an_escape in ("Step 1: a\nStep 2: b", "a\n", "a\\b", 'a"', "a\tb"):
        assert not decoder.accepts(json.dumps(needs_an_escape))


# ---------------------------------------------------------------------------
# Strict mode refuses; best effort reports

UNENFORCEABLE = [
    pytest.param(
        {"type": "array", "uniqueItems": True, "minItems": 2},
        "uniqueItems",
        "the root",
        id="uniqueItems",
    ),
    pytest.param(
        {**OBJ, "properties": {"tags": {"type": "array", "uniqueItems": True, "minItems": 2}}},
        "uniqueItems",
        "/properties/tags",
        id="uniqueItems-nested",
    ),
    pytest.param({**OBJ, "minProperties": 2}, "minProperties", "the root", id="minProperties-open"),
    pytest.param(
        {"type": "string", "not": {"pattern": "^[0-9]{3,300}$"}}, "not", "the root", id="not"
    ),
    pytest.param(
        {"oneOf": [{"type": "string"}, {"type": "string", "format": "uuid"}]},
        "oneOf",
        "the root",
        id="oneOf-overlapping",
    ),
    pytest.param(
        {"type": "number", "multipleOf": 0.07},
        "multipleOf",
        "the root",
        id="multipleOf-fraction-inexact",  # 7 / 0.07 is 100.00000000000001
    ),
    pytest.param(
        {"type": "string", "pattern": "^a", "format": "hostname"},
        "format",
        "the root",
        id="two-regexes",
    ),
    pytest.param({"$ref": "https://example.com/s.json"}, "$ref", "the root", id="remote-ref"),
]


@pytest.mark.parametrize(("schema", "keyword", "where"), UNENFORCEABLE)
def test_strict_mode_refuses_what_cannot_be_enforced(
    schema: object, keyword: str, where: str
) -> None:
    message = _refused(schema)
    assert message.startswith(
        f"keyword '{keyword}' at {where} cannot be enforced during generation"
    )


@pytest.mark.parametrize(("schema", "keyword", "where"), UNENFORCEABLE)
def test_best_effort_compiles_and_reports(schema: object, keyword: str, where: str) -> None:
    constraint = compile_json_schema(schema, strict=False)
    assert f"{keyword} at {where}" in constraint.not_enforced
    Decoder(constraint.value)  # xgrammar takes it


def test_best_effort_drops_a_pattern_it_cannot_generate_and_refuses_an_invalid_one() -> None:
    schema = {"type": "string", "pattern": "^([a-z])\\1$"}
    constraint = compile_json_schema(schema, strict=False)
    assert constraint.not_enforced == ("pattern at the root",)
    assert "backreference" in constraint.report.not_enforced[0].note
    assert constraint.judge('"ab"') is not None and constraint.judge('"aa"') is None
    assert "backreference" in _refused(schema)
    assert "missing ')'" in _refused({"type": "string", "pattern": "(a"}, strict=False)


def test_best_effort_output_is_still_judged_by_the_whole_schema() -> None:
    constraint = compile_json_schema(
        {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}, strict=False
    )
    decoder = Decoder(constraint.value)
    assert decoder.accepts("[1, 1]")  # not enforced ...
    assert "non-unique" in constraint.judge("[1, 1]")  # ... but judged
    assert constraint.not_enforced == ("uniqueItems at the root",)


def test_judge_survives_jsonschema_quirks() -> None:
    # jsonschema 4.26 raises TypeError for additionalItems next to "items": false
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "array",
        "items": False,
        "additionalItems": {"type": "integer"},
    }
    constraint = compile_json_schema(schema)
    assert constraint.judge("[]") is None
    assert "False schema" in constraint.judge("[1]")
    assert constraint.judge("[" * 100_000 + "]" * 100_000) is not None


def test_strict_mode_reports_nothing() -> None:
    assert compile_json_schema({"type": "string"}).not_enforced == ()


def test_enum_enforces_its_siblings_so_nothing_is_refused() -> None:
    _constraint, decoder = _compiled(json.dumps({"enum": [[1, 1], [1, 2]], "uniqueItems": True}))
    assert decoder.accepts("[1,2]") and not decoder.accepts("[1,1]")


# ---------------------------------------------------------------------------
# Invalid schemas


def test_invalid_json_reports_line_and_column() -> None:
    with pytest.raises(ConstraintError) as caught:
        compile_json_schema('{\n  "type": "string",\n}')
    error = caught.value
    assert error.message.startswith("schema is not valid JSON: ")
    assert (error.line, error.column) == (3, 1)


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        pytest.param({"type": "strin"}, "invalid JSON Schema at /type: ", id="bad-type"),
        pytest.param(
            {"properties": {"a": {"minLength": -1}}},
            "invalid JSON Schema at /properties/a/minLength",
            id="negative",
        ),
        pytest.param(
            {"pattern": "("},
            "regex at /pattern: missing ')'",
            id="bad-regex",
        ),
        pytest.param(
            {"$ref": "#/$defs/missing"},
            "unresolvable $ref '#/$defs/missing' at the root",
            id="unresolvable-ref",
        ),
        pytest.param(
            {"$ref": "#nowhere"},
            "unresolvable $ref '#nowhere' at the root: no such anchor",
            id="unresolvable-anchor",
        ),
        pytest.param(
            {"$schema": 3},
            "$schema must be a string",
            id="schema-uri-not-a-string",
        ),
        pytest.param(
            '{"type": "string", "type": "integer"}',
            "schema has the key 'type' twice",
            id="duplicate-key",
        ),
        pytest.param('{"maximum": NaN}', "NaN is not a JSON number", id="nan"),
        pytest.param('{"maximum": 1e999}', "schema number 1e999 is out of range", id="infinite"),
        pytest.param("[1]", "a JSON Schema must be an object or a boolean", id="not-an-object"),
        pytest.param(
            False, "no JSON value satisfies the schema: the schema at the root is false", id="false"
        ),
        pytest.param(
            {"type": "string", "minLength": 3, "maxLength": 2},
            "minLength 3 > maxLength 2",
            id="empty-lengths",
        ),
        pytest.param(
            {**OBJ, "properties": {"a": False}, "required": ["a"]},
            "the schema at /properties/a is false",
            id="required-false",
        ),
        pytest.param(
            {"type": "string", "enum": [1, 2]},
            "no value of the enum/const at the root is valid there",
            id="enum-filtered-empty",
        ),
        pytest.param(
            {"type": "integer", "minimum": 3, "maximum": 2},
            "no integer lies in the range",
            id="empty-range",
        ),
        pytest.param(
            {"allOf": [{"type": "string"}, {"type": "integer"}]},
            "no JSON value satisfies the schema",
            id="allOf-contradiction",
        ),
        pytest.param(
            {**OBJ, "properties": {"n": {"$ref": "#"}}, "required": ["n"]},
            "the $ref recursion through the root never ends",
            id="endless-recursion",
        ),
        pytest.param(
            {
                "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
                "$ref": "#/$defs/a",
            },
            "never ends",
            id="ref-cycle",
        ),
        pytest.param(
            {
                "$defs": {
                    "pair": {
                        **OBJ,
                        "properties": {"k": {"allOf": [{"const": "a"}, {"const": "b"}]}},
                        "required": ["k"],
                    }
                },
                **OBJ,
                "properties": {"p": {"$ref": "#/$defs/pair"}},
                "required": ["p"],
            },
            "no enum/const value at /$defs/pair/properties/k satisfies the rest",
            id="ref-without-value-named-not-recursion",
        ),
        pytest.param(
            {"$ref": "#/$defs/bool", "$defs": {"bool": False}},
            "the schema at /$defs/bool is false",
            id="ref-to-false",
        ),
        pytest.param(
            {"$ref": "#/$defs/D", "$defs": {"D": {"minimum": 1, "$ref": "#/$defs/D"}}},
            "the reference at /$defs/D/$ref leads back to /$defs/D without going into the value",
            id="ref-to-itself-beside-keywords",
        ),
        pytest.param(
            {
                "items": {"$ref": "#/$defs/D"},
                "$defs": {"D": {"anyOf": [True, {"$ref": "#/$defs/D"}]}},
            },
            "the reference at /$defs/D/anyOf/1/$ref leads back to /$defs/D",
            id="ref-to-itself-in-anyOf",
        ),
        pytest.param(
            {"type": "string", "pattern": "(?<1year>\\d{4})"},
            "regex at /pattern: unsupported regex feature 'group name",
            id="bad-group-name",
        ),
        pytest.param(
            {"type": "string", "pattern": "^a\\nb$"},
            "which JSON must escape",
            id="pattern-needs-escape",
        ),
    ],
)
def test_invalid_schema_is_refused_with_its_location(schema: object, expected: str) -> None:
    assert expected in _refused(schema if isinstance(schema, (str, bool)) else json.dumps(schema))


def test_pattern_error_carries_the_offset() -> None:
    with pytest.raises(ConstraintError) as caught:
        compile_json_schema({"properties": {"a": {"pattern": "a(b(?=c))+"}}})
    assert caught.value.position == 1
    assert str(caught.value).startswith(
        "pattern at /properties/a: a group holding a lookaround, word boundary or anchor may "
        "repeat at most 8 times"
    )


# ---------------------------------------------------------------------------
# Limits


def test_a_large_schema_of_descriptions_is_compiled() -> None:
    """Generated standalone schemas (Kubernetes-style, definitions inlined) are
    mostly descriptions: half a megabyte of them is accepted."""
    text = " ".join(["the number of replicas this field sets when the controller observes it"] * 8)
    properties = {
        f"field{i}": {"type": ["string", "null"], "description": text, "maxLength": 8}
        for i in range(1000)
    }
    schema = {"type": "object", "description": text, "properties": properties}
    assert len(json.dumps(schema)) > 512 * 1024
    constraint = compile_json_schema(schema)
    assert len(constraint.value) < 128 * 1024  # the descriptions are not in the canonical form
    assert constraint.judge('{"field7": "ok", "field999": null}') is None


def test_schema_size_limit() -> None:
    big = {"description": "x" * MAX_SCHEMA_BYTES}
    assert f"at most {MAX_SCHEMA_BYTES}" in _refused(big)
    assert f"at most {MAX_SCHEMA_BYTES}" in _refused(json.dumps(big))


def test_depth_limit() -> None:
    schema: dict = {"type": "string"}
    for _ in range(MAX_DEPTH):
        schema = {"type": "array", "items": schema}
    assert f"schema nests deeper than {MAX_DEPTH} levels" in _refused(schema)
    assert f"deeper than {MAX_DEPTH}" in _refused("[" * 100_000 + "]" * 100_000)


def test_enum_and_const_size_limits() -> None:
    assert f"enum at the root holds {MAX_ENUM_VALUES + 1} values" in _refused(
        {"enum": list(range(MAX_ENUM_VALUES + 1))}
    )
    assert f"(at most {MAX_ENUM_VALUES})" in _refused({"const": [[0, 0]] * (MAX_ENUM_VALUES // 2)})
    compile_json_schema({"enum": list(range(1000))})


def test_property_count_limit() -> None:
    half = MAX_PROPERTIES // 2 + 1
    schema = {
        **OBJ,
        "properties": {
            "a": {**OBJ, "properties": {f"a{i}": {} for i in range(half)}},
            "b": {**OBJ, "properties": {f"b{i}": {} for i in range(half)}},
        },
    }
    assert f"more than {MAX_PROPERTIES} properties" in _refused(schema)


# ---------------------------------------------------------------------------
# The canonical form


def test_canonical_form_hoists_refs_and_drops_annotations() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "T",
        "definitions": {"Name": {"type": "string", "description": "d", "maxLength": 3}},
        "type": "object",
        "properties": {
            "first": {"$ref": "#/definitions/Name"},
            "last": {"$ref": "#/definitions/Name"},
        },
    }
    value = json.loads(compile_json_schema(schema).value)
    assert value["properties"] == {
        "first": {"$ref": "#/$defs/Name"},
        "last": {"$ref": "#/$defs/Name"},
    }
    assert set(value["$defs"]) == {"Name"}
    assert "description" not in json.dumps(value) and "title" not in value


def test_a_pattern_used_more_than_once_is_one_shared_definition() -> None:
    """xgrammar builds each inline copy of a negated-class pattern again
    (maxLength strings are one); a shared definition is built once, also for
    a nullable string (beside its other type). A pattern used once stays
    inline; the shared name avoids the schema's own."""
    schema = {
        "$defs": {"string_1": {"type": "string", "maxLength": 2}},
        "type": "object",
        "properties": {
            "a": {"type": "string", "maxLength": 8},
            "b": {"type": "string", "maxLength": 8},
            "c": {"type": "array", "items": {"type": "string", "maxLength": 8}},
            "once": {"type": "string", "maxLength": 5},
            "nullable": {"type": ["string", "null"], "maxLength": 8},
            "nullable_once": {"type": ["string", "null"], "maxLength": 6},
            "own": {"$ref": "#/$defs/string_1"},
        },
        "required": ["a", "b", "c", "once", "nullable", "nullable_once", "own"],
        "additionalProperties": False,
    }
    constraint, decoder = _compiled(json.dumps(schema))
    value = json.loads(constraint.value)
    properties = value["properties"]
    shared = properties["a"]["$ref"].removeprefix("#/$defs/")
    assert shared != "string_1"
    assert properties["b"] == properties["c"]["items"] == {"$ref": f"#/$defs/{shared}"}
    assert value["$defs"][shared]["pattern"].endswith("{0,8}")
    assert properties["once"]["pattern"].endswith("{0,5}")
    assert properties["nullable"] == {"anyOf": [{"$ref": f"#/$defs/{shared}"}, {"type": "null"}]}
    assert set(properties["nullable_once"]["type"]) == {"string", "null"}
    valid = (
        '{"a": "12345678", "b": "", "c": ["x"], "once": "abcde", "nullable": null,'
        ' "nullable_once": "abc", "own": "ab"}'
    )
    assert decoder.accepts(valid)
    assert decoder.accepts(valid.replace('"nullable": null', '"nullable": "12345678"'))
    assert not decoder.accepts(valid.replace('"b": ""', '"b": "123456789"'))
    assert not decoder.accepts(valid.replace('"nullable": null', '"nullable": "123456789"'))


def test_a_count_alone_leaves_items_and_properties_open() -> None:
    """Strict xgrammar closes an array or object with any keyword but no
    ``items``/``additionalProperties``: a lone ``maxItems`` or
    ``maxProperties`` must still let values in, up to the count."""
    _, items = _compiled('{"type": "array", "maxItems": 2}')
    assert items.accepts("[]") and items.accepts('[1, "a"]') and items.accepts("[{}]")
    assert not items.accepts("[1, 2, 3]")
    _, properties = _compiled('{"type": "object", "maxProperties": 2}')
    assert properties.accepts("{}") and properties.accepts('{"a": 1, "b": [true]}')
    assert not properties.accepts('{"a": 1, "b": 2, "c": 3}')
    _, tuple_ = _compiled('{"type": "array", "prefixItems": [{"type": "integer"}], "maxItems": 3}')
    assert tuple_.accepts("[1]") and not tuple_.accepts("[1, 2]")  # a tuple stays closed


def test_extra_keys_under_property_names_never_repeat_a_declared_name() -> None:
    """Beside ``propertyNames`` xgrammar no longer keeps declared names out of
    the extra keys: ``{"a": 1, "a": "x"}`` would parse as ``{"a": "x"}``."""
    schema = {
        **OBJ,
        "properties": {"a": {"type": "integer"}},
        "additionalProperties": {"type": "string"},
        "propertyNames": {"maxLength": 3},
    }
    _, decoder = _compiled(json.dumps(schema))
    assert decoder.accepts('{"a": 1}') and not decoder.accepts('{"a": 1, "a": "x"}')
    with_patterns = {
        **OBJ,
        "properties": {"MD001": {"type": "boolean"}},
        "patternProperties": {"^MD[0-9]+$": {"type": ["boolean", "object"]}},
        "additionalProperties": False,
    }
    _, decoder = _compiled(json.dumps(with_patterns))
    assert decoder.accepts('{"MD001": true}') and not decoder.accepts(
        '{"MD001": true, "MD001": {}}'
    )


@pytest.mark.parametrize(
    ("schema", "good", "bad"),
    [
        pytest.param(
            {**OBJ, "properties": {"bar": False}},
            ["{}", '{"foo": 1}', '{"foo": 1, "baz": [true]}', '{"ba": 1, "barr": 2}'],
            ['{"bar": 1}', '{"foo": 1, "bar": null}'],
            id="a-forbidden-name-beside-no-declared-one",
        ),
        pytest.param(
            {**OBJ, "required": ["id"]},
            ['{"id": 1}', '{"id": 1, "extra": [2]}'],
            ["{}", '{"extra": 2}'],
            id="an-object-that-only-requires-names-declares-none",
        ),
        pytest.param(
            {**OBJ, "not": {"required": ["bar"]}},
            ['{"foo": 1}', "{}"],
            ['{"bar": 1}'],
            id="not-required",
        ),
        pytest.param(
            {"dependentRequired": {"bar": ["foo"]}},
            ['{"foo": 1}', '{"foo": 1, "bar": 2}', '{"quux": 1}', "3"],
            ['{"bar": 2}', '{"quux": 1, "bar": 2}'],
            id="a-dependency-on-an-object-that-declares-nothing",
        ),
        pytest.param(
            {
                **OBJ,
                "properties": {"a": {"type": "integer"}, "secret": False},
                "additionalProperties": {"type": "integer"},
            },
            ['{"a": 1}', '{"a": 1, "b": 2}', '{"b": 2, "c": 3}'],
            ['{"secret": 1}', '{"a": 1, "b": "x"}'],
            id="a-forbidden-name-beside-an-additionalProperties-schema",
        ),
        pytest.param(
            {
                **OBJ,
                "properties": {"id": {"type": "integer"}},
                "propertyNames": {"pattern": "^[a-z]+$"},
                "additionalProperties": {"type": "string"},
            },
            ['{"id": 1}', '{"id": 1, "name": "x"}', '{"name": "x", "tag": "y"}'],
            ['{"id": 1, "Name": "x"}', '{"id": 1, "id": "x"}', '{"name": 1}'],
            id="propertyNames-beside-declared-names",
        ),
    ],
)
def test_open_objects_keep_their_undeclared_names_beside_excluded_ones(
    schema: dict, good: list[str], bad: list[str]
) -> None:
    """Where a declared name is forbidden (``false``, a dependency's "absent"
    branch, ``not: {required}``) or ``propertyNames`` applies, the undeclared
    names are written as ``propertyNames`` that leave out the declared and
    forbidden ones, so the object stays open; it used to be closed (to ``{}``
    for an object that declared nothing else), losing every other name."""
    _assert_agrees(schema, good, bad)
    _assert_sound(json.dumps(schema))
    assert not compile_json_schema(schema).report.subsets
    best_effort = compile_json_schema(schema, strict=False)  # the same, nothing dropped
    assert best_effort.value == compile_json_schema(schema).value
    assert not best_effort.report.not_enforced
    _, decoder = _compiled(json.dumps(schema))
    for name in schema.get("properties", {}):  # declared names are never extra keys
        assert not decoder.accepts(f'{{"{name}": 1, "{name}": 1}}')


def test_names_only_required_are_written_in_the_order_the_schema_lists_them() -> None:
    """xgrammar writes members in the order it is given; a model reads the schema
    author's order (``name`` before ``age``) more naturally than the alphabet."""
    schema = {**OBJ, "allOf": [{"required": ["name", "age"]}, {"required": ["zip", "age"]}]}
    _assert_agrees(schema, ['{"name": 1, "age": 2, "zip": 3}'], ['{"name": 1, "age": 2}'])
    _, decoder = _compiled(json.dumps(schema))
    assert not decoder.accepts('{"age": 2, "name": 1, "zip": 3}')


@pytest.mark.parametrize(
    "schema",
    [
        pytest.param(
            {**OBJ, "properties": {"a": False}, "propertyNames": {"maxLength": 40}},
            id="names-of-bounded-length",
        ),
        pytest.param(
            {**OBJ, "properties": {f"p{i}": False for i in range(MAX_EXCLUDED_NAMES + 1)}},
            id="too-many-names-to-leave-out",
        ),
    ],
)
def test_names_too_costly_to_leave_out_close_the_object_as_a_subset(schema: dict) -> None:
    """Leaving a name out of a length-bounded ``propertyNames`` copies a bounded
    repeat of every character per name (seconds of xgrammar compile on Llama 3's
    vocabulary for eight), as does a long list of names: the object then takes
    no undeclared name, reported as a subset."""
    constraint = compile_json_schema(schema)
    assert json.loads(constraint.value)["additionalProperties"] is False
    assert [s.note for s in constraint.report.subsets if s.keyword == "properties"] == [
        "no undeclared name"
    ]
    _assert_sound(json.dumps(schema))


def test_every_format_a_draft_defines_or_the_judge_checks_is_enforced() -> None:
    """Users mean those as assertions, so each has a regex; other names are annotations."""
    defined = set(JUDGED_FORMATS).union(*(draft.formats for draft in DRAFTS))
    assert defined <= ecma_regex.FORMATS, defined - ecma_regex.FORMATS


def test_open_pattern_properties_write_values_that_fit_either_reading() -> None:
    """Whether an extra name misses every pattern is a complement xgrammar
    cannot write, so its value must fit additionalProperties and each
    pattern's schema: a subset, and no extra name where none fits all."""
    schema = {
        **OBJ,
        "properties": {"MD001": {"type": "boolean"}},
        "patternProperties": {"^MD[0-9]+$": {"type": ["boolean", "object"]}},
        "additionalProperties": {"type": ["boolean", "integer"]},
    }
    constraint, decoder = _compiled(json.dumps(schema))
    for valid_but_left_out in ('{"x": 1}', '{"MD002": {}}'):
        assert constraint.judge(valid_but_left_out) is None
        assert not decoder.accepts(valid_but_left_out)
    _assert_sound(json.dumps(schema))
    conflicting = {**OBJ, "patternProperties": {"^x": {"type": "integer"}, "y": {"type": "string"}}}
    constraint, decoder = _compiled(json.dumps(conflicting))
    assert constraint.judge('{"x": 1}') is None and not decoder.accepts('{"x": 1}')
    assert decoder.accepts("{}")


def test_each_order_of_one_property_set_keeps_its_own_order() -> None:
    """xgrammar 0.2.8 builds one rule for object schemas equal once their keys
    are sorted, so each branch below wrote and took only the first's order."""
    orders = [["x", "y", "z"], ["y", "x", "z"], ["z", "y", "x"], ["x", "z", "y"]]
    branches = [
        {
            **OBJ,
            "properties": {
                "t": {"const": str(i)},
                "p": {**OBJ, "properties": {k: {"type": "integer"} for k in order}},
            },
            "required": ["t", "p"],
            "additionalProperties": False,
        }
        for i, order in enumerate(orders)
    ]
    constraint, decoder = _compiled(json.dumps({"anyOf": branches}))
    for i, order in enumerate(orders):
        text = json.dumps({"t": str(i), "p": {k: 1 for k in order}})
        assert decoder.accepts(text) and constraint.judge(text) is None, text


def test_source_language_and_kind() -> None:
    constraint = compile_json_schema('{"type": "boolean"}')
    assert (constraint.kind, constraint.source_language) == ("json_schema", "json_schema")


def test_schema_without_type_allows_every_kind_its_keywords_constrain_their_own() -> None:
    """JSON Schema's reading: object keywords say nothing about a number or a string."""
    constraint, decoder = _compiled(
        json.dumps({"properties": {"a": {"type": "integer"}}, "required": ["a"], "maxLength": 2})
    )
    for text in ('{"a": 1}', "1", "null", '"xy"', "[true]"):
        assert decoder.accepts(text) and constraint.judge(text) is None, text
    for text in ('{"b": 1}', '{"a": "x"}', '"xyz"'):
        assert not decoder.accepts(text), text


@pytest.mark.parametrize(
    "schema",
    [
        {"type": ["array", "object"]},
        {"type": ["object", "string"], "minLength": 2},
        {"maxItems": 2},
    ],
    ids=["with-array", "with-string", "untyped"],
)
def test_an_object_without_keywords_stays_open_beside_another_kinds_keywords(schema: dict) -> None:
    """Strict xgrammar closes an object beside any other keyword ("items" for the array)."""
    constraint, decoder = _compiled(json.dumps(schema))
    assert constraint.judge('{"foo": 123}') is None and decoder.accepts('{"foo": 123}')


def test_pattern_properties_beside_another_schemas_additional_properties_take_them_too() -> None:
    """A name ^a matches is undeclared in the allOf's schema, which asks its
    additionalProperties of it: false leaves no such name, a schema holds its value."""
    closed = {"patternProperties": {"^a": {}}, "allOf": [{"additionalProperties": False}]}
    constraint, decoder = _compiled(json.dumps(closed))
    assert constraint.judge('{"ab": 1}') is not None and not decoder.accepts('{"ab": 1}')
    assert decoder.accepts("{}")
    bounded = {
        "type": "object",
        "patternProperties": {"^a": {"type": "integer"}},
        "allOf": [{"additionalProperties": {"type": "integer", "minimum": 5}}],
    }
    constraint, decoder = _compiled(json.dumps(bounded))
    assert constraint.judge('{"ab": 1}') is not None and not decoder.accepts('{"ab": 1}')
    assert constraint.judge('{"ab": 7}') is None and decoder.accepts('{"ab": 7}')


@pytest.mark.parametrize(
    ("names", "good", "bad"),
    [
        ({"$ref": "#/$defs/D"}, "{}", '{"ab": 1}'),  # D: arrays, so no name at all
        ({"anyOf": [{"type": "integer"}, {"pattern": "^a"}]}, '{"ab": 1}', '{"1": 1}'),
        ({"enum": [1, "ab"]}, '{"ab": 1}', '{"1": 1}'),
    ],
    ids=["ref-to-non-strings", "anyOf", "enum-with-a-number"],
)
def test_property_names_are_the_strings_their_schema_allows(
    names: dict, good: str, bad: str
) -> None:
    schema = {"type": "object", "propertyNames": names, "$defs": {"D": {"type": "array"}}}
    constraint, decoder = _compiled(json.dumps(schema))
    assert constraint.judge(good) is None and decoder.accepts(good)
    assert constraint.judge(bad) is not None and not decoder.accepts(bad)
    _assert_sound(json.dumps(schema), walks=20)


def test_declared_names_pass_property_names_that_merged_to_no_string_at_all() -> None:
    """The root allows names a and b, the branch's D allows no string (a oneOf of {} and
    strings leaves non-strings): merged, nothing is left, and the required c with it."""
    schema = {
        "propertyNames": {"enum": ["a", "b"]},
        "required": ["c"],
        "oneOf": [
            {"type": "object", "propertyNames": {"$ref": "#/$defs/D"}},
            {"const": None},
        ],
        "$defs": {"D": {"oneOf": [{}, {"type": "string"}]}},
    }
    constraint, decoder = _compiled(json.dumps(schema))
    assert constraint.judge('{"c": 1}') is not None and not decoder.accepts('{"c": 1}')
    assert constraint.judge("null") is None and decoder.accepts("null")


@pytest.mark.parametrize("typed", [True, False])
def test_unevaluated_items_apply_to_the_items_a_unique_array_narrows(typed: bool) -> None:
    """Without items, uniqueItems narrows them to kept-apart scalars; no user schema
    evaluated them, so unevaluatedItems: false still leaves only []."""
    schema = {
        "uniqueItems": True,
        "unevaluatedItems": False,
        **({"type": "array"} if typed else {}),
    }
    constraint, decoder = _compiled(json.dumps(schema), whole=True)
    assert decoder.accepts("[]")
    assert constraint.judge('["a"]') is not None and not decoder.accepts('["a"]')


@pytest.mark.parametrize(
    ("keywords", "good", "bad"),
    [
        ({"contains": {"type": "integer"}}, "[1]", "[]"),
        ({"unevaluatedProperties": False}, "{}", '{"a": 1}'),
    ],
    ids=["contains", "unevaluatedProperties"],
)
def test_keywords_beside_a_ref_to_a_union_reach_every_branch(
    keywords: dict, good: str, bad: str
) -> None:
    """The $ref is followed before the union is distributed (it was applied to the
    union node itself, where a union carries nothing else, and lost)."""
    union = {"anyOf": [{"type": "string"}, {"type": "object"}, {"type": "array"}]}
    schema = {"$ref": "#/$defs/D", **keywords, "$defs": {"D": union}}
    constraint, decoder = _compiled(json.dumps(schema))
    assert constraint.judge(good) is None and decoder.accepts(good)
    assert constraint.judge(bad) is not None and not decoder.accepts(bad)


def test_judge_reasons() -> None:
    constraint = compile_json_schema({**OBJ, "properties": {"a": {"type": "integer"}}})
    assert constraint.judge('{"a": "x"}') == "/a: 'x' is not of type 'integer'"
    assert constraint.judge("{").startswith("not JSON: ")
    assert constraint.judge("NaN").startswith("not JSON: ")


# ---------------------------------------------------------------------------
# ECMA-262 patterns


@pytest.mark.parametrize(
    ("pattern", "matching", "other"),
    [
        ("^[a-z]+$", ["abc"], ["ab1", ""]),
        ("colou?r", ["my colour", "color"], ["colr"]),
        ("^(?:a|b)*c{2,3}$", ["abcc", "ccc"], ["cccc", "abc"]),
        ("^[\\^a-]+$", ["^a-"], ["b"]),
        ("^.$", ["x", "é"], ["\r", "\u2028", "xy"]),
        ("^\\d+$", ["123"], ["١٢٣", "12a"]),
        ("^\\w+$", ["a_1"], ["é"]),
        ("^\\s$", [" ", "\u3000"], ["\u001c", "\u0085"]),
        ("^\\S$", ["a"], [" ", "\u0085", "\ufeff"]),
        ("^[^\\d]$", ["a"], ["5", "٣"]),
        ("^\\x41\\u00e9$", ["Aé"], ["A"]),
        ("^\\/\\.\\-$", ["/.-"], ["/x-"]),
        ("a{2}b{1,}", ["xaab"], ["ab"]),
        ("^a{,3}$", None, None),
    ],
)
def test_pattern_meaning(pattern: str, matching: list[str] | None, other: list[str] | None) -> None:
    """Generated strings are matched by both ECMA-262 and Python readings of the pattern."""
    if matching is None:
        with pytest.raises(ecma_regex.PatternError):
            ecma_regex.parse_pattern(pattern)
        return
    decoder = Decoder(
        json.dumps(
            {"type": "string", "pattern": ecma_regex.to_xgrammar(ecma_regex.parse_pattern(pattern))}
        )
    )
    for text in matching:
        assert re.search(pattern, text) and decoder.accepts(layout(text)), text
    for text in other:
        assert not decoder.accepts(layout(text)), text


@pytest.mark.parametrize(
    ("pattern", "matching", "other"),
    [
        ("^\\p{L}+$", ["abc", "Ωé中"], ["a1", "a b", ""]),
        ("^[\\p{L} .'-]+$", ["Anne-Marie O'Neil", "Zoë"], ["R2-D2"]),
        ("^\\p{Lu}\\p{Ll}*$", ["Élan", "A"], ["élan", "AB"]),
        ("^\\P{L}+$", ["12 !"], ["a", "1é"]),
        ("^[^\\p{N}\\s]+$", ["abc"], ["a1", "a b", "٣"]),
        ("^\\p{Script=Greek}{2}$", ["αβ"], ["ab", "αb"]),
        ("^\\p{gc=Nd}+$", ["12", "٣"], ["a"]),
    ],
)
def test_unicode_property_escapes(pattern: str, matching: list[str], other: list[str]) -> None:
    """As the judge reads them (the regex package), with ECMA-262's spellings."""
    constraint, decoder = _compiled(json.dumps({"type": "string", "pattern": pattern}))
    for text in matching:
        assert constraint.judge(layout(text)) is None and decoder.accepts(layout(text)), text
    for text in other:
        assert constraint.judge(layout(text)) is not None, text
        assert not decoder.accepts(layout(text)), text


@pytest.mark.parametrize(
    ("pattern", "matching", "other"),
    [
        ("(?i)^[a-z]+$", ["abc", "ABC", "aBc"], ["a1", ""]),
        ("(?i)^(true|false)$", ["TRUE", "False"], ["yes"]),
        ("^(?i:ab)c$", ["ABc", "abc"], ["ABC"]),
        ("(?i)^a(?-i:b)$", ["Ab", "ab"], ["aB"]),
        ("(?i)^[^a-z]$", ["1", "é"], ["a", "A", "\u0131"]),  # dotless i: upper-case I
        ("(?i)^k$", ["k", "K", "\u212a"], ["x"]),  # the Kelvin sign folds to k
        ("(?s)^a.b$", ["axb"], ["ab"]),
        ("(?m)^ab$", ["ab"], ["abc"]),
        ("^(?<year>\\d{4})-(?<month>0[1-9]|1[0-2])$", ["2024-05"], ["2024-13", "24-05"]),
        ("^(?P<id>[a-z]+)-\\d+$", ["ab-1"], ["ab-", "AB-1"]),
        ("\\bcat\\b", ["cat", "a cat!", "cat-1"], ["cats", "bobcat", "caté"]),
        ("^[A-Z]{2}\\b", ["AB", "AB-12", "AB 1"], ["ABC", "AB_"]),
        ("foo\\B", ["foox"], ["foo", "foo."]),
        # Pydantic's Decimal: a ^ inside a lookahead where the text starts
        ("^(?!^[-+.]*$)[+-]?0*\\d*\\.?\\d*$", ["1.5", "-0.25", "7"], ["-", "", "+.", "1e3"]),
    ],
)
def test_python_inline_flags(pattern: str, matching: list[str], other: list[str]) -> None:
    """Not ECMA-262, but written for Python validators, which read them: under
    (?i) a literal or class also generates the case partners both Python
    engines match, and a negated class leaves out what case folding excludes."""
    constraint, decoder = _compiled(json.dumps({"type": "string", "pattern": pattern}))
    for text in matching:
        assert constraint.judge(layout(text)) is None and decoder.accepts(layout(text)), text
    for text in other:
        assert not decoder.accepts(layout(text)), text
    _assert_sound(json.dumps({"type": "string", "pattern": pattern}), walks=30)


@pytest.mark.parametrize(
    ("pattern", "message", "position"),
    [
        ("(a(?=b))*", "may repeat at most 8 times", 0),
        ("(a|(?=b)){9}", "may repeat at most 8 times", 0),
        ("^a(?=b)b(?<=ab)c", "may look back past a lookahead", 8),
        ("(?<1>a)", "group name (?<name>...)", 0),
        ("(?P<n>a)(?P=n)", "backreference (?P=name)", 8),
        ("(?P>n)", "Python-only group", 0),
        ("(?x)a", "unsupported regex flag 'x'", 0),
        ("(?i)\\p{Lu}", "a Unicode property under (?i)", 4),
        ("a\\1", "backreference", 1),
        ("(?=(\\bword))", "unsupported regex feature 'word boundary", 4),
        ("\\p{Latin}", "a script needs its key: \\p{Script=Latin}", 0),
        ("\\p{letter}", "unknown Unicode property 'letter'", 0),
        ("a\\p{L", "written \\p{Name}", 1),
        ("\\cA", "control escape", 0),
        ("\\A", "unknown escape '\\A'", 0),
        ("[]", "'[]' and '[^]'", 0),
        ("[\\d-z]", "a class escape cannot bound a range", 1),
        ("[z-a]", "range out of order", 1),
        ("a**", "multiple quantifiers", 2),
        ("*a", "nothing to repeat", 0),
        ("a{,3}", "'{,n}' is a quantifier in Python", 1),
        ("x{2000}", "repetition count above", 1),
        ("(a", "missing ')'", 0),
        ("a)", "unmatched ')'", 1),
        ("a^b", "no text satisfies the anchors inside the pattern", 0),
        ("a$b|c^d", "no text satisfies the anchors inside the pattern", 0),
        ("(?=a^)", "anchor '^' inside a lookaround", 4),
        ("(a|b(?=c)){4}(d(?=e)|f){3}", "more than 64 alternatives", 13),
        ("😀+", "quantified character beyond U+FFFF", 0),
        ("\\ud83d", "surrogate escapes", 0),
        ('"', "which JSON must escape", 0),
        ("a\\01", "octal escapes", 1),
    ],
)
def test_refused_patterns(pattern: str, message: str, position: int) -> None:
    with pytest.raises(ecma_regex.PatternError) as caught:
        ecma_regex.parse_pattern(pattern)
    assert message in caught.value.message
    assert caught.value.position == position


@given(st.data())
@SETTINGS
def test_restrict_length_keeps_exact_lengths_when_one_part_varies(data: st.DataObject) -> None:
    prefix = data.draw(st.text("ab", max_size=3))
    low = data.draw(st.integers(0, 6))
    high = data.draw(st.one_of(st.none(), st.integers(low, 12)))
    node = ecma_regex.parse_pattern(f"^{re.escape(prefix)}x*$")
    bounded = ecma_regex.restrict_length(node, low, high)
    possible = [n for n in range(len(prefix), 20) if n >= low and (high is None or n <= high)]
    if not possible:
        assert bounded is None
        return
    decoder = Decoder(json.dumps({"type": "string", "pattern": ecma_regex.to_xgrammar(bounded)}))
    for length in range(len(prefix), 20):
        text = prefix + "x" * (length - len(prefix))
        assert decoder.accepts(layout(text)) == (length in possible), (length, low, high)


def _regexes() -> st.SearchStrategy[ecma_regex.Node]:
    """Regex trees over a few characters (some beyond U+FFFF), to compare with Python's re."""
    chars = st.sets(st.sampled_from("ab.-{[^é中😀"), min_size=1, max_size=3).map(
        lambda s: ecma_regex.Chars(tuple(sorted((ord(c), ord(c)) for c in s)))
    )
    return st.recursive(
        chars,
        lambda inner: st.one_of(
            st.lists(inner, min_size=1, max_size=3).map(lambda xs: ecma_regex.Seq(tuple(xs))),
            st.lists(inner, min_size=2, max_size=3).map(lambda xs: ecma_regex.Alt(tuple(xs))),
            st.tuples(inner, st.integers(0, 2), st.sampled_from([None, 0, 1, 3])).map(
                lambda t: ecma_regex.Repeat(t[0], t[1], None if t[2] is None else t[1] + t[2])
            ),
        ),
        max_leaves=6,
    )


def _python_regex(node: ecma_regex.Node) -> str:
    if isinstance(node, ecma_regex.Chars):
        return "[" + "".join(re.escape(chr(low)) for low, _ in node.ranges) + "]"
    if isinstance(node, ecma_regex.Seq):
        return "".join(f"(?:{_python_regex(item)})" for item in node.items)
    if isinstance(node, ecma_regex.Alt):
        return "(?:" + "|".join(_python_regex(option) for option in node.options) + ")"
    high = "" if node.high is None else node.high
    return f"(?:{_python_regex(node.item)}){{{node.low},{high}}}"


@given(_regexes(), st.randoms(use_true_random=False))
@settings(max_examples=60, deadline=None)
def test_emitted_regexes_mean_in_xgrammar_what_they_mean_in_python(node, rng) -> None:
    """Walks through xgrammar's grammar for the emitted pattern are full matches in Python.

    This is what caught xgrammar reading ``(?:a+b)?`` as also matching ``a``
    and mis-masking classes that span U+FFFF/U+10000.
    """
    schema = {
        "type": "object",
        "properties": {"s": {"type": "string", "pattern": ecma_regex.to_xgrammar(node)}},
        "required": ["s"],
    }
    decoder = Decoder(json.dumps(schema))
    python = re.compile(_python_regex(node))
    for text in samples(decoder, 8, seed=rng.randint(0, 10**6)):
        assert python.fullmatch(json.loads(text)["s"]), (ecma_regex.to_xgrammar(node), text)


@given(_regexes(), st.integers(0, 4), st.integers(0, 8), st.randoms(use_true_random=False))
@settings(max_examples=60, deadline=None)
def test_length_restricted_regexes_match_within_the_bounds(node, low, extra, rng) -> None:
    """Whatever restrict_length keeps is a full match of the original, of an allowed length."""
    high = low + extra
    bounded = ecma_regex.restrict_length(node, low, high)
    if bounded is None:
        return
    schema = {"type": "string", "pattern": ecma_regex.to_xgrammar(bounded)}
    python = re.compile(_python_regex(node))
    for text in samples(Decoder(json.dumps(schema)), 8, seed=rng.randint(0, 10**6)):
        value = json.loads(text)
        assert python.fullmatch(value) and low <= len(value) <= high, (schema, value)


@pytest.mark.parametrize(
    "pattern",
    [
        "\\bcat\\b",
        "^\\w+\\b.{0,3}$",
        "^.{0,2}\\B-\\B",
        "\\b[0-9]{2,4}\\b",
        "x\\b",
        "^(\\b\\w+\\b\\s?)+$",
        "^(?:\\b[a-z]+\\b,? ?)+$",
        "-(\\b\\w+\\b\\s?)+",
        "^(\\b[a-z]{1,20}\\b ?){2,}$",
    ],
)
def test_word_boundaries_generate_only_matches(pattern: str) -> None:
    """Walks through the grammar are matches for the judge (Python's Unicode \\w)."""
    _assert_sound(json.dumps({"type": "string", "pattern": pattern}), walks=40)


ZOD_DURATION = (  # zod's z.string().duration(): a fraction only in the last part
    "^[-+]?P(?!$)(?:(?:[-+]?\\d+Y)|(?:[-+]?\\d+[.,]\\d+Y$))?(?:(?:[-+]?\\d+M)|"
    "(?:[-+]?\\d+[.,]\\d+M$))?(?:(?:[-+]?\\d+W)|(?:[-+]?\\d+[.,]\\d+W$))?(?:(?:[-+]?\\d+D)|"
    "(?:[-+]?\\d+[.,]\\d+D$))?(?:T(?=[\\d+-])(?:(?:[-+]?\\d+H)|(?:[-+]?\\d+[.,]\\d+H$))?"
    "(?:(?:[-+]?\\d+M)|(?:[-+]?\\d+[.,]\\d+M$))?(?:[-+]?\\d+(?:[.,]\\d+)?S)?)??$"
)


@pytest.mark.parametrize(
    ("pattern", "matching", "other"),
    [
        (
            "^P(?!$)(\\d+Y)?(\\d+M)?(\\d+W)?(\\d+D)?(T(?=\\d)(\\d+H)?(\\d+M)?(\\d+S)?)?$",
            ["P1Y", "PT1S", "P1DT2H"],
            ["P", "PT", "P1DT", "P1Y1"],
        ),
        (ZOD_DURATION, ["P1Y", "P1.5Y", "P1DT2H3M4.5S", "-P1Y2M", "P1Y2.5M"], ["P1.5Y2M", "PT"]),
        (
            "^((25[0-5]|(2[0-4]|1\\d|[1-9]|)\\d)\\.?\\b){4}$",  # IPv4, from StackOverflow
            ["1.2.3.4", "255.255.0.10"],
            ["1.2.3", "256.1.1.1", "1.2.3.4.", "1234", "1.2.34"],
        ),
        ("^(?:(?=.*\\d)[a-z\\d]{6,})$", ["abc123", "123456"], ["abcdef", "ab1"]),
        ("^(?:(?=\\d)\\d{3}|[a-z]+)$", ["123", "abc"], ["12", "1a"]),
        ("(^|,)x(,|$)", ["x", "a,x", "x,b"], ["ax", "xa"]),
        ("^a(b$|c)d?$", ["ab", "ac", "acd"], ["abd", "a"]),
        ("^(?:[a-z]+$|\\d+)-?", ["abc", "12", "12-x"], ["ab-"]),
        ("^a(?=b|$)|c", ["a", "ab", "xc"], ["ax"]),
        ("^((?!hede).)*$", ["", "hed", "ede h"], ["hede", "xhedex"]),  # a tempered token
        (  # a domain whose labels neither start nor end with '-': marks in each copy
            "^(?!-)[a-z0-9-]{1,63}(?<!-)(\\.(?!-)[a-z0-9-]{1,63}(?<!-))*$",
            ["example.com", "a-b.c", "a"],
            ["-a.com", "a.-b", "a-.b", "a..b"],
        ),
    ],
)
def test_marks_inside_groups(pattern: str, matching: list[str], other: list[str]) -> None:
    """Lookarounds, word boundaries, ``^`` and ``$`` inside groups: each way
    through the groups is a pattern of its own (``marked_groups``)."""
    schema = {"type": "string", "pattern": pattern}
    _assert_agrees(schema, [layout(text) for text in matching], [layout(t) for t in other])
    _assert_sound(json.dumps(schema), walks=30)


@pytest.mark.parametrize(
    ("pattern", "matching", "other"),
    [
        (  # StackOverflow's email regex: at most 64 characters before the @
            "^(?=.{1,64}@)[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*@[^-][A-Za-z0-9-]+"
            "(\\.[A-Za-z0-9-]+)*(\\.[A-Za-z]{2,})$",
            ["jane.doe@example.com", "a@bc.io"],
            ["@example.com", "a" * 65 + "@example.com", "jane@-x.com"],
        ),
        (
            "^(?=[^@]{1,64}@)[^@\\s]+@[^@\\s]+\\.[^@\\s]+$",
            ["x@y.z", "a" * 64 + "@y.z"],
            ["a" * 65 + "@y.z", "x@y"],
        ),
        ("^(?=.{3,5}-)[a-z]+-[0-9]+$", ["abc-1", "abcde-12"], ["ab-1", "abcdef-1"]),
        (  # zod's hostname: 253 characters, or 254 with a final dot
            "^(?=.{1,253}\\.?$)[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?"
            "(?:\\.[a-zA-Z0-9](?:[-0-9a-zA-Z]{0,61}[0-9a-zA-Z])?)*\\.?$",
            ["example.com", "example.com.", "a"],
            ["-a.com", "a..b", "ex_ample.com"],
        ),
        ("^(?=.{2,4}x?$)[a-z]+$", ["ab", "abcd", "abcdx"], ["a", "abcde", "abcdex"]),
    ],
)
def test_a_lookahead_that_bounds_the_text_before_a_character(
    pattern: str, matching: list[str], other: list[str]
) -> None:
    """``(?=.{1,64}@)`` holds exactly where the part before the first ``@`` is
    1 to 64 characters long, ``(?=.{1,253}\\.?$)`` where the text is 1 to 253
    characters long or 254 ending with a dot: lengths bounded on the tree (a
    subset where several parts vary), not with automata that would pass their
    bounds."""
    schema = {"type": "string", "pattern": pattern}
    _assert_agrees(schema, [layout(text) for text in matching], [layout(t) for t in other])
    _assert_sound(json.dumps(schema), walks=30)


@pytest.mark.parametrize(
    ("schema", "matching", "other"),
    [
        (  # Kubernetes' object name: the length folds into the group as {0,251}
            {"pattern": "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", "maxLength": 253},
            ["a", "4fi", "a" * 253, "a-b.c"],
            ["4fi-", "71f.", "a" * 254, "-a"],
        ),
        ({"pattern": "^a(?:b{0,129}c)?$"}, ["a", "abc", "a" + "b" * 129 + "c"], ["abb", "ab"]),
        ({"pattern": "^a(?:b{0,129}c|d?)$"}, ["a", "ad", "abbc"], ["abb"]),
        ({"pattern": "^a(?:b{300,}c)?d$"}, ["ad", "a" + "b" * 300 + "cd"], ["abbd", "abd"]),
        ({"pattern": "^a*c{0,145}$"}, ["aac", "c" * 145, ""], ["acaa", "ca", "c" * 146]),
        ({"pattern": "^[ab]+c{1,200}b?$"}, ["acb", "bbc"], ["ab", "acbb", "acab"]),
        ({"pattern": "^[a-z]+ .{0,500}$"}, ["ab cd", "ab " + "x" * 500], ["ab", "ab " + "x" * 501]),
    ],
)
def test_large_counts_where_xgrammar_miscounts(
    schema: dict, matching: list[str], other: list[str]
) -> None:
    """xgrammar counts past 128 at run time inside a JSON string's pattern, and
    there lets the text end in the middle of an optional group (``abb`` for
    ``a(?:b{0,129}c)?``) or go back into an unbounded repeat before the count
    (``acaa`` for ``a*c{0,145}``): such counts are written in parts of at most
    128 (``regex_emit.COUNT_LIMIT``)."""
    strings = {"type": "string", **schema}
    _assert_agrees(strings, [layout(text) for text in matching], [layout(t) for t in other])


@pytest.mark.parametrize("seed", range(3))
def test_random_marks_inside_groups_agree_with_the_judge(seed: int) -> None:
    """Random groups of atoms and marks: on ASCII texts xgrammar accepts exactly
    what the judge's ``regex`` finds (but an empty text for ``\\B``, which
    ``re`` refuses and the compiler follows); on others never more."""
    rng = random.Random(seed)
    compiled = matched = 0
    for _ in range(120):
        pattern = rng.choice(["", "^"]) + marked_pattern(rng) + rng.choice(["", "$"])
        texts = marked_texts(rng)
        judge = functools.partial(regex.search, pattern)
        try:
            constraint = compile_json_schema({"type": "string", "pattern": pattern})
        except ConstraintError as error:
            if "no text satisfies" in error.message:
                assert not any(judge(t) for t in texts if t or "\\B" not in pattern), pattern
            else:
                why = ("not supported", "alternatives", "may repeat")
                assert any(reason in error.message for reason in why), error
            continue
        compiled += 1
        decoder = Decoder(constraint.value)
        for text in texts:
            accepted, found = decoder.accepts(json.dumps(text)), bool(judge(text))
            assert found or not accepted, (pattern, text)
            if text.isascii() and (text or "\\B" not in pattern):
                assert accepted == found, (pattern, text)
            matched += accepted
    assert compiled > 65 and matched > 200, (compiled, matched)


@pytest.mark.parametrize("max_length", [12, 24, 40, 64])
@pytest.mark.parametrize("name", ["uri", "uri-reference", "iri", "email"])
def test_a_short_max_length_beside_a_format_is_folded_in(name: str, max_length: int) -> None:
    """Not refused: the length is shared between the format's parts (optional ones,
    such as a URI's query, left out where the shares would be too small)."""
    schema = json.dumps({"type": "string", "format": name, "maxLength": max_length})
    constraint, _ = _compiled(schema)
    assert constraint.report.not_enforced == ()
    assert [entry.keyword for entry in constraint.report.subsets] == ["maxLength"]
    _assert_sound(schema, walks=30)


@pytest.mark.parametrize(
    ("pattern", "shared"), [("^[a-z]+$", False), ("^ab[0-9]*c$", False), ("^[a-z]+-[0-9]+$", True)]
)
def test_a_length_shared_between_parts_of_a_pattern_is_reported_as_a_subset(
    pattern: str, shared: bool
) -> None:
    """Exact where one part varies; where several do, the report says so."""
    constraint, _ = _compiled(json.dumps({"type": "string", "pattern": pattern, "maxLength": 6}))
    assert bool(constraint.report.subsets) == shared


# ---------------------------------------------------------------------------
# Property-based: valid instances accepted, invalid mutations rejected


def _keyword_schemas() -> list[object]:
    return [
        p.values[0]
        for p in KEYWORDS
        if p.values[0] is not True and "pattern" not in json.dumps(p.values[0])
    ]


@pytest.mark.parametrize(
    "schema",
    _keyword_schemas(),
    ids=[
        p.id
        for p in KEYWORDS
        if p.values[0] is not True and "pattern" not in json.dumps(p.values[0])
    ],
)
@given(data=st.data())
@SETTINGS
def test_valid_instances_are_accepted(schema: object, data: st.DataObject) -> None:
    constraint, decoder = _compiled(json.dumps(schema))
    text = data.draw(instance_texts(schema))
    assume(constraint.judge(text) is None)  # the writer is loose around anyOf/allOf
    assert decoder.accepts(text), (text, constraint.value)


def _mutated(value: object, choice: int) -> object:
    """A small change somewhere in the value, picked by ``choice``."""
    spots: list[tuple[object, object]] = []

    def visit(node: object) -> None:
        if isinstance(node, dict):
            spots.extend((node, key) for key in node)
            spots.append((node, None))
            for child in node.values():
                visit(child)
        elif isinstance(node, list):
            spots.extend((node, index) for index in range(len(node)))
            spots.append((node, None))
            for child in node:
                visit(child)

    root = [value]
    visit(root)
    parent, key = spots[choice % len(spots)]
    if key is None:
        if isinstance(parent, dict):
            parent["zz_extra"] = 1
        else:
            parent.append("extra")
    else:
        old = parent[key]
        replacement = {str: 12345, bool: "true", type(None): 0, int: "x", float: [1]}
        parent[key] = replacement.get(type(old), "changed") if choice % 3 else None
    return root[0]


def _corpus(refused: bool) -> list[Path]:
    return sorted(p for p in CORPUS.glob("*.json") if p.with_suffix(".refused").exists() == refused)


def _corpus_written() -> list[Path]:
    """Accepted corpus schemas inside the instance writer's subset, less those with
    ``contains``, enforced as a subset (the matching items first), and with lookarounds,
    whose lengths may be (``ecma_regex._looked_ahead``): the writer does not know those
    subsets (all are walked at random)."""
    return [
        p
        for p in _corpus(refused=False)
        if writes(json.loads(p.read_text()))
        and not re.search(r'"contains"|\(\?<?[=!]', p.read_text())
    ]


@pytest.mark.parametrize("path", _corpus_written(), ids=lambda p: p.stem)
@given(data=st.data())
@SETTINGS
def test_corpus_instances_and_mutations(path: Path, data: st.DataObject) -> None:
    constraint, decoder = _compiled(path.read_text(), whole=True)
    text = data.draw(instance_texts(json.loads(path.read_text())))
    assume(constraint.judge(text) is None)
    assert decoder.accepts(text), (text, constraint.value)
    mutated = layout(_mutated(json.loads(text), data.draw(st.integers(0, 10_000))))
    if constraint.judge(mutated) is not None:
        assert not decoder.accepts(mutated), mutated


# ---------------------------------------------------------------------------
# Corpus


def test_corpus_is_large_enough() -> None:
    assert len(_corpus(refused=False)) + len(_corpus(refused=True)) >= 50


@pytest.mark.parametrize("path", _corpus(refused=False), ids=lambda p: p.stem)
def test_corpus_compiles_and_generates_valid_json(path: Path) -> None:
    _assert_sound(path.read_text(), walks=30, whole=True)


@pytest.mark.parametrize("path", _corpus(refused=True), ids=lambda p: p.stem)
def test_corpus_refusals_are_precise(path: Path) -> None:
    expected = path.with_suffix(".refused").read_text().strip()
    assert expected in _refused(path.read_text(), whole=True)


def test_min_items_without_items_allows_any_items() -> None:
    """Strict xgrammar reads a missing ``items`` as "no more items"; minItems must still hold."""
    _assert_agrees(
        {"type": "array", "minItems": 2},
        good=['[1, "a"]', "[null, [], {}]"],
        bad=["[]", "[1]"],
    )
    _assert_agrees(
        {"type": "array", "prefixItems": [{"type": "integer"}], "minItems": 2},
        good=['[1, "x"]'],
        bad=["[1]", '["x", 1]'],
    )


UNIQUE = {"type": "array", "uniqueItems": True}
UNIQUE_PAIRS = {**UNIQUE, "minItems": 2}
"""Arrays the compiler cannot write as one item when it cannot keep items apart."""


@pytest.mark.parametrize(
    ("items", "good", "bad"),
    [
        (
            {"enum": ["a", "b", "c"]},
            ['["a", "b"]', '["c"]', "[]"],
            ['["a", "a"]', '["b", "c", "b"]'],
        ),
        ({"type": "string"}, ['["x", "xy", ""]', '["a\\"", "a"]'], ['["x", "x"]', '["", ""]']),
        (
            {"type": "integer", "minimum": 1, "maximum": 12},
            ["[1, 12, 2]", "[10]"],
            ["[12, 12]", "[1, 2, 1]"],
        ),
        ({"type": ["boolean", "null"]}, ["[true, false, null]"], ["[true, true]", "[null, null]"]),
        (
            {"type": "string", "pattern": "^[a-z0-9-]+$", "minLength": 2},
            ['["ab", "abc", "a-b"]'],
            ['["ab", "ab"]', '["a-b", "x1", "a-b"]'],
        ),
        (
            {"type": "string", "format": "uri"},
            ['["https://a.io", "https://a.io/x"]'],
            ['["urn:x", "urn:x"]'],
        ),
        ({"type": "string", "minLength": 1}, ['["a", "ab"]'], ['["a", "a"]']),
        (  # a bounded pattern's 676 strings, listed
            {"type": "string", "pattern": "^[a-z]{2}$"},
            ['["en", "fr"]'],
            ['["en", "en"]', '["e"]'],
        ),
    ],
)
def test_unique_items_of_plain_scalars_in_a_schema_given_whole(
    items: dict, good: list[str], bad: list[str]
) -> None:
    """xgrammar ignores uniqueItems; the decoder's guard keeps the items apart,
    and the compiler lets the keyword through only where that is exact."""
    schema = {**UNIQUE, "items": items}
    constraint, decoder = _compiled(json.dumps(schema), whole=True)
    assert constraint.not_enforced == () and json.loads(constraint.value)["uniqueItems"]
    for text in good:
        assert constraint.judge(text) is None and decoder.accepts(text), text
    for text in bad:
        assert constraint.judge(text) is not None and not decoder.accepts(text), text
    _assert_sound(json.dumps({**schema, "maxItems": 4}), walks=40, whole=True)


@pytest.mark.parametrize(
    ("array", "subset"),
    [({}, True), ({"maxItems": 200}, True), ({"maxItems": 8, "minItems": 2}, False)],
)
def test_unique_strings_of_bounded_length_hold_at_most_93_items(array: dict, subset: bool) -> None:
    """The guard keeps out a taken string of the maximum length before its
    quote; with at most 93 items it is never cornered (``engine.json_repeats``)."""
    schema = {**UNIQUE, "items": {"type": "string", "minLength": 1, "maxLength": 2}, **array}
    constraint, decoder = _compiled(json.dumps(schema), whole=True)
    rendered = json.loads(constraint.value)
    assert constraint.not_enforced == () and rendered["uniqueItems"]
    assert rendered["maxItems"] == (93 if subset else array["maxItems"])
    assert [s.keyword for s in constraint.report.subsets] == (["uniqueItems"] if subset else [])
    assert decoder.accepts('["ab", "a", "b"]') and decoder.accepts('["é", "中"]')
    for bad in ('["ab", "ab"]', '["a", "b", "a"]', '["abc"]'):
        assert not decoder.accepts(bad), bad
    _assert_sound(json.dumps({**schema, "maxItems": 8}), walks=40, whole=True)


@pytest.mark.parametrize(
    ("items", "good", "bad"),
    [
        (
            {"type": "string", "format": "date"},
            ['["2024-01-01", "2024-01-02"]'],
            ['["2024-01-01", "2024-01-01"]'],
        ),
        ({"type": "string", "pattern": "^[A-Z]{2,3}$"}, ['["AB", "ABC"]'], ['["AB", "AB"]']),
        (
            {"type": "string", "pattern": "^[a-z]+\\.com$"},
            ['["a.com", "ab.com"]'],
            ['["a.com", "a.com"]'],
        ),
        (
            {"type": "string", "format": "uuid"},
            ['["123e4567-e89b-12d3-a456-426614174000", "123e4567-e89b-12d3-a456-426614174001"]'],
            ['["123e4567-e89b-12d3-a456-426614174000", "123e4567-e89b-12d3-a456-426614174000"]'],
        ),
    ],
    ids=["date", "letters", "domains", "uuid"],
)
def test_unique_strings_of_a_pattern_are_counted(items: dict, good: list, bad: list) -> None:
    """Too many to list, not always able to go on: the decoder counts each
    start's endings and refuses one whose every ending is taken
    (``engine.json_repeats``), exactly, with no subset."""
    schema = {**UNIQUE, "items": items}
    constraint, decoder = _compiled(json.dumps(schema), whole=True)
    rendered = json.loads(constraint.value)
    assert rendered["x-unique-items-counted"] is True and constraint.not_enforced == ()
    assert constraint.report.subsets == ()
    for text in good:
        assert constraint.judge(text) is None and decoder.accepts(text), text
    for text in bad:
        assert constraint.judge(text) is not None and not decoder.accepts(text), text
    _assert_sound(json.dumps({**schema, "maxItems": 5}), walks=30, whole=True)


def test_unique_items_named_by_a_ref_are_read_through_it() -> None:
    schema = {
        **UNIQUE,
        "items": {"$ref": "#/$defs/Color"},
        "$defs": {"Color": {"enum": ["red", "green", "blue"]}},
        "minItems": 2,
    }
    _constraint, decoder = _compiled(json.dumps(schema), whole=True)
    assert decoder.accepts('["red", "blue"]') and not decoder.accepts('["red", "red"]')
    _assert_sound(json.dumps(schema), walks=30, whole=True)
    assert "take 3 values" in _refused({**schema, "minItems": 4}, whole=True)


@pytest.mark.parametrize(
    ("items", "good", "bad"),
    [
        ({"type": "integer"}, ["[0, 1, -1, 10]", "[12, 1, 123]"], ["[1, 1]", "[0, -0]"]),
        ({"type": "integer", "minimum": 0, "maximum": 1000}, ["[1000, 100, 10]"], ["[9, 9]"]),
        ({"type": "integer", "maximum": 9}, ["[9, 8, -9]"], ["[-7, -7]"]),
    ],
)
def test_unique_integers_of_a_range(items: dict, good: list[str], bad: list[str]) -> None:
    """Beyond 256 integers they are not listed: the guard refuses to start an
    item every way of ending which is taken, which it counts."""
    schema = {**UNIQUE, "items": items}
    constraint, decoder = _compiled(json.dumps(schema), whole=True)
    assert constraint.not_enforced == ()
    for text in good:
        assert constraint.judge(text) is None and decoder.accepts(text), text
    for text in bad:
        assert constraint.judge(text) is not None and not decoder.accepts(text), text
    _assert_sound(json.dumps({**schema, "maxItems": 6}), walks=40, whole=True)


@pytest.mark.parametrize(
    ("items", "good", "bad"),
    [
        (None, ['["a", 1, true, null, false, "b", -1]'], ["[1, 1]", "[true, true]", "[0, -0]"]),
        ({}, ['["a", "ab"]'], ["[null, null]", '["a", "a"]']),
        ({"type": "number", "minimum": 0}, ["[0, 1, 10]"], ["[1, 1]"]),
        ({"type": ["string", "boolean"]}, ['["true", true]'], ["[false, false]"]),
    ],
    ids=["absent", "any", "number", "mixed"],
)
def test_unique_items_of_any_value_are_kept_to_scalars(
    items: dict | None, good: list[str], bad: list[str]
) -> None:
    """Items the decoder cannot keep apart as they are (any value, fractions)
    are narrowed to strings, integers, booleans and null, which it can (a
    subset: objects, arrays and fractions are not written)."""
    schema = {**UNIQUE, **({} if items is None else {"items": items})}
    constraint, decoder = _compiled(json.dumps(schema), whole=True)
    for text in good:
        assert constraint.judge(text) is None and decoder.accepts(text), text
    for text in bad:
        assert constraint.judge(text) is not None and not decoder.accepts(text), text
    for kept_out in ('[{"a": 1}]', "[[1]]", "[1.5]"):
        assert not decoder.accepts(kept_out), kept_out
    if items is None:  # valid, yet not written
        assert constraint.judge('[{"a": 1}, [1], 1.5]') is None
    _assert_sound(json.dumps({**schema, "maxItems": 6}), walks=40, whole=True)


def test_unique_tuples_of_booleans_null_and_open_strings() -> None:
    """Each position takes more booleans and null than there are positions
    before it, or strings that can always go on; the guard keeps a taken
    literal out from its first letter."""
    schema = {
        **UNIQUE,
        "prefixItems": [{"type": "boolean"}, {"type": "boolean"}, {"type": ["boolean", "null"]}],
        "items": {"type": "string"},
        "maxItems": 5,
    }
    constraint, decoder = _compiled(json.dumps(schema), whole=True)
    for text in ("[true, false, null]", '[false, true, null, "a", "ab"]', "[true]"):
        assert constraint.judge(text) is None and decoder.accepts(text), text
    for text in ("[true, true]", '[true, false, null, "a", "a"]', "[false, true, false]"):
        assert constraint.judge(text) is not None and not decoder.accepts(text), text
    _assert_sound(json.dumps(schema), walks=40, whole=True)


@pytest.mark.parametrize(
    "tuple_items",
    [
        {"prefixItems": [{"type": "boolean"}] * 3},  # the third could find both taken
        {"prefixItems": [{"type": "boolean"}], "items": {"type": "integer"}},
        {"prefixItems": [{"enum": ["a", "b"]}, {"type": "string"}]},
    ],
    ids=["three-booleans", "integer-tail", "listed-strings"],
)
def test_unique_tuples_the_guard_could_be_cornered_in_are_refused(tuple_items: dict) -> None:
    assert "only items it can always keep apart" in _refused(
        {**UNIQUE_PAIRS, **tuple_items}, whole=True
    )


PERSON = {
    "type": "object",
    "properties": {
        "age": {"type": "integer"},
        "name": {"type": "string"},
        "on": {"type": "boolean"},
    },
    "required": ["name", "on"],
    "additionalProperties": False,
}


AGELESS = {name: member for name, member in PERSON["properties"].items() if name != "age"}
"""PERSON's members without its integer, which could keep the objects apart."""


def test_unique_objects_are_kept_apart_by_a_required_open_string() -> None:
    """Items differ in their first required string that can always go on, or in
    the members before it (compared as values): a subset of uniqueItems that
    the decoder can always keep, since that string can always be made longer."""
    schema = {**UNIQUE, "items": {"$ref": "#/$defs/Person"}, "$defs": {"Person": PERSON}}
    constraint, decoder = _compiled(json.dumps(schema), whole=True)
    assert constraint.not_enforced == ()
    assert json.loads(constraint.value)["x-unique-items-by"] == "name"
    assert constraint.report is not None
    assert [item.keyword for item in constraint.report.subsets] == ["uniqueItems"]
    for text in (
        '[{"name": "a", "on": true}, {"name": "ab", "on": true}]',
        '[{"age": 1, "name": "a", "on": true}, {"age": 2, "name": "a", "on": true}]',
        '[{"name": "a", "on": true}, {"age": 1, "name": "a", "on": true}]',
    ):
        assert constraint.judge(text) is None and decoder.accepts(text), text
    for text in (
        '[{"name": "a", "on": true}, {"name": "a", "on": true}]',
        '[{"age": 1, "name": "a", "on": true}, {"age": 1, "name": "a", "on": true}]',
    ):
        assert constraint.judge(text) is not None and not decoder.accepts(text), text
    # The subset: equal names after equal members are kept out even where a later member differs.
    same_name = '[{"name": "a", "on": true}, {"name": "a", "on": false}]'
    assert constraint.judge(same_name) is None and not decoder.accepts(same_name)
    _assert_sound(json.dumps({**schema, "maxItems": 4}), walks=40, whole=True)


def test_unique_items_without_type_are_kept_apart_as_the_objects_they_describe() -> None:
    """Untyped items with object keywords allow every kind, which the decoder cannot keep
    apart from objects: they are written as objects, a subset the report names."""
    untyped = {key: value for key, value in PERSON.items() if key != "type"}
    constraint, decoder = _compiled(json.dumps({**UNIQUE, "items": untyped}), whole=True)
    assert json.loads(constraint.value)["x-unique-items-by"] == "name"
    assert constraint.report is not None
    (subset,) = constraint.report.subsets
    assert "written as the objects their keywords describe" in subset.note
    assert constraint.judge("[1, 2]") is None and not decoder.accepts("[1, 2]")
    twice = '[{"name": "a", "on": true}, {"name": "a", "on": true}]'
    assert constraint.judge(twice) is not None and not decoder.accepts(twice)
    assert decoder.accepts('[{"name": "a", "on": true}, {"name": "b", "on": true}]')
    _assert_sound(json.dumps({**UNIQUE, "items": untyped, "maxItems": 3}), walks=30, whole=True)


@pytest.mark.parametrize(
    "array",
    [
        {**UNIQUE_PAIRS, "items": {**PERSON, "required": ["on"], "maxProperties": 1}},  # no room
        {  # more items than MAX_BOUNDED_UNIQUE_ITEMS
            **UNIQUE_PAIRS,
            "items": {
                **PERSON,
                "properties": {**AGELESS, "name": {"type": "string", "maxLength": 8}},
            },
            "minItems": 94,
        },
        {
            **UNIQUE_PAIRS,
            "items": {**PERSON, "properties": {**AGELESS, "name": {"format": "date"}}},
        },
        {  # an integer of a stepped range
            **UNIQUE_PAIRS,
            "items": {
                **PERSON,
                "properties": {**AGELESS, "name": {"type": "integer", "multipleOf": 2}},
            },
        },
        {  # no alternative the decoder keeps apart
            **UNIQUE_PAIRS,
            "items": {
                "anyOf": [
                    {**PERSON, "properties": {"on": {"type": "boolean"}}, "required": ["on"]},
                    OBJ,
                ]
            },
        },
    ],
    ids=["optional-no-room", "bounded-too-many", "date", "stepped", "union"],
)
def test_unique_objects_without_a_member_that_can_always_go_on_are_refused(array: dict) -> None:
    assert "only items it can always keep apart" in _refused(array, whole=True)


def test_unique_objects_with_an_optional_anchor_write_it_in_every_item() -> None:
    """No required string: the first optional one that can keep items apart is
    written in every item (a subset the report names) and keeps them apart."""
    schema = {**UNIQUE, "items": {**PERSON, "required": ["on"]}}
    constraint, decoder = _compiled(json.dumps(schema), whole=True)
    rendered = json.loads(constraint.value)
    assert rendered["x-unique-items-by"] == "name"
    assert set(rendered["items"]["required"]) == {"name", "on"}
    (subset,) = constraint.report.subsets
    assert "'name' is written in every item" in subset.note
    without = '[{"on": true}, {"on": false}]'
    assert constraint.judge(without) is None and not decoder.accepts(without)  # the subset
    two = '[{"name": "a", "on": true}, {"age": 1, "name": "a", "on": true}]'
    assert constraint.judge(two) is None and decoder.accepts(two)
    _assert_sound(json.dumps({**schema, "maxItems": 4}), walks=40, whole=True)


def test_unique_objects_kept_apart_by_an_integer() -> None:
    """Points of two numbers: the first is the anchor, written as an integer (a
    subset the report names); a taken one is not ended again at its "," or "}"."""
    point = {"type": "number", "minimum": 0, "maximum": 99}
    items = {"type": "object", "properties": {"x": point, "y": point}, "required": ["x", "y"]}
    schema = {**UNIQUE, "items": items}
    constraint, decoder = _compiled(json.dumps(schema), whole=True)
    rendered = json.loads(constraint.value)
    assert rendered["x-unique-items-by"] == "x" and rendered["maxItems"] == 100
    (subset,) = constraint.report.subsets
    assert "'x' is written as an integer; 'x' takes 100 values" in subset.note
    assert decoder.accepts('[{"x": 1, "y": 2.5}, {"x": 10, "y": 2.5}]')
    assert not decoder.accepts('[{"x": 1, "y": 2}, {"x": 1, "y": 3}]')  # the subset
    assert not decoder.accepts('[{"x": 1.5, "y": 2}]')  # the other subset
    assert constraint.judge('[{"x": 1.5, "y": 2}]') is None
    _assert_sound(json.dumps({**schema, "maxItems": 4}), walks=40, whole=True)


def test_unique_objects_made_a_tuple_by_contains_keep_their_anchor() -> None:
    """``maxContains`` over items that all match makes the array a tuple of
    the items' objects: each position keeps the anchor (found by
    ``bench.schema_fuzz --seed 81``: two equal objects were written)."""
    item = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    schema = {**UNIQUE, "items": item, "contains": {}, "maxContains": 2}
    constraint, decoder = _compiled(json.dumps(schema), whole=True)
    rendered = json.loads(constraint.value)
    assert rendered["prefixItems"] and rendered["x-unique-items-by"] == "a"
    assert not decoder.accepts('[{"a": "x"}, {"a": "x"}]')
    assert decoder.accepts('[{"a": "x"}, {"a": "y"}]')
    _assert_sound(json.dumps(schema), walks=40, whole=True)


def test_unique_tuples_whose_positions_narrow_the_anchor_differently_are_refused() -> None:
    """An exclusive ``oneOf`` keeps the first item's date out of the other
    branch's pattern, making the array a tuple whose first position holds other
    dates than the rest; the decoder reads the anchor from the first position
    (found by ``bench.schema_fuzz --seed 98``: one date written three times)."""
    date = {"type": "string", "format": "date"}
    dates = {"uniqueItems": True, "maxItems": 6, "items": {**OBJ, "properties": {"b": date}}}
    short = {**OBJ, "properties": {"b": {"pattern": "^[ab]{1,3}$"}}, "required": ["b"]}
    schema = {"oneOf": [dates, {"items": short}]}
    assert "alike in every position" in _refused(schema, whole=True)
    assert compile_json_schema(schema, strict=False, decoder_guard=True).not_enforced


def test_the_anchor_is_chosen_alike_where_min_items_rules_out_a_bounded_string() -> None:
    """94 items cannot be kept apart by a string of maxLength alone: the optional
    integer is the anchor, for the compiler and in what the decoder reads."""
    bounded = {**PERSON["properties"], "name": {"type": "string", "maxLength": 8}}
    schema = {**UNIQUE, "items": {**PERSON, "properties": bounded}, "minItems": 94}
    rendered = json.loads(compile_json_schema(schema, strict=True, decoder_guard=True).value)
    assert rendered["x-unique-items-by"] == "age"
    assert "age" in rendered["items"]["required"] and "maxItems" not in rendered


def test_unique_objects_kept_apart_by_a_string_of_bounded_length_hold_at_most_93() -> None:
    bounded = {**PERSON["properties"], "name": {"type": "string", "maxLength": 8}}
    schema = {**UNIQUE, "items": {**PERSON, "properties": bounded}}
    constraint, decoder = _compiled(json.dumps(schema), whole=True)
    rendered = json.loads(constraint.value)
    assert rendered["x-unique-items-by"] == "name" and rendered["maxItems"] == 93
    (subset,) = constraint.report.subsets
    assert "'name' is of bounded length, so at most 93 items" in subset.note
    assert decoder.accepts('[{"name": "abcdefgh", "on": true}, {"name": "abcdefg", "on": true}]')
    twice = '[{"name": "abcdefgh", "on": true}, {"name": "abcdefgh", "on": false}]'
    assert not decoder.accepts(twice)
    _assert_sound(json.dumps({**schema, "maxItems": 4}), walks=40, whole=True)


@pytest.mark.parametrize(
    ("anchor", "cap"),
    [({"type": "string", "format": "date"}, 3652059), ({"type": "string", "format": "uuid"}, None)],
    ids=["date", "uuid"],
)
def test_unique_objects_kept_apart_by_a_counted_pattern(anchor: dict, cap: int | None) -> None:
    """A ``date`` or ``uuid`` id: the decoder counts the anchor's strings
    (``x-unique-items-counted``), so an array holds at most as many items as
    there are dates (a subset the report names); uuids are never that few."""
    schema = {**UNIQUE, "items": {**PERSON, "properties": {**PERSON["properties"], "name": anchor}}}
    constraint, decoder = _compiled(json.dumps(schema), whole=True)
    rendered = json.loads(constraint.value)
    assert rendered["x-unique-items-by"] == "name" and rendered["x-unique-items-counted"] is True
    assert rendered.get("maxItems") == cap
    (subset,) = constraint.report.subsets
    assert (f"takes {cap} values, so at most {cap} items" in subset.note) == (cap is not None)
    first, second = (
        ("2024-02-29", "2024-03-01") if cap else (str(uuid.UUID(int=1)), str(uuid.UUID(int=2)))
    )
    two = f'[{{"name": "{first}", "on": true}}, {{"name": "{second}", "on": true}}]'
    twice = f'[{{"name": "{first}", "on": true}}, {{"age": 1, "name": "{first}", "on": true}}]'
    assert constraint.judge(two) is None and decoder.accepts(two)
    assert constraint.judge(twice) is None and decoder.accepts(twice)  # members before it differ
    same = f'[{{"name": "{first}", "on": true}}, {{"name": "{first}", "on": false}}]'
    assert constraint.judge(same) is None and not decoder.accepts(same)  # the subset
    assert not decoder.accepts(two.replace(second, "2023-02-29"))  # no such date
    _assert_sound(json.dumps({**schema, "maxItems": 4}), walks=40, whole=True)


@pytest.mark.parametrize(
    ("schema", "whole", "why"),
    [
        ({**UNIQUE_PAIRS, "items": {"type": "number", "multipleOf": 0.5}}, True, "keep apart"),
        (
            {**UNIQUE_PAIRS, "items": {"type": "object"}},
            True,
            "only items it can always keep apart",
        ),
        (
            {**UNIQUE_PAIRS, "items": {"type": ["string", "integer"], "maxLength": 3}},
            True,
            "only items it can always keep apart",
        ),
        (
            {**UNIQUE_PAIRS, "items": {"enum": [1.5, 2]}},
            True,
            "only items it can always keep apart",
        ),
        (
            {**UNIQUE_PAIRS, "items": {"type": "integer", "multipleOf": 3}},
            True,
            "only items it can always keep apart",
        ),
        (  # more strings than MAX_BOUNDED_UNIQUE_ITEMS
            {**UNIQUE_PAIRS, "items": {"type": "string", "maxLength": 2}, "minItems": 94},
            True,
            "only items it can always keep apart",
        ),
        (  # fewer strings than minItems
            {
                **UNIQUE_PAIRS,
                "items": {"type": "string", "pattern": "^[a-c]{7}$"},
                "minItems": 2188,
            },
            True,
            "take 2187 values",
        ),
        (  # an automaton too large to count with
            {**UNIQUE_PAIRS, "items": {"type": "string", "pattern": "^[ab]*a[ab]{12}$"}},
            True,
            "only items it can always keep apart",
        ),
        ({**UNIQUE_PAIRS, "items": {"enum": ["a", "b"]}, "minItems": 3}, True, "take 2 values"),
        ({**UNIQUE_PAIRS, "items": {"type": "string"}}, False, "not one inside a grammar"),
    ],
)
def test_unique_items_the_decoder_cannot_keep_apart_are_refused(
    schema: dict, whole: bool, why: str
) -> None:
    assert why in _refused(schema, whole=whole)


def test_unique_items_of_a_union_write_the_first_alternative_kept_apart() -> None:
    """Several items of one alternative say more than one item of any: objects
    kept apart by their anchor, or strings, are written alone (a subset the
    report names); an alternative of one value (null) is passed over."""
    schema = {**UNIQUE, "items": {"anyOf": [{"type": "null"}, PERSON]}}
    constraint, decoder = _compiled(json.dumps(schema), whole=True)
    assert json.loads(constraint.value)["x-unique-items-by"] == "name"
    (subset,) = constraint.report.subsets
    assert "only alternative 1 of its items' 2 is written" in subset.note
    two = '[{"name": "a", "on": true}, {"name": "b", "on": true}]'
    assert constraint.judge(two) is None and decoder.accepts(two)
    twice = '[{"name": "a", "on": true}, {"name": "a", "on": true}]'
    assert constraint.judge(twice) is not None and not decoder.accepts(twice)
    assert constraint.judge("[null]") is None and not decoder.accepts("[null]")  # the subset
    _assert_sound(json.dumps({**schema, "maxItems": 4}), walks=30, whole=True)
    rules = {"anyOf": [{"type": "string"}, {"type": "array", "prefixItems": [{"type": "string"}]}]}
    constraint, decoder = _compiled(json.dumps({**UNIQUE_PAIRS, "items": rules}), whole=True)
    assert decoder.accepts('["a", "b"]') and not decoder.accepts('["a", "a"]')
    assert not decoder.accepts('["a", ["b"]]')


@pytest.mark.parametrize(
    ("items", "one", "two"),
    [
        ({"type": "array", "items": {"type": "integer"}}, "[[1, 2]]", "[[1, 2], [3]]"),
        ({"type": "number", "multipleOf": 0.5}, "[2]", "[1.5, 2]"),
        ({"anyOf": [{"type": "array"}, {"type": "null"}]}, "[null]", "[null, [1]]"),
    ],
    ids=["arrays", "halves", "union"],
)
@pytest.mark.parametrize("whole", [True, False])
def test_unique_items_never_kept_apart_are_written_one_at_most_in_strict_mode(
    items: dict, one: str, two: str, whole: bool
) -> None:
    """One item is always unique: strict mode writes a subset the report names
    rather than refusing the schema over one array; best effort keeps every
    length and lists the keyword as not enforced (the judge checks)."""
    schema = {**UNIQUE, "items": items}
    constraint, decoder = _compiled(json.dumps(schema), whole=whole)
    assert json.loads(constraint.value)["maxItems"] == 1
    (subset,) = (s for s in constraint.report.subsets if s.keyword == "uniqueItems")
    assert "at most one item" in subset.note
    assert constraint.judge(one) is None and decoder.accepts(one) and decoder.accepts("[]")
    assert constraint.judge(two) is None and not decoder.accepts(two)
    _assert_sound(json.dumps(schema), walks=20, whole=whole)
    lenient = compile_json_schema(schema, strict=False, decoder_guard=whole)
    assert lenient.not_enforced == ("uniqueItems at the root",)
    assert "maxItems" not in json.loads(lenient.value)


def test_names_a_property_names_enum_lists_are_declared_so_none_repeats() -> None:
    """``Dict[Literal["red", "green", "blue"], int]``: each listed name becomes an
    optional property of the value's schema (a pattern's where one matches), so
    no writer can repeat one, guard or not, and ``minProperties`` counts names."""
    schema = {
        **OBJ,
        "propertyNames": {"enum": ["red", "green", "blue", 7]},
        "additionalProperties": {"type": "integer"},
        "patternProperties": {"^b": {"type": "string"}},
        "minProperties": 2,
    }
    constraint, decoder = _compiled(json.dumps(schema))
    rendered = json.loads(constraint.value)
    assert list(rendered["properties"]) == ["red", "green", "blue"]
    assert rendered["additionalProperties"] is False and rendered["minProperties"] == 2
    for good in ('{"red": 1, "green": 2}', '{"red": 1, "blue": "x"}'):
        assert constraint.judge(good) is None and decoder.accepts(good), good
    for bad in (
        '{"red": 1}',
        '{"red": 1, "red": 2}',
        '{"red": 1, "pink": 2}',
        '{"red": 1, "blue": 3}',
    ):
        assert not decoder.accepts(bad), bad
    _assert_sound(json.dumps(schema), walks=40)
    names = {"enum": [f"n{i}" for i in range(MAX_LISTED_NAMES + 1)]}
    many = {**OBJ, "propertyNames": names, "minProperties": 2}
    assert "minProperties" in _refused(many)  # a longer list stays a propertyNames enum


def test_min_properties_over_free_names_in_a_schema_given_whole() -> None:
    """The decoder keeps free names apart, so xgrammar's count of members is a
    count of distinct names; names bound by a pattern could be cornered."""
    schema = {**OBJ, "additionalProperties": {"type": "integer"}, "minProperties": 2}
    constraint, decoder = _compiled(json.dumps(schema), whole=True)
    assert json.loads(constraint.value)["minProperties"] == 2
    for good in ('{"a": 1, "b": 2}', '{"a": 1, "aa": 2, "b": 3}'):
        assert constraint.judge(good) is None and decoder.accepts(good), good
    for bad in ('{"a": 1}', '{"a": 1, "a": 2}'):
        assert constraint.judge(bad) is not None and not decoder.accepts(bad), bad
    _assert_sound(json.dumps({**schema, "maxProperties": 3}), walks=40, whole=True)
    bounded = {**schema, "propertyNames": {"maxLength": 2}}  # kept apart, up to 93 names
    constraint, decoder = _compiled(json.dumps(bounded), whole=True)
    assert json.loads(constraint.value)["maxProperties"] == MAX_BOUNDED_UNIQUE_ITEMS
    assert decoder.accepts('{"a": 1, "ab": 2}') and not decoder.accepts('{"ab": 1, "ab": 2}')
    _assert_sound(json.dumps(bounded), walks=40, whole=True)
    assert "minProperties" in _refused({**bounded, "minProperties": 94}, whole=True)
    two_letters = {**schema, "propertyNames": {"pattern": "^[a-z]{2}$"}}  # could be cornered
    assert "minProperties" in _refused(two_letters, whole=True)
    assert "only in a schema given whole" in _refused(schema)
    patterned = {**schema, "propertyNames": {"pattern": "^[a-z]+$"}, "maxProperties": 3}
    constraint, decoder = _compiled(json.dumps(patterned), whole=True)  # names can go on
    assert decoder.accepts('{"a": 1, "ab": 2}') and not decoder.accepts('{"a": 1, "a": 2}')
    _assert_sound(json.dumps(patterned), walks=40, whole=True)
    one = {**schema, "minProperties": 1, "propertyNames": {"maxLength": 2}}
    constraint, decoder = _compiled(json.dumps(one))  # one member is one name, guard or not
    assert decoder.accepts('{"a": 1}') and not decoder.accepts("{}")
