"""The constraint report over HTTP: the validate API's ``report`` and ``X-Constraint-Report``.

The validate router runs in a bare FastAPI app (no Triton, no keys); the
completion routes' header is checked live in
``tests/integration/test_grammar_endpoints.py``.
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.testclient import TestClient

from frontend.api import validate
from frontend.auth import require_api_key
from frontend.constrained import REPORT_HEADER, report_headers
from grammar_compiler import compile_json_schema
from grammar_compiler.regex import regex_constraint

DRAFT_04_WITH_VENDOR_KEYWORDS = {
    "$schema": "http://json-schema.org/draft-04/schema#",
    "type": "object",
    "javaType": "com.example.Reading",
    "properties": {
        "celsius": {"type": "number", "minimum": -90, "exclusiveMinimum": True, "maxmimum": 60},
        "station": {"type": "string", "nullable": True},
    },
    "required": ["celsius"],
}


def _client() -> TestClient:
    app = FastAPI()
    app.include_router(validate.router)
    app.dependency_overrides[require_api_key] = lambda: None
    return TestClient(app)


def test_validate_returns_the_report() -> None:
    body = (
        _client()
        .post("/v1/grammars/validate", json={"json_schema": DRAFT_04_WITH_VENDOR_KEYWORDS})
        .json()
    )
    assert body["valid"] is True
    report = body["report"]
    assert report["enforced"] == {
        "exclusiveMinimum": 1,
        "minimum": 1,
        "properties": 1,
        "required": 1,
        "type": 3,
    }
    assert [(item["keyword"], item["pointer"]) for item in report["ignored"]] == [
        ("javaType", ""),
        ("maxmimum", "/properties/celsius"),
        ("nullable", "/properties/station"),
    ]
    assert "did you mean 'maximum'?" in report["ignored"][1]["note"]
    assert report["not_enforced"] == [] and report["subsets"] == []


def test_validate_lists_what_is_enforced_as_a_subset() -> None:
    """Valid outputs, some valid values never generated: said, in strict mode too."""
    schema = {
        "type": "object",
        "properties": {
            "tags": {"type": "array", "uniqueItems": True},
            "options": {"type": "object", "properties": {f"o{i}": {} for i in range(120)}},
        },
    }
    body = _client().post("/v1/grammars/validate", json={"json_schema": schema}).json()
    assert body["valid"] is True
    subsets = {
        (item["keyword"], item["pointer"]): item["note"] for item in body["report"]["subsets"]
    }
    assert "strings, integers, booleans and null" in subsets[("uniqueItems", "/properties/tags")]
    assert "first 100 of its 120" in subsets[("properties", "/properties/options")]
    summary = report_headers(compile_json_schema(schema, decoder_guard=True))[REPORT_HEADER]
    assert "subsets=2" in summary and "subset_at=/properties/tags/uniqueItems" in summary


UNIQUE_NUMBERS_NOTE = (
    "xgrammar ignores it, and the decoder keeps apart only items it can always keep apart: "
    "listed values, a range's integers (no multipleOf), strings without maxLength whose "
    "pattern or format can always go on, strings of maxLength alone (at most 93 items) or of "
    "one pattern or format whose strings it can count, other scalars (kept to strings, "
    "integers, booleans and null), or objects with a member (written in every item) that is "
    "a string that can always go on, of maxLength alone, or of one pattern or format it can "
    "count, or a number of a range (no multipleOf)"
)


def test_validate_reports_what_best_effort_leaves_out() -> None:
    schema = {"type": "array", "uniqueItems": True, "items": {"multipleOf": 0.5}}
    body = (
        _client()
        .post("/v1/grammars/validate", json={"json_schema": schema, "strict": False})
        .json()
    )
    assert body["not_enforced"] == ["uniqueItems at the root"]
    assert body["report"]["not_enforced"] == [
        {"keyword": "uniqueItems", "pointer": "", "note": UNIQUE_NUMBERS_NOTE}
    ]


def test_validate_has_no_report_for_regexes() -> None:
    body = _client().post("/v1/grammars/validate", json={"pattern": "a+"}).json()
    assert body["valid"] is True and body["report"] is None


def test_openapi_documents_the_report() -> None:
    schemas = _client().get("/openapi.json").json()["components"]["schemas"]
    assert set(schemas["Report"]["properties"]) == {
        "enforced",
        "ignored",
        "not_enforced",
        "subsets",
    }
    assert "report" in schemas["ValidateResponse"]["properties"]


def test_report_header() -> None:
    headers = report_headers(compile_json_schema(DRAFT_04_WITH_VENDOR_KEYWORDS))
    assert headers == {
        REPORT_HEADER: "enforced=7; ignored=3; not_enforced=0; "
        "ignored_at=/javaType,/properties/celsius/maxmimum,/properties/station/nullable"
    }
    assert report_headers(regex_constraint("a")) == {}
    assert report_headers(None) == {}
