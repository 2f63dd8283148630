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
from transformers import DynamicCache

from engine.grammar_cache import GrammarCache
from engine.kv_batch import RunningBatch
from engine.logprobs import chosen_logprobs, prompt_logprobs
from engine.metrics import EngineMetrics
from engine.model_runner import ModelRunner
from engine.request import (
    BUSY_PREFIX,
    FinishReason,
    GenerationRequest,
    PromptDetails,
    StepOutput,
    TokenLogprob,
)
from engine.sampler import (
    SamplingRow,
    apply_penalties,
    invalid_logit_bias_tokens,
    new_sampling_row,
    sample,
)
from engine.shared_fill import SharedFill
from engine.slow_lane import SLOW_ROW_FILL_S
from engine.stop_strings import StopStringMatcher
from engine.structured_output import StructuredOutputs
from engine.text_window import TextWindow
from engine.tool_outline import Outline

logger = logging.getLogger(__name__)

CANCELLATION_MEMORY_S = 60.0
# The watcher thread's shortest pause between rounds (a 0 s poll interval
# means "as often as sensible", not a busy loop).
MIN_WATCH_INTERVAL_S = 0.005
# With every running row waiting for its slow-lane mask, the loop waits for
# one at most this long before it looks for new requests and cancellations.
PARKED_WAIT_S = 0.005
GPU_MASK_THREADS = 2


@dataclass
class _Waiting:
    """A request whose grammar is still compiling."""

    request: GenerationRequest
    grammar: Future[xgr.CompiledGrammar] | None
    since: float
    prompt_truncated: bool = False


@dataclass
class _RequestState:
    """What the choices of one request share."""

    request: GenerationRequest
    prompt_truncated: bool
    unfinished_choices: int
    prompt_pending: bool  # echo: the prompt details still have to be sent
    failed: bool = False


@dataclass
class _Prefill:
    """A request whose prompt is being run, a chunk per step, so long prompts
    do not stall the running batch; its choices join when it is done."""

    choices: list[_Active]
    cache: DynamicCache | None = None
    done_tokens: int = 0
    prompt_logits: list[torch.Tensor] = field(default_factory=list)  # echo with logprobs

    @property
    def request(self) -> GenerationRequest:
        return self.choices[0].request


@dataclass
class _Active:
    """One choice of a request in the running batch (or being prefilled this step)."""

    state: _RequestState
    choice_index: int
    matcher: xgr.GrammarMatcher | None
    sampling: SamplingRow
    text: TextWindow
    stops: StopStringMatcher | None
    max_tokens: int
    generated: int = 0
    next_input: list[int] = field(default_factory=list)
    """Tokens to feed the model at the next step: the sampled one, plus any
    jump-forward tokens."""
    finished: bool = field(default=False)
    pending_logprobs: list[TokenLogprob] = field(default_factory=list)
    # A window waiting for the stream interval: (ids, prefix_len), as TextWindow gives them.
    held: tuple[list[int], int] | None = None
    last_sent: float = 0.0  # monotonic time of the choice's last response
    cumulative_logprob: float = 0.0
    # A constrained row's output ends in a UTF-8 lead byte that restricts the
    # next byte (``StructuredOutputs.lead_after``).
    utf8_lead: int | None = None
    # The outline of its JSON output, where its schema lets a name or a
    # unique array's item repeat (``StructuredOutputs.json_outline``).
    outline: Outline | None = None
    # Its next-token logits, while its mask fills in the slow lane (``engine/slow_lane.py``).
    parked_logits: torch.Tensor | None = None
    # The state's request, kept at hand: read several times per row per step.
    request: GenerationRequest = field(init=False)

    def __post_init__(self) -> None:
        self.request = self.state.request


def default_mask_threads(runner: ModelRunner) -> int:
    """Beside a GPU, two threads fill masks. Once JSON strings' masks became
    cheap (a negated class: ~7 µs a row with 128k tokens) more threads cost
    more in hand-offs than they share: on an H200 (1B shape, 64 JSON rows,
    ``python -m bench.gpu``, four runs) the step with two threads took
    12.9 / 14.4 / 19.4 / 17.6 ms against 13.3 / 23.4 / 22.3 / 25.0 with
    eight, and its mask wait was shorter in every run. A grammar whose masks
    are slow is filled apart (``engine/slow_lane.py``). Beside a CPU's
    forward, one, on the core its ``torch_threads`` leave spare (more would
    fight the forward: a one-row demo forward took twice as long with two)."""
    return 1 if runner.model.device.type == "cpu" else GPU_MASK_THREADS


def default_decode_width_tokens(runner: ModelRunner) -> int:
    """Positions one decode step runs in all (rows times the widest row's new
    tokens): on a CPU each costs its share of the layers (demo model, 32 rows:
    3.1 ms one wide, 10.7 ms when jump-forward pads them to a few); a GPU runs
    a few hundred in the time of one."""
    return 64 if runner.model.device.type == "cpu" else 1024


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
        mask_threads: int | None = None,
        prefill_chunk_tokens: int = 512,
        decode_width_tokens: int | None = None,
        max_queued: int = 1024,
        slow_mask_fill_s: float = SLOW_ROW_FILL_S,
        metrics: EngineMetrics | None = None,
    ) -> None:
        self._runner = runner
        self._structured = StructuredOutputs(
            grammars,
            vocab_size=runner.vocab_size,
            eos_token_ids=runner.eos_token_ids,
            token_bytes=runner.token_bytes,
            encode=lambda text: runner.tokenizer.encode(text, add_special_tokens=False),
            max_batch_size=max_batch_size,
            mask_threads=default_mask_threads(runner) if mask_threads is None else mask_threads,
            slow_mask_fill_s=slow_mask_fill_s,
        )
        self._max_batch_size = max_batch_size
        self._cancel_poll_interval_s = cancel_poll_interval_s
        self._compile_budget_s = compile_budget_s
        self._metrics = metrics or EngineMetrics()
        self._inbox: queue.SimpleQueue[GenerationRequest | None] = queue.SimpleQueue()
        self._waiting: list[_Waiting] = []
        self._prefilling: list[_Prefill] = []
        self._prefill_chunk_tokens = prefill_chunk_tokens
        self._decode_width_tokens = (
            default_decode_width_tokens(runner)
            if decode_width_tokens is None
            else decode_width_tokens
        )
        # Requests waiting beyond the running batch; more are refused at once
        # rather than queued behind minutes of work.
        self._max_queued = max_queued
        self._running: list[_Active] = []
        self._stepping: list[_Active] = []  # rows of the step in progress, failed together
        self._model_seconds = 0.0  # the step in progress's time in the model's forward calls
        self._batch = RunningBatch()
        self._eos_ids = torch.tensor(sorted(runner.eos_token_ids), dtype=torch.long)
        # A CPU forward holds the engine thread until done: masks start filling
        # before it, on other threads. A GPU forward returns once its kernels
        # are queued, so masks filled after it overlap them, even inline.
        self._fill_before_forward = runner.model.device.type == "cpu"
        # Echo with logprobs: prompt entries computed at prefill, sent with the first output.
        self._prompt_logprobs: dict[str, list[TokenLogprob | None]] = {}
        self._last_cancel_poll = 0.0
        self._cancel_ids: set[str] = set()
        # Requests whose client left, found by the watcher thread (by id(), the
        # request kept alive so its id cannot be reused meanwhile).
        self._clients_left: dict[int, GenerationRequest] = {}
        self._cancel_lock = threading.Lock()
        # Named cancellations are remembered a while: one may overtake its request.
        self._cancelled_at: dict[str, float] = {}
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._watcher: threading.Thread | None = None

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
        self._watcher = threading.Thread(
            target=self._watch_clients, name="engine-client-watch", daemon=True
        )
        self._thread.start()
        self._watcher.start()

    def shutdown(self, timeout_s: float = 10.0) -> None:
        self._stopping.set()
        self._inbox.put(None)
        for thread in (self._thread, self._watcher):
            if thread is not None:
                thread.join(timeout_s)
        for waiting in self._waiting:
            waiting.request.sink.fail("server is shutting down", invalid_argument=False)
        self._fail_rows(
            self._running + [a for p in self._prefilling for a in p.choices],
            "server is shutting down",
        )
        self._structured.shutdown()

    # -- loop ---------------------------------------------------------------

    def _loop(self) -> None:
        while not self._stopping.is_set():
            idle = not self._waiting and not self._running and not self._prefilling
            try:
                if not idle:
                    self.wait_while_only_parked()
                self._drain_inbox(block=idle)
                self.step()
            except Exception:  # keep serving: fail this batch, never the process
                logger.exception("engine step failed; failing the running batch")
                self._fail_all_running("internal error during decoding")

    def wait_while_only_parked(self) -> None:
        """When every running row waits on a slow-lane mask, waits for one
        (``PARKED_WAIT_S`` at most, so new requests and cancellations are
        still seen) rather than spinning through empty iterations."""
        if self._only_parked_rows():
            self._structured.wait_for_slow_masks(
                [active.matcher for active in self._running], PARKED_WAIT_S
            )

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
        queued = len(self._waiting) + len(self._prefilling)
        if queued >= self._max_queued:
            self._metrics.request_finished("busy", 0)
            request.sink.fail(
                f"{BUSY_PREFIX}{queued} requests are already waiting for the decoder",
                invalid_argument=False,
            )
            return
        problem = self._request_problem(request)
        if problem is not None:
            message, field = problem
            request.sink.fail(message, invalid_argument=True, field=field)
            return
        truncated = self._fit_prompt(request)
        if truncated is None:
            return
        if request.request_id in self._cancelled_at:
            self._end_unstarted(request)
            return
        grammar = (
            self._structured.compile(request.constraint)
            if request.constraint.is_constrained
            else None
        )
        self._waiting.append(_Waiting(request, grammar, time.monotonic(), truncated))

    def _request_problem(self, request: GenerationRequest) -> tuple[str, str] | None:
        """Why the engine cannot run a request as asked, and the field at
        fault, if it cannot."""
        if not request.prompt_ids:
            # A tokenizer that adds a beginning-of-sequence token never gets here.
            return "the prompt is empty: there is no token to start from", "prompt"
        vocab = self._runner.vocab_size
        outside = [token for token in request.prompt_ids if not 0 <= token < vocab]
        if outside:
            return f"prompt token ids must be in 0..{vocab - 1}; got {outside[:5]}", "prompt"
        bad_bias = invalid_logit_bias_tokens(request.params, vocab)
        if bad_bias:
            return (
                f"logit_bias names token ids outside 0..{vocab - 1}: {bad_bias[:5]}",
                "logit_bias",
            )
        return None

    def _fit_prompt(self, request: GenerationRequest) -> bool | None:
        """Applies the request's context-window policy to its prompt.

        Returns whether the prompt was cut, or None when the request was refused.
        With ``context_overflow="truncate"`` only the prompt must fit (leaving
        room for one token; ``max_tokens`` is lowered later); with ``"error"``
        the prompt plus ``max_tokens`` must.
        """
        params, window = request.params, self._runner.context_window
        prompt_len = len(request.prompt_ids)
        budget = window - params.max_tokens if params.context_overflow == "error" else window - 1
        if prompt_len <= budget:
            return False
        if params.truncate_prompt and budget >= 1:
            request.prompt_ids = request.prompt_ids[-budget:]
            return True
        if params.context_overflow == "error":
            message = (
                f"the prompt ({prompt_len} tokens) plus max_tokens ({params.max_tokens}) exceeds "
                f"the model's context window of {window} tokens"
            )
        else:
            message = f"the prompt has {prompt_len} tokens; the model's context window is {window}"
        # Under "error", a prompt that leaves room for a token is refused for max_tokens' sake.
        fits_alone = prompt_len < window
        field = "max_tokens" if params.context_overflow == "error" and fits_alone else "prompt"
        request.sink.fail(message, invalid_argument=True, field=field)
        return None

    def step(self) -> None:
        """One iteration: admit, prefill, decode, mask, sample, emit; its
        time and the model's share of it go to the metrics (an iteration that
        neither ran the model nor sampled is not a step)."""
        started = time.perf_counter()
        self._model_seconds = 0.0
        if self._step():
            self._metrics.step_finished(time.perf_counter() - started, self._model_seconds)

    def _timed_model_call(self, call, *args, **kwargs):
        """Runs one of the runner's forward calls, adding its time to the
        step's model time (on a GPU: until its kernels are queued)."""
        started = time.perf_counter()
        try:
            return call(*args, **kwargs)
        finally:
            self._model_seconds += time.perf_counter() - started

    @torch.inference_mode()
    def _step(self) -> bool:
        """Under inference mode, so the forward's (inference) logits can be
        masked and sampled in place. Whether it ran the model or sampled."""
        self._poll_cancellations()
        self._prefilling.extend(self._admit())
        self._stepping = self._running + [a for p in self._prefilling for a in p.choices]
        if not self._stepping:
            return False
        self._structured.reserve_rows(len(self._stepping))
        resumed = self._resume_parked()
        feeds, ready = self._decode_feeds()
        sampling = [active for active, done in zip(self._running, ready, strict=True) if done]
        # The sampling rows' matchers already know their state: their masks
        # fill while the model runs.
        masks = self._fill_masks_async(sampling, first_row=0) if self._fill_before_forward else None
        # Logits sampled as two groups, each with its first bitmask row: the
        # decode step's rows as the forward returned them, and the joining
        # prompts' (possibly expanded views, choices sharing a prompt) copied.
        # Joined into one batch, every step with a prompt copied the whole
        # [rows, vocabulary] buffer (16 MB at 32 rows of 128k, ~1 ms a step).
        groups: list[tuple[torch.Tensor, list[_Active], int]] = []
        if any(feeds):  # (none when every row waits for its slow-lane mask)
            # Rows still being fed forced tokens sample nothing: no logits for them.
            every = len(sampling) == len(self._running)
            logits_rows = None if every else [i for i, done in enumerate(ready) if done]
            decoded = self._timed_model_call(self._runner.decode, self._batch, feeds, logits_rows)
            if sampling:
                groups.append((decoded, sampling, 0))
        if masks is None:
            masks = self._fill_masks_async(sampling, first_row=0)
        admitted, prefilled = self._prefill_some()
        if admitted:
            groups.append((torch.cat(prefilled), admitted, len(sampling)))
        batch_rows = self._running + admitted
        if not sampling and not admitted and not resumed:
            # Only prompt chunks or fed-in forced tokens ran this step.
            return bool(self._model_seconds)
        self._fill_masks_async(admitted, first_row=len(sampling)).result()
        masks.result()
        if self._structured.has_slow_rows:
            groups = [self._park_slow_rows(*group) for group in groups]
        self._sample_and_advance(groups)
        order = self._batch.keep([i for i, active in enumerate(batch_rows) if not active.finished])
        self._running = [batch_rows[i] for i in order]
        self._metrics.batch_state(waiting=len(self._waiting), running=len(self._running))
        return True

    def _sample_and_advance(self, groups: list[tuple[torch.Tensor, list[_Active], int]]) -> None:
        """Samples each group's rows from its logits (masked by bitmask rows
        from the group's first row on) and applies the tokens."""
        tokens: list[int] = []
        logprobs: dict[int, TokenLogprob] = {}
        for group_logits, group_rows, first_row in groups:
            logits = group_logits[:, : self._runner.vocab_size]
            raw_logits = (
                logits.clone()
                if any(a.request.params.logprobs is not None for a in group_rows)
                else None
            )
            group_tokens = self._sample(logits, group_rows, first_row)
            logprobs.update(self._logprobs(raw_logits, group_rows, group_tokens))
            tokens += group_tokens
        rows = [active for _, group_rows, _ in groups for active in group_rows]
        for active, token in zip(rows, tokens, strict=True):
            active.next_input = []
            self._advance(active, token, logprobs.get(id(active)))
            if self._may_jump_forward(active):
                self._jump_forward(active)

    def _park_slow_rows(
        self, logits: torch.Tensor, rows: list[_Active], first_row: int
    ) -> tuple[torch.Tensor, list[_Active], int]:
        """The group without its rows whose masks fill in the slow lane: they
        keep their logits and are sampled once their masks are ready
        (``_resume_parked``)."""
        kept: list[int] = []
        for i, active in enumerate(rows):
            if self._structured.slow_fill_started(active.matcher):
                active.parked_logits = logits[i].clone()
            else:
                kept.append(i)
        if len(kept) == len(rows):
            return logits, rows, first_row
        self._structured.keep_rows(first_row, kept)
        at = torch.tensor(kept, dtype=torch.long, device=logits.device)
        return logits.index_select(0, at), [rows[i] for i in kept], first_row

    def _resume_parked(self) -> list[_Active]:
        """Samples the parked rows whose slow-lane masks are ready, from the
        logits they kept: their tokens join this step's forward."""
        if not self._structured.has_slow_rows:
            return []
        ready = [
            active
            for active in self._running
            if active.parked_logits is not None and self._structured.slow_mask_ready(active.matcher)
        ]
        if not ready:
            return []
        self._structured.place_slow_masks([active.matcher for active in ready], first_row=0)
        logits = torch.stack([active.parked_logits for active in ready])
        for active in ready:
            active.parked_logits = None
        self._sample_and_advance([(logits, ready, 0)])
        self._metrics.slow_lane_tokens(len(ready))
        return ready

    def _only_parked_rows(self) -> bool:
        """Whether every running row waits for its slow-lane mask and nothing
        else is to be done: the loop then waits for a mask rather than spin."""
        return (
            self._structured.has_slow_rows
            and not self._waiting
            and not self._prefilling
            and all(active.parked_logits is not None for active in self._running)
        )

    def _decode_feeds(self) -> tuple[list[list[int]], list[bool]]:
        """Each running row's tokens for this step's forward, and whether the
        row is fed all it has (it samples this step).

        A row with jump-forward tokens widens the whole step: the batch is
        padded to its width. Where width is not free (a CPU, or a wide batch),
        at most ``decode_width_tokens`` positions are run per step in all; a
        row with more forced tokens than its share feeds them over several
        steps and samples only after the last, so a seeded row still draws
        the same numbers however the batch is composed.
        """
        share = max(1, self._decode_width_tokens // max(1, len(self._running)))
        feeds, ready = [], []
        for active in self._running:
            if active.finished or active.parked_logits is not None:
                # Waits for its slow-lane mask, or ended as it resumed this step.
                feeds.append([])
                ready.append(False)
                continue
            feeds.append(active.next_input[:share])
            active.next_input = active.next_input[share:]
            ready.append(not active.next_input)
        return feeds, ready

    def _prefill_some(self) -> tuple[list[_Active], list[torch.Tensor]]:
        """Runs prompt chunks, oldest request first, up to the step's token budget.

        Returns the choices of the requests whose prompts are now complete and
        their next-token logits (one row per choice). Choices share their
        request's cache: it joins the batch once, repeated.
        """
        budget = self._prefill_chunk_tokens
        admitted: list[_Active] = []
        parts: list[torch.Tensor] = []
        whole = self._whole_prompts(budget)
        if whole:
            budget -= sum(len(prefill.request.prompt_ids) for prefill in whole)
            logits, cache, mask = self._timed_model_call(
                self._runner.prefill_many, [prefill.request.prompt_ids for prefill in whole]
            )
            self._batch.append_rows(cache, mask, [prefill.request.params.n for prefill in whole])
            for row, prefill in enumerate(whole):
                self._prefilling.remove(prefill)
                parts.append(logits[row : row + 1].expand(prefill.request.params.n, -1))
                admitted.extend(prefill.choices)
        while self._prefilling and budget > 0:
            prefill = self._prefilling[0]
            request = prefill.request
            prompt = request.prompt_ids
            keep_all = self._needs_prompt_logits(prefill)
            chunk = prompt[prefill.done_tokens : prefill.done_tokens + budget]
            logits, prefill.cache = self._timed_model_call(
                self._runner.extend, chunk, prefill.cache, keep_all_logits=keep_all
            )
            prefill.done_tokens += len(chunk)
            budget -= len(chunk)
            if keep_all:
                prefill.prompt_logits.append(logits)
            if prefill.done_tokens < len(prompt):
                break  # the budget is spent
            self._prefilling.pop(0)
            if keep_all:
                self._prompt_logprobs[request.request_id] = prompt_logprobs(
                    torch.cat(prefill.prompt_logits), prompt, request.params.logprobs
                )
            n = request.params.n
            self._batch.append(prefill.cache, len(prompt), copies=n)
            parts.append(logits[-1:].expand(n, -1))
            admitted.extend(prefill.choices)
        return admitted, parts

    def _whole_prompts(self, budget: int) -> list[_Prefill]:
        """The oldest waiting prompts that fit the step's budget whole: they
        run together in one padded forward pass (short prompts arriving
        together no longer queue behind each other)."""
        whole: list[_Prefill] = []
        for prefill in self._prefilling:
            prompt_len = len(prefill.request.prompt_ids)
            if prefill.done_tokens or self._needs_prompt_logits(prefill) or prompt_len > budget:
                break
            whole.append(prefill)
            budget -= prompt_len
        return whole

    @staticmethod
    def _needs_prompt_logits(prefill: _Prefill) -> bool:
        return prefill.choices[0].state.prompt_pending and (
            prefill.request.params.logprobs is not None
        )

    def _logprobs(
        self, raw_logits: torch.Tensor | None, rows: list[_Active], tokens: list[int]
    ) -> dict[int, TokenLogprob]:
        """Log probabilities of this step's tokens for the rows that asked."""
        if raw_logits is None:
            return {}
        wanted = [i for i, active in enumerate(rows) if active.request.params.logprobs is not None]
        entries = chosen_logprobs(
            raw_logits[wanted],
            [tokens[i] for i in wanted],
            [rows[i].request.params.logprobs for i in wanted],
        )
        return {id(rows[i]): entry for i, entry in zip(wanted, entries, strict=True)}

    def _admit(self) -> list[_Prefill]:
        admitted: list[_Prefill] = []
        still_waiting: list[_Waiting] = []
        in_use = len(self._running) + sum(len(p.choices) for p in self._prefilling)
        capacity = self._max_batch_size - in_use
        now = time.monotonic()
        for waiting in self._waiting:
            grammar = waiting.grammar
            if grammar is not None and not grammar.done():
                if now - waiting.since > self._compile_budget_s:
                    waiting.request.sink.fail(
                        f"the constraint did not compile within {self._compile_budget_s:g} s",
                        invalid_argument=True,
                        field="constraint",
                    )
                else:
                    still_waiting.append(waiting)
                continue
            choices = waiting.request.params.n
            if choices > capacity and (admitted or in_use):
                still_waiting.append(waiting)  # a request wider than the batch runs alone
                continue
            activated = self._activate(waiting)
            if activated:
                admitted.append(_Prefill(activated))
                capacity -= choices
        self._waiting = still_waiting
        return admitted

    def _activate(self, waiting: _Waiting) -> list[_Active]:
        """The request's choices, ready to prefill (none if its grammar failed)."""
        request = waiting.request
        grammar = None
        if waiting.grammar is not None:
            error = waiting.grammar.exception()
            if error is not None:
                request.sink.fail(
                    f"invalid {request.constraint.type.value} constraint: {error}",
                    invalid_argument=True,
                    field="constraint",
                )
                return []
            grammar = waiting.grammar.result()
        params = request.params
        state = _RequestState(
            request=request,
            prompt_truncated=waiting.prompt_truncated,
            unfinished_choices=params.n,
            prompt_pending=params.echo_prompt,
        )
        room = self._runner.context_window - len(request.prompt_ids)
        return [
            _Active(
                state=state,
                choice_index=index,
                matcher=self._structured.matcher(grammar) if grammar is not None else None,
                sampling=new_sampling_row(
                    params,
                    request.prompt_ids,
                    self._runner.vocab_size,
                    self._runner.token_bytes,
                    choice_index=index,
                ),
                text=TextWindow(self._runner.token_bytes, request.prompt_ids),
                stops=StopStringMatcher(params.stop) if params.stop else None,
                max_tokens=min(params.max_tokens, room),
                outline=self._structured.json_outline(request.constraint) if grammar else None,
            )
            for index in range(params.n)
        ]

    def _fill_masks_async(
        self, rows: list[_Active], *, first_row: int
    ) -> Future[None] | SharedFill:
        limits = self._structured.row_limits
        return self._structured.fill_masks_async(
            [active.matcher for active in rows],
            [limits(active.utf8_lead, active.outline) for active in rows],
            first_row=first_row,
        )

    def _sample(self, logits: torch.Tensor, rows: list[_Active], first_row: int = 0) -> list[int]:
        """``rows``' next tokens from their ``logits``, masked by bitmask rows
        ``first_row`` on."""
        sampling_rows = [active.sampling for active in rows]
        apply_penalties(logits, sampling_rows)
        self._structured.apply_masks(
            logits,
            [i for i, active in enumerate(rows) if active.matcher is not None],
            first_row=first_row,
        )
        ignoring_eos = [i for i, active in enumerate(rows) if active.request.params.ignore_eos]
        if ignoring_eos:
            at_rows = torch.tensor(ignoring_eos, device=logits.device).unsqueeze(1)
            logits[at_rows, self._eos_ids.to(logits.device)] = float("-inf")
        return sample(logits, sampling_rows)

    @staticmethod
    def _may_jump_forward(active: _Active) -> bool:
        params = active.request.params
        return (
            active.matcher is not None
            and not active.finished
            and params.jump_forward
            and params.logprobs is None  # forced tokens have no sampled distribution to report
        )

    def _jump_forward(self, active: _Active) -> None:
        """Takes the text the grammar forces next as the tokenizer's tokens,
        to be fed in the next step's forward pass with the sampled token.

        The matcher takes them one by one; the first it refuses ends the jump
        there (the matcher is left as it was), and the text held for the jump
        leaves with the next sampled token."""
        matcher = active.matcher
        budget = active.max_tokens - active.generated
        forced = self._structured.forced_tokens(matcher, budget)
        taken = 0
        for token in forced:
            if active.finished or not matcher.accept_token(token):
                break
            taken += 1
            self._advance(active, token, None, release=taken == len(forced), accepted=True)
        if taken:
            self._metrics.jump_forward(taken)

    def _advance(
        self,
        active: _Active,
        token: int,
        logprob: TokenLogprob | None,
        *,
        release: bool = True,
        accepted: bool = False,
    ) -> None:
        """Applies one token to a choice and emits what it completes
        (``release=False``: hold the text, more tokens follow at once;
        ``accepted``: the matcher has already taken the token)."""
        active.generated += 1
        active.next_input.append(token)
        active.sampling.record(token)
        if logprob is not None:
            active.cumulative_logprob += logprob.logprob
        matcher = active.matcher
        if matcher is not None and not accepted and not matcher.accept_token(token):
            # Only reachable when every token was masked (ignore_eos on a fully
            # matched constraint): the constraint is complete, so stop there.
            active.generated -= 1
            self._finish(active, FinishReason.STOP, matched=matcher.is_completed())
            return
        if matcher is not None:
            active.utf8_lead = self._structured.lead_after(token)
            if active.outline is not None:
                active.outline.push(self._runner.token_bytes[token])
        if logprob is not None:  # the end token too: it was sampled, and usage counts it
            active.pending_logprobs.append(logprob)
        if token in self._runner.eos_token_ids and not active.request.params.ignore_eos:
            self._finish(
                active, FinishReason.STOP, matched=matcher is None or matcher.is_completed()
            )
            return
        window = active.text.push(token, release=release)
        complete = matcher is not None and matcher.is_completed()
        stopped = active.stops is not None and active.stops.push(self._runner.token_bytes[token])
        if complete and active.request.params.stop_after_match:
            self._finish(active, FinishReason.STOP, matched=True, window=window)
        elif stopped and (matcher is None or complete):
            # A stop string never cuts a constrained output short of a match.
            self._finish(active, FinishReason.STOP, matched=complete, window=window)
        elif active.generated >= active.max_tokens:
            # A complete match that the constraint cannot extend was ended by
            # the constraint (the model could only end it next), not the limit.
            ended_by_match = complete and not self._structured.can_continue(matcher)
            reason = FinishReason.STOP if ended_by_match else FinishReason.LENGTH
            self._finish(active, reason, matched=complete, window=window)
        elif window is not None:
            self._emit(active, window)

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
        active.state.unfinished_choices -= 1
        self._metrics.request_finished(reason.value, active.generated)
        self._emit(active, window, finish_reason=reason, matched=matched)

    def _emit(
        self,
        active: _Active,
        window: tuple[list[int], int],
        *,
        finish_reason: FinishReason | None = None,
        matched: bool = False,
    ) -> None:
        """Sends a choice's window with what travels alongside it, or holds
        it until the choice's ``stream_interval_ms`` has passed since its last
        response.

        Every response costs IPC inside Triton, a gRPC message and the
        client's parsing; a client that reads text in bursts (or only at the
        end: the frontend's collected requests) trades per-token latency for
        throughput. First and final outputs always go at once. A held window
        is kept as token ids (its logprobs stay pending) and the output is
        built only when it goes: building and merging one per token cost
        ~0.1 ms a step at c=8 (served demo, collected requests).
        """
        final = finish_reason is not None
        params = active.request.params
        now = time.monotonic()
        due = (
            final
            or active.last_sent == 0.0
            or now - active.last_sent >= params.stream_interval_ms / 1000.0
        )
        window_ids, prefix_len = window
        if active.held is not None:  # the held window, then this one's new tokens
            held_ids, held_prefix_len = active.held
            held_ids.extend(window_ids[prefix_len:])
            window_ids, prefix_len = held_ids, held_prefix_len
        if not due:
            active.held = (window_ids, prefix_len)
            return
        active.held = None
        active.last_sent = now
        state = active.state
        prompt = None
        if state.prompt_pending:
            state.prompt_pending = False
            prompt = PromptDetails(
                ids=list(active.request.prompt_ids),
                truncated=state.prompt_truncated,
                logprobs=self._prompt_logprobs.pop(active.request.request_id, None),
            )
        logprobs = None
        if params.logprobs is not None:
            logprobs, active.pending_logprobs = active.pending_logprobs, []
        active.request.sink.send(
            StepOutput(
                window_ids,
                prefix_len,
                active.generated,
                finish_reason=finish_reason,
                matched=matched,
                choice_index=active.choice_index,
                logprobs=logprobs,
                cumulative_logprob=(
                    active.cumulative_logprob if final and params.logprobs is not None else None
                ),
                prompt=prompt,
                request_done=final and state.unfinished_choices == 0,
                prompt_tokens=len(active.request.prompt_ids),
                shows_special_tokens=active.matcher is not None,
            )
        )

    # -- cancellation and failure ---------------------------------------

    def _watch_clients(self) -> None:
        """Asks every request's client whether it left, every poll interval,
        off the engine thread: in Triton each question is an IPC round trip
        (~0.3 ms), and asked from the engine loop, 32 rows every 50 ms cost a
        tenth of its throughput (demo model, served, c=32)."""
        interval_s = max(self._cancel_poll_interval_s, MIN_WATCH_INTERVAL_S)
        while not self._stopping.wait(interval_s):
            # Copies first: the engine thread changes these lists meanwhile.
            requests = [waiting.request for waiting in list(self._waiting)]
            requests += [prefill.request for prefill in list(self._prefilling)]
            requests += [active.request for active in list(self._running)]
            left = {id(request): request for request in requests if _client_left(request)}
            if left:
                with self._cancel_lock:
                    self._clients_left.update(left)

    def _poll_cancellations(self) -> None:
        """Applies cancellations: named ones, and those of clients that left.

        The watcher thread finds the latter while the engine runs; an engine
        stepped without ``start()`` asks the clients itself, every poll interval."""
        with self._cancel_lock:
            named, self._cancel_ids = self._cancel_ids, set()
            left, self._clients_left = self._clients_left, {}
        now = time.monotonic()
        for request_id in named:
            self._cancelled_at[request_id] = now
        due = now - self._last_cancel_poll >= self._cancel_poll_interval_s
        if due:
            self._last_cancel_poll = now
            self._cancelled_at = {
                request_id: at
                for request_id, at in self._cancelled_at.items()
                if now - at < CANCELLATION_MEMORY_S
            }
        ask_clients = due and self._watcher is None
        if not named and not left and not ask_clients:
            return

        def cancelled(request: GenerationRequest) -> bool:
            return (
                request.request_id in named
                or left.get(id(request)) is request
                or (ask_clients and _client_left(request))
            )

        for waiting in [w for w in self._waiting if cancelled(w.request)]:
            self._waiting.remove(waiting)
            self._end_unstarted(waiting.request)
        for prefill in [p for p in self._prefilling if cancelled(p.request)]:
            self._prefilling.remove(prefill)
            self._end_unstarted(prefill.request)
        gone = [i for i, active in enumerate(self._running) if cancelled(active.request)]
        if gone:
            for i in gone:
                self._finish(self._running[i], FinishReason.CANCELLED, matched=False)
            order = self._batch.keep(
                [i for i, active in enumerate(self._running) if not active.finished]
            )
            self._running = [self._running[i] for i in order]
            self._metrics.batch_state(waiting=len(self._waiting), running=len(self._running))

    def _end_unstarted(self, request: GenerationRequest) -> None:
        """Ends a request cancelled before it produced anything."""
        self._metrics.request_finished(FinishReason.CANCELLED.value, 0)
        request.sink.send(
            StepOutput(
                [],
                0,
                0,
                finish_reason=FinishReason.CANCELLED,
                request_done=True,
                prompt_tokens=len(request.prompt_ids),
            )
        )

    def _fail_all_running(self, message: str) -> None:
        self._fail_rows(self._stepping, message)
        self._running = []
        self._prefilling = []
        self._stepping = []
        self._batch = RunningBatch()
        self._prompt_logprobs.clear()
        self._metrics.batch_state(waiting=len(self._waiting), running=0)

    def _fail_rows(self, rows: list[_Active], message: str) -> None:
        """Fails each unfinished request among ``rows`` once, whatever its choices."""
        for active in rows:
            if active.finished or active.state.failed:
                continue
            active.state.failed = True
            self._metrics.request_finished("error", active.generated)
            active.request.sink.fail(message, invalid_argument=False)


def _client_left(request: GenerationRequest) -> bool:
    """Whether the request's client is gone; a request answered meanwhile (its
    sender may refuse the question) counts as not cancelled."""
    try:
        return request.sink.is_cancelled()
    except Exception:  # whatever the sink raises, the answer is "no"
        return False
