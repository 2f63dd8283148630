"""What the compiler's rendered string schemas say about their strings.

Shared by the decoder's two string followers: ``engine.string_lengths``
(maxLength kept by the decoder) and ``engine.json_repeats`` (unique arrays
of strings of bounded length, whose longest taken ones it keeps out before
their closing quote). Both read the pattern the compiler writes for a free
string of bounded length back into its lengths.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from grammar_compiler.ecma_regex import any_string, to_xgrammar

_COUNTED = re.compile(r"(\[[^{}]+\])(?:\{(\d+)\}\1)?\{(\d+)(?:,(\d+))?\}", re.DOTALL)
"""``C{n}``, ``C{m,n}`` or ``C{m}C{0,k}`` of one class ``C``: the compiler's
counted strings (the last where a count past 128 keeps its lower part apart)."""


@functools.lru_cache(maxsize=1024)
def free_string(low: int, high: int | None) -> str:
    """The pattern the compiler writes for any string of these lengths."""
    return to_xgrammar(any_string(low, high))


def free_string_lengths(pattern: Any) -> tuple[int, int] | None:
    """(minLength, maxLength) of a pattern that is the compiler's free string
    of a bounded length; else None."""
    counted = _COUNTED.fullmatch(pattern) if isinstance(pattern, str) else None
    if counted is None:  # one character is its class alone
        return (1, 1) if pattern == free_string(1, 1) else None
    before, first, last = counted[2], int(counted[3]), counted[4]
    low, high = (first, first) if last is None else (first, int(last))
    if before is not None:
        low, high = int(before), int(before) + high
    return (low, high) if pattern == free_string(low, high) else None


def may_be_string(schema: dict) -> bool:
    """Whether a rendered schema itself may take a string (its branches aside)."""
    if "type" in schema:
        types = schema["type"]
        return "string" in (types if isinstance(types, list) else [types])
    if "const" in schema:
        return isinstance(schema["const"], str)
    if "enum" in schema:
        return any(isinstance(value, str) for value in schema["enum"])
    # a schema of branches only is not a string itself: its branches are in the set
    return not {"$ref", "anyOf", "oneOf", "allOf"} & set(schema)
