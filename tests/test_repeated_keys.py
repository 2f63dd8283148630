"""engine.repeated_keys: the names a JSON output wrote, and the tokens that would repeat one."""

from __future__ import annotations

import pytest
import torch
import xgrammar as xgr

from engine.repeated_keys import JsonKeys, RepeatedKeys, may_repeat_keys


def _keys_after(*pieces: bytes) -> JsonKeys:
    keys = JsonKeys()
    for piece in pieces:
        keys.push(piece)
    return keys


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
    assert sorted(_keys_after(*pieces).closings_to_avoid()) == sorted(closings)


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
        (True, True),
    ],
)
def test_which_schemas_may_repeat_a_name(schema: object, expected: bool) -> None:
    assert may_repeat_keys(schema) is expected


VOCABULARY = [b'"', b'b"', b"b", b'b":', b"x", b'bc"', b'"}', b'b"x', b"ab"]


def test_banned_tokens_start_with_the_rest_of_a_written_name_and_its_quote() -> None:
    guard = RepeatedKeys(VOCABULARY)
    banned = guard.banned(_keys_after(b'{"ab": 1, "bc": 2, "a'))
    assert sorted(VOCABULARY[token] for token in banned or []) == [b'b"', b'b":', b'b"x']
    banned = guard.banned(_keys_after(b'{"ab": 1, "bc": 2, "'))
    assert [VOCABULARY[token] for token in banned or []] == [b'bc"']
    assert guard.banned(_keys_after(b'{"ab": 1, "b')) is None


def test_restrict_clears_banned_bits_unless_nothing_would_be_left() -> None:
    bitmask = xgr.allocate_token_bitmask(2, 70)
    RepeatedKeys.restrict(bitmask, 1, [1, 31, 33, 64])
    allowed = [t for t in range(70) if bitmask[1, t // 32] >> (t % 32) & 1]
    assert allowed == [t for t in range(70) if t not in (1, 31, 33, 64)]
    assert bool((bitmask[0] == -1).all())  # other rows untouched
    only = torch.zeros(1, 3, dtype=torch.int32)
    only[0, 1] = 1 << 2  # token 34 alone
    RepeatedKeys.restrict(only, 0, [34])
    assert only[0, 1] == 1 << 2
