"""Soak: does the served stack hold its memory and pace over a long run?

A closed loop of ``c`` clients sends JSON-schema-constrained requests
(``POST /v1/completions``, ``response_format``, 64 tokens) to the real stack
for ``--minutes``; every minute it records the output tokens finished in that
minute and the resident memory of every process of both servers (tritonserver,
its Python-backend stubs, the frontend and its workers: each server runs in
its own process group). The targets compare the last minute with a reference
minute after warm-up (caches, allocator pools and compiled grammars settle in
the first minutes): memory within 2% per process, throughput ≥ 0.95×.

    python -m bench.soak --minutes 30 --concurrency 32 --out bench/results/soak-NAME

Not part of the default bench run (it is meant to take half an hour).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from pathlib import Path

import httpx

from bench.progress import say
from bench.servers import REPO_ROOT, served_stack
from bench.workload import PROMPTS, USER_JSON_SCHEMA
from demo_model import DEMO, ensure_model
from triton_runtime.allocator import allocator_env

MEMORY_TOLERANCE = 0.02
THROUGHPUT_FLOOR = 0.95
DEMO_DIR = REPO_ROOT / ".cache" / "models" / "demo"


def group_memory_mb(pgid: int) -> dict[str, float]:
    """Resident memory of every live process in process group ``pgid``, by
    ``name[pid]``; read from /proc, so Linux only."""
    found: dict[str, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:  # the process ended meanwhile
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[2]) != pgid:  # fields: state, ppid, pgrp, ...
            continue
        rss_kb = next(
            (int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0
        )
        found[f"{name}[{entry}]"] = rss_kb / 1024
    return found


def _request_body(index: int) -> dict:
    return {
        "model": "default",
        "prompt": PROMPTS[index % len(PROMPTS)],
        "max_tokens": 64,
        "temperature": 1.0,
        "seed": index,
        "ignore_eos": True,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "review", "schema": USER_JSON_SCHEMA},
        },
    }


async def _soak(base_url: str, api_key: str, pgids: list[int], minutes: int, c: int) -> dict:
    tokens_this_minute = 0
    failures: list[str] = []
    stop_at = time.monotonic() + minutes * 60
    counter = iter(range(10**9))

    async def client(http: httpx.AsyncClient) -> None:
        nonlocal tokens_this_minute
        while time.monotonic() < stop_at:
            response = await http.post("/v1/completions", json=_request_body(next(counter)))
            if response.status_code == 200:
                tokens_this_minute += response.json()["usage"]["completion_tokens"]
            elif len(failures) < 20:
                failures.append(f"HTTP {response.status_code}: {response.text[:200]}")

    minutes_seen: list[dict] = []

    async def sampler() -> None:
        nonlocal tokens_this_minute
        for minute in range(1, minutes + 1):
            await asyncio.sleep(max(0.0, stop_at - (minutes - minute) * 60 - time.monotonic()))
            tokens, tokens_this_minute = tokens_this_minute, 0
            memory = {name: mb for pgid in pgids for name, mb in group_memory_mb(pgid).items()}
            minutes_seen.append({"minute": minute, "tokens_per_s": tokens / 60, "rss_mb": memory})
            say(f"soak minute {minute}: {tokens / 60:.0f} tok/s, {sum(memory.values()):.0f} MB")

    headers = {"Authorization": f"Bearer {api_key}"}
    async with httpx.AsyncClient(
        base_url=base_url, headers=headers, timeout=600.0, trust_env=False
    ) as http:
        await asyncio.gather(sampler(), *(client(http) for _ in range(c)))
    return {"minutes": minutes_seen, "failures": failures}


def verdict(minutes: list[dict], reference_minute: int) -> dict:
    """The last minute against the reference minute: per-process memory
    ratios (processes alive in both) and the throughput ratio."""
    reference, last = minutes[reference_minute - 1], minutes[-1]
    memory = {
        name: last["rss_mb"][name] / mb
        for name, mb in reference["rss_mb"].items()
        if name in last["rss_mb"] and mb > 0
    }
    throughput = last["tokens_per_s"] / reference["tokens_per_s"]
    return {
        "reference_minute": reference_minute,
        "last_minute": last["minute"],
        "memory_ratio_by_process": memory,
        "memory_ok": all(abs(ratio - 1) <= MEMORY_TOLERANCE for ratio in memory.values()),
        "throughput_ratio": throughput,
        "throughput_ok": throughput >= THROUGHPUT_FLOOR,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-dir", type=Path)
    parser.add_argument("--minutes", type=int, default=30)
    parser.add_argument("--reference-minute", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--out", type=Path, default=Path("bench/results/soak"))
    args = parser.parse_args()
    if args.reference_minute >= args.minutes:
        parser.error("--reference-minute must be before the last minute")
    model_dir = args.model_dir or ensure_model(DEMO_DIR, DEMO)
    args.out.mkdir(parents=True, exist_ok=True)
    with served_stack(model_dir, args.out / "logs") as stack:
        pgids = [stack.triton.pid, stack.frontend.pid]  # each leads its own group
        result = asyncio.run(
            _soak(stack.frontend.url, stack.api_key, pgids, args.minutes, args.concurrency)
        )
    result |= {
        "model_dir": str(model_dir),
        "concurrency": args.concurrency,
        # What tritonserver and its stubs ran on: {} is glibc's malloc.
        "allocator_env": allocator_env(),
        "verdict": verdict(result["minutes"], args.reference_minute),
    }
    (args.out / "soak.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result["verdict"], indent=2))


if __name__ == "__main__":
    main()
