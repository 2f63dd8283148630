"""The API documents to the letter, where the logic is plain Python (issue 14):
strict request types, JSON syntax errors, ``param`` on every 400, why a
constrained generation stopped, model aliases and the response shapes.

The same behaviours over the real stack: ``tests/integration/test_api_documents.py``.
"""

from __future__ import annotations

import asyncio

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from engine.request import invalid_argument_text, read_invalid_argument
from frontend.api.pattern_family import PatternCompletionResponse
from frontend.api.typed import FINISH_REASONS
from frontend.app import create_app
from frontend.completions.plan import plan_completion
from frontend.completions.schemas import Completion, CompletionChoice, CompletionRequest, Usage
from frontend.completions.service import _located
from frontend.constrained import Verdict, verify
from frontend.errors import APIError
from frontend.generation import Completion as Generated
from frontend.settings import Settings
from frontend.triton_client import _as_api_error
from grammar_compiler.regex import regex_constraint

TYPED = {"prompt": "x", "schema": "export type A = { a: string }", "type_name": "A"}
REGEX, CFG = "/v1/completion/regex", "/v1/completion/cfg"
INCLUDE_TYPES = "include_types_in_prompt"
PATTERN, GRAMMAR = {"prompt": "x", "pattern": "a"}, {"prompt": "x", "grammar": 'root ::= "a"'}


@pytest.fixture(scope="module")
def client() -> TestClient:
    """The app without Triton: everything here is refused before generation."""
    settings = Settings(auth_disabled=True, model_name="tiny", served_model_names=("mistral",))
    return TestClient(create_app(settings), raise_server_exceptions=False)


# -- 4: strict types -----------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        (REGEX, {**PATTERN, "max_new_tokens": "5"}, "max_new_tokens"),
        (REGEX, {**PATTERN, "stop_after_match": "yes"}, "stop_after_match"),
        (REGEX, {**PATTERN, "top_k": 5.0}, "top_k"),
        (CFG, {**GRAMMAR, "max_new_tokens": "5"}, "max_new_tokens"),
        (CFG, {**GRAMMAR, "temperature": "1"}, "temperature"),
        ("/v1/completion/typed", {**TYPED, "max_tokens": "20"}, "max_tokens"),
        ("/v1/completion/typed", {**TYPED, INCLUDE_TYPES: 0}, INCLUDE_TYPES),
        ("/v1/grammars/validate", {"pattern": "a", "strict": "yes"}, "strict"),
    ],
)  # fmt: skip
def test_strings_for_numbers_or_booleans_are_422_naming_the_field(
    client: TestClient, path: str, body: dict, field: str
) -> None:
    response = client.post(path, json=body)
    assert response.status_code == 422, response.text
    assert response.json()["error"].startswith(f"{field}: ")


@pytest.mark.parametrize(
    ("field", "value"),
    [("max_tokens", "3"), ("echo", "yes"), ("n", "1"), ("stream", "false"), ("top_k", "5"),
     ("temperature", "0.7"), ("logprobs", 1.0), ("echo", 0)],
)  # fmt: skip
def test_completions_refuse_wrong_types_with_400_and_param(
    client: TestClient, field: str, value: object
) -> None:
    response = client.post("/v1/completions", json={"prompt": "x", field: value})
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert (error["param"], error["code"]) == (field, "invalid_value")


def test_integers_for_floats_and_nulls_for_defaults_pass_validation() -> None:
    """What FastAPI validates: the decoded JSON, as Python objects."""
    request = CompletionRequest.model_validate(
        {"prompt": "x", "temperature": 1, "top_p": 1, "frequency_penalty": 0, "max_tokens": None,
         "echo": None, "stream": None, "logit_bias": {"7": 1}, "repetition_penalty": 1}
    )  # fmt: skip
    assert request.temperature == 1.0 and isinstance(request.temperature, float)
    assert plan_completion(request, "m").params.max_tokens == 16


# -- 6: bodies that are not JSON -------------------------------------------------

TYPED_EXAMPLE_PASTED = (
    '{\n"prompt": "Write a sentence",\n"schema": "export type BasicSentence {\ntext: string;\n}",\n'
    '"type_name": "BasicSentence"\n}'
)


@pytest.mark.parametrize(
    ("body", "what"),
    [
        (TYPED_EXAMPLE_PASTED, "invalid control character in a string at line 3, column 39"),
        ('{"prompt": "x",\n "max_tokens": 3,}', "expecting property name enclosed in double "
         "quotes at line 2, column 18"),
        ('{"prompt": "x"', "expecting ',' delimiter at line 1, column 15"),
        ('{"prompt": "x"} {}', "extra data at line 1, column 17"),
        ('{"prompt": "\\q"}', "invalid \\escape at line 1, column 13"),
    ],
)  # fmt: skip
@pytest.mark.parametrize(
    "path", ["/v1/completion/typed", "/v1/completion/regex", "/v1/completions"]
)
def test_json_syntax_errors_say_what_and_where_in_each_shape(
    client: TestClient, path: str, body: str, what: str
) -> None:
    response = client.post(path, content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 400, response.text
    expected = f"the body is not valid JSON: {what}"
    error = response.json()["error"]
    if path == "/v1/completions":
        assert error["message"].startswith(expected)
        assert (error["param"], error["code"], error["type"]) == (
            None,
            "invalid_json",
            "invalid_request_error",
        )
    else:
        assert error.startswith(expected) and response.json()["code"] == 400


def test_a_raw_newline_in_a_string_gets_a_hint(client: TestClient) -> None:
    response = client.post(
        "/v1/completion/typed",
        content=TYPED_EXAMPLE_PASTED,
        headers={"Content-Type": "application/json"},
    )
    assert "a newline inside a string is written \\n" in response.json()["error"]


def test_a_body_that_is_not_utf8_says_where(client: TestClient) -> None:
    response = client.post(
        "/v1/completions",
        content=b'{"prompt": "\xff"}',
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 400
    assert "not UTF-8 (byte 0xff at offset 12)" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/completions", '{"prompt": "\\ud800"}', "prompt"),
        ("/v1/completions", '{"prompt": ["a", "b\\udc00"]}', "prompt[1]"),
        ("/v1/completions", '{"prompt": "x", "stop": ["\\ud800"]}', "stop[0]"),
        ("/v1/completions", '{"prompt": "x", "grammar": {"type": "json_schema", '
         '"value": {"enum": ["\\ud800"]}}}', "grammar.value.enum[0]"),
        (REGEX, '{"prompt": "\\ud800", "pattern": "a"}', "prompt"),
        (REGEX, '{"prompt": "x", "pattern": ["a", "\\ud800"]}', "pattern[1]"),
        ("/v1/grammars/validate", '{"json_schema": {"const": "\\ud800"}}', "json_schema.const"),
    ],
)  # fmt: skip
def test_a_lone_surrogate_is_a_400_naming_the_field_not_a_500(
    client: TestClient, path: str, body: str, field: str
) -> None:
    response = client.post(path, content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    message = error["message"] if isinstance(error, dict) else error
    assert message.startswith(f"{field}: holds a lone UTF-16 surrogate")
    if isinstance(error, dict):
        assert error["param"] == field


def test_a_surrogate_pair_is_a_character() -> None:
    request = CompletionRequest.model_validate_json('{"prompt": "\\ud83d\\ude00"}')
    assert plan_completion(request, "m").prompts == ["\U0001f600"]


def test_a_body_nested_too_deeply_to_parse_says_so(client: TestClient) -> None:
    response = client.post(
        "/v1/completion/regex", content=b"[" * 100_000, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 400
    assert response.json()["error"] == "the body is not valid JSON: it nests too deeply to be read"


# -- 5: param on every 400 --------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"prompt": 5}, "prompt"),
        ({"prompt": "x", "stop": 5}, "stop"),
        ({"prompt": "x", "tool_choice": "maybe"}, "tool_choice"),
        ({"prompt": "x", "tool_choice": {"type": "function", "function": {}}}, "tool_choice"),
        ({"prompt": "x", "grammar": {"type": "regex", "value": 5}}, "grammar.value"),
        ({"prompt": "x", "tools": [{"type": "function", "function": {"name": 1}}]},
         "tools[0].function.name"),
        ({"prompt": ["a", 1]}, "prompt"),
        ({"prompt": "x", "logit_bias": {"5": "1"}}, "logit_bias.5"),
        ({}, "prompt"),
    ],
)  # fmt: skip
def test_validation_params_name_the_field_not_pydantic_union_branches(
    client: TestClient, body: dict, param: str
) -> None:
    response = client.post("/v1/completions", json=body)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["param"] == param


def test_union_complaints_are_joined_under_one_field(client: TestClient) -> None:
    response = client.post("/v1/completions", json={"prompt": "x", "stop": 5})
    assert response.json()["error"]["message"] == (
        "stop: Input should be a valid string, or a valid list"
    )


@pytest.mark.parametrize(
    ("message", "field"),
    [
        ("the prompt is empty, and ...", "prompt"),
        ("the prompt (901 tokens) plus max_tokens (2000) exceeds ...", "max_tokens"),
        ("logit_bias names token ids outside 0..511: [99999]", "logit_bias"),
        ("a message [with brackets] and no field", None),
    ],
)
def test_decoder_errors_carry_their_field_to_the_client(message: str, field: str | None) -> None:
    text = "in ensemble: " + invalid_argument_text(message, field)
    assert read_invalid_argument(text) == (message, field)

    class Failure:  # tritonclient's InferenceServerException, reduced to what is read
        def message(self) -> str:
            return text

        def status(self) -> str:
            return "StatusCode.INVALID_ARGUMENT"

    error = _as_api_error(Failure())
    assert (error.status, error.message, error.param) == (400, message, field)


def test_a_decoder_error_in_the_constraint_names_the_field_that_gave_it() -> None:
    plan = plan_completion(
        CompletionRequest(prompt="x", response_format={"type": "json_object"}), "m"
    )
    error = _located(APIError(400, "invalid json_schema constraint: ...", param="constraint"), plan)
    assert error.param == "response_format"
    assert _located(APIError(400, "x", param="prompt"), plan).param == "prompt"


# -- 3: why a constrained generation stopped ---------------------------------------


def _verdict(text: str, finish_reason: str, matched: bool):
    generated = Generated(text, len(text), 1, finish_reason, matched)
    return asyncio.run(verify(generated, regex_constraint("a+")))


@pytest.mark.parametrize(
    ("text", "finish_reason", "decoder_matched", "stop_reason", "matched"),
    [
        ("aaa", "stop", True, "pattern_match", True),
        ("aaa", "length", True, "token_limit", True),  # stop_after_match off: cut, yet complete
        ("", "length", False, "token_limit", False),  # a prefix of a match
        ("aab", "stop", True, "verification_failed", False),  # the judge disagrees
        ("aab", "length", True, "verification_failed", False),
        ("aaa", "stop", False, "verification_failed", False),  # ended short of a match
    ],
)
def test_stop_reason_says_what_ended_generation_and_matched_whether_it_matches(
    text: str, finish_reason: str, decoder_matched: bool, stop_reason: str, matched: bool
) -> None:
    response = PatternCompletionResponse.from_verified(
        _verdict(text, finish_reason, decoder_matched)
    )
    assert (response.stop_reason, response.matched) == (stop_reason, matched)
    assert set(response.model_dump()) == {
        "completion",
        "tokens_generated",
        "stop_reason",
        "matched",
    }


def test_typed_finish_reason_follows_the_same_verdicts() -> None:
    assert FINISH_REASONS[_verdict("aaa", "length", True).verdict] == "length"
    assert FINISH_REASONS[_verdict("aaa", "stop", True).verdict] == "stop"
    assert _verdict("aaa", "length", True).verdict is Verdict.TOKEN_LIMIT


# -- 2: model aliases ------------------------------------------------------------------


def test_served_model_names_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CT_MODEL_NAME", "tiny")
    monkeypatch.setenv("CT_SERVED_MODEL_NAMES", " mistral , ,tiny,gpt-3.5-turbo-instruct")
    monkeypatch.setenv("CT_AUTH_DISABLED", "1")
    settings = Settings.from_env()
    assert settings.served_model_names == ("mistral", "tiny", "gpt-3.5-turbo-instruct")
    assert settings.model_names == ("tiny", "mistral", "gpt-3.5-turbo-instruct")


def test_models_lists_the_model_then_its_aliases(client: TestClient) -> None:
    listed = client.get("/v1/models").json()
    assert [model["id"] for model in listed["data"]] == ["tiny", "mistral"]


def test_an_unknown_model_is_still_404(client: TestClient) -> None:
    response = client.post("/v1/completions", json={"prompt": "x", "model": "gpt-4"})
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "model_not_found"


# -- 7: logprobs null when not requested -----------------------------------------------


def test_choices_carry_logprobs_null_and_tool_calls_only_when_there_are_some() -> None:
    completion = Completion(
        id="cmpl-1",
        created=0,
        model="m",
        choices=[CompletionChoice(index=0, text="hi", finish_reason="length")],
        usage=Usage(prompt_tokens=1, completion_tokens=1, total_tokens=2),
    )
    choice = completion.model_dump(mode="json")["choices"][0]
    assert choice == {"index": 0, "text": "hi", "logprobs": None, "finish_reason": "length"}


@pytest.mark.parametrize("token_id", [2**31, 16450131842777534314949115904])
def test_token_ids_beyond_int32_fail_validation(token_id: int) -> None:
    """Ids travel to Triton as INT32 tensors: a larger one was a 500 (found by the fuzz test)."""
    with pytest.raises(ValidationError, match="prompt"):
        CompletionRequest.model_validate({"prompt": [[token_id]], "max_tokens": 1})


def test_a_lone_surrogate_is_found_in_a_key_and_deep_down_without_recursing() -> None:
    from frontend.text_fields import _lone_surrogate

    deep: object = "\udc00"
    for _ in range(50_000):
        deep = [deep]
    assert _lone_surrogate({"a": [1, None, deep]}) == ("a[2]" + "[0]" * 50_000, "\udc00")
    assert _lone_surrogate({"ok": {"bad\ud800": 1}}) == ("ok", "\ud800")
    assert _lone_surrogate(CompletionRequest(prompt="fine", stop=["x"])) is None
