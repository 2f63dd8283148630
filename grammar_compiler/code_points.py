"""Sets of Unicode code points as sorted, merged ``(low, high)`` ranges.

Both regex dialects (Python's and ECMA-262) are translated by computing the
exact set a class matches and writing it out positively, so they share this
arithmetic.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

Ranges = tuple[tuple[int, int], ...]


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
