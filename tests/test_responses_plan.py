"""``/v1/responses`` planned as the chat route: the mapping of OpenAI's Responses
fields onto chat fields, and errors named by the field the client sent."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from frontend.errors import APIError
from frontend.responses.plan import plan_responses
from frontend.responses.schemas import ResponsesRequest

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
}


def _plan(**fields):
    return plan_responses(ResponsesRequest.model_validate({"input": "hi", **fields}), "m")


def _refused(**fields) -> APIError:
    with pytest.raises(APIError) as caught:
        _plan(**fields)
    return caught.value


def _conversation(**fields) -> dict:
    return json.loads(_plan(**fields).conversation)


def test_instructions_come_first_and_a_string_input_is_the_user_turn() -> None:
    assert _conversation(instructions="Be brief.")["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi"},
    ]


def test_output_items_sent_back_become_the_assistant_turn_and_its_tool_results() -> None:
    """What a client appends after a response (its output items, then the function's
    result) reads as the chat conversation the template expects."""
    items = [
        {"role": "user", "content": [{"type": "input_text", "text": "Weather?"}]},
        {
            "type": "message",
            "id": "msg_1",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Checking.", "annotations": []}],
        },
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "f",
            "arguments": "{}",
        },
        {"type": "function_call", "call_id": "call_2", "name": "g", "arguments": '{"a": 1}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
        {"type": "function_call_output", "call_id": "call_2", "output": "3"},
    ]
    messages = _conversation(input=items)["messages"]
    assert messages == [
        {"role": "user", "content": "Weather?"},
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "g", "arguments": '{"a": 1}'},
                },
            ],
        },
        {"role": "tool", "content": "sunny", "tool_call_id": "call_1"},
        {"role": "tool", "content": "3", "tool_call_id": "call_2"},
    ]


def test_flat_function_tools_are_strict_unless_they_say_otherwise() -> None:
    strict = _plan(tools=[WEATHER], tool_choice="required").completion.constraint
    assert (
        strict.judge(
            '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>'
        )
        is None
    )
    assert strict.judge('<tool_call>{"name": "get_weather", "arguments": {"town": 1}}</tool_call>')
    loose = _plan(tools=[{**WEATHER, "strict": False}], tool_choice="required")
    judge = loose.completion.constraint.judge
    assert judge('<tool_call>{"name": "get_weather", "arguments": {"town": 1}}</tool_call>') is None


def test_a_named_tool_choice_and_parallel_calls_carry_over() -> None:
    other = {**WEATHER, "name": "other"}
    plan = _plan(
        tools=[WEATHER, other],
        tool_choice={"type": "function", "name": "other"},
        parallel_tool_calls=False,
    )
    judge = plan.completion.constraint.judge
    assert judge('<tool_call>{"name": "other", "arguments": {"city": "x"}}</tool_call>') is None
    assert judge('<tool_call>{"name": "get_weather", "arguments": {"city": "x"}}</tool_call>')
    two = '<tool_call>{"name": "other", "arguments": {"city": "x"}}</tool_call>'
    assert judge(f"{two}\n{two}")  # parallel_tool_calls false: one call


def test_text_formats_become_response_formats() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    text = {"format": {"type": "json_schema", "name": "n", "schema": schema, "strict": True}}
    judge = _plan(text=text).completion.constraint.judge
    assert judge('{"n": 1}') is None and judge('{"n": "x"}')
    json_mode = _plan(text={"format": {"type": "json_object"}}).completion.constraint
    assert json_mode.judge("{}") is None and json_mode.judge("[]")
    assert _plan(text={"format": {"type": "text"}}).completion.constraint is None
    plan = _plan(max_output_tokens=7, temperature=0.0)
    assert plan.completion.params.max_tokens == 7 and plan.completion.params.temperature == 0.0


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"store": True}, "store"),
        ({"previous_response_id": "resp_1"}, "previous_response_id"),
        ({"tools": [{**WEATHER, "name": "bad name"}]}, "tools[0].name"),
        ({"tool_choice": "required"}, "tool_choice"),
        ({"text": {"format": {"type": "json_schema", "name": "x"}}}, "text.format"),
        (
            {"text": {"format": {"type": "json_schema", "name": "x", "schema": {"type": 3}}}},
            "text.format",
        ),
        ({"model": "someone-else"}, "model"),
    ],
)
def test_errors_name_the_field_the_client_sent(fields: dict, param: str) -> None:
    error = _refused(**fields)
    assert error.status in (400, 404) and (error.param or "").startswith(param), (
        error.param,
        error.message,
    )


@pytest.mark.parametrize(
    "fields",
    [
        {"reasoning": {"effort": "low"}},
        {"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]},
        {"input": []},
        {"max_output_tokens": 0},
        {"text": {"format": {"type": "json_schema", "name": "x", "schema": {}, "extra": 1}}},
    ],
)
def test_unknown_or_out_of_range_fields_are_refused(fields: dict) -> None:
    with pytest.raises(ValidationError):
        ResponsesRequest.model_validate({"input": "hi", **fields})


def test_the_grammar_extension_and_vllm_fields_constrain_as_on_chat() -> None:
    regex = _plan(grammar={"type": "regex", "value": "(yes|no)"}).completion.constraint
    assert regex.judge("yes") is None and regex.judge("maybe")
    choice = _plan(structured_outputs={"choice": ["red", "blue"]}).completion.constraint
    assert choice.judge("blue") is None and choice.judge("green")
    both = _refused(
        text={"format": {"type": "json_object"}}, grammar={"type": "regex", "value": "a"}
    )
    assert both.param == "text.format" and "grammar and text.format both" in both.message


def test_output_logprobs_are_asked_of_chat_through_include_or_top_logprobs() -> None:
    assert _plan().top_logprobs is None
    assert _plan(include=["message.output_text.logprobs"]).top_logprobs == 0
    assert _plan(include=["message.output_text.logprobs"], top_logprobs=3).top_logprobs == 3
    assert _plan(top_logprobs=2).top_logprobs == 2


@pytest.mark.parametrize(
    ("fields", "param", "words"),
    [
        ({"include": ["reasoning.encrypted_content"]}, "include[0]", "not served here"),
        (
            {"include": ["message.output_text.logprobs", "file_search_call.results"]},
            "include[1]",
            "only 'message.output_text.logprobs'",
        ),
        ({"top_logprobs": 6}, "top_logprobs", "at most 5"),
    ],
)
def test_includes_not_served_and_too_many_alternatives_are_refused(
    fields: dict, param: str, words: str
) -> None:
    error = _refused(**fields)
    assert error.status == 400 and error.param == param and words in error.message
