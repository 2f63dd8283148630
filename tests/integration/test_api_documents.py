"""The five API documents, to the letter, against the live stack (issue 14).

Every example request of the documents is sent as it is written (the typed
example with its raw newlines escaped, the mistral example to a server
configured with that alias) and the response is checked against the
documented shape: field names and types. Then one test per point the audit
found: tool_choice without tools, an optional model and aliases, why a
constrained generation stopped, strict types, ``param`` on every 400, bodies
that are not JSON, and ``logprobs: null``.
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime

import httpx
import pytest

from grammar_compiler.regex import could_still_match, matches

from .conftest import MODEL_ALIAS, MODEL_NAME, Service

# regex-completion.txt, its example request.
REGEX_EXAMPLE = {
    "prompt": "This is a sample prompt",
    "pattern": ".*prompt$",
    "max_new_tokens": 10,
    "stop_after_match": False,
    "top_k": 50,
    "top_p": 0.9,
    "temperature": 0.8,
    "repetition_penalty": 1.2,
}
# cfg-completion.txt, its example request.
CFG_EXAMPLE = {
    "prompt": "Start your text here",
    "grammar": "<start> ::= <noun> <verb> | <verb> <noun>",
    "max_new_tokens": 10,
    "stop_after_match": False,
    "top_k": 30,
    "top_p": 0.9,
    "temperature": 1.2,
    "repetition_penalty": 0.8,
}
# typed-completion.txt, its example request as the page shows it: newlines inside a string.
TYPED_EXAMPLE_AS_WRITTEN = """{
"prompt": "Write a sentence",
"max_tokens": 20,
"temperature": 0.8,
"top_p": 0.9,
"stop": ["."],
"presence_penalty": 0.6,
"frequency_penalty": 0.5,
"schema": "export type BasicSentence {
text: string;
}",
"type_name": "BasicSentence"
}"""
# openai-completions-with-grammar.txt, the curl example's --data.
OPENAI_EXAMPLE = """{ "best_of": 1, "dry_allowed_length": null, "dry_base": null, "dry_multiplier": null, "dry_sequence_breakers": null, "echo": false, "frequency_penalty": null, "grammar": { "type": "regex", "value": "example" }, "logit_bias": null, "logprobs": null, "max_tokens": 16, "min_p": null, "model": "mistral", "n": 1, "presence_penalty": null, "prompt": "Say this is a test.", "repetition_penalty": null, "stop": "example", "stream": true, "suffix": null, "temperature": 0.7, "tool_choice": "none", "tools": null, "top_k": null, "top_p": null, "truncate_sequence": null, "user": "example" }"""  # noqa: E501
REGEX, CFG, TYPED = "/v1/completion/regex", "/v1/completion/cfg", "/v1/completion/typed"
A_PLUS = {"prompt": "x", "pattern": "a+"}
GRAMMAR_A = {"prompt": "x", "grammar": 'root ::= "a"+'}
TYPE_S = {"prompt": "x", "schema": "export type S { a: string; }", "type_name": "S"}
ERROR_MODE = {"context_length_exceeded_behavior": "error"}
# completions-extended.txt shows no example body: its required fields, then
# every field it lists at the default it documents.
EXTENDED_REQUIRED = {"model": MODEL_NAME, "prompt": "Say this is a test."}
EXTENDED_DEFAULTS = {
    **EXTENDED_REQUIRED,
    "context_length_exceeded_behavior": "truncate",
    "echo": False,
    "frequency_penalty": 0,
    "ignore_eos": False,
    "logprobs": None,
    "max_tokens": 16,
    "mirostat_lr": 0.1,
    "mirostat_target": 1.5,
    "n": 1,
    "presence_penalty": 0,
    "repetition_penalty": 1,
    "response_format": None,
    "stream": False,
    "temperature": 1,
    "top_p": 1,
    "user": None,
}


def _escape_newlines_in_strings(text: str) -> str:
    """What a user does to the typed example before sending it: ``\\n`` for
    each raw newline inside a JSON string."""
    out, in_string, escaped = [], False, False
    for char in text:
        if in_string and char == "\n":
            out.append("\\n")
            continue
        out.append(char)
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = in_string
        elif char == '"':
            in_string = not in_string
    return "".join(out)


def _post(service: Service, path: str, body: dict | str) -> httpx.Response:
    with service.client() as client:
        if isinstance(body, str):
            return client.post(path, content=body, headers={"Content-Type": "application/json"})
        return client.post(path, json=body)


def _events(response: httpx.Response) -> list[dict | str]:
    """A server-sent event stream's payloads; ``[DONE]`` stays a string."""
    payloads = [line.removeprefix("data: ") for line in response.text.splitlines() if line.strip()]
    return [payload if payload == "[DONE]" else json.loads(payload) for payload in payloads]


def _assert_pattern_shape(result: dict) -> None:
    """regex-completion.txt / cfg-completion.txt's response, plus the added ``matched``."""
    assert set(result) == {"completion", "tokens_generated", "stop_reason", "matched"}
    assert isinstance(result["completion"], str)
    assert isinstance(result["tokens_generated"], int) and result["tokens_generated"] >= 1
    assert result["stop_reason"] in ("pattern_match", "token_limit")
    assert isinstance(result["matched"], bool)
    if result["stop_reason"] == "pattern_match":
        assert result["matched"]


def _assert_completion_shape(result: dict, *, model: str = MODEL_NAME) -> None:
    """completions-extended.txt's response fields and OpenAI's choice shape."""
    assert {"choices", "created", "id", "model", "object", "usage"} == set(result)
    assert isinstance(result["id"], str) and result["object"] == "text_completion"
    assert isinstance(result["created"], int) and result["model"] == model
    for choice in result["choices"]:
        assert {"index", "text", "logprobs", "finish_reason"} <= set(choice)
        assert isinstance(choice["index"], int) and isinstance(choice["text"], str)
        assert choice["finish_reason"] in ("stop", "length", "tool_calls")
    usage = result["usage"]
    assert set(usage) == {"prompt_tokens", "completion_tokens", "total_tokens"}
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


# -- the documents' examples, verbatim ---------------------------------------------


def test_regex_document_example(service: Service) -> None:
    response = _post(service, "/v1/completion/regex", REGEX_EXAMPLE)
    assert response.status_code == 200, response.text
    result = response.json()
    _assert_pattern_shape(result)
    assert result["matched"] == matches(".*prompt$", result["completion"])
    assert could_still_match(".*prompt$", result["completion"])
    assert result["tokens_generated"] <= 10


def test_cfg_document_example(service: Service) -> None:
    response = _post(service, "/v1/completion/cfg", CFG_EXAMPLE)
    assert response.status_code == 200, response.text
    result = response.json()
    _assert_pattern_shape(result)
    full = {"noun verb", "verb noun"}
    assert result["matched"] == (result["completion"] in full)
    assert any(option.startswith(result["completion"]) for option in full)


def test_typed_document_example_with_its_newlines_escaped(service: Service) -> None:
    body = _escape_newlines_in_strings(TYPED_EXAMPLE_AS_WRITTEN)
    assert json.loads(body)["schema"] == "export type BasicSentence {\ntext: string;\n}"
    response = _post(service, "/v1/completion/typed", body)
    assert response.status_code == 200, response.text
    result = response.json()
    assert set(result) == {"id", "object", "created", "choices", "usage"}
    uuid.UUID(result["id"])
    assert isinstance(result["object"], str)
    datetime.fromisoformat(result["created"])
    (choice,) = result["choices"]
    assert set(choice) == {"text", "created", "model", "finish_reason", "usage"}
    assert isinstance(choice["text"], str) and isinstance(choice["created"], int)
    assert choice["model"] == MODEL_NAME and isinstance(choice["finish_reason"], str)
    for usage in (choice["usage"], result["usage"]):
        assert set(usage) == {
            "prompt_tokens",
            "prediction_time_ms",
            "completion_tokens",
            "total_tokens",
        }
        assert all(isinstance(value, int) for value in usage.values())
    assert choice["usage"]["completion_tokens"] <= 20
    if choice["finish_reason"] == "stop":
        assert isinstance(json.loads(choice["text"])["text"], str)


def test_openai_grammar_document_example_to_a_server_with_the_mistral_alias(
    service: Service,
) -> None:
    response = _post(service, "/v1/completions", OPENAI_EXAMPLE)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    events = _events(response)
    assert events[-1] == "[DONE]"
    *pieces, last = events[:-1]
    text = ""
    for event in pieces:
        assert {"id", "object", "created", "model", "choices"} == set(event)
        assert event["model"] == MODEL_NAME and event["object"] == "text_completion"
        (choice,) = event["choices"]
        assert set(choice) == {"index", "text", "logprobs", "finish_reason"}
        assert choice["logprobs"] is None
        text += choice["text"]
    assert last["choices"] == [] and set(last["usage"]) == {
        "prompt_tokens",
        "completion_tokens",
        "total_tokens",
    }
    assert pieces[-1]["choices"][0]["finish_reason"] in ("stop", "length")
    assert "example".startswith(text)  # the grammar is the regex "example"


@pytest.mark.parametrize(
    "body", [EXTENDED_REQUIRED, EXTENDED_DEFAULTS], ids=["required", "defaults"]
)
def test_extended_document_fields_on_its_path(service: Service, body: dict) -> None:
    response = _post(service, "/completions", body)
    assert response.status_code == 200, response.text
    result = response.json()
    _assert_completion_shape(result)
    assert len(result["choices"]) == 1 and result["choices"][0]["logprobs"] is None
    assert result["usage"]["completion_tokens"] <= 16


# -- 1: tool_choice without tools -------------------------------------------------------


@pytest.mark.parametrize("tool_choice", ["auto", "none"])
@pytest.mark.parametrize(
    "tools", [{}, {"tools": None}, {"tools": []}], ids=["absent", "null", "empty"]
)
def test_auto_or_none_tool_choice_without_tools_is_no_constraint(
    service: Service, tools: dict, tool_choice: str
) -> None:
    body = {"prompt": "Say this is a test.", "max_tokens": 3, "tool_choice": tool_choice, **tools}
    response = _post(service, "/v1/completions", body)
    assert response.status_code == 200, response.text
    _assert_completion_shape(response.json())


@pytest.mark.parametrize(
    "tool_choice", ["required", {"type": "function", "function": {"name": "get_weather"}}]
)
def test_a_tool_choice_that_needs_a_tool_without_tools_is_400(
    service: Service, tool_choice: object
) -> None:
    body = {"prompt": "x", "tool_choice": tool_choice, "tools": []}
    response = _post(service, "/v1/completions", body)
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "tool_choice"


# -- 2: model optional, aliases --------------------------------------------------------------


@pytest.mark.parametrize("path", ["/v1/completions", "/completions"])
@pytest.mark.parametrize(
    "model", [{}, {"model": None}, {"model": MODEL_ALIAS}, {"model": "default"}]
)
def test_without_model_or_by_an_alias_the_one_model_answers(
    service: Service, path: str, model: dict
) -> None:
    response = _post(service, path, {"prompt": "Say this is a test.", "max_tokens": 3, **model})
    assert response.status_code == 200, response.text
    _assert_completion_shape(response.json(), model=MODEL_NAME)


def test_models_lists_the_alias_and_an_unknown_model_is_still_404(service: Service) -> None:
    with service.client() as client:
        listed = client.get("/v1/models").json()
    assert [model["id"] for model in listed["data"]] == [MODEL_NAME, MODEL_ALIAS]
    response = _post(service, "/v1/completions", {"model": "gpt-4", "prompt": "x"})
    assert response.status_code == 404
    error = response.json()["error"]
    assert (error["param"], error["code"]) == ("model", "model_not_found")


# -- 3: stop_reason says why generation stopped; matched says whether it matches -------


def test_a_full_match_cut_by_the_token_limit_is_token_limit_and_matched(service: Service) -> None:
    body = {
        "prompt": "Start",
        "pattern": "a+",
        "max_new_tokens": 6,
        "temperature": 0,
        "stop_after_match": False,
    }
    result = _post(service, "/v1/completion/regex", body).json()
    _assert_pattern_shape(result)
    assert result["matched"] and matches("a+", result["completion"])
    if result["tokens_generated"] == 6:  # the model did not end it: the limit did
        assert result["stop_reason"] == "token_limit"
    else:
        assert result["stop_reason"] == "pattern_match"


@pytest.mark.parametrize(
    ("path", "constraint"),
    [(REGEX, {"pattern": "abc"}), (CFG, {"grammar": 'root ::= "abc"'})],
)
def test_a_match_nothing_can_extend_is_pattern_match_even_at_the_limit(
    service: Service, path: str, constraint: dict
) -> None:
    body = {"prompt": "Start", "temperature": 0, "stop_after_match": False, **constraint}
    ended_by_model = _post(service, path, {**body, "max_new_tokens": 10}).json()
    assert ended_by_model["stop_reason"] == "pattern_match" and ended_by_model["matched"]
    assert ended_by_model["completion"] == "abc"
    # its last token was the end-of-sequence token the grammar forced; stop just before it
    needed = ended_by_model["tokens_generated"] - 1
    at_limit = _post(service, path, {**body, "max_new_tokens": needed}).json()
    assert at_limit == {
        "completion": "abc",
        "tokens_generated": needed,
        "stop_reason": "pattern_match",
        "matched": True,
    }


@pytest.mark.parametrize(
    ("path", "constraint"),
    [(REGEX, {"pattern": "[a-z]{50}"}), (CFG, {"grammar": "root ::= [a-z]{50}"})],
)
def test_a_prefix_cut_by_the_limit_is_token_limit_not_matched(
    service: Service, path: str, constraint: dict
) -> None:
    result = _post(service, path, {"prompt": "Spell: ", "max_new_tokens": 3, **constraint}).json()
    assert (result["stop_reason"], result["matched"], result["tokens_generated"]) == (
        "token_limit",
        False,
        3,
    )


def test_typed_finish_reason_is_length_only_when_the_limit_ended_it(service: Service) -> None:
    body = {
        "prompt": "Write",
        "schema": "export type S { text: string; }",
        "type_name": "S",
        "temperature": 0,
    }
    cut = _post(service, "/v1/completion/typed", {**body, "max_tokens": 3}).json()
    assert cut["choices"][0]["finish_reason"] == "length"
    assert cut["usage"]["completion_tokens"] == 3
    whole = _post(service, "/v1/completion/typed", {**body, "max_tokens": 200}).json()
    (choice,) = whole["choices"]
    if choice["finish_reason"] == "stop":
        assert isinstance(json.loads(choice["text"])["text"], str)
    else:
        assert choice["usage"]["completion_tokens"] == 200


# -- 4: strict types --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "body", "status", "field"),
    [
        (REGEX, {**A_PLUS, "max_new_tokens": "5"}, 422, "max_new_tokens"),
        (REGEX, {**A_PLUS, "stop_after_match": "yes"}, 422, "stop_after_match"),
        (CFG, {**GRAMMAR_A, "max_new_tokens": "5"}, 422, "max_new_tokens"),
        (TYPED, {**TYPE_S, "max_tokens": "3"}, 422, "max_tokens"),
        ("/v1/completions", {"prompt": "x", "max_tokens": "3"}, 400, "max_tokens"),
        ("/v1/completions", {"prompt": "x", "echo": "yes"}, 400, "echo"),
        ("/completions", {"model": MODEL_NAME, "prompt": "x", "n": "1"}, 400, "n"),
    ],
)  # fmt: skip
def test_a_string_for_a_number_or_boolean_is_refused_naming_the_field(
    service: Service, path: str, body: dict, status: int, field: str
) -> None:
    response = _post(service, path, body)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    if isinstance(error, dict):
        assert error["param"] == field
    else:
        assert error.startswith(f"{field}: ")


@pytest.mark.parametrize(
    ("path", "body"),
    [
        (REGEX, {**A_PLUS, "temperature": 1, "top_p": 1, "repetition_penalty": 1}),
        (CFG, {**GRAMMAR_A, "temperature": 1}),
        (TYPED, {**TYPE_S, "max_tokens": 3, "temperature": 1, "top_p": 1, "presence_penalty": 0}),
        ("/v1/completions", {"prompt": "x", "max_tokens": 3, "temperature": 1, "top_p": 1,
                             "frequency_penalty": 0, "echo": None, "stream": None}),
    ],
)  # fmt: skip
def test_integers_for_floats_and_documented_nulls_are_accepted(
    service: Service, path: str, body: dict
) -> None:
    response = _post(service, path, body)
    assert response.status_code == 200, response.text


# -- 5: param on every 400 of the OpenAI routes -----------------------------------------------


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"prompt": "word " * 3000, "max_tokens": 3}, "prompt"),
        ({"prompt": "word " * 300, "max_tokens": 2000, **ERROR_MODE}, "max_tokens"),
        ({"prompt": "word " * 3000, "max_tokens": 3, **ERROR_MODE}, "prompt"),
        ({"prompt": "", "max_tokens": 3}, "prompt"),
        ({"prompt": [5, 999999], "max_tokens": 3}, "prompt"),
        ({"prompt": [[5], [6, 999999]], "max_tokens": 3}, "prompt"),
        ({"prompt": "x", "max_tokens": 3, "logit_bias": {"99999": 1}}, "logit_bias"),
        ({"prompt": "x", "stream": True, "logit_bias": {"99999": 1}}, "logit_bias"),
        ({"prompt": "", "max_tokens": 3, "stream": True}, "prompt"),
    ],
)  # fmt: skip
def test_errors_the_decoder_finds_name_their_param(
    service: Service, body: dict, param: str
) -> None:
    response = _post(service, "/v1/completions", body)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["param"] == param and error["type"] == "invalid_request_error", error


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/completions", '{"prompt": "x\\ud800"}'),
        (REGEX, '{"prompt": "x\\ud800", "pattern": "a+"}'),
    ],
)
def test_a_prompt_with_a_lone_surrogate_is_400_not_500(
    service: Service, path: str, body: str
) -> None:
    response = _post(service, path, body)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    if isinstance(error, dict):
        assert error["param"] == "prompt"
    else:
        assert error.startswith("prompt: holds a lone UTF-16 surrogate")


def test_an_empty_prompt_on_a_model_without_bos_is_400_on_the_typed_route_too(
    service: Service,
) -> None:
    """Left as it is, and documented: there is no token to start from."""
    response = _post(service, "/v1/completion/regex", {"prompt": "", "pattern": "a+"})
    assert response.status_code == 400
    assert "the prompt is empty" in response.json()["error"]


# -- 6: bodies that are not JSON ---------------------------------------------------------------


@pytest.mark.parametrize("path", ["/v1/completion/typed", "/v1/completions"])
def test_the_typed_example_pasted_as_written_says_what_and_where(
    service: Service, path: str
) -> None:
    response = _post(service, path, TYPED_EXAMPLE_AS_WRITTEN)
    assert response.status_code == 400
    expected = (
        "the body is not valid JSON: invalid control character in a string at line 9, column 39"
    )
    body = response.json()
    if path == "/v1/completions":
        assert body["error"]["message"].startswith(expected)
        assert body["error"]["code"] == "invalid_json"
    else:
        assert body["error"].startswith(expected) and body["code"] == 400


# -- 7: logprobs null when not requested -------------------------------------------------------


def test_logprobs_are_null_in_collected_and_streamed_choices(service: Service) -> None:
    body = {"prompt": "Say this is a test.", "max_tokens": 3}
    collected = _post(service, "/v1/completions", body).json()
    assert collected["choices"][0]["logprobs"] is None
    assert "tool_calls" not in collected["choices"][0]
    streamed = _events(_post(service, "/v1/completions", {**body, "stream": True}))
    pieces = [event for event in streamed if isinstance(event, dict) and event["choices"]]
    assert pieces and all(event["choices"][0]["logprobs"] is None for event in pieces)
    asked = _post(service, "/v1/completions", {**body, "logprobs": 1}).json()
    assert len(asked["choices"][0]["logprobs"]["tokens"]) == asked["usage"]["completion_tokens"]
