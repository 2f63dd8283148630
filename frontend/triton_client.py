"""The frontend's only door to Triton: stream one generation from the ensemble.

Routes reach it through :class:`frontend.triton_pool.TritonPool`, never tritonclient directly.
Every call opens its own gRPC stream; leaving the iteration early (client gone,
timeout, error) cancels that stream, which Triton turns into
``is_cancelled()`` inside the decoder so the request stops using the batch.
Each Triton request id starts with the HTTP request's id
(:mod:`frontend.request_context`), so Triton's logs can be matched with ours.

One client talks to one Triton endpoint; :mod:`frontend.triton_health` watches
it and :mod:`frontend.triton_pool` spreads requests over several.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

import grpc
import numpy as np
import tritonclient.grpc.aio as grpcclient
from tritonclient.utils import InferenceServerException

from engine.params import Constraint, SamplingParams
from engine.request import BUSY_PREFIX, read_invalid_argument
from frontend.errors import APIError
from frontend.metrics import CANCELLATIONS, GENERATIONS_IN_FLIGHT, TIME_TO_FIRST_TOKEN
from frontend.request_context import RequestContext, current, new_request_id

logger = logging.getLogger(__name__)


# Seconds a client refused for a full decoder queue is told to wait.
BUSY_RETRY_AFTER_S = 1

# A restarted Triton is found again within seconds, not after gRPC's default
# reconnect backoff (up to two minutes).
_CHANNEL_ARGS = [
    ("grpc.max_send_message_length", 2**31 - 1),
    ("grpc.max_receive_message_length", 2**31 - 1),
    ("grpc.initial_reconnect_backoff_ms", 250),
    ("grpc.min_reconnect_backoff_ms", 250),
    ("grpc.max_reconnect_backoff_ms", 2_000),
]

# What the Python backend answers for a request to a model whose stub died.
STUB_DEAD_MARKER = "is not healthy"
# Seconds a client whose generation met a failed server is told to wait.
FAILURE_RETRY_AFTER_S = 2

# How long to wait for Triton to close a stream after its final response.
_STREAM_END_WAIT_S = 1.0

# The request id of the decoder's health probe: a cancellation of a request
# that never exists, answered by the decoder stub itself.
PROBE_REQUEST_ID = "health-probe"


@dataclass(frozen=True)
class Chunk:
    """One streamed response of the ensemble."""

    text: str
    tokens_generated: int
    prompt_tokens: int
    finish_reason: str | None
    matched: bool
    choice_index: int = 0
    details: dict | None = None
    """Logprobs and echoed prompt, as the decoder describes them
    (engine/details.py); None when the request asked for neither."""


def _bytes_input(name: str, value: str) -> grpcclient.InferInput:
    array = np.array([[value.encode("utf-8")]], dtype=np.object_)
    tensor = grpcclient.InferInput(name, list(array.shape), "BYTES")
    tensor.set_data_from_numpy(array)
    return tensor


def _ids_input(ids: list[int]) -> grpcclient.InferInput:
    tensor = grpcclient.InferInput("input_ids", [1, len(ids)], "INT32")
    tensor.set_data_from_numpy(np.array([ids], dtype=np.int32))
    return tensor


def _scalar(result: grpcclient.InferResult, name: str):
    return result.as_numpy(name).reshape(-1)[0]


def _to_chunk(result: grpcclient.InferResult) -> Chunk:
    reason = _scalar(result, "finish_reason").decode("utf-8")
    return Chunk(
        text=_scalar(result, "text_output").decode("utf-8"),
        tokens_generated=int(_scalar(result, "tokens_generated")),
        prompt_tokens=int(_scalar(result, "prompt_tokens")),
        finish_reason=reason or None,
        matched=bool(_scalar(result, "matched")),
        choice_index=int(_scalar(result, "choice_index")),
        details=json.loads(details) if (details := _scalar(result, "details")) else None,
    )


def _as_api_error(error: InferenceServerException) -> APIError:
    message = error.message() or str(error)
    status = str(error.status() or "")
    if (invalid := read_invalid_argument(message)) is not None:
        detail, field = invalid
        return APIError(400, detail, param=field)
    if BUSY_PREFIX in message:  # the decoder's queue is full: come back shortly
        detail = message.split(BUSY_PREFIX, 1)[1]
        return APIError(
            503,
            f"the server is busy ({detail}); retry later",
            headers={"Retry-After": str(BUSY_RETRY_AFTER_S)},
            code="server_busy",
        )
    if STUB_DEAD_MARKER in message:  # a model's process crashed; it is being restarted
        return backend_failure("the inference server failed (a model process crashed)")
    if "UNAVAILABLE" in status or "failed to connect" in message.lower():
        return unavailable()
    return APIError(502, f"the inference server failed: {message}")


def backend_failure(what: str) -> APIError:
    """A model process failed under the generation: retry soon, it is being restarted."""
    return APIError(
        503,
        f"{what}; retry shortly",
        headers={"Retry-After": str(FAILURE_RETRY_AFTER_S)},
        code="backend_failure",
    )


def unavailable() -> APIError:
    """Triton cannot be reached (or none is ready): retry soon, it may be restarting."""
    return APIError(
        503,
        "the inference server is not available",
        headers={"Retry-After": str(FAILURE_RETRY_AFTER_S)},
        code="backend_unavailable",
    )


def _rpc_error(error: grpc.RpcError) -> APIError:
    code = error.code() if hasattr(error, "code") else None
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return APIError(504, "the generation did not finish within the request timeout")
    if code == grpc.StatusCode.UNAVAILABLE:
        return unavailable()
    return APIError(502, f"the inference server failed: {code}")


async def _ended(stream) -> bool:
    """Reads a stream's end after its final response; True when Triton closed it.

    Our request side is already closed, so Triton ends the call by itself
    right after the final response. Cancelling a call that was about to end
    instead leaks state inside tritonserver (measured: ~10 KB a request that
    never comes back), hence the short wait for the end.
    """
    try:
        await asyncio.wait_for(anext(stream), timeout=_STREAM_END_WAIT_S)
    except StopAsyncIteration:
        return True
    except (TimeoutError, InferenceServerException, grpc.RpcError):
        pass
    return False


def _in_background(tasks: set[asyncio.Task], work: Coroutine[Any, Any, None]) -> None:
    """Runs ``work`` as a task held in ``tasks`` until it ends (the loop keeps
    only weak references to its tasks)."""
    task = asyncio.get_running_loop().create_task(work)
    tasks.add(task)
    task.add_done_callback(tasks.discard)


class _Generation:
    """One open stream, so a failure found elsewhere can end it with an error."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self.failure: APIError | None = None

    def abort(self, failure: APIError) -> None:
        self.failure = failure
        self.stream.cancel()


class TritonEngineClient:
    """Generations over ``tritonclient``'s asyncio gRPC streaming API."""

    def __init__(
        self,
        url: str,
        model: str,
        decoder_model: str,
        *,
        timeout_s: float,
        tokenizer_model: str = "tokenizer",
        chat_template_model: str = "chat_template",
        detokenizer_model: str = "detokenizer",
    ) -> None:
        self.url = url
        self._client = grpcclient.InferenceServerClient(url, channel_args=_CHANNEL_ARGS)
        self._model = model
        self._decoder_model = decoder_model
        self._tokenizer_model = tokenizer_model
        self._chat_template_model = chat_template_model
        self._detokenizer_model = detokenizer_model
        self._timeout_s = timeout_s
        self._cancellations: set[asyncio.Task] = set()
        self._closings: set[asyncio.Task] = set()
        self._in_flight: set[_Generation] = set()
        self.on_server_failure: Callable[[], None] = lambda: None
        """Set by the endpoint's health monitor."""

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)

    async def is_ready(self, timeout_s: float) -> bool:
        """Whether Triton and the ensemble say they are ready (a stub may still be dead)."""
        try:
            return await self._client.is_server_ready(
                client_timeout=timeout_s
            ) and await self._client.is_model_ready(self._model, client_timeout=timeout_s)
        except InferenceServerException:
            return False

    def _noted(self, error: APIError) -> APIError:
        """Tells the health monitor at once when a generation met a failed
        server, so new requests stop coming here before its next probe."""
        if error.code in {"backend_unavailable", "backend_failure"}:
            self.on_server_failure()
        return error

    def abort_in_flight(self, failure: APIError) -> int:
        """Ends every open generation with ``failure``; returns how many.

        For failures Triton never reports to the streams themselves: a crashed
        Python-backend stub leaves its requests open for ever.
        """
        aborted = list(self._in_flight)
        for generation in aborted:
            generation.abort(failure)
        return len(aborted)

    async def probe_decoder(self, timeout_s: float) -> str | None:
        """Asks the decoder stub itself to answer; returns the error, or None.

        Triton still calls a model ready after its stub died, so readiness
        says nothing; only a request the stub must answer does: the
        cancellation of a request that never exists.
        """
        return await self._cancel(PROBE_REQUEST_ID, timeout_s=timeout_s)

    async def probe_tokenizer(self, timeout_s: float) -> str | None:
        """Tokenizes an empty prompt in the tokenizer stub; returns the error, or None."""
        try:
            await self._client.infer(
                self._tokenizer_model, [_bytes_input("text_input", "")], client_timeout=timeout_s
            )
            return None
        except InferenceServerException as error:
            return error.message() or str(error)

    async def probe_detokenizer(self, timeout_s: float) -> str | None:
        """Decodes a one-token window in the detokenizer stub; returns the error, or None."""
        window = grpcclient.InferInput("token_window", [1, 1], "INT32")
        window.set_data_from_numpy(np.zeros((1, 1), dtype=np.int32))
        prefix = grpcclient.InferInput("window_prefix_len", [1, 1], "INT32")
        prefix.set_data_from_numpy(np.zeros((1, 1), dtype=np.int32))
        special = grpcclient.InferInput("shows_special_tokens", [1, 1], "BOOL")
        special.set_data_from_numpy(np.zeros((1, 1), dtype=np.bool_))
        try:
            await self._client.infer(
                self._detokenizer_model, [window, prefix, special], client_timeout=timeout_s
            )
            return None
        except InferenceServerException as error:
            return error.message() or str(error)

    async def render_chat(self, conversation: str) -> str:
        """The prompt for a conversation (``{"messages", "tools"}`` as JSON),
        laid out by the served model's chat template in Triton."""
        try:
            result = await self._client.infer(
                self._chat_template_model,
                [_bytes_input("chat_request", conversation)],
                client_timeout=self._timeout_s,
            )
        except InferenceServerException as error:
            raise self._noted(_as_api_error(error)) from None
        except grpc.RpcError as error:
            raise self._noted(_rpc_error(error)) from None
        return _scalar(result, "text_output").decode("utf-8")

    async def restart_model(self, model: str) -> None:
        """Unloads and loads ``model`` again, which starts a new stub process.

        Loading a model that is already loaded is a no-op in Triton, even after
        its stub died, hence the unload; the ensemble over it follows both.
        Needs Triton's ``--model-control-mode=explicit``.
        """
        await self._client.unload_model(model)
        await self._client.load_model(model)

    async def generate(
        self, prompt: str | list[int], params: SamplingParams, constraint: Constraint
    ) -> AsyncIterator[Chunk]:
        """Yields the ensemble's responses until the request's final one.

        ``prompt`` is text, or token ids the model reads as they are.
        """
        context = current() or RequestContext(new_request_id())
        request_id = context.next_triton_request_id()
        request = {
            "model_name": self._model,
            "inputs": [
                _bytes_input("text_input", prompt)
                if isinstance(prompt, str)
                else _ids_input(prompt),
                _bytes_input("sampling_parameters", params.model_dump_json(exclude_none=True)),
                _bytes_input("constraint_type", constraint.type.value),
                _bytes_input("constraint", constraint.value),
            ],
            "request_id": request_id,
        }

        async def requests():
            yield request

        stream = self._client.stream_infer(requests(), stream_timeout=self._timeout_s)
        ended = False  # the call ended, or its end is awaited elsewhere: nothing to cancel
        generation = _Generation(stream)
        self._in_flight.add(generation)
        finished = False
        cause: str | None = None  # why it ends early, when it fails here
        GENERATIONS_IN_FLIGHT.inc()
        try:
            async for result, error in stream:
                if error is not None:
                    finished = True  # Triton ended it
                    raise generation.failure or self._noted(_as_api_error(error))
                chunk = _to_chunk(result)
                if (seconds := context.first_chunk_seconds()) is not None:
                    TIME_TO_FIRST_TOKEN.labels(context.route).observe(seconds)
                finished = result.get_response().parameters["triton_final_response"].bool_param
                if finished:  # answer now; the stream's end is read in the background
                    ended = True
                    self._close_after_end(stream)
                yield chunk
                if finished:
                    return
            if generation.failure is not None:
                finished = True
                raise generation.failure
            cause = "error"
            raise APIError(502, "the inference server closed the stream before the final response")
        except InferenceServerException as error:
            cause = "error"
            raise generation.failure or self._noted(_as_api_error(error)) from None
        except grpc.RpcError as error:
            if generation.failure is not None:  # the monitor's finding explains it best
                finished = True
                raise generation.failure from None
            api_error = self._noted(_rpc_error(error))
            if api_error.status != 504:
                logger.warning("generation %s ended by gRPC: %s", request_id, error)
            cause = "timeout" if api_error.status == 504 else "error"
            raise api_error from None
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if generation.failure is None or (task is not None and task.cancelling()):
                raise  # the caller cancelled us
            finished = True  # nothing left in Triton to cancel
            raise generation.failure from None
        finally:
            self._in_flight.discard(generation)
            GENERATIONS_IN_FLIGHT.dec()
            if not ended:
                stream.cancel()
            if not finished:
                # Otherwise its reader left: the client, or a sibling prompt's failure.
                cause = cause or ("client_disconnect" if context.client_disconnected else "error")
                self._cancel_in_decoder(request_id, cause)

    def _close_after_end(self, stream) -> None:
        """Reads the end of a stream whose final response came, off the
        request's path: Triton closes the call a round trip after its final
        response (measured: a collected 4-token request answered 0.2 ms sooner
        at p50 without the wait)."""

        async def close() -> None:
            if not await _ended(stream):
                stream.cancel()

        _in_background(self._closings, close())

    def _cancel_in_decoder(self, request_id: str, cause: str) -> None:
        """Tells the decoder to drop a generation nobody will read.

        Cancelling the ensemble's stream is not enough: Triton checks an
        ensemble's cancellation only between steps, and the decoder step runs
        until the generation ends. Runs in the background so a departing
        client's handler returns at once.
        """
        CANCELLATIONS.labels(cause).inc()
        logger.info("cancelling generation %s in the decoder (%s)", request_id, cause)
        _in_background(self._cancellations, self._send_cancel(request_id))

    async def _send_cancel(self, request_id: str) -> None:
        if (error := await self._cancel(request_id, timeout_s=30)) is not None:
            logger.warning("cancelling %s in the decoder failed: %s", request_id, error)

    async def _cancel(self, request_id: str, *, timeout_s: float) -> str | None:
        """Sends the decoder a cancellation; returns its error, or None once acknowledged."""

        async def requests():
            yield {
                "model_name": self._decoder_model,
                "inputs": [_bytes_input("cancel_request_id", request_id)],
            }

        stream = self._client.stream_infer(requests(), stream_timeout=timeout_s)
        ended = False
        try:
            async for _, error in stream:
                ended = await _ended(stream)
                return None if error is None else (error.message() or str(error))
            ended = True
            return "the decoder closed the stream without answering"
        except InferenceServerException as error:
            return error.message() or str(error)
        except grpc.RpcError as error:
            return str(error.code() if hasattr(error, "code") else error)
        finally:
            if not ended:
                stream.cancel()

    async def close(self) -> None:
        await asyncio.gather(*self._closings, return_exceptions=True)
        await self._client.close()
