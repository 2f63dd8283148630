"""From a completions request to what the pipeline runs: the one place that
decides what is supported.

Every documented field either becomes part of the plan or is refused here
with a 400 naming it; nothing is dropped on the way.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from engine.params import SamplingParams
from frontend.completions.schemas import (
    MAX_STOP_SEQUENCES,
    VLLM_CONSTRAINT_FIELDS,
    CompletionRequest,
)
from frontend.errors import APIError
from frontend.text_fields import require_text
from frontend.translation_cache import translation_cache
from grammar_compiler import ConstraintError
from grammar_compiler.canonical import CanonicalConstraint
from grammar_compiler.openai_constraints import (
    STRUCTURED_OUTPUT_KINDS,
    grammar_constraint,
    response_format_constraint,
    structured_outputs_constraint,
)
from grammar_compiler.tools import tools_constraint

if TYPE_CHECKING:
    from frontend.chat.schemas import ChatCompletionRequest

_T = TypeVar("_T")

# Mirostat's documented defaults, used when only one of its fields is given.
MIROSTAT_TARGET = 1.5
MIROSTAT_LR = 0.1
# Sequences one request may generate (prompts x best_of), to bound its cost.
MAX_SEQUENCES_PER_REQUEST = 256


@dataclass(frozen=True)
class CompletionPlan:
    model: str
    prompts: list[str | list[int]]
    params: SamplingParams
    """What each prompt's decoder request runs; ``params.n`` counts best_of."""
    choices_per_prompt: int
    """``n``: the choices returned per prompt (the best by log probability
    when best_of generated more)."""
    constraint: CanonicalConstraint | None
    constraint_field: str | None
    """The request field the constraint came from (grammar, response_format,
    tools, a vLLM field): the ``param`` of an error the decoder finds in it."""
    calls_tools: bool
    """The output may be tool calls: parse them and report ``tool_calls``."""
    logprobs: int | None
    echo: bool
    suffix: str
    stream: bool
    user: str | None

    @property
    def ranks_choices(self) -> bool:
        return self.params.n > self.choices_per_prompt


def plan_completion(
    body: CompletionRequest,
    served_model: str,
    aliases: Collection[str] = (),
    *,
    parallel_tool_calls: bool = True,
) -> CompletionPlan:
    """Validates everything a field's type alone cannot and builds the plan.

    The one served model answers to its name, its ``aliases``, ``"default"``
    and no name at all; responses report its own name. ``parallel_tool_calls``
    (the chat route's field) False allows one tool call instead of several.
    """
    require_text(body)
    if body.model is not None and body.model not in (served_model, "default", *aliases):
        also = "".join(f", `{alias}`" for alias in aliases if alias != served_model)
        raise APIError(
            404,
            f"The model `{body.model}` does not exist; this server serves `{served_model}`"
            f'{also} (or use "default", or leave model out).',
            param="model",
            code="model_not_found",
        )
    if body.images:
        raise APIError(
            400,
            f"images: the served model `{served_model}` is text-only and cannot read images",
            param="images",
        )
    prompts = _prompts(body.prompt)
    n = body.n or 1
    best_of = body.best_of or n
    if best_of < n:
        raise APIError(400, f"best_of ({best_of}) must be at least n ({n})", param="best_of")
    if best_of > n and body.stream:
        raise APIError(
            400,
            "best_of > n cannot be streamed: the best choices are known only at the end",
            param="best_of",
        )
    if len(prompts) * best_of > MAX_SEQUENCES_PER_REQUEST:
        raise APIError(
            400,
            f"{len(prompts)} prompts x {best_of} choices exceeds {MAX_SEQUENCES_PER_REQUEST} "
            "sequences per request",
            param="n" if best_of == n else "best_of",
        )
    constraint, constraint_field, calls_tools = _constraint(body, parallel_tool_calls)
    params = _sampling(body, best_of)
    return CompletionPlan(
        model=served_model,
        prompts=prompts,
        params=params,
        choices_per_prompt=n,
        constraint=constraint,
        constraint_field=constraint_field,
        calls_tools=calls_tools,
        logprobs=body.logprobs,
        echo=bool(body.echo),
        suffix=body.suffix or "",
        stream=bool(body.stream),
        user=body.user,
    )


def _prompts(prompt: str | list) -> list[str | list[int]]:
    if isinstance(prompt, str):
        return [prompt]
    if all(isinstance(item, int) for item in prompt):
        return [list(prompt)]
    return list(prompt)


def _stops(stop: str | list[str] | None) -> tuple[str, ...]:
    stops = [stop] if isinstance(stop, str) else list(stop or [])
    if len(stops) > MAX_STOP_SEQUENCES:
        raise APIError(
            400,
            f"stop: at most {MAX_STOP_SEQUENCES} sequences, got {len(stops)}",
            param="stop",
        )
    if any(not item for item in stops):
        raise APIError(400, "stop: sequences must not be empty", param="stop")
    return tuple(stops)


def _logit_bias(bias: dict[str, float] | None) -> dict[int, float]:
    parsed = {}
    for key, value in (bias or {}).items():
        if not key.isdigit():
            raise APIError(400, f"logit_bias: keys are token ids, got {key!r}", param="logit_bias")
        if not -100.0 <= value <= 100.0:
            raise APIError(
                400,
                f"logit_bias[{key}]: {value} is outside -100..100",
                param="logit_bias",
            )
        parsed[int(key)] = value
    return parsed


def _mirostat(body: CompletionRequest) -> tuple[float | None, float]:
    """Either field enables Mirostat; the other takes its documented default."""
    if body.mirostat_target is None and body.mirostat_lr is None:
        return None, MIROSTAT_LR
    target = body.mirostat_target if body.mirostat_target is not None else MIROSTAT_TARGET
    return target, body.mirostat_lr if body.mirostat_lr is not None else MIROSTAT_LR


# Request fields that are SamplingParams fields of the same name and meaning;
# an explicit null takes the engine's default, as an absent field does.
_SAME_NAME_FIELDS = (
    "max_tokens", "temperature", "top_k", "top_p", "min_p", "repetition_penalty",
    "presence_penalty", "frequency_penalty", "seed", "ignore_eos", "dry_multiplier",
    "dry_base", "dry_allowed_length", "dry_sequence_breakers",
)  # fmt: skip
_RENAMED_FIELDS = {
    "echo": "echo_prompt",
    "context_length_exceeded_behavior": "context_overflow",
    "truncate_sequence": "truncate_prompt",
}


def _sampling(body: CompletionRequest, sequences: int) -> SamplingParams:
    given = {name: getattr(body, name) for name in _SAME_NAME_FIELDS}
    given |= {ours: getattr(body, theirs) for theirs, ours in _RENAMED_FIELDS.items()}
    mirostat_target, mirostat_lr = _mirostat(body)
    # best_of ranks choices by their log probability, so it needs them computed.
    logprobs = body.logprobs
    if logprobs is None and sequences > (body.n or 1):
        logprobs = 0
    return SamplingParams(
        **{name: value for name, value in given.items() if value is not None},
        stop=_stops(body.stop),
        # The model decides when a complete output ends (end-of-sequence, which
        # the constraint allows only where the output is complete).
        stop_after_match=False,
        logit_bias=_logit_bias(body.logit_bias),
        mirostat_target=mirostat_target,
        mirostat_lr=mirostat_lr,
        n=sequences,
        logprobs=logprobs,
    )


def translates_constraint(body: CompletionRequest | ChatCompletionRequest) -> bool:
    """Whether planning ``body`` translates a constraint (tools are translated,
    and so checked, even under ``tool_choice`` "none").

    The routes plan a request without one on the event loop: its plan is
    microseconds of checks, less than the hop to the constraint threads
    (measured: 0.15 ms of the frontend's CPU per request).
    """
    return bool(body.tools) or bool(_constraint_sources(body))


def _constraint_sources(body: CompletionRequest | ChatCompletionRequest) -> list[str]:
    sources = []
    if body.grammar is not None:
        sources.append("grammar")
    if body.response_format is not None and body.response_format.type != "text":
        sources.append("response_format")
    sources += [name for name in VLLM_CONSTRAINT_FIELDS if getattr(body, name) is not None]
    if body.tools and body.tool_choice != "none":
        sources.append("tools")
    return sources


def _constraint(
    body: CompletionRequest, parallel_tool_calls: bool
) -> tuple[CanonicalConstraint | None, str | None, bool]:
    """The one constraint of the request, the field that gives it, and whether
    the output may be tool calls.

    Without tools (absent, null or empty), ``tool_choice`` "auto" or "none"
    means no constraint, as the documents have it; one that needs a tool to
    call cannot be honoured.
    """
    tool_choice = body.tool_choice
    if not body.tools and tool_choice not in (None, "none", "auto"):
        wanted = '"required"' if tool_choice == "required" else "a named function"
        raise APIError(
            400, f"tool_choice: {wanted} needs at least one tool in tools", param="tool_choice"
        )
    sources = _constraint_sources(body)
    if len(sources) > 1:
        raise APIError(
            400,
            f"{' and '.join(sources)} both constrain the output; give only one",
            param=sources[1],
        )
    if body.tools and "tools" not in sources:  # tool_choice "none": checked all the same
        _checked(lambda: _tools_of(body, parallel_tool_calls), "tools")
    if not sources:
        return None, None, False
    if sources[0] == "grammar":
        grammar = body.grammar
        constraint = _checked(lambda: _grammar(grammar.type, _as_text(grammar.value)), "grammar")
        return constraint, "grammar", False
    if sources[0] == "response_format":
        # json.dumps, not model_dump_json: pydantic refuses deep nesting with a
        # serialization error, where the schema's own depth limit names the problem.
        given = body.response_format
        constraint = _checked(
            lambda: _response_format(
                json.dumps(given.model_dump(by_alias=True, exclude_none=True))
            ),
            "response_format",
        )
        return constraint, "response_format", False
    if sources[0] in VLLM_CONSTRAINT_FIELDS:
        kind, value, field = _vllm_constraint(body, sources[0])
        constraint = _checked(lambda: _structured_output(kind, json.dumps(value), field), field)
        return constraint, field, False
    return _checked(lambda: _tools_of(body, parallel_tool_calls), "tools"), "tools", True


def _tools_of(body: CompletionRequest, parallel_tool_calls: bool) -> CanonicalConstraint | None:
    """The tools' constraint; None under ``tool_choice`` "none"."""
    tools = json.dumps([tool.model_dump(exclude_none=True) for tool in body.tools])
    tool_choice = body.tool_choice
    choice = (
        tool_choice.model_dump_json()
        if tool_choice is not None and not isinstance(tool_choice, str)
        else json.dumps(tool_choice or "auto")
    )
    return _tools(tools, choice, parallel_tool_calls)


def _checked(translate: Callable[[], _T], field: str) -> _T:
    """``translate()``, its refusal a 400 naming the field it came from."""
    try:
        return translate()
    except ConstraintError as error:
        named = getattr(error, "field", None) or field
        raise APIError(400, str(error), param=named) from None
    except RecursionError:  # nesting too deep for json.dumps: no schema allows it anyway
        raise APIError(400, f"{field}: nests too deeply", param=field) from None


def _vllm_constraint(body: CompletionRequest, source: str) -> tuple[str, object, str]:
    """(kind, value, field) of vLLM's constraint field ``source``: ``guided_<kind>``,
    or the one constraint given in ``structured_outputs``."""
    if source != "structured_outputs":
        return source.removeprefix("guided_"), getattr(body, source), source
    given = body.structured_outputs.model_dump(by_alias=True, exclude_none=True)
    kinds = [kind for kind in STRUCTURED_OUTPUT_KINDS if kind in given]
    if len(kinds) != 1:
        raise APIError(
            400,
            "structured_outputs: give exactly one of json, regex, choice, grammar, json_object"
            + (f" (got {', '.join(kinds)})" if kinds else ""),
            param="structured_outputs",
        )
    return kinds[0], given[kinds[0]], f"structured_outputs.{kinds[0]}"


def _as_text(value: str | dict) -> str:
    """The grammar's text; a JSON Schema given as an object keeps its key order,
    which is the order its properties are written in."""
    return value if isinstance(value, str) else json.dumps(value)


# Translations are cached by their text: a client that sends the same schema
# with every request pays for the translation once (errors are not cached).
@translation_cache("completions_grammar")
def _grammar(kind: str, value: str) -> CanonicalConstraint:
    return grammar_constraint(kind, value)


@translation_cache("completions_response_format")
def _response_format(response_format: str) -> CanonicalConstraint:
    return response_format_constraint(json.loads(response_format))


@translation_cache("completions_structured_outputs")
def _structured_output(kind: str, value: str, field: str) -> CanonicalConstraint:
    return structured_outputs_constraint(kind, json.loads(value), field)


@translation_cache("completions_tools")
def _tools(tools: str, tool_choice: str, parallel: bool) -> CanonicalConstraint:
    return tools_constraint(json.loads(tools), json.loads(tool_choice), parallel=parallel)
