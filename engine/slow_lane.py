"""Rows whose token masks are slow to fill, filled apart from the batch.

Why: the batch samples only once every constrained row's mask is filled, so
one grammar whose masks are slow to fill held every request in the batch to
its pace. Some are slow with nothing wrong in them: an ambiguous regex such
as ``([a-z]+ ?)+`` keeps many parses alive, and one of its masks took 2.7-6
ms to fill with the demo's 4k vocabulary and 80-170 ms (up to 500) with Llama
3's 128k one, against ~0.01 / 0.07 ms for a JSON row. Beside such a request,
JSON requests took 1.2-3.5x as long per token as beside a free one
(``python -m bench.slow_grammar``; 0.8-1.1x with this lane). Such a
grammar's first masks are cheap (0.6-1 ms for that regex at 128k; its slow
states come later), so its rows are found slow before they cost much.

A row found slow is filled here instead, on a thread of its own and into a
mask of its own, from the moment its next state is known (as the batch's
fills are, overlapping the forward). The engine samples it once that mask is
ready, keeping its logits meanwhile and feeding it nothing, while the rest
of the batch goes on at its own pace. A row whose fill here is fast again
goes back to the batch's fill.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

import torch
import xgrammar as xgr

# A row whose mask took this long to fill leaves the batch's fill (by
# default; the decoder's ``slow_mask_fill_ms``): seven JSON rows' worth with
# a 128k vocabulary, a fifth of a c=8 step on the demo model.
SLOW_ROW_FILL_S = 5e-4
# A row of the lane whose fill took less than this share of that rejoins the
# batch's fill (a lower bar than leaving it, so a row near the line does not flap).
FAST_AGAIN_SHARE = 0.25

# restrict(bitmask, row, limits): the decoder's limits beyond the grammar on a
# filled row (``StructuredOutputs.row_limits``: UTF-8, repeated names).
Restrict = Callable[[torch.Tensor, int, Any], None]


@dataclass
class _SlowRow:
    """A matcher of the lane (held weakly: the engine's row owns it) and the
    fill of its current state, once started."""

    matcher: weakref.ref[xgr.GrammarMatcher]
    mask: torch.Tensor
    fill: Future[float] | None = None


class SlowLane:
    """The slow rows, keyed by their matcher's ``id`` (matchers are not
    hashable); a row leaves when its matcher is collected."""

    def __init__(
        self, vocab_size: int, restrict: Restrict, slow_fill_s: float = SLOW_ROW_FILL_S
    ) -> None:
        """``slow_fill_s``: a fill this long sends its row here (0: every row)."""
        self.slow_fill_s = slow_fill_s
        self._fast_again_s = slow_fill_s * FAST_AGAIN_SHARE
        self._vocab_size = vocab_size
        self._restrict = restrict
        self._rows: dict[int, _SlowRow] = {}
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="slow-token-masks")

    def __bool__(self) -> bool:
        """Whether any row is in the lane: the engine's hot loops ask nothing else otherwise."""
        return bool(self._rows)

    def flag(self, matcher: xgr.GrammarMatcher) -> None:
        """Moves a row into the lane from its next fill on (any thread)."""
        key = id(matcher)
        if key in self._rows:
            return
        forget = lambda _ref, rows=self._rows, key=key: rows.pop(key, None)  # noqa: E731
        with torch.inference_mode(False):  # the lane's thread writes it outside inference mode
            mask = xgr.allocate_token_bitmask(1, self._vocab_size)
        self._rows[key] = _SlowRow(weakref.ref(matcher, forget), mask)

    def try_start(self, matcher: xgr.GrammarMatcher, limits: Any) -> bool:
        """Starts filling the mask of a lane row's current state (``limits``:
        what ``restrict`` takes for it); False for a batch row."""
        row = self._rows.get(id(matcher))
        if row is None:
            return False
        if row.fill is None:
            row.fill = self._pool.submit(self._fill, matcher, row.mask, limits)
        return True

    def started(self, matcher: xgr.GrammarMatcher | None) -> bool:
        """Whether the row's current mask is being (or has been) filled here."""
        row = self._rows.get(id(matcher)) if matcher is not None else None
        return row is not None and row.fill is not None

    def ready(self, matcher: xgr.GrammarMatcher) -> bool:
        row = self._rows.get(id(matcher))
        return row is not None and row.fill is not None and row.fill.done()

    def place(self, matcher: xgr.GrammarMatcher, bitmask: torch.Tensor, index: int) -> None:
        """Copies a ready mask into ``bitmask[index]`` for sampling (a failed
        fill raises here); the row leaves the lane if its fill was fast."""
        row = self._rows[id(matcher)]
        assert row.fill is not None
        seconds = row.fill.result()
        row.fill = None
        bitmask[index].copy_(row.mask[0])
        if seconds < self._fast_again_s:
            self._rows.pop(id(matcher), None)

    def wait(self, matchers: Sequence[xgr.GrammarMatcher], timeout_s: float) -> None:
        """Blocks until one of these rows' masks is ready, at most ``timeout_s``."""
        fills = [
            row.fill
            for row in (self._rows.get(id(matcher)) for matcher in matchers)
            if row is not None and row.fill is not None
        ]
        if fills:
            wait(fills, timeout=timeout_s, return_when=FIRST_COMPLETED)

    def _fill(self, matcher: xgr.GrammarMatcher, mask: torch.Tensor, limits: Any) -> float:
        started = time.perf_counter()
        matcher.fill_next_token_bitmask(mask, 0)
        self._restrict(mask, 0, limits)
        return time.perf_counter() - started

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
