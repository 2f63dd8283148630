"""One workload for every engine: c concurrent greedy completions per round,
64 tokens, constrained to one JSON Schema; output tokens counted from each
response's ``usage``.

The schema asks for at least 40 array items, so no output completes it within
64 tokens and every engine does the same amount of work per request.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
from tokenizers import Tokenizer

from bench.peers.engines import Endpoint

MAX_TOKENS = 64
SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "name": {"type": "string", "maxLength": 24},
        "active": {"type": "boolean"},
        "tags": {
            "type": "array",
            "items": {"enum": ["red", "green", "blue", "north", "south", "east", "west", "up"]},
            "minItems": 40,
        },
    },
    "required": ["id", "name", "active", "tags"],
    "additionalProperties": False,
}
PROMPTS = [
    "The record of customer Ada, as JSON:",
    "The record of customer Brian, as JSON:",
    "The record of customer Chloe, as JSON:",
    "The record of customer Dmitri, as JSON:",
    "The record of customer Emeka, as JSON:",
    "The record of customer Fatima, as JSON:",
    "The record of customer Goran, as JSON:",
    "The record of customer Hana, as JSON:",
]


@dataclass(frozen=True)
class Completion:
    latency_s: float
    tokens: int
    text: str


def prompt_ids(model_dir: Path) -> list[list[int]]:
    """The prompts as token ids of the model's own tokenizer, no special tokens:
    every engine then reads exactly the same tokens (left to themselves they
    differ on whether to put BOS first)."""
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    return [tokenizer.encode(p, add_special_tokens=False).ids for p in PROMPTS]


async def _complete(http: httpx.AsyncClient, endpoint: Endpoint, prompt: list[int]) -> Completion:
    body = {
        "model": endpoint.model,
        "prompt": prompt,
        "max_tokens": MAX_TOKENS,
        "temperature": 0.0,
        **endpoint.constrain(SCHEMA),
    }
    started = time.perf_counter()
    response = await http.post("/v1/completions", json=body)
    latency = time.perf_counter() - started
    if response.status_code != 200:
        raise RuntimeError(f"{endpoint.base_url}: {response.status_code} {response.text[:300]}")
    answer = response.json()
    tokens = int(answer["usage"]["completion_tokens"])
    return Completion(latency, tokens, answer["choices"][0]["text"])


async def measure(
    endpoint: Endpoint, prompts_ids: list[list[int]], concurrency: int, rounds: int
) -> dict:
    """One warm-up round, then ``rounds`` rounds of ``concurrency`` simultaneous
    requests (request i gets prompt i mod 8). Throughput = a round's output tokens /
    its wall time; the median round is reported, with every round kept."""
    prompts = [prompts_ids[i % len(prompts_ids)] for i in range(concurrency)]
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(
        base_url=endpoint.base_url, headers=endpoint.headers, timeout=900.0,
        limits=limits, trust_env=False,
    ) as http:  # fmt: skip
        per_round: list[float] = []
        latencies: list[float] = []
        token_counts: list[int] = []
        texts: list[str] = []
        for index in range(rounds + 1):
            started = time.perf_counter()
            done = await asyncio.gather(*(_complete(http, endpoint, p) for p in prompts))
            wall = time.perf_counter() - started
            if index == 0:
                texts = [c.text for c in done]
                continue
            per_round.append(sum(c.tokens for c in done) / wall)
            latencies += [c.latency_s for c in done]
            token_counts += [c.tokens for c in done]
    return {
        "tokens_per_s": statistics.median(per_round),
        "tokens_per_s_by_round": per_round,
        "latency_p50_s": statistics.median(latencies),
        "tokens_per_request_min": min(token_counts),
        "tokens_per_request_mean": statistics.fmean(token_counts),
        "texts": texts,
    }
