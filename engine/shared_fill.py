"""A token-mask fill that the thread waiting for it joins in.

Why: with a large vocabulary, one row's fill can take milliseconds where the
grammar allows most tokens (Llama 3's 128k vocabulary inside a JSON string
with a ``maxLength``: up to 3 ms), and 32 such rows on the one mask thread
beside a CPU forward outlast the forward itself (in process, c=32: 5.5 ms of
a 25 ms step spent waiting). By then the engine thread has nothing else to
do, so it fills rows too. xgrammar releases the GIL while it fills one
matcher's row, so two threads fill two rows at once (eight rows in the
slowest state: 4.97 ms on one thread, 2.81 ms on two); the rows are taken
one at a time from a shared cursor, so no row is filled twice.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future

import torch
import xgrammar as xgr

FillRow = Callable[[xgr.GrammarMatcher, torch.Tensor, int], None]


def fill_row(matcher: xgr.GrammarMatcher, bitmask: torch.Tensor, index: int) -> None:
    matcher.fill_next_token_bitmask(bitmask, index)


class SharedFill:
    """Fills bitmask row ``indices[i]`` from ``matchers[i]``, on a pool
    thread from ``start`` and on the caller's thread from ``result``."""

    def __init__(
        self,
        matchers: Sequence[xgr.GrammarMatcher],
        indices: Sequence[int],
        bitmask: torch.Tensor,
        fill: FillRow = fill_row,
    ) -> None:
        self._work = list(zip(matchers, indices, strict=True))
        self._bitmask = bitmask
        self._fill_row = fill
        self._next = 0
        self._lock = threading.Lock()
        self._pooled: Future[None] | None = None

    def start(self, pool: Executor) -> SharedFill:
        self._pooled = pool.submit(self._fill)
        return self

    def done(self) -> bool:
        return self._pooled is None or self._pooled.done()

    def result(self, timeout: float | None = None) -> None:
        """Fills the rows no thread has taken yet, then waits for the pool's
        last one; a fill's error is raised here, as a future's would be."""
        self._fill()
        if self._pooled is not None:
            self._pooled.result(timeout)

    def _fill(self) -> None:
        while True:
            with self._lock:
                if self._next >= len(self._work):
                    return
                matcher, index = self._work[self._next]
                self._next += 1
            self._fill_row(matcher, self._bitmask, index)
