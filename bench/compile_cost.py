"""Phase 4: what grammar compilation costs a request, and what it costs everyone else.

* offline: xgrammar compiling each corpus schema against this model's
  tokenizer, cold (a fresh compiler) and cached (a compiler that has seen it),
  the numbers scripts/bench_compile.py reports, measured here for the served
  model and used to pick the heaviest schemas;
* served, one request at a time: latency of a one-token request with no
  grammar, with a cached grammar, and with a never-seen one (cold);
* served, under load: the TPOT of 8 running unconstrained streams while heavy
  never-seen schemas compile, against the same load with nothing compiling.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import xgrammar as xgr
from transformers import AutoConfig, AutoTokenizer

from bench import stats
from bench.load import EnsembleClient
from bench.progress import say
from bench.settings import BenchSettings
from bench.timing import RequestTiming
from bench.workload import (
    NONE,
    USER_JSON_SCHEMA,
    Constraint,
    RequestSpec,
    corpus_schemas,
    json_schema_constraint,
    merged_schema,
    requests,
    sampling_parameters,
    with_nonce,
)
from engine.grammar_cache import GrammarCache
from engine.params import Constraint as CanonicalConstraint
from engine.params import ConstraintType

HEAVY_PARTS = 4
"""Corpus schemas merged into one heavy schema (the slowest to compile)."""
SETTLE_S = 0.3
"""Running time of the streams before anything is submitted."""
OFFLINE_BUDGET_S = 120.0
"""Stop timing corpus schemas after this long (a large vocabulary compiles slowly)."""


def _timed_ms(step: Callable[[], object]) -> float:
    started = time.perf_counter()
    step()
    return (time.perf_counter() - started) * 1e3


def offline_compile_times(model_dir: Path) -> dict:
    """Cold and cached compile of every usable corpus schema through the
    decoder's own ``GrammarCache`` (xgrammar's cross-grammar cache is off
    there: with it on, xgrammar 0.2.8 fails an internal check on the second
    of some pairs of schemas)."""
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    vocab_size = int(AutoConfig.from_pretrained(str(model_dir)).vocab_size)
    info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab_size)
    cache = GrammarCache(info, compile_nice=0, compile_idle=False)
    entries = {}
    deadline = time.monotonic() + OFFLINE_BUDGET_S
    try:
        for name, schema in corpus_schemas().items():
            if time.monotonic() > deadline:
                break
            try:
                value = json_schema_constraint(schema, name).value
            except Exception as error:  # refused by grammar_compiler: skip, with the reason
                entries[name] = {"refused": str(error)[:200]}
                continue
            constraint = CanonicalConstraint(type=ConstraintType.JSON_SCHEMA, value=value)
            cold = _timed_ms(lambda c=constraint: cache.get(c).result())
            cached = _timed_ms(lambda c=constraint: cache.get(c).result())
            entries[name] = {"cold_ms": cold, "cached_ms": cached, "canonical_chars": len(value)}
    finally:
        cache.shutdown()
    timed = [e for e in entries.values() if "cold_ms" in e]
    return {
        "schemas": entries,
        "cold_ms": stats.summarize(e["cold_ms"] for e in timed),
        "cached_ms": stats.summarize(e["cached_ms"] for e in timed),
    }


def heaviest(offline: dict, count: int = HEAVY_PARTS) -> list[str]:
    timed = [(e["cold_ms"], n) for n, e in offline["schemas"].items() if "cold_ms" in e]
    return [name for _, name in sorted(timed, reverse=True)[:count]]


def _one_token(constraint: Constraint, index: int, label: str) -> RequestSpec:
    return requests(constraint, 1, 1, first=index, label=label)[0]


async def request_latencies(
    client: EnsembleClient, settings: BenchSettings, workload_schema: Constraint
) -> dict:
    """One-token requests, one at a time: no grammar vs cached grammar vs cold grammar.

    With one token, the request's latency is all fixed cost: the grammar's
    part is the difference to the no-grammar request next to it.
    """
    await client.stream(_one_token(workload_schema, 0, "warm"))  # the workload schema is cached
    none_ms, cached_ms, diffs = [], [], []
    for i in range(settings.cached_pairs):
        pair = [_one_token(NONE, i, "none"), _one_token(workload_schema, i, "cached")]
        if i % 2:
            pair.reverse()
        results = {spec.label: await client.stream(spec) for spec in pair}
        if results["none"].ok and results["cached"].ok:
            none_ms.append(results["none"].latency * 1e3)
            cached_ms.append(results["cached"].latency * 1e3)
            diffs.append(cached_ms[-1] - none_ms[-1])
    cold_ms = []
    for i in range(settings.cold_requests):
        fresh = json_schema_constraint(with_nonce(USER_JSON_SCHEMA, secrets.token_hex(4)), "cold")
        timing = await client.stream(_one_token(fresh, i, "cold"))
        if timing.ok:
            cold_ms.append(timing.latency * 1e3)
    none_p50 = stats.percentile(none_ms, 50)
    return {
        "no_grammar_ms": stats.summarize(none_ms),
        "cached_grammar_ms": stats.summarize(cached_ms),
        "cold_grammar_ms": stats.summarize(cold_ms),
        "cached_extra_ms_paired": stats.summarize(diffs),
        "cached_extra_ms": stats.difference(stats.percentile(cached_ms, 50), none_p50),
        "cold_extra_ms": stats.difference(stats.percentile(cold_ms, 50), none_p50),
    }


async def _streams_with_heavy_compiles(
    client: EnsembleClient,
    streams: list[RequestSpec],
    heavy: list[RequestSpec],
) -> tuple[list[RequestTiming], list[RequestTiming], float]:
    """Start `streams`; once all are producing tokens, submit `heavy` (may be empty).

    Returns the streams' timings, the heavy requests' timings and the submit time.
    """
    timings = [RequestTiming(spec.label, 0.0) for spec in streams]
    tasks = [
        asyncio.ensure_future(client.stream(spec, timing))
        for spec, timing in zip(streams, timings, strict=True)
    ]
    # Every stream is in the running batch once it has a few responses.
    while not all(len(t.arrivals) >= 3 for t in timings) and not all(t.done() for t in tasks):
        await asyncio.sleep(0.01)
    await asyncio.sleep(SETTLE_S)
    submitted = time.perf_counter()
    heavy_timings = await asyncio.gather(*(client.stream(spec) for spec in heavy))
    stream_timings = await asyncio.gather(*tasks)
    return list(stream_timings), list(heavy_timings), submitted


@dataclass
class _Window:
    """Stream-seconds and tokens of running streams inside compile (or control) windows."""

    seconds: float = 0.0
    tokens: int = 0
    streams: int = 0
    longest_gap_s: float = 0.0

    def add(self, timings: list[RequestTiming], start: float, end: float) -> None:
        """Counts the streams that ran through the whole window (a stream that ended
        inside it would look idle)."""
        for timing in timings:
            if not timing.ok or timing.arrivals[-1] < end:
                continue
            self.seconds += end - start
            self.tokens += stats.tokens_in_window(timing.arrivals, timing.tokens, start, end)
            self.streams += 1
            self.longest_gap_s = max(
                self.longest_gap_s, stats.longest_gap(timing.arrivals, start, end)
            )

    def to_dict(self) -> dict:
        return {
            "tpot_ms": None if not self.tokens else self.seconds / self.tokens * 1e3,
            "tokens": self.tokens,
            "stream_windows": self.streams,
            "longest_gap_ms": self.longest_gap_s * 1e3,
        }


async def tpot_while_compiling(
    client: EnsembleClient, settings: BenchSettings, heavy_parts: dict[str, dict]
) -> dict:
    """Running streams' TPOT during a compile window vs the same window with nothing compiling.

    The window opens when the heavy requests are submitted and closes one step
    before the first of them produces its first token: before that, they are
    only compiling (their prefill, which does stall the batch, happens in the
    step that ends the window and is left out). Each trial is paired with a
    control run of the same streams where nothing is submitted, measured over
    a window of the same length at the same point. TPOT in a window is its
    duration over the tokens that arrived in it, summed over the streams, so a
    stall followed by a burst of queued responses counts for what it is.
    """
    # Streams must outlast the window in both runs, or they are not counted:
    # heavy compiles take 2-3 s on two cores and 512-token streams (~5 ms a
    # token at 8 streams) ended inside them, leaving 3 of 4 runs without a figure.
    stream_tokens = settings.max_tokens * 16
    compiling, control = _Window(), _Window()
    windows_ms, first_token_ms = [], []
    for trial in range(settings.compile_trials):
        heavy = [
            RequestSpec(
                prompt="Fill in the form:",
                params=sampling_parameters(4, seed=trial),
                constraint_type="json_schema",
                constraint=json_schema_constraint(
                    merged_schema(heavy_parts, secrets.token_hex(4)), "heavy"
                ).value,
                label="heavy",
            )
            for _ in range(settings.compile_heavy_requests)
        ]
        streams = requests(NONE, settings.compile_streams, stream_tokens, first=trial * 100)
        # Control first on odd trials, so drift does not favour one side.
        runs = ["compile", "control"] if trial % 2 == 0 else ["control", "compile"]
        results: dict[str, tuple[list[RequestTiming], list[RequestTiming], float]] = {}
        for run in runs:
            results[run] = await _streams_with_heavy_compiles(
                client, streams, heavy if run == "compile" else []
            )
        stream_t, heavy_t, submitted = results["compile"]
        firsts = [t.arrivals[0] for t in heavy_t if t.ok]
        if not firsts:
            raise RuntimeError(f"no heavy request succeeded: {heavy_t[0].error}")
        step = stats.percentile(_gaps_before(stream_t, submitted), 50) or 0.0
        length = min(firsts) - step - submitted
        windows_ms.append(length * 1e3)
        first_token_ms.append((min(firsts) - submitted) * 1e3)
        compiling.add(stream_t, submitted, submitted + length)
        control_t, _, control_submitted = results["control"]
        control.add(control_t, control_submitted, control_submitted + length)
        say(f"compile: trial {trial + 1}/{settings.compile_trials}, window {length * 1e3:.0f} ms")
    during, without = compiling.to_dict(), control.to_dict()
    return {
        "streams": settings.compile_streams,
        "stream_tokens": stream_tokens,
        "heavy_requests_per_trial": settings.compile_heavy_requests,
        "heavy_schema_parts": sorted(heavy_parts),
        "window_ms": stats.summarize(windows_ms),
        "heavy_first_token_ms": stats.summarize(first_token_ms),
        "during_compile": during,
        "without_compile": without,
        "tpot_ratio": stats.ratio(during["tpot_ms"], without["tpot_ms"]),
    }


def _gaps_before(timings: list[RequestTiming], moment: float) -> list[float]:
    return [
        gap
        for t in timings
        if t.ok
        for gap in stats.token_intervals(t.arrivals, t.tokens, t.arrivals[0], moment)
    ]
