"""Phase 5: the frontend's own cost per request.

The same small request (non-streaming, a few tokens, fixed seed) goes through
``POST /v1/completions`` and straight to the ensemble over gRPC, in rounds
whose order rotates; the difference is what HTTP, auth, validation, planning
and response building add. Every client keeps its connection open, as a
production client would.

The target's figure uses a lean HTTP client (``bench/lean_http.py``), so the
two sides compare clients of like weight. The same requests through ``httpx``
are reported beside it: what a Python client such as ``openai`` adds on its
own side, which no server can take away.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

import httpx

from bench import stats
from bench.lean_http import LeanHTTPClient
from bench.load import EnsembleClient
from bench.progress import say
from bench.settings import BenchSettings
from bench.workload import PROMPTS, RequestSpec, sampling_parameters
from frontend.generation import COLLECT_INTERVAL_MS

Path = Callable[[str, int], Awaitable[float | None]]


async def measure(
    client: EnsembleClient, base_url: str, api_key: str, settings: BenchSettings
) -> dict:
    tokens = settings.frontend_max_tokens
    failures: list[str] = []
    headers = {"Authorization": f"Bearer {api_key}"}
    address = urlsplit(base_url)
    lean = LeanHTTPClient(address.hostname or "127.0.0.1", address.port or 80, headers)

    def body(prompt: str, seed: int) -> dict:
        return {
            "model": "default",
            "prompt": prompt,
            "max_tokens": tokens,
            "temperature": 1.0,
            "seed": seed,
            "ignore_eos": True,
        }

    async with httpx.AsyncClient(
        base_url=base_url, headers=headers, timeout=120.0, trust_env=False
    ) as http:

        async def via_lean(prompt: str, seed: int) -> float | None:
            started = time.perf_counter()
            response = await lean.post_json("/v1/completions", body(prompt, seed))
            elapsed = time.perf_counter() - started
            if response.status != 200:
                failures.append(f"HTTP {response.status}: {response.body[:200]!r}")
                return None
            return elapsed

        async def via_httpx(prompt: str, seed: int) -> float | None:
            started = time.perf_counter()
            response = await http.post("/v1/completions", json=body(prompt, seed))
            elapsed = time.perf_counter() - started
            if response.status_code != 200:
                failures.append(f"httpx {response.status_code}: {response.text[:200]}")
                return None
            return elapsed

        async def via_grpc(prompt: str, seed: int) -> float | None:
            # What the frontend itself asks of Triton for a non-streamed request.
            params = sampling_parameters(tokens, seed, stream_interval_ms=COLLECT_INTERVAL_MS)
            timing = await client.stream(RequestSpec(prompt, params, label="grpc"))
            if not timing.ok:
                failures.append(f"gRPC: {timing.error}")
                return None
            return timing.latency

        paths: dict[str, Path] = {"http": via_lean, "httpx": via_httpx, "grpc": via_grpc}
        try:
            ms = await _rounds(paths, settings.frontend_pairs)
        finally:
            await lean.close()
    rounds = len(ms["grpc"])
    say(f"frontend: {rounds} rounds, {len(failures)} failures")
    paired = [h - g for h, g in zip(ms["http"], ms["grpc"], strict=True)]
    return {
        "max_tokens": tokens,
        "pairs": rounds,
        "failures": len(failures),
        "failures_sample": failures[:3],
        "http_client": "lean HTTP/1.1 keep-alive (bench/lean_http.py)",
        "http_ms": stats.summarize(ms["http"]),
        "httpx_ms": stats.summarize(ms["httpx"]),
        "grpc_ms": stats.summarize(ms["grpc"]),
        "overhead_ms_paired": stats.summarize(paired),
        "overhead_p50_ms": _p50_difference(ms["http"], ms["grpc"]),
        "overhead_p99_ms": stats.difference(
            stats.percentile(ms["http"], 99), stats.percentile(ms["grpc"], 99)
        ),
        "overhead_with_httpx_p50_ms": _p50_difference(ms["httpx"], ms["grpc"]),
        "httpx_client_cost_p50_ms": _p50_difference(ms["httpx"], ms["http"]),
    }


async def _rounds(paths: dict[str, Path], rounds: int) -> dict[str, list[float]]:
    """Each round sends one request down every path, starting each round at the
    next path, so no path always runs first (after a pause) or last; a round
    with a failure is dropped whole."""
    names = list(paths)
    for i in range(2):  # warm every path (connections, caches)
        for name in names:
            await paths[name](PROMPTS[i], i)
    ms: dict[str, list[float]] = {name: [] for name in names}
    for i in range(rounds):
        prompt, seed = PROMPTS[i % len(PROMPTS)], 2000 + i
        order = names[i % len(names) :] + names[: i % len(names)]
        seconds = {name: await paths[name](prompt, seed) for name in order}
        if all(value is not None for value in seconds.values()):
            for name, value in seconds.items():
                ms[name].append(value * 1e3)  # type: ignore[operator]
    return ms


def _p50_difference(minuend: list[float], subtrahend: list[float]) -> float | None:
    return stats.difference(stats.percentile(minuend, 50), stats.percentile(subtrahend, 50))
