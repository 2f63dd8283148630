"""A JSON string's maxLength kept by the decoder rather than by xgrammar.

Why: the compiler writes a string's length bounds into its pattern
(``[^"\\\\...]{0,255}``), and xgrammar 0.2.8 builds a counted repeat of a
character class with a state per count, for each of which it precomputes
token masks against the whole vocabulary. With Llama 3's 128k vocabulary a
``maxLength`` of 100 cost 0.8 s to compile, any above 128 2.4 s, each
distinct bound again, against 11 ms unbounded (demo vocabulary: 0.1 s). A
schema with ten bounds took seconds before its first token, and one with
a dozen above 128 ran past the 30 s compile budget and was refused.

So where it is safe (``bounded_strings``: among others, bounds no token
can pass in the step that opens the string) and the counts would take
xgrammar long to build (``compile_estimate_s``, against the decoder's
``GrammarCache`` threshold), the decoder compiles such a string without its
upper bound (``relaxed_schema``: ``{m,n}`` becomes ``{m,}``), follows the
output with its ``JsonOutline``, and while that string is being written
masks the tokens whose characters before a closing quote would pass the
bound (``LengthGuard``). The lower bound stays in the grammar (a few
states). The judge still checks the original schema. Below the threshold
the grammar keeps the bounds: following the output costs Python work on
every token, which a cheap compile does not repay.

Safe means the outline always knows it is writing that string: the schema
uses only keywords the outline follows, and wherever the outline may meet
the string, it is the one schema there that takes strings. Elsewhere (a
branch of ``anyOf`` beside another string, ``patternProperties``,
``not``, ...) the bound stays in the grammar.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from engine.json_repeats import MAX_SUBSCHEMAS, expanded, item_schemas, member_schemas
from engine.string_schemas import free_string, free_string_lengths, may_be_string
from grammar_compiler.json_schema.normalize import UNIQUE_BY, UNIQUE_COUNTED

_FOLLOWED = frozenset(
    {
        *("type", "properties", "additionalProperties", "required", "items", "prefixItems"),
        *("anyOf", "oneOf", "allOf", "$ref", "$defs", "definitions", "enum", "const"),
        *("pattern", "minItems", "maxItems", "minProperties", "maxProperties", "uniqueItems"),
        *("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"),
        *("description", "title", "$schema", UNIQUE_BY, UNIQUE_COUNTED),
    }
)
"""Keywords of the schemas the compiler writes that the outline follows, or
that constrain no string; any other anywhere leaves every bound to xgrammar."""
EXPANDED_COUNT_LIMIT = 128
"""The largest count xgrammar 0.2.8 writes out as a state per count."""
COUNT_PAST_LIMIT_STATES = 300
"""What a larger count of a string's characters costs it, in such states."""
SECONDS_PER_STATE_AND_TOKEN = 6.2e-8
"""8 ms per state with Llama 3's 128k vocabulary (maxLength 100: 0.8 s; above
128: 2.4 s; the demo's 4k vocabulary: maxLength 255 in 0.1 s)."""
_QUOTE = ord('"')


def string_bounds(pattern: Any) -> tuple[int, int] | None:
    """(minLength, maxLength) of a pattern that is the compiler's free string
    of a bounded length, with a count xgrammar would expand; else None."""
    lengths = free_string_lengths(pattern)
    return lengths if lengths is not None and lengths[1] >= 2 else None


def bounded_strings(root: Any, shortest: int = 0) -> dict[int, tuple[int, int]]:
    """The string schemas of ``root`` whose upper bound the decoder may keep,
    by ``id``, with (minLength, maxLength).

    Every set of schemas the outline may hold for a value is visited (from
    the root, through members' and items' schemas, as ``JsonOutline`` goes);
    a bounded string counts only where it is the one schema of its set that
    may be a string, and is kept only if it counts in every set it is in.
    Only bounds of at least ``shortest`` characters count: a token can open a
    string and write into it before the outline sees it open, at most
    ``quote_reach`` characters of the vocabulary.
    """
    if not _follows_all(root):
        return {}
    met: dict[int, tuple[int, int]] = {}
    shared: set[int] = set()
    seen: set[frozenset[int]] = set()
    pending = [expanded(root, [root])]
    while pending:
        schemas = pending.pop()
        key = frozenset(map(id, schemas))
        if key in seen:
            continue
        seen.add(key)
        strings = [schema for schema in schemas if may_be_string(schema)]
        for schema in strings:
            bounds = string_bounds(schema.get("pattern"))
            if bounds is not None and bounds[1] >= shortest:
                met[id(schema)] = bounds
                if len(strings) > 1 or len(schemas) >= MAX_SUBSCHEMAS:
                    shared.add(id(schema))
        pending += _inner_sets(root, schemas)
    return {key: bounds for key, bounds in met.items() if key not in shared}


def compile_estimate_s(bounds: Iterable[tuple[int, int]], vocab_size: int) -> float:
    """About how long xgrammar takes to build these bounded strings' counts
    (each distinct one once) against a vocabulary of ``vocab_size`` tokens."""
    states = sum(
        high if high <= EXPANDED_COUNT_LIMIT else COUNT_PAST_LIMIT_STATES for _, high in set(bounds)
    )
    return states * vocab_size * SECONDS_PER_STATE_AND_TOKEN


def relaxed_schema(root: Any, bounded: Mapping[int, tuple[int, int]]) -> str:
    """The schema xgrammar compiles: ``root`` (which it changes) with each
    string of ``bounded`` (``bounded_strings`` of ``root``) without its upper
    bound."""
    for schema in _all_schemas(root):
        if id(schema) in bounded:
            schema["pattern"] = free_string(bounded[id(schema)][0], None)
    return json.dumps(root, ensure_ascii=False)


def _inner_sets(root: Any, schemas: tuple[dict, ...]) -> list[tuple[dict, ...]]:
    """The schema sets of the values inside a value of ``schemas``."""
    found = []
    names = {name for schema in schemas for name in schema.get("properties", {})}
    for name in names:
        written = json.dumps(name, ensure_ascii=False)[1:-1].encode("utf-8")
        found.append(expanded(root, member_schemas(schemas, written)))
    found.append(expanded(root, member_schemas(schemas, None)))
    positions = max((len(schema.get("prefixItems", ())) for schema in schemas), default=0)
    found += [expanded(root, item_schemas(schemas, index)) for index in range(positions + 1)]
    return [inner for inner in found if inner]


def _follows_all(root: Any) -> bool:
    """Whether every schema in ``root`` uses only keywords the outline follows
    (or no string bound depends on), with local references and object items."""
    for schema in _all_schemas(root):
        if not _FOLLOWED.issuperset(schema):
            return False
        reference = schema.get("$ref")
        if reference is not None and not (reference == "#" or str(reference).startswith("#/")):
            return False
        if isinstance(schema.get("items"), list):
            return False
    return True


def _all_schemas(root: Any) -> list[dict]:
    """Every schema object in ``root``: the keywords' subschemas, not values."""
    found: list[dict] = []
    pending = [root]
    while pending:
        schema = pending.pop()
        if not isinstance(schema, dict):
            continue
        found.append(schema)
        for keyword in ("items", "additionalProperties"):
            pending.append(schema.get(keyword))
        for keyword in ("anyOf", "oneOf", "allOf", "prefixItems"):
            pending.extend(schema.get(keyword, ()))
        for keyword in ("properties", "$defs", "definitions"):
            pending.extend(schema.get(keyword, {}).values())
    return found


def quote_reach(token_bytes: Iterable[bytes]) -> int:
    """The most characters a token writes after a quote of its own (between
    two, or after its last): how far into a string it opens it may write
    before the outline knows that string is open."""
    return max(
        (_characters(part) for text in token_bytes for part in bytes(text).split(b'"')[1:]),
        default=0,
    )


def _characters(text: bytes) -> int:
    """Characters of UTF-8 text: its bytes that do not continue a sequence."""
    return sum(1 for byte in text if byte & 0xC0 != 0x80)


class LengthGuard:
    """The tokens that fit in what a bounded string has left, as bitmask rows.

    A token fits when its characters before a closing quote (all of them,
    without one) are no more than the room left: the quote ends the string,
    so what follows it is the grammar's business.
    """

    def __init__(self, token_bytes: Sequence[bytes], words: int) -> None:
        counts = np.zeros(words * 32, dtype=np.int64)
        for token, text in enumerate(token_bytes):
            counts[token] = _characters(bytes(text).split(b'"', 1)[0])
        self._counts = counts
        self._longest = int(counts.max(initial=0))
        self._rows: dict[int, torch.Tensor] = {}

    def restrict(self, bitmask: torch.Tensor, index: int, room: int | None) -> None:
        """Clears row ``index``'s tokens that would write more than ``room``
        characters of the string, unless no token would be left."""
        if room is None or room >= self._longest:
            return
        row = bitmask[index]
        kept = row.bitwise_and(self._fitting(max(room, 0)))
        if bool(kept.any()):
            row.copy_(kept)

    def _fitting(self, room: int) -> torch.Tensor:
        fitting = self._rows.get(room)
        if fitting is None:
            bits = np.packbits((self._counts <= room).reshape(-1, 32), axis=1, bitorder="little")
            fitting = torch.from_numpy(bits.view("<i4").reshape(-1).copy())
            self._rows[room] = fitting
        return fitting
