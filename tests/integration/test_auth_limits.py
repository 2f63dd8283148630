"""A frontend of its own with a hashed key file, a low per-key limit and keyed /metrics.

Each test spends its own key's tokens (burst 3, one more every 100 s), so the
tests pass in any order against the one module-wide frontend.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from frontend.keys import digest_of
from triton_runtime.server import FrontendServer, TritonServer

from .conftest import MODEL_NAME

LIMITED = "limited-key-0123456789"
UNAFFECTED = "unaffected-key-0123456789"
GENERATES = "generating-key-0123456789"
REGEX_BODY = {"prompt": "Date:", "pattern": r"\d{4}-\d{2}-\d{2}", "max_new_tokens": 12}


@pytest.fixture(scope="module")
def frontend(
    triton: TritonServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[FrontendServer]:
    work = tmp_path_factory.mktemp("auth-limits")
    keys_file = work / "keys"
    digests = [digest_of(key) for key in (LIMITED, UNAFFECTED, GENERATES)]
    keys_file.write_text("# digests only\n" + "\n".join(digests) + "\n", encoding="utf-8")
    env = {
        "CT_TRITON_URL": triton.grpc_url,
        "CT_MODEL_NAME": MODEL_NAME,
        "CT_API_KEYS": "",
        "CT_API_KEYS_FILE": str(keys_file),
        "CT_AUTH_DISABLED": "",
        "CT_RATE_LIMIT_RPS": "0.01",
        "CT_RATE_LIMIT_BURST": "3",
        "CT_METRICS_REQUIRE_KEY": "1",
    }
    with FrontendServer(env=env, log_file=work / "frontend.log") as server:
        yield server
    log = (work / "frontend.log").read_text(encoding="utf-8", errors="replace")
    assert not any(key in log for key in (LIMITED, UNAFFECTED, GENERATES))


def _client(frontend: FrontendServer, key: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.Client(base_url=frontend.url, headers=headers, timeout=120)


def test_plain_key_works_against_hashed_file(frontend: FrontendServer) -> None:
    with _client(frontend, GENERATES) as client:
        response = client.post("/v1/completion/regex", json=REGEX_BODY)
    assert response.status_code == 200, response.text
    assert response.json()["tokens_generated"] >= 1


def test_wrong_key_is_401_in_each_routes_shape(frontend: FrontendServer) -> None:
    completion = {"model": MODEL_NAME, "prompt": "Hi", "max_tokens": 2}
    for key in ("wrong-key", digest_of(GENERATES), None):  # the digest itself is no key
        with _client(frontend, key) as client:
            openai_style = client.post("/v1/completions", json=completion)
            regex = client.post("/v1/completion/regex", json=REGEX_BODY)
        assert openai_style.status_code == 401
        assert openai_style.headers["WWW-Authenticate"] == "Bearer"
        assert openai_style.json()["error"]["type"] == "authentication_error"
        assert regex.status_code == 401
        assert regex.json() == {"error": "Invalid API Key provided.", "code": 401}


def test_over_the_limit_is_429_with_retry_after(frontend: FrontendServer) -> None:
    with _client(frontend, LIMITED) as client:
        for _ in range(3):
            assert client.get("/v1/models").status_code == 200
        models = client.get("/v1/models")
        regex = client.post("/v1/completion/regex", json=REGEX_BODY)
    assert models.status_code == 429
    assert 1 <= int(models.headers["Retry-After"]) <= 100
    assert models.json()["error"]["type"] == "rate_limit_error"
    assert regex.status_code == 429
    assert int(regex.headers["Retry-After"]) >= 1
    assert regex.json()["code"] == 429
    with _client(frontend, UNAFFECTED) as client:
        assert client.get("/v1/models").status_code == 200


def test_health_stays_open(frontend: FrontendServer) -> None:
    with _client(frontend, None) as client:
        assert all(client.get("/health").status_code == 200 for _ in range(5))


def test_metrics_require_the_key(frontend: FrontendServer) -> None:
    with _client(frontend, None) as client:
        refused = client.get("/metrics")
    assert refused.status_code == 401
    assert refused.json() == {"error": "Invalid API Key provided.", "code": 401}
    with _client(frontend, GENERATES) as client:
        metrics = client.get("/metrics")
    assert metrics.status_code == 200
    assert "ct_http_requests_total" in metrics.text
