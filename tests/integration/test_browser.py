"""The documentation pages and the playground in a real headless Chromium,
with every host but loopback unreachable.

The browser tests use a frontend without keys (the playground's state comes
from its URL, and a key must never be put there); it shares the session's
Triton. A last test checks on the keyed frontend that the pages are public
while the API is not.
"""

from __future__ import annotations

import ast
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import jsonschema
import pytest

from tests.integration.browser import Browser
from tests.integration.conftest import MODEL_NAME, Service
from triton_runtime.server import FrontendServer, TritonServer

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 12},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def open_frontend(triton: TritonServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    logs = tmp_path_factory.mktemp("open-frontend-logs")
    frontend = FrontendServer(
        env={
            "CT_TRITON_URL": triton.grpc_url,
            "CT_AUTH_DISABLED": "1",
            "CT_MODEL_NAME": MODEL_NAME,
        },
        log_file=logs / "frontend.log",
    )
    with frontend:
        yield frontend.url


def test_swagger_ui_renders_the_operations_offline(open_frontend: str) -> None:
    with Browser(f"{open_frontend}/docs") as browser:
        # One ".opblock" per operation, drawn once the bundle (served here,
        # not from a CDN) ran and fetched /openapi.json.
        count = browser.wait_for(
            "document.querySelectorAll('.opblock').length >= 5 && "
            "document.querySelectorAll('.opblock').length"
        )
        paths = browser.evaluate(
            "[...document.querySelectorAll('.opblock-summary-path')].map(e => e.dataset.path)"
        )
    assert count >= 5
    assert {"/v1/completions", "/v1/completion/regex", "/v1/grammars/validate"} <= set(paths)


def test_redoc_renders_offline(open_frontend: str) -> None:
    with Browser(f"{open_frontend}/redoc") as browser:
        text = browser.wait_for(
            "document.body.innerText.includes('/v1/completion/typed') && document.body.innerText"
        )
    assert "/v1/grammars/validate" in text


def test_playground_checks_generates_and_shows_the_verdict(
    open_frontend: str, tmp_path: Path
) -> None:
    query = urlencode(
        {
            "kind": "json_schema",
            "constraint": json.dumps(SCHEMA),
            "prompt": "The person, as JSON: ",
            "max_tokens": "80",
            "temperature": "0",
            "run": "1",
        }
    )
    with Browser(f"{open_frontend}/playground?{query}", timeout_s=120) as browser:
        verdict = _final_verdict(browser)
        check, output = browser.text_of("check"), browser.text_of("output")
        ttft, curl = browser.text_of("ttft"), browser.text_of("curl-snippet")
        python = browser.text_of("python-snippet")
        # The README's picture of the playground comes from here
        # (CT_SCREENSHOT_DIR=docs/images).
        picture = browser.screenshot(
            Path(os.environ.get("CT_SCREENSHOT_DIR", tmp_path)) / "playground.png"
        )
    assert picture.read_bytes().startswith(b"\x89PNG") and picture.stat().st_size > 20_000
    assert check == "valid json_schema"
    assert output, "no streamed text reached the page"
    if verdict.startswith("verified match"):
        jsonschema.validate(json.loads(output), SCHEMA)
    else:
        assert verdict.startswith("token limit"), verdict
    assert ttft.endswith(" ms")
    assert "/v1/completions" in curl and '"response_format"' in curl
    assert "client.completions.create" in python
    assert SCHEMA in _dicts_within(_keyword_literal(python, "extra_body")), python


def test_playground_streams_a_chat_reply_under_a_grammar(open_frontend: str) -> None:
    query = urlencode(
        {
            "kind": "regex",
            "route": "/v1/chat/completions (grammar)",
            "constraint": "(yes|no)",
            "prompt": "Is it raining?",
            "max_tokens": "16",
            "run": "1",
        }
    )
    with Browser(f"{open_frontend}/playground?{query}", timeout_s=120) as browser:
        verdict = _final_verdict(browser)
        output, python = browser.text_of("output"), browser.text_of("python-snippet")
    assert verdict.startswith("verified match"), verdict
    assert output in ("yes", "no")
    assert "client.chat.completions.create" in python
    extra = _keyword_literal(python, "extra_body")
    assert extra["grammar"] == {"type": "regex", "value": "(yes|no)"}


def _final_verdict(browser: Browser) -> str:
    """The page's verdict once the generation is over."""
    return browser.wait_for(
        "['verified', 'token limit', 'error'].some(v => "
        "document.getElementById('verdict').textContent.startsWith(v)) && "
        "document.getElementById('verdict').textContent"
    )


def _keyword_literal(source: str, name: str) -> object:
    """The value of keyword argument ``name`` in Python ``source``, which must
    be a real literal (True, not JSON's true) for ``literal_eval``."""
    tree = ast.parse(source)
    (value,) = [
        node.value for node in ast.walk(tree) if isinstance(node, ast.keyword) and node.arg == name
    ]
    return ast.literal_eval(value)


def _dicts_within(value: object) -> list[dict]:
    found = []
    if isinstance(value, dict):
        found.append(value)
        for child in value.values():
            found += _dicts_within(child)
    elif isinstance(value, list):
        for child in value:
            found += _dicts_within(child)
    return found


def test_playground_shows_a_grammar_error_at_its_line_and_column(open_frontend: str) -> None:
    query = urlencode({"kind": "lark", "constraint": "start: pair\npair: KEY = NUMBER\n"})
    with Browser(f"{open_frontend}/playground?{query}") as browser:
        check = browser.wait_for(
            "document.getElementById('check').className.includes('bad') && "
            "document.getElementById('check').textContent"
        )
    assert re.match(r"line \d+, column \d+: ", check), check


def test_pages_are_public_while_the_api_needs_the_key(service: Service) -> None:
    with service.client(api_key=None) as anonymous:
        for path in ("/playground", "/playground/static/playground.js", "/docs", "/redoc"):
            assert anonymous.get(path).status_code == 200, path
        assert anonymous.post("/v1/grammars/validate", json={"pattern": "a"}).status_code == 401
        script = anonymous.get("/playground/static/playground.js").text
    assert "localStorage" not in script and "sessionStorage" not in script  # key in memory only


@pytest.mark.parametrize("kind", ["bnf", "gbnf", "lark", "iso-ebnf", "abnf", "regex", "typescript"])
def test_every_playground_example_checks_out(open_frontend: str, kind: str) -> None:
    """Each language's example, loaded as is, passes the live validation."""
    with Browser(f"{open_frontend}/playground?{urlencode({'kind': kind})}") as browser:
        check = browser.wait_for(
            "document.getElementById('check').className.match(/\\b(ok|bad)\\b/) && "
            "document.getElementById('kind').value + ' | ' + "
            "document.getElementById('check').className + ' | ' + "
            "document.getElementById('check').textContent"
        )
    shown, verdict, _ = check.split(" | ", 2)
    assert shown == kind and " ok" in verdict, check
