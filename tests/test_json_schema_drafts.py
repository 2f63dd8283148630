"""Each JSON Schema draft read by its own rules, annotations never refused, the constraint report.

Every rule is checked the way ``test_grammar_compiler_json_schema`` checks
keywords: hand-picked instances accepted or rejected alike by the judge
(jsonschema with the document's draft) and by xgrammar compiling the
canonical form, and random walks through xgrammar's grammar judged valid.
"""

from __future__ import annotations

import json
import random

import pytest
from json_instances import Decoder, samples

from grammar_compiler import ConstraintError, compile_json_schema, compile_typescript
from grammar_compiler.canonical import (
    MAX_REPORT_SUMMARY,
    REPORT_SUMMARY_POINTERS,
    ConstraintReport,
    KeywordAt,
)
from grammar_compiler.tools import tools_constraint

D04 = "http://json-schema.org/draft-04/schema#"
D06 = "http://json-schema.org/draft-06/schema#"
D07 = "http://json-schema.org/draft-07/schema#"
D2019 = "https://json-schema.org/draft/2019-09/schema"
D2020 = "https://json-schema.org/draft/2020-12/schema"


def _assert_agrees(
    schema: object, good: list[str], bad: list[str], strict: bool = True, *, whole: bool = False
) -> None:
    """Good texts satisfy the judge and xgrammar; bad ones neither; xgrammar's walks are valid.
    ``whole``: compiled as a schema given whole, whose decoder guard keeps items apart."""
    constraint = compile_json_schema(json.dumps(schema), strict=strict, decoder_guard=whole)
    decoder = Decoder(constraint.value, guard=whole)
    for text in good:
        assert constraint.judge(text) is None, (text, constraint.judge(text))
        assert decoder.accepts(text), (text, constraint.value)
    for text in bad:
        assert constraint.judge(text) is not None, text
        assert not decoder.accepts(text), (text, constraint.value)
    for text in samples(decoder, 15, seed=len(good)):
        assert constraint.judge(text) is None, (text, constraint.judge(text), constraint.value)


def _refused(schema: object, strict: bool = True) -> str:
    with pytest.raises(ConstraintError) as caught:
        compile_json_schema(schema, strict=strict)
    return str(caught.value)


def _ignored(schema: object) -> list[tuple[str, str]]:
    report = compile_json_schema(schema).report
    return [(item.keyword, item.pointer) for item in report.ignored]


# ---------------------------------------------------------------------------
# Each draft's own rules

OBJ = {"type": "object"}
DRAFT_RULES = [
    pytest.param(
        {"$schema": D04, "type": "number", "minimum": 1, "exclusiveMinimum": True, "maximum": 3},
        ["1.5", "3", "2"],
        ["1", "0.5", "3.5"],
        id="draft-04-exclusiveMinimum-true",
    ),
    pytest.param(
        {"$schema": D04, "type": "integer", "maximum": 10, "exclusiveMaximum": True},
        ["9", "-4"],
        ["10", "11"],
        id="draft-04-exclusiveMaximum-true",
    ),
    pytest.param(
        {"$schema": D04, "type": "integer", "minimum": 2, "exclusiveMinimum": False},
        ["2", "3"],
        ["1"],
        id="draft-04-exclusive-false",
    ),
    pytest.param(
        {
            "$schema": D04,
            "id": "http://example.com/schemas/order.json",
            "definitions": {
                "sku": {"id": "#sku", "type": "string", "pattern": "^[A-Z]{3}$"},
                "qty": {"id": "quantity.json", "type": "integer", "minimum": 1},
            },
            **OBJ,
            "properties": {"sku": {"$ref": "#sku"}, "qty": {"$ref": "quantity.json"}},
            "required": ["sku", "qty"],
        },
        ['{"sku": "ABC", "qty": 2}'],
        ['{"sku": "abc", "qty": 2}', '{"sku": "ABC", "qty": 0}', '{"sku": "ABC"}'],
        id="draft-04-id-anchor-and-base",
    ),
    pytest.param(
        {
            "$schema": D04,
            "definitions": {"point": {**OBJ, "properties": {"x": {"type": "number"}}}},
            "type": "array",
            "items": {"$ref": "#/definitions/point"},
        },
        ['[{"x": 1}]', "[]"],
        ['[{"x": "1"}]'],
        id="draft-04-definitions",
    ),
    pytest.param(
        {
            "$schema": D04,
            "type": "array",
            "items": [{"type": "integer"}, {"type": "string"}],
            "additionalItems": False,
        },
        ['[1, "a"]', "[1]"],
        ['[1, "a", 2]', '["a"]'],
        id="draft-04-tuple-items",
    ),
    pytest.param(
        {
            "$schema": D04,
            "type": "array",
            "items": [{"type": "integer"}],
            "additionalItems": {"type": "boolean"},
        },
        ["[1, true, false]"],
        ["[1, 2]"],
        id="draft-04-additionalItems-schema",
    ),
    pytest.param(
        {
            "$schema": D04,
            "definitions": {"s": {"type": "string"}},
            **OBJ,
            "properties": {"s": {"$ref": "#/definitions/s", "maxLength": 1}},
        },
        ['{"s": "long text"}'],
        ['{"s": 1}'],
        id="draft-04-ref-hides-siblings",
    ),
    pytest.param(
        {
            "$schema": D06,
            "definitions": {"a": {"$id": "#a", "const": "x"}},
            "properties": {"v": {"$ref": "#a"}},
            "required": ["v"],
        },
        ['{"v": "x"}'],
        ['{"v": "y"}'],
        id="draft-06-id-anchor",
    ),
    pytest.param(
        {
            "$schema": D2019,
            "$defs": {"n": {"$anchor": "name", "type": "string", "minLength": 2}},
            **OBJ,
            "properties": {"n": {"$ref": "#name", "maxLength": 3}},
            "required": ["n"],
        },
        ['{"n": "ab"}', '{"n": "abc"}'],
        ['{"n": "a"}', '{"n": "abcd"}'],
        id="2019-09-anchor-and-ref-siblings",
    ),
    pytest.param(
        {
            "$schema": D2019,
            "$recursiveAnchor": True,
            **OBJ,
            "properties": {"v": {"type": "integer"}, "next": {"$recursiveRef": "#"}},
            "required": ["v"],
            "additionalProperties": False,
        },
        ['{"v": 1}', '{"v": 1, "next": {"v": 2}}'],
        ['{"v": 1, "next": {}}', '{"v": 1, "next": 3}'],
        id="2019-09-recursiveRef",
    ),
    pytest.param(
        {
            "$schema": D2020,
            "$dynamicAnchor": "node",
            **OBJ,
            "properties": {"kids": {"type": "array", "items": {"$dynamicRef": "#node"}}},
            "additionalProperties": False,
        },
        ['{"kids": [{"kids": []}]}', "{}"],
        ['{"kids": [1]}', '{"kids": [{"x": 1}]}'],
        id="2020-12-dynamicRef-one-resource",
    ),
    pytest.param(
        {"$schema": "http://json-schema.org/schema#", "prefixItems": [{"type": "integer"}]},
        ["[1]"],
        ['["x"]'],
        id="latest-is-2020-12",
    ),
]


@pytest.mark.parametrize(("schema", "good", "bad"), DRAFT_RULES)
def test_draft_rule_is_enforced(schema: object, good: list[str], bad: list[str]) -> None:
    _assert_agrees(schema, good, bad)


@pytest.mark.parametrize(
    "uri",
    [
        "http://json-schema.org/draft-04/schema#",
        "http://json-schema.org/draft-04/schema",
        "https://json-schema.org/draft-04/schema#",
        "http://json-schema.org/draft-04/schema/",
        "http://json-schema.org/draft-04/hyper-schema#",
    ],
)
def test_schema_uri_spellings(uri: str) -> None:
    schema = {"$schema": uri, "type": "integer", "minimum": 0, "exclusiveMinimum": True}
    _assert_agrees(schema, ["1"], ["0"])


def test_dependencies_is_read_as_draft_07_reads_it_in_every_draft() -> None:
    def outcome(draft: str, strict: bool) -> str:
        schema = {
            "$schema": draft,
            **OBJ,
            "properties": {"card": {"type": "string"}, "cvv": {"type": "string"}},
            "dependencies": {"card": ["cvv"], "cvv": {"required": ["card"]}},
        }
        try:
            constraint = compile_json_schema(schema, strict=strict)
        except ConstraintError as error:
            return str(error)
        return constraint.value + repr(constraint.report.not_enforced)

    for strict in (True, False):
        assert outcome(D04, strict) == outcome(D07, strict) == outcome(D2020, strict)


def test_keywords_of_another_draft_are_ignored_like_the_judge_ignores_them() -> None:
    schema = {"$schema": D04, **OBJ, "properties": {"kind": {"const": "a"}}}
    _assert_agrees(schema, ['{"kind": "b"}'], [])
    assert _ignored(schema) == [("const", "/properties/kind")]
    note = compile_json_schema(schema).report.ignored[0].note
    assert note.startswith("a keyword of draft-06, draft-07, 2019-09, 2020-12, not of draft-04")
    tuple_07 = {"$schema": D07, "type": "array", "prefixItems": [{"type": "integer"}]}
    _assert_agrees(tuple_07, ['["x"]'], [])
    assert _ignored(tuple_07) == [("prefixItems", "")]


def test_a_dynamic_reference_reaches_the_outermost_anchor_passed_through() -> None:
    """The 2020-12 "list of T": the list's items are whatever the resource that
    referred to the list anchors as ``item``, as jsonschema resolves it."""
    strings = {
        "$schema": D2020,
        "$id": "https://example.com/strings",
        "$ref": "list",
        "$defs": {
            "string": {"$dynamicAnchor": "item", "type": "string"},
            "list": {
                "$id": "list",
                "type": "array",
                "items": {"$dynamicRef": "#item"},
                "$defs": {"any": {"$dynamicAnchor": "item"}},
            },
        },
    }
    _assert_agrees(strings, ['["a", "b"]', "[]"], ["[1]", '["a", null]'])
    by_kind = {  # two ways into one list: each keeps its own item type
        "$schema": D2020,
        "$id": "https://example.com/main",
        "type": "object",
        "properties": {"numbers": {"$ref": "numbers"}, "names": {"$ref": "names"}},
        "$defs": {
            "list": {
                "$id": "list",
                "type": "array",
                "items": {"$dynamicRef": "#item"},
                "$defs": {"any": {"$dynamicAnchor": "item"}},
            },
            "numbers": {"$id": "numbers", "$ref": "list", "$defs": {"n": NUMBER_ITEM}},
            "names": {"$id": "names", "$ref": "list", "$defs": {"s": STRING_ITEM}},
        },
    }
    _assert_agrees(by_kind, ['{"numbers": [1, 2], "names": ["a"]}'], ['{"numbers": ["a"]}'])
    _assert_agrees(by_kind, [], ['{"names": [1]}'])


NUMBER_ITEM = {"$dynamicAnchor": "item", "type": "integer"}
STRING_ITEM = {"$dynamicAnchor": "item", "type": "string"}


def test_a_recursive_reference_reaches_the_outermost_recursive_anchor() -> None:
    """2019-09: ``$recursiveRef`` in a resource with ``$recursiveAnchor`` goes to
    the resource that referred to it (when that one has the anchor too)."""
    schema = {
        "$schema": D2019,
        "$id": "https://example.com/node",
        "$recursiveAnchor": True,
        "type": "object",
        "properties": {"data": {"type": "integer"}, "kids": {"$ref": "list"}},
        "$defs": {
            "list": {
                "$id": "list",
                "$recursiveAnchor": True,
                "type": "array",
                "items": {"$recursiveRef": "#"},
            }
        },
    }
    good = ['{"data": 1, "kids": [{"data": 2, "kids": []}]}']
    _assert_agrees(schema, good, ['{"kids": [[]]}', '{"kids": [{"data": "x"}]}'])


_SCALARS = [
    {"type": "string", "maxLength": 2},
    {"type": "integer", "minimum": 0, "maximum": 9},
    {"type": "boolean"},
]


def _dynamic_document(rng: random.Random, draft: str) -> dict:
    """Resources that refer to each other, with dynamic anchors (2020-12) or
    recursive ones (2019-09) scattered over them and the root."""
    names = ["r0", "r1", "r2"]
    dynamic = draft == D2020
    back = {"$dynamicRef": "#T"} if dynamic else {"$recursiveRef": "#"}
    resources = {}
    for name in names:
        resource: dict = {"$id": name}
        if rng.random() < 0.6:
            if dynamic:
                resource["$defs"] = {"t": {"$dynamicAnchor": "T", **rng.choice(_SCALARS)}}
            else:
                resource["$recursiveAnchor"] = True
        if rng.random() < 0.5:
            items = {"anyOf": [rng.choice(_SCALARS), back]}
            resource.update({"type": "array", "maxItems": 2, "items": items})
        else:
            properties = {"a": {"$ref": rng.choice(names)}, "b": back, "c": rng.choice(_SCALARS)}
            resource.update({"type": "object", "properties": properties})
            resource["additionalProperties"] = False
        resources[name] = resource
    document = {"$schema": draft, "$defs": resources, "$ref": rng.choice(names)}
    if rng.random() < 0.7:
        document["$id"] = "https://example.com/root"
    if rng.random() < 0.5:
        document.update({"$dynamicAnchor": "T"} if dynamic else {"$recursiveAnchor": True})
    return document


def _value(rng: random.Random, depth: int = 0) -> object:
    roll = rng.random()
    if depth > 2 or roll < 0.4:
        return rng.choice(["a", "", "xy", 1, 5, 12, True, None])
    if roll < 0.7:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 2))]
    return {key: _value(rng, depth + 1) for key in rng.sample(["a", "b", "c"], rng.randint(0, 2))}


@pytest.mark.parametrize("draft", [D2019, D2020])
def test_random_dynamic_scopes_agree_with_the_judge(draft: str) -> None:
    """Random documents of resources joined by ``$ref`` and dynamic references:
    xgrammar accepts a value only if jsonschema does (``dynamic_scope``
    follows referencing), and nearly every value jsonschema accepts."""
    rng = random.Random(draft)
    compiled = accepted = valid = 0
    for _ in range(80):
        document = _dynamic_document(rng, draft)
        try:
            constraint = compile_json_schema(document)
        except ConstraintError:
            continue
        compiled += 1
        decoder = Decoder(constraint.value)
        for _ in range(30):
            text = json.dumps(_value(rng))
            passes = constraint.judge(text) is None
            assert passes or not decoder.accepts(text), (document, text)
            valid += passes
            accepted += decoder.accepts(text)
    assert compiled > 30 and accepted > 0.9 * valid > 50, (compiled, accepted, valid)


def test_a_dynamic_reference_to_an_anchor_its_resource_lacks_is_refused() -> None:
    schema = {
        "$schema": D2020,
        "$dynamicAnchor": "node",
        "properties": {"inner": {"$id": "inner.json", "$dynamicRef": "#node"}},
    }
    assert _refused(schema) == "unresolvable $ref '#node' at /properties/inner: no such anchor"


# ---------------------------------------------------------------------------
# No $schema: 2020-12, older spellings read by their own rules


def test_unmarked_boolean_exclusive_bounds_are_draft_04() -> None:
    _assert_agrees({"type": "integer", "minimum": 0, "exclusiveMinimum": True}, ["1"], ["0"])


def test_unmarked_id_anchors_are_draft_04() -> None:
    schema = {
        "definitions": {"code": {"id": "#code", "type": "string", "pattern": "^[0-9]{2}$"}},
        "type": "array",
        "items": {"$ref": "#code"},
    }
    _assert_agrees(schema, ['["12"]'], ['["1"]', "[1]"])


def test_unmarked_id_next_to_newer_keywords_is_an_annotation() -> None:
    schema = {"id": "urn:example:pet", **OBJ, "properties": {"k": {"const": 1}}, "required": ["k"]}
    _assert_agrees(schema, ['{"k": 1}'], ['{"k": 2}'])
    assert _ignored(schema) == [("id", "")]


def test_unmarked_tuple_items_are_draft_07() -> None:
    schema = {"type": "array", "items": [{"type": "string"}], "additionalItems": False}
    _assert_agrees(schema, ['["a"]', "[]"], ['["a", "b"]', "[1]"])


# ---------------------------------------------------------------------------
# Slightly invalid schemas: old meanings read, or a precise 400


def test_draft_03_required_true_is_read_as_required() -> None:
    schema = {
        "$schema": D04,
        **OBJ,
        "properties": {"a": {"type": "string", "required": True}, "b": {"required": False}},
    }
    _assert_agrees(schema, ['{"a": "x"}', '{"a": "x", "b": 1}'], ["{}", '{"b": 1}'])
    assert schema["properties"]["a"]["required"] is True  # the caller's document is not changed


def test_draft_03_type_any_is_any_type() -> None:
    _assert_agrees(
        {**OBJ, "properties": {"v": {"type": "any"}}, "required": ["v"]},
        ['{"v": 1}', '{"v": "x"}', '{"v": null}'],
        ["{}"],
    )


D03 = "http://json-schema.org/draft-03/schema#"


@pytest.mark.parametrize(
    ("schema", "good", "bad"),
    [
        pytest.param(
            {**OBJ, "properties": {"n": {"type": "integer", "divisibleBy": 5}}},
            ['{"n": 10}', "{}"],
            ['{"n": 7}'],
            id="divisibleBy",
        ),
        pytest.param(
            {**OBJ, "properties": {"a": {"type": "string"}}, "extends": {"required": ["a"]}},
            ['{"a": "x"}'],
            ["{}", '{"a": 1}'],
            id="extends",
        ),
        pytest.param(
            {
                **OBJ,
                "properties": {"v": {"disallow": ["string", {"type": "integer", "minimum": 3}]}},
            },
            ['{"v": 2}', '{"v": null}', "{}"],
            ['{"v": "x"}', '{"v": 3}'],
            id="disallow",
        ),
        pytest.param(
            {**OBJ, "properties": {"v": {"type": ["null", {"type": "string", "maxLength": 2}]}}},
            ['{"v": null}', '{"v": "ab"}'],
            ['{"v": "abc"}', '{"v": 1}'],
            id="type-with-schemas",
        ),
        pytest.param(
            {**OBJ, "properties": {"a": {"type": "integer"}, "b": {}}, "dependencies": {"a": "b"}},
            ['{"a": 1, "b": 2}', '{"b": 2}', "{}"],
            ['{"a": 1}'],
            id="dependencies-one-name",
        ),
        pytest.param(
            {
                **OBJ,
                "properties": {"ip": {"type": "string", "format": "ip-address"}},
                "required": ["ip"],
            },
            ['{"ip": "10.0.0.1"}'],
            ['{"ip": "10.0.0"}', '{"ip": "x"}'],
            id="ip-address",
        ),
    ],
)
def test_draft_03_documents_are_read_as_the_draft_04_ones_they_mean(
    schema: dict, good: list[str], bad: list[str]
) -> None:
    _assert_agrees({"$schema": D03, **schema}, good, bad)


def test_snowplow_self_describing_schemas_are_draft_04() -> None:
    schema = {
        "$schema": "http://iglucentral.com/schemas/com.snowplowanalytics.self-desc/schema/"
        "jsonschema/1-0-0#",
        "self": {"vendor": "com.acme", "name": "click", "format": "jsonschema", "version": "1-0-0"},
        **OBJ,
        "properties": {"n": {"type": "integer", "maximum": 10, "exclusiveMaximum": True}},
        "required": ["n"],
    }
    _assert_agrees(schema, ['{"n": 9}'], ['{"n": 10}'])  # a boolean exclusiveMaximum: draft-04
    assert _ignored(schema) == [("self", "")]


def test_an_unknown_metaschema_is_read_by_the_keywords_and_reported() -> None:
    schema = {
        "$schema": "https://example.com/meta/v1",
        **OBJ,
        "properties": {"a": {"maxLength": 2}},
    }
    _assert_agrees(schema, ['{"a": "ab"}'], ['{"a": "abc"}'])
    (ignored,) = compile_json_schema(schema).report.ignored
    assert ignored.keyword == "$schema" and "read as 2020-12" in ignored.note
    old = {**schema, "properties": {"a": {"maximum": 2, "exclusiveMaximum": True}}}
    assert "read as draft-04" in compile_json_schema(old).report.ignored[0].note
    _assert_agrees(old, ['{"a": 1}'], ['{"a": 2}'])


@pytest.mark.parametrize(
    ("encoding", "good", "bad"),
    [
        ("base64", ['""', '"aGk="', '"aGk+Lw=="'], ['"a"', '"aGk"', '"a!=="']),
        ("base32", ['"NBUQ===="', '""'], ['"nbuq===="', '"NBU"']),
        ("base16", ['"CAFE"'], ['"CAF"', '"cafe"']),
    ],
)
def test_draft_07_content_encoding_alone_is_written_as_text_that_decodes(
    encoding: str, good: list[str], bad: list[str]
) -> None:
    """Draft-07 lets a validator decode the string; RFC 4648's alphabets are
    patterns. With contentMediaType too (what the bytes are) it stays refused."""
    _assert_agrees({"$schema": D07, "type": "string", "contentEncoding": encoding}, good, [])
    constraint = compile_json_schema(
        {"$schema": D07, "type": "string", "contentEncoding": encoding}
    )
    decoder = Decoder(constraint.value)
    for text in bad:
        assert not decoder.accepts(text), text
    typed = {"$schema": D07, "contentEncoding": encoding, "contentMediaType": "image/png"}
    assert "keyword 'contentEncoding'" in _refused(typed)  # the bytes' type is not checked
    assert "contentEncoding" in _refused({"$schema": D07, "contentEncoding": "quoted-printable"})


AS_PEOPLE_WRITE_IT = json.dumps(
    {
        "title": "User",
        "type": "object",
        "description": "xgrammar writes members in the order the metaschema lists them",
        "properties": {"name": {"type": "string", "description": "Full name", "minLength": 1}},
        "required": ["name"],
        "additionalProperties": False,
    }
)


@pytest.mark.parametrize(
    ("document", "uri"),
    [(D04, D04), (D06, D06), (D07, D07), (D07, D04), (D2020, D06), (None, D07), (None, D04)],
    ids=["04", "06", "07", "07-holding-04", "2020-12-holding-06", "no-$schema-07", "no-$schema-04"],
)
def test_a_legacy_metaschema_is_read_from_the_bundled_copy(document: str | None, uri: str) -> None:
    """A schema that holds a schema names a metaschema, often of another draft
    or with no ``$schema`` of its own; jsonschema ships them (nothing is
    fetched), and the judge reads each by its own draft."""
    schema = {
        **({"$schema": document} if document else {}),
        **OBJ,
        "properties": {
            "options": {"$ref": uri},
            "kind": {"$ref": uri.rstrip("#") + "#/definitions/simpleTypes"},
        },
        "required": ["options"],
    }
    good = ['{"options": {"type": "string", "minLength": 2}, "kind": "array"}', '{"options": {}}']
    bad = ['{"options": {"type": 5}}', '{"options": {"minLength": -1}}', '{"kind": "list"}']
    bad.append('{"options": {"required": ["a", "a"]}}')
    good.append(f'{{"options": {AS_PEOPLE_WRITE_IT}}}')
    if uri == D04:  # draft-04's boolean exclusiveMinimum needs minimum; later drafts' is a number
        good.append('{"options": {"minimum": 1, "exclusiveMinimum": true}}')
        bad += ['{"options": {"exclusiveMinimum": true}}', '{"options": {"exclusiveMinimum": 1}}']
    else:
        good.append('{"options": {"exclusiveMinimum": 1, "propertyNames": {"maxLength": 3}}}')
        bad += ['{"options": {"exclusiveMinimum": true}}', '{"options": {"propertyNames": 1}}']
    _assert_agrees(schema, good, bad, whole=True)  # its uniqueItems need the guard


@pytest.mark.parametrize("identified", [False, True], ids=["no-$id", "$id"])
@pytest.mark.parametrize("uri", [D2019, D2020])
def test_a_vocabulary_metaschema_is_read_with_its_dynamic_references(
    uri: str, identified: bool
) -> None:
    """2019-09's and 2020-12's metaschemas join vocabularies with dynamic
    references, which must lead back to the whole metaschema: a subschema
    nested anywhere is checked against every vocabulary. A document with an
    id of its own enters the dynamic scope first (and must not make the
    metaschema compile twice, recursing into itself)."""
    schema = {"$schema": uri, **OBJ, "properties": {"schema": {"$ref": uri}}}
    if identified:
        schema["$id"] = "https://tools.example.com/registry.json"
    schema["required"] = ["schema"]
    good = ['{"schema": true}', '{"schema": {"properties": {"a": {"minLength": 2}}}}']
    good.append(f'{{"schema": {AS_PEOPLE_WRITE_IT}}}')
    good.append('{"schema": {"$defs": {"b": {"items": {"type": "string"}}}}}')
    bad = ['{"schema": {"type": "strin"}}', '{"schema": {"required": ["a", "a"]}}']
    bad += ['{"schema": {"properties": {"a": {"minLength": -1}}}}']  # validation, via applicator
    bad += ['{"schema": {"$defs": {"b": {"items": 5}}}}', '{"schema": {"$anchor": "1a"}}']
    _assert_agrees(schema, good, bad, whole=True)


@pytest.mark.parametrize(
    ("document", "reference"),
    [(D04, D07), (D2020, D2019), (D2019, D2020)],
    ids=["04-holding-07", "2020-12-holding-2019-09", "2019-09-holding-2020-12"],
)
def test_metaschemas_a_draft_cannot_say_stay_remote(document: str, reference: str) -> None:
    """Draft-04 has no propertyNames; 2019-09's recursive references are not 2020-12's."""
    assert "remote reference" in _refused({"$schema": document, "$ref": reference})


def test_harmless_metaschema_violations_are_accepted() -> None:
    schema = {
        "$schema": D04,
        **OBJ,
        "properties": {"n": {"type": "integer", "exclusiveMaximum": True}},
        "required": [],
    }
    _assert_agrees(schema, ['{"n": 5}', "{}"], ['{"n": "5"}'])
    assert _ignored(schema) == [("exclusiveMaximum", "/properties/n")]
    described = {
        **OBJ,
        "description": 5,
        "properties": {"n": {"type": "integer", "examples": 3, "deprecated": "use m"}},
    }
    _assert_agrees(described, ['{"n": 5}'], ['{"n": "5"}'])
    with pytest.raises(ConstraintError, match="/properties/description"):
        compile_json_schema({**OBJ, "properties": {"description": 5}})  # a property so named


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        pytest.param(
            {**OBJ, "properties": {"n": {"type": "int"}}},
            "invalid JSON Schema at /properties/n/type: 'int' is not a JSON Schema type "
            "(one of array, boolean, integer, null, number, object, string); "
            "'int' is probably 'integer'",
            id="type-int",
        ),
        pytest.param(
            {"type": ["string", "bool"]},
            "'bool' is not a JSON Schema type",
            id="type-list-bool",
        ),
        pytest.param(
            {"$schema": D04, "properties": {"a": {"minLength": "3"}}},
            "invalid JSON Schema at /properties/a/minLength: ",
            id="wrong-value-type",
        ),
        pytest.param(
            {"$schema": D07, "exclusiveMinimum": True},
            "invalid JSON Schema at /exclusiveMinimum: True is not of type 'number'",
            id="boolean-exclusive-in-draft-07",
        ),
    ],
)
def test_malformed_values_are_precise_400s(schema: object, expected: str) -> None:
    assert expected in _refused(schema)


# ---------------------------------------------------------------------------
# Annotations are never refused, and reported

ANNOTATIONS = [
    pytest.param({"type": "integer", "maxmimum": 3}, "maxmimum", "", id="typo"),
    pytest.param({"type": "string", "readonly": True}, "readonly", "", id="readonly-lowercase"),
    pytest.param({**OBJ, "javaType": "com.example.Pet"}, "javaType", "", id="javaType"),
    pytest.param({"type": "array", "_uniqueItems": True}, "_uniqueItems", "", id="_uniqueItems"),
    pytest.param({"type": "string", "tsType": "Email"}, "tsType", "", id="tsType"),
    pytest.param({"type": "string", "nullable": True}, "nullable", "", id="nullable"),
    pytest.param(
        {
            "oneOf": [{**OBJ, "properties": {"t": {"const": "a"}}, "required": ["t"]}],
            "discriminator": {"propertyName": "t"},
        },
        "discriminator",
        "",
        id="discriminator",
    ),
    pytest.param({"type": "string", "xml": {"name": "n"}}, "xml", "", id="xml"),
    pytest.param({"type": "string", "example": "x"}, "example", "", id="example"),
    pytest.param({"type": "string", "format": "phone"}, "format", "", id="format-phone"),
    pytest.param({"type": "string", "format": "URI"}, "format", "", id="format-URI"),
    pytest.param({"type": "number", "format": "float"}, "format", "", id="format-float"),
    pytest.param({"type": "number", "format": "double"}, "format", "", id="format-double"),
    pytest.param({"type": "string", "format": "byte"}, "format", "", id="format-byte"),
    pytest.param({"type": "string", "format": "binary"}, "format", "", id="format-binary"),
    pytest.param({"type": "string", "format": "password"}, "format", "", id="format-password"),
    pytest.param(
        {**OBJ, "properties": {"a": {"type": "string", "minLenght": 2}}},
        "minLenght",
        "/properties/a",
        id="nested-typo",
    ),
    pytest.param(
        {
            "$schema": D07,
            "definitions": {"a": {}},
            "properties": {"x": {"$ref": "#/definitions/a", "maxLength": 3}},
        },
        "maxLength",
        "/properties/x",
        id="draft-07-ref-siblings",
    ),
    pytest.param(
        {"$schema": D2020, "type": "array", "additionalItems": False},
        "additionalItems",
        "",
        id="additionalItems-in-2020-12",
    ),
    pytest.param(
        {"$schema": D07, "type": "array", "items": {}, "additionalItems": False},
        "additionalItems",
        "",
        id="additionalItems-without-tuple",
    ),
    pytest.param(
        {"$schema": D07, **OBJ, "dependentRequired": {"a": ["b"]}},
        "dependentRequired",
        "",
        id="2019-09-keyword-in-draft-07",
    ),
]


def test_hidden_siblings_are_not_refused_even_when_they_could_not_be_enforced() -> None:
    schema = {
        "$schema": D07,
        "definitions": {"a": {**OBJ, "properties": {"x": {"type": "integer"}, "y": {}}}},
        "$ref": "#/definitions/a",
        "if": {"required": ["x"]},
        "then": {"required": ["y"]},
    }
    _assert_agrees(schema, ['{"x": 1}'], ["1"])
    report = compile_json_schema(schema).report
    assert [(i.keyword, i.pointer) for i in report.ignored] == [("if", "")]
    assert dict(report.enforced) == {"$ref": 1, "properties": 1, "type": 2}


@pytest.mark.parametrize(("schema", "keyword", "pointer"), ANNOTATIONS)
def test_annotations_compile_strictly_and_are_reported(
    schema: dict, keyword: str, pointer: str
) -> None:
    constraint = compile_json_schema(schema, strict=True)
    assert (keyword, pointer) in [(i.keyword, i.pointer) for i in constraint.report.ignored]
    assert constraint.not_enforced == ()
    decoder = Decoder(constraint.value)
    for text in samples(decoder, 10, seed=1):
        assert constraint.judge(text) is None, (text, constraint.judge(text))


def test_the_judge_ignores_nullable_and_unknown_formats_too() -> None:
    constraint = compile_json_schema(
        {**OBJ, "properties": {"n": {"type": "string", "nullable": True, "format": "phone"}}}
    )
    decoder = Decoder(constraint.value)
    assert constraint.judge('{"n": null}') is not None and not decoder.accepts('{"n": null}')
    assert constraint.judge('{"n": "not a phone"}') is None
    assert decoder.accepts('{"n": "not a phone"}')
    (nullable, _format) = constraint.report.ignored
    assert "JSON Schema ignores it" in nullable.note and '"null" in "type"' in nullable.note


def test_annotation_notes_say_what_was_probably_meant() -> None:
    notes = {
        item.keyword: item.note
        for item in compile_json_schema(
            {"type": "string", "maxLenght": 3, "format": "URI", "x-vendor": 1, "title": "T"}
        ).report.ignored
    }
    assert notes == {
        "maxLenght": "not a JSON Schema keyword, so it constrains nothing "
        "(did you mean 'maxLength'?)",
        "format": "format 'URI' is not one this service checks, so it is an annotation "
        "(format names are case-sensitive: 'uri' is checked)",
    }


def test_strict_mode_still_refuses_what_constrains_next_to_annotations() -> None:
    schema = {
        "type": "array",
        "maxmimum": 3,
        "items": {"nullable": True},
        "uniqueItems": True,
        "minItems": 2,
    }
    assert _refused(schema) == (
        "keyword 'uniqueItems' at the root cannot be enforced during generation: "
        "xgrammar ignores it, and the decoder keeps items apart only for a schema given whole "
        "(response_format, json_schema) or a tool's parameters, not one inside a grammar"
    )


def test_annotations_inside_not_are_ignored_there() -> None:
    schema = {"not": {"type": "string", "nullable": True}}
    _assert_agrees(schema, ["1", "null"], ['"x"'])
    assert _ignored(schema) == [("nullable", "/not")]


# ---------------------------------------------------------------------------
# The report


def test_report_counts_enforced_keywords_by_subschema() -> None:
    schema = {
        "$schema": D04,
        "definitions": {"name": {"type": "string", "maxLength": 20}},
        **OBJ,
        "properties": {
            "first": {"$ref": "#/definitions/name"},
            "last": {"$ref": "#/definitions/name"},
            "age": {"type": "integer", "minimum": 0, "exclusiveMinimum": True, "javaType": "int"},
        },
        "required": ["first"],
        "title": "Person",
    }
    report = compile_json_schema(schema).report
    assert dict(report.enforced) == {
        "$ref": 2,
        "exclusiveMinimum": 1,
        "maxLength": 1,
        "minimum": 1,
        "properties": 1,
        "required": 1,
        "type": 3,
    }
    assert report.enforced_total == 10
    assert report.ignored == (
        KeywordAt(
            "javaType", "/properties/age", "not a JSON Schema keyword, so it constrains nothing"
        ),
    )
    assert report.not_enforced == ()


def test_report_lists_what_best_effort_does_not_enforce() -> None:
    schema = {**OBJ, "properties": {"tags": {"type": "array", "uniqueItems": True}}}
    constraint = compile_json_schema(schema, strict=False)
    (item,) = constraint.report.not_enforced
    assert (item.keyword, item.pointer) == ("uniqueItems", "/properties/tags")
    assert item.note.startswith("xgrammar ignores it, and the decoder keeps items apart only")
    assert constraint.not_enforced == ("uniqueItems at /properties/tags",)
    assert dict(constraint.report.enforced) == {"properties": 1, "type": 2}


def test_report_summary_is_short_ascii() -> None:
    schema = {
        **OBJ,
        "properties": {f"é,{i};": {"type": "string", "nullable": True} for i in range(40)},
    }
    summary = compile_json_schema(schema).report.summary()
    assert summary.startswith(
        "enforced=42; ignored=40; not_enforced=0; ignored_at=/properties/%C3%A9%2C0%3B/nullable,"
    )
    assert summary.isascii() and len(summary) <= MAX_REPORT_SUMMARY
    assert summary.endswith(",...") and summary.count("/nullable") == REPORT_SUMMARY_POINTERS
    huge = ConstraintReport(ignored=(KeywordAt("k" * 2000, ""),))
    assert len(huge.summary()) == MAX_REPORT_SUMMARY and huge.summary().endswith("...")


def test_typescript_constraints_have_a_report() -> None:
    constraint = compile_typescript("export interface P { x: number; tags: string[] }", "P")
    assert constraint.report.enforced_total > 0 and constraint.report.ignored == ()


def test_tools_report_each_strict_tool_under_its_pointer() -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "pay",
                "strict": True,
                "parameters": {
                    **OBJ,
                    "properties": {"amount": {"type": "number", "nullable": True}},
                },
            },
        },
        {"type": "function", "function": {"name": "note", "parameters": {**OBJ}}},
    ]
    report = tools_constraint(tools, "auto").report
    assert [str(item) for item in report.ignored] == [
        "nullable at /tools/0/function/parameters/properties/amount"
    ]
    assert [(item.keyword, item.pointer) for item in report.not_enforced] == [
        ("parameters", "/tools/1/function")
    ]
    assert dict(report.enforced) == {"properties": 1, "type": 2}
