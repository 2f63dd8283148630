"""Grammars in llguidance's Lark dialect (``tests/corpus/lark``), live.

Each grammar goes through ``/v1/completions`` as ``grammar: {type: lark}``,
as ``{type: llguidance}`` (raw text and ``{"grammars": [...]}``) and through
``/v1/completion/cfg``. Every finished output is checked here against the
test's own reading of what the grammar asks for (Python string handling,
``re`` and hand-written JSON Schemas with ``jsonschema``), and the service's
own judge must have passed it too: the verification-failure counter stays
at zero and the cfg endpoint answers ``pattern_match``, not
``verification_failed``.

The tiny model never learned the special tokens the demo tokenizer has
(``<think>``, ``</think>``, ``<|python_tag|>``), so the grammars bound what
it may write; the one with an unbounded lazy terminal gets ``logit_bias``
towards the ``</think>`` token that ends it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import httpx
import jsonschema
import pytest
from transformers import AutoTokenizer

from .conftest import MODEL_NAME, Service

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "lark"


def _grammar(name: str) -> str:
    return (CORPUS / f"{name}.lark").read_text(encoding="utf-8")


def _call(name: str, parameters: dict) -> dict:
    return {
        "type": "object",
        "properties": {"name": {"const": name}, "parameters": parameters},
        "required": ["name", "parameters"],
        "additionalProperties": False,
    }


TOOL_CALL = {
    "anyOf": [
        _call(
            "get_weather",
            {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "minLength": 1, "maxLength": 16},
                    "unit": {"enum": ["celsius", "fahrenheit"]},
                },
                "required": ["city", "unit"],
                "additionalProperties": False,
            },
        ),
        _call(
            "web_search",
            {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "minLength": 1, "maxLength": 24},
                    "top_k": {"type": "integer", "minimum": 1, "maximum": 10},
                },
                "required": ["query"],
                "additionalProperties": False,
            },
        ),
    ]
}
ADDRESS = {
    "type": "object",
    "properties": {
        "street": {"type": "string", "maxLength": 24},
        "city": {"type": "string", "maxLength": 16},
        "zip": {"type": "integer", "minimum": 10000, "maximum": 99999},
    },
    "required": ["street", "city", "zip"],
    "additionalProperties": False,
}


def _tool_call(text: str) -> None:
    tag = "<|python_tag|>"
    assert text.startswith(tag), text
    jsonschema.validate(json.loads(text[len(tag) :]), TOOL_CALL)


def _think_json(text: str) -> None:
    assert text.startswith("<think>\n"), text
    thought, separator, answer = text[len("<think>\n") :].rpartition("</think>\n")
    assert separator and len(thought) <= 120, text
    jsonschema.validate(json.loads(answer), ADDRESS)


def _lazy_sql(text: str) -> None:
    """Up to three statements; each ends at the first ";" after its verb."""
    statements = 0
    rest = text
    while True:
        verb = re.match(r"(SELECT|INSERT|UPDATE|DELETE) ", rest)
        assert verb, text
        end = rest.index(";", verb.end())
        assert 1 <= end - verb.end() <= 60, text
        statements += 1
        rest = rest[end + 1 :]
        if not rest:
            break
        assert rest.startswith("\n"), text
        rest = rest[1:]
    assert statements <= 3, text


def _lazy_think_text(text: str) -> None:
    assert text.startswith("<think>"), text
    first = text.index("</think>")
    assert text[first + len("</think>") :] in ("\nyes", "\nno", "\nunsure"), text


_KEYWORDS = ("if", "else", "while", "for", "return")


def _and_not_assignments(text: str) -> None:
    lines = text.split("\n")
    assert 1 <= len(lines) <= 3, text
    for line in lines:
        assigned = re.fullmatch(r"([a-z_][a-z0-9_]{0,11}) = [0-9]{1,4}", line)
        assert assigned and assigned[1] not in _KEYWORDS, text


def _lazy_rules_function_calls(text: str) -> None:
    """Calls (lookup with JSON, wait with digits) among prose; no "<" after the last."""
    rest = text
    while "<function" in rest:
        rest = rest[rest.index("<function") + len("<function") :]
        if rest.startswith("=wait>"):
            call = re.match(r"=wait>[0-9]{1,4}</function>", rest)
            assert call, text
        else:
            call = re.match(r"=lookup>(\{.*?\})</function>", rest, re.DOTALL)
            assert call and set(json.loads(call[1])) == {"q"}, text
        rest = rest[call.end() :]
    assert "<" not in rest, text


CHECKS: dict[str, Callable[[str], None]] = {
    "and_not_assignments": _and_not_assignments,
    "lazy_rules_function_calls": _lazy_rules_function_calls,
    "tool_call_json": _tool_call,
    "think_json": _think_json,
    "lazy_sql": _lazy_sql,
    "lazy_think_text": _lazy_think_text,
}


def _verification_failures(client: httpx.Client) -> float:
    total = 0.0
    for line in client.get("/metrics").text.splitlines():
        if line.startswith("ct_verification_failures_total{"):
            total += float(line.rsplit(" ", 1)[1])
    return total


@pytest.fixture(scope="module")
def end_of_thought(tiny_model_dir: Path) -> int:
    return AutoTokenizer.from_pretrained(tiny_model_dir).convert_tokens_to_ids("</think>")


def _grammar_values(name: str) -> list[tuple[str, object]]:
    text = _grammar(name)
    return [
        ("lark", text),
        ("llguidance", text),
        ("llguidance", {"grammars": [{"lark_grammar": text}]}),
    ]


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_completions_outputs_satisfy_the_grammar(
    service: Service, name: str, end_of_thought: int
) -> None:
    bias = {str(end_of_thought): 100} if name == "lazy_think_text" else {}
    finished = 0
    with service.client() as client:
        failures_before = _verification_failures(client)
        for index, (grammar_type, value) in enumerate(_grammar_values(name)):
            response = client.post(
                "/v1/completions",
                json={
                    "model": MODEL_NAME,
                    "prompt": "Answer: ",
                    "max_tokens": 200,
                    "n": 2,
                    "seed": index,
                    "logit_bias": bias,
                    "grammar": {"type": grammar_type, "value": value},
                },
            )
            assert response.status_code == 200, response.text
            for choice in response.json()["choices"]:
                if choice["finish_reason"] == "stop":
                    CHECKS[name](choice["text"])
                    finished += 1
                else:
                    assert choice["finish_reason"] == "length", choice
        assert _verification_failures(client) == failures_before
    assert finished >= 3, f"only {finished} of 6 outputs finished"


@pytest.mark.parametrize("name", ["tool_call_json", "think_json", "lazy_sql"])
def test_cfg_outputs_satisfy_the_grammar(service: Service, name: str) -> None:
    matched = 0
    with service.client() as client:
        for grammar_format in ("lark", "auto"):
            for prompt in ("Answer: ", "Output:\n"):
                response = client.post(
                    "/v1/completion/cfg",
                    json={
                        "prompt": prompt,
                        "grammar": _grammar(name),
                        "grammar_format": grammar_format,
                        "max_new_tokens": 200,
                    },
                )
                assert response.status_code == 200, response.text
                result = response.json()
                assert result["stop_reason"] in ("pattern_match", "token_limit"), result
                if result["stop_reason"] == "pattern_match":
                    CHECKS[name](result["completion"])
                    matched += 1
    assert matched >= 2, f"only {matched} of 4 outputs matched"


def test_a_special_token_the_served_tokenizer_lacks_is_a_400_naming_it(service: Service) -> None:
    grammar = 'start: <|eom_id|> "x"'
    with service.client() as client:
        completions = client.post(
            "/v1/completions",
            json={
                "model": MODEL_NAME,
                "prompt": "x",
                "grammar": {"type": "lark", "value": grammar},
            },
        )
        cfg = client.post("/v1/completion/cfg", json={"prompt": "x", "grammar": grammar})
    assert completions.status_code == 400, completions.text
    assert "<|eom_id|>" in completions.json()["error"]["message"]
    assert cfg.status_code == 400, cfg.text
    assert "<|eom_id|>" in cfg.json()["error"]


def test_refused_extensions_are_a_400_with_their_location(service: Service) -> None:
    with service.client() as client:
        response = client.post(
            "/v1/completions",
            json={
                "model": MODEL_NAME,
                "prompt": "x",
                "grammar": {"type": "llguidance", "value": 'start: "a"\nb: <[128010]>'},
            },
        )
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["param"] == "grammar.value"
    assert "given by id" in error["message"] and "line 2, column 4" in error["message"]
