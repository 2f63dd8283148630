"""Test helpers for JSON constraints: xgrammar as the decoder runs it, and JSON to feed it.

* :class:`Decoder` compiles a canonical JSON Schema the way
  ``engine.grammar_cache`` does (``compile_json_schema(value,
  any_whitespace=False)``) against a small raw vocabulary, answers whether
  a text is a complete match, and walks the grammar at random: every walk
  that ends is JSON xgrammar would let a model produce, so the judge must
  accept it. With ``guard=True`` its masks are also the decoder's for a
  schema given whole: no token that would repeat a name or a unique
  array's item (``engine.json_repeats``).
* :func:`instance_texts` is a hypothesis strategy for valid instances of a
  schema in the subset the tests use, written the way xgrammar lays JSON out
  (``", "`` and ``": "`` separators, properties in schema order, enum and
  const values compact). It is written from the schema, independently of
  the compiler, so the two can check each other. :func:`writes` says whether
  a schema stays inside that subset.
"""

from __future__ import annotations

import datetime
import json
import math
import random
from decimal import Decimal
from typing import Any

import numpy as np
import xgrammar as xgr
from hypothesis import strategies as st

from engine.json_repeats import JsonOutline, RepeatGuard, needs_outline
from grammar_compiler.json_schema.numbers import SAFE_INTEGER

# A raw vocabulary: every printable ASCII character, some JSON pieces, some
# characters beyond ASCII and escapes, and an end-of-sequence token.
VOCABULARY = [chr(code) for code in range(32, 127)] + [
    '": ',
    '", "',
    ', "',
    '{"',
    '"}',
    '["',
    '"]',
    "true",
    "false",
    "null",
    "é",
    "中",
    "😀",
    "\\n",
    '\\"',
    "\\\\",
    "\\u00e9",
    "\t",
    "</s>",
]
END = len(VOCABULARY) - 1
_TOKENIZER = xgr.TokenizerInfo(VOCABULARY, xgr.VocabType.RAW, stop_token_ids=[END])
_COMPILER = xgr.GrammarCompiler(_TOKENIZER, cache_enabled=False)
_CLOSING = frozenset('"}]')
_GUARD = RepeatGuard([token.encode("utf-8") for token in VOCABULARY])


class Decoder:
    """xgrammar compiling a canonical value exactly as the decoder does."""

    def __init__(self, canonical_value: str, *, guard: bool = False) -> None:
        self.compiled = _COMPILER.compile_json_schema(canonical_value, any_whitespace=False)
        self._matcher = xgr.GrammarMatcher(self.compiled, terminate_without_stop_token=True)
        schema = json.loads(canonical_value) if guard else None
        self._outline_schema = schema if guard and needs_outline(schema) else None

    def _outline(self) -> JsonOutline | None:
        return None if self._outline_schema is None else JsonOutline(self._outline_schema)

    def accepts(self, text: str) -> bool:
        """A complete match, written a character at a time (with the guard, a
        character it keeps out rejects the text)."""
        outline = self._outline()
        if outline is not None and not outline.writes_by_character(text):
            return False
        self._matcher.reset()
        return self._matcher.accept_string(text) and self._matcher.is_terminated()

    def sample(self, rng: random.Random, max_tokens: int = 400) -> str | None:
        """One random walk to the end of the grammar, or None if it ran too long.

        Closing characters are favoured so walks tend to finish.
        """
        matcher = xgr.GrammarMatcher(self.compiled)
        bitmask = xgr.allocate_token_bitmask(1, _TOKENIZER.vocab_size)
        outline = self._outline()
        pieces = []
        for _ in range(max_tokens):
            matcher.fill_next_token_bitmask(bitmask)
            if outline is not None:
                RepeatGuard.restrict(bitmask, 0, _GUARD.banned(outline))
            bits = np.unpackbits(bitmask.numpy().view(np.uint8), bitorder="little")
            allowed = [int(t) for t in np.flatnonzero(bits[: len(VOCABULARY)])]
            choices = [t for t in allowed if t != END]
            if END in allowed and (not choices or rng.random() < 0.3):
                return "".join(pieces)
            if not choices:
                raise AssertionError(f"xgrammar is stuck after {''.join(pieces)!r}")
            weights = [8 if _CLOSING & set(VOCABULARY[t]) else 1 for t in choices]
            token = rng.choices(choices, weights)[0]
            assert matcher.accept_token(token)
            pieces.append(VOCABULARY[token])
            if outline is not None:
                outline.push(VOCABULARY[token].encode("utf-8"))
        return None


def samples(decoder: Decoder, count: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    found = (decoder.sample(rng) for _ in range(count))
    return [text for text in found if text is not None]


# ---------------------------------------------------------------------------
# Valid instances, written as xgrammar writes them

# Characters for strings that xgrammar must produce without escapes
# (patterned or length-limited strings).
PLAIN = st.characters(
    min_codepoint=0x20, max_codepoint=0xFFFF, exclude_characters='"\\', exclude_categories=("Cs",)
)
_ASCII = st.characters(min_codepoint=0x20, max_codepoint=0x7E, exclude_characters='"\\')
MAX_DEPTH = 3


def compact(value: Any) -> str:
    """How xgrammar writes enum and const values."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def layout(value: Any) -> str:
    """How xgrammar writes other values: ", " and ": " separators, no other spaces."""
    return json.dumps(value, ensure_ascii=False)


def instance_texts(schema: Any) -> st.SearchStrategy[str]:
    return _Writer(schema).text(schema, 0)


_WRITTEN_KEYWORDS = frozenset(
    {
        "type",
        "enum",
        "const",
        "anyOf",
        "oneOf",
        "allOf",
        "$ref",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "prefixItems",
        "additionalItems",
        "minItems",
        "maxItems",
        "minLength",
        "maxLength",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "$defs",
        "definitions",
        "$schema",
        "$id",
        "$anchor",
        "maxProperties",  # not written: the judge filters the few instances over it
        "unevaluatedProperties",  # undeclared names go only in objects without properties
    }
)
_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "example", "$comment", "deprecated"}
    | {"readOnly", "writeOnly", "discriminator"}
)


_KIND_KEYWORDS = frozenset(
    {
        "properties",
        "required",
        "additionalProperties",
        "minProperties",
        "maxProperties",
        "items",
        "prefixItems",
        "minItems",
        "maxItems",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
    }
)


def _recursive_definitions(schema: dict) -> bool:
    """Whether a definition of ``schema`` refers to itself."""
    for key in ("$defs", "definitions"):
        for name, definition in schema.get(key, {}).items():
            if f'/{key}/{name}"' in json.dumps(definition):
                return True
    return False


def writes(schema: Any) -> bool:
    """Whether :func:`instance_texts` understands every keyword of ``schema``.

    Outside this subset (draft-04 boolean bounds, fractional steps, if/then,
    contains, vendor keywords, ...) the writer would draw instances from a
    different schema than the one the compiler reads.
    """
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, dict):
        return False
    keywords = {k for k in schema if k not in _ANNOTATIONS and not k.startswith("x-")}
    if keywords - _WRITTEN_KEYWORDS:
        return False
    if "format" in schema and schema["format"] not in _FORMATS:
        return False
    if any(isinstance(schema.get(k), bool) for k in ("exclusiveMinimum", "exclusiveMaximum")):
        return False
    if "multipleOf" in schema and not float(schema["multipleOf"]).is_integer():
        return False
    if "format" in schema and keywords & {"minLength", "maxLength"}:
        return False  # lengths folded into a format's regex: a subset when parts vary
    types = schema.get("type")
    if "array" in ([types] if isinstance(types, str) else types or []) and not (
        keywords & {"items", "prefixItems"}
    ):
        return False  # without items, strict xgrammar generates only []
    if "oneOf" in keywords:
        return False  # overlapping branches are enforced as a subset (each minus the others)
    if not str(schema.get("$ref", "#")).startswith("#"):
        return False  # a metaschema's URI: the writer reads only this document
    if _recursive_definitions(schema):
        return False  # the writer would follow the recursion without end
    children: list[Any] = []
    for key in ("additionalProperties", "items", "additionalItems"):
        value = schema.get(key)
        children += value if isinstance(value, list) else [] if value is None else [value]
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        children += schema.get(key, [])
    for key in ("properties", "$defs", "definitions"):
        children += schema.get(key, {}).values()
    return all(writes(child) for child in children)


class _Writer:
    def __init__(self, root: Any) -> None:
        self.root = root

    def text(self, schema: Any, depth: int) -> st.SearchStrategy[str]:
        if schema is True or schema == {}:
            return _any_json().map(layout)
        if "$ref" in schema:
            return st.deferred(lambda: self.text(self._resolve(schema["$ref"]), depth + 1))
        if "const" in schema:
            return st.just(compact(schema["const"]))
        if "enum" in schema:
            return st.sampled_from([compact(v) for v in schema["enum"]])
        for keyword in ("anyOf", "oneOf"):
            if keyword in schema:
                rest = {k: v for k, v in schema.items() if k != keyword}
                return st.one_of(
                    [self.text({**rest, **branch}, depth) for branch in schema[keyword]]
                )
        if "allOf" in schema:
            merged = {k: v for k, v in schema.items() if k != "allOf"}
            for branch in schema["allOf"]:
                merged = _merged(merged, self._inline(branch))
            return self.text(merged, depth)
        types = schema.get("type") or _implied_type(schema)
        types = [types] if isinstance(types, str) else types
        return st.one_of([self._typed(kind, schema, depth) for kind in types])

    def _inline(self, schema: Any) -> Any:
        while isinstance(schema, dict) and set(schema) == {"$ref"}:
            schema = self._resolve(schema["$ref"])
        return schema

    def _resolve(self, ref: str) -> Any:
        if not ref.startswith("#/") and ref != "#":
            return _anchored(self.root, ref.lstrip("#"))
        value = self.root
        for token in ref.lstrip("#").split("/")[1:]:
            token = token.replace("~1", "/").replace("~0", "~")
            value = value[int(token)] if isinstance(value, list) else value[token]
        return value

    def _typed(self, kind: str, schema: dict, depth: int) -> st.SearchStrategy[str]:
        if kind == "null":
            return st.just("null")
        if kind == "boolean":
            return st.sampled_from(["true", "false"])
        if kind == "integer":
            return _integers(schema).map(str)
        if kind == "number":
            return st.one_of(_integers(schema).map(str), _decimals(schema))
        if kind == "string":
            return _strings(schema).map(layout)
        if kind == "array":
            return self._array(schema, depth)
        return self._object(schema, depth)

    def _array(self, schema: dict, depth: int) -> st.SearchStrategy[str]:
        tuple_items = schema.get("items") if isinstance(schema.get("items"), list) else None
        prefix = [self.text(s, depth + 1) for s in tuple_items or schema.get("prefixItems", ())]
        rest = schema.get("additionalItems", False) if tuple_items else schema.get("items")
        items = (False if prefix else {}) if rest is None else rest  # none after a prefix
        low = schema.get("minItems", 0)
        high = schema.get("maxItems", max(low, len(prefix)) + (2 if depth < MAX_DEPTH else 0))
        if items is False:
            high = min(high, len(prefix))
        rest = self.text(items, depth + 1) if items is not False else None
        return (
            st.integers(low, high)
            .flatmap(
                lambda n: st.tuples(*(prefix[i] if i < len(prefix) else rest for i in range(n)))
            )
            .map(lambda values: "[" + ", ".join(values) + "]")
        )

    def _object(self, schema: dict, depth: int) -> st.SearchStrategy[str]:
        required = set(schema.get("required", ()))
        extra = schema.get("additionalProperties")
        undeclared = {} if extra in (None, True) else extra
        properties = {
            **schema.get("properties", {}),
            **{n: undeclared for n in sorted(required - set(schema.get("properties", {})))},
        }
        fields = []
        for name, sub in properties.items():
            if sub is False:
                continue
            value = self.text(sub, depth + 1).map(lambda v, n=name: f"{layout(n)}: {v}")
            if name in required:
                fields.append(value.map(lambda f: [f]))
            elif depth < MAX_DEPTH:
                fields.append(st.one_of(st.just([]), value.map(lambda f: [f])))
        if not properties and extra not in (None, False) and depth < MAX_DEPTH:
            value = self.text(extra if extra is not True else {}, depth + 1)
            entries = st.dictionaries(st.text(_ASCII, min_size=1, max_size=6), value, max_size=3)
            fields.append(entries.map(lambda d: [f"{layout(k)}: {v}" for k, v in d.items()]))
        return st.tuples(*fields).map(
            lambda parts: "{" + ", ".join(f for p in parts for f in p) + "}"
        )


def _anchored(schema: Any, anchor: str) -> Any:
    """The subschema with this ``$anchor``."""
    stack = [schema]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            if value.get("$anchor") == anchor:
                return value
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    raise KeyError(anchor)


def _implied_type(schema: dict) -> list[str]:
    """Without "type" every kind, each held to its own keywords (scalars where none constrain)."""
    if _KIND_KEYWORDS & set(schema):
        return ["null", "boolean", "object", "array", "string", "number"]
    return ["null", "boolean", "integer", "string"]


def _merged(a: dict, b: Any) -> dict:
    if not isinstance(b, dict):
        return a
    result = dict(a)
    for key, value in b.items():
        if key == "properties":
            result[key] = {**result.get(key, {}), **value}
        elif key == "required":
            result[key] = list(dict.fromkeys([*result.get(key, []), *value]))
        else:
            result.setdefault(key, value)
    return result


def _any_json() -> st.SearchStrategy[Any]:
    scalars = st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=8)
    return st.recursive(
        scalars,
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(st.text(_ASCII, max_size=5), inner, max_size=3)
        ),
        max_leaves=6,
    )


def _integers(schema: dict) -> st.SearchStrategy[int]:
    low = schema.get("minimum")
    high = schema.get("maximum")
    if "exclusiveMinimum" in schema:
        low = math.floor(schema["exclusiveMinimum"]) + 1
    if "exclusiveMaximum" in schema:
        high = math.ceil(schema["exclusiveMaximum"]) - 1
    # Within the default guard (grammar_compiler.json_schema.numbers.SAFE_INTEGER).
    low = -SAFE_INTEGER if low is None else max(math.ceil(low), -SAFE_INTEGER)
    high = SAFE_INTEGER if high is None else min(math.floor(high), SAFE_INTEGER)
    step = schema.get("multipleOf")
    if step is not None and float(step).is_integer():
        step = int(step)
        first, last = -(-low // step), high // step
        return st.integers(first, last).map(lambda k: k * step)
    return st.integers(low, high)


def _decimals(schema: dict) -> st.SearchStrategy[str]:
    low = schema.get("minimum", schema.get("exclusiveMinimum", -1e6))
    high = schema.get("maximum", schema.get("exclusiveMaximum", 1e6))
    values = st.decimals(Decimal(str(low)), Decimal(str(high)), places=3, allow_nan=False)
    exclusive = {schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")} - {None}
    return values.filter(lambda d: float(d) not in exclusive).map(_plain_decimal)


def _plain_decimal(value: Decimal) -> str:
    text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


_FORMATS = {
    "date": st.dates(min_value=datetime.date(1, 1, 1)).map(lambda d: d.isoformat()),
    "date-time": st.datetimes(min_value=datetime.datetime(1, 1, 1)).map(
        lambda d: d.isoformat(timespec="seconds") + "Z"
    ),
    "time": st.times().map(lambda t: t.isoformat(timespec="milliseconds") + "+01:00"),
    "email": st.from_regex(
        r"[a-z0-9_%+-]{1,10}(?:\.[a-z0-9]{1,8})?@[a-z0-9]{1,12}(?:\.[a-z]{2,6}){1,2}",
        fullmatch=True,
    ),
    "hostname": st.from_regex(
        r"[a-z0-9](?:[a-z0-9-]{0,8}[a-z0-9])?(?:\.[a-z]{2,6}){0,2}", fullmatch=True
    ),
    "idn-hostname": st.from_regex(
        r"[a-z0-9](?:-?[a-z0-9]){0,5}(?:\.[a-z]{2,6}){0,2}", fullmatch=True
    ),
    "ipv4": st.ip_addresses(v=4).map(str),
    "ipv6": st.ip_addresses(v=6).map(str),
    "uuid": st.uuids().map(str),
    "uri": st.from_regex(
        r"https?://[a-z]{1,8}\.[a-z]{2,4}(?:/[a-z0-9_-]{1,6}){0,3}(?:\?q=[a-z0-9]{1,4})?",
        fullmatch=True,
    ),
    "uri-template": st.from_regex(
        r"(?:[a-zé/.:-]|%2[0-9A-F]|\{[+#./;?&=,!@|]?[a-z_]{1,5}(?:\.[a-z]{1,3})?(?::[1-9]|\*)?"
        r"(?:,[a-z]{1,4})?\})*",
        fullmatch=True,
    ),
    "uri-reference": st.from_regex(
        r"(?:https://[a-z]{1,8}\.com)?(?:/[a-z0-9]{1,6}){0,3}", fullmatch=True
    ),
    "duration": st.from_regex(
        r"P[1-9]\d{0,2}D|PT[1-9]\d?H(?:[1-5]\dM)?|P\d{1,2}Y\d{1,2}M", fullmatch=True
    ),
    "regex": st.from_regex(
        r"\^?(?:[a-z]|\[[a-z0-9_]+\]|\.)(?:[a-z.]|\([a-z]*\))*[*+?]?\$?", fullmatch=True
    ),
    "json-pointer": st.from_regex(r"(?:/(?:[a-z]|~[01]){0,4}){0,3}", fullmatch=True),
    "relative-json-pointer": st.from_regex(
        r"(?:0|[1-9]\d?)(?:#|(?:/[a-z]{0,3}){0,2})", fullmatch=True
    ),
}


_FORMATS |= {"idn-email": _FORMATS["email"], "iri": _FORMATS["uri"]}
_FORMATS["iri-reference"] = _FORMATS["uri-reference"]


def _strings(schema: dict) -> st.SearchStrategy[str]:
    low = schema.get("minLength", 0)
    high = schema.get("maxLength")
    if schema.get("format") in _FORMATS:  # any other format is an annotation
        base = _FORMATS[schema["format"]]
    elif "pattern" in schema:
        base = st.from_regex(schema["pattern"], fullmatch=True, alphabet=_ASCII)
    else:
        alphabet = PLAIN if low or high is not None else st.characters(exclude_categories=("Cs",))
        return st.text(alphabet, min_size=low, max_size=high if high is not None else low + 12)
    return base.filter(lambda s: len(s) >= low and (high is None or len(s) <= high))
