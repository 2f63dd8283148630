"""From a chat request to a completion plan plus the conversation to render.

The chat route is the completions path with a prompt made by the model's chat
template: every field that means the same here becomes the completions
field, and ``plan_completion`` decides what is supported, as for
``/v1/completions``. What only chat has (``messages``, ``max_completion_tokens``,
``logprobs``/``top_logprobs``, ``stream_options``, ``parallel_tool_calls``)
is checked here.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass, replace

from frontend.chat.schemas import MAX_TOP_LOGPROBS, ChatCompletionRequest, as_text
from frontend.completions.plan import CompletionPlan, plan_completion
from frontend.completions.schemas import VLLM_CONSTRAINT_FIELDS, CompletionRequest
from frontend.errors import APIError
from frontend.text_fields import require_text

# No max_tokens: generate until the model ends its turn or the context is full
# (the decoder lowers it to the room the prompt leaves), as OpenAI does.
UNBOUNDED_MAX_TOKENS = 2**31 - 1

# Completions fields that chat names differently, for errors found by the
# completions plan or the decoder.
_CHAT_PARAM = {"prompt": "messages", "logprobs": "top_logprobs"}
# Fields both requests have, with one meaning.
_SAME_FIELDS = (
    "model", "temperature", "top_p", "n", "stop", "stream", "seed", "presence_penalty",
    "frequency_penalty", "logit_bias", "response_format", "grammar", "tools", "tool_choice",
    "user", *VLLM_CONSTRAINT_FIELDS,
)  # fmt: skip


@dataclass(frozen=True)
class ChatPlan:
    completion: CompletionPlan
    """What the decoder runs; its prompt is filled in once the conversation is rendered."""
    conversation: str
    """``{"messages", "tools"}`` as JSON, for the chat_template model."""
    max_tokens_field: str
    top_logprobs: int | None
    """None: no logprobs; otherwise how many alternatives each token lists."""
    include_usage: bool

    def with_prompt(self, prompt: str) -> ChatPlan:
        return replace(self, completion=replace(self.completion, prompts=[prompt]))

    def located(self, error: APIError) -> APIError:
        """An error about a completions field, renamed to the chat field."""
        if error.param == "max_tokens":
            error.param = self.max_tokens_field
        elif error.param in _CHAT_PARAM:
            error.param = _CHAT_PARAM[error.param]
        return error


def plan_chat(
    body: ChatCompletionRequest, served_model: str, aliases: Collection[str] = ()
) -> ChatPlan:
    require_text(body)
    max_tokens, max_tokens_field = _max_tokens(body)
    top_logprobs = _top_logprobs(body)
    if body.stream_options is not None and not body.stream:
        raise APIError(400, "stream_options: only allowed with stream", param="stream_options")
    completion_body = CompletionRequest.model_construct(
        **{name: getattr(body, name) for name in _SAME_FIELDS},
        prompt="",
        max_tokens=max_tokens,
        logprobs=top_logprobs,
        echo=False,
        context_length_exceeded_behavior="truncate",
        truncate_sequence=False,
    )
    return ChatPlan(
        completion=_planned(
            completion_body, served_model, aliases, body.parallel_tool_calls is not False
        ),
        conversation=_conversation(body),
        max_tokens_field=max_tokens_field,
        top_logprobs=top_logprobs,
        include_usage=bool(body.stream_options and body.stream_options.include_usage),
    )


def _planned(
    body: CompletionRequest, served_model: str, aliases: Collection[str], parallel: bool
) -> CompletionPlan:
    try:
        return plan_completion(body, served_model, aliases, parallel_tool_calls=parallel)
    except APIError as error:
        if error.param in _CHAT_PARAM:
            error.param = _CHAT_PARAM[error.param]
        raise


def _max_tokens(body: ChatCompletionRequest) -> tuple[int, str]:
    given = {
        name: value
        for name in ("max_completion_tokens", "max_tokens")
        if (value := getattr(body, name)) is not None
    }
    if len(set(given.values())) > 1:
        raise APIError(
            400,
            "max_tokens and max_completion_tokens disagree; give max_completion_tokens only",
            param="max_tokens",
        )
    for name, value in given.items():
        return value, name
    return UNBOUNDED_MAX_TOKENS, "max_completion_tokens"


def _top_logprobs(body: ChatCompletionRequest) -> int | None:
    if not body.logprobs:
        if body.top_logprobs is not None:
            raise APIError(400, "top_logprobs: needs logprobs set to true", param="top_logprobs")
        return None
    top = body.top_logprobs or 0
    if top > MAX_TOP_LOGPROBS:
        raise APIError(
            400,
            f"top_logprobs: at most {MAX_TOP_LOGPROBS} on this server, got {top}",
            param="top_logprobs",
        )
    return top


def _conversation(body: ChatCompletionRequest) -> str:
    messages = []
    for message in body.messages:
        rendered = message.model_dump(exclude_none=True)
        if "content" in rendered:
            rendered["content"] = as_text(message.content)
        messages.append(rendered)
    tools = [tool.model_dump(exclude_none=True) for tool in body.tools] if body.tools else None
    return json.dumps({"messages": messages, "tools": tools})
