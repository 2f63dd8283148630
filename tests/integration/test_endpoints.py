"""One frontend over several Triton endpoints: each generation goes to a ready
one (least in flight, in turn), and an endpoint that is down gets none."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx

from triton_runtime.ports import free_port
from triton_runtime.server import FrontendServer, TritonServer

from .conftest import API_KEY


def _samples(metrics: str, name: str) -> dict[str, float]:
    """The metric's value by its `endpoint` label."""
    values = {}
    for line in metrics.splitlines():
        if line.startswith(name + "{"):
            series, value = line.rsplit(" ", 1)
            values[series.split('endpoint="', 1)[1].split('"', 1)[0]] = float(value)
    return values


def test_generations_spread_over_ready_endpoints_and_skip_a_dead_one(
    triton: TritonServer, tmp_path
) -> None:
    # The same Triton under two names stands in for two replicas.
    live = [triton.grpc_url, f"localhost:{triton.grpc_port}"]
    dead = f"127.0.0.1:{free_port()}"
    env = {"CT_TRITON_URL": ",".join([dead, *live]), "CT_API_KEYS": API_KEY}
    with (
        FrontendServer(env=env, log_file=tmp_path / "frontend.log") as frontend,
        httpx.Client(
            base_url=frontend.url, headers={"Authorization": f"Bearer {API_KEY}"}, timeout=120
        ) as client,
    ):
        assert client.get("/health").status_code == 200
        body = {"model": "default", "prompt": "Hi", "max_tokens": 4}
        with ThreadPoolExecutor(4) as pool:
            posts = [pool.submit(client.post, "/v1/completions", json=body) for _ in range(12)]
            responses = [post.result() for post in posts]
        assert [response.status_code for response in responses] == [200] * 12
        metrics = client.get("/metrics").text
    sent = _samples(metrics, "ct_triton_generations_total")
    assert sent.get(dead, 0) == 0
    assert all(sent[url] >= 1 for url in live), sent
    assert sum(sent.values()) == 12
    ready = _samples(metrics, "ct_triton_ready")
    assert ready == {dead: 0.0, live[0]: 1.0, live[1]: 1.0}
