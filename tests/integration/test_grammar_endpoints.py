"""/v1/completion/cfg, /v1/completion/typed and /v1/grammars/validate, live.

Outputs are judged here with independent tools built from the test's own
expectations (a Lark Earley parser written for the test, hand-written JSON
Schemas, jsonschema), never with the code under test.
"""

from __future__ import annotations

import json

import jsonschema
import lark
import pytest

from .conftest import Service

# Bounded, so even the tiny test model reaches the end within max_new_tokens.
GBNF_LIST = r"""
root ::= "[" item ("," item)? "]"
item ::= [0-9] | "\"" [a-z] "\""
"""
GBNF_LIST_AS_LARK = r"""
start: "[" item ("," item)? "]"
item: /[0-9]/ | /"[a-z]"/
"""
ISO_LIST = r"""
(* the same list in ISO/IEC 14977 EBNF *)
list = "[", item, [ ",", item ], "]" ;
item = digit | '"', letter, '"' ;
digit = "0" | "1" | "2" | "3" | "4" | "5" | "6" | "7" | "8" | "9" ;
letter = ? letters ? - ( "A" | "B" | "C" | "D" | "E" | "F" | "G" | "H" | "I" | "J" | "K" | "L"
  | "M" | "N" | "O" | "P" | "Q" | "R" | "S" | "T" | "U" | "V" | "W" | "X" | "Y" | "Z" ) ;
"""
ABNF_LIST = r"""
; the same list in RFC 5234's ABNF
list = "[" item [ "," item ] "]"
item = DIGIT / DQUOTE %x61-7A DQUOTE
"""
LARK_SUM = r"""
start: expr
expr: term (("+" | "-") term)?
term: DIGIT | "(" DIGIT ")"
%import common.DIGIT
%import common.WS_INLINE
%ignore WS_INLINE
"""


def _post(service: Service, path: str, body: dict):
    with service.client() as client:
        return client.post(path, json=body)


def test_cfg_documented_example(service: Service) -> None:
    body = {
        "prompt": "Start your text here",
        "grammar": "<start> ::= <noun> <verb> | <verb> <noun>",
        "max_new_tokens": 10,
        "stop_after_match": False,
        "top_k": 30,
        "top_p": 0.9,
        "temperature": 1.2,
        "repetition_penalty": 0.8,
    }
    response = _post(service, "/v1/completion/cfg", body)
    assert response.status_code == 200, response.text
    result = response.json()
    assert set(result) == {"completion", "tokens_generated", "stop_reason", "matched"}
    assert result["matched"] == (result["completion"] in {"noun verb", "verb noun"})
    if result["stop_reason"] == "pattern_match":
        assert result["completion"] in {"noun verb", "verb noun"}
    else:
        assert result["stop_reason"] == "token_limit"
        assert any(option.startswith(result["completion"]) for option in ("noun verb", "verb noun"))


@pytest.mark.parametrize(
    ("grammar", "judge_grammar", "grammar_format"),
    [
        (GBNF_LIST, GBNF_LIST_AS_LARK, "auto"),
        (LARK_SUM, LARK_SUM, "lark"),
        (ISO_LIST, GBNF_LIST_AS_LARK, "auto"),
        (ABNF_LIST, GBNF_LIST_AS_LARK, "auto"),
    ],
    ids=["gbnf", "lark", "iso-ebnf", "abnf"],
)
def test_cfg_outputs_parse_with_an_independent_parser(
    service: Service, grammar: str, judge_grammar: str, grammar_format: str
) -> None:
    parser = lark.Lark(judge_grammar, parser="earley")
    finished = 0
    for seed_prompt in ("Data: ", "List: ", "Sum: ", "x"):
        body = {
            "prompt": seed_prompt,
            "grammar": grammar,
            "grammar_format": grammar_format,
            "max_new_tokens": 48,
            "temperature": 0.8,
        }
        response = _post(service, "/v1/completion/cfg", body)
        assert response.status_code == 200, response.text
        result = response.json()
        if result["stop_reason"] == "pattern_match":
            parser.parse(result["completion"])
            finished += 1
        else:
            assert result["stop_reason"] == "token_limit"
    assert finished >= 1


def test_cfg_malformed_grammar_is_400_with_a_location(service: Service) -> None:
    response = _post(
        service, "/v1/completion/cfg", {"prompt": "x", "grammar": '<start> ::= "a" (<b>'}
    )
    assert response.status_code == 400, response.text
    assert response.json()["code"] == 400 and "line" in response.json()["error"]


SENTENCE_TS = "export type BasicSentence {\ntext: string;\n}"
SENTENCE_SCHEMA = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
    "additionalProperties": False,
}


def test_typed_documented_example_is_valid_json_or_reported_cut(service: Service) -> None:
    body = {
        "prompt": "Write a sentence",
        "max_tokens": 20,
        "temperature": 0.8,
        "top_p": 0.9,
        "stop": ["."],
        "presence_penalty": 0.6,
        "frequency_penalty": 0.5,
        "schema": SENTENCE_TS,
        "type_name": "BasicSentence",
    }
    response = _post(service, "/v1/completion/typed", body)
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["object"] == "text_completion" and len(result["id"]) == 36
    assert "T" in result["created"]  # ISO 8601
    (choice,) = result["choices"]
    assert set(choice) == {"text", "created", "model", "finish_reason", "usage"}
    usage = result["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert usage["prediction_time_ms"] >= 0
    if choice["finish_reason"] == "stop":
        jsonschema.validate(json.loads(choice["text"]), SENTENCE_SCHEMA)
    else:
        assert choice["finish_reason"] == "length" and usage["completion_tokens"] == 20


TS_ORDER = """
/** A line of an order. */
export interface Item { sku: string; quantity: number; gift?: boolean }
export type Status = "open" | "shipped";
export interface Order { id: number; status: Status; items: Item[] }
"""
ORDER_SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "number"},
        "status": {"enum": ["open", "shipped"]},
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "sku": {"type": "string"},
                    "quantity": {"type": "number"},
                    "gift": {"type": "boolean"},
                },
                "required": ["sku", "quantity"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["id", "status", "items"],
    "additionalProperties": False,
}


# Every value is from a finite set, so even the tiny test model finishes.
TS_SWITCH = """
export type Level = 1 | 2 | 3;
// A device switch.
export interface Switch { on: boolean; level: Level; kind: "fan" | "lamp"; pair: [boolean, Level] }
"""
SWITCH_SCHEMA = {
    "type": "object",
    "properties": {
        "on": {"type": "boolean"},
        "level": {"enum": [1, 2, 3]},
        "kind": {"enum": ["fan", "lamp"]},
        "pair": {
            "type": "array",
            "prefixItems": [{"type": "boolean"}, {"enum": [1, 2, 3]}],
            "items": False,
            "minItems": 2,
        },
    },
    "required": ["on", "level", "kind", "pair"],
    "additionalProperties": False,
}


def test_typed_outputs_validate_and_stop_strings_never_break_json(service: Service) -> None:
    finished = 0
    for temperature in (0.0, 0.5, 1.0, 1.0):
        body = {
            "prompt": "Switch:",
            "schema": TS_SWITCH,
            "type_name": "Switch",
            "max_tokens": 160,
            "temperature": temperature,
            "stop": [".", ",", '"'],
        }
        response = _post(service, "/v1/completion/typed", body)
        assert response.status_code == 200, response.text
        choice = response.json()["choices"][0]
        if choice["finish_reason"] == "stop":
            jsonschema.Draft202012Validator(SWITCH_SCHEMA).validate(json.loads(choice["text"]))
            finished += 1
        else:
            assert choice["finish_reason"] == "length"
    assert finished == 4  # bounded output: every run must reach the end


def test_typed_order_outputs_validate_or_are_reported_cut(service: Service) -> None:
    body = {"prompt": "Order:", "schema": TS_ORDER, "type_name": "Order", "max_tokens": 120}
    response = _post(service, "/v1/completion/typed", body)
    assert response.status_code == 200, response.text
    choice = response.json()["choices"][0]
    if choice["finish_reason"] == "stop":
        jsonschema.validate(json.loads(choice["text"]), ORDER_SCHEMA)
    else:
        assert choice["finish_reason"] == "length"


def test_typed_unknown_type_name_lists_the_exported_names(service: Service) -> None:
    response = _post(
        service, "/v1/completion/typed", {"prompt": "x", "schema": TS_ORDER, "type_name": "Nope"}
    )
    assert response.status_code == 400, response.text
    message = response.json()["error"]
    assert all(name in message for name in ("Item", "Status", "Order"))


def test_typed_syntax_error_has_line_and_column(service: Service) -> None:
    response = _post(
        service,
        "/v1/completion/typed",
        {"prompt": "x", "schema": "export type A = {\n  a: ;\n}", "type_name": "A"},
    )
    assert response.status_code == 400, response.text
    assert "line 2" in response.json()["error"]


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        ({"pattern": [r"\d{3}", "abc"]}, "regex"),
        ({"grammar": "<start> ::= <noun> <verb> | <verb> <noun>"}, "ebnf"),
        ({"grammar": LARK_SUM, "grammar_format": "lark"}, "ebnf"),
        ({"schema": TS_ORDER, "type_name": "Order"}, "json_schema"),
        (
            {"json_schema": {"type": "object", "properties": {"a": {"type": "integer"}}}},
            "json_schema",
        ),
    ],
)
def test_validate_shows_the_canonical_form(service: Service, body: dict, kind: str) -> None:
    response = _post(service, "/v1/grammars/validate", body)
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["valid"] is True and result["errors"] == []
    assert result["canonical"]["type"] == kind and result["canonical"]["value"]


def test_validate_reports_errors_with_positions(service: Service) -> None:
    result = _post(service, "/v1/grammars/validate", {"pattern": ["ok", "a(?=b)"]}).json()
    assert result["valid"] is False
    (problem,) = result["errors"]
    assert (
        problem["pattern_index"] == 1
        and problem["position"] == 1
        and "lookahead" in problem["message"]
    )
    result = _post(service, "/v1/grammars/validate", {"grammar": 'root ::= "a" ('}).json()
    assert result["valid"] is False and result["errors"][0]["message"]


def test_validate_best_effort_json_schema_names_what_is_not_enforced(service: Service) -> None:
    schema = {"type": "array", "items": {"multipleOf": 0.5}, "uniqueItems": True, "minItems": 2}
    strict = _post(service, "/v1/grammars/validate", {"json_schema": schema}).json()
    assert strict["valid"] is False and "uniqueItems" in strict["errors"][0]["message"]
    relaxed = _post(
        service, "/v1/grammars/validate", {"json_schema": schema, "strict": False}
    ).json()
    assert relaxed["valid"] is True and any("uniqueItems" in k for k in relaxed["not_enforced"])
    one = {**schema, "minItems": 1}  # one item is always unique: strict writes only that
    subset = _post(service, "/v1/grammars/validate", {"json_schema": one}).json()
    assert subset["valid"] is True and json.loads(subset["canonical"]["value"])["maxItems"] == 1
    notes = {item["keyword"]: item["note"] for item in subset["report"]["subsets"]}
    assert "at most one item" in notes["uniqueItems"]
    assert "only its integer multiples" in notes["multipleOf"]  # (halves: integers written)


@pytest.mark.parametrize(
    "body",
    [{}, {"pattern": "a", "grammar": 'root ::= "a"'}, {"schema": "export type A = string"}],
)
def test_validate_needs_exactly_one_constraint(service: Service, body: dict) -> None:
    response = _post(service, "/v1/grammars/validate", body)
    assert response.status_code == 422, response.text
