"""Running a completion plan against the pipeline: collected or streamed.

Each prompt is one decoder request; several prompts run concurrently and
their chunks are merged as they come.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator

from fastapi import Request
from fastapi.responses import StreamingResponse

from frontend.completions.choices import PromptRun
from frontend.completions.plan import CompletionPlan
from frontend.completions.schemas import Completion, Usage
from frontend.constrained import decoder_constraint
from frontend.errors import APIError, openai_error_body
from frontend.generation import COLLECT_INTERVAL_MS, until_disconnected
from frontend.metrics import TOKENS
from frontend.triton_client import Chunk
from frontend.triton_pool import TritonPool

logger = logging.getLogger(__name__)


async def merged_chunks(
    engine: TritonPool,
    plan: CompletionPlan,
    runs: list[PromptRun],
    stream_interval_ms: float,
) -> AsyncIterator[tuple[PromptRun, Chunk]]:
    """Every prompt's chunks, interleaved as they arrive; leaving early cancels
    every generation still running."""
    constraint = decoder_constraint(plan.constraint)
    params = plan.params.model_copy(update={"stream_interval_ms": stream_interval_ms})
    if len(runs) == 1:  # the usual case: no task and queue between the chunks and their reader
        (run,) = runs
        async with contextlib.aclosing(engine.generate(run.prompt, params, constraint)) as chunks:
            try:
                async for chunk in chunks:
                    yield run, chunk
            except Exception as error:
                raise _located(error, plan) from None
        return
    queue: asyncio.Queue = asyncio.Queue()

    async def pump(run: PromptRun) -> None:
        try:
            async with contextlib.aclosing(
                engine.generate(run.prompt, params, constraint)
            ) as chunks:
                async for chunk in chunks:
                    await queue.put((run, chunk, None))
            await queue.put((run, None, None))
        except Exception as error:  # handed to the consumer, which raises it
            await queue.put((run, None, error))

    tasks = [asyncio.ensure_future(pump(run)) for run in runs]
    try:
        remaining = len(tasks)
        while remaining:
            run, chunk, error = await queue.get()
            if error is not None:
                raise _located(error, plan)
            if chunk is None:
                remaining -= 1
                continue
            yield run, chunk
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _located(error: Exception, plan: CompletionPlan) -> Exception:
    """An error the decoder found in the constraint names the request field
    that gave it (the decoder knows it only as ``constraint``)."""
    if isinstance(error, APIError) and error.param == "constraint":
        error.param = plan.constraint_field
    return error


def usage_of(runs: list[PromptRun]) -> Usage:
    prompt = sum(run.prompt_tokens for run in runs)
    completion = sum(run.completion_tokens for run in runs)
    TOKENS.labels("prompt").inc(prompt)
    TOKENS.labels("completion").inc(completion)
    return Usage(
        prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion
    )


def prompt_runs(plan: CompletionPlan) -> list[PromptRun]:
    return [PromptRun(plan, index, prompt) for index, prompt in enumerate(plan.prompts)]


async def complete(request: Request, plan: CompletionPlan) -> Completion:
    """The whole completion in one response."""
    runs = prompt_runs(plan)
    created = int(time.time())

    async def collect() -> None:
        async with contextlib.aclosing(
            merged_chunks(request.app.state.engine, plan, runs, COLLECT_INTERVAL_MS)
        ) as chunks:
            async for run, chunk in chunks:
                await run.add(chunk)

    await until_disconnected(request, collect())
    return Completion(
        id=f"cmpl-{uuid.uuid4().hex}",
        created=created,
        model=plan.model,
        choices=[choice for run in runs for choice in run.best_choices()],
        usage=usage_of(runs),
    )


async def first_chunk(
    chunks: AsyncGenerator[tuple[PromptRun, Chunk]],
) -> tuple[PromptRun, Chunk] | None:
    """The first of ``chunks`` (None when there are none), awaited before a stream
    answers so that a request the pipeline refuses gets a proper HTTP error;
    ``chunks`` is closed when that raises."""
    try:
        return await anext(chunks)
    except StopAsyncIteration:
        return None
    except BaseException:
        await chunks.aclose()
        raise


def sse_event(payload: dict | str) -> bytes:
    data = payload if isinstance(payload, str) else json.dumps(payload, separators=(",", ":"))
    return f"data: {data}\n\n".encode()


async def stream(request: Request, plan: CompletionPlan) -> StreamingResponse:
    """Server-sent events: one per piece of a choice, then usage, then [DONE].

    The first chunk is awaited before answering, so a request the pipeline
    refuses (a grammar that fails to compile) gets a proper HTTP error.
    """
    runs = prompt_runs(plan)
    completion_id, created = f"cmpl-{uuid.uuid4().hex}", int(time.time())
    chunks = merged_chunks(
        request.app.state.engine, plan, runs, request.app.state.settings.stream_interval_ms
    )
    first = await first_chunk(chunks)

    def event(choices: list[dict], usage: Usage | None = None) -> bytes:
        body = {
            "id": completion_id,
            "object": "text_completion",
            "created": created,
            "model": plan.model,
            "choices": choices,
        }
        if usage is not None:
            body["usage"] = usage.model_dump()
        return sse_event(body)

    async def piece_event(run: PromptRun, chunk: Chunk) -> bytes | None:
        index, piece = await run.add(chunk)
        if piece.is_empty:
            return None
        choice = {
            "index": index,
            "text": piece.text,
            "logprobs": piece.logprobs.model_dump() if piece.logprobs else None,
            "finish_reason": piece.finish_reason,
        }
        if piece.tool_calls:
            choice["tool_calls"] = [call.model_dump() for call in piece.tool_calls]
        return event([choice])

    async def events() -> AsyncIterator[bytes]:
        try:
            if first is not None:
                if (data := await piece_event(*first)) is not None:
                    yield data
                async for run, chunk in chunks:
                    if (data := await piece_event(run, chunk)) is not None:
                        yield data
            yield event([], usage_of(runs))
        except APIError as error:
            yield sse_event(openai_error_body(error))
        finally:
            await chunks.aclose()
        yield sse_event("[DONE]")

    return StreamingResponse(
        events(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"}
    )
