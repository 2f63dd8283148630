"""Request ids, the frontend's metrics and its JSON log lines, against the real service."""

from __future__ import annotations

import json
import time
import uuid

import grafana_dashboard
import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from triton_runtime.server import FrontendServer, TritonServer

from .conftest import API_KEY, MODEL_NAME, Service

REGEX = {"prompt": "Date:", "pattern": r"\d{4}-\d{2}-\d{2}", "max_new_tokens": 12}


def _samples(service: Service | FrontendServer) -> dict[tuple[str, frozenset], float]:
    url = service.frontend.url if isinstance(service, Service) else service.url
    text = httpx.get(f"{url}/metrics", timeout=30).text
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def _value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def _wait_for(service: Service, check, timeout_s: float = 30.0) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        samples = _samples(service)
        if check(samples) or time.monotonic() > deadline:
            return samples
        time.sleep(0.2)


def test_request_id_is_echoed_or_made(service: Service) -> None:
    with service.client() as client:
        given = client.post("/v1/completion/regex", json=REGEX, headers={"X-Request-ID": "obs-1"})
        made = client.post("/v1/completion/regex", json=REGEX)
        refused = client.post("/v1/completion/regex", json={"prompt": "x"})
    assert given.status_code == 200 and given.headers["x-request-id"] == "obs-1"
    assert made.status_code == 200 and len(made.headers["x-request-id"]) == 32
    assert refused.status_code == 422 and refused.headers["x-request-id"]


def test_metrics_after_requests(service: Service) -> None:
    route = "/v1/completion/regex"
    before = _samples(service)
    pattern = rf"obs-{uuid.uuid4().hex[:6]}-\d{{2}}"  # new to the session's caches
    completion = {"model": "default", "prompt": "Hi", "max_tokens": 4, "stream": True}
    with service.client() as client:
        for _ in range(2):
            response = client.post(route, json={**REGEX, "pattern": pattern})
            assert response.status_code == 200, response.text
        assert client.post("/v1/completions", json=completion).status_code == 200
    after = _wait_for(service, lambda s: _value(s, "ct_generations_in_flight") == 0)

    def grew(name: str, **labels: str) -> float:
        return _value(after, name, **labels) - _value(before, name, **labels)

    assert grew("ct_time_to_first_token_seconds_count", route=route) == 2
    assert grew("ct_time_to_first_token_seconds_count", route="/v1/completions") == 1
    assert 0 < grew("ct_time_to_first_token_seconds_sum", route=route) < 120
    assert _value(after, "ct_generations_in_flight") == 0
    assert grew("ct_constraint_cache_lookups_total", cache="regex", result="miss") == 1
    assert grew("ct_constraint_cache_lookups_total", cache="regex", result="hit") == 1
    assert grew("ct_constraint_translation_seconds_count", cache="regex") == 1
    assert grew("ct_tokens_total", kind="completion") >= 3
    assert grew("ct_tokens_total", kind="prompt") >= 3
    for cause in ("client_disconnect", "error", "timeout"):  # present before they happen
        assert ("ct_generation_cancellations_total", frozenset({("cause", cause)})) in after


def test_client_disconnect_is_counted_as_a_cancellation(service: Service) -> None:
    name, labels = "ct_generation_cancellations_total", {"cause": "client_disconnect"}
    before = _value(_samples(service), name, **labels)
    body = {"model": "default", "prompt": "Long", "max_tokens": 2000, "ignore_eos": True}
    with (
        service.client() as client,
        client.stream("POST", "/v1/completions", json={**body, "stream": True}) as response,
    ):
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("data: {"):
                break  # one event arrived: now leave
    after = _wait_for(service, lambda s: _value(s, name, **labels) > before)
    assert _value(after, name, **labels) > before
    after = _wait_for(service, lambda s: _value(s, "ct_generations_in_flight") == 0)
    assert _value(after, "ct_generations_in_flight") == 0


def test_log_lines_are_json_with_the_request_id_and_no_key(service: Service) -> None:
    request_id = f"obs-log-{uuid.uuid4().hex[:8]}"
    with service.client() as client:
        response = client.post(
            "/v1/completion/regex", json=REGEX, headers={"X-Request-ID": request_id}
        )
    assert response.status_code == 200
    log_file = service.frontend.log_file
    deadline = time.monotonic() + 10
    while True:
        text = log_file.read_text(encoding="utf-8", errors="replace")
        if request_id in text or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert API_KEY not in text
    mine = [json.loads(line) for line in text.splitlines() if request_id in line]
    access = [line for line in mine if line["logger"] == "frontend.access"]
    assert len(access) == 1, mine
    assert access[0]["route"] == "/v1/completion/regex"
    assert access[0]["status"] == 200
    assert access[0]["method"] == "POST"
    assert access[0]["duration_ms"] > 0
    assert {"timestamp", "level", "message"} <= set(access[0])


def test_timeout_is_counted_as_a_cancellation(
    triton: TritonServer, tmp_path_factory: pytest.TempPathFactory
) -> None:
    env = {
        "CT_TRITON_URL": triton.grpc_url,
        "CT_API_KEYS": API_KEY,
        "CT_MODEL_NAME": MODEL_NAME,
        "CT_REQUEST_TIMEOUT_S": "0.3",
    }
    body = {"model": "default", "prompt": "Long", "max_tokens": 4000, "ignore_eos": True}
    log_file = tmp_path_factory.mktemp("timeout") / "frontend.log"
    with FrontendServer(env=env, log_file=log_file) as frontend:
        response = httpx.post(
            f"{frontend.url}/v1/completions",
            json=body,
            headers={"Authorization": f"Bearer {API_KEY}"},
            timeout=60,
        )
        samples = _samples(frontend)
    assert response.status_code == 504, response.text
    assert _value(samples, "ct_generation_cancellations_total", cause="timeout") == 1
    assert _value(samples, "ct_generations_in_flight") == 0


def test_every_metric_on_the_grafana_dashboard_is_exported(service: Service) -> None:
    """The dashboard's queries read what the live stack exports: the
    frontend's /metrics and Triton's metrics port (the decoder's own
    families and Triton's per-model counters)."""
    with service.client() as client:
        assert client.post("/v1/completion/regex", json=REGEX).status_code == 200
    exported = set()
    for url in (f"{service.frontend.url}/metrics", service.triton.metrics_url):
        text = httpx.get(url, timeout=30).text
        for family in text_string_to_metric_families(text):
            exported |= {family.name, f"{family.name}_total"}
    missing = grafana_dashboard.metric_names(grafana_dashboard.load()) - exported
    assert not missing, missing
