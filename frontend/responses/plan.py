"""From a Responses request to a chat plan.

``/v1/responses`` is the chat route with OpenAI's newer field names: the
input items become chat messages (``instructions`` a system message first,
``function_call`` items an assistant message's tool calls,
``function_call_output`` items tool messages), ``text.format`` becomes
``response_format``, flat function tools become chat tools, and
``include: ["message.output_text.logprobs"]`` (or ``top_logprobs`` alone)
asks for chat's logprobs. ``plan_chat``
then decides what is supported, as for ``/v1/chat/completions``; its errors
are renamed back to the field the client sent.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from pydantic import BaseModel, ValidationError

from frontend.chat.plan import ChatPlan, plan_chat
from frontend.chat.schemas import ChatCompletionRequest
from frontend.completions.schemas import VLLM_CONSTRAINT_FIELDS
from frontend.errors import APIError
from frontend.responses.schemas import (
    OUTPUT_LOGPROBS,
    FunctionCallItem,
    InputMessage,
    NamedFunctionChoice,
    ResponsesRequest,
)

# Chat field prefixes and the Responses field each came from, most specific first.
_RENAMED = (
    ("response_format.json_schema.", "text.format."),
    ("response_format", "text.format"),
    ("max_completion_tokens", "max_output_tokens"),
    ("tool_choice.function.", "tool_choice."),
)


def plan_responses(
    body: ResponsesRequest, served_model: str, aliases: Collection[str] = ()
) -> ChatPlan:
    if body.store:
        raise APIError(
            400,
            "store: this server keeps no responses; send store false or leave it out",
            param="store",
        )
    if body.previous_response_id is not None:
        raise APIError(
            400,
            "previous_response_id: this server keeps no responses; send the earlier turns "
            "(a response's output items included) in input",
            param="previous_response_id",
        )
    for index, value in enumerate(body.include or ()):
        if value != OUTPUT_LOGPROBS:
            raise APIError(
                400,
                f"include[{index}]: {value!r} is not served here; only {OUTPUT_LOGPROBS!r}",
                param=f"include[{index}]",
            )
    try:
        chat = ChatCompletionRequest.model_validate(_chat_fields(body), strict=False)
    except ValidationError as error:  # a field valid here that chat reads otherwise
        first = error.errors()[0]
        raise APIError(400, f"input: {first['msg']}", param="input") from None
    try:
        return plan_chat(chat, served_model, aliases)
    except APIError as error:
        raise located(error) from None


def located(error: APIError) -> APIError:
    """An error about a chat field, renamed to the Responses field it came from (in
    its message too: "grammar and text.format both constrain the output")."""
    for chat, responses in _RENAMED:
        error.message = error.message.replace(chat, responses)
    error.args = (error.message,)
    param = error.param
    if param is None:
        return error
    if param.startswith("messages"):
        error.param = "input"  # (indices differ where instructions came first)
    elif param.startswith("tools[") and ".function." in param:
        error.param = param.replace(".function.", ".", 1)
    else:
        for chat, responses in _RENAMED:
            if param.startswith(chat):
                error.param = responses + param[len(chat) :]
                break
    return error


def _chat_fields(body: ResponsesRequest) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "model": body.model,
        "messages": _messages(body),
        "max_completion_tokens": body.max_output_tokens,
        "temperature": body.temperature,
        "top_p": body.top_p,
        "stream": body.stream,
        "user": body.user,
        "parallel_tool_calls": body.parallel_tool_calls,
    }
    if OUTPUT_LOGPROBS in (body.include or ()) or body.top_logprobs is not None:
        fields |= {"logprobs": True, "top_logprobs": body.top_logprobs or 0}
    text_format = body.text.format if body.text is not None else None
    if text_format is not None and text_format.type == "json_schema":
        given = text_format.model_dump(by_alias=True, exclude_none=True, exclude={"type"})
        fields["response_format"] = {"type": "json_schema", "json_schema": given}
    elif text_format is not None:
        fields["response_format"] = {"type": text_format.type}
    for name in ("grammar", *VLLM_CONSTRAINT_FIELDS):
        value = getattr(body, name)
        if isinstance(value, BaseModel):
            value = value.model_dump(by_alias=True, exclude_none=True)
        fields[name] = value
    if body.tools is not None:
        fields["tools"] = [
            {
                "type": "function",
                "function": {
                    **tool.model_dump(exclude_none=True, exclude={"type", "strict"}),
                    "strict": tool.strict is not False,  # OpenAI's default here: strict
                },
            }
            for tool in body.tools
        ]
    choice = body.tool_choice
    if isinstance(choice, NamedFunctionChoice):
        fields["tool_choice"] = {"type": "function", "function": {"name": choice.name}}
    elif choice is not None:
        fields["tool_choice"] = choice
    return {name: value for name, value in fields.items() if value is not None}


def _messages(body: ResponsesRequest) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if body.instructions is not None:
        messages.append({"role": "system", "content": body.instructions})
    if isinstance(body.input, str):
        return [*messages, {"role": "user", "content": body.input}]
    for item in body.input:
        if isinstance(item, InputMessage):
            content = item.content
            text = content if isinstance(content, str) else "".join(p.text for p in content)
            messages.append({"role": item.role, "content": text})
        elif isinstance(item, FunctionCallItem):
            call = {
                "id": item.call_id,
                "type": "function",
                "function": {"name": item.name, "arguments": item.arguments},
            }
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "assistant":  # the same turn's calls
                last.setdefault("tool_calls", []).append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        else:
            messages.append({"role": "tool", "tool_call_id": item.call_id, "content": item.output})
    return messages
