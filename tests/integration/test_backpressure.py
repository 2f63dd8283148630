"""A decoder with one slot and a one-request queue, behind its own frontend:
a request beyond the queue is refused at once with 503 + Retry-After, and the
queued ones still complete."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from triton_runtime.server import FrontendServer

from .conftest import API_KEY, repository_with_decoder_settings, served


@pytest.fixture(scope="module")
def small_server(
    tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[FrontendServer]:
    work = tmp_path_factory.mktemp("backpressure")
    repository = repository_with_decoder_settings(
        work, max_running_requests="1", max_queued_requests="1"
    )
    with served(tiny_model_dir, work, repository) as stack:
        yield stack.frontend


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
