"""The engine loop: iteration-level batching with grammar-constrained sampling.

Each step (1) admits requests whose grammar is compiled, prefilling their
prompts, (2) decodes one token for every running request in a single batched
forward call, (3) masks each constrained row with its xgrammar matcher's token
bitmask, samples, advances matchers and checks stop conditions, and (4) streams
the results to each request's sink. A request joins at the next step after its
grammar is ready and leaves the batch the moment it finishes.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field

import torch
import xgrammar as xgr

from engine.grammar_cache import GrammarCache
from engine.kv_batch import RunningBatch
from engine.metrics import EngineMetrics
from engine.model_runner import ModelRunner
from engine.request import FinishReason, GenerationRequest, StepOutput
from engine.sampler import (
    SamplingRow,
    apply_penalties,
    new_sampling_row,
    sample,
)
from engine.stop_strings import StopStringMatcher
from engine.text_window import TextWindow

logger = logging.getLogger(__name__)

CANCELLATION_MEMORY_S = 60.0


@dataclass
class _Waiting:
    """A request whose grammar is still compiling."""

    request: GenerationRequest
    grammar: Future[xgr.CompiledGrammar] | None
    since: float


@dataclass
class _Active:
    """A request in the running batch (or being prefilled this step)."""

    request: GenerationRequest
    matcher: xgr.GrammarMatcher | None
    sampling: SamplingRow
    text: TextWindow
    stops: StopStringMatcher | None
    max_tokens: int
    generated: int = 0
    last_token: int = -1
    finished: bool = field(default=False)


class Engine:
    """Owns the model and runs the decode loop on its own thread."""

    def __init__(
        self,
        runner: ModelRunner,
        grammars: GrammarCache,
        *,
        max_batch_size: int = 64,
        cancel_poll_interval_s: float = 0.05,
        compile_budget_s: float = 30.0,
        metrics: EngineMetrics | None = None,
    ) -> None:
        self._runner = runner
        self._grammars = grammars
        self._max_batch_size = max_batch_size
        self._cancel_poll_interval_s = cancel_poll_interval_s
        self._compile_budget_s = compile_budget_s
        self._metrics = metrics or EngineMetrics()
        self._inbox: queue.SimpleQueue[GenerationRequest | None] = queue.SimpleQueue()
        self._waiting: list[_Waiting] = []
        self._running: list[_Active] = []
        self._stepping: list[_Active] = []  # rows of the step in progress, failed together
        self._batch = RunningBatch()
        self._bitmask = xgr.allocate_token_bitmask(max_batch_size, runner.vocab_size)
        self._last_cancel_poll = 0.0
        self._cancel_ids: set[str] = set()
        self._cancel_lock = threading.Lock()
        # Named cancellations are remembered a while: one may overtake its request.
        self._cancelled_at: dict[str, float] = {}
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    # -- public interface -------------------------------------------------

    def submit(self, request: GenerationRequest) -> None:
        """Thread-safe; the request joins the batch at a coming step."""
        self._inbox.put(request)

    def cancel(self, request_id: str) -> None:
        """Thread-safe; cancels a waiting or running request at the next step.

        Triton propagates an ensemble's cancellation only between steps, never
        into the running decoder, so the frontend names the request instead.
        """
        with self._cancel_lock:
            self._cancel_ids.add(request_id)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="engine-loop", daemon=True)
        self._thread.start()

    def shutdown(self, timeout_s: float = 10.0) -> None:
        self._stopping.set()
        self._inbox.put(None)
        if self._thread is not None:
            self._thread.join(timeout_s)
        for waiting in self._waiting:
            waiting.request.sink.fail("server is shutting down", invalid_argument=False)
        for active in self._running:
            active.request.sink.fail("server is shutting down", invalid_argument=False)
        self._grammars.shutdown()

    # -- loop ---------------------------------------------------------------

    def _loop(self) -> None:
        while not self._stopping.is_set():
            idle = not self._waiting and not self._running
            try:
                self._drain_inbox(block=idle)
                self.step()
            except Exception:  # keep serving: fail this batch, never the process
                logger.exception("engine step failed; failing the running batch")
                self._fail_all_running("internal error during decoding")

    def _drain_inbox(self, *, block: bool) -> None:
        try:
            item = self._inbox.get(timeout=0.1) if block else self._inbox.get_nowait()
            while True:
                if item is not None:
                    self._accept_or_fail(item)
                item = self._inbox.get_nowait()
        except queue.Empty:
            pass

    def _accept_or_fail(self, request: GenerationRequest) -> None:
        try:
            self._accept(request)
        except Exception:  # one bad request must not take the loop down
            logger.exception("could not accept request %s", request.request_id)
            request.sink.fail("internal error while accepting the request", invalid_argument=False)

    def _accept(self, request: GenerationRequest) -> None:
        prompt_len = len(request.prompt_ids)
        if prompt_len == 0:
            request.sink.fail("the prompt is empty", invalid_argument=True)
            return
        if prompt_len >= self._runner.context_window:
            request.sink.fail(
                f"the prompt has {prompt_len} tokens; the model's context window is "
                f"{self._runner.context_window}",
                invalid_argument=True,
            )
            return
        if request.request_id in self._cancelled_at:
            self._end_unstarted(request)
            return
        grammar = (
            self._grammars.get(request.constraint) if request.constraint.is_constrained else None
        )
        self._waiting.append(_Waiting(request, grammar, time.monotonic()))

    def step(self) -> None:
        """One iteration: admit, prefill, decode, mask, sample, emit."""
        self._poll_cancellations()
        admitted = self._admit()
        rows = self._running + admitted
        self._stepping = rows
        if not rows:
            return
        logits_parts = []
        if self._running:
            logits_parts.append(
                self._runner.decode(self._batch, [active.last_token for active in self._running])
            )
        for active in admitted:
            logits, cache = self._runner.prefill(active.request.prompt_ids)
            self._batch.append(cache, len(active.request.prompt_ids))
            logits_parts.append(logits.unsqueeze(0))
        logits = torch.cat(logits_parts)[:, : self._runner.vocab_size]
        tokens = self._sample(logits, rows)
        for active, token in zip(rows, tokens, strict=True):
            self._advance(active, token)
        keep = [i for i, active in enumerate(rows) if not active.finished]
        self._batch.keep(keep)
        self._running = [rows[i] for i in keep]
        self._metrics.batch_state(waiting=len(self._waiting), running=len(self._running))

    def _admit(self) -> list[_Active]:
        admitted: list[_Active] = []
        still_waiting: list[_Waiting] = []
        capacity = self._max_batch_size - len(self._running)
        now = time.monotonic()
        for waiting in self._waiting:
            grammar = waiting.grammar
            if grammar is not None and not grammar.done():
                if now - waiting.since > self._compile_budget_s:
                    waiting.request.sink.fail(
                        f"the constraint did not compile within {self._compile_budget_s:g} s",
                        invalid_argument=True,
                    )
                else:
                    still_waiting.append(waiting)
                continue
            if len(admitted) >= capacity:
                still_waiting.append(waiting)
                continue
            active = self._activate(waiting)
            if active is not None:
                admitted.append(active)
        self._waiting = still_waiting
        return admitted

    def _activate(self, waiting: _Waiting) -> _Active | None:
        request = waiting.request
        matcher = None
        if waiting.grammar is not None:
            error = waiting.grammar.exception()
            if error is not None:
                request.sink.fail(
                    f"invalid {request.constraint.type.value} constraint: {error}",
                    invalid_argument=True,
                )
                return None
            matcher = xgr.GrammarMatcher(waiting.grammar.result())
        room = self._runner.context_window - len(request.prompt_ids)
        return _Active(
            request=request,
            matcher=matcher,
            sampling=new_sampling_row(
                request.params,
                request.prompt_ids,
                self._runner.vocab_size,
                self._runner.token_bytes,
            ),
            text=TextWindow(self._runner.token_bytes, request.prompt_ids),
            stops=StopStringMatcher(request.params.stop) if request.params.stop else None,
            max_tokens=min(request.params.max_tokens, room),
        )

    def _sample(self, logits: torch.Tensor, rows: list[_Active]) -> list[int]:
        sampling_rows = [active.sampling for active in rows]
        apply_penalties(logits, sampling_rows)
        constrained = [i for i, active in enumerate(rows) if active.matcher is not None]
        if constrained:
            bitmask = self._bitmask[: len(rows)]
            for i in constrained:
                rows[i].matcher.fill_next_token_bitmask(bitmask, i)
            xgr.apply_token_bitmask_inplace(logits, bitmask.to(logits.device), indices=constrained)
        eos = list(self._runner.eos_token_ids)
        for i, active in enumerate(rows):
            if active.request.params.ignore_eos:
                logits[i, eos] = float("-inf")
        return sample(logits, sampling_rows)

    def _advance(self, active: _Active, token: int) -> None:
        """Applies one sampled token to a request and emits what it completes."""
        active.generated += 1
        active.last_token = token
        active.sampling.record(token)
        matcher = active.matcher
        if matcher is not None and not matcher.accept_token(token):
            # Only reachable when every token was masked (ignore_eos on a fully
            # matched constraint): the constraint is complete, so stop there.
            active.generated -= 1
            self._finish(active, FinishReason.STOP, matched=matcher.is_completed())
            return
        if token in self._runner.eos_token_ids and not active.request.params.ignore_eos:
            self._finish(
                active, FinishReason.STOP, matched=matcher is None or matcher.is_completed()
            )
            return
        window = active.text.push(token)
        complete = matcher is not None and matcher.is_completed()
        stopped = active.stops is not None and active.stops.push(self._runner.token_bytes[token])
        if complete and active.request.params.stop_after_match:
            self._finish(active, FinishReason.STOP, matched=True, window=window)
        elif stopped and (matcher is None or complete):
            # A stop string never cuts a constrained output short of a match.
            self._finish(active, FinishReason.STOP, matched=complete, window=window)
        elif active.generated >= active.max_tokens:
            self._finish(active, FinishReason.LENGTH, matched=complete, window=window)
        elif window is not None:
            active.request.sink.send(StepOutput(window[0], window[1], active.generated))

    def _finish(
        self,
        active: _Active,
        reason: FinishReason,
        *,
        matched: bool,
        window: tuple[list[int], int] | None = None,
    ) -> None:
        """Sends the final output, carrying any text still held back."""
        if window is None:  # tokens may be held back mid-character: release them
            window = active.text.flush()
        active.finished = True
        self._metrics.request_finished(reason.value, active.generated)
        active.request.sink.send(
            StepOutput(
                window[0], window[1], active.generated, finish_reason=reason, matched=matched
            )
        )

    # -- cancellation and failure ---------------------------------------

    def _poll_cancellations(self) -> None:
        """Applies cancellations: named ones at once, and clients' own every few
        tens of milliseconds (each check is an IPC round trip inside Triton,
        too costly per token)."""
        with self._cancel_lock:
            named, self._cancel_ids = self._cancel_ids, set()
        now = time.monotonic()
        for request_id in named:
            self._cancelled_at[request_id] = now
        poll_clients = now - self._last_cancel_poll >= self._cancel_poll_interval_s
        if poll_clients:
            self._last_cancel_poll = now
            self._cancelled_at = {
                request_id: at
                for request_id, at in self._cancelled_at.items()
                if now - at < CANCELLATION_MEMORY_S
            }
        if not named and not poll_clients:
            return

        def cancelled(request: GenerationRequest) -> bool:
            return request.request_id in named or (poll_clients and request.sink.is_cancelled())

        for waiting in [w for w in self._waiting if cancelled(w.request)]:
            self._waiting.remove(waiting)
            self._end_unstarted(waiting.request)
        gone = [i for i, active in enumerate(self._running) if cancelled(active.request)]
        if gone:
            for i in gone:
                self._finish(self._running[i], FinishReason.CANCELLED, matched=False)
            keep = [i for i, active in enumerate(self._running) if not active.finished]
            self._batch.keep(keep)
            self._running = [self._running[i] for i in keep]

    def _end_unstarted(self, request: GenerationRequest) -> None:
        """Ends a request cancelled before it produced anything."""
        self._metrics.request_finished(FinishReason.CANCELLED.value, 0)
        request.sink.send(StepOutput([], 0, 0, finish_reason=FinishReason.CANCELLED))

    def _fail_all_running(self, message: str) -> None:
        for active in self._stepping:
            if not active.finished:
                self._metrics.request_finished("error", active.generated)
                active.request.sink.fail(message, invalid_argument=False)
        self._running = []
        self._stepping = []
        self._batch = RunningBatch()
