"""``/v1/chat/completions`` with the official ``openai`` SDK against the live
stack: the tiny model's own chat template, real grammars, real Triton."""

from __future__ import annotations

import json
from typing import Literal

import jsonschema
import openai
import pytest
from pydantic import BaseModel, Field

from .conftest import MODEL_NAME, Service

USER = [{"role": "user", "content": "Give me a person as JSON."}]
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The current weather in a city.",
        "strict": True,
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"enum": ["Paris", "Oslo", "Lagos"]},
                "unit": {"enum": ["C", "F"]},
            },
            "required": ["city", "unit"],
            "additionalProperties": False,
        },
    },
}


class Review(BaseModel):
    """Bounded fields only: the tiny model must finish within the token limit."""

    rating: int = Field(ge=1, le=5)
    verdict: Literal["good", "bad", "mixed"]
    recommended: bool


def test_a_plain_chat_completion_has_openai_shape(service: Service) -> None:
    completion = service.sdk().chat.completions.create(
        model="default", messages=USER, max_completion_tokens=8, seed=1
    )
    assert completion.object == "chat.completion" and completion.model == MODEL_NAME
    assert completion.id.startswith("chatcmpl-")
    (choice,) = completion.choices
    assert choice.message.role == "assistant" and isinstance(choice.message.content, str)
    assert choice.finish_reason in ("stop", "length")
    assert 0 < completion.usage.completion_tokens <= 8
    # The template's turn markers were in the prompt: more than the user's words.
    assert completion.usage.prompt_tokens > 8


def test_streamed_chunks_add_up_to_the_collected_message(service: Service) -> None:
    sdk = service.sdk()
    fields = {"messages": USER, "max_completion_tokens": 12, "seed": 5, "temperature": 0.8}
    collected = sdk.chat.completions.create(model="default", **fields)
    chunks = list(
        sdk.chat.completions.create(
            model="default", **fields, stream=True, stream_options={"include_usage": True}
        )
    )
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == collected.choices[0].message.content
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == collected.choices[0].finish_reason
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    assert chunks[-1].choices == [] and chunks[-1].usage == collected.usage


def test_parse_returns_a_validated_pydantic_instance(service: Service) -> None:
    completion = service.sdk().chat.completions.parse(
        model="default",
        messages=[{"role": "user", "content": "Review the new phone."}],
        response_format=Review,
        max_completion_tokens=64,
        seed=3,
    )
    message = completion.choices[0].message
    assert isinstance(message.parsed, Review)
    assert Review.model_validate_json(message.content) == message.parsed


def test_json_schema_response_format_is_enforced_and_reported(service: Service) -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 99}},
        "required": ["n"],
        "additionalProperties": False,
    }
    raw = service.sdk().chat.completions.with_raw_response.create(
        model="default",
        messages=USER,
        max_completion_tokens=16,
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "n", "schema": schema, "strict": True},
        },
    )
    jsonschema.validate(json.loads(raw.parse().choices[0].message.content), schema)
    assert "enforced=" in raw.headers["x-constraint-report"]


@pytest.mark.parametrize(
    "tool_choice", ["required", {"type": "function", "function": {"name": "get_weather"}}]
)
def test_forced_tool_calls_come_back_as_tool_calls(service: Service, tool_choice) -> None:
    completion = service.sdk().chat.completions.create(
        model="default",
        messages=[{"role": "user", "content": "What is the weather in Oslo?"}],
        tools=[WEATHER_TOOL],
        tool_choice=tool_choice,
        parallel_tool_calls=False,
        max_completion_tokens=64,
        seed=2,
    )
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    assert len(choice.message.tool_calls) == 1  # parallel_tool_calls=False: one call
    for call in choice.message.tool_calls:
        assert call.id.startswith("call_") and call.type == "function"
        assert call.function.name == "get_weather"
        arguments = json.loads(call.function.arguments)
        jsonschema.validate(arguments, WEATHER_TOOL["function"]["parameters"])


def test_streamed_tool_calls_arrive_as_tool_call_deltas(service: Service) -> None:
    chunks = list(
        service.sdk().chat.completions.create(
            model="default",
            messages=[{"role": "user", "content": "What is the weather in Paris?"}],
            tools=[WEATHER_TOOL],
            tool_choice="required",
            parallel_tool_calls=False,
            max_completion_tokens=64,
            seed=4,
            stream=True,
        )
    )
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    assert not "".join(d.content or "" for d in deltas)  # calls are never content
    calls = [call for d in deltas for call in d.tool_calls or []]
    assert calls and all(json.loads(call.function.arguments) for call in calls)
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_a_tool_result_conversation_renders_and_answers(service: Service) -> None:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Oslo", "unit": "C"}'},
    }
    completion = service.sdk().chat.completions.create(
        model="default",
        messages=[
            {"role": "user", "content": "What is the weather in Oslo?"},
            {"role": "assistant", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": "3 degrees, windy"},
        ],
        tools=[WEATHER_TOOL],
        tool_choice="none",
        max_completion_tokens=12,
    )
    assert completion.choices[0].message.content is not None


def test_n_and_seed_are_reproducible(service: Service) -> None:
    sdk = service.sdk()
    fields = {"messages": USER, "max_completion_tokens": 10, "n": 3, "seed": 11}
    first = sdk.chat.completions.create(model="default", **fields)
    second = sdk.chat.completions.create(model="default", **fields)
    texts = [choice.message.content for choice in first.choices]
    assert [choice.index for choice in first.choices] == [0, 1, 2]
    assert texts == [choice.message.content for choice in second.choices]
    assert len(set(texts)) > 1  # the choices differ from each other


def test_logprobs_come_in_the_chat_shape(service: Service) -> None:
    completion = service.sdk().chat.completions.create(
        model="default",
        messages=USER,
        max_completion_tokens=5,
        logprobs=True,
        top_logprobs=2,
        seed=1,
    )
    content = completion.choices[0].logprobs.content
    assert 0 < len(content) <= 5
    for entry in content:
        assert entry.logprob <= 0 and len(entry.top_logprobs) == 2 and entry.bytes
    joined = b"".join(bytes(entry.bytes) for entry in content)
    assert joined.decode("utf-8", errors="replace") == completion.choices[0].message.content


def test_the_grammar_extension_constrains_chat_content(service: Service) -> None:
    completion = service.sdk().chat.completions.create(
        model="default",
        messages=USER,
        max_completion_tokens=20,
        extra_body={"grammar": {"type": "regex", "value": "(yes|no)"}},
    )
    assert completion.choices[0].message.content in ("yes", "no")


def test_vllm_structured_outputs_constrain_chat_content(service: Service) -> None:
    completion = service.sdk().chat.completions.create(
        model="default",
        messages=USER,
        max_completion_tokens=20,
        extra_body={"structured_outputs": {"choice": ["yes", "no"]}},
    )
    assert completion.choices[0].message.content in ("yes", "no")


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"max_tokens": 4, "max_completion_tokens": 5}, "max_tokens"),
        ({"top_logprobs": 2}, "top_logprobs"),
        ({"temperature": 3.0}, "temperature"),
        ({"extra_body": {"functions": []}}, "functions"),
        ({"tool_choice": "required"}, "tool_choice"),
        (
            {"response_format": {"type": "json_schema", "json_schema": {"schema": {"type": 5}}}},
            "response_format",
        ),
        ({"logit_bias": {"999999": 5}}, "logit_bias"),
    ],
)
def test_errors_have_openai_shape_naming_the_parameter(
    service: Service, fields: dict, param: str
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        service.sdk().chat.completions.create(model="default", messages=USER, **fields)
    assert caught.value.status_code == 400
    assert caught.value.body["param"].startswith(param), caught.value.body
    assert caught.value.body["type"] == "invalid_request_error"


def test_a_bad_message_is_a_400_naming_messages(service: Service) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        service.sdk().chat.completions.create(
            model="default", messages=[{"role": "robot", "content": "Hi"}]
        )
    assert caught.value.body["param"].startswith("messages")
