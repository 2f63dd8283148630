"""The strings ``Lowercase<string>``, ``Uppercase<string>``, ``Capitalize<string>``
and ``Uncapitalize<string>`` hold, as ECMA-262 regexes.

TypeScript takes a string literal as ``Lowercase<string>`` when lowercasing
it changes nothing (``s.toLowerCase() === s``; ``Capitalize`` looks at the
first UTF-16 unit only). So a character may be written where its mapping
leaves it alone. The mappings are Python's (``str.lower``/``str.upper``,
full case mapping, as JavaScript's), but Python's Unicode data is older than
Node's, and newer versions give existing letters new partners (Unicode 16
gave ``ƛ`` an uppercase form). A character of the opposite case's category
(a lowercase letter for ``Uppercase``) is therefore never written even when
Python maps it to itself, nor an unassigned one: checked against Node 20's
Unicode 17, every character kept is left alone there too. Characters beyond
the Basic Multilingual Plane are not written (pattern sets keep to it).
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Callable

_KEPT_OUT = {
    "lower": frozenset({"Cn", "Cs", "Lu", "Lt"}),
    "upper": frozenset({"Cn", "Cs", "Ll", "Lt"}),
}
_MAPPINGS: dict[str, Callable[[str], str]] = {"lower": str.lower, "upper": str.upper}


@functools.cache
def unchanged_ranges(direction: str) -> tuple[tuple[int, int], ...]:
    """The code point ranges ``direction`` ("lower" or "upper") leaves alone."""
    kept_out, mapping = _KEPT_OUT[direction], _MAPPINGS[direction]
    ranges: list[tuple[int, int]] = []
    for code in range(0x10000):
        character = chr(code)
        if unicodedata.category(character) in kept_out or mapping(character) != character:
            continue
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1] = (ranges[-1][0], code)
        else:
            ranges.append((code, code))
    return tuple(ranges)


@functools.cache
def _unchanged_class(direction: str) -> str:
    spans = (
        f"\\u{first:04x}" if first == last else f"\\u{first:04x}-\\u{last:04x}"
        for first, last in unchanged_ranges(direction)
    )
    return f"[{''.join(spans)}]"


def unchanged_pattern(intrinsic: str) -> str:
    """The strings the intrinsic (``Lowercase``, ...) maps to themselves."""
    if intrinsic in ("Lowercase", "Uppercase"):
        return f"{_unchanged_class('lower' if intrinsic == 'Lowercase' else 'upper')}*"
    first = _unchanged_class("upper" if intrinsic == "Capitalize" else "lower")
    return f"(?:{first}.*|)"
