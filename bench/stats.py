"""Pure statistics: percentiles, summaries, per-request TPOT, ratios.

Kept free of I/O and of any client library so tests can feed it fake
measurements and the report can recompute figures from raw numbers.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence


def percentile(values: Iterable[float], q: float) -> float | None:
    """Linear-interpolated percentile (numpy's default), q in 0..100; None when empty."""
    ordered = sorted(values)
    if not ordered:
        return None
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile {q} is outside 0..100")
    position = (len(ordered) - 1) * q / 100.0
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def mean(values: Iterable[float]) -> float | None:
    items = list(values)
    return sum(items) / len(items) if items else None


def summarize(values: Iterable[float], scale: float = 1.0) -> dict[str, float | int | None]:
    """Count, mean and percentiles of `values` multiplied by `scale` (1e3: seconds -> ms)."""
    scaled = [value * scale for value in values]
    return {
        "n": len(scaled),
        "mean": mean(scaled),
        "p50": percentile(scaled, 50),
        "p90": percentile(scaled, 90),
        "p99": percentile(scaled, 99),
        "min": min(scaled) if scaled else None,
        "max": max(scaled) if scaled else None,
    }


def tpot(first_token_s: float, last_token_s: float, tokens: int) -> float | None:
    """Time per output token after the first: (last - first) / (tokens - 1).

    The first token carries the prefill and queueing (that is TTFT's job), so it is
    left out; a request with fewer than two tokens has no TPOT.
    """
    if tokens < 2:
        return None
    return (last_token_s - first_token_s) / (tokens - 1)


def throughput(tokens: int, seconds: float) -> float | None:
    """Tokens per second over a wall-clock window; None for an empty window."""
    return tokens / seconds if seconds > 0 else None


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """numerator / denominator, None when either is missing or the denominator is 0."""
    if numerator is None or denominator is None or denominator == 0:
        return None
    return numerator / denominator


def difference(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def token_intervals(
    arrivals: Sequence[float], tokens: Sequence[int], start: float, end: float
) -> list[float]:
    """Seconds per token between consecutive responses lying wholly inside [start, end].

    A response may carry several tokens (bytes held back until a character is
    complete), so each gap is divided by the tokens it delivered.
    """
    if len(arrivals) != len(tokens):
        raise ValueError("arrivals and tokens differ in length")
    gaps = []
    for i in range(1, len(arrivals)):
        delivered = tokens[i] - tokens[i - 1]
        if delivered > 0 and start <= arrivals[i - 1] and arrivals[i] <= end:
            gaps.append((arrivals[i] - arrivals[i - 1]) / delivered)
    return gaps


def tokens_in_window(
    arrivals: Sequence[float], tokens: Sequence[int], start: float, end: float
) -> int:
    """Tokens delivered by the responses that arrived in (start, end]."""

    def delivered_by(moment: float) -> int:
        count = 0
        for arrival, total in zip(arrivals, tokens, strict=True):
            if arrival > moment:
                break
            count = total
        return count

    return delivered_by(end) - delivered_by(start)


def longest_gap(arrivals: Sequence[float], start: float, end: float) -> float:
    """The longest time inside [start, end] with no response arriving: a stall."""
    edges = [start, *(a for a in arrivals if start < a < end), end]
    return max(later - earlier for earlier, later in itertools.pairwise(edges))
