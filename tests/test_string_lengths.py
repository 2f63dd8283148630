"""The decoder keeps a string's maxLength itself where xgrammar would expand it
(``engine/string_lengths.py``): which strings, and that outputs stay valid."""

from __future__ import annotations

import json
import random

import jsonschema
import pytest
import torch
import xgrammar as xgr

from bench.json_grammar import JsonGrammar
from engine.grammar_cache import STRING_BOUNDS_ABOVE_S
from engine.json_repeats import JsonOutline
from engine.string_lengths import (
    LengthGuard,
    _all_schemas,
    bounded_strings,
    compile_estimate_s,
    quote_reach,
    relaxed_schema,
    string_bounds,
)
from grammar_compiler import compile_json_schema
from grammar_compiler.ecma_regex import any_string, to_xgrammar

# Tokens of several characters before, around and after a closing quote, and
# multi-byte characters (one token holds a lead byte, the next its rest).
_VOCABULARY = [
    *(chr(code) for code in range(32, 127)),
    *("ab", "abc", "abcd", "abcdefgh", 'ab"', 'abc"', 'a", "', '"}', '"]', '", "', '": "'),
    *("é", "中文", "😀", "\xe4\xb8", "\xad", "x😀y", '"ok"', "null", "], ", "[]", "</s>"),
]


def _compiler() -> xgr.GrammarCompiler:
    encoded = [t.encode("latin-1") if t in ("\xe4\xb8", "\xad") else t for t in _VOCABULARY]
    info = xgr.TokenizerInfo(encoded, xgr.VocabType.RAW, stop_token_ids=[len(encoded) - 1])
    return xgr.GrammarCompiler(info, cache_enabled=False)


def _canonical(schema: dict) -> str:
    return compile_json_schema(schema, decoder_guard=True).value


def _relaxed(canonical: str) -> str:
    root = json.loads(canonical)
    return relaxed_schema(root, bounded_strings(root))


@pytest.mark.parametrize(("low", "high"), [(0, 2), (0, 5), (2, 5), (5, 5), (0, 300), (3, 200)])
def test_the_compilers_bounded_free_strings_are_recognised(low: int, high: int) -> None:
    assert string_bounds(to_xgrammar(any_string(low, high))) == (low, high)


@pytest.mark.parametrize("pattern", ["[a-z]{0,5}", "[a-z]{2,5}", to_xgrammar(any_string(0, None))])
def test_other_patterns_are_left_to_xgrammar(pattern: str) -> None:
    assert string_bounds(pattern) is None


def test_bounded_members_items_and_shared_definitions_are_relaxed() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "maxLength": 5},
            "b": {"type": "string", "maxLength": 5},
            "c": {"type": ["string", "null"], "minLength": 2, "maxLength": 300},
            "d": {"type": "array", "items": {"type": "string", "maxLength": 3}},
        },
    }
    canonical = _canonical(schema)
    relaxed = _relaxed(canonical)
    assert len(bounded_strings(json.loads(canonical))) == 3  # "a" and "b" share one definition
    patterns = {node["pattern"] for node in _all_schemas(json.loads(relaxed)) if "pattern" in node}
    assert patterns == {to_xgrammar(any_string(0, None)), to_xgrammar(any_string(2, None))}


@pytest.mark.parametrize(
    "schema",
    [
        # another string beside it: the outline could not tell which is written
        {"anyOf": [{"type": "string", "maxLength": 5}, {"type": "string", "pattern": "^x+$"}]},
        # a keyword the outline does not follow
        {
            "type": "object",
            "patternProperties": {"^a": {"type": "string", "maxLength": 5}},
            "additionalProperties": False,
        },
    ],
)
def test_strings_the_outline_cannot_place_keep_their_bound_in_the_grammar(schema: dict) -> None:
    canonical = _canonical(schema)
    assert bounded_strings(json.loads(canonical)) == {}


def test_a_string_shared_with_a_place_it_cannot_be_told_apart_keeps_its_bound() -> None:
    bounded = {"type": "string", "maxLength": 4}
    schema = {
        "type": "object",
        "properties": {
            "alone": bounded,
            "beside": {"anyOf": [bounded, {"type": "string", "format": "date"}]},
        },
    }
    canonical = _canonical(schema)
    assert "{0,4}" in canonical
    assert bounded_strings(json.loads(canonical)) == {}


_SCHEMAS = [
    {"type": "string", "maxLength": 3},
    {"type": "string", "minLength": 2, "maxLength": 4},
    {
        "type": "object",
        "properties": {
            "a": {"type": "string", "maxLength": 2},
            "b": {"type": "array", "items": {"type": "string", "maxLength": 3}, "maxItems": 3},
            "c": {"type": ["string", "null"], "minLength": 1, "maxLength": 5},
            "d": {"type": "string", "maxLength": 140},
        },
        "required": ["a", "b", "c"],
        "additionalProperties": False,
    },
    {
        "type": "object",
        "additionalProperties": {"type": "string", "maxLength": 2},
        "maxProperties": 3,
    },
    {
        "type": "array",
        "prefixItems": [{"type": "string", "maxLength": 1}, {"type": "integer"}],
        "items": {"type": "string", "minLength": 3, "maxLength": 3},
        "maxItems": 4,
    },
]


@pytest.mark.parametrize(("schema", "reached"), list(zip(_SCHEMAS, [3, 4, 5, 2, 1], strict=True)))
def test_walks_with_the_length_guard_stay_valid_and_reach_the_bound(
    schema: dict, reached: int
) -> None:
    """Random walks through the relaxed grammar with the decoder's guard: every
    output the original schema's judge accepts, and strings reach ``reached``
    characters (the guard does not cut more than the bound)."""
    canonical = _canonical(schema)
    assert bounded_strings(json.loads(canonical))
    grammar = JsonGrammar(_compiler(), canonical)
    texts, _ = grammar.walks(300, seed=5)
    assert len(texts) > 100
    longest = 0
    for text in texts:
        value = json.loads(text)
        jsonschema.validate(value, schema)
        strings = _strings(value)
        longest = max([longest, *map(len, strings)])
    assert longest >= reached


def test_a_string_at_its_bound_takes_only_its_closing_quote() -> None:
    schema = {"type": "object", "properties": {"s": {"type": "string", "maxLength": 3}}}
    grammar = JsonGrammar(_compiler(), _canonical(schema))
    assert grammar.accepts('{"s": "a😀c"}')
    assert not grammar.accepts('{"s": "abcd"}')
    assert not grammar.accepts('{"s": "中文中文"}')


def test_the_guard_counts_characters_before_the_quote() -> None:
    tokens = [b"a", b"abc", b'ab"', b'abc", "x', b"\xe4\xb8", b"\xad", b'"']
    guard = LengthGuard(tokens, words=1)
    bitmask = torch.full((1, 1), -1, dtype=torch.int32)
    guard.restrict(bitmask, 0, 2)
    kept = {t for t in range(len(tokens)) if bitmask[0, 0] >> t & 1}
    assert kept == {0, 2, 4, 5, 6}
    bitmask.fill_(-1)
    guard.restrict(bitmask, 0, 0)
    assert {t for t in range(len(tokens)) if bitmask[0, 0] >> t & 1} == {5, 6}


def test_the_outline_counts_room_across_tokens() -> None:
    canonical = _canonical({"type": "array", "items": {"type": "string", "maxLength": 3}})
    schema = json.loads(canonical)
    outline = JsonOutline(schema, repeats=False, bounds=bounded_strings(schema))
    outline.push(b'["a')
    assert outline.room == 2
    outline.push("é".encode()[:1])
    assert outline.room == 1
    outline.push("é".encode()[1:] + b'", "')
    assert outline.room == 3
    outline.push(b'xy"]')
    assert outline.room is None


def test_only_slow_counts_are_worth_keeping_in_the_decoder() -> None:
    """A bound's cost grows with the vocabulary: maxLength 40 is cheap for the
    demo's 4k tokens and for 128k, 255 is not for 128k; each distinct bound
    counts once."""
    assert compile_estimate_s([(0, 40)], 4096) < STRING_BOUNDS_ABOVE_S
    assert compile_estimate_s([(0, 40)], 128_256) < STRING_BOUNDS_ABOVE_S
    assert compile_estimate_s([(0, 255)], 128_256) > STRING_BOUNDS_ABOVE_S
    assert compile_estimate_s([(0, 255)] * 9, 4096) == compile_estimate_s([(0, 255)], 4096)
    assert compile_estimate_s([(0, 200 + n) for n in range(12)], 4096) > STRING_BOUNDS_ABOVE_S


def test_bounds_a_token_could_pass_while_opening_its_string_stay_in_the_grammar() -> None:
    """A token can open a string and write into it before the outline sees the
    quote (``"../../`` in Llama 3's vocabulary, 32 characters at most there):
    only bounds at least that long are the decoder's."""
    assert quote_reach([b"abcdef", b'a"bc', b'"', 'x", "y\u00e9'.encode()]) == 2
    canonical = _canonical(
        {
            "type": "object",
            "properties": {
                "short": {"type": "string", "maxLength": 3},
                "long": {"type": "string", "maxLength": 40},
            },
        }
    )
    root = json.loads(canonical)
    assert sorted(bounded_strings(root).values()) == [(0, 3), (0, 40)]
    assert list(bounded_strings(root, shortest=4).values()) == [(0, 40)]


def test_a_token_that_opens_a_string_and_writes_into_it_keeps_within_the_bound() -> None:
    """Tokens such as ``"abcdefgh`` write eight characters of a string the
    outline has not yet seen open: bounds of at least eight are the decoder's
    (and hold, since the room is counted from the quote on), shorter ones
    stay in the grammar; either way every walk fits."""
    vocabulary = [*_VOCABULARY[:-1], '"abcdefgh', 'x", "abcdefgh', _VOCABULARY[-1]]
    encoded = [t.encode("latin-1") if t in ("\xe4\xb8", "\xad") else t for t in vocabulary]
    info = xgr.TokenizerInfo(encoded, xgr.VocabType.RAW, stop_token_ids=[len(encoded) - 1])
    compiler = xgr.GrammarCompiler(info, cache_enabled=False)
    for bound, kept in ((5, 0), (9, 1)):
        schema = {"type": "array", "items": {"type": "string", "maxLength": bound}}
        grammar = JsonGrammar(compiler, _canonical(schema))
        assert len(grammar._bounds) == kept
        texts, _ = grammar.walks(200, seed=bound)
        assert len(texts) > 50
        for text in texts:
            jsonschema.validate(json.loads(text), schema)


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    return []


def test_random_bounds_agree_with_the_judge() -> None:
    """Random lengths: every walk valid, and exactly-max strings accepted."""
    rng = random.Random(3)
    for _ in range(12):
        low = rng.randint(0, 3)
        high = rng.randint(max(low, 2), 8)
        schema = {"type": "array", "items": {"type": "string", "minLength": low, "maxLength": high}}
        grammar = JsonGrammar(_compiler(), _canonical(schema))
        for text in grammar.walks(40, seed=rng.randrange(1000))[0]:
            jsonschema.validate(json.loads(text), schema)
        assert grammar.accepts(json.dumps(["x" * high]))
        assert not grammar.accepts(json.dumps(["x" * (high + 1)]))
