"""Running a chat plan: the conversation rendered by the model's template in
Triton, then the completions machinery, answered in the chat shape.

Streamed, a choice's content goes out as it comes, except while it may still
become tool calls (text that starts, or could start, with ``<tool_call>``):
that part is held, and sent as ``delta.tool_calls`` when the call is
complete, or as content once it cannot be a call.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from fastapi import Request
from fastapi.responses import StreamingResponse

from frontend.chat.plan import ChatPlan
from frontend.chat.schemas import (
    ChatChoice,
    ChatCompletion,
    ChatMessage,
    ChoiceLogprobs,
    TokenLogprob,
    TopLogprob,
)
from frontend.completions import service
from frontend.completions.choices import Piece, PromptRun
from frontend.completions.logprobs import concatenate
from frontend.completions.schemas import CompletionChoice, LegacyLogprobs, ToolCall
from frontend.errors import APIError, openai_error_body
from frontend.triton_client import Chunk
from grammar_compiler.tool_calls import TOOL_CALL_OPEN

_HEX_BYTE_PREFIX = "bytes:"


async def rendered(request: Request, plan: ChatPlan) -> ChatPlan:
    """The plan with its prompt: the conversation through the chat template."""
    try:
        prompt = await request.app.state.engine.render_chat(plan.conversation)
    except APIError as error:
        raise plan.located(error) from None
    return plan.with_prompt(prompt)


def _token_bytes(token: str) -> list[int]:
    """A token's bytes from its legacy text (``bytes:\\xNN`` for a partial character)."""
    if token.startswith(_HEX_BYTE_PREFIX):
        hex_digits = token[len(_HEX_BYTE_PREFIX) :].replace("\\x", "")
        return list(bytes.fromhex(hex_digits))
    return list(token.encode("utf-8"))


def chat_logprobs(legacy: LegacyLogprobs | None, top: int) -> ChoiceLogprobs | None:
    """OpenAI's chat ``logprobs.content`` from the completions' legacy object."""
    if legacy is None:
        return None
    content = []
    for token, logprob, alternatives in zip(
        legacy.tokens, legacy.token_logprobs, legacy.top_logprobs, strict=True
    ):
        ranked = sorted((alternatives or {}).items(), key=lambda item: item[1], reverse=True)
        content.append(
            TokenLogprob(
                token=token,
                logprob=logprob,
                bytes=_token_bytes(token),
                top_logprobs=[
                    TopLogprob(token=other, logprob=value, bytes=_token_bytes(other))
                    for other, value in ranked[:top]
                ],
            )
        )
    return ChoiceLogprobs(content=content)


def _chat_choice(choice: CompletionChoice, plan: ChatPlan) -> ChatChoice:
    calls = choice.tool_calls
    return ChatChoice(
        index=choice.index,
        message=ChatMessage(content=None if calls else choice.text, tool_calls=calls),
        logprobs=chat_logprobs(choice.logprobs, plan.top_logprobs or 0),
        finish_reason=choice.finish_reason,
    )


async def complete(request: Request, plan: ChatPlan) -> ChatCompletion:
    try:
        completion = await service.complete(request, plan.completion)
    except APIError as error:
        raise plan.located(error) from None
    return ChatCompletion(
        id=f"chatcmpl-{uuid.uuid4().hex}",
        created=completion.created,
        model=completion.model,
        choices=[_chat_choice(choice, plan) for choice in completion.choices],
        usage=completion.usage,
    )


@dataclass
class HeldContent:
    """One choice's content not sent yet because it may be tool calls."""

    watching: bool
    """Still deciding whether the output is tool calls."""
    text: str = ""
    logprobs: list[LegacyLogprobs] = field(default_factory=list)

    def take(self, piece: Piece) -> tuple[str, list[LegacyLogprobs]]:
        """What of this piece (and what was held) can go out as content now."""
        self.text += piece.text
        if piece.logprobs is not None:
            self.logprobs.append(piece.logprobs)
        if self.watching and _may_become_calls(self.text) and piece.finish_reason is None:
            return "", []
        self.watching = False
        text, logprobs = self.text, self.logprobs
        self.text, self.logprobs = "", []
        return text, logprobs


def _may_become_calls(text: str) -> bool:
    return text.startswith(TOOL_CALL_OPEN) or TOOL_CALL_OPEN.startswith(text)


def _tool_call_deltas(calls: list[ToolCall]) -> list[dict]:
    return [{"index": index, **call.model_dump()} for index, call in enumerate(calls)]


async def stream(request: Request, plan: ChatPlan) -> StreamingResponse:
    """Server-sent ``chat.completion.chunk`` events, then usage if asked, then [DONE].

    The first chunk is awaited before answering, so a request the pipeline
    refuses gets a proper HTTP error.
    """
    completion = plan.completion
    runs = service.prompt_runs(completion)
    completion_id, created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())
    chunks = service.merged_chunks(
        request.app.state.engine, completion, runs, request.app.state.settings.stream_interval_ms
    )
    try:
        first = await service.first_chunk(chunks)
    except APIError as error:
        raise plan.located(error) from None
    held: dict[int, HeldContent] = {}

    def event(choices: list[dict], usage: dict | None = None) -> bytes:
        body = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": completion.model,
            "choices": choices,
        }
        if plan.include_usage:
            body["usage"] = usage
        return service.sse_event(body)

    def choice_event(index: int, delta: dict, logprobs=None, finish_reason=None) -> bytes:
        return event(
            [
                {
                    "index": index,
                    "delta": delta,
                    "logprobs": logprobs.model_dump() if logprobs else None,
                    "finish_reason": finish_reason,
                }
            ]
        )

    async def piece_events(run: PromptRun, chunk: Chunk) -> AsyncIterator[bytes]:
        index, piece = await run.add(chunk)
        if index not in held:
            held[index] = HeldContent(watching=completion.calls_tools)
            yield choice_event(index, {"role": "assistant", "content": ""})
        text, parts = held[index].take(piece)
        logprobs = chat_logprobs(concatenate(parts) if parts else None, plan.top_logprobs or 0)
        if piece.tool_calls:
            delta = {"tool_calls": _tool_call_deltas(piece.tool_calls)}
            yield choice_event(index, delta, logprobs, piece.finish_reason)
        elif text or piece.finish_reason is not None:
            delta = {"content": text} if text else {}
            yield choice_event(index, delta, logprobs, piece.finish_reason)

    async def events() -> AsyncIterator[bytes]:
        try:
            if first is not None:
                async for data in piece_events(*first):
                    yield data
                async for run, chunk in chunks:
                    async for data in piece_events(run, chunk):
                        yield data
            usage = service.usage_of(runs)
            if plan.include_usage:
                yield event([], usage.model_dump())
        except APIError as error:
            yield service.sse_event(openai_error_body(plan.located(error)))
        finally:
            with contextlib.suppress(Exception):
                await chunks.aclose()
        yield service.sse_event("[DONE]")

    return StreamingResponse(
        events(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"}
    )
