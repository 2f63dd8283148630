"""Request and response models of ``POST /v1/responses`` (OpenAI's Responses API, stateless).

The service keeps no responses: ``store`` may only be false and
``previous_response_id`` is refused, so a conversation goes back in
``input`` (a response's ``output`` items are accepted there as they come).
Content is text. Beside ``text.format`` and tools, the constraint may be this
project's ``grammar`` or one of vLLM's fields, as on the chat route. Unknown
fields are refused, types are strict.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr

from frontend.chat.schemas import EXAMPLE_SCHEMA, MAX_MESSAGES, MODEL_DESCRIPTION, TokenLogprob
from frontend.completions.schemas import Grammar, VllmConstraintFields, request_config

OUTPUT_LOGPROBS = "message.output_text.logprobs"
"""The one ``include`` value served: the other ones name things this server has not."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class InputText(_Strict):
    type: Literal["input_text"]
    text: StrictStr


class OutputText(_Strict):
    """An earlier answer's text, as a response's ``output`` carries it."""

    type: Literal["output_text"]
    text: StrictStr
    annotations: list[Any] | None = None
    logprobs: list[Any] | None = None


class InputMessage(_Strict):
    type: Literal["message"] | None = None
    role: Literal["user", "system", "developer", "assistant"]
    content: StrictStr | Annotated[list[InputText | OutputText], Field(min_length=1)]
    id: str | None = None
    status: str | None = None


class _CallItem(_Strict):
    """An item about one call, with the id and status a response's items carry."""

    call_id: str
    id: str | None = None
    status: str | None = None


class FunctionCallItem(_CallItem):
    """A call the model made earlier (a response's ``function_call`` output item)."""

    type: Literal["function_call"]
    name: str
    arguments: str


class FunctionCallOutput(_CallItem):
    """What the client's function returned for ``call_id``."""

    type: Literal["function_call_output"]
    output: str


InputItem = InputMessage | FunctionCallItem | FunctionCallOutput


class FunctionTool(_Strict):
    type: Literal["function"]
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = Field(
        None, description="Absent means true, as on OpenAI: the parameters are enforced."
    )


class NamedFunctionChoice(_Strict):
    type: Literal["function"]
    name: str


class TextFormat(BaseModel):
    """``text``, ``json_object``, or ``json_schema`` with ``name``, ``schema``, ``strict``."""

    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)

    type: Literal["text", "json_object", "json_schema"]
    name: str | None = None
    schema_: dict[str, Any] | None = Field(None, alias="schema")
    description: str | None = None
    strict: bool | None = None


class TextOptions(_Strict):
    format: TextFormat | None = None


class ResponsesRequest(VllmConstraintFields):
    model_config = request_config(
        {
            "model": "default",
            "input": "Give me a product as JSON.",
            "max_output_tokens": 64,
            "text": {
                "format": {
                    "type": "json_schema",
                    "name": "product",
                    "strict": True,
                    "schema": EXAMPLE_SCHEMA,
                }
            },
        }
    )

    model: str | None = Field(None, description=MODEL_DESCRIPTION)
    input: StrictStr | Annotated[list[InputItem], Field(min_length=1, max_length=MAX_MESSAGES)]
    instructions: str | None = Field(None, description="A system message put before input.")
    max_output_tokens: int | None = Field(None, ge=1)
    temperature: float | None = Field(1.0, ge=0.0, le=2.0)
    top_p: float | None = Field(1.0, gt=0.0, le=1.0)
    stream: bool | None = False
    text: TextOptions | None = None
    grammar: Grammar | None = Field(
        None, description="This project's extension, as on /v1/chat/completions."
    )
    tools: list[FunctionTool] | None = None
    tool_choice: Literal["none", "auto", "required"] | NamedFunctionChoice | None = None
    parallel_tool_calls: bool | None = None
    store: bool | None = Field(None, description="Only false: this server keeps no responses.")
    previous_response_id: str | None = Field(
        None, description="Refused: this server keeps no responses; send the turns in input."
    )
    metadata: dict[str, str] | None = Field(None, max_length=16)
    user: str | None = Field(None, description="End-user id, written to the request log.")
    include: list[StrictStr] | None = Field(
        None,
        description=f"Only {OUTPUT_LOGPROBS!r}: each output token's log probability.",
    )
    top_logprobs: int | None = Field(
        None, ge=0, le=20, description="Alternatives listed per token (at most 5 here)."
    )


class OutputTextPart(BaseModel):
    type: Literal["output_text"] = "output_text"
    text: str
    annotations: list[Any] = Field(default_factory=list)
    logprobs: list[TokenLogprob] = Field(default_factory=list)


class OutputMessage(BaseModel):
    type: Literal["message"] = "message"
    id: str
    status: Literal["in_progress", "completed", "incomplete"]
    role: Literal["assistant"] = "assistant"
    content: list[OutputTextPart]


class OutputFunctionCall(BaseModel):
    type: Literal["function_call"] = "function_call"
    id: str
    call_id: str
    name: str
    arguments: str
    status: Literal["in_progress", "completed", "incomplete"]


class InputTokensDetails(BaseModel):
    cached_tokens: int = 0


class OutputTokensDetails(BaseModel):
    reasoning_tokens: int = 0


class ResponseUsage(BaseModel):
    input_tokens: int
    input_tokens_details: InputTokensDetails = Field(default_factory=InputTokensDetails)
    output_tokens: int
    output_tokens_details: OutputTokensDetails = Field(default_factory=OutputTokensDetails)
    total_tokens: int


class IncompleteDetails(BaseModel):
    reason: Literal["max_output_tokens"]


class Response(BaseModel):
    id: str
    object: Literal["response"] = "response"
    created_at: int
    status: Literal["in_progress", "completed", "incomplete"]
    incomplete_details: IncompleteDetails | None = None
    error: None = None
    model: str
    instructions: str | None = None
    output: list[OutputMessage | OutputFunctionCall]
    max_output_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    parallel_tool_calls: bool
    tool_choice: Any
    tools: list[Any]
    text: dict[str, Any]
    metadata: dict[str, str] | None = None
    store: bool = False
    usage: ResponseUsage | None = None
