"""A decoder with one slot and a one-request queue, behind its own frontend:
a request beyond the queue is refused at once with 503 + Retry-After, and the
queued ones still complete."""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from triton_runtime.server import FrontendServer, TritonServer

from .conftest import API_KEY, REPO_ROOT


@pytest.fixture(scope="module")
def small_server(
    tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[FrontendServer]:
    work = tmp_path_factory.mktemp("backpressure")
    repository = work / "model_repository"
    shutil.copytree(
        REPO_ROOT / "model_repository", repository, ignore=shutil.ignore_patterns("__pycache__")
    )
    config = repository / "constrained_decoder" / "config.pbtxt"
    text = config.read_text(encoding="utf-8")
    for name in ("max_running_requests", "max_queued_requests"):
        text = re.sub(rf'(key: "{name}", value: {{ string_value: )"\d+"', r'\g<1>"1"', text)
    config.write_text(text, encoding="utf-8")
    assert 'key: "max_queued_requests", value: { string_value: "1" }' in text
    triton = TritonServer(
        repository,
        env={"CT_MODEL_DIR": str(tiny_model_dir)},
        log_file=work / "triton.log",
        startup_timeout=240.0,
    )
    with triton:
        env = {"CT_TRITON_URL": triton.grpc_url, "CT_API_KEYS": API_KEY}
        with FrontendServer(env=env, log_file=work / "frontend.log") as frontend:
            yield frontend


def test_requests_beyond_the_queue_get_503_with_retry_after(small_server: FrontendServer) -> None:
    headers = {"Authorization": f"Bearer {API_KEY}"}
    short = {"model": "default", "prompt": "Next", "max_tokens": 5}
    with (
        httpx.Client(base_url=small_server.url, headers=headers, timeout=120) as client,
        ThreadPoolExecutor(2) as pool,
    ):
        # 16 choices of 2,000 tokens hold the only slot for seconds, even on the tiny model.
        holder = pool.submit(
            client.post,
            "/v1/completions",
            json={**short, "max_tokens": 2000, "n": 16, "ignore_eos": True},
        )
        time.sleep(1.0)
        queued = pool.submit(client.post, "/v1/completions", json=short)  # the only queue place
        time.sleep(0.5)
        started = time.monotonic()
        refused = client.post("/v1/completions", json=short)
        refused_after = time.monotonic() - started
        assert refused.status_code == 503, refused.text
        assert int(refused.headers["Retry-After"]) >= 1
        error = refused.json()["error"]
        assert error["code"] == "server_busy" and "busy" in error["message"]
        assert refused_after < 5.0, "refused at once, not after waiting"
        assert holder.result(timeout=120).status_code == 200
        assert queued.result(timeout=120).status_code == 200
