"""Triton shell around ``engine.Engine``.

``execute()`` parses and validates each request, hands it to the engine and
returns at once; the engine loop runs on its own thread and a sender thread
builds and delivers responses, so a slow client never stalls decoding. When
the sender falls behind, a request's waiting outputs leave as one response
(``engine.coalesce``).
"""

import gc
import json
import queue
import threading
from collections.abc import Callable

import numpy as np
import torch
import triton_python_backend_utils as pb_utils
from pydantic import ValidationError

from engine.coalesce import coalesce
from engine.details import details_json
from engine.diagnostics import dump_stacks_on_sigusr1
from engine.engine import Engine
from engine.grammar_cache import GrammarCache
from engine.metric_buffer import MetricBuffer
from engine.metrics import EngineMetrics
from engine.model_runner import ModelRunner
from engine.params import Constraint, SamplingParams
from engine.request import GenerationRequest, StepOutput, invalid_argument_text
from engine.settings import forward_threads, model_parameter, resolve_model_dir
from engine.text_window import decode_window

FINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
_END = object()  # queued by _ResponseSink.acknowledge(): an empty final response


def _int32(value: int) -> np.ndarray:
    return np.array([[value]], dtype=np.int32)


def _bool(value: bool) -> np.ndarray:
    return np.array([[value]], dtype=np.bool_)


def _text(value: str) -> np.ndarray:
    return np.array([[value.encode("utf-8")]], dtype=np.object_)


def _window(output: StepOutput) -> tuple[list[int], int]:
    """The token window and its prefix length. No new tokens (an end, a
    cancellation) send one context token, so no zero-element tensor crosses
    the Python backend's shared memory."""
    if not output.window_ids:
        return [0], 1
    return output.window_ids, output.prefix_len


class _ResponseBuilder:
    """Engine outputs to Triton responses: the token window the detokenizer
    model turns into text (the ensemble's last step), or, with the
    ``text_in_decoder`` parameter, the text itself, decoded here on the sender
    thread (one Python-backend hop fewer; ``bench.ensemble_cost`` compares)."""

    def __init__(self, runner: ModelRunner, *, make_text: bool) -> None:
        self._tokenizer = runner.tokenizer
        self._token_bytes = runner.token_bytes
        self._make_text = make_text
        self._outputs: dict[str, Callable[[StepOutput], np.ndarray]] = {
            "text_output": lambda o: _text(self._text(o)),
            "tokens_generated": lambda o: _int32(o.tokens_generated),
            "prompt_tokens": lambda o: _int32(o.prompt_tokens),
            "finish_reason": lambda o: _text(o.finish_reason.value if o.finish_reason else ""),
            "matched": lambda o: _bool(o.matched),
            "choice_index": lambda o: _int32(o.choice_index),
            "details": lambda o: _text(details_json(o, self._token_bytes, self._decode)),
            "token_window": lambda o: np.array([_window(o)[0]], dtype=np.int32),
            "window_prefix_len": lambda o: _int32(_window(o)[1]),
            "shows_special_tokens": lambda o: _bool(o.shows_special_tokens),
        }

    def _decode(self, ids: list[int]) -> str:
        return self._tokenizer.decode(
            ids, skip_special_tokens=True, clean_up_tokenization_spaces=False
        )

    def _text(self, output: StepOutput) -> str:
        if not self._make_text:
            return ""
        return decode_window(
            self._tokenizer,
            output.window_ids,
            output.prefix_len,
            skip_special_tokens=not output.shows_special_tokens,
        )

    def response(self, output: StepOutput, wanted: frozenset[str]):
        """Only the outputs the request asked for (an ensemble step asks for
        those it maps). Triton 24.12's stub drops the others inside ``send``
        without holding the GIL, freeing their numpy arrays unlocked: under
        load that corrupted the stub's heap and crashed it (fixed upstream in
        python_backend#390, Triton 25.01)."""
        return pb_utils.InferenceResponse(
            output_tensors=[
                pb_utils.Tensor(name, make(output))
                for name, make in self._outputs.items()
                if name in wanted
            ]
        )


def _error_response(message: str, invalid_argument: bool, field: str | None = None):
    if invalid_argument:
        error = pb_utils.TritonError(
            invalid_argument_text(message, field), pb_utils.TritonError.INVALID_ARG
        )
    else:
        error = pb_utils.TritonError(message, pb_utils.TritonError.INTERNAL)
    return pb_utils.InferenceResponse(error=error)


class _ResponseSink:
    """Queues one request's engine outputs for the sender thread."""

    def __init__(self, request, outbox: queue.SimpleQueue) -> None:
        self._sender = request.get_response_sender()
        self.wanted = frozenset(request.requested_output_names())
        self._outbox = outbox
        # Once the final response is out, Triton may free the request: its
        # sender is never touched again (the engine's watcher thread asks
        # is_cancelled() while the sender thread sends).
        self._lock = threading.Lock()
        self._closed = False

    def send(self, output: StepOutput) -> None:
        self._outbox.put((self, output))

    def fail(self, message: str, *, invalid_argument: bool, field: str | None = None) -> None:
        self._outbox.put((self, _error_response(message, invalid_argument, field)))

    def acknowledge(self) -> None:
        """A final response without outputs: a cancellation (or health probe) is
        done. It carries a response, not just the FINAL flag, because gRPC
        clients drop a bare final flag unless they opted in to empty finals."""
        self._outbox.put((self, _END))

    def respond(self, response, *, final: bool) -> None:
        with self._lock:
            self._sender.send(response, flags=FINAL if final else 0)
            self._closed = self._closed or final

    def is_cancelled(self) -> bool:
        with self._lock:
            return not self._closed and self._sender.is_cancelled()


def _deliver(builder: _ResponseBuilder, sink: _ResponseSink, items: list) -> None:
    """Sends one request's queued items in order, merging runs of outputs."""
    outputs: list[StepOutput] = []
    for item in [*items, None]:
        if isinstance(item, StepOutput):
            outputs.append(item)
            continue
        for output in coalesce(outputs):
            sink.respond(builder.response(output, sink.wanted), final=output.request_done)
        outputs = []
        if item is _END:
            sink.respond(pb_utils.InferenceResponse(output_tensors=[]), final=True)
        elif item is not None:
            sink.respond(item, final=True)


class _TritonMetrics(EngineMetrics):
    """Engine figures as Python-backend custom metrics on Triton's metrics port.

    Every update of a custom metric is an IPC round trip to tritonserver, so
    updates go through a ``MetricBuffer``: sent in batches, off the engine
    thread, at most half a second late."""

    def __init__(self) -> None:
        self._buffer = MetricBuffer()
        counter, gauge, histogram = (
            pb_utils.MetricFamily.COUNTER,
            pb_utils.MetricFamily.GAUGE,
            pb_utils.MetricFamily.HISTOGRAM,
        )
        # Families must outlive their metrics: a collected family invalidates them.
        self._families = {
            "lookups": pb_utils.MetricFamily(
                "ct_grammar_cache_lookups_total", "Compiled-grammar lookups", counter
            ),
            "compile": pb_utils.MetricFamily(
                "ct_grammar_compile_seconds", "Grammar compilation time", histogram
            ),
            "finished": pb_utils.MetricFamily(
                "ct_decoder_requests_finished_total",
                "Requests that left the decoder, by reason",
                counter,
            ),
            "tokens": pb_utils.MetricFamily(
                "ct_decoder_output_tokens_total", "Tokens generated", counter
            ),
            "jump_forward": pb_utils.MetricFamily(
                "ct_decoder_jump_forward_tokens_total",
                "Tokens a grammar forced, taken without sampling",
                counter,
            ),
            "slow_lane": pb_utils.MetricFamily(
                "ct_decoder_slow_lane_tokens_total",
                "Tokens sampled after their masks filled in the slow lane (slow grammars)",
                counter,
            ),
            "queue": pb_utils.MetricFamily(
                "ct_decoder_requests", "Requests in the decoder by state", gauge
            ),
            "steps": pb_utils.MetricFamily("ct_decoder_steps_total", "Decode steps", counter),
            "step_seconds": pb_utils.MetricFamily(
                "ct_decoder_step_seconds_total",
                "Time in decode steps, by part (model: the forward calls; engine: the rest)",
                counter,
            ),
        }
        lookups, queue = self._families["lookups"], self._families["queue"]
        self._hits, self._misses = (
            lookups.Metric({"result": "hit"}),
            lookups.Metric({"result": "miss"}),
        )
        buckets = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0]
        self._compile = {
            ok: self._families["compile"].Metric({"ok": str(ok).lower()}, buckets=buckets)
            for ok in (True, False)
        }
        self._finished_by_reason: dict = {}
        self._tokens = self._families["tokens"].Metric({})
        self._jump_forward = self._families["jump_forward"].Metric({})
        self._slow_lane = self._families["slow_lane"].Metric({})
        self._waiting, self._running = (
            queue.Metric({"state": "waiting"}),
            queue.Metric({"state": "running"}),
        )
        self._steps = self._families["steps"].Metric({})
        step_seconds = self._families["step_seconds"]
        self._model_seconds, self._engine_seconds = (
            step_seconds.Metric({"part": "model"}),
            step_seconds.Metric({"part": "engine"}),
        )

    def grammar_lookup(self, *, hit: bool) -> None:
        self._buffer.increment(self._hits if hit else self._misses, 1)

    def grammar_compiled(self, seconds: float, *, ok: bool) -> None:
        self._buffer.observe(self._compile[ok], seconds)

    def request_finished(self, reason: str, output_tokens: int) -> None:
        metric = self._finished_by_reason.get(reason)
        if metric is None:
            family = self._families["finished"]
            metric = self._finished_by_reason[reason] = family.Metric({"reason": reason})
        self._buffer.increment(metric, 1)
        self._buffer.increment(self._tokens, output_tokens)

    def jump_forward(self, tokens: int) -> None:
        self._buffer.increment(self._jump_forward, tokens)

    def slow_lane_tokens(self, tokens: int) -> None:
        self._buffer.increment(self._slow_lane, tokens)

    def batch_state(self, *, waiting: int, running: int) -> None:
        self._buffer.set(self._waiting, waiting)
        self._buffer.set(self._running, running)

    def step_finished(self, seconds: float, model_seconds: float) -> None:
        self._buffer.increment(self._steps, 1)
        self._buffer.increment(self._model_seconds, model_seconds)
        self._buffer.increment(self._engine_seconds, seconds - model_seconds)

    def close(self) -> None:
        """Drops every metric while the stub still talks to Triton: left to
        the interpreter's exit, a family's destructor writes to shared memory
        that is already gone (Triton 24.12's stub segfaulted at each unload)."""
        self._buffer.close()
        self.__dict__.clear()
        gc.collect()


def _auto_count(setting: str) -> int | None:
    """``auto`` leaves the choice to the engine (by the model's device)."""
    return None if setting == "auto" else int(setting)


def _optional_text(request, name: str) -> str | None:
    tensor = pb_utils.get_input_tensor_by_name(request, name)
    if tensor is None:
        return None
    values = tensor.as_numpy().reshape(-1)
    if values.size != 1:
        raise ValueError(f"{name} takes exactly one value")
    value = values[0]
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _parse(request) -> tuple[list[int], SamplingParams, Constraint]:
    """Reads a request's tensors; raises ValueError with a user-facing message."""
    ids_tensor = pb_utils.get_input_tensor_by_name(request, "input_ids")
    if ids_tensor is None:
        raise ValueError("input_ids is required (or cancel_request_id, to cancel a request)")
    ids = ids_tensor.as_numpy()
    if ids.ndim == 2 and ids.shape[0] != 1:
        raise ValueError("input_ids takes one prompt per request (batch size 1)")
    sampling_json = _optional_text(request, "sampling_parameters")
    try:
        params = SamplingParams.model_validate_json(sampling_json or "{}")
        constraint = Constraint(
            type=_optional_text(request, "constraint_type") or "none",
            value=_optional_text(request, "constraint") or "",
        )
    except ValidationError as error:
        raise ValueError(str(error)) from None
    if constraint.is_constrained and not constraint.value:
        raise ValueError(f"constraint_type {constraint.type.value!r} needs a constraint")
    return ids.reshape(-1).tolist(), params, constraint


class TritonPythonModel:
    def initialize(self, args):
        dump_stacks_on_sigusr1()
        config = json.loads(args["model_config"])
        if not pb_utils.using_decoupled_model_transaction_policy(config):
            raise pb_utils.TritonModelException("constrained_decoder must be decoupled")
        parameters = config.get("parameters", {})
        threads = forward_threads(model_parameter(parameters, "torch_threads", "auto"))
        if threads is not None:
            torch.set_num_threads(threads)
        runner = ModelRunner.load(
            resolve_model_dir(parameters), device=model_parameter(parameters, "device", "auto")
        )
        self.builder = _ResponseBuilder(
            runner, make_text=model_parameter(parameters, "text_in_decoder", "false") == "true"
        )
        self.metrics = metrics = _TritonMetrics()
        self.engine = Engine(
            runner,
            GrammarCache(
                runner.tokenizer_info,
                special_tokens=runner.tokenizer.get_added_vocab(),
                metrics=metrics,
                string_bounds_above_s=float(
                    model_parameter(parameters, "string_bounds_above_s", "0.5")
                ),
            ),
            max_batch_size=int(model_parameter(parameters, "max_running_requests", "64")),
            compile_budget_s=float(model_parameter(parameters, "compile_budget_s", "30")),
            prefill_chunk_tokens=int(model_parameter(parameters, "prefill_chunk_tokens", "512")),
            max_queued=int(model_parameter(parameters, "max_queued_requests", "1024")),
            mask_threads=_auto_count(model_parameter(parameters, "mask_threads", "auto")),
            decode_width_tokens=_auto_count(
                model_parameter(parameters, "decode_width_tokens", "auto")
            ),
            slow_mask_fill_s=float(model_parameter(parameters, "slow_mask_fill_ms", "0.5")) / 1000,
            metrics=metrics,
        )
        self.outbox: queue.SimpleQueue = queue.SimpleQueue()
        self.sender_thread = threading.Thread(
            target=self._send_responses, name="response-sender", daemon=True
        )
        self.sender_thread.start()
        self.engine.start()
        self.request_counter = 0

    def execute(self, requests):
        for request in requests:
            sink = _ResponseSink(request, self.outbox)
            try:
                cancel_id = _optional_text(request, "cancel_request_id")
                if cancel_id is not None:
                    self.engine.cancel(cancel_id)
                    sink.acknowledge()
                    continue
                prompt_ids, params, constraint = _parse(request)
            except ValueError as error:
                sink.fail(str(error), invalid_argument=True)
                continue
            self.request_counter += 1
            self.engine.submit(
                GenerationRequest(
                    request_id=request.request_id() or f"req-{self.request_counter}",
                    prompt_ids=prompt_ids,
                    params=params,
                    constraint=constraint,
                    sink=sink,
                )
            )
        return None

    def _send_responses(self):
        while True:
            first = self.outbox.get()
            if first is None:
                return
            waiting = [first]
            while True:  # everything queued meanwhile goes out together
                try:
                    waiting.append(self.outbox.get_nowait())
                except queue.Empty:
                    break
            if None in waiting:
                waiting = waiting[: waiting.index(None)]
                self.outbox.put(None)
            by_sink: dict[int, tuple] = {}
            for sink, item in waiting:
                by_sink.setdefault(id(sink), (sink, []))[1].append(item)
            for sink, items in by_sink.values():
                try:
                    _deliver(self.builder, sink, items)
                except Exception as error:  # the client is gone; others must still be served
                    pb_utils.Logger.log_warn(f"could not send a response: {error}")

    def finalize(self):
        self.engine.shutdown()
        self.outbox.put(None)
        self.sender_thread.join(timeout=5)
        self.metrics.close()
