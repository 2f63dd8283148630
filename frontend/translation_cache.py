"""Constraint translations cached by their text, with their hits, misses and time on /metrics.

A client that sends the same schema with every request pays for its
translation once; whether that happens (and what a miss costs) is what the
counters show. Mistakes are not cached: they raise on every lookup, each one a
miss.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Hashable
from typing import TypeVar

from frontend.metrics import CONSTRAINT_CACHE_LOOKUPS, CONSTRAINT_TRANSLATION

T = TypeVar("T")


def translation_cache(
    cache: str | Callable[..., str], *, maxsize: int = 512
) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """``functools.lru_cache`` that counts each lookup as a hit or a miss and
    times each translation. ``cache`` names the cache on the metrics, or takes
    the arguments and names it (one cache serving several languages)."""

    def name_of(*args: Hashable) -> str:
        return cache(*args) if callable(cache) else cache

    def decorate(translate: Callable[..., T]) -> Callable[..., T]:
        # Per thread: lru_cache calls the translation in the looking-up thread.
        lookup_state = threading.local()

        @functools.lru_cache(maxsize=maxsize)
        def cached(*args: Hashable) -> T:
            lookup_state.missed = True
            started = time.perf_counter()
            try:
                return translate(*args)
            finally:
                CONSTRAINT_TRANSLATION.labels(name_of(*args)).observe(time.perf_counter() - started)

        @functools.wraps(translate)
        def lookup(*args: Hashable) -> T:
            lookup_state.missed = False
            try:
                return cached(*args)
            finally:
                result = "miss" if lookup_state.missed else "hit"
                CONSTRAINT_CACHE_LOOKUPS.labels(name_of(*args), result).inc()

        return lookup

    return decorate
