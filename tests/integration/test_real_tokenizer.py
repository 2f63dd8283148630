"""The constrained paths with a real vocabulary: Llama 3's 128k-token
tokenizer and Meta's chat template (bench/llama3_model.py), served by a real
stack of its own.

Real merges break what a 4k BPE hides: tokens spanning quotes, digits and
punctuation (jump-forward must still spell the forced text exactly), byte
tokens of multi-byte characters (streamed text must never split one), many
end-of-turn tokens. The weights are random: the grammar decides what is
valid, and every output is judged.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import jsonschema
import pytest

from bench.llama3_model import ensure_llama3_model

from .conftest import Service, served

SCHEMA = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "maxLength": 12},
        "rating": {"type": "integer", "minimum": 1, "maximum": 5},
        "tags": {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "maxItems": 3},
    },
    "required": ["title", "rating", "tags"],
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def llama3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    model_dir = ensure_llama3_model()
    with served(model_dir, tmp_path_factory.mktemp("llama3-logs")) as stack:
        yield stack


def _complete(stack: Service, **body) -> dict:
    with stack.client() as client:
        response = client.post("/v1/completions", json={"model": "default", **body})
    assert response.status_code == 200, response.text
    return response.json()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_json_schema_outputs_validate_with_the_128k_vocabulary(llama3: Service, seed: int) -> None:
    completion = _complete(
        llama3,
        prompt="A review:",
        max_tokens=80,
        seed=seed,
        response_format={"type": "json_schema", "json_schema": {"name": "r", "schema": SCHEMA}},
    )
    choice = completion["choices"][0]
    assert choice["finish_reason"] == "stop", choice
    jsonschema.validate(json.loads(choice["text"]), SCHEMA)
    assert len(json.loads(choice["text"])["title"]) <= 12


def test_jump_forward_spells_forced_text_with_real_merges(llama3: Service) -> None:
    """Keys and punctuation are forced; Llama 3 has tokens such as '":' and
    ' {"' that must not be split differently from the text they spell."""
    pattern = r'\{"id": [0-9]{3}, "ok": (true|false), "note": "[a-z]{2,6}"\}'
    with llama3.client() as client:
        response = client.post(
            "/v1/completion/regex",
            json={
                "prompt": "Record:",
                "pattern": pattern,
                "max_new_tokens": 60,
                "temperature": 0.0,
            },
        )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["stop_reason"] == "pattern_match" and body["matched"], body
    assert re.fullmatch(pattern, body["completion"]), body


def test_streamed_multibyte_text_never_splits_a_character(llama3: Service) -> None:
    pattern = "(中文|日本語|한국어|😀|é){4,8}"
    body = {
        "prompt": "Say it:",
        "max_tokens": 40,
        "seed": 7,
        "grammar": {"type": "regex", "value": pattern},
    }
    collected = _complete(llama3, **body)["choices"][0]["text"]
    with (
        llama3.client() as client,
        client.stream(
            "POST", "/v1/completions", json={"model": "default", **body, "stream": True}
        ) as response,
    ):
        assert response.status_code == 200
        pieces = [
            event["choices"][0]["text"]
            for line in response.iter_lines()
            if line.startswith("data: {")
            for event in [json.loads(line[6:])]
            if event["choices"]
        ]
    assert "".join(pieces) == collected
    assert all("\ufffd" not in piece for piece in pieces)
    assert re.fullmatch(pattern, collected), collected


def test_a_stop_string_ends_a_constrained_output_only_once_it_matches(llama3: Service) -> None:
    pattern = r"[a-z]{3}\.[a-z]{3}\."
    choice = _complete(
        llama3,
        prompt="Two words:",
        max_tokens=40,
        seed=5,
        stop=["."],
        grammar={"type": "regex", "value": pattern},
    )["choices"][0]
    assert re.fullmatch(pattern, choice["text"]), choice
    assert choice["finish_reason"] == "stop"


def test_chat_with_metas_template_and_a_tool_call(llama3: Service) -> None:
    """Meta's Llama 3.1 template renders the conversation and the tools; the
    grammar holds the reply to one strict call."""
    tool = {
        "type": "function",
        "function": {
            "name": "get_weather",
            "strict": True,
            "parameters": {
                "type": "object",
                "properties": {"city": {"enum": ["Paris", "Oslo"]}},
                "required": ["city"],
                "additionalProperties": False,
            },
        },
    }
    completion = llama3.sdk().chat.completions.create(
        model="default",
        messages=[
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Weather in Oslo?"},
        ],
        tools=[tool],
        tool_choice="required",
        parallel_tool_calls=False,
        max_completion_tokens=40,
        seed=1,
    )
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls", choice
    (call,) = choice.message.tool_calls
    assert json.loads(call.function.arguments)["city"] in ("Paris", "Oslo")
    # The template's header tokens were in the prompt.
    assert completion.usage.prompt_tokens > 20
