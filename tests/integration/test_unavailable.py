"""With no Triton behind it, the frontend says 503 instead of hanging or crashing."""

from __future__ import annotations

import httpx

from triton_runtime.ports import free_port
from triton_runtime.server import FrontendServer

from .conftest import API_KEY


def test_frontend_without_triton_answers_503(tmp_path) -> None:
    dead = f"127.0.0.1:{free_port()}"
    with FrontendServer(
        env={"CT_TRITON_URL": dead, "CT_API_KEYS": API_KEY}, log_file=tmp_path / "frontend.log"
    ) as frontend:
        headers = {"Authorization": f"Bearer {API_KEY}"}
        with httpx.Client(base_url=frontend.url, headers=headers, timeout=60) as client:
            health = client.get("/health")
            assert health.status_code == 503
            response = client.post("/v1/completion/regex", json={"prompt": "x", "pattern": "a"})
    assert response.status_code == 503, response.text
    assert response.json() == {"error": "the inference server is not available", "code": 503}
