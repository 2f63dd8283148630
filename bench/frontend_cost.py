"""Phase 5: the frontend's own cost per request.

The same small request (non-streaming, a few tokens, fixed seed) goes through
``POST /v1/completions`` and straight to the ensemble over gRPC, in pairs
whose order alternates; the difference is what HTTP, auth, validation,
planning and response building add. Both clients keep their connection
open, as a production client would.
"""

from __future__ import annotations

import time

import httpx

from bench import stats
from bench.load import EnsembleClient
from bench.progress import say
from bench.settings import BenchSettings
from bench.workload import PROMPTS, RequestSpec, sampling_parameters
from frontend.generation import COLLECT_INTERVAL_MS


async def measure(
    client: EnsembleClient, base_url: str, api_key: str, settings: BenchSettings
) -> dict:
    tokens = settings.frontend_max_tokens
    http_ms, grpc_ms, diffs, failures = [], [], [], []
    headers = {"Authorization": f"Bearer {api_key}"}
    async with httpx.AsyncClient(
        base_url=base_url, headers=headers, timeout=120.0, trust_env=False
    ) as http:

        async def via_http(prompt: str, seed: int) -> float | None:
            body = {
                "model": "default",
                "prompt": prompt,
                "max_tokens": tokens,
                "temperature": 1.0,
                "seed": seed,
                "ignore_eos": True,
            }
            started = time.perf_counter()
            response = await http.post("/v1/completions", json=body)
            elapsed = time.perf_counter() - started
            if response.status_code != 200:
                failures.append(f"HTTP {response.status_code}: {response.text[:200]}")
                return None
            return elapsed

        async def via_grpc(prompt: str, seed: int) -> float | None:
            # What the frontend itself asks of Triton for a non-streamed request.
            params = sampling_parameters(tokens, seed, stream_interval_ms=COLLECT_INTERVAL_MS)
            spec = RequestSpec(prompt, params, label="grpc")
            timing = await client.stream(spec)
            if not timing.ok:
                failures.append(f"gRPC: {timing.error}")
                return None
            return timing.latency

        for i in range(2):  # warm both paths (connections, caches)
            await via_http(PROMPTS[i], i)
            await via_grpc(PROMPTS[i], i)
        failures.clear()
        for i in range(settings.frontend_pairs):
            prompt, seed = PROMPTS[i % len(PROMPTS)], 2000 + i
            if i % 2:
                grpc_s = await via_grpc(prompt, seed)
                http_s = await via_http(prompt, seed)
            else:
                http_s = await via_http(prompt, seed)
                grpc_s = await via_grpc(prompt, seed)
            if http_s is not None and grpc_s is not None:
                http_ms.append(http_s * 1e3)
                grpc_ms.append(grpc_s * 1e3)
                diffs.append((http_s - grpc_s) * 1e3)
    say(f"frontend: {len(diffs)} pairs, {len(failures)} failures")
    return {
        "max_tokens": tokens,
        "pairs": len(diffs),
        "failures": len(failures),
        "failures_sample": failures[:3],
        "http_ms": stats.summarize(http_ms),
        "grpc_ms": stats.summarize(grpc_ms),
        "overhead_ms_paired": stats.summarize(diffs),
        "overhead_p50_ms": stats.difference(
            stats.percentile(http_ms, 50), stats.percentile(grpc_ms, 50)
        ),
        "overhead_p99_ms": stats.difference(
            stats.percentile(http_ms, 99), stats.percentile(grpc_ms, 99)
        ),
    }
