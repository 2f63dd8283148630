"""Phase 1 (+3): TPOT and tokens/s per constraint kind at concurrency 1 and 16, and the
hand-written baseline, interleaved.

Each round measures every kind once (in a rotated order) and then the
baseline, so slow periods of a shared machine fall on all of them alike. Each
round's ratios compare kinds measured within seconds of each other; their
median over the rounds is the figure the target reads (one round disturbed by
another process does not move it), and the ratios of the pooled means are
kept next to it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

from bench import stats
from bench.baseline import BaselineTiming, HFBaseline, baseline_summary
from bench.load import EnsembleClient, closed_loop, split_among
from bench.progress import say
from bench.settings import BenchSettings
from bench.timing import RequestTiming, request_summary
from bench.workload import Constraint, requests

CONCURRENCY = (1, 16)
BASELINE_KINDS = ("json_schema", "none")


async def measure(
    client: EnsembleClient,
    kinds: dict[str, Constraint],
    settings: BenchSettings,
    baseline: HFBaseline | None,
) -> dict:
    """Every kind x concurrency over `settings.rounds` rounds; raw per-round figures kept."""
    say("tpot: warm-up (one request per kind compiles its grammar)")
    for constraint in kinds.values():
        await closed_loop(client, [requests(constraint, 1, settings.max_tokens)])
    # One short wave at c=16, so no kind pays for the first large batch.
    warm = requests(kinds["none"], 16, 8)
    await closed_loop(client, split_among(warm, 16))
    if baseline is not None:
        for name in BASELINE_KINDS:
            baseline.run(kinds[name], 1, settings.max_tokens)

    timings: dict[tuple[str, int], list[RequestTiming]] = defaultdict(list)
    walls: dict[tuple[str, int], float] = defaultdict(float)
    per_round: list[dict] = []
    baseline_timings: dict[str, list[BaselineTiming]] = defaultdict(list)
    names = list(kinds)
    for round_index in range(settings.rounds):
        order = names[round_index % len(names) :] + names[: round_index % len(names)]
        round_tpot: dict[str, dict[int, float | None]] = {}
        for name in order:
            round_tpot[name] = {}
            for concurrency in CONCURRENCY:
                count = (
                    settings.tpot_requests_c1
                    if concurrency == 1
                    else concurrency * settings.tpot_waves_c16
                )
                specs = requests(
                    kinds[name],
                    count,
                    settings.max_tokens,
                    first=round_index * count,
                    interval_ms=settings.stream_interval_ms,
                )
                result = await closed_loop(client, split_among(specs, concurrency))
                timings[name, concurrency] += result.timings
                walls[name, concurrency] += result.wall_s
                round_tpot[name][concurrency] = stats.mean(
                    t.tpot for t in result.timings if t.tpot is not None
                )
        per_round.append(round_tpot)
        if baseline is not None:
            for name in BASELINE_KINDS:
                baseline_timings[name] += baseline.run(
                    kinds[name], settings.baseline_requests, settings.max_tokens
                )
        say(f"tpot: round {round_index + 1}/{settings.rounds} done")

    return {
        "kinds": {
            name: {
                "label": kinds[name].label,
                "constraint_type": kinds[name].kind,
                "user_constraint": kinds[name].source,
                "by_concurrency": {
                    str(c): request_summary(timings[name, c], walls[name, c]) for c in CONCURRENCY
                },
            }
            for name in names
        },
        "tpot_ratio_vs_unconstrained": _ratios(timings, names, stats.mean),
        "tpot_p50_ratio_vs_unconstrained": _ratios(
            timings, names, lambda values: stats.percentile(values, 50)
        ),
        "tpot_ratio_median_of_rounds": {
            name: {
                str(c): stats.percentile(
                    [r for r in (_round_ratio(rt, name, c) for rt in per_round) if r is not None],
                    50,
                )
                for c in CONCURRENCY
            }
            for name in names
        },
        "tpot_ratio_per_round": [
            {name: {str(c): _round_ratio(rt, name, c) for c in CONCURRENCY} for name in names}
            for rt in per_round
        ],
        "baseline": {name: baseline_summary(t) for name, t in baseline_timings.items()},
    }


def _ratios(
    timings: dict[tuple[str, int], list[RequestTiming]],
    names: list[str],
    average: Callable[[list[float]], float | None],
) -> dict:
    """TPOT of each kind over the unconstrained TPOT (both by `average`), per concurrency."""

    def tpot_of(name: str, concurrency: int) -> float | None:
        return average([t.tpot for t in timings[name, concurrency] if t.tpot is not None])

    return {
        name: {str(c): stats.ratio(tpot_of(name, c), tpot_of("none", c)) for c in CONCURRENCY}
        for name in names
    }


def _round_ratio(round_tpot: dict[str, dict[int, float | None]], name: str, c: int) -> float | None:
    """One round's mean TPOT of `name` over the unconstrained one, same concurrency."""
    return stats.ratio(round_tpot[name][c], round_tpot["none"][c])
