"""Schemathesis against the frontend's own OpenAPI document, on the live stack:
no generated request, valid or not, gets a 5xx.

Bounded for CI: a fixed number of examples per operation and mode, and
generation lengths clamped so valid requests stay short (the point is the
input handling, not long generations).
"""

from __future__ import annotations

from collections import Counter

import httpx
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from .conftest import API_KEY, Service

EXAMPLES = {GenerationMode.NEGATIVE: 30, GenerationMode.POSITIVE: 12}
# Fields that set how much work a valid request asks for, and their caps.
WORK_CAPS = {"max_tokens": 8, "max_new_tokens": 8, "n": 2, "best_of": 2}


def _bounded(case) -> None:
    body = getattr(case, "body", None)
    if isinstance(body, dict):
        for field, cap in WORK_CAPS.items():
            value = body.get(field)
            if isinstance(value, int) and not isinstance(value, bool) and value > cap:
                body[field] = cap


def test_fuzzed_requests_never_get_a_server_error(service: Service) -> None:
    spec = httpx.get(f"{service.frontend.url}/openapi.json", timeout=30).json()
    schema = schemathesis.openapi.from_dict(spec)
    statuses: Counter[int] = Counter()
    session = requests.Session()
    headers = {"Authorization": f"Bearer {API_KEY}"}
    for result in schema.get_all_operations():
        operation = result.ok()
        for mode, examples in EXAMPLES.items():

            @settings(
                max_examples=examples,
                deadline=None,
                database=None,
                phases=[Phase.generate],
                suppress_health_check=list(HealthCheck),
            )
            @given(case=operation.as_strategy(generation_mode=mode))
            def call(case) -> None:
                _bounded(case)
                response = case.call(
                    base_url=service.frontend.url, session=session, headers=headers, timeout=60
                )
                statuses[response.status_code] += 1
                assert response.status_code < 500, (
                    f"{case.method} {case.path}: {response.status_code} "
                    f"{response.text[:300]!r} for body {getattr(case, 'body', None)!r:.300}"
                )

            try:
                call()
            except Unsatisfiable:  # nothing to make invalid (an operation without inputs)
                assert mode is GenerationMode.NEGATIVE
    print("fuzzed responses by status:", dict(sorted(statuses.items())))
    assert sum(statuses.values()) >= 100
    assert sum(count for status, count in statuses.items() if 400 <= status < 500) > 0


@pytest.mark.parametrize(
    ("content", "content_type", "expected"),
    [
        (b"\xff\xfe not utf-8", "application/json", {400, 422}),
        (b'{"prompt": "x"}', "text/plain", {400, 415, 422}),
        (b'{"model": "default", "prompt": "x", "temperature": NaN}', "application/json", {400}),
        (b'{"model": "default", "prompt": "x", "max_tokens": 1e400}', "application/json", {400}),
        (b"[" * 100_000, "application/json", {400, 413, 422}),
    ],
)
def test_malformed_bodies_are_4xx(
    service: Service, content: bytes, content_type: str, expected: set[int]
) -> None:
    with service.client(timeout=60) as client:
        response = client.post(
            "/v1/completions", content=content, headers={"Content-Type": content_type}
        )
    assert response.status_code in expected, (response.status_code, response.text[:300])
