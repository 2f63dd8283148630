"""``POST /v1/completion/typed`` as typed-completion.txt specifies it."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime
from typing import Literal

from fastapi import APIRouter, Depends, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from engine.params import SamplingParams
from frontend.auth import require_api_key
from frontend.constrained import (
    REPORT_HEADER_RESPONSES,
    Verdict,
    compiled_or_400,
    generate_verified,
    report_headers,
)
from frontend.text_fields import require_text

router = APIRouter(dependencies=[Depends(require_api_key)])

TYPES_IN_PROMPT = (
    "\n\nReply with JSON of the TypeScript type {type_name}:\n```typescript\n{schema}\n```\n"
)


class TypedCompletionRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        strict=True,  # a string is never read as a number ("max_tokens": "20" is refused)
        json_schema_extra={
            "examples": [
                {
                    "prompt": "Write a sentence",
                    "max_tokens": 20,
                    "temperature": 0.8,
                    "top_p": 0.9,
                    "stop": ["."],
                    "presence_penalty": 0.6,
                    "frequency_penalty": 0.5,
                    "schema": "export type BasicSentence {\n  text: string;\n}",
                    "type_name": "BasicSentence",
                }
            ]
        },
    )

    prompt: str = Field(description="The prompt to generate from.")
    schema_: str = Field(
        alias="schema",
        min_length=1,
        description="TypeScript definitions (type aliases, interfaces, enums; generics allowed), "
        "exported or not.",
    )
    type_name: str = Field(
        min_length=1,
        description="The declared type the completion must have (a generic one only when every "
        "type parameter has a default).",
    )
    max_tokens: int = Field(
        256, ge=1, le=8192, description="The maximum number of tokens to generate."
    )
    temperature: float = Field(1.0, ge=0.0, le=2.0, description="0 selects greedy decoding.")
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    stop: list[str] = Field(
        default_factory=list,
        max_length=16,
        description="Strings that end the completion, kept in its text. They end it only where the "
        "JSON is complete, so a stop string inside a string value (the '.' of a sentence) never "
        "cuts the output into invalid JSON.",
    )
    presence_penalty: float = Field(0.0, ge=-2.0, le=2.0)
    frequency_penalty: float = Field(0.0, ge=-2.0, le=2.0)
    include_types_in_prompt: bool = Field(
        True,
        description="Append the type definitions to the prompt (as TypeChat does) so the model "
        "sees what it must produce; the constraint is enforced either way.",
    )

    def model_prompt(self) -> str:
        if not self.include_types_in_prompt:
            return self.prompt
        return self.prompt + TYPES_IN_PROMPT.format(
            type_name=self.type_name, schema=self.schema_.strip()
        )


class TypedUsage(BaseModel):
    prompt_tokens: int
    prediction_time_ms: int = Field(
        description="Time from request to final token, in milliseconds."
    )
    completion_tokens: int
    total_tokens: int


class TypedChoice(BaseModel):
    text: str = Field(
        description="JSON that validates against the type (when finish_reason is stop)."
    )
    created: int = Field(description="Unix time in seconds.")
    model: str
    finish_reason: Literal["stop", "length", "verification_failed"] = Field(
        description="stop: complete and valid; length: max_tokens cut it short (a prefix of valid "
        "JSON); verification_failed: jsonschema rejected what the decoder called complete (logged)."
    )
    usage: TypedUsage


class TypedCompletionResponse(BaseModel):
    id: uuid.UUID
    object: Literal["text_completion"] = "text_completion"
    created: datetime = Field(description="ISO 8601 time the completion was generated.")
    choices: list[TypedChoice]
    usage: TypedUsage


FINISH_REASONS = {
    Verdict.MATCH: "stop",
    Verdict.TOKEN_LIMIT: "length",
    Verdict.VERIFICATION_FAILED: "verification_failed",
}


@router.post(
    "/v1/completion/typed",
    response_model=TypedCompletionResponse,
    responses=REPORT_HEADER_RESPONSES,
    summary="Completion typed by TypeScript definitions",
)
async def typed_completion(
    body: TypedCompletionRequest, request: Request, response: Response
) -> TypedCompletionResponse:
    require_text(body)
    constraint = await compiled_or_400("typescript", body.schema_, body.type_name)
    response.headers.update(report_headers(constraint))
    params = SamplingParams(
        max_tokens=body.max_tokens,
        temperature=body.temperature,
        top_p=body.top_p,
        stop=tuple(body.stop),
        presence_penalty=body.presence_penalty,
        frequency_penalty=body.frequency_penalty,
    )
    started = time.perf_counter()
    result = await generate_verified(request, body.model_prompt(), params, constraint)
    completion = result.completion
    usage = TypedUsage(
        prompt_tokens=completion.prompt_tokens,
        prediction_time_ms=round((time.perf_counter() - started) * 1000),
        completion_tokens=completion.tokens_generated,
        total_tokens=completion.prompt_tokens + completion.tokens_generated,
    )
    now = datetime.now(UTC)
    choice = TypedChoice(
        text=completion.text,
        created=int(now.timestamp()),
        model=request.app.state.settings.model_name,
        finish_reason=FINISH_REASONS[result.verdict],
        usage=usage,
    )
    return TypedCompletionResponse(id=uuid.uuid4(), created=now, choices=[choice], usage=usage)
