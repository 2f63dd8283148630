"""Per-key token buckets: steady ``rate`` requests a second, bursts up to ``burst``.

Buckets exist only for configured key digests, made up front, so unknown
callers cannot grow memory. A lock guards each take, so the limiter is safe
from the event loop and from worker threads alike (a take never awaits).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable


class RateLimiter:
    """Token buckets keyed by key digest; ``take`` spends one token or says how long to wait."""

    def __init__(
        self,
        digests: Iterable[str],
        rate: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError("a rate limiter needs rate > 0 and burst >= 1")
        self._rate = rate
        self._burst = float(burst)
        self._clock = clock
        self._lock = threading.Lock()
        now = clock()
        # digest -> [tokens, last refill time]; full buckets to start.
        self._buckets = {digest: [self._burst, now] for digest in digests}

    def take(self, digest: str) -> int:
        """0 when the request may go ahead, else whole seconds (>= 1) until it could."""
        with self._lock:
            bucket = self._buckets[digest]
            now = self._clock()
            tokens = min(self._burst, bucket[0] + (now - bucket[1]) * self._rate)
            bucket[1] = now
            if tokens >= 1.0:
                bucket[0] = tokens - 1.0
                return 0
            bucket[0] = tokens
            return max(1, math.ceil((1.0 - tokens) / self._rate))
