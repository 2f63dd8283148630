"""Request ids, JSON log lines and the translation cache counters, without Triton."""

from __future__ import annotations

import json
import logging

import pytest
from fastapi.testclient import TestClient

from frontend.app import create_app
from frontend.logs import JsonFormatter, TextFormatter, configure_logging
from frontend.metrics import REGISTRY
from frontend.request_context import RequestContext, _current, valid_request_id
from frontend.settings import Settings
from frontend.translation_cache import translation_cache

KEY = "observability-key-0123456789"


def _record(message: str = "hello %s", *args: object, **extra: object) -> logging.LogRecord:
    record = logging.LogRecord("frontend.test", logging.INFO, __file__, 1, message, args, None)
    record.__dict__.update(extra)
    return record


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        ("abc-123_X.y", True),
        ("a" * 128, True),
        ("a" * 129, False),
        ("", False),
        (None, False),
        ("has space", False),
        ("new\nline", False),
        ('quote"', False),
        ("é", False),
    ],
)
def test_request_id_validation(value: str | None, valid: bool) -> None:
    assert valid_request_id(value) is valid


def test_json_line_has_the_fields_and_the_request() -> None:
    outside = json.loads(JsonFormatter().format(_record("hello %s", "world")))
    assert outside["message"] == "hello world"
    assert outside["level"] == "INFO"
    assert outside["logger"] == "frontend.test"
    assert outside["timestamp"].endswith("+00:00")
    assert "request_id" not in outside
    token = _current.set(RequestContext("req-1"))
    try:
        line = JsonFormatter().format(_record("done", status=200, duration_ms=12.5))
    finally:
        _current.reset(token)
    assert "\n" not in line
    entry = json.loads(line)
    assert entry["request_id"] == "req-1"
    assert entry["route"] == "unmatched"
    assert entry["status"] == 200
    assert entry["duration_ms"] == 12.5


def test_text_line_names_the_request() -> None:
    token = _current.set(RequestContext("req-2"))
    try:
        line = TextFormatter().format(_record("done"))
    finally:
        _current.reset(token)
    assert "[req-2] done" in line


def test_unknown_log_format_stops_start_up() -> None:
    with pytest.raises(ValueError, match="CT_LOG_FORMAT"):
        configure_logging("xml")


def test_triton_ids_start_with_the_request_id_and_differ_per_attempt() -> None:
    first, retry = RequestContext("client-id"), RequestContext("client-id")
    ids = [first.next_triton_request_id() for _ in range(3)]
    assert all(triton_id.startswith("client-id-") for triton_id in ids)
    assert [triton_id.rsplit("-", 1)[1] for triton_id in ids] == ["0", "1", "2"]
    assert retry.next_triton_request_id() != ids[0]


def test_first_chunk_is_timed_once() -> None:
    context = RequestContext("req-3")
    assert context.first_chunk_seconds() >= 0
    assert context.first_chunk_seconds() is None


def _lookups(cache: str, result: str) -> float:
    return (
        REGISTRY.get_sample_value(
            "ct_constraint_cache_lookups_total", {"cache": cache, "result": result}
        )
        or 0.0
    )


def test_translation_cache_counts_hits_and_misses_and_never_caches_errors() -> None:
    calls = []

    @translation_cache(lambda kind, *_: f"unit-{kind}")
    def translate(kind: str, text: str) -> str:
        calls.append(text)
        if text == "bad":
            raise ValueError(text)
        return text.upper()

    assert translate("a", "x") == translate("a", "x") == "X"
    for _ in range(2):
        with pytest.raises(ValueError):
            translate("a", "bad")
    assert calls == ["x", "bad", "bad"]
    assert _lookups("unit-a", "hit") == 1
    assert _lookups("unit-a", "miss") == 3
    assert (
        REGISTRY.get_sample_value("ct_constraint_translation_seconds_count", {"cache": "unit-a"})
        == 3
    )


@pytest.fixture
def client() -> TestClient:
    app = create_app(Settings(api_keys=(KEY,)))

    @app.get("/crash")
    async def crash() -> None:
        raise RuntimeError("boom")

    return TestClient(app, raise_server_exceptions=False)


def test_request_id_is_echoed_or_made(client: TestClient) -> None:
    given = client.get("/v1/models", headers={"X-Request-ID": "trace.abc-1"})
    assert given.headers["x-request-id"] == "trace.abc-1"
    made = client.get("/v1/models")
    invalid = client.get("/v1/models", headers={"X-Request-ID": "no spaces allowed"})
    for response in (made, invalid):
        assert valid_request_id(response.headers["x-request-id"])
        assert response.headers["x-request-id"] != "no spaces allowed"
    assert made.headers["x-request-id"] != invalid.headers["x-request-id"]


def test_errors_carry_the_request_id(client: TestClient) -> None:
    for path in ("/v1/models", "/no-such-route", "/crash"):  # 401, 404, unhandled 500
        response = client.get(path, headers={"X-Request-ID": "err-1"})
        assert response.status_code >= 400
        assert response.headers["x-request-id"] == "err-1"


def test_access_line_is_json_with_the_request_and_no_key(
    client: TestClient, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    client.get(
        "/v1/models?api_key=" + KEY,
        headers={"X-Request-ID": "log-1", "Authorization": f"Bearer {KEY}"},
    )
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line]
    lines = [line for line in lines if line["logger"].startswith("frontend")]  # not the client's
    access = [line for line in lines if line["logger"] == "frontend.access"]
    assert access and access[-1]["request_id"] == "log-1"
    assert access[-1]["route"] == "/v1/models"
    assert access[-1]["status"] == 200
    assert access[-1]["duration_ms"] >= 0
    assert KEY not in json.dumps(lines)
