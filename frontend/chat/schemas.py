"""Request and response models of ``POST /v1/chat/completions`` (OpenAI's shape).

Fields mean what they mean on OpenAI's API and on ``/v1/completions`` here
(the same ranges and defaults); unknown fields are refused, types are strict.
``grammar`` is this project's extension, taking every type ``/v1/completions``
takes. Content is text: a string or a list of text parts.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr

from engine.params import MAX_LOGIT_BIAS
from frontend.completions.schemas import (
    Grammar,
    NamedToolChoice,
    ResponseFormat,
    Tool,
    ToolCall,
    Usage,
    VllmConstraintFields,
    request_config,
)

MAX_MESSAGES = 1024
MAX_TOP_LOGPROBS = 5  # what the decoder reports per token (as /v1/completions' logprobs)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class TextPart(_Strict):
    type: Literal["text"]
    text: StrictStr


Content = StrictStr | Annotated[list[TextPart], Field(min_length=1)]


class SystemMessage(_Strict):
    role: Literal["system", "developer"]
    content: Content
    name: str | None = None


class UserMessage(_Strict):
    role: Literal["user"]
    content: Content
    name: str | None = None


class AssistantMessage(_Strict):
    role: Literal["assistant"]
    content: Content | None = None
    name: str | None = None
    tool_calls: list[ToolCall] | None = None
    refusal: str | None = None


class ToolMessage(_Strict):
    role: Literal["tool"]
    content: Content
    tool_call_id: str


Message = Annotated[
    SystemMessage | UserMessage | AssistantMessage | ToolMessage, Field(discriminator="role")
]


class StreamOptions(_Strict):
    include_usage: bool | None = None


EXAMPLE_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "maxLength": 20}},
    "required": ["name"],
    "additionalProperties": False,
}
"""The JSON Schema of the chat and Responses routes' OpenAPI examples."""
MODEL_DESCRIPTION = 'The served name, an alias or "default"; absent targets the model.'


class ChatCompletionRequest(VllmConstraintFields):
    model_config = request_config(
        {
            "model": "default",
            "messages": [{"role": "user", "content": "Give me a product as JSON."}],
            "max_completion_tokens": 64,
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "product", "strict": True, "schema": EXAMPLE_SCHEMA},
            },
        }
    )

    model: str | None = Field(None, description=MODEL_DESCRIPTION)
    messages: Annotated[list[Message], Field(min_length=1, max_length=MAX_MESSAGES)] = Field(
        description="The conversation, rendered with the served model's own chat template."
    )
    max_tokens: int | None = Field(
        None, ge=1, description="Deprecated by OpenAI in favour of max_completion_tokens."
    )
    max_completion_tokens: int | None = Field(None, ge=1)
    temperature: float | None = Field(1.0, ge=0.0, le=2.0)
    top_p: float | None = Field(1.0, gt=0.0, le=1.0)
    n: int | None = Field(1, ge=1, le=128)
    stop: str | list[str] | None = None
    stream: bool | None = False
    stream_options: StreamOptions | None = None
    seed: int | None = Field(None, ge=0, le=2**63 - 1 - 128)
    presence_penalty: float | None = Field(0.0, ge=-2.0, le=2.0)
    frequency_penalty: float | None = Field(0.0, ge=-2.0, le=2.0)
    logit_bias: dict[str, float] | None = Field(None, max_length=MAX_LOGIT_BIAS)
    logprobs: bool | None = False
    top_logprobs: int | None = Field(None, ge=0, le=20)
    response_format: ResponseFormat | None = None
    grammar: Grammar | None = None
    tools: list[Tool] | None = None
    tool_choice: Literal["none", "auto", "required"] | NamedToolChoice | None = None
    parallel_tool_calls: bool | None = None
    user: str | None = Field(None, description="End-user id, written to the request log.")


class TopLogprob(BaseModel):
    token: str
    logprob: float
    bytes: list[int] | None


class TokenLogprob(TopLogprob):
    top_logprobs: list[TopLogprob]


class ChoiceLogprobs(BaseModel):
    content: list[TokenLogprob] | None
    refusal: list[TokenLogprob] | None = None


class ChatMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str | None
    refusal: str | None = None
    tool_calls: list[ToolCall] | None = Field(None, exclude_if=lambda calls: calls is None)


class ChatChoice(BaseModel):
    index: int
    message: ChatMessage
    logprobs: ChoiceLogprobs | None = None
    finish_reason: Literal["stop", "length", "tool_calls"] | None


class ChatCompletion(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[ChatChoice]
    usage: Usage | None = None
    system_fingerprint: str | None = None


def as_text(content: Any) -> str | None:
    """A message's content as one string (text parts joined), as templates of
    text-only models expect."""
    if content is None or isinstance(content, str):
        return content
    return "".join(part.text for part in content)
