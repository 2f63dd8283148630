"""Sets of Unicode code points as sorted, merged ``(low, high)`` ranges.

Both regex dialects (Python's and ECMA-262) are translated by computing the
exact set a class matches and writing it out positively, so they share this
arithmetic, and the sets Python's ``re`` gives its class escapes: the judge
of each dialect reads patterns with ``re``, so both need exactly those.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Iterable

Ranges = tuple[tuple[int, int], ...]

SURROGATES: Ranges = ((0xD800, 0xDFFF),)
"""Code points that cannot occur in UTF-8 text, so never in an output."""
SCALAR_VALUES: Ranges = ((0, 0xD7FF), (0xE000, sys.maxunicode))
"""Every code point but the surrogates: what UTF-8 text, so an output, can hold."""


def normalize(ranges: Iterable[tuple[int, int]]) -> Ranges:
    """Sorted, with overlapping and adjacent ranges merged."""
    merged: list[tuple[int, int]] = []
    for low, high in sorted(ranges):
        if merged and low <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(high, merged[-1][1]))
        else:
            merged.append((low, high))
    return tuple(merged)


def complement(ranges: Ranges) -> Ranges:
    """Every code point not in ``ranges`` (which must be normalized)."""
    gaps = []
    start = 0
    for low, high in ranges:
        if low > start:
            gaps.append((start, low - 1))
        start = high + 1
    if start <= sys.maxunicode:
        gaps.append((start, sys.maxunicode))
    return tuple(gaps)


def intersect(a: Ranges, b: Ranges) -> Ranges:
    """The code points in both (normalized) sets, normalized: a gap of one set lies
    between any two of the pieces, so none touch."""
    pieces = []
    i = j = 0
    while i < len(a) and j < len(b):
        low, high = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if low <= high:
            pieces.append((low, high))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return tuple(pieces)


def minus(a: Ranges, b: Ranges) -> Ranges:
    """The code points of ``a`` that are not in ``b`` (both normalized)."""
    return intersect(a, complement(b))


@functools.cache
def python_class_escapes(ascii_only: bool) -> dict[str, Ranges]:
    r"""What ``re`` matches with ``\d \D \w \W \s \S``, keyed by the escape, e.g. ``"\\d"``.

    Found by running ``re`` over every code point rather than from
    ``str.isdecimal`` and friends, so the sets are those of this
    interpreter's Unicode version, as the judges see them (computed once per
    flag, in under a second). Each upper-case escape is exactly the
    complement of its lower-case one in ``re``.
    """
    every_character = "".join(map(chr, range(sys.maxunicode + 1)))
    flags = re.ASCII if ascii_only else 0
    sets = {}
    for letter in "dws":
        found = re.finditer(f"\\{letter}+", every_character, flags)
        sets["\\" + letter] = tuple((match.start(), match.end() - 1) for match in found)
        sets["\\" + letter.upper()] = complement(sets["\\" + letter])
    return sets
