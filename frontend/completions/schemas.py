"""Request and response models of ``POST /v1/completions`` (and ``/completions``).

The union of openai-completions-with-grammar.txt and completions-extended.txt,
field by field. Unknown fields are refused (a typo is never silently ignored);
types are strict (``"max_tokens": "3"`` and ``"echo": "yes"`` are refused, not
coerced; an integer is a valid number, as JSON clients send ``1`` for ``1.0``);
``null`` means the default wherever the documents allow it; ranges are the
documents' own, read as inclusive bounds where a default sits on the bound
(``top_p`` defaults to 1). ``model`` is optional, as
openai-completions-with-grammar.txt has it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from engine.params import MAX_LOGIT_BIAS
from grammar_compiler.openai_constraints import GrammarType

MAX_STOP_SEQUENCES = 4
MAX_PROMPTS = 64

TokenIds = Annotated[
    list[Annotated[StrictInt, Field(ge=0, lt=2**31)]], Field(min_length=1)
]  # ids travel as INT32 tensors
Prompt = (
    StrictStr
    | Annotated[list[StrictStr], Field(min_length=1, max_length=MAX_PROMPTS)]
    | TokenIds
    | Annotated[list[TokenIds], Field(min_length=1, max_length=MAX_PROMPTS)]
)


class Grammar(BaseModel):
    """A constraint on the whole completion."""

    model_config = ConfigDict(extra="forbid", strict=True)

    type: GrammarType = Field(
        description="regex: Python-style regular expression; json_schema: a JSON Schema; lark: "
        "a Lark grammar; llguidance: llguidance's JSON wrapper around one Lark grammar or JSON "
        "schema; gbnf / ebnf / bnf: the BNF dialects of the cfg endpoint; abnf: RFC 5234's "
        "ABNF; iso-ebnf / w3c-ebnf: standard EBNF (docs/grammars.md)."
    )
    value: str | dict[str, Any] = Field(description="The grammar text, or a JSON object.")


class FunctionDefinition(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = Field(
        None,
        description="When true, the parameters JSON schema is enforced on the generated "
        "arguments by the grammar; otherwise the arguments are any JSON object.",
    )


class Tool(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    type: Literal["function"]
    function: FunctionDefinition


class NamedFunction(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    name: str


class NamedToolChoice(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    type: Literal["function"]
    function: NamedFunction


class ResponseFormat(BaseModel):
    """``text``; ``json_object`` with an optional ``schema``; or OpenAI's
    ``json_schema`` with ``json_schema: {name, schema, strict}``."""

    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)

    type: Literal["text", "json_object", "json_schema"]
    schema_: dict[str, Any] | None = Field(None, alias="schema")
    json_schema: dict[str, Any] | None = None


class StructuredOutputs(BaseModel):
    """vLLM's ``structured_outputs``: one constraint, as vLLM clients send it."""

    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)

    json_: str | dict[str, Any] | bool | None = Field(
        None, alias="json", description="A JSON Schema (enforced strictly)."
    )
    regex: str | None = Field(None, description="A Python-style regular expression.")
    choice: list[str] | None = Field(None, description="The output is one of these strings.")
    grammar: str | None = Field(
        None, description="A grammar in any format the cfg endpoint reads (GBNF/EBNF, Lark, ...)."
    )
    json_object: bool | None = Field(None, description="true: any JSON object.")


class VllmConstraintFields(BaseModel):
    """The constraint fields of vLLM's OpenAI-compatible server, so its clients work as
    they are; each is the same constraint as the matching ``grammar`` type, and at
    most one constraint field may be given."""

    structured_outputs: StructuredOutputs | None = Field(
        None, description="vLLM's structured outputs (json, regex, choice, grammar, json_object)."
    )
    guided_json: str | dict[str, Any] | bool | None = Field(
        None, description="vLLM's older name for structured_outputs.json."
    )
    guided_regex: str | None = Field(None, description="vLLM's older structured_outputs.regex.")
    guided_choice: list[str] | None = Field(
        None, description="vLLM's older name for structured_outputs.choice."
    )
    guided_grammar: str | None = Field(
        None, description="vLLM's older name for structured_outputs.grammar."
    )


VLLM_CONSTRAINT_FIELDS = tuple(VllmConstraintFields.model_fields)


def request_config(example: dict[str, Any]) -> ConfigDict:
    """A request model's configuration: unknown fields refused, strict types, and
    the example the OpenAPI page shows."""
    return ConfigDict(extra="forbid", strict=True, json_schema_extra={"examples": [example]})


class CompletionRequest(VllmConstraintFields):
    model_config = request_config(
        {
            "model": "default",
            "prompt": "Say this is a test.",
            "max_tokens": 16,
            "temperature": 0.7,
            "grammar": {"type": "regex", "value": "[A-Z][a-z ]+\\."},
        }
    )

    model: str | None = Field(
        None,
        description="Model id: the served name, one of its aliases (CT_SERVED_MODEL_NAMES) or "
        '"default"; absent or null targets the only loaded model.',
    )
    prompt: Prompt = Field(
        description="A string, a list of strings, a list of token ids, or a list of token-id "
        "lists. Several prompts give several choices, indexed prompt by prompt."
    )
    max_tokens: int | None = Field(16, ge=1, description="Upper bound on generated tokens.")
    temperature: float | None = Field(1.0, ge=0.0, le=2.0, description="0 selects greedy.")
    top_p: float | None = Field(1.0, gt=0.0, le=1.0)
    top_k: int | None = Field(None, ge=1, le=128)
    min_p: float | None = Field(None, ge=0.0, le=1.0)
    n: int | None = Field(1, ge=1, le=128)
    best_of: int | None = Field(None, ge=1, le=128)
    logprobs: int | None = Field(None, ge=0, le=5)
    echo: bool | None = False
    suffix: str | None = Field(None, description="Text appended after the completion.")
    stop: str | list[str] | None = Field(
        None, description="Up to 4 sequences that end generation; the text keeps them."
    )
    stream: bool | None = False
    seed: int | None = Field(None, ge=0, le=2**63 - 1 - 128)
    ignore_eos: bool | None = False
    presence_penalty: float | None = Field(0.0, ge=-2.0, le=2.0)
    frequency_penalty: float | None = Field(0.0, ge=-2.0, le=2.0)
    repetition_penalty: float | None = Field(1.0, gt=0.0, le=2.0)
    logit_bias: dict[str, float] | None = Field(
        None,
        max_length=MAX_LOGIT_BIAS,
        description="Token id (as a string) to a bias in -100..100 added to its logit.",
    )
    dry_multiplier: float | None = Field(None, ge=0.0)
    dry_base: float | None = Field(None, ge=1.0)
    dry_allowed_length: int | None = Field(None, ge=1)
    dry_sequence_breakers: list[str] | None = Field(None, max_length=64)
    mirostat_target: float | None = Field(
        None, gt=0.0, description="Setting either mirostat field enables Mirostat v2."
    )
    mirostat_lr: float | None = Field(None, gt=0.0, le=1.0)
    context_length_exceeded_behavior: Literal["truncate", "error"] | None = "truncate"
    truncate_sequence: bool | None = False
    grammar: Grammar | None = None
    response_format: ResponseFormat | None = None
    tools: list[Tool] | None = None
    tool_choice: Literal["none", "auto", "required"] | NamedToolChoice | None = None
    images: list[str] | None = Field(None, description="Refused: the served models are text-only.")
    user: str | None = Field(None, description="End-user id, written to the request log.")


class LegacyLogprobs(BaseModel):
    tokens: list[str]
    token_logprobs: list[float | None]
    top_logprobs: list[dict[str, float] | None]
    text_offset: list[int]


class FunctionCall(BaseModel):
    name: str
    arguments: str = Field(description="The arguments as JSON text.")


class ToolCall(BaseModel):
    id: str
    type: Literal["function"] = "function"
    function: FunctionCall


class CompletionChoice(BaseModel):
    index: int
    text: str
    logprobs: LegacyLogprobs | None = Field(
        None, description="null unless requested, streamed or not (OpenAI's shape)."
    )
    finish_reason: Literal["stop", "length", "tool_calls"] | None = None
    tool_calls: list[ToolCall] | None = Field(
        None,
        exclude_if=lambda calls: calls is None,
        description="The tool calls in text, parsed (an extension of the legacy format, "
        "present only when the output is calls).",
    )


class Usage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class Completion(BaseModel):
    id: str
    object: Literal["text_completion"] = "text_completion"
    created: int
    model: str
    choices: list[CompletionChoice]
    usage: Usage | None = None


class Model(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[Model]
