"""Running a Responses plan: the chat machinery, answered as OpenAI's ``response``.

Streamed, the events are OpenAI's: ``response.created``, ``response.in_progress``,
then for the answer's text ``response.output_item.added``,
``response.content_part.added``, ``response.output_text.delta`` (as it comes)
and their ``.done`` events, for each tool call an output item with
``response.function_call_arguments.delta``/``.done``, and last
``response.completed`` (``response.incomplete`` when ``max_output_tokens``
cut it) carrying the whole response. Text that may still become a tool call
is held, as on the chat route.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from fastapi import Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel

from frontend.chat import service as chat_service
from frontend.chat.plan import ChatPlan
from frontend.chat.schemas import TokenLogprob
from frontend.completions import service as completions
from frontend.completions.logprobs import concatenate
from frontend.completions.schemas import LegacyLogprobs, ToolCall, Usage
from frontend.errors import APIError
from frontend.responses.plan import located
from frontend.responses.schemas import (
    IncompleteDetails,
    OutputFunctionCall,
    OutputMessage,
    OutputTextPart,
    Response,
    ResponsesRequest,
    ResponseUsage,
)


@dataclass
class _Answer:
    """A response being built: its id, when it began, and its output items so far."""

    body: ResponsesRequest
    model: str
    id: str = field(default_factory=lambda: f"resp_{uuid.uuid4().hex}")
    created_at: int = field(default_factory=lambda: int(time.time()))
    output: list[OutputMessage | OutputFunctionCall] = field(default_factory=list)

    def response(self, finish_reason: str | None, usage: Usage | None) -> Response:
        """The response as it stands; ``finish_reason`` None: still in progress."""
        body = self.body
        status = (
            "in_progress"
            if finish_reason is None
            else "incomplete"
            if finish_reason == "length"
            else "completed"
        )
        text_format = body.text.format if body.text is not None else None
        return Response(
            id=self.id,
            created_at=self.created_at,
            status=status,
            incomplete_details=IncompleteDetails(reason="max_output_tokens")
            if status == "incomplete"
            else None,
            model=self.model,
            instructions=body.instructions,
            output=list(self.output),
            max_output_tokens=body.max_output_tokens,
            temperature=body.temperature,
            top_p=body.top_p,
            parallel_tool_calls=body.parallel_tool_calls is not False,
            tool_choice=_dumped(body.tool_choice) or "auto",
            tools=[tool.model_dump(exclude_none=True) for tool in body.tools or ()],
            text={
                "format": text_format.model_dump(by_alias=True, exclude_none=True)
                if text_format is not None
                else {"type": "text"}
            },
            metadata=body.metadata,
            usage=None if usage is None else _usage(usage),
        )

    def add_calls(self, calls: list[ToolCall]) -> list[OutputFunctionCall]:
        items = [
            OutputFunctionCall(
                id=f"fc_{uuid.uuid4().hex}",
                call_id=call.id,
                name=call.function.name,
                arguments=call.function.arguments,
                status="completed",
            )
            for call in calls
        ]
        self.output.extend(items)
        return items


def _dumped(value: object) -> object:
    return value.model_dump() if isinstance(value, BaseModel) else value


def _usage(usage: Usage) -> ResponseUsage:
    return ResponseUsage(
        input_tokens=usage.prompt_tokens,
        output_tokens=usage.completion_tokens,
        total_tokens=usage.total_tokens,
    )


def _message(text: str, status: str, logprobs: list[TokenLogprob] | None = None) -> OutputMessage:
    return OutputMessage(
        id=f"msg_{uuid.uuid4().hex}",
        status=status,
        content=[OutputTextPart(text=text, logprobs=logprobs or [])],
    )


async def complete(request: Request, body: ResponsesRequest, plan: ChatPlan) -> Response:
    try:
        chat = await chat_service.complete(request, plan)
    except APIError as error:
        raise located(error) from None
    choice = chat.choices[0]
    answer = _Answer(body, chat.model)
    if choice.message.content:
        status = "incomplete" if choice.finish_reason == "length" else "completed"
        logprobs = choice.logprobs.content if choice.logprobs is not None else None
        answer.output.append(_message(choice.message.content, status, logprobs))
    answer.add_calls(choice.message.tool_calls or [])
    return answer.response(choice.finish_reason or "stop", chat.usage)


def _token_logprobs(parts: list[LegacyLogprobs], top: int | None) -> list[TokenLogprob]:
    """The streamed text's tokens as the Responses API lists them; none unless asked."""
    if top is None or not parts:
        return []
    logprobs = chat_service.chat_logprobs(concatenate(parts), top)
    return list(logprobs.content or ()) if logprobs is not None else []


def _sse(kind: str, payload: dict) -> bytes:
    data = json.dumps({"type": kind, **payload}, separators=(",", ":"))
    return f"event: {kind}\ndata: {data}\n\n".encode()


async def stream(request: Request, body: ResponsesRequest, plan: ChatPlan) -> StreamingResponse:
    """OpenAI's Responses events (module docstring).

    The first chunk is awaited before answering, so a request the pipeline
    refuses gets a proper HTTP error.
    """
    completion = plan.completion
    runs = completions.prompt_runs(completion)
    chunks = completions.merged_chunks(
        request.app.state.engine, completion, runs, request.app.state.settings.stream_interval_ms
    )
    try:
        first = await completions.first_chunk(chunks)
    except APIError as error:
        raise located(plan.located(error)) from None
    answer = _Answer(body, completion.model)
    events = _Events()
    held = chat_service.HeldContent(watching=completion.calls_tools)

    async def pieces() -> AsyncIterator[tuple]:
        if first is not None:
            yield first
        async for item in chunks:
            yield item

    async def text_events() -> AsyncIterator[bytes]:
        message: OutputMessage | None = None  # the text item, once text came
        pending: list[LegacyLogprobs] = []
        finish_reason = None
        try:
            async for run, chunk in pieces():
                _, piece = await run.add(chunk)
                text, parts = held.take(piece)
                pending += parts  # a token that ends no character yet waits for the text
                finish_reason = piece.finish_reason or finish_reason
                if piece.tool_calls:
                    pending = []  # a call's tokens: its item lists no logprobs
                    start = len(answer.output)
                    for index, item in enumerate(answer.add_calls(piece.tool_calls), start):
                        for data in events.function_call(index, item):
                            yield data
                    continue
                if text and message is None:
                    message = _message("", "in_progress")
                    answer.output.append(message)
                    for data in events.message_opened(len(answer.output) - 1, message):
                        yield data
                if text:
                    logprobs, pending = _token_logprobs(pending, plan.top_logprobs), []
                    message.content[0].text += text
                    message.content[0].logprobs += logprobs
                    yield events.delta(answer.output.index(message), message, text, logprobs)
            if message is not None:
                message.content[0].logprobs += _token_logprobs(pending, plan.top_logprobs)
                message.status = "incomplete" if finish_reason == "length" else "completed"
                for data in events.message_closed(answer.output.index(message), message):
                    yield data
            final = answer.response(finish_reason or "stop", completions.usage_of(runs))
            kind = "response.completed" if final.status == "completed" else "response.incomplete"
            yield events.event(kind, response=final.model_dump(mode="json"))
        except APIError as error:
            error = located(plan.located(error))
            yield events.event("error", code=error.code, message=error.message, param=error.param)
        finally:
            with contextlib.suppress(Exception):
                await chunks.aclose()

    async def all_events() -> AsyncIterator[bytes]:
        snapshot = answer.response(None, None).model_dump(mode="json")
        yield events.event("response.created", response=snapshot)
        yield events.event("response.in_progress", response=snapshot)
        async for data in text_events():
            yield data

    return StreamingResponse(
        all_events(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"}
    )


class _Events:
    """Numbered events (``sequence_number``), and the groups an output item takes."""

    def __init__(self) -> None:
        self.sequence = 0

    def event(self, kind: str, **payload: object) -> bytes:
        data = _sse(kind, {**payload, "sequence_number": self.sequence})
        self.sequence += 1
        return data

    def message_opened(self, index: int, message: OutputMessage) -> list[bytes]:
        empty = OutputMessage(id=message.id, status="in_progress", content=[])
        return [
            self.event("response.output_item.added", output_index=index, item=empty.model_dump()),
            self.event(
                "response.content_part.added",
                item_id=message.id,
                output_index=index,
                content_index=0,
                part=OutputTextPart(text="").model_dump(),
            ),
        ]

    def delta(
        self, index: int, message: OutputMessage, text: str, logprobs: list[TokenLogprob]
    ) -> bytes:
        return self.event(
            "response.output_text.delta",
            item_id=message.id,
            output_index=index,
            content_index=0,
            delta=text,
            logprobs=[entry.model_dump() for entry in logprobs],
        )

    def message_closed(self, index: int, message: OutputMessage) -> list[bytes]:
        part = message.content[0]
        where = {"item_id": message.id, "output_index": index, "content_index": 0}
        return [
            self.event(
                "response.output_text.done",
                **where,
                text=part.text,
                logprobs=[entry.model_dump() for entry in part.logprobs],
            ),
            self.event("response.content_part.done", **where, part=part.model_dump()),
            self.event("response.output_item.done", output_index=index, item=message.model_dump()),
        ]

    def function_call(self, index: int, call: OutputFunctionCall) -> list[bytes]:
        opened = call.model_copy(update={"arguments": "", "status": "in_progress"})
        where = {"item_id": call.id, "output_index": index}
        return [
            self.event("response.output_item.added", output_index=index, item=opened.model_dump()),
            self.event("response.function_call_arguments.delta", **where, delta=call.arguments),
            self.event("response.function_call_arguments.done", **where, arguments=call.arguments),
            self.event("response.output_item.done", output_index=index, item=call.model_dump()),
        ]
