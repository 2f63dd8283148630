"""The constraint report, live: the validate API's ``report`` and ``X-Constraint-Report``.

A draft-04 schema full of vendor keywords and OpenAPI's ``nullable`` (the
kind that was refused outright) is accepted; its outputs are judged here with
jsonschema's draft-04 validator on the schema as written.
"""

from __future__ import annotations

import json

import jsonschema

from .conftest import MODEL_NAME, Service

READING = {
    "$schema": "http://json-schema.org/draft-04/schema",
    "id": "http://example.com/reading.json",
    "type": "object",
    "javaType": "com.example.Reading",
    "definitions": {"celsius": {"id": "#celsius", "type": "integer", "maximum": 60}},
    "properties": {
        "t": {"$ref": "#celsius"},
        "ok": {"type": "boolean", "readonly": True},
        "note": {"type": "string", "maxLength": 4, "nullable": True},
    },
    "required": ["t", "ok"],
    "additionalProperties": False,
}
IGNORED = ["/javaType", "/properties/ok/readonly", "/properties/note/nullable"]
HEADER = f"enforced=10; ignored=3; not_enforced=0; ignored_at={','.join(IGNORED)}"


def _fields(header: str) -> dict[str, str | set[str]]:
    """The header's fields, pointer lists as sets (a schema sent as grammar.value is
    read with sorted keys, so the order of the listed pointers follows that)."""
    fields = dict(field.split("=", 1) for field in header.split("; "))
    return {k: set(v.split(",")) if k.endswith("_at") else v for k, v in fields.items()}


def _post(service: Service, path: str, body: dict):
    with service.client() as client:
        return client.post(path, json=body)


def test_validate_reports_enforced_ignored_and_not_enforced(service: Service) -> None:
    response = _post(service, "/v1/grammars/validate", {"json_schema": READING})
    assert response.status_code == 200, response.text
    report = response.json()["report"]
    assert report["enforced"] == {
        "$ref": 1,
        "additionalProperties": 1,
        "maxLength": 1,
        "maximum": 1,
        "properties": 1,
        "required": 1,
        "type": 4,
    }
    ignored = [item["pointer"] + "/" + item["keyword"] for item in report["ignored"]]
    assert ignored == IGNORED
    assert report["not_enforced"] == []


def test_completion_with_a_draft_04_schema_says_what_it_ignored(service: Service) -> None:
    for constraint in (
        {"response_format": {"type": "json_object", "schema": READING}},
        {"grammar": {"type": "json_schema", "value": READING}},
    ):
        body = {"model": MODEL_NAME, "prompt": "Reading: ", "max_tokens": 60, "seed": 3}
        response = _post(service, "/v1/completions", {**body, **constraint})
        assert response.status_code == 200, response.text
        assert _fields(response.headers["X-Constraint-Report"]) == _fields(HEADER)
        choice = response.json()["choices"][0]
        if choice["finish_reason"] == "stop":
            jsonschema.Draft4Validator(READING).validate(json.loads(choice["text"]))


def test_streamed_completion_carries_the_header(service: Service) -> None:
    body = {
        "model": MODEL_NAME,
        "prompt": "Reading: ",
        "max_tokens": 8,
        "stream": True,
        "response_format": {"type": "json_object", "schema": READING},
    }
    with service.client() as client, client.stream("POST", "/v1/completions", json=body) as reply:
        assert reply.status_code == 200
        assert reply.headers["X-Constraint-Report"] == HEADER
        assert "data: [DONE]" in reply.read().decode()


def test_tool_report_points_into_the_request(service: Service) -> None:
    tool = {"name": "record", "strict": True, "parameters": READING}
    body = {
        "model": MODEL_NAME,
        "prompt": "Call: ",
        "max_tokens": 8,
        "tools": [{"type": "function", "function": tool}],
        "tool_choice": "required",
    }
    response = _post(service, "/v1/completions", body)
    assert response.status_code == 200, response.text
    prefix = "/tools/0/function/parameters"
    assert response.headers["X-Constraint-Report"] == HEADER.replace(
        "ignored_at=", "ignored_at=" + prefix
    ).replace(",/", f",{prefix}/")


def test_typed_completion_carries_the_header(service: Service) -> None:
    body = {
        "prompt": "Point:",
        "schema": "interface Point { x: number; y: number }\nexport type P = Point;",
        "type_name": "P",
        "max_tokens": 4,
    }
    response = _post(service, "/v1/completion/typed", body)
    assert response.status_code == 200, response.text
    assert response.headers["X-Constraint-Report"].startswith("enforced=")
    assert "ignored=0; not_enforced=0" in response.headers["X-Constraint-Report"]


def test_unconstrained_completion_has_no_report(service: Service) -> None:
    body = {"model": MODEL_NAME, "prompt": "Hi", "max_tokens": 2}
    response = _post(service, "/v1/completions", body)
    assert response.status_code == 200, response.text
    assert "X-Constraint-Report" not in response.headers
