"""How much the benchmark measures: the full run and the quick smoke test.

Every knob lives here so the two modes differ in one place only and a report
can record exactly what was run.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace


@dataclass(frozen=True)
class BenchSettings:
    """Sizes of every phase. The full run takes ~5 min on 2 quiet cores (3.2 min with
    3 rounds, 2 passes, 4 trials on the demo model), leaving room for a busy machine
    or a larger model within 20 min; the quick run ~1.5 min."""

    max_tokens: int = 64
    """Tokens every request generates (ignore_eos, constraints that cannot end sooner)."""
    rounds: int = 5
    """TPOT rounds; each round measures every constraint kind once, interleaved, so
    drift on a shared machine hits all kinds alike."""
    tpot_requests_c1: int = 6
    """Requests per kind and round at concurrency 1."""
    tpot_waves_c16: int = 2
    """Requests per stream and round at concurrency 16."""
    sweep_concurrency: tuple[int, ...] = (1, 4, 16, 64)
    sweep_passes: int = 3
    """Passes over all concurrency levels (interleaved, like the TPOT rounds)."""
    sweep_waves: int = 1
    """Requests per stream and pass in the throughput sweep."""
    baseline_requests: int = 4
    """Hand-written baseline requests per round (one at a time)."""
    cached_pairs: int = 40
    """(no grammar, cached grammar) request pairs for the cached-grammar overhead."""
    cold_requests: int = 4
    """Requests with a never-seen schema for the cold-compile latency."""
    compile_trials: int = 6
    """Trials of 'heavy schemas compile while 8 streams run', each with a control."""
    compile_streams: int = 8
    compile_heavy_requests: int = 3
    frontend_pairs: int = 100
    """(HTTP, direct gRPC) request pairs for the frontend's own cost."""
    frontend_max_tokens: int = 4
    perf_concurrency: tuple[int, ...] = (1, 4, 16, 64)
    perf_measurement_ms: int = 3000
    perf_max_trials: int = 5
    stream_interval_ms: float = 0.0
    """``stream_interval_ms`` of the TPOT and sweep requests: 0 streams every token
    in its own response; more merges each stream's tokens (fewer, larger responses)."""
    quick: bool = False

    def as_dict(self) -> dict:
        return asdict(self)


FULL = BenchSettings()

QUICK = replace(
    FULL,
    max_tokens=32,
    rounds=1,
    tpot_requests_c1=2,
    tpot_waves_c16=1,
    sweep_passes=1,
    baseline_requests=2,
    cached_pairs=10,
    cold_requests=2,
    compile_trials=1,
    frontend_pairs=20,
    perf_concurrency=(1, 16),
    perf_measurement_ms=2000,
    quick=True,
)
