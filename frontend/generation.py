"""Running one generation for a route: collecting it, and cancelling it when
the HTTP client goes away."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TypeVar

from fastapi import Request

from engine.params import Constraint, SamplingParams
from frontend.errors import APIError

DISCONNECT_POLL_S = 0.25
# A collected (non-streamed) generation needs no per-token responses: with an
# interval longer than any generation the decoder sends each choice's first
# and final output only, sparing the per-token IPC, gRPC and parsing.
COLLECT_INTERVAL_MS = 3_600_000.0

T = TypeVar("T")


@dataclass(frozen=True)
class Completion:
    text: str
    tokens_generated: int
    prompt_tokens: int
    finish_reason: str
    matched: bool


async def _collect(
    request: Request, prompt: str, params: SamplingParams, constraint: Constraint
) -> Completion:
    parts: list[str] = []
    collected = params.model_copy(update={"stream_interval_ms": COLLECT_INTERVAL_MS})
    async for chunk in request.app.state.engine.generate(prompt, collected, constraint):
        parts.append(chunk.text)
        if chunk.finish_reason == "cancelled":
            raise APIError(503, "the generation was cancelled by the inference server")
        if chunk.finish_reason is not None:
            return Completion(
                text="".join(parts),
                tokens_generated=chunk.tokens_generated,
                prompt_tokens=chunk.prompt_tokens,
                finish_reason=chunk.finish_reason,
                matched=chunk.matched,
            )
    raise APIError(502, "the inference server ended the generation without a final response")


async def collect_completion(
    request: Request, prompt: str, params: SamplingParams, constraint: Constraint
) -> Completion:
    """Runs a generation to its end, cancelling it if the client disconnects."""
    return await until_disconnected(request, _collect(request, prompt, params, constraint))


async def until_disconnected(request: Request, work: Awaitable[T]) -> T:
    """Awaits ``work``, cancelling it if the HTTP client disconnects first
    (uvicorn does not cancel a handler whose client left); cancelling a
    generation's iteration cancels it in the decoder.

    ``work`` runs in the caller's own task and a watcher polls the connection
    beside it, so the result comes back without a hop between tasks.
    """
    caller = asyncio.current_task()
    assert caller is not None
    client_left = False

    async def watch() -> None:
        nonlocal client_left
        while True:
            await asyncio.sleep(DISCONNECT_POLL_S)
            if await request.is_disconnected():
                client_left = True
                caller.cancel()
                return

    watcher = asyncio.get_running_loop().create_task(watch())
    try:
        return await work
    except asyncio.CancelledError:
        if client_left and caller.uncancel() == 0:  # ours alone, not the server's
            raise APIError(499, "client closed the request") from None
        raise
    finally:
        watcher.cancel()
