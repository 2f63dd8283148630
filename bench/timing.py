"""What one streamed request looked like from the client: when each response came.

Timestamps are ``time.perf_counter()`` seconds of the benchmark process, so
they compare across requests of one run and never across runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bench import stats


@dataclass
class RequestTiming:
    """Send time, each response's arrival and token count, and how it ended."""

    label: str
    sent: float
    arrivals: list[float] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    """``tokens_generated`` as each response reported it (cumulative)."""
    finish_reason: str | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.arrivals)

    @property
    def output_tokens(self) -> int:
        return self.tokens[-1] if self.tokens else 0

    @property
    def ttft(self) -> float | None:
        return self.arrivals[0] - self.sent if self.arrivals else None

    @property
    def latency(self) -> float | None:
        return self.arrivals[-1] - self.sent if self.arrivals else None

    @property
    def tpot(self) -> float | None:
        if not self.ok:
            return None
        # Tokens after the first response's, over the time after it.
        first_tokens = self.tokens[0]
        later = self.output_tokens - first_tokens
        if later < 1:
            return None
        return stats.tpot(self.arrivals[0], self.arrivals[-1], later + 1)

    def to_dict(self) -> dict:
        return {
            "label": self.label,
            "ok": self.ok,
            "output_tokens": self.output_tokens,
            "ttft_ms": _ms(self.ttft),
            "latency_ms": _ms(self.latency),
            "tpot_ms": _ms(self.tpot),
            "finish_reason": self.finish_reason,
            "error": self.error,
        }


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1e3, 3)


def ok_timings(timings: list[RequestTiming]) -> list[RequestTiming]:
    return [t for t in timings if t.ok]


def request_summary(timings: list[RequestTiming], wall_s: float | None = None) -> dict:
    """TTFT, TPOT, latency (ms) and output tokens/s of a set of requests."""
    done = ok_timings(timings)
    tokens = sum(t.output_tokens for t in done)
    summary = {
        "requests": len(timings),
        "errors": len(timings) - len(done),
        "errors_sample": sorted({t.error for t in timings if t.error})[:3],
        "output_tokens": tokens,
        "tokens_per_request": stats.summarize(t.output_tokens for t in done),
        "ttft_ms": stats.summarize((t.ttft for t in done if t.ttft is not None), 1e3),
        "tpot_ms": stats.summarize((t.tpot for t in done if t.tpot is not None), 1e3),
        "latency_ms": stats.summarize((t.latency for t in done if t.latency is not None), 1e3),
    }
    if wall_s is not None:
        summary["wall_s"] = wall_s
        summary["output_tokens_per_s"] = stats.throughput(tokens, wall_s)
    return summary
