"""engine.json_repeats: a JSON output's outline, and the tokens that would repeat a name or item."""

from __future__ import annotations

import json

import json_instances
import jsonschema
import numpy as np
import pytest
import torch
import xgrammar as xgr

from engine.json_repeats import JsonOutline, RepeatGuard, needs_outline
from grammar_compiler import ConstraintError, compile_json_schema
from grammar_compiler.json_schema.normalize import MAX_BOUNDED_UNIQUE_ITEMS

MAP = {"type": "object", "additionalProperties": {}}


def _keys_after(*pieces: bytes, schema: object = MAP) -> JsonOutline:
    outline = JsonOutline(schema)
    for piece in pieces:
        outline.push(piece)
    return outline


@pytest.mark.parametrize(
    ("pieces", "closings"),
    [
        ((b'{"ab": 1, "',), [b'ab"']),
        # Where a name is expected, the whole name in quotes, with or without a space.
        ((b'{"ab": 1,',), [b'"ab"', b' "ab"']),
        ((b"{",), []),
        ((b'{"ab": 1',), []),
        ((b'{"ab": 1, "a',), [b'b"']),
        ((b'{"ab": 1, "ab',), [b'"']),
        ((b'{"ab": 1, "x',), []),
        ((b'{"ab": 1, "ab": 2, "c": 3, "',), [b'ab"', b'c"']),
        # A name is being written only where an object expects one.
        ((b'{"ab": "',), []),
        ((b'{"ab": ["',), []),
        ((b'{"ab": [1, {"',), []),
        ((b'{"ab": [1, {"cd": 1}], "',), [b'ab"']),
        ((b'{"ab": [1, {"cd": 1},',), []),
        ((b'{"ab": [1, {"cd": 1}],',), [b'"ab"', b' "ab"']),
        ((b'{"ab": {"cd": 1}, "',), [b'ab"']),
        ((b'{"ab": {"cd": 1, "',), [b'cd"']),
        # Structure inside strings is text; an escaped quote does not end a name.
        ((b'{"a\\"b": "}, {\\"", "a\\"',), [b'b"']),
        ((b'{"a": 1, "a\\',), []),
        # Token boundaries fall anywhere.
        ((b"{", b'"a', b'b"', b": 1", b', "', b"a"), [b'b"']),
        ((b'[{"a": 1}, {"',), []),
    ],
)
def test_the_names_that_must_not_close_again(
    pieces: tuple[bytes, ...], closings: list[bytes]
) -> None:
    assert sorted(_keys_after(*pieces).texts_to_avoid()) == sorted(closings)


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        (
            {
                "type": "object",
                "properties": {"a": {"type": "string"}},
                "additionalProperties": False,
            },
            False,
        ),
        ({"type": "object", "properties": {"a": {"type": "string"}}}, False),
        ({"type": "object", "additionalProperties": {"type": "integer"}}, True),
        ({"type": "object"}, True),
        ({"type": "object", "properties": {"a": {}}, "additionalProperties": False}, True),
        ({"type": "array", "items": {"type": "object", "propertyNames": {"maxLength": 3}}}, True),
        ({"anyOf": [{"type": "string"}, {"type": "object", "additionalProperties": True}]}, True),
        (
            {
                "$defs": {"m": {"type": "object", "patternProperties": {"^x": {}}}},
                "$ref": "#/$defs/m",
            },
            True,
        ),
        ({"type": "array", "items": {"enum": [{"a": 1}]}}, False),
        ({"type": ["string", "number"]}, False),
        ({"type": "array", "items": {"type": "string"}, "uniqueItems": True}, True),
        ({"type": "array", "items": {"type": "string"}, "uniqueItems": False}, False),
        (True, True),
    ],
)
def test_which_schemas_need_an_outline(schema: object, expected: bool) -> None:
    assert needs_outline(schema) is expected


VOCABULARY = [b'"', b'b"', b"b", b'b":', b"x", b'bc"', b'"}', b'b"x', b"ab"]


def test_banned_tokens_start_with_the_rest_of_a_written_name_and_its_quote() -> None:
    guard = RepeatGuard(VOCABULARY)
    banned = guard.banned(_keys_after(b'{"ab": 1, "bc": 2, "a'))
    assert sorted(VOCABULARY[token] for token in banned or []) == [b'b"', b'b":', b'b"x']
    banned = guard.banned(_keys_after(b'{"ab": 1, "bc": 2, "'))
    assert [VOCABULARY[token] for token in banned or []] == [b'bc"']
    assert guard.banned(_keys_after(b'{"ab": 1, "b')) is None


def test_restrict_clears_banned_bits_unless_nothing_would_be_left() -> None:
    bitmask = xgr.allocate_token_bitmask(2, 70)
    RepeatGuard.restrict(bitmask, 1, [1, 31, 33, 64])
    allowed = [t for t in range(70) if bitmask[1, t // 32] >> (t % 32) & 1]
    assert allowed == [t for t in range(70) if t not in (1, 31, 33, 64)]
    assert bool((bitmask[0] == -1).all())  # other rows untouched
    only = torch.zeros(1, 3, dtype=torch.int32)
    only[0, 1] = 1 << 2  # token 34 alone
    RepeatGuard.restrict(only, 0, [34])
    assert only[0, 1] == 1 << 2


LISTS = {
    "type": "object",
    "properties": {
        "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        "ns": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
        "free": {"type": "array", "items": {"type": "string"}},
        "via": {"$ref": "#/$defs/Set"},
        "either": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/Set"}]},
        "rows": {"type": "array", "prefixItems": [{"$ref": "#/$defs/Set"}], "items": False},
        "long": {
            "type": "array",
            "items": {"enum": ["abc", "abd", "ab", "abcd", 1, 12]},
            "uniqueItems": True,
        },
    },
    "$defs": {"Set": {"type": "array", "items": {"enum": ["x", "y", 1]}, "uniqueItems": True}},
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("pieces", "texts"),
    [
        ((b'{"tags": [',), []),
        ((b'{"tags": ["ab", ',), [b'"ab"', b' "ab"']),
        ((b'{"tags": ["ab",',), [b'"ab"', b' "ab"']),
        ((b'{"tags": ["ab", "a',), [b'b"']),
        ((b'{"tags": ["ab", "ab"',), []),
        ((b'{"tags": ["a,]", "a',), [b',]"']),
        ((b'{"tags": ["a\\"b", "a\\"',), [b'b"']),
        ((b'{"ns": [12, 1',), [b"2,", b"2]"]),
        ((b'{"ns": [12, 12',), [b",", b"]"]),
        ((b'{"ns": [12,',), [b"12,", b"12]", b" 12,", b" 12]"]),
        ((b'{"ns": [12, 3], "tags": ["',), []),
        ((b'{"free": ["ab", "a',), []),
        # Listed values: kept out where writing a taken one becomes certain.
        ((b'{"via": [1, "x", "',), [b"x", b'y",']),
        ((b'{"via": [1, ',), [b"1", b" 1"]),
        ((b'{"either": ["x", ',), [b'"x', b' "x']),
        ((b'{"rows": [["y", ',), [b'"y', b' "y']),
        ((b'{"long": ["abc", "a',), [b'bc"']),  # "abcd" is still open
        ((b'{"long": ["abc", "ab',), [b'c"']),
        ((b'{"long": ["ab", "',), [b'ab"']),
        ((b'{"long": [1, ',), [b"1,", b"1]", b" 1,", b" 1]"]),
        ((b'{"tags": ["ab"], "free": ["ab", ',), []),
    ],
)
def test_the_items_a_unique_array_must_not_finish_again(
    pieces: tuple[bytes, ...], texts: list[bytes]
) -> None:
    """Found through properties, $ref, anyOf and prefixItems; a string item ends
    at its quote, any other at the comma or bracket after it."""
    outline = _keys_after(*pieces, schema=LISTS)
    assert sorted(outline.texts_to_avoid()) == sorted(texts)


def test_a_unique_root_array() -> None:
    schema = {"type": "array", "items": {"type": "boolean"}, "uniqueItems": True}
    outline = _keys_after(b"[true, ", schema=schema)
    # "t" makes true certain; false is the last value, so no comma may follow it.
    assert sorted(outline.texts_to_avoid()) == sorted([b"t", b" t", b"false,", b" false,"])


KEYED = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {"n": {"type": "number"}, "id": {"type": "string"}},
        "required": ["id"],
    },
    "uniqueItems": True,
    "x-unique-items-by": "id",
}


@pytest.mark.parametrize(
    ("pieces", "texts"),
    [
        ((b'[{"id": "ab"}, {"id": "a',), [b'b"']),
        ((b'[{"id": "ab"}, {"id": "ab',), [b'"']),
        ((b'[{"id": "ab"}, {"id": "abc',), []),
        ((b'[{"id": "ab"}, {"id"',), [b'"id"', b' "id"', b': "ab"', b'"ab"', b' "ab"']),
        ((b'[{"id": "ab"}, {"id": ',), [b'"ab"', b' "ab"']),
        ((b'[{"n": 1.0, "id": "ab"}, {"n": 1, "id": "a',), [b'b"']),  # 1.0 is 1
        ((b'[{"n": 2, "id": "ab"}, {"n": 1, "id": "a',), []),
        ((b'[{"n": 1, "id": "a\\\\"}, {"n": 1, "id": "a',), [b'\\\\"']),
        ((b'[{"id": "ab"}, {"id": "x"}, {"id": "',), [b'ab"', b'x"']),
    ],
)
def test_objects_kept_apart_by_a_member_must_not_end_it_as_a_taken_item(
    pieces: tuple[bytes, ...], texts: list[bytes]
) -> None:
    """The key is the members before the anchor (as values) and the anchor's text."""
    outline = _keys_after(*pieces, schema=KEYED)
    assert sorted(outline.texts_to_avoid()) == sorted(texts)


SMALL = {"type": "array", "items": {"type": "integer", "maximum": 1000}, "uniqueItems": True}


def test_a_sign_whose_every_integer_is_taken_is_kept_out() -> None:
    """xgrammar never writes -0, so with -1, -2 and -3 taken, "-" leads nowhere."""
    schema = {"type": "array", "items": {"type": "integer", "minimum": -3}, "uniqueItems": True}
    outline = _keys_after(b"[-1, -3, -2, ", schema=schema)
    assert b"-" in set(outline.texts_to_avoid())


@pytest.mark.parametrize(
    ("pieces", "texts"),
    [
        ((b"[1000, 100",), [b"0", b"0,", b"0]"]),  # 1000 is the only way on from 100
        ((b"[1000, ",), [b"1000", b" 1000", b"1000,", b"1000]", b" 1000,", b" 1000]"]),
        ((b"[999, 99",), [b"9", b"9,", b"9]"]),  # 999 can only end as 999 (at most 1000)
        ((b"[99, 9",), [b"9,", b"9]"]),  # 99 can still go on to 990..999
        ((b"[0, ",), [b"0", b" 0", b"-0", b" -0", b"0,", b"0]", b" 0,", b" 0]"]),
        ((b"[-5, -",), [b"5,", b"5]"]),  # no bound below: -5 goes on to -50
    ],
)
def test_integer_items_must_not_start_what_can_only_end_taken(
    pieces: tuple[bytes, ...], texts: list[bytes]
) -> None:
    outline = _keys_after(*pieces, schema=SMALL)
    assert sorted(outline.texts_to_avoid()) == sorted(texts)


MIXED = {
    "type": "array",
    "items": {
        "anyOf": [
            {"type": "integer", "minimum": 0, "maximum": 99},
            {"type": ["null", "boolean", "string"]},
        ]
    },
    "uniqueItems": True,
}


@pytest.mark.parametrize(
    ("pieces", "texts"),
    [
        # null is certain from its "n"; 9 may still go on to 90..99; "a" ends at its quote
        (
            (b'[null, 9, "a", ',),
            [
                b"n",
                b" n",
                b"null,",
                b" null,",
                b"null]",
                b" null]",
                b"9,",
                b" 9,",
                b"9]",
                b" 9]",
                b'"a"',
                b' "a"',
            ],
        ),
        ((b'[null, 9, "a", 9',), [b",", b"]"]),
        (
            (b"[true, false, ",),
            [
                b"t",
                b" t",
                b"f",
                b" f",
                b"true,",
                b" true,",
                b"true]",
                b" true]",
                b"false,",
                b" false,",
                b"false]",
                b" false]",
            ],
        ),
    ],
)
def test_scalar_items_of_several_kinds(pieces: tuple[bytes, ...], texts: list[bytes]) -> None:
    outline = _keys_after(*pieces, schema=MIXED)
    assert sorted(outline.texts_to_avoid()) == sorted(texts)


def _bounded_unique(low: int, high: int, *, keyed: bool = False, **array: object) -> dict:
    """A unique array of strings of ``low`` to ``high`` characters (``keyed``:
    of objects kept apart by such a string), compiled as a schema given whole."""
    string = {"type": "string", "minLength": low, "maxLength": high}
    items = (
        {"type": "object", "properties": {"id": string}, "required": ["id"]} if keyed else string
    )
    unique = {"type": "array", "items": items, **array, "uniqueItems": True}
    compiled = compile_json_schema(unique, strict=True, decoder_guard=True)
    return json.loads(compiled.value)


@pytest.mark.parametrize(
    ("pieces", "texts"),
    [
        ((b'["abc", "ab',), [b"c"]),  # "abc" is as long as they may be: its last "c" goes
        ((b'["abc", ',), [b'"abc', b' "abc']),
        ((b'["ab", "a',), [b'b"']),  # "ab" may still go on
        ((b'["ab", "abc", "ab',), [b'"', b"c"]),
        ((b'["abc", "abc',), [b'"']),  # already cornered (the guard then gives way)
    ],
)
def test_taken_strings_of_the_maximum_length_are_kept_out_before_their_quote(
    pieces: tuple[bytes, ...], texts: list[bytes]
) -> None:
    outline = _keys_after(*pieces, schema=_bounded_unique(0, 3, maxItems=5))
    assert sorted(outline.texts_to_avoid()) == sorted(texts)


@pytest.mark.parametrize(
    ("pieces", "texts"),
    [
        ((b'[{"id": "abc"}, {"id": "ab',), [b"c"]),
        ((b'[{"id": "abc"}, {"id": ',), [b'"abc', b' "abc']),
        ((b'[{"id": "abc"}, {"id"',), [b': "abc', b'"abc', b' "abc', b'"id"', b' "id"']),
        ((b'[{"id": "ab"}, {"id": "a',), [b'b"']),
    ],
)
def test_taken_anchors_of_the_maximum_length_are_kept_out_before_their_quote(
    pieces: tuple[bytes, ...], texts: list[bytes]
) -> None:
    schema = _bounded_unique(0, 3, keyed=True, maxItems=5)
    assert schema["x-unique-items-by"] == "id"
    assert sorted(_keys_after(*pieces, schema=schema).texts_to_avoid()) == sorted(texts)


@pytest.mark.parametrize("keyed", [False, True], ids=["strings", "objects"])
@pytest.mark.parametrize(("low", "high"), [(1, 1), (3, 3), (0, 2)])
def test_a_writer_always_choosing_the_first_allowed_token_is_never_cornered(
    low: int, high: int, keyed: bool
) -> None:
    """93 items of bounded strings (``MAX_BOUNDED_UNIQUE_ITEMS``), or of objects
    kept apart by one, each token the first the masks allow: the same start
    again and again, the hardest way to fill the array with different items.
    The guard never has to give way, and the output is valid."""
    schema = _bounded_unique(low, high, keyed=keyed, minItems=MAX_BOUNDED_UNIQUE_ITEMS)
    assert schema["maxItems"] == MAX_BOUNDED_UNIQUE_ITEMS
    assert len(_first_allowed_walk(schema)) == MAX_BOUNDED_UNIQUE_ITEMS


def _bounded_names(low: int, high: int, **counts: object) -> dict:
    """An open map whose names are ``low`` to ``high`` characters, as the service
    compiles it given whole."""
    names = {"minLength": low, "maxLength": high}
    schema = {"type": "object", "propertyNames": names, "additionalProperties": {"const": 0}}
    compiled = compile_json_schema({**schema, **counts}, strict=True, decoder_guard=True)
    return json.loads(compiled.value)


@pytest.mark.parametrize(
    ("pieces", "texts"),
    [
        ((b'{"ab": 0, "a',), [b"b"]),  # "ab" is as long as names may be: its "b" goes
        ((b'{"ab": 0,',), [b'"ab', b' "ab']),
        ((b'{"a": 0, "',), [b'a"']),  # "a" may still go on
        ((b'{"a": 0, "ab": 0, "a',), [b'"', b"b"]),
    ],
)
def test_taken_names_of_the_maximum_length_are_kept_out_before_their_quote(
    pieces: tuple[bytes, ...], texts: list[bytes]
) -> None:
    outline = _keys_after(*pieces, schema=_bounded_names(0, 2))
    assert sorted(outline.texts_to_avoid()) == sorted(texts)


def test_names_bounded_by_any_branch_through_a_shared_definition_are_kept_out_early() -> None:
    """Two branches bounding names alike share one definition of the names
    (``$ref``), and which branch xgrammar follows is not known: each bound
    counts (found by ``bench.schema_fuzz --seed 95``: '"  "' written twice)."""
    names = {"maxLength": 2}
    branches = [
        {"type": "object", "propertyNames": names, "additionalProperties": {"const": value}}
        for value in (0, 1)
    ]
    compiled = compile_json_schema({"anyOf": branches}, strict=True, decoder_guard=True)
    schema = json.loads(compiled.value)
    assert "$ref" in json.dumps(schema["anyOf"][0]["propertyNames"])
    assert list(_keys_after(b'{"ab": 0, "a', schema=schema).texts_to_avoid()) == [b"b"]


@pytest.mark.parametrize(("low", "high"), [(1, 1), (0, 2)])
def test_names_of_bounded_length_are_never_cornered(low: int, high: int) -> None:
    """93 names of at most one or two characters, each token the first the masks
    allow: no name is written twice (the guard gave way at the second name
    before, once the first allowed character was taken)."""
    schema = _bounded_names(low, high, minProperties=MAX_BOUNDED_UNIQUE_ITEMS)
    assert schema["maxProperties"] == MAX_BOUNDED_UNIQUE_ITEMS
    assert len(_first_allowed_walk(schema)) == MAX_BOUNDED_UNIQUE_ITEMS


@pytest.mark.parametrize(
    ("items", "count"),
    [
        ({"type": "string", "pattern": "^[A-Z][01]{10}$"}, 100),
        ({"type": "string", "format": "date"}, 60),
        ({"type": "string", "pattern": "^[a-c]+\\.io$", "maxLength": 6}, 39),  # every one
    ],
    ids=["binary", "date", "domains"],
)
def test_strings_of_a_pattern_are_counted_so_no_start_is_left_without_an_end(
    items: dict, count: int
) -> None:
    """The first allowed token every time: "A0000000000", "A0000000001", then
    "A000000000" has no ending left and must not be written again."""
    array = {"type": "array", "items": items, "minItems": count, "maxItems": count}
    array["uniqueItems"] = True
    schema = json.loads(compile_json_schema(array, strict=True, decoder_guard=True).value)
    assert schema["x-unique-items-counted"] is True
    assert _first_allowed_walk(schema) is not None
    if count == 39:  # 3 + 9 + 27 domains: a 40th is refused
        refused = {**array, "minItems": 40}
        with pytest.raises(ConstraintError, match="take 39 values"):
            compile_json_schema(refused, strict=True, decoder_guard=True)


def _anchored_objects(name: str, anchor: dict, count: int) -> tuple[dict, dict]:
    """A unique array of at least ``count`` objects with a boolean and the
    member ``name``, both required, and the schema compiled from it."""
    item = {
        "type": "object",
        "properties": {"ok": {"type": "boolean"}, name: anchor},
        "required": ["ok", name],
        "additionalProperties": False,
    }
    array = {"type": "array", "items": item, "minItems": count, "uniqueItems": True}
    compiled = compile_json_schema(array, strict=True, decoder_guard=True)
    return array, json.loads(compiled.value)


@pytest.mark.parametrize(
    ("anchor", "count"),
    [
        ({"type": "string", "format": "date"}, 40),
        ({"type": "string", "format": "uuid"}, 20),
        ({"type": "string", "pattern": "^[a-c]+\\.io$", "maxLength": 6}, 39),  # every one
    ],
    ids=["date", "uuid", "domains"],
)
def test_objects_anchored_by_a_counted_pattern_are_never_cornered(anchor: dict, count: int) -> None:
    """Objects kept apart by a required ``date`` or ``uuid`` member, written by
    the first allowed token each time (the other member always the same):
    each start of the anchor whose every ending earlier items took is kept
    out, so each item finds a new anchor."""
    array, schema = _anchored_objects("id", anchor, count)
    assert schema["x-unique-items-by"] == "id"
    assert schema["x-unique-items-counted"] is True
    assert schema.get("maxItems", count) >= count  # as many items as the anchor takes values
    items = _first_allowed_walk({**schema, "maxItems": count})
    assert len({entry["id"] for entry in items}) == len(items) == count
    if count == 39:  # every domain taken: the array holds no more, and a 40th is refused
        assert schema["maxItems"] == 39
        with pytest.raises(ConstraintError, match="take 39 values"):
            compile_json_schema({**array, "minItems": 40}, strict=True, decoder_guard=True)


@pytest.mark.parametrize(
    ("anchor", "count"),
    [
        ({"type": "integer"}, 30),
        ({"type": "number", "minimum": 0}, 30),
        ({"type": "integer", "minimum": -3, "maximum": 11}, 15),  # every one
    ],
    ids=["integer", "number", "range"],
)
def test_objects_anchored_by_an_integer_are_never_cornered(anchor: dict, count: int) -> None:
    """Objects kept apart by an integer member (a number written as one), the
    first allowed token each time: a taken integer is not ended again at its
    "," or "}", and a start every ending of which is taken is kept out."""
    _, schema = _anchored_objects("n", anchor, count)
    assert schema["x-unique-items-by"] == "n"
    items = _first_allowed_walk({**schema, "maxItems": count})
    assert len({entry["n"] for entry in items}) == len(items) == count
    assert all(isinstance(entry["n"], int) for entry in items)


@pytest.mark.parametrize(
    ("pieces", "texts"),
    [
        ((b'[{"n": 7}, {"n": ',), [b"7,", b"7}", b" 7,", b" 7}"]),
        ((b'[{"n": 7}, {"n"',), [b": 7,", b": 7}", b"7,", b"7}", b" 7,", b" 7}", b'"n"', b' "n"']),
        ((b'[{"n": 12}, {"n": 1',), [b"2,", b"2}"]),
        (  # "0" (and "-0") can only end as 0
            (b'[{"n": 0}, {"n": ',),
            [lead + text for lead in (b"", b" ") for text in (b"0", b"-0", b"0,", b"0}")],
        ),
        ((b'[{"n": 0, "m": 1}, {"n": 0, "m": 1',), []),  # the anchor has ended: not followed
    ],
)
def test_the_integers_a_keyed_item_must_not_end_or_start(
    pieces: tuple[bytes, ...], texts: list[bytes]
) -> None:
    item = {"type": "object", "properties": {"n": {"type": "integer"}, "m": {"type": "integer"}}}
    item["required"] = ["n"]
    array = {"type": "array", "items": item, "maxItems": 9, "uniqueItems": True}
    schema = json.loads(compile_json_schema(array, strict=True, decoder_guard=True).value)
    assert schema["x-unique-items-by"] == "n"
    assert sorted(set(_keys_after(*pieces, schema=schema).texts_to_avoid())) == sorted(texts)


_NINE_DAYS = b"[" + b", ".join(b'{"id": "2024-02-0%d"}' % day for day in range(1, 10)) + b", "


@pytest.mark.parametrize(
    ("pieces", "texts"),
    [
        # Nine days of February taken: "2024-02-0" has no ending left.
        ((_NINE_DAYS + b'{"id": "2024-0',), [b"2-0", *(b'2-0%d"' % day for day in range(1, 10))]),
        ((_NINE_DAYS + b'{"id": "2024-02-',), [b"0", *(b'0%d"' % day for day in range(1, 10))]),
        ((_NINE_DAYS + b'{"id": "2024-03-',), []),
        (
            (_NINE_DAYS + b'{"id"',),
            [
                lead + text
                for lead in (b": ", b"", b" ")
                for text in (b'"2024-02-0', *(b'"2024-02-0%d"' % day for day in range(1, 10)))
            ]
            + [b'"id"', b' "id"'],
        ),
        # Other members before the anchor: another item, whatever its anchor.
        ((b'[{"ok": true, "id": "2024-02-01"}, {"id": "2024-02-0',), []),
    ],
)
def test_the_dead_starts_of_a_counted_anchor(pieces: tuple[bytes, ...], texts: list) -> None:
    item = {"type": "object", "properties": {"id": {"format": "date", "type": "string"}}}
    item["required"] = ["id"]
    array = {"type": "array", "items": item, "maxItems": 20, "uniqueItems": True}
    schema = json.loads(compile_json_schema(array, strict=True, decoder_guard=True).value)
    assert sorted(_keys_after(*pieces, schema=schema).texts_to_avoid()) == sorted(texts)


def _first_allowed_walk(schema: dict) -> list:
    """The output of a writer taking the first token the masks allow each time;
    fails where the guard would have to give way."""
    vocabulary, end = json_instances.VOCABULARY, json_instances.END
    compiled = json_instances.Decoder(json.dumps(schema)).compiled
    matcher = xgr.GrammarMatcher(compiled)
    bitmask = xgr.allocate_token_bitmask(1, len(vocabulary))
    guard = RepeatGuard([token.encode("utf-8") for token in vocabulary])
    outline, written = JsonOutline(schema), []
    while not matcher.is_terminated():
        matcher.fill_next_token_bitmask(bitmask)
        bits = np.unpackbits(bitmask.numpy().view(np.uint8), bitorder="little")
        allowed = set(np.flatnonzero(bits[: len(vocabulary)]).tolist())
        allowed -= set(guard.banned(outline) or ())
        assert allowed, f"cornered after {''.join(written)!r}"
        token = min(allowed)
        assert matcher.accept_token(token)
        if token != end:
            written.append(vocabulary[token])
            outline.push(vocabulary[token].encode("utf-8"))
    items = json.loads("".join(written), object_pairs_hook=_pairs_once)
    if isinstance(items, list):
        assert len({json.dumps(item) for item in items}) == len(items)
    jsonschema.validate(items, schema, format_checker=jsonschema.FormatChecker())
    return items


def _pairs_once(pairs: list[tuple[str, object]]) -> dict:
    """An object whose names all differ (``json.loads`` would keep the last of two)."""
    names = [name for name, _ in pairs]
    assert len(set(names)) == len(names), f"a name written twice: {names}"
    return dict(pairs)
