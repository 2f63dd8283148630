"""Phase 2: unconstrained output tokens/s, TTFT and TPOT at rising concurrency.

Closed loop: `c` streams each send requests back to back, so tokens/s is
what `c` steady clients get. The levels are swept `sweep_passes` times and
pooled, so a noisy minute does not land on one level only.
"""

from __future__ import annotations

from collections import defaultdict

from bench import stats
from bench.load import EnsembleClient, closed_loop, split_among
from bench.progress import say
from bench.settings import BenchSettings
from bench.timing import RequestTiming, request_summary
from bench.workload import NONE, requests


async def measure(client: EnsembleClient, settings: BenchSettings) -> dict:
    timings: dict[int, list[RequestTiming]] = defaultdict(list)
    walls: dict[int, float] = defaultdict(float)
    per_pass: list[dict[str, float | None]] = []
    for pass_index in range(settings.sweep_passes):
        figures = {}
        for concurrency in settings.sweep_concurrency:
            # At least 4 requests per wave, so low concurrency has percentiles too.
            count = max(concurrency, 4) * settings.sweep_waves
            specs = requests(
                NONE,
                count,
                settings.max_tokens,
                first=pass_index * count,
                interval_ms=settings.stream_interval_ms,
            )
            result = await closed_loop(client, split_among(specs, concurrency))
            timings[concurrency] += result.timings
            walls[concurrency] += result.wall_s
            tokens = sum(t.output_tokens for t in result.timings if t.ok)
            figures[str(concurrency)] = stats.throughput(tokens, result.wall_s)
            rate = figures[str(concurrency)] or 0.0
            say(f"sweep: pass {pass_index + 1}, c={concurrency}: {rate:.1f} tok/s")
        per_pass.append(figures)
    levels = {str(c): request_summary(timings[c], walls[c]) for c in settings.sweep_concurrency}
    return {"by_concurrency": levels, "tokens_per_s_per_pass": per_pass}
