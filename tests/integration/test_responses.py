"""``/v1/responses`` with the official ``openai`` SDK against the live stack: the
chat path under OpenAI's Responses names, streamed as its events."""

from __future__ import annotations

import json

import jsonschema
import openai
import pytest

from .conftest import MODEL_NAME, Service
from .test_chat import WEATHER_TOOL, Review

FLAT_WEATHER_TOOL = {"type": "function", **WEATHER_TOOL["function"]}
PERSON = "Give me a person as JSON."


def test_a_plain_response_has_openai_shape(service: Service) -> None:
    response = service.sdk().responses.create(
        model="default", input=PERSON, max_output_tokens=8, temperature=0
    )
    assert response.object == "response" and response.model == MODEL_NAME
    assert response.id.startswith("resp_") and response.status in ("completed", "incomplete")
    (message,) = response.output
    assert message.type == "message" and message.role == "assistant"
    assert response.output_text == message.content[0].text and response.output_text
    assert 0 < response.usage.output_tokens <= 8
    usage = response.usage
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens
    assert usage.input_tokens > 6  # the template's turn markers were in the prompt


def test_a_conversation_goes_on_with_the_output_items_sent_back(service: Service) -> None:
    """Stateless: the client sends the earlier turns, a response's output as it came."""
    sdk = service.sdk()
    first = sdk.responses.create(model="default", input=PERSON, max_output_tokens=6, temperature=0)
    turns = [{"role": "user", "content": PERSON}, *first.output]
    turns.append({"role": "user", "content": "Another one."})
    second = sdk.responses.create(
        model="default", input=turns, instructions="Answer in JSON.", max_output_tokens=6
    )
    assert second.output_text and second.instructions == "Answer in JSON."
    assert second.usage.input_tokens > first.usage.input_tokens + first.usage.output_tokens


def test_a_cut_response_is_incomplete_for_max_output_tokens(service: Service) -> None:
    response = service.sdk().responses.create(
        model="default", input=PERSON, max_output_tokens=2, temperature=0
    )
    assert response.status == "incomplete"
    assert response.incomplete_details.reason == "max_output_tokens"
    assert response.output[0].status == "incomplete" and response.usage.output_tokens == 2


def test_streamed_events_add_up_to_the_collected_response(service: Service) -> None:
    sdk = service.sdk()
    fields = {"model": "default", "input": PERSON, "max_output_tokens": 12, "temperature": 0}
    collected = sdk.responses.create(**fields)
    events = list(sdk.responses.create(**fields, stream=True))
    kinds = [event.type for event in events]
    assert kinds[:4] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ]
    assert kinds[-4:] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        f"response.{collected.status}",
    ]
    assert [event.sequence_number for event in events] == list(range(len(events)))
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert deltas == collected.output_text == events[-1].response.output_text
    assert events[-1].response.usage == collected.usage


def test_logprobs_come_with_the_text_when_included(service: Service) -> None:
    """Each output token once, with its alternatives, in the text's order; streamed,
    each delta carries its own tokens and the done event all of them."""
    sdk = service.sdk()
    fields = {
        "model": "default",
        "input": PERSON,
        "max_output_tokens": 10,
        "temperature": 0,
        "include": ["message.output_text.logprobs"],
        "top_logprobs": 2,
    }
    response = sdk.responses.create(**fields)
    part = response.output[0].content[0]
    assert len(part.logprobs) == response.usage.output_tokens
    assert "".join(entry.token for entry in part.logprobs) == part.text
    for entry in part.logprobs:
        assert entry.logprob <= 0 and len(entry.top_logprobs) == 2
        assert bytes(entry.bytes).decode() == entry.token
        assert entry.top_logprobs[0].logprob >= entry.top_logprobs[1].logprob
    events = list(sdk.responses.create(**fields, stream=True))
    deltas = [e for e in events if e.type == "response.output_text.delta"]
    assert all(e.logprobs for e in deltas)
    assert [t.token for e in deltas for t in e.logprobs] == [t.token for t in part.logprobs]
    (done,) = [e for e in events if e.type == "response.output_text.done"]
    assert [t.token for t in done.logprobs] == [t.token for t in part.logprobs]
    plain = sdk.responses.create(**{**fields, "include": None, "top_logprobs": None})
    assert plain.output[0].content[0].logprobs == []


def test_parse_returns_a_validated_pydantic_instance(service: Service) -> None:
    response = service.sdk().responses.parse(
        model="default",
        input="Review the new phone.",
        text_format=Review,
        max_output_tokens=64,
        temperature=0,
    )
    assert isinstance(response.output_parsed, Review)
    assert Review.model_validate_json(response.output_text) == response.output_parsed


def test_a_json_schema_text_format_is_enforced_and_reported(service: Service) -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 99}},
        "required": ["n"],
        "additionalProperties": False,
    }
    raw = service.sdk().responses.with_raw_response.create(
        model="default",
        input=PERSON,
        max_output_tokens=16,
        text={"format": {"type": "json_schema", "name": "n", "schema": schema, "strict": True}},
    )
    jsonschema.validate(json.loads(raw.parse().output_text), schema)
    assert "enforced=" in raw.headers["x-constraint-report"]


def test_the_grammar_extension_constrains_a_response(service: Service) -> None:
    response = service.sdk().responses.create(
        model="default",
        input="Is the sky blue?",
        max_output_tokens=8,
        extra_body={"grammar": {"type": "regex", "value": "(yes|no)"}},
    )
    assert response.output_text in ("yes", "no") and response.status == "completed"


def test_function_calls_come_back_as_output_items_and_go_back_as_input(
    service: Service,
) -> None:
    sdk = service.sdk()
    question = {"role": "user", "content": "What is the weather in Oslo?"}
    response = sdk.responses.create(
        model="default",
        input=[question],
        tools=[FLAT_WEATHER_TOOL],
        tool_choice="required",
        parallel_tool_calls=False,
        max_output_tokens=64,
        temperature=0,
    )
    (call,) = response.output
    assert call.type == "function_call" and call.name == "get_weather"
    assert call.call_id.startswith("call_") and call.id.startswith("fc_")
    jsonschema.validate(json.loads(call.arguments), FLAT_WEATHER_TOOL["parameters"])
    answer = {"type": "function_call_output", "call_id": call.call_id, "output": "12 C, rain"}
    follow_up = sdk.responses.create(
        model="default",
        input=[question, *response.output, answer],  # the output items as the SDK sends them
        tools=[FLAT_WEATHER_TOOL],
        tool_choice="none",
        max_output_tokens=8,
        temperature=0,
    )
    assert follow_up.output[0].type == "message" and follow_up.output_text


def test_streamed_function_calls_arrive_as_argument_events(service: Service) -> None:
    events = list(
        service.sdk().responses.create(
            model="default",
            input="What is the weather in Paris?",
            tools=[FLAT_WEATHER_TOOL],
            tool_choice={"type": "function", "name": "get_weather"},
            parallel_tool_calls=False,
            max_output_tokens=64,
            temperature=0,
            stream=True,
        )
    )
    done = [e for e in events if e.type == "response.function_call_arguments.done"]
    assert done
    for event in done:
        jsonschema.validate(json.loads(event.arguments), FLAT_WEATHER_TOOL["parameters"])
    final = events[-1]
    assert final.type == "response.completed"
    assert [item.arguments for item in final.response.output] == [e.arguments for e in done]


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"store": True}, "store"),
        ({"previous_response_id": "resp_1"}, "previous_response_id"),
        ({"tools": [{**FLAT_WEATHER_TOOL, "name": "bad name"}]}, "tools[0].name"),
        (
            {"text": {"format": {"type": "json_schema", "name": "x", "schema": {"type": "nope"}}}},
            "text.format",
        ),
        ({"max_output_tokens": 0}, "max_output_tokens"),
        ({"reasoning": {"effort": "low"}}, "reasoning"),
        ({"include": ["reasoning.encrypted_content"]}, "include[0]"),
    ],
)
def test_bad_fields_are_refused_naming_the_field(service: Service, fields: dict, param) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        service.sdk().responses.create(model="default", input=PERSON, **fields)
    error = caught.value.body
    assert error["type"] == "invalid_request_error", error
    assert (error["param"] or "").startswith(param), error


def test_a_refusal_before_the_first_event_is_an_http_error(service: Service) -> None:
    bad_schema = {"type": "object", "properties": {"a": {"pattern": "(?<=x"}}}
    with service.client() as client:
        reply = client.post(
            "/v1/responses",
            json={
                "input": PERSON,
                "stream": True,
                "text": {"format": {"type": "json_schema", "name": "a", "schema": bad_schema}},
            },
        )
    assert reply.status_code == 400 and reply.json()["error"]["param"].startswith("text.format")
