"""Where a decode step's milliseconds go, in process: the engine on a real
model with real xgrammar, no Triton, no HTTP.

The loop is driven here (no engine thread), keeping exactly ``c`` requests
in flight, and each part of a step is timed exclusively (a part called from
inside another counts only once): the model's forward, waiting for token
masks (their filling overlaps the forward on xgrammar's threads and is
reported separately), sampling, logprobs, per-token bookkeeping (matcher
advance, text windows, stop checks, building outputs), jump-forward, and the
rest. The model's time is the decode forward plus the forwards of joining
prompts (``prompt_forward``; the rest of admitting them is ``prefill``): the
issue counts only the work around the model as overhead, and asks the model
to be ≥ 87% of a step (``step_over_model`` ≤ 1.15). ``step_over_forward``
divides by the decode forward alone, as earlier stops reported it. What
Triton's IPC and the frontend add on top is measured by the served bench
(``python -m bench``), not here.

    python -m bench.step_profile --model-dir .cache/models/demo --concurrency 8 32
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path

import torch

from bench.report import print_and_save
from bench.workload import PROMPTS, USER_JSON_SCHEMA
from engine.engine import Engine
from engine.grammar_cache import GrammarCache
from engine.model_runner import ModelRunner
from engine.params import Constraint, ConstraintType, SamplingParams
from engine.request import GenerationRequest, StepOutput
from engine.settings import forward_threads
from grammar_compiler import compile_json_schema

# Parts of a step, timed exclusively; "other" is the step minus all of them.
PARTS = {
    "_prefill_some": "prefill",
    "_sample": "sample",
    "_logprobs": "logprobs",
    "_advance": "advance",
    "_jump_forward": "jump_forward",
}

# The model's own calls, timed on the runner.
RUNNER_CALLS = {"decode": "forward", "prefill_many": "prompt_forward", "extend": "prompt_forward"}


class ExclusiveTimer:
    """Accumulates wall time per part, a nested part's time taken out of its caller's."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = defaultdict(float)
        self._stack: list[list[float]] = []  # [start, time spent in children]
        self._owner = threading.get_ident()

    def wrap(self, function: Callable, part: str) -> Callable:
        def timed(*args, **kwargs):
            if threading.get_ident() != self._owner:
                return function(*args, **kwargs)
            self._stack.append([time.perf_counter(), 0.0])
            try:
                return function(*args, **kwargs)
            finally:
                started, in_children = self._stack.pop()
                spent = time.perf_counter() - started
                self.totals[part] += spent - in_children
                if self._stack:
                    self._stack[-1][1] += spent

        return timed

    def wrap_future(self, future: Future, part: str) -> Future:
        """Times how long ``result()`` blocks: the step waiting on mask fills."""
        result = future.result
        future.result = self.wrap(result, part)  # type: ignore[method-assign]
        return future


class CountingSink:
    """Counts finished requests and generated tokens (into ``tokens[0]``, as
    they are reported); a failure is recorded, as raising would land on the
    engine's own error handling rather than here."""

    def __init__(self, done: list[int], tokens: list[int], failures: list[str]) -> None:
        self._done = done
        self._tokens = tokens
        self._reported = 0
        self._failures = failures

    def send(self, output: StepOutput) -> None:
        self._tokens[0] += output.tokens_generated - self._reported
        self._reported = output.tokens_generated
        if output.request_done:
            self._done.append(1)

    def fail(self, message: str, *, invalid_argument: bool, field: str | None = None) -> None:
        self._failures.append(message)

    def is_cancelled(self) -> bool:
        return False


class SteadyLoad:
    """Keeps ``concurrency`` requests in flight on an engine stepped from this
    thread (no engine thread); ``request(index, sink)`` builds the index-th."""

    def __init__(
        self,
        engine: Engine,
        concurrency: int,
        request: Callable[[int, CountingSink], GenerationRequest],
    ) -> None:
        self.engine = engine
        self.concurrency = concurrency
        self._request = request
        self._submitted = 0
        self.done: list[int] = []
        self.tokens = [0]  # reported so far
        self.failures: list[str] = []

    def step(self) -> float:
        """Tops the load up, takes in what arrived and runs one step; its seconds."""
        while self._submitted - len(self.done) < self.concurrency:
            sink = CountingSink(self.done, self.tokens, self.failures)
            self.engine.submit(self._request(self._submitted, sink))
            self._submitted += 1
        self.engine._drain_inbox(block=False)
        started = time.perf_counter()
        self.engine.wait_while_only_parked()  # as the engine's loop does
        self.engine.step()
        return time.perf_counter() - started

    def fill(self, timeout_s: float = 120.0) -> None:
        """Steps until every request runs (grammars compile off the loop)."""
        deadline = time.monotonic() + timeout_s
        while len(self.engine._running) < self.concurrency:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the batch did not fill within {timeout_s:g} s")
            self.step()
            time.sleep(0.001)

    def raise_failures(self, doing: str) -> None:
        if self.failures:
            raise RuntimeError(f"requests failed while {doing}: {self.failures[:3]}")


def _instrument(engine: Engine, timer: ExclusiveTimer) -> dict[str, float]:
    """Wraps the engine's parts on this instance; returns the mask-fill totals
    measured on xgrammar's worker thread."""
    for method, part in PARTS.items():
        setattr(engine, method, timer.wrap(getattr(engine, method), part))
    runner = engine._runner
    for call, part in RUNNER_CALLS.items():
        setattr(runner, call, timer.wrap(getattr(runner, call), part))
    fill = engine._fill_masks_async
    engine._fill_masks_async = lambda rows, first_row: timer.wrap_future(  # type: ignore[method-assign]
        fill(rows, first_row=first_row), "mask_wait"
    )
    fills = {"seconds": 0.0}

    class _TimedBatchMatcher:
        def __init__(self, matcher) -> None:
            self._fill = matcher.batch_fill_next_token_bitmask

        def batch_fill_next_token_bitmask(self, *args):
            started = time.perf_counter()
            try:
                return self._fill(*args)
            finally:
                fills["seconds"] += time.perf_counter() - started

    structured = engine._structured
    pooled = _TimedBatchMatcher(structured._batch_matcher)
    # The engine thread's one-thread matcher (beside a GPU) is another object.
    if structured._inline_matcher is structured._batch_matcher:
        structured._inline_matcher = pooled
    else:
        structured._inline_matcher = _TimedBatchMatcher(structured._inline_matcher)
    structured._batch_matcher = pooled
    original_row = engine._structured._fill_row

    def timed_row(*args) -> None:  # a shared fill's rows, on either thread
        started = time.perf_counter()
        try:
            original_row(*args)
        finally:
            fills["seconds"] += time.perf_counter() - started

    engine._structured._fill_row = timed_row
    return fills


def profile(
    runner: ModelRunner,
    constraint: Constraint,
    concurrency: int,
    steps: int,
    max_tokens: int,
    decode_width_tokens: int | None = None,
    configure: Callable[[Engine], None] | None = None,
    mask_threads: int | None = None,
    temperature: float = 1.0,
) -> dict:
    """Drives ``steps`` measured steps with ``concurrency`` requests always
    running; ``configure`` may adjust the engine before the first request.
    ``temperature`` 0 is the peers bench's greedy decoding."""
    engine = Engine(
        runner,
        GrammarCache(runner.tokenizer_info),
        max_batch_size=max(concurrency, 8),
        decode_width_tokens=decode_width_tokens,
        mask_threads=mask_threads,
    )
    if configure is not None:
        configure(engine)
    timer = ExclusiveTimer()
    fills = _instrument(engine, timer)

    def request(index: int, sink: CountingSink) -> GenerationRequest:
        params = SamplingParams(
            max_tokens=max_tokens,
            temperature=temperature,
            seed=1000 + index,
            ignore_eos=True,
            stop_after_match=False,
        )
        return GenerationRequest(
            request_id=f"r{index}",
            prompt_ids=runner.tokenizer.encode(PROMPTS[index % len(PROMPTS)]),
            params=params,
            constraint=constraint,
            sink=sink,
        )

    load = SteadyLoad(engine, concurrency, request)
    load.fill()
    step_seconds: list[float] = []
    tokens_before = 0
    warmup = max_tokens  # every row has been replaced once: a steady mix of ages
    for index in range(warmup + steps):
        if index == warmup:
            timer.totals.clear()
            fills["seconds"] = 0.0
            tokens_before = load.tokens[0]
        seconds = load.step()
        if index >= warmup:
            step_seconds.append(seconds)
    load.raise_failures("profiling")
    engine.shutdown()  # fails the requests still running: expected, not counted
    for timed_call in RUNNER_CALLS:  # the next profile times the runner afresh
        vars(runner).pop(timed_call, None)
    total = sum(step_seconds)
    parts = {part: seconds * 1000 / steps for part, seconds in timer.totals.items()}
    parts["other"] = total * 1000 / steps - sum(parts.values())
    forward = parts.get("forward", 0.0)
    model = forward + parts.get("prompt_forward", 0.0)
    return {
        "concurrency": concurrency,
        "constraint": constraint.type.value,
        "steps": steps,
        "temperature": temperature,
        "step_ms_mean": total * 1000 / steps,
        "step_ms_p50": statistics.median(step_seconds) * 1000,
        "parts_ms_mean": {part: round(ms, 4) for part, ms in sorted(parts.items())},
        "mask_fill_ms_mean_overlapped": fills["seconds"] * 1000 / steps,
        "step_over_model": (total * 1000 / steps) / model if model else None,
        "step_over_forward": (total * 1000 / steps) / forward if forward else None,
        # Tokens reported while measuring, over the measured time: steps
        # differ in tokens (jump-forward), so step time alone does not compare
        # configurations.
        "tokens_per_s": (load.tokens[0] - tokens_before) / total,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-dir", type=Path, default=Path(".cache/models/demo"))
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument(
        "--decode-width-tokens", type=int, help="the engine's cap (default: its own)"
    )
    parser.add_argument(
        "--temperature", type=float, default=1.0, help="0: greedy, as the peers bench decodes"
    )
    parser.add_argument("--output", type=Path, help="also write the results here as JSON")
    args = parser.parse_args()
    # The forward's threads as the served decoder sets them (``torch_threads``
    # auto: every core but one, which the mask thread then has).
    torch.set_num_threads(forward_threads("auto") or torch.get_num_threads())
    runner = ModelRunner.load(args.model_dir, device="cpu")
    schema = Constraint(
        type=ConstraintType.JSON_SCHEMA,
        value=compile_json_schema(json.dumps(USER_JSON_SCHEMA)).value,
    )
    results = [
        profile(
            runner,
            constraint,
            concurrency,
            args.steps,
            args.max_tokens,
            args.decode_width_tokens,
            temperature=args.temperature,
        )
        for concurrency in args.concurrency
        for constraint in (schema, Constraint())
    ]
    print_and_save(
        {"model_dir": str(args.model_dir), "vocab_size": runner.vocab_size, "results": results},
        args.output,
    )


if __name__ == "__main__":
    main()
