"""Everything the engine does with grammars, behind one object.

The engine loop schedules: it decides which rows run, calls the model and
sends results. What a constraint means for a row — compiling it, a matcher per
choice, filling and applying token bitmasks, the text it forces next
(jump-forward) and whether a complete match could still grow — lives here, so
the loop reads as scheduling and the grammar side can be measured, replaced
or tested on its own (vLLM splits its ``StructuredOutputManager`` off the
scheduler for the same reason).
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, NamedTuple

import torch
import torch.nn.functional as F
import xgrammar as xgr

from engine.grammar_cache import GrammarCache
from engine.json_repeats import JsonOutline, RepeatGuard, needs_outline
from engine.params import Constraint, ConstraintType
from engine.shared_fill import FillRow, SharedFill, fill_row
from engine.slow_lane import SLOW_ROW_FILL_S, SlowLane
from engine.string_lengths import LengthGuard
from engine.tool_outline import Outline, ToolArguments, ToolCallsOutline, tool_arguments
from engine.utf8_guard import Utf8Guard

# Forced strings (JSON keys, literals) recur across requests; their
# tokenizations are kept until this many are known, then forgotten at once.
FORCED_TEXT_CACHE_SIZE = 4096
# Schemas whose outputs need an outline (``needs_outline``), parsed, by schema
# text (None: no outline), likewise.
OUTLINE_SCHEMA_CACHE_SIZE = 1024


class RowLimits(NamedTuple):
    """What a row's next token must respect beyond its grammar: the UTF-8
    lead byte its output ends in (``Utf8Guard``), the tokens that would
    repeat a name or a unique array's item where it is (``RepeatGuard``),
    and the characters a bounded string being written may still take
    (``LengthGuard``)."""

    lead: int | None = None
    banned: list[int] | None = None
    room: int | None = None


NO_LIMITS = RowLimits()


# Mask entries (rows x vocabulary) below which a fill runs on the calling thread:
# up to seven rows of a 4k vocabulary; a 128k one always fills beside the
# forward. A JSON row of the demo's 4k vocabulary takes ~8 µs, so at 32 rows
# the fill (0.26 ms) outweighs the hand-off (~80 µs): inline up to 64 rows, a
# c=32 JSON step spent 0.63 ms outside its parts, 0.36 ms with this limit.
INLINE_FILL_LIMIT = 1 << 15

# Beside a CPU forward (one mask thread), a fill predicted to take less than
# this (rows x the recent fill time of a row) runs on the engine thread rather
# than beside the forward: the two threads then contend for the GIL on every
# operation of the forward. 128k bench model, c=16, the bench's regex (0.25
# ms of fill a step): a step took 10.3-11.1 ms with the fill beside the
# forward (forward 8.0-8.7 ms) and 8.5-8.8 ms inline (forward 6.1-6.3 ms).
# Slow grammars (a ms a row) still fill beside it.
SHARED_FILL_ABOVE_S = 1.5e-3
# Beside a GPU (several mask threads) the same bar decides between one call
# on xgrammar's thread pool and a fill on the engine thread with a matcher of
# one thread: the pool's hand-off costs ~35 µs on two idle cores and took
# 1.7 ms a step on an H200's host for one JSON row (c=1, bench.gpu), where
# the row fills in ~5 µs alone. A pooled fill's time includes that hand-off,
# so only fills on one thread update the recent fill time of a row; after
# this many pooled fills the next runs on one thread to measure it again.
POOLED_FILLS_BETWEEN_MEASURES = 64
# Weight of the latest fill in the recent fill time of a row.
FILL_TIME_SMOOTHING = 0.2
# A batch fill that took the slow lane's bar tells no row's time; the next one
# then fills row by row, timing each (``engine/slow_lane.py``). If none was
# slow, this many batch fills pass before the next such probe: many rows of a
# large vocabulary add up to the bar with none of them slow.
FILLS_BETWEEN_PROBES = 64


class StructuredOutputs:
    """Compiled grammars, per-row matchers and the batch's token bitmask."""

    def __init__(
        self,
        grammars: GrammarCache,
        *,
        vocab_size: int,
        eos_token_ids: Sequence[int],
        token_bytes: Sequence[bytes],
        encode,
        max_batch_size: int,
        mask_threads: int,
        slow_mask_fill_s: float = SLOW_ROW_FILL_S,
    ) -> None:
        """``encode(text) -> ids`` is the served tokenizer without special
        tokens; forced text is only taken when those ids spell it exactly. A
        row whose mask takes ``slow_mask_fill_s`` to fill goes to the slow lane."""
        self._grammars = grammars
        self._vocab_size = vocab_size
        self._token_bytes = token_bytes
        self._encode = encode
        self._bitmask = xgr.allocate_token_bitmask(max_batch_size, vocab_size)
        self._utf8 = Utf8Guard(token_bytes, words=self._bitmask.shape[1])
        self._repeat_guard: RepeatGuard | None = None  # built for the first row that needs it
        self._length_guard: LengthGuard | None = None  # likewise
        # By schema text: the parsed schema, whether names or items may repeat,
        # and its strings whose maxLength the decoder keeps; None: no outline.
        self._outline_schemas: dict[str, tuple[Any, bool, dict] | None] = {}
        self._tool_arguments: dict[str, ToolArguments | None] = {}  # by grammar, likewise
        # Bitmask row -> its limits beyond the grammar, as of the row's last
        # fill; read by the filling thread.
        self._row_limits: dict[int, RowLimits | None] = {}
        # Recent fill time of one row, in seconds (SHARED_FILL_ABOVE_S).
        self._row_fill_s = 0.0
        # For can_continue, on the engine thread (the batch's rows fill on others).
        self._probe_bitmask = xgr.allocate_token_bitmask(1, vocab_size)
        self._bit_shifts = torch.arange(32, dtype=torch.int32)
        # Row b: the eight allowed-bits of bitmask byte value b, lowest bit first
        # (token 8 * byte_index + bit); as additive 0/-inf per logits dtype.
        self._byte_bits = ((torch.arange(256).unsqueeze(1) >> torch.arange(8)) & 1).bool()
        self._byte_bias: dict[tuple[torch.dtype, torch.device], torch.Tensor] = {}
        # xgrammar's GPU kernel is written in Triton; without that package
        # (it is not a requirement) masks are applied by byte lookup instead.
        self.xgrammar_gpu_kernel = importlib.util.find_spec("triton") is not None
        self._eos_ids = torch.tensor(sorted(eos_token_ids), dtype=torch.long)
        self._batch_matcher = xgr.BatchGrammarMatcher(max_threads=max(1, mask_threads))
        # Fills on the engine thread: one thread, none of the pool's hand-off.
        self._inline_matcher = (
            xgr.BatchGrammarMatcher(max_threads=1) if mask_threads > 1 else self._batch_matcher
        )
        self._pooled_fills_until_measure = POOLED_FILLS_BETWEEN_MEASURES
        self._mask_threads = mask_threads
        self._fill_row: FillRow = fill_row  # one row of a shared fill (a profile may time it)
        # No threads: masks fill on the engine thread, before the forward.
        self._mask_pool = (
            ThreadPoolExecutor(1, thread_name_prefix="token-masks") if mask_threads > 0 else None
        )
        self._forced_text_tokens: dict[str, list[int]] = {}
        self._last_pooled_fill: Future[None] | None = None
        # A shared fill also spreads each row it fills into that row's 0/-inf
        # bias, on the thread that filled it (beside the forward, or shared
        # with the waiting engine thread), so applying the masks after the
        # forward is one addition; ``_biased_rows`` are the rows whose bias
        # matches their bitmask row.
        self._row_bias: torch.Tensor | None = None
        self._biased_rows: set[int] = set()
        self._slow = SlowLane(vocab_size, self._restrict, slow_mask_fill_s)
        # Batch fills until the next may be filled row by row to find a slow row.
        self._fills_until_probe = 0
        self._probe_next_fill = False

    def compile(self, constraint: Constraint) -> Future[xgr.CompiledGrammar]:
        """A future of the compiled grammar (cached by the constraint)."""
        return self._grammars.get(constraint)

    @staticmethod
    def matcher(grammar: xgr.CompiledGrammar) -> xgr.GrammarMatcher:
        """A fresh matcher: one per choice, as each choice walks the grammar alone."""
        return xgr.GrammarMatcher(grammar)

    def reserve_rows(self, rows: int) -> None:
        """Grows the bitmask when one request's ``n`` exceeds the batch size."""
        if rows > self._bitmask.shape[0]:
            self._bitmask = xgr.allocate_token_bitmask(rows, self._vocab_size)
            self._row_bias = None
            self._biased_rows.clear()

    def lead_after(self, token: int) -> int | None:
        """What a row must remember after taking ``token`` for its next mask
        to keep its output valid UTF-8 (``row_limits``)."""
        return self._utf8.pending_lead(token)

    def json_outline(self, constraint: Constraint) -> Outline | None:
        """A fresh outline for a choice of a schema whose outputs may repeat a
        name or hold a unique array (``engine/json_repeats.py``), or of tool
        calls whose arguments may (``engine/tool_outline.py``); None for
        every other constraint."""
        if constraint.type is ConstraintType.EBNF:
            if constraint.value not in self._tool_arguments:
                if len(self._tool_arguments) >= OUTLINE_SCHEMA_CACHE_SIZE:
                    self._tool_arguments.clear()
                self._tool_arguments[constraint.value] = tool_arguments(constraint.value)
            arguments = self._tool_arguments[constraint.value]
            return None if arguments is None else ToolCallsOutline(arguments)
        if constraint.type is not ConstraintType.JSON_SCHEMA:
            return None
        if constraint.value not in self._outline_schemas:
            schema = json.loads(constraint.value)
            if len(self._outline_schemas) >= OUTLINE_SCHEMA_CACHE_SIZE:
                self._outline_schemas.clear()
            repeats, bounds = needs_outline(schema), self._grammars.kept_bounds(schema)
            followed = (schema, repeats, bounds) if repeats or bounds else None
            self._outline_schemas[constraint.value] = followed
        followed = self._outline_schemas[constraint.value]
        if followed is None:
            return None
        schema, repeats, bounds = followed
        return JsonOutline(schema, repeats=repeats, bounds=bounds)

    def row_limits(self, lead: int | None, outline: Outline | None) -> RowLimits | None:
        """A row's limits for its next fill (None: none, as for nearly every row)."""
        if outline is None:
            return None if lead is None else RowLimits(lead)
        banned = None
        if outline.repeats:
            if self._repeat_guard is None:
                self._repeat_guard = RepeatGuard(self._token_bytes)
            banned = self._repeat_guard.banned(outline)
        if outline.room is not None and self._length_guard is None:
            self._length_guard = LengthGuard(self._token_bytes, words=self._bitmask.shape[1])
        return RowLimits(lead, banned, outline.room)

    def _restrict(self, bitmask: torch.Tensor, index: int, limits: RowLimits | None) -> None:
        """Applies a filled row's limits beyond the grammar."""
        limits = limits or NO_LIMITS
        self._utf8.restrict(bitmask, index, limits.lead)
        RepeatGuard.restrict(bitmask, index, limits.banned)
        if limits.room is not None and self._length_guard is not None:
            self._length_guard.restrict(bitmask, index, limits.room)

    def fill_masks_async(
        self,
        matchers: Sequence[xgr.GrammarMatcher | None],
        limits: Sequence[RowLimits | None],
        *,
        first_row: int,
    ) -> Future[None] | SharedFill:
        """Fills the bitmask rows of the constrained ``matchers`` (row
        ``first_row + i`` for the i-th, limited as ``limits[i]`` says, from
        ``row_limits``): on other threads, overlapping the model's forward pass, when
        the work is large enough to pay for the hand-off (beside a CPU
        forward: predicted from recent fills to take ``SHARED_FILL_ABOVE_S``);
        at once on the calling thread otherwise, or always when
        ``mask_threads`` is 0.

        Handing a few microseconds of work to a thread pool costs more than
        the work (~80 µs against 1.3 µs for one row of a 4k vocabulary);
        sixteen rows of a 128k vocabulary take ~6 ms, which a thread beside
        the forward hides. With one mask thread (beside a CPU forward) the
        rows are shared with whoever waits for the result
        (``engine/shared_fill.py``); with more, xgrammar's batch API spreads
        them over its own threads.
        """
        constrained = [
            (first_row + i, matcher, row_limits)
            for i, (matcher, row_limits) in enumerate(zip(matchers, limits, strict=True))
            if matcher is not None
        ]
        if self._slow:  # rows of the slow lane fill there, into masks of their own
            constrained = [row for row in constrained if not self._slow.try_start(*row[1:])]
        if constrained:
            indices, rows, rows_limits = (list(part) for part in zip(*constrained, strict=True))
            self._biased_rows.difference_update(indices)
            self._row_limits.update(zip(indices, rows_limits, strict=True))
            beside_cpu_forward = self._mask_pool is not None and self._mask_threads == 1
            large = self._worth_a_thread(len(rows))
            if beside_cpu_forward and large:
                if self._row_bias is None:  # pages are touched only by rows in use
                    with torch.inference_mode(False):  # the pool thread writes it outside
                        self._row_bias = torch.empty(
                            self._bitmask.shape[0], self._bitmask.shape[1] * 32
                        )
                return SharedFill(rows, indices, self._bitmask, self._fill_and_spread_row).start(
                    self._mask_pool
                )
            fill = self._guarded_batch_fill
            # The batch matcher must never fill from two threads at once (its
            # thread pool aborts the process): while a fill is in flight on
            # the pool's one thread, a small fill queues behind it there.
            in_flight = self._last_pooled_fill is not None and not self._last_pooled_fill.done()
            if self._mask_pool is not None and (large or in_flight):
                self._last_pooled_fill = self._mask_pool.submit(
                    fill, rows, self._bitmask, indices, self._batch_matcher
                )
                return self._last_pooled_fill
            fill(rows, self._bitmask, indices, self._inline_matcher)
        done: Future[None] = Future()
        done.set_result(None)
        return done

    def _worth_a_thread(self, rows: int) -> bool:
        """Whether filling ``rows`` rows pays for a hand-off to another thread:
        enough vocabulary to fill, and a fill predicted to take
        ``SHARED_FILL_ABOVE_S`` (beside a CPU forward the two threads contend
        for the GIL; beside a GPU the pool's hand-off outweighs a short fill)."""
        if rows * self._vocab_size < INLINE_FILL_LIMIT:
            return False
        slow = rows * self._row_fill_s >= SHARED_FILL_ABOVE_S
        if self._mask_threads > 1:
            # Pooled fills' times do not tell a row's: now and then one inline.
            if self._pooled_fills_until_measure <= 0:
                self._pooled_fills_until_measure = POOLED_FILLS_BETWEEN_MEASURES
                return False
            if slow:
                self._pooled_fills_until_measure -= 1
        return slow

    def _fill_and_spread_row(
        self, matcher: xgr.GrammarMatcher, bitmask: torch.Tensor, index: int
    ) -> None:
        """One row of a shared fill: its bitmask row, then its bias row."""
        self._timed_row_fill(matcher, bitmask, index)
        self._restrict(bitmask, index, self._row_limits.get(index))
        assert self._row_bias is not None
        torch.index_select(
            self._byte_table(torch.float32, bitmask.device),
            0,
            bitmask[index].view(torch.uint8).int(),
            out=self._row_bias[index].view(-1, 8),
        )
        self._biased_rows.add(index)

    def _record_fill_time(self, row_seconds: float) -> None:
        """Folds one fill's time per row into the recent figure (read and
        written by whichever thread filled; a lost update only delays it)."""
        self._row_fill_s += FILL_TIME_SMOOTHING * (row_seconds - self._row_fill_s)

    def _timed_row_fill(
        self, matcher: xgr.GrammarMatcher, bitmask: torch.Tensor, index: int
    ) -> None:
        """Fills one row, which leaves for the slow lane if it was slow."""
        started = time.perf_counter()
        self._fill_row(matcher, bitmask, index)
        seconds = time.perf_counter() - started
        self._record_fill_time(seconds)
        if seconds >= self._slow.slow_fill_s:
            self._slow.flag(matcher)

    def _guarded_batch_fill(
        self,
        matchers: list[xgr.GrammarMatcher],
        bitmask: torch.Tensor,
        indices: list[int],
        batch_matcher: xgr.BatchGrammarMatcher,
    ) -> None:
        """The rows through ``batch_matcher``'s batch call, or one by one,
        timed, when the last batch call was slow enough to hide a slow row."""
        if self._probe_next_fill:
            self._probe_next_fill = False
            self._fills_until_probe = FILLS_BETWEEN_PROBES
            for matcher, index in zip(matchers, indices, strict=True):
                self._timed_row_fill(matcher, bitmask, index)
        else:
            started = time.perf_counter()
            batch_matcher.batch_fill_next_token_bitmask(matchers, bitmask, indices)
            seconds = time.perf_counter() - started
            if batch_matcher is self._inline_matcher:  # one thread: the rows' own time
                self._record_fill_time(seconds / len(matchers))
            self._fills_until_probe -= 1
            if seconds >= self._slow.slow_fill_s:
                if len(matchers) == 1:
                    self._slow.flag(matchers[0])
                elif self._fills_until_probe <= 0:
                    self._probe_next_fill = True
        limits = [self._row_limits.get(i) or NO_LIMITS for i in indices]
        self._utf8.restrict_rows(bitmask, indices, [row.lead for row in limits])
        for index, row in zip(indices, limits, strict=True):
            if row.banned:  # a few rows, a few steps: names and unique items being written
                RepeatGuard.restrict(bitmask, index, row.banned)
            if row.room is not None and self._length_guard is not None:
                self._length_guard.restrict(bitmask, index, row.room)

    @property
    def has_slow_rows(self) -> bool:
        """Whether any row fills in the slow lane (else none is ever parked)."""
        return bool(self._slow)

    def slow_fill_started(self, matcher: xgr.GrammarMatcher | None) -> bool:
        """Whether this row's mask is filled in the slow lane this step: it
        is sampled once that is ready (``place_slow_masks``), not with the batch."""
        return self._slow.started(matcher)

    def slow_mask_ready(self, matcher: xgr.GrammarMatcher) -> bool:
        return self._slow.ready(matcher)

    def wait_for_slow_masks(self, matchers: Sequence[xgr.GrammarMatcher], timeout_s: float) -> None:
        """Blocks until one of these rows' slow-lane masks is ready, at most ``timeout_s``."""
        self._slow.wait(matchers, timeout_s)

    def place_slow_masks(self, matchers: Sequence[xgr.GrammarMatcher], *, first_row: int) -> None:
        """Puts ready slow-lane masks at bitmask rows ``first_row`` on, for ``apply_masks``."""
        for offset, matcher in enumerate(matchers):
            self._slow.place(matcher, self._bitmask, first_row + offset)
            self._biased_rows.discard(first_row + offset)

    def keep_rows(self, first_row: int, kept: list[int]) -> None:
        """Moves bitmask rows ``first_row + kept[j]`` to ``first_row + j``:
        a group's rows after some left it to wait for the slow lane."""
        at = torch.tensor(kept, dtype=torch.long) + first_row
        self._bitmask[first_row : first_row + len(kept)] = self._bitmask[at]
        self._biased_rows.difference_update(range(first_row, first_row + len(kept)))

    def apply_masks(
        self, logits: torch.Tensor, constrained_rows: list[int], *, first_row: int = 0
    ) -> None:
        """Sets the logits of tokens the grammar forbids to -inf, in place:
        logits row ``i`` is masked by bitmask row ``first_row + i``."""
        if not constrained_rows:
            return
        bitmask = self._bitmask[first_row : first_row + logits.shape[0]]
        on_cuda = logits.device.type == "cuda"
        if (on_cuda and self.xgrammar_gpu_kernel) or sys.byteorder != "little":
            bitmask = bitmask.to(logits.device, non_blocking=True)
            xgr.apply_token_bitmask_inplace(logits, bitmask, indices=constrained_rows)
            return
        if logits.device.type == "cpu" and self._biased_rows.issuperset(
            first_row + i for i in constrained_rows
        ):
            assert self._row_bias is not None
            bias = self._row_bias[first_row : first_row + logits.shape[0], : logits.shape[1]]
            self._add_rows(logits, bias, constrained_rows)
            return
        self._apply_masks_by_bytes(logits, bitmask, constrained_rows)

    @staticmethod
    def _add_rows(logits: torch.Tensor, bias: torch.Tensor, constrained_rows: list[int]) -> None:
        """Adds ``bias`` rows to their logits rows: all at once, or the
        constrained ones (a free row's bias row is stale)."""
        if len(constrained_rows) == logits.shape[0]:
            logits.add_(bias)
        else:
            at_rows = torch.tensor(constrained_rows, device=logits.device)
            logits.index_add_(0, at_rows, bias.index_select(0, at_rows).to(logits.dtype))

    def _byte_table(self, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        """Row ``b``: the 0/-inf biases of the eight tokens of bitmask byte ``b``."""
        table = self._byte_bias.get((dtype, device))
        if table is None:
            table = torch.where(self._byte_bits, 0.0, float("-inf")).to(device, dtype)
            self._byte_bias[(dtype, device)] = table
        return table

    def _apply_masks_by_bytes(
        self, logits: torch.Tensor, bitmask: torch.Tensor, constrained_rows: list[int]
    ) -> None:
        """Adds 0 or -inf per token, looked up eight tokens (one bitmask byte
        of the little-endian int32 words) at a time: xgrammar's CPU kernel
        tests bit by bit (1.7 ms for eight rows of a 128k vocabulary; this
        takes 0.36), and torch's ``masked_fill`` is slower still. Plain torch
        operations, so it also serves a GPU without the ``triton`` package."""
        table = self._byte_table(logits.dtype, logits.device)
        every_row = len(constrained_rows) == logits.shape[0]
        words = bitmask if every_row else bitmask[constrained_rows]
        words = words.to(logits.device, non_blocking=True)
        bias = F.embedding(words.view(torch.uint8).int(), table).flatten(1)
        bias = bias[:, : logits.shape[1]]
        if every_row:
            logits.add_(bias)
        else:
            logits.index_add_(0, torch.tensor(constrained_rows, device=logits.device), bias)

    def forced_tokens(self, matcher: xgr.GrammarMatcher, budget: int) -> list[int]:
        """The tokenizer's tokens for the text the grammar forces next, at most
        ``budget``; the grammar has not yet been asked to accept them (the
        caller feeds them to the matcher one by one and stops at the first it
        refuses, which leaves the matcher as it was: trying them on a fork
        first cost more than all the other jump-forward work).

        The forced text's last token stays for the model to sample: what
        follows often merges with it (" 2" rather than " " then "2").
        """
        try:
            text = matcher.find_jump_forward_string()
        except UnicodeDecodeError:  # xgrammar 0.2.8 cannot return a partial character
            return []
        if not text:
            return []
        return self._tokens_of(text)[:-1][:budget]

    def _tokens_of(self, text: str) -> list[int]:
        """The tokenizer's ids for ``text`` when their bytes spell it exactly
        (a SentencePiece tokenizer may add a leading space to a lone string),
        else none."""
        ids = self._forced_text_tokens.get(text)
        if ids is None:
            ids = self._encode(text)
            spelled = b"".join(self._token_bytes[token] for token in ids)
            if spelled != text.encode("utf-8"):
                ids = []
            if len(self._forced_text_tokens) >= FORCED_TEXT_CACHE_SIZE:
                self._forced_text_tokens.clear()
            self._forced_text_tokens[text] = ids
        return ids

    def can_continue(self, matcher: xgr.GrammarMatcher) -> bool:
        """Whether the constraint allows any token but end-of-sequence next
        (one mask fill, only when a complete match reaches the token limit)."""
        matcher.fill_next_token_bitmask(self._probe_bitmask)
        words = self._probe_bitmask[0]
        allowed = ((words.unsqueeze(-1) >> self._bit_shifts) & 1).flatten()
        allowed = allowed[: self._vocab_size].clone()
        allowed[self._eos_ids] = 0
        return bool(allowed.any())

    def shutdown(self) -> None:
        self._grammars.shutdown()
        self._slow.shutdown()
        if self._mask_pool is not None:
            self._mask_pool.shutdown(wait=False)
